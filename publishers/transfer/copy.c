/*
 * The engine's scheduler: which transfer starts when (-j, local copies
 * queued ahead for the workers), retries with backoff, interrupts, the
 * done/tick/flush callbacks. The attempts themselves run in
 * curl_transport.c, or in local.c inline or on the workers (workers.c).
 */
#include "copy.h"

#include "clock.h"
#include "curl_transport.h"
#include "job.h"
#include "log.h"
#include "mem.h"
#include "workers.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TICK_MS 200

typedef struct {
    const pano_copy_options *o;
    const pano_copy_callbacks *cb;
    size_t limit; /* -j */
    job *jobs;
    size_t njobs, next, done, failed;
    size_t active;         /* in running: libcurl transfers, local copies handed to workers */
    size_t local_inflight; /* of those, local copies handed to the workers */
    uint64_t bytes_done;   /* moved by finished attempts */
    job **running;
    size_t nrunning;
    job **waiting;
    size_t nwaiting;
    curl_transport curl;
    /* Local copies with -j > 1 (with -j 1 they run on the calling thread). */
    worker_pool pool;
} engine;

/* While no libcurl transfer runs, local copies are handed to the workers
 * up to QUEUE_AHEAD beyond -j (still only one per worker runs at a time,
 * and at most -j workers exist), so that a worker goes straight from one
 * copy to the next instead of waiting for the main thread to hand it the
 * next one. Workers wake the main thread when enough copies wait to be
 * reported or the queue runs low; otherwise it collects finished copies
 * every COLLECT_MS. */
#define QUEUE_AHEAD 256
#define COLLECT_MS 10

void pano_copy_options_init(pano_copy_options *o)
{
    memset(o, 0, sizeof *o);
    o->jobs = 4;
    o->retries = 3;
    o->retry_delay = 1;
    o->retry_max_delay = 60;
    o->connect_timeout = 30;
    o->stall_timeout = 60;
    o->timeout = 0;
    o->tls_verify = true;
}

/* Lock-free, so a signal handler may set it; read by every thread. */
static _Atomic int interrupted;

void pano_copy_interrupt(void) { atomic_store(&interrupted, 1); }

static void add_running(engine *e, job *j)
{
    j->slot = e->nrunning;
    e->running[e->nrunning++] = j;
    e->active++;
}

static void remove_running(engine *e, job *j)
{
    job *last = e->running[--e->nrunning];
    e->running[j->slot] = last;
    last->slot = j->slot;
    e->active--;
    if (j->kind == KIND_LOCAL && e->pool.nthreads > 0)
        e->local_inflight--;
}

/* How many transfers may be in hand (running, handed to the workers,
 * waiting to retry) for j to start: -j, or more for local copies queued
 * ahead for the workers while no libcurl transfer runs (then only the
 * workers run, and there are at most -j of them). */
static size_t limit_for(const engine *e, const job *j)
{
    if (j->kind == KIND_LOCAL && e->pool.nthreads > 0 && e->active == e->local_inflight)
        return e->limit + QUEUE_AHEAD;
    return e->limit;
}

static double backoff(const engine *e, int retry)
{
    double d = e->o->retry_delay * pow(2.0, retry - 1);
    if (d > e->o->retry_max_delay)
        d = e->o->retry_max_delay;
    /* up to 10% jitter, so parallel transfers do not retry in lockstep */
    return d * (1.0 + 0.1 * ((double)rand() / RAND_MAX));
}

static void report(engine *e, job *j, int status)
{
    pano_copy_result r = {
        .spec = j->spec,
        .index = j->index,
        .status = status,
        .bytes = j->bytes,
        .size = j->size,
        .start = j->start,
        .end = pano_now(),
        .retries = j->attempts > 0 ? j->attempts - 1 : 0,
        .received = j->received,
        .relayed = j->kind == KIND_THIRD_PARTY,
    };
    memcpy(r.sha256, j->sha256, sizeof r.sha256);
    if (status)
        snprintf(r.error, sizeof r.error, "%s", j->error);
    j->state = J_DONE;
    e->done++;
    if (status)
        e->failed++;
    if (e->cb && e->cb->done)
        e->cb->done(e->cb->ctx, &r);
}

