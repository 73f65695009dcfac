/*
 * pipe.c - see pipe.h.
 *
 * Slots are numbered in the order they are pushed; number k is
 * slots[k % nslots]. The helper owns those numbered done .. pushed - 1,
 * the producer the one numbered pushed, once pushed - done < nslots.
 *
 * Each counter has one writer (pushed the producer, done the helper) and
 * is read by the other thread without a lock: handing a slot over costs no
 * system call while both threads are busy. The lock and the conditions
 * serve only a thread that sleeps. A sleeper sets how far the other must
 * get and raises its flag, then reads the other's counter; the other moves
 * its counter, then reads the flag (both sequentially consistent): one of
 * them sees the other, so no wake-up is lost, and the waker signals under
 * the lock, which the sleeper holds from its last look at the counter
 * until it waits.
 *
 * A helper that has done every slot of a stream of them is not woken for
 * each new one, which would cost a sleep and a wake-up a slot (more than a
 * slot's work on a virtual machine): it lingers, asking to be woken once
 * p->batch slots are pushed or the producer waits for it (a drain, a full
 * ring), and looks by itself after p->linger. Once a linger finds
 * nothing pushed, the stream has stopped: it sleeps until the next push.
 */
#include "pipe.h"

#include "mem.h"
#include "thread.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define HELPER_BATCH 32          /* at most; half the slots when they are fewer */

struct pano_pipe {
    unsigned char *slots;
    size_t nslots, slot_size, batch;
    void (*work)(void *slot, void *user);
    void *user;
    _Atomic size_t pushed, done; /* counted since the start */
    atomic_bool helper_waits;    /* the helper sleeps until pushed - done >= helper_wake_at */
    atomic_size_t helper_wake_at;
    atomic_bool producer_waits; /* the producer sleeps until pushed - done <= producer_wake_at */
    atomic_size_t producer_wake_at;
    atomic_bool stop;
    pthread_mutex_t lock;
    pthread_cond_t to_helper;   /* slots pushed, or stop (on CLOCK_MONOTONIC) */
    pthread_cond_t to_producer; /* slots done */
    struct timespec linger; /* zero: no linger */
    bool threaded, lingers;
    pthread_t thread;
};

static void *slot_at(pano_pipe *p, size_t k)
{
    return p->slots + (k % p->nslots) * p->slot_size;
}

static void wake(pano_pipe *p, pthread_cond_t *c)
{
    pthread_mutex_lock(&p->lock);
    pthread_cond_signal(c);
    pthread_mutex_unlock(&p->lock);
}

/* The helper, every slot pushed done: sleep until a slot is pushed, or
 * stop; lingering, until p->batch slots are pushed, or the producer waits,
 * or stop, or p->linger has passed. The number pushed then. */
static size_t wait_for_push(pano_pipe *p, size_t done, bool linger)
{
    struct timespec until;
    if (linger) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += p->linger.tv_sec;
        until.tv_nsec += p->linger.tv_nsec;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
    }
    size_t batch = linger ? p->batch : 1;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->helper_wake_at, batch);
    atomic_store(&p->helper_waits, true);
    while (atomic_load(&p->pushed) - done < batch && !atomic_load(&p->stop) &&
           !(linger && atomic_load(&p->producer_waits)))
        if (linger ? pthread_cond_timedwait(&p->to_helper, &p->lock, &until) != 0
                   : pthread_cond_wait(&p->to_helper, &p->lock) != 0)
            break; /* lingered long enough */
    atomic_store(&p->helper_waits, false);
    pthread_mutex_unlock(&p->lock);
    return atomic_load_explicit(&p->pushed, memory_order_acquire);
}

static void *helper(void *arg)
{
    pano_pipe *p = arg;
    size_t done = 0;
    bool streaming = false;
    for (;;) {
        size_t pushed = atomic_load_explicit(&p->pushed, memory_order_acquire);
        if (pushed == done && streaming && p->lingers)
            streaming = (pushed = wait_for_push(p, done, true)) != done;
        if (pushed == done) {
            if ((pushed = wait_for_push(p, done, false)) == done)
                break; /* stopped, and nothing left */
            streaming = true;
        }
        for (; done < pushed; done++) {
            p->work(slot_at(p, done), p->user);
            atomic_store(&p->done, done + 1);
            if (atomic_load(&p->producer_waits) &&
                atomic_load(&p->pushed) - (done + 1) <= atomic_load(&p->producer_wake_at))
                wake(p, &p->to_producer);
        }
    }
    return NULL;
}

