/* A pipe to a helper thread (lib/pipe.c): every slot worked on once, in
 * the order pushed, never more than its slots in hand, a slot's contents
 * kept from one round to the next, a producer waiting for room woken once
 * half the slots are done, a slot pushed alone worked on with no drain, a
 * drain not held by a helper lingering for more. */
#include "mem.h"
#include "pipe.h"
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    long seq;
    bool in_hand; /* pushed, not yet worked on */
    char *kept;   /* made once per slot by the producer */
} slot;

typedef struct {
    long next;     /* the sequence number expected next */
    long out_of_order;
    long worked;
} helper_state;

static void work(void *s, void *user)
{
    slot *sl = s;
    helper_state *h = user;
    if (sl->seq != h->next)
        h->out_of_order++;
    h->next = sl->seq + 1;
    if (sl->seq % 1000 == 0)
        usleep(2000); /* a slow one now and then: the producer waits for slots */
    h->worked++;
    sl->in_hand = false;
}

START_TEST(slots_are_worked_on_in_order_and_never_overtaken)
{
    helper_state h = {0};
    pano_pipe *p = pano_pipe_new(8, sizeof(slot), 0.001, work, &h);
    long made = 0, overtaken = 0;
    for (long i = 0; i < 20000; i++) {
        slot *s = pano_pipe_next(p);
        if (s->in_hand)
            overtaken++;
        if (!s->kept) {
            s->kept = pano_strdup("scratch");
            made++;
        }
        s->seq = i;
        s->in_hand = true;
        pano_pipe_push(p);
        if (i == 9999) {
            pano_pipe_drain(p);
            ck_assert_int_eq(h.worked, 10000);
        }
    }
    pano_pipe_drain(p);
    ck_assert_int_eq(h.worked, 20000);
    ck_assert_int_eq(h.out_of_order, 0);
    ck_assert_int_eq(overtaken, 0);
    ck_assert_int_eq(made, 8);
    ck_assert_int_eq(pano_pipe_slots(p), 8);
    for (size_t i = 0; i < pano_pipe_slots(p); i++) {
        slot *s = pano_pipe_slot(p, i);
        ck_assert_str_eq(s->kept, "scratch");
        free(s->kept);
    }
    pano_pipe_free(p);
}
END_TEST

/* Freeing a pipe works on what is still pushed first. */
START_TEST(free_finishes_what_was_pushed)
{
    helper_state h = {0};
    pano_pipe *p = pano_pipe_new(4, sizeof(slot), 0.001, work, &h);
    for (long i = 0; i < 3; i++) {
        slot *s = pano_pipe_next(p);
        s->seq = i * 1000; /* each one slow */
        pano_pipe_push(p);
    }
    pano_pipe_free(p);
    ck_assert_int_eq(h.worked, 3);
}
END_TEST

/* A helper that works on slot k once k + 1 slots are released. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    long released, worked;
} gate;

static void gated_work(void *s, void *user)
{
    (void)s;
    gate *g = user;
    pthread_mutex_lock(&g->lock);
    while (g->released <= g->worked)
        pthread_cond_wait(&g->changed, &g->lock);
    g->worked++;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
}

typedef struct {
    pano_pipe *p;
    atomic_bool got; /* pano_pipe_next returned */
} producer;

static void *wait_for_room(void *arg)
{
    producer *pr = arg;
    pano_pipe_next(pr->p);
    pr->got = true;
    return NULL;
}

static void release_and_wait(gate *g, long n)
{
    pthread_mutex_lock(&g->lock);
    g->released = n;
    pthread_cond_broadcast(&g->changed);
    while (g->worked < n)
        pthread_cond_wait(&g->changed, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

/* A producer waiting for room is woken once half the slots are done, not
 * as each one is (the two threads would then take turns slot by slot). */
START_TEST(a_waiting_producer_is_woken_when_half_the_slots_are_done)
{
    gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    pano_pipe *p = pano_pipe_new(8, sizeof(slot), 0.001, gated_work, &g);
    for (int i = 0; i < 8; i++) {
        pano_pipe_next(p);
        pano_pipe_push(p);
    }
    producer pr = {.p = p};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, wait_for_room, &pr), 0);
    usleep(300000); /* waiting for room by now: nothing was released */
    ck_assert(!pr.got);
    release_and_wait(&g, 3); /* 5 in hand */
    usleep(100000);
    ck_assert(!pr.got);
    release_and_wait(&g, 4); /* 4 in hand: half */
    for (int i = 0; i < 500 && !pr.got; i++)
        usleep(10000);
    ck_assert(pr.got);
    pthread_join(t, NULL);
    pano_pipe_push(p);
    release_and_wait(&g, 9);
    pano_pipe_drain(p);
    pano_pipe_free(p);
}
END_TEST

static void count_work(void *s, void *user)
{
    (void)s;
    atomic_fetch_add((atomic_long *)user, 1);
}

/* Wait up to 10 s for *worked to reach n. */
static bool worked_reaches(atomic_long *worked, long n)
{
    for (int i = 0; i < 10000 && atomic_load(worked) < n; i++)
        usleep(1000);
    return atomic_load(worked) == n;
}

/* A helper lingering after a stream of slots for more of them still works
 * on the last few, and on a slot pushed alone once the stream stopped,
 * with nobody draining. */
START_TEST(a_slot_pushed_alone_is_worked_on_without_a_drain)
{
    atomic_long worked = 0;
    pano_pipe *p = pano_pipe_new(256, sizeof(slot), 0.001, count_work, &worked);
    for (int i = 0; i < 1000; i++) { /* a stream, then 1000 % 32 = 8 more */
        pano_pipe_next(p);
        pano_pipe_push(p);
    }
    ck_assert(worked_reaches(&worked, 1000));
    usleep(20000); /* the stream has stopped: the helper sleeps */
    pano_pipe_next(p);
    pano_pipe_push(p);
    ck_assert(worked_reaches(&worked, 1001));
    pano_pipe_free(p);
}
END_TEST

/* A drain (what a synchronous write does) is not held while the helper,
 * done with a stream of slots, lingers for more: with a linger of 10 s,
 * 20 drains just after a stream would otherwise take minutes. */
START_TEST(a_drain_is_not_held_by_a_lingering_helper)
{
    atomic_long worked = 0;
    pano_pipe *p = pano_pipe_new(256, sizeof(slot), 10.0, count_work, &worked);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int round = 1; round <= 20; round++) {
        for (int i = 0; i < 40; i++) {
            pano_pipe_next(p);
            pano_pipe_push(p);
        }
        usleep(1000); /* the stream done: the helper lingers */
        pano_pipe_next(p);
        pano_pipe_push(p);
        pano_pipe_drain(p);
        ck_assert_int_eq(atomic_load(&worked), round * 41);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_msg(t1.tv_sec - t0.tv_sec < 10, "20 drains took %lld s", (long long)(t1.tv_sec - t0.tv_sec));
    pano_pipe_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pipe");
    TCase *tc = tcase_create("pipe");
    tcase_add_test(tc, slots_are_worked_on_in_order_and_never_overtaken);
    tcase_add_test(tc, free_finishes_what_was_pushed);
    tcase_add_test(tc, a_waiting_producer_is_woken_when_half_the_slots_are_done);
    tcase_add_test(tc, a_slot_pushed_alone_is_worked_on_without_a_drain);
    tcase_add_test(tc, a_drain_is_not_held_by_a_lingering_helper);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
