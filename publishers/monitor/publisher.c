#include "publisher.h"

#include "log.h"
#include "mem.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
    struct item *next;
    char *key, *id, *json;
    size_t len;
} item;

struct pano_publisher {
    pano_sink *sink;
    pthread_t thread;
    bool threaded;
    pthread_mutex_t lock;
    pthread_cond_t more, room;
    uint64_t lost;
    bool waiting_for_room; /* pano_publisher_send waits in p->room */
    item *head, *tail;
    size_t queued_bytes;
    bool stopping;
};

static void deliver(pano_publisher *p, item *it)
{
    char err[512];
    if (p->sink &&
        pano_sink_send_raw(p->sink, it->key, it->id, it->json, it->len, err, sizeof err) == 0)
        return;
    /* Never lost without a trace: the first events go to the log in full,
     * later ones are counted (a job must not drown in its own monitoring). */
    p->lost++;
    if (p->lost <= 10)
        pano_error("event not delivered (%s): %.*s", p->sink ? err : "no usable output",
                   (int)it->len, it->json);
    else if (p->lost % 100 == 0)
        pano_error("%llu events not delivered so far (%s)", (unsigned long long)p->lost,
                   p->sink ? err : "no usable output");
}

static void free_item(item *it)
{
    free(it->key);
    free(it->id);
    free(it->json);
    free(it);
}

/* A burst's events (more are queued behind the one in hand) are held
 * (sink.h: into the store, one transaction) and written once the queue is
 * empty. */
static void write_held(pano_publisher *p, bool *held)
{
    char err[512];
    if (pano_sink_flush(p->sink, err, sizeof err) < 0)
        pano_error("events not written: %s", err); /* each was logged, and counted */
    pano_sink_hold(p->sink, false);
    *held = false;
}

static void *run(void *arg)
{
    pano_publisher *p = arg;
    bool held = false;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping) {
            if (held) {
                pthread_mutex_unlock(&p->lock);
                write_held(p, &held);
                pthread_mutex_lock(&p->lock);
                continue;
            }
            pthread_cond_wait(&p->more, &p->lock);
        }
        item *it = p->head;
        if (!it)
            break; /* stopping and drained */
        p->head = it->next;
        if (!p->head)
            p->tail = NULL;
        bool more = p->head != NULL;
        pthread_mutex_unlock(&p->lock);
        if (more && !held && p->sink) {
            pano_sink_hold(p->sink, true);
            held = true;
        }
        deliver(p, it);
        pthread_mutex_lock(&p->lock);
        p->queued_bytes -= it->len;
        bool wake = p->waiting_for_room;
        pthread_mutex_unlock(&p->lock);
        if (wake)
            pthread_cond_signal(&p->room);
        free_item(it);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    if (held)
        write_held(p, &held);
    return NULL;
}

pano_publisher *pano_publisher_start(pano_sink *sink)
{
    pano_publisher *p = pano_calloc(1, sizeof *p);
    p->sink = sink;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->more, NULL);
    pthread_cond_init(&p->room, NULL);
    int rc = pthread_create(&p->thread, NULL, run, p);
    if (rc != 0)
        pano_warn("cannot start the publisher thread (%s): events are sent synchronously",
                  strerror(rc));
    p->threaded = rc == 0;
    return p;
}

void pano_publisher_send(pano_publisher *p, pano_json *event)
{
    const char *name = pano_json_get_str(event, "event");
    const char *id = pano_json_get_str(event, "event_id");
    item *it = pano_calloc(1, sizeof *it);
    it->key = pano_strdup(name ? name : "other");
    it->id = id ? pano_strdup(id) : NULL;
    it->json = pano_json_serialize(event, &it->len);
    pano_json_free(event);
    if (!p->threaded) {
        deliver(p, it);
        free_item(it);
        return;
    }
    pthread_mutex_lock(&p->lock);
    while (p->queued_bytes > 0 && p->queued_bytes + it->len > PANO_PUBLISHER_QUEUE_MAX) {
        p->waiting_for_room = true;
        pthread_cond_wait(&p->room, &p->lock);
    }
    p->waiting_for_room = false;
    bool was_empty = !p->head;
    if (p->tail)
        p->tail->next = it;
    else
        p->head = it;
    p->tail = it;
    p->queued_bytes += it->len;
    pthread_mutex_unlock(&p->lock);
    /* Signalled after unlocking, so that the thread woken does not block at
     * once on the lock still held; and only when it may be waiting (a queue
     * that was not empty is being worked on). */
    if (was_empty)
        pthread_cond_signal(&p->more);
}

void pano_publisher_stop(pano_publisher *p, pano_sink_stats *stats)
{
    if (p->threaded) {
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_signal(&p->more);
        pthread_mutex_unlock(&p->lock);
        int rc = pthread_join(p->thread, NULL);
        if (rc != 0)
            pano_error("publisher thread: %s", strerror(rc));
    }
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (p->lost > 10)
        pano_error("%llu events were not delivered in all", (unsigned long long)p->lost);
    if (p->sink) {
        if (stats)
            *stats = pano_sink_get_stats(p->sink);
        pano_sink_close(p->sink);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->more);
    pthread_cond_destroy(&p->room);
    free(p);
}
