/*
 * pipe.c - see pipe.h.
 *
 * Slots are numbered in the order they are pushed; number k is
 * slots[k % nslots]. The helper owns those numbered done .. pushed - 1,
 * the producer the one numbered pushed, once pushed - done < nslots.
 */
#include "pipe.h"

#include "mem.h"
#include "thread.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct pano_pipe {
    unsigned char *slots;
    size_t nslots, slot_size;
    void (*work)(void *slot, void *user);
    void *user;
    pthread_mutex_t lock;
    pthread_cond_t to_helper;   /* a slot pushed, or stop */
    pthread_cond_t to_producer; /* a slot done */
    size_t pushed, done;        /* counted since the start */
    size_t wake_at;             /* the producer waits until pushed - done <= it */
    bool producer_waits;
    bool stop, threaded;
    pthread_t thread;
};

static void *slot_at(pano_pipe *p, size_t k)
{
    return p->slots + (k % p->nslots) * p->slot_size;
}

static void *helper(void *arg)
{
    pano_pipe *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->done == p->pushed && !p->stop)
            pthread_cond_wait(&p->to_helper, &p->lock);
        if (p->done == p->pushed)
            break; /* stopped, and nothing left */
        size_t k = p->done;
        pthread_mutex_unlock(&p->lock);
        p->work(slot_at(p, k), p->user);
        pthread_mutex_lock(&p->lock);
        p->done++;
        if (p->producer_waits && p->pushed - p->done <= p->wake_at)
            pthread_cond_signal(&p->to_producer);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

pano_pipe *pano_pipe_new(size_t nslots, size_t slot_size, void (*work)(void *slot, void *user),
                         void *user)
{
    pano_pipe *p = pano_calloc(1, sizeof *p);
    p->nslots = nslots ? nslots : 1;
    p->slot_size = slot_size;
    p->slots = pano_calloc(p->nslots, slot_size);
    p->work = work;
    p->user = user;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->to_helper, NULL);
    pthread_cond_init(&p->to_producer, NULL);
    p->threaded = pano_thread_start(&p->thread, helper, p);
    return p;
}

/* Wait, p->lock held, until at most in_hand slots are pushed and not done. */
static void wait_for_helper(pano_pipe *p, size_t in_hand)
{
    p->wake_at = in_hand;
    p->producer_waits = true;
    while (p->pushed - p->done > in_hand)
        pthread_cond_wait(&p->to_producer, &p->lock);
    p->producer_waits = false;
}

void *pano_pipe_next(pano_pipe *p)
{
    pthread_mutex_lock(&p->lock);
    /* every slot in hand: woken once half of them are done, not as each is
     * (which would hand the threads over to each other slot by slot) */
    if (p->pushed - p->done >= p->nslots)
        wait_for_helper(p, p->nslots / 2);
    void *slot = slot_at(p, p->pushed);
    pthread_mutex_unlock(&p->lock);
    return slot;
}

void pano_pipe_push(pano_pipe *p)
{
    if (!p->threaded) {
        p->work(slot_at(p, p->pushed), p->user);
        p->pushed++;
        p->done++;
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->pushed++;
    pthread_cond_signal(&p->to_helper);
    pthread_mutex_unlock(&p->lock);
}

void pano_pipe_drain(pano_pipe *p)
{
    pthread_mutex_lock(&p->lock);
    wait_for_helper(p, 0);
    pthread_mutex_unlock(&p->lock);
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
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        pthread_cond_signal(&p->to_helper);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
    }
    pthread_cond_destroy(&p->to_producer);
    pthread_cond_destroy(&p->to_helper);
    pthread_mutex_destroy(&p->lock);
    free(p->slots);
    free(p);
}
