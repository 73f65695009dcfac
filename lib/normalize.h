/*
 * normalize.h - check an incoming AMQP message and bring it to pano's form.
 *
 * A message is accepted when it is a JSON object (valid UTF-8, at most
 * max_size bytes, nested at most 64 levels, no duplicate keys) that, once
 * normalized, passes its schema: schemas/events/<event>.schema.json when
 * there is one, else schemas/envelope.schema.json (event, ts, event_id and
 * wf_uuid required, field types, the event name pattern, lengths). The
 * per-event schemas describe pano's own publishers, which always set an
 * event_id; a message from another tool (no event_id of its own, or in the
 * management-API form) is held to the envelope. wf_uuid must not be empty.
 *
 * Events from Pegasus's own tools are accepted as they are and normalized:
 *   - kickstart messages in RabbitMQ management-API form
 *     ({"routing_key":..., "payload": <base64 or text>,
 *       "payload_encoding": "base64"|"string"}) are unwrapped;
 *   - an event without a name takes the routing key as its name;
 *   - stampede events (monitord) carry xwf_id: wf_uuid is set from it (from
 *     root_xwf_id when there is no xwf_id); their pre-4.9 key spelling with
 *     "__" (xwf__id, job_inst__id) becomes monitord's current "_" spelling;
 *   - a missing event_id gets a deterministic one (SHA-256 of routing key and
 *     body), so a redelivered message keeps its id.
 * When nothing had to change, the original bytes are produced untouched.
 * Anything else is rejected with a reason, for the dead-letter topic:
 *   "invalid JSON: ...", "invalid UTF-8 at byte N", "message too large (...)",
 *   "missing required field 'wf_uuid'", "'seq' must be an integer", ...
 */
#ifndef PANO_NORMALIZE_H
#define PANO_NORMALIZE_H

#include "json.h"
#include "schema.h"

#include <stdbool.h>
#include <stddef.h>

#define PANO_NORMALIZE_MAX_DEPTH 64
#define PANO_WF_UUID_MAX 255

typedef struct {
    const pano_schema_set *schemas;
    size_t max_size;
} pano_normalize_options;

/* Holds the options and the scratch memory of the fast path: most messages
 * are checked on an arena-parsed tree and produced as they came. */
typedef struct pano_normalizer pano_normalizer;
pano_normalizer *pano_normalizer_new(const pano_normalize_options *options);
void pano_normalizer_free(pano_normalizer *nz);

typedef struct {
    /* On success: the bytes to produce (the original ones when nothing had
     * to change), the event's family and its wf_uuid (the Kafka key). */
    const char *body;
    size_t len;
    const char *family;
    char wf_uuid[PANO_WF_UUID_MAX + 1];
    size_t wf_uuid_len;
    /* The event body holds, as a read-only tree, and its event_id when
     * that is a string (else NULL); valid until pano_normalized_free() or
     * the next pano_normalize() call. */
    const pano_json *doc;
    const char *event_id;
    size_t event_id_len;
    bool changed;
    /* On failure: why. */
    char reason[256];
    /* private */
    char *owned;
    pano_json *owned_doc;
} pano_normalized;

/* Returns true if the message is accepted. Release with pano_normalized_free()
 * in both cases. */
bool pano_normalize(pano_normalizer *nz, const char *routing_key, const char *body, size_t len,
                    pano_normalized *out);
void pano_normalized_free(pano_normalized *n);

#endif