/* An attempt ended: ok, retry later, or give up. */
static void attempt_ended(engine *e, job *j, bool ok)
{
    uint64_t live = atomic_load(&j->live);
    if (j->kind == KIND_THIRD_PARTY && j->phase == 0)
        j->received += live;
    else
        j->bytes += live;
    e->bytes_done += live;
    atomic_store(&j->live, 0);
    remove_running(e, j);
    if (ok) {
        job_release(j, true);
        report(e, j, 0);
        return;
    }
    int retries_done = j->attempts - 1;
    if (j->retryable && retries_done < e->o->retries && !atomic_load(&interrupted)) {
        double d = backoff(e, retries_done + 1);
        pano_info("%s: %s; %llu bytes moved in this attempt; retry %d of %d in %.1f s",
                  j->spec->dst_shown, j->error, (unsigned long long)live, retries_done + 1,
                  e->o->retries, d);
        j->state = J_WAITING;
        j->due = pano_now() + d;
        e->waiting[e->nwaiting++] = j;
        return;
    }
    job_release(j, false); /* with resume, DST stays as it is */
    report(e, j, 1);
}

/* A local copy's attempt ran (inline or on a worker). */
static void local_finished(engine *e, job *j)
{
    attempt_ended(e, j, job_local_outcome(j));
}

static void start_job(engine *e, job *j)
{
    j->state = J_RUNNING;
    add_running(e, j);
    if (j->kind == KIND_LOCAL && e->pool.nthreads > 0) {
        /* for the workers: the one that takes it begins the attempt */
        e->local_inflight++;
        workers_add(&e->pool, j);
        return;
    }
    job_begin_attempt(j);
    switch (j->kind) {
    case KIND_LOCAL:
        job_run_local(e->o, j);
        local_finished(e, j);
        return;
    case KIND_DOWNLOAD:
    case KIND_UPLOAD:
    case KIND_THIRD_PARTY:
        if (curl_transport_start(&e->curl, j) < 0)
            attempt_ended(e, j, false);
        return;
    }
}

/* Interrupted before its next attempt began. */
static void report_unstarted(engine *e, job *j)
{
    if (j->attempts == 0) {
        j->start = pano_now();
        snprintf(j->error, sizeof j->error, "interrupted before it started");
    } else {
        char last[sizeof j->error];
        snprintf(last, sizeof last, "%s", j->error);
        snprintf(j->error, sizeof j->error, "interrupted while waiting to retry (%.400s)", last);
    }
    job_release(j, false);
    report(e, j, 1);
}

/* After pano_copy_interrupt(): every transfer that is not final becomes a
 * failure now, except local copies on workers, which finish first. */
static void stop_everything(engine *e)
{
    job *queued = workers_take_queue(&e->pool);
    while (queued) {
        job *j = queued;
        queued = j->next;
        remove_running(e, j);
        report_unstarted(e, j);
    }
    for (size_t i = 0; i < e->nrunning;) {
        job *j = e->running[i];
        if (curl_transport_abort(&e->curl, j))
            attempt_ended(e, j, false); /* removes it from running */
        else
            i++;
    }
    while (e->nwaiting > 0)
        report_unstarted(e, e->waiting[--e->nwaiting]);
    while (e->next < e->njobs)
        report_unstarted(e, &e->jobs[e->next++]);
}

static void tick(engine *e)
{
    if (!e->cb || !e->cb->tick)
        return;
    pano_copy_stats s = {.total = e->njobs, .done = e->done, .failed = e->failed,
                         .active = e->active, .bytes = e->bytes_done};
    s.active -= workers_queued(&e->pool); /* handed over, not started yet */
    for (size_t i = 0; i < e->nrunning; i++)
        s.bytes += atomic_load_explicit(&e->running[i]->live, memory_order_relaxed);
    e->cb->tick(e->cb->ctx, &s);
}

static void engine_free(engine *e)
{
    curl_transport_close(&e->curl);
    free(e->jobs);
    free(e->running);
    free(e->waiting);
}

