/*
 * workers.h - the threads that run the engine's local copies (job.h) when
 * it runs more than one transfer at a time.
 *
 * The main thread sets copies aside (workers_add) and hands them over
 * together (workers_hand_over); each worker takes them from one queue one
 * after the other, runs the attempt (job_begin_attempt, job_run_local) and
 * puts the job on a done list, which the main thread collects
 * (workers_collect) to take the outcome. A worker calls `wake` when
 * DONE_BATCH copies wait to be collected or the queue runs low; otherwise
 * the main thread is expected to collect every few milliseconds. Once
 * *interrupted is set the workers take no further copy, and the queue is
 * the main thread's to report (workers_take_queue). Stop signals are
 * blocked in the workers, so that they reach the main thread.
 *
 * All functions but the workers' own run on the main thread.
 */
#ifndef PANO_TRANSFER_WORKERS_H
#define PANO_TRANSFER_WORKERS_H

#include "job.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const pano_copy_options *o;
    const _Atomic int *interrupted;
    int (*wake)(void *ctx); /* wakes the main thread: 0, or -1 when it could not */
    void *wake_ctx;

    pthread_t *threads;
    int nthreads; /* 0: not started */
    /* Under lock: */
    pthread_mutex_t lock;
    pthread_cond_t work_cv;
    job *work_head, *work_tail; /* handed over, not taken by a worker yet */
    size_t queued;
    job *done_head, *done_tail; /* copied, not collected by the main thread yet */
    size_t ndone;
    bool wake_pending; /* the main thread was woken and has not collected since */
    bool stopping;
    /* Main thread only: */
    job *batch_head, *batch_tail; /* to hand over together */
    size_t nbatch;
} worker_pool;

/* Start up to n workers (at least one, or -1 with a message in err); o,
 * interrupted, wake and wake_ctx are set by the caller beforehand. */
int workers_start(worker_pool *p, int n, char *err, size_t errlen);

/* Set j aside for the next workers_hand_over. */
void workers_add(worker_pool *p, job *j);

/* Queue the copies set aside, all at once, and wake workers for them. */
void workers_hand_over(worker_pool *p);

/* Copies handed over that no worker has taken yet. */
size_t workers_queued(worker_pool *p);

/* The copies done since the last call, linked by next (NULL: none). */
job *workers_collect(worker_pool *p);

/* Empty the queue: the copies no worker has taken, linked by next. */
job *workers_take_queue(worker_pool *p);

/* Let the workers finish their copies and end; free the pool. */
void workers_stop(worker_pool *p);

#endif
