#include "workers.h"

#include "log.h"
#include "mem.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Wake the main thread when this many copies wait to be collected. */
#define DONE_BATCH 64

/* Takes queued local copies one after the other, and puts them on the
 * done list for the main thread. */
static void *worker(void *arg)
{
    worker_pool *p = arg;
    job *finished = NULL;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        if (finished) {
            finished->next = NULL;
            if (p->done_tail)
                p->done_tail->next = finished;
            else
                p->done_head = finished;
            p->done_tail = finished;
            p->ndone++;
            if (!p->wake_pending &&
                (p->ndone >= DONE_BATCH || p->queued <= (size_t)p->nthreads)) {
                p->wake_pending = true;
                pthread_mutex_unlock(&p->lock);
                /* (if this fails, the main thread still collects soon) */
                if (p->wake(p->wake_ctx) < 0)
                    pano_debug("could not wake the main thread");
                pthread_mutex_lock(&p->lock);
            }
        }
        /* After an interrupt the queue is the main thread's to report. */
        while ((!p->work_head || atomic_load(p->interrupted)) && !p->stopping)
            pthread_cond_wait(&p->work_cv, &p->lock);
        job *j = p->stopping ? NULL : p->work_head;
        if (j) {
            p->work_head = j->next;
            if (!p->work_head)
                p->work_tail = NULL;
            p->queued--;
        }
        pthread_mutex_unlock(&p->lock);
        if (!j)
            return NULL;
        job_begin_attempt(j);
        job_run_local(p->o, j);
        finished = j;
    }
}

int workers_start(worker_pool *p, int n, char *err, size_t errlen)
{
    int rc = pthread_mutex_init(&p->lock, NULL);
    if (rc == 0 && (rc = pthread_cond_init(&p->work_cv, NULL)) != 0)
        pthread_mutex_destroy(&p->lock);
    if (rc != 0) {
        snprintf(err, errlen, "cannot set up threads: %s", strerror(rc));
        return -1;
    }
    /* Stop signals go to the main thread, whose wait they cut short. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    rc = pthread_sigmask(SIG_BLOCK, &block, &old);
    if (rc != 0) {
        snprintf(err, errlen, "cannot block signals: %s", strerror(rc));
        goto fail;
    }
    p->threads = pano_calloc((size_t)n, sizeof *p->threads);
    for (int i = 0; i < n; i++) {
        rc = pthread_create(&p->threads[i], NULL, worker, p);
        if (rc != 0)
            break; /* fewer workers will do */
        p->nthreads++;
    }
    int mrc = pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (mrc != 0)
        pano_warn("cannot restore the signal mask: %s", strerror(mrc));
    if (p->nthreads == 0) {
        free(p->threads);
        snprintf(err, errlen, "cannot start a thread: %s", strerror(rc));
        goto fail;
    }
    return 0;
fail:
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work_cv);
    return -1;
}

void workers_add(worker_pool *p, job *j)
{
    j->next = NULL;
    if (p->batch_tail)
        p->batch_tail->next = j;
    else
        p->batch_head = j;
    p->batch_tail = j;
    p->nbatch++;
}

void workers_hand_over(worker_pool *p)
{
    if (!p->batch_head)
        return;
    pthread_mutex_lock(&p->lock);
    if (p->work_tail)
        p->work_tail->next = p->batch_head;
    else
        p->work_head = p->batch_head;
    p->work_tail = p->batch_tail;
    p->queued += p->nbatch;
    if (p->nbatch > 1)
        pthread_cond_broadcast(&p->work_cv);
    else
        pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->lock);
    p->batch_head = p->batch_tail = NULL;
    p->nbatch = 0;
}

size_t workers_queued(worker_pool *p)
{
    if (!p->nthreads)
        return 0;
    pthread_mutex_lock(&p->lock);
    size_t n = p->queued;
    pthread_mutex_unlock(&p->lock);
    return n;
}

job *workers_collect(worker_pool *p)
{
    if (!p->nthreads)
        return NULL;
    pthread_mutex_lock(&p->lock);
    job *list = p->done_head;
    p->done_head = p->done_tail = NULL;
    p->ndone = 0;
    p->wake_pending = false;
    pthread_mutex_unlock(&p->lock);
    return list;
}

job *workers_take_queue(worker_pool *p)
{
    if (!p->nthreads)
        return NULL;
    pthread_mutex_lock(&p->lock);
    job *queued = p->work_head;
    p->work_head = p->work_tail = NULL;
    p->queued = 0;
    pthread_mutex_unlock(&p->lock);
    return queued;
}

void workers_stop(worker_pool *p)
{
    if (!p->nthreads)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work_cv);
}
