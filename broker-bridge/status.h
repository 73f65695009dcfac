/*
 * status.h - pano-bridge's counters, in its log and in Prometheus's text
 * format: as a file rewritten atomically (for node_exporter's textfile
 * collector) and on a small HTTP endpoint (GET /metrics) on 127.0.0.1.
 *
 * The HTTP server is single-threaded and never blocks: the bridge's main
 * loop puts its sockets in its poll() set (pano_status_pollfds) and hands
 * the results back (pano_status_handle). Requests are tiny; a client that
 * sends nothing for 5 s is dropped; at most 16 clients at a time.
 */
#ifndef PANO_BRIDGE_STATUS_H
#define PANO_BRIDGE_STATUS_H

#include "buf.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PANO_STATUS_FAMILIES 6 /* pano_event_families, "other" last */

typedef struct {
    /* counters */
    uint64_t received, received_bytes, redelivered;
    uint64_t produced[PANO_STATUS_FAMILIES];
    uint64_t dead_lettered;     /* confirmed in the dead-letter topic */
    uint64_t rejected_to_dlx;   /* nacked to the queue's dead-letter exchange */
    uint64_t acked;
    uint64_t delivery_errors;   /* failed Kafka delivery reports */
    uint64_t produce_retries;   /* produce calls repeated in-process */
    uint64_t amqp_connections;  /* successful (re)connections */
    uint64_t amqp_disconnects;  /* lost or closed connections */
    uint64_t producer_restarts; /* after fatal producer errors */
    uint64_t hold_timeouts;     /* messages handed back to RabbitMQ */
    uint64_t duplicates_skipped; /* copies of confirmed events, acked unproduced */
    /* gauges */
    uint64_t in_flight;         /* received, not yet acked */
    uint64_t kafka_queue;       /* messages in librdkafka's queues */
    uint64_t retry_queue;       /* messages waiting for a produce retry */
    uint64_t dedup_ids;         /* event_ids in the duplicate window */
    uint64_t dedup_bytes;       /* memory of the duplicate window */
    bool amqp_connected, consuming, kafka_stalled;
    double start_time;
} pano_bridge_metrics;

/* Append the metrics in Prometheus text format (version 0.0.4). */
void pano_status_render(const pano_bridge_metrics *m, const char *const *family_names,
                        pano_buf *out);

/* Write text to path atomically (a temporary file in the same directory,
 * then rename). Returns 0, or -1 with a message in err. */
int pano_status_write_file(const char *path, const char *text, size_t len, char *err,
                           size_t errlen);

typedef struct pano_status_server pano_status_server;

/* Listen on 127.0.0.1:port (0: any free port). NULL with a message in err. */
pano_status_server *pano_status_listen(int port, char *err, size_t errlen);
int pano_status_port(const pano_status_server *s);
void pano_status_close(pano_status_server *s);

/* Fill up to max poll entries; returns how many. */
size_t pano_status_pollfds(pano_status_server *s, struct pollfd *fds, size_t max);

/* Called with the entries pano_status_pollfds filled, after poll(). When a
 * request for /metrics is complete, render(user, out) fills the body. */
typedef void (*pano_status_render_fn)(void *user, pano_buf *out);
void pano_status_handle(pano_status_server *s, const struct pollfd *fds, size_t n,
                        pano_status_render_fn render, void *user);

#endif
