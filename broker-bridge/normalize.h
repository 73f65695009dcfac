/*
 * normalize.h - check an incoming AMQP message and bring it to pano's form.
 *
 * Accepted: a JSON object (valid UTF-8, within the size and nesting limits)
 * with a valid dotted `event` name, a `wf_uuid` string and a numeric `ts`;
 * envelope fields that are present must have their types (seq an integer,
 * event_id and hostname strings). Events from Pegasus's own tools are
 * accepted as they are and normalized:
 *   - stampede events carry xwf_id: wf_uuid is set from it;
 *   - kickstart messages in RabbitMQ management-API form
 *     ({"routing_key":..., "payload": base64, "payload_encoding":"base64"})
 *     are unwrapped;
 *   - an event without a name takes the routing key as its name;
 *   - a missing event_id gets a deterministic one (SHA-256 of routing key and
 *     body), so a redelivered message keeps its id.
 * Anything else is rejected with a reason, for the dead-letter topic.
 */
#ifndef PANO_NORMALIZE_H
#define PANO_NORMALIZE_H

#include "json.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    /* On success: the bytes to produce (the original ones when nothing had
     * to change), the event's family and its wf_uuid (the Kafka key). */
    const char *body;
    size_t len;
    const char *family;
    char wf_uuid[128];
    /* On failure: why. */
    char reason[256];
    /* private */
    char *owned;
} pano_normalized;

/* Returns true if the message is accepted. Release with pano_normalized_free()
 * in both cases. */
bool pano_normalize(const char *routing_key, const char *body, size_t len, size_t max_size,
                    pano_normalized *out);
void pano_normalized_free(pano_normalized *n);

#endif