long pano_copy_run(const pano_copy_options *o, const pano_transfer_list *list,
                   const pano_copy_callbacks *cb, char *err, size_t errlen)
{
    engine e = {.o = o, .cb = cb, .njobs = list->len, .limit = o->jobs > 0 ? (size_t)o->jobs : 1};
    size_t nlocal = 0;
    e.jobs = pano_calloc(list->len ? list->len : 1, sizeof *e.jobs);
    for (size_t i = 0; i < list->len; i++) {
        job *j = &e.jobs[i];
        j->spec = &list->items[i];
        j->index = i;
        j->fd = -1;
        j->size = -1;
        j->sent_end = -1;
        atomic_init(&j->live, 0);
        bool sl = j->spec->src_path != NULL, dl = j->spec->dst_path != NULL;
        if (sl && dl && !o->curl_for_local) {
            j->kind = KIND_LOCAL;
            nlocal++;
        } else if (dl)
            j->kind = KIND_DOWNLOAD;
        else if (sl)
            j->kind = KIND_UPLOAD;
        else
            j->kind = KIND_THIRD_PARTY;
    }
    /* in hand at once: -j, plus local copies queued ahead */
    size_t capacity = e.limit + (e.limit > 1 && nlocal > 0 ? QUEUE_AHEAD : 0);
    e.running = pano_calloc(capacity, sizeof *e.running);
    e.waiting = pano_calloc(capacity, sizeof *e.waiting);
    if (curl_transport_open(&e.curl, o, &e.bytes_done) < 0) {
        snprintf(err, errlen, "libcurl could not start");
        engine_free(&e);
        return -1;
    }
    e.pool = (worker_pool){.o = o,
                           .interrupted = &interrupted,
                           .wake = curl_transport_wakeup,
                           .wake_ctx = &e.curl};
    if (e.limit > 1 && nlocal > 0 &&
        workers_start(&e.pool, (int)(e.limit < nlocal ? e.limit : nlocal), err, errlen) < 0) {
        engine_free(&e);
        return -1;
    }

    double next_tick = pano_now() + TICK_MS / 1000.0;
    bool stopped = false;
    while (e.done < e.njobs) {
        if (atomic_load(&interrupted) && !stopped) {
            stop_everything(&e);
            stopped = true;
            if (e.done >= e.njobs)
                break;
        }
        /* Start what may start: due retries first, then new transfers. */
        double now = pano_now();
        for (size_t i = 0; i < e.nwaiting;) {
            job *j = e.waiting[i];
            if (j->due <= now && e.active < limit_for(&e, j)) {
                e.waiting[i] = e.waiting[--e.nwaiting];
                start_job(&e, j);
            } else
                i++;
        }
        /* (Local copies may run inline here: come back to libcurl and the
         * progress line at least every 50 ms.) */
        while (e.next < e.njobs && e.active + e.nwaiting < limit_for(&e, &e.jobs[e.next]) &&
               !atomic_load(&interrupted) && pano_now() - now < 0.05)
            start_job(&e, &e.jobs[e.next++]);
        workers_hand_over(&e.pool);
        if (e.done >= e.njobs)
            break;

        curl_transport_perform(&e.curl);
        job *ended;
        bool ok;
        while ((ended = curl_transport_next_ended(&e.curl, &ok)))
            attempt_ended(&e, ended, ok);
        for (job *j = workers_collect(&e.pool), *next; j; j = next) {
            next = j->next;
            local_finished(&e, j);
        }

        now = pano_now();
        if (now >= next_tick) {
            tick(&e);
            next_tick = now + TICK_MS / 1000.0;
        }
        if (e.cb && e.cb->flush)
            e.cb->flush(e.cb->ctx);
        if (e.done >= e.njobs)
            break;
        /* May something start right away? */
        if (e.next < e.njobs && e.active + e.nwaiting < limit_for(&e, &e.jobs[e.next]) &&
            !atomic_load(&interrupted))
            continue;
        double wait = next_tick - now;
        if (e.local_inflight > 0 && wait > COLLECT_MS / 1000.0)
            wait = COLLECT_MS / 1000.0;
        for (size_t i = 0; i < e.nwaiting; i++)
            if (e.waiting[i]->due - now < wait)
                wait = e.waiting[i]->due - now;
        if (wait > 0)
            curl_transport_wait(&e.curl, wait);
    }
    tick(&e);
    if (e.cb && e.cb->flush)
        e.cb->flush(e.cb->ctx);

    workers_stop(&e.pool);
    long failed = (long)e.failed;
    engine_free(&e);
    return failed;
}
