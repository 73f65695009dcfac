/*
 * dedup.h - the event_ids of the last N events Kafka confirmed, so that the
 * bridge can skip copies of them.
 *
 * A publisher that lost its connection publishes again what the broker never
 * confirmed, although the broker may have stored it: the copy carries the
 * same event_id. The bridge remembers the ids of the last `capacity` events
 * whose Kafka delivery it saw confirmed (the oldest is forgotten first) and
 * acknowledges a message with such an id without producing it.
 *
 * Ids are kept as 128-bit SipHash-2-4 values under a key drawn when the
 * bridge starts, so memory is fixed at creation (pano_dedup_bytes) whatever
 * the ids look like; two different ids are taken for one another with a
 * probability of about capacity / 2^128 per message.
 */
#ifndef PANO_DEDUP_H
#define PANO_DEDUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t lo, hi; /* SipHash-2-4-128 output, as two little-endian words */
} pano_dedup_id;

typedef struct pano_dedup pano_dedup;

/* A window of capacity ids (1 to 2^31), hashed under key. */
pano_dedup *pano_dedup_new(size_t capacity, const unsigned char key[16]);
void pano_dedup_free(pano_dedup *d);

pano_dedup_id pano_dedup_id_of(const pano_dedup *d, const void *event_id, size_t len);
bool pano_dedup_seen(const pano_dedup *d, pano_dedup_id id);
/* Remember id (nothing when it is already there), forgetting the oldest
 * when the window is full. */
void pano_dedup_remember(pano_dedup *d, pano_dedup_id id);

size_t pano_dedup_count(const pano_dedup *d);
/* Memory the window uses, all allocated by pano_dedup_new. */
size_t pano_dedup_bytes(const pano_dedup *d);

#endif
