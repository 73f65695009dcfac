#include "jobs_cache.h"

#include "mem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Rows and who holds them: the cache while it keeps them, and each request
 * they were handed to. */
typedef struct {
    pano_jobs jobs; /* first: the address handed out is the entry's */
    explorer_cursor cursor;
    double used;
    unsigned refs;
} entry;

struct jobs_cache {
    pthread_mutex_t lock;
    size_t max_runs;
    entry *kept[JOBS_CACHE_WORKFLOWS];
    size_t n;
};

jobs_cache *jobs_cache_new(size_t max_runs)
{
    jobs_cache *c = pano_calloc(1, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    c->max_runs = max_runs;
    return c;
}

static void unref(entry *e)
{
    if (--e->refs == 0) {
        pano_jobs_free(&e->jobs);
        free(e);
    }
}

/* Stop keeping kept[i] (the lock held). */
static void drop(jobs_cache *c, size_t i)
{
    unref(c->kept[i]);
    c->kept[i] = c->kept[--c->n];
}

static void drop_idle(jobs_cache *c, double t)
{
    for (size_t i = c->n; i-- > 0;)
        if (c->kept[i]->used < t - JOBS_CACHE_IDLE)
            drop(c, i);
}

static size_t find(const jobs_cache *c, const char *wf_uuid)
{
    size_t i = 0;
    while (i < c->n && strcmp(c->kept[i]->jobs.wf_uuid, wf_uuid) != 0)
        i++;
    return i;
}

void jobs_cache_free(jobs_cache *c)
{
    if (!c)
        return;
    while (c->n)
        drop(c, 0);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

const pano_jobs *jobs_cache_get(jobs_cache *c, const char *wf_uuid, const pano_changes *now,
                                double t, explorer_cursor *cursor)
{
    entry *e = NULL;
    pthread_mutex_lock(&c->lock);
    drop_idle(c, t);
    size_t i = find(c, wf_uuid);
    if (i < c->n && explorer_cursor_holds(&c->kept[i]->cursor, now, t)) {
        e = c->kept[i];
        e->refs++;
        e->used = t;
        *cursor = e->cursor;
    } else if (i < c->n)
        drop(c, i); /* out of date */
    pthread_mutex_unlock(&c->lock);
    return e ? &e->jobs : NULL;
}

const pano_jobs *jobs_cache_put(jobs_cache *c, pano_jobs *jobs, const explorer_cursor *cursor,
                                double t)
{
    entry *e = pano_calloc(1, sizeof *e);
    e->jobs = *jobs;
    memset(jobs, 0, sizeof *jobs);
    e->cursor = *cursor;
    e->used = t;
    e->refs = 2; /* the cache's and the caller's */
    pthread_mutex_lock(&c->lock);
    drop_idle(c, t);
    size_t i = find(c, e->jobs.wf_uuid);
    if (i < c->n)
        drop(c, i);
    /* room: the least recently used go first */
    for (;;) {
        size_t runs = e->jobs.n, oldest = 0;
        for (size_t k = 0; k < c->n; k++) {
            runs += c->kept[k]->jobs.n;
            if (c->kept[k]->used < c->kept[oldest]->used)
                oldest = k;
        }
        if (c->n == 0 || (c->n < JOBS_CACHE_WORKFLOWS && runs <= c->max_runs))
            break;
        drop(c, oldest);
    }
    c->kept[c->n++] = e;
    pthread_mutex_unlock(&c->lock);
    return &e->jobs;
}

void jobs_cache_release(jobs_cache *c, const pano_jobs *jobs)
{
    if (!jobs)
        return;
    pthread_mutex_lock(&c->lock);
    unref((entry *)(void *)jobs);
    pthread_mutex_unlock(&c->lock);
}
