/*
 * bulk.h - Elasticsearch _bulk requests for pano events, and their outcomes.
 *
 * Each event becomes a `create` action with _id = event_id (so a replayed
 * event is refused with 409 instead of indexed twice), routing = wf_uuid
 * (a workflow's events share a shard), in the index of its stream and of
 * the period of its own ts (partition.h: pano-kickstart-2026.11), with
 * @timestamp taken from that ts, never the time of ingestion. Nothing is
 * made per workflow: a workflow is found by routing and a term on wf_uuid.
 *
 * Events without a valid wf_uuid go to the fallback index's partition (no
 * routing), counted. A wf_uuid is used only after pano_wf_uuid_normalize()
 * accepted it (8-4-4-4-12 hex digits), so "../_all", "*" or "a,b" never are.
 * An event whose partition is past its stream's retention is refused (it
 * would be deleted): the caller dead-letters it with that reason.
 *
 * Outcomes per item, from the response (items come back in request order):
 *   2xx and 409 (already there)     -> done
 *   429 and 5xx                     -> retry that item (only that item)
 *   other 4xx (mapping, parse)      -> rejected: to the dead-letter index
 */
#ifndef PANO_BULK_H
#define PANO_BULK_H

#include "arena.h"
#include "buf.h"
#include "event.h"
#include "json.h"
#include "partition.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *prefix;         /* index prefix, lowercase */
    const char *fallback_index; /* base name for events without a valid wf_uuid */
    const pano_stream_policy *policies; /* PANO_N_STREAMS, partition.h */
    bool keep_event; /* hand the parsed event over in pano_bulk_doc.event */
    /* NULL: events are parsed onto the heap. Else into this arena (no
     * malloc per value), read-only: the caller resets it once done with
     * the event of the doc prepared last. */
    pano_arena *arena;
} pano_bulk_layout;

typedef struct {
    char index[256];
    char id[PANO_EVENT_ID_MAX];
    char routing[PANO_WF_UUID_LEN + 1]; /* "" for none */
    char wf_uuid[PANO_WF_UUID_LEN + 1]; /* normalized, "" when not valid */
    const char *stream;                 /* static string (partition.h) */
    double ts;                          /* the event's, 0 when it had none */
    char *doc; /* the event with "@timestamp" added */
    size_t doc_len;
    pano_json *event; /* the parsed event, with layout.keep_event (else NULL) */
    bool event_in_arena; /* event lives in layout.arena (not freed here) */
} pano_bulk_doc;

typedef enum {
    PANO_BULK_DOC_OK,
    PANO_BULK_DOC_INVALID, /* not JSON, no event name, no event_id, no usable ts */
    PANO_BULK_DOC_EXPIRED, /* its partition is past its stream's retention */
} pano_bulk_doc_status;

/* Prepare one event, at time now; the reason when it is not OK. An event
 * without a valid wf_uuid is prepared for the fallback index. */
pano_bulk_doc_status pano_bulk_doc_prepare(const char *json, size_t len,
                                           const pano_bulk_layout *layout, double now,
                                           pano_bulk_doc *out, char *reason, size_t reason_len);

/* The name of the partition of the index base holding ts. */
void pano_bulk_partition(const char *base, pano_period period, double ts, char *out,
                         size_t size);
void pano_bulk_doc_free(pano_bulk_doc *doc);
/* Let go of the parsed event (freed unless it lives in the arena). */
void pano_bulk_doc_drop_event(pano_bulk_doc *doc);

/* Append the action line and the document line to a bulk body. */
void pano_bulk_append(pano_buf *body, const pano_bulk_doc *doc);

/* Append s as a JSON string (quotes included). */
void pano_bulk_append_json_string(pano_buf *b, const char *s, size_t len);

/* ISO 8601 UTC with microseconds, e.g. 2026-11-21T05:42:05.018867Z. */
void pano_bulk_timestamp(double ts, char *out, size_t size);

typedef enum {
    PANO_BULK_DONE,
    PANO_BULK_RETRY,
    PANO_BULK_REJECTED,
} pano_bulk_outcome;

typedef struct {
    pano_bulk_outcome outcome;
    int status;
    char reason[256]; /* Elasticsearch's error type and reason */
    /* the version written, when the answer gives it (-1 when not) */
    int64_t seq_no, primary_term;
} pano_bulk_result;

/* Classify an HTTP status of one item. */
pano_bulk_outcome pano_bulk_classify(int status);

/* True when a bulk response says "errors": false before anything else
 * (Elasticsearch writes it first): every item was created, none needs
 * reading. A 409 counts as an error there, so this never hides one. */
bool pano_bulk_all_created(const char *body, size_t len);

/* Read the response to a bulk request of n items into results[0..n).
 * Returns -1 (reason in err) when it is not a usable bulk response: then
 * every item must be retried. */
int pano_bulk_read_response(const char *body, size_t len, size_t n, pano_bulk_result *results,
                            char *err, size_t errlen);

#endif
