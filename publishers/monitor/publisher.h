/*
 * publisher.h - pano-monitor's events leave through a thread of their own.
 *
 * The main loop relays the task's output and must never wait for the
 * broker (a task blocked on a full pipe would be a changed task). Events
 * are serialized on the caller's thread, queued, and sent by a publisher
 * thread through the sink, which delivers or spools them (sink.h). The
 * queue is bounded (PANO_PUBLISHER_QUEUE_MAX bytes); the caller only waits
 * when it is full, which takes a sink stuck for longer than its timeouts.
 */
#ifndef PANO_MONITOR_PUBLISHER_H
#define PANO_MONITOR_PUBLISHER_H

#include "json.h"
#include "sink.h"

#define PANO_PUBLISHER_QUEUE_MAX (64u * 1024 * 1024)

typedef struct pano_publisher pano_publisher;

/* Start the thread. sink may be NULL (events are then logged, not sent).
 * The publisher owns the sink from now on. Returns NULL if the thread
 * cannot start; events are then sent synchronously by pano_publisher_send. */
pano_publisher *pano_publisher_start(pano_sink *sink);

/* Queue an event (takes ownership). Never fails: an event that cannot be
 * delivered or spooled is logged in full. */
void pano_publisher_send(pano_publisher *p, pano_json *event);

/* Send what is queued, close the sink (a last spool replay), stop the
 * thread, and report the sink's counters. */
void pano_publisher_stop(pano_publisher *p, pano_sink_stats *stats);

#endif
