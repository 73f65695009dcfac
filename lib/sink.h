/*
 * sink.h - where a publisher's events go.
 *
 * Every publisher (pano-monitor, pano-darshan, pano-transfer, pano-emit)
 * sends events through a sink built from the configuration:
 *
 *   - pano.amqp.url set: AMQP with publisher confirms (amqp_client.h). The connection
 *     is opened on first use and reopened once when it fails; an event counts
 *     as sent only when the broker confirmed it and routed it to a queue.
 *     When the broker cannot be reached, events go to the on-disk spool
 *     (spool.h, pano.spool.*) and connecting is retried after a backoff
 *     (0.5 s doubling up to 15 s). Whatever waits in the spool is replayed,
 *     in order, before the next event is published, and once more when the
 *     sink is closed; a spool left by another process for the same broker is
 *     replayed too. An event the broker refuses (nack, no queue bound for
 *     its routing key) is not spooled: retrying would not help and would
 *     hold up everything behind it.
 *   - pano.output set: one JSON object per line, appended to that file ("-"
 *     is standard output). With a broker URL too, events go to both: the
 *     file holds a copy of every event the sink is given, whatever the
 *     broker does with it.
 *   - no broker URL: the embedded store (store.h) that pano.store names, or
 *     the default one, unless pano.output is set and pano.store is not. An
 *     event counts as sent once stored (or found there already, by its
 *     event_id); one the store's checks refuse is kept in its dead letters
 *     and reported as an error.
 */
#ifndef PANO_SINK_H
#define PANO_SINK_H

#include "config.h"
#include "json.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct pano_sink pano_sink;

/* Returns NULL with a message in err when the configuration is unusable
 * (bad URL, unreadable password file, output file or store that cannot be
 * opened). A broker that is down is not an error here: sends will fail and
 * say so. */
pano_sink *pano_sink_open(const pano_config *cfg, char *err, size_t errlen);

/* How a file sink writes each event. */
typedef enum {
    PANO_SINK_JSON_LINES, /* one compact JSON object per line */
    PANO_SINK_PAYLOAD,    /* one MONITORING_PAYLOAD block per line (event.h) */
} pano_sink_format;

/* A sink writing to a file ("-" is standard output) whatever pano.amqp.url
 * says: pano-darshan --json and --payload, pano-transfer --payload or with
 * publishing off. The event filter applies as for every sink. */
pano_sink *pano_sink_open_file(const pano_config *cfg, const char *path,
                               pano_sink_format format, char *err, size_t errlen);

/* Send one event. Returns 0 once the sink took responsibility for it:
 * delivered (confirmed by the broker, or written and flushed) or stored in
 * the spool for later delivery; -1 with a message in err otherwise (refused
 * by the broker, or neither deliverable nor spoolable). */
int pano_sink_send(pano_sink *sink, const pano_json *event, char *err, size_t errlen);

/* Same for an event that is already serialized (a PANO_SINK_PAYLOAD sink
 * parses it back: the block needs its fields). */
int pano_sink_send_raw(pano_sink *sink, const char *routing_key, const char *event_id,
                       const char *json, size_t len, char *err, size_t errlen);

/* File output and the store (no effect with a broker): while held, sent
 * events are kept in memory (up to 64 KiB, then written) and written
 * together by pano_sink_flush() or pano_sink_close(), one write for many
 * events; into the store, checked at once and written by the store's
 * writer thread (pano_store_queue), committed once a second (or 100,000
 * events) while they come, and by
 * pano_sink_flush(), pano_sink_hold(false) or pano_sink_close().
 * pano_sink_send() returns 0 for a held event; one that later cannot be
 * written is logged as an error and counted in stats.failed. For programs
 * that send events in bursts and flush before they wait. */
void pano_sink_hold(pano_sink *sink, bool hold);

/* Write held events now. 0, or -1 with a message in err when some could
 * not be written (those were logged). */
int pano_sink_flush(pano_sink *sink, char *err, size_t errlen);

/* Replay the spool now (pano-emit --flush-spool), waiting up to lock_wait
 * seconds for another process that is replaying it. Returns the number of
 * events delivered, or -1 with a message in err when some remain. */
int pano_sink_flush_spool(pano_sink *sink, double lock_wait, char *err, size_t errlen);

typedef struct {
    uint64_t sent;     /* delivered directly */
    uint64_t spooled;  /* stored in the spool */
    uint64_t replayed; /* delivered from the spool (by this sink) */
    uint64_t dropped;  /* dropped from a full spool by this sink */
    uint64_t rejected; /* refused by the broker (put aside in the spool) or by the
                          store's checks (kept in its dead letters) */
    uint64_t failed;   /* neither delivered nor kept */
} pano_sink_stats;

pano_sink_stats pano_sink_get_stats(const pano_sink *sink);

/* "amqp://user:***@host:5672/vhost/exchange", the output path, the store's
 * file, or two of them ("amqp://... and events.jsonl"). */
const char *pano_sink_describe(const pano_sink *sink);

void pano_sink_close(pano_sink *sink);

#endif