pano_pipe *pano_pipe_new(size_t nslots, size_t slot_size, double linger,
                         void (*work)(void *slot, void *user), void *user)
{
    pano_pipe *p = pano_calloc(1, sizeof *p);
    p->nslots = nslots ? nslots : 1;
    p->slot_size = slot_size;
    size_t half = p->nslots / 2 ? p->nslots / 2 : 1;
    p->batch = half < HELPER_BATCH ? half : HELPER_BATCH;
    p->slots = pano_calloc(p->nslots, slot_size);
    p->work = work;
    p->user = user;
    atomic_init(&p->pushed, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->helper_waits, false);
    atomic_init(&p->helper_wake_at, 1);
    atomic_init(&p->producer_waits, false);
    atomic_init(&p->producer_wake_at, 0);
    atomic_init(&p->stop, false);
    pthread_mutex_init(&p->lock, NULL);
    /* the linger is timed on the monotonic clock; without it the helper
     * is woken at every push */
    if (linger > 0) {
        p->linger.tv_sec = (time_t)linger;
        p->linger.tv_nsec = (long)((linger - (double)p->linger.tv_sec) * 1e9);
    }
    pthread_condattr_t attr;
    bool attr_made = pthread_condattr_init(&attr) == 0;
    p->lingers = linger > 0 && attr_made && pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
                 pthread_cond_init(&p->to_helper, &attr) == 0;
    if (!p->lingers)
        pthread_cond_init(&p->to_helper, NULL);
    if (attr_made)
        pthread_condattr_destroy(&attr);
    pthread_cond_init(&p->to_producer, NULL);
    p->threaded = pano_thread_start(&p->thread, helper, p);
    return p;
}

/* Wait until at most in_hand slots are pushed and not done. */
static void wait_for_helper(pano_pipe *p, size_t in_hand)
{
    size_t pushed = atomic_load_explicit(&p->pushed, memory_order_relaxed);
    if (pushed - atomic_load_explicit(&p->done, memory_order_acquire) <= in_hand)
        return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->producer_wake_at, in_hand);
    atomic_store(&p->producer_waits, true);
    if (atomic_load(&p->helper_waits))
        pthread_cond_signal(&p->to_helper); /* a lingering helper: it need not wait for more */
    while (pushed - atomic_load(&p->done) > in_hand)
        pthread_cond_wait(&p->to_producer, &p->lock);
    atomic_store(&p->producer_waits, false);
    pthread_mutex_unlock(&p->lock);
}

void *pano_pipe_next(pano_pipe *p)
{
    size_t pushed = atomic_load_explicit(&p->pushed, memory_order_relaxed);
    /* every slot in hand: woken once half of them are done, not as each is
     * (which would hand the threads over to each other slot by slot) */
    if (pushed - atomic_load_explicit(&p->done, memory_order_acquire) >= p->nslots)
        wait_for_helper(p, p->nslots / 2);
    return slot_at(p, pushed);
}

void pano_pipe_push(pano_pipe *p)
{
    size_t pushed = atomic_load_explicit(&p->pushed, memory_order_relaxed) + 1;
    if (!p->threaded) {
        p->work(slot_at(p, pushed - 1), p->user);
        atomic_store_explicit(&p->pushed, pushed, memory_order_relaxed);
        atomic_store_explicit(&p->done, pushed, memory_order_relaxed);
        return;
    }
    atomic_store(&p->pushed, pushed);
    if (atomic_load(&p->helper_waits) &&
        pushed - atomic_load(&p->done) >= atomic_load(&p->helper_wake_at))
        wake(p, &p->to_helper);
}

void pano_pipe_drain(pano_pipe *p)
{
    wait_for_helper(p, 0);
}

size_t pano_pipe_slots(const pano_pipe *p)
{
    return p->nslots;
}

void *pano_pipe_slot(pano_pipe *p, size_t i)
{
    return slot_at(p, i);
}

void pano_pipe_free(pano_pipe *p)
{
    if (!p)
        return;
    if (p->threaded) {
        atomic_store(&p->stop, true);
        wake(p, &p->to_helper);
        pthread_join(p->thread, NULL);
    }
    pthread_cond_destroy(&p->to_producer);
    pthread_cond_destroy(&p->to_helper);
    pthread_mutex_destroy(&p->lock);
    free(p->slots);
    free(p);
}
