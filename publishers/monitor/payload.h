/*
 * payload.h - MONITORING_PAYLOAD blocks in a task's output.
 *
 * Pegasus tools (pegasus-transfer, pegasus-darshan, users' scripts) add
 * events to a job by printing
 *
 *     @@@MONITORING_PAYLOAD - START@@@{"ts": 1700000000,
 *       "monitoring_event": "darshan.perf", "payload": [{...}, ...]}@@@MONITORING_PAYLOAD - END@@@
 *
 * anywhere in stdout or stderr, mid-line too. The scanner watches a byte
 * stream fed in arbitrary pieces (markers may be split across reads and the
 * block across lines) and reports each complete block once. It only
 * observes: the caller passes the output on unchanged. A block larger than
 * the limit is not kept (memory stays bounded) and is reported as oversized
 * when its end marker arrives.
 *
 * pano_payload_events() turns a block into events: each item of "payload"
 * becomes one event named after "monitoring_event" (default
 * "monitoring.additional", as pegasus-monitord does) with the envelope, the
 * item's fields and monitoring_event; "ts" of the payload, when given, is
 * the events' ts. Whatever cannot be used (invalid JSON, a bad event name,
 * no payload array, an item that is not an object, an oversized or
 * unterminated block) becomes a kickstart.payload.error event and a log
 * line: nothing is dropped silently.
 */
#ifndef PANO_PAYLOAD_H
#define PANO_PAYLOAD_H

#include "event.h"
#include "json.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    PANO_PAYLOAD_COMPLETE,     /* block holds the text between the markers */
    PANO_PAYLOAD_OVERSIZED,    /* block is NULL; size is the text's length */
    PANO_PAYLOAD_UNTERMINATED, /* the stream ended inside a block */
} pano_payload_status;

typedef void (*pano_payload_fn)(void *user, pano_payload_status status, const char *block,
                                size_t size);

typedef struct pano_payload_scanner pano_payload_scanner;

pano_payload_scanner *pano_payload_scanner_new(size_t max_block, pano_payload_fn fn, void *user);
void pano_payload_feed(pano_payload_scanner *s, const char *data, size_t len);
/* End of the stream: reports a block left open. */
void pano_payload_finish(pano_payload_scanner *s);
void pano_payload_scanner_free(pano_payload_scanner *s);

typedef void (*pano_payload_emit_fn)(void *user, pano_json *event);

/* Build the events of one block (see above); stream is "stdout" or
 * "stderr". Each event is handed to emit, which takes ownership. Returns
 * the number of events that are not errors. */
size_t pano_payload_events(pano_source *src, const char *stream, pano_payload_status status,
                           const char *block, size_t size, pano_payload_emit_fn emit,
                           void *user);

#endif
