/*
 * store_checkpoint.c - copying the embedded store writer's WAL into its
 * file on a thread of its own (store_checkpoint.h).
 *
 * A cycle: the writer's commit finds the WAL at `pages` and asks the thread
 * (ASKED); the thread copies everything committed so far (COPIED); the
 * writer's next commit copies what came since, and its next transaction
 * starts the WAL again (IDLE).
 */
#include "store_checkpoint.h"

#include "log.h"
#include "mem.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many times `pages` the WAL may grow to while the thread copies. */
#define WAL_BOUND 4

enum { IDLE, ASKED, COPIED };

struct store_checkpointer {
    sqlite3 *writer;
    sqlite3 *own; /* the thread's connection; NULL when it could not start */
    char *file;
    int pages;
    bool started, stop;
    int state;
    unsigned long copies;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

static void *copying(void *arg)
{
    store_checkpointer *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (c->state != ASKED && !c->stop)
            pthread_cond_wait(&c->cond, &c->lock);
        if (c->stop)
            break;
        pthread_mutex_unlock(&c->lock);
        int rc = sqlite3_wal_checkpoint_v2(c->own, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            pano_warn("store %s: copying the WAL into the file: %s", c->file, sqlite3_errmsg(c->own));
        pthread_mutex_lock(&c->lock);
        c->copies++;
        c->state = COPIED;
        pthread_cond_broadcast(&c->cond);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* The thread and its connection; when either cannot be had, the writer
 * copies the WAL itself, as SQLite does. */
static void start(store_checkpointer *c)
{
    c->started = true;
    int rc = sqlite3_open_v2(c->file, &c->own, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    /* a read opens the WAL, which a checkpoint needs */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c->own, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        pano_warn("store %s: no connection to copy the WAL: %s", c->file,
                  c->own ? sqlite3_errmsg(c->own) : sqlite3_errstr(rc));
    else if ((rc = pthread_create(&c->thread, NULL, copying, c)) != 0)
        pano_warn("store %s: no thread to copy the WAL: %s", c->file, strerror(rc));
    if (rc != 0) {
        sqlite3_close(c->own);
        c->own = NULL;
    }
}

/* After each of the writer's commits, with the WAL's pages. */
static int committed(void *arg, sqlite3 *db, const char *name, int frames)
{
    store_checkpointer *c = arg;
    if (frames < c->pages)
        return SQLITE_OK;
    if (!c->started)
        start(c);
    if (c->own) {
        pthread_mutex_lock(&c->lock);
        if (c->state == IDLE) {
            c->state = ASKED;
            pthread_cond_broadcast(&c->cond);
        }
        if (c->state == ASKED && frames < WAL_BOUND * c->pages) {
            pthread_mutex_unlock(&c->lock);
            return SQLITE_OK;
        }
        while (c->state == ASKED)
            pthread_cond_wait(&c->cond, &c->lock);
        c->state = IDLE;
        pthread_mutex_unlock(&c->lock);
    }
    /* what was committed since the thread's copy (or all of it): the WAL
     * starts again at the next transaction; busy or not, the commit stands */
    (void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

store_checkpointer *store_checkpointer_new(sqlite3 *writer, const char *file, int pages,
                                           char *err, size_t errlen)
{
    store_checkpointer *c = pano_calloc(1, sizeof *c);
    c->writer = writer;
    c->file = pano_strdup(file);
    c->pages = pages;
    int rc = pthread_mutex_init(&c->lock, NULL);
    if (rc != 0)
        goto fail;
    if ((rc = pthread_cond_init(&c->cond, NULL)) != 0) {
        pthread_mutex_destroy(&c->lock);
        goto fail;
    }
    sqlite3_wal_hook(writer, committed, c);
    return c;
fail:
    snprintf(err, errlen, "checkpointer: %s", strerror(rc));
    free(c->file);
    free(c);
    return NULL;
}

unsigned long store_checkpointer_copies(store_checkpointer *c)
{
    pthread_mutex_lock(&c->lock);
    unsigned long n = c->copies;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void store_checkpointer_free(store_checkpointer *c)
{
    if (!c)
        return;
    sqlite3_wal_autocheckpoint(c->writer, c->pages);
    if (c->own) {
        pthread_mutex_lock(&c->lock);
        c->stop = true;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
        sqlite3_close(c->own);
    }
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c->file);
    free(c);
}
