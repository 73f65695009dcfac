/*
 * counters.h - pano-bridge's counters and gauges, and their form in
 * Prometheus's text format, which lib/status.h serves at /metrics and
 * writes to pano.bridge.status_file.
 */
#ifndef PANO_BRIDGE_COUNTERS_H
#define PANO_BRIDGE_COUNTERS_H

#include "buf.h"
#include "event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    /* counters */
    uint64_t received, received_bytes, redelivered;
    uint64_t produced[PANO_N_FAMILIES]; /* by pano_event_families */
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
} pano_bridge_counters;

/* Append the metrics in Prometheus text format (version 0.0.4). */
void pano_bridge_counters_render(const pano_bridge_counters *m, const char *const *family_names,
                                pano_buf *out);

#endif
