/*
 * tags.h - the delivery tags of one AMQP channel and what became of each.
 *
 * RabbitMQ numbers the deliveries of a channel 1, 2, 3, ... Each one is
 *   PENDING  received, Kafka has not confirmed it yet,
 *   DONE     Kafka persisted it (or its dead-letter record): to be acked,
 *   SETTLED  the broker already forgot it (acked alone, or nacked).
 * pano_tags_take_ack() gives the tag to acknowledge with multiple=true: the
 * last DONE tag of the run of finished tags at the head. Such an ack never
 * names a tag the broker has forgotten (that would close the channel with
 * "unknown delivery tag"), and settled tags inside the run are simply
 * skipped by the broker. When the head is stuck (one message Kafka keeps
 * refusing), pano_tags_take_single() hands out the DONE tags behind it for
 * individual acks, so the prefetch window does not fill up with finished
 * messages.
 *
 * A new channel starts again at tag 1: pano_tags_reset(). The ring holds
 * `size` tags after the last acked one; the prefetch count bounds that.
 */
#ifndef PANO_TAGS_H
#define PANO_TAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    unsigned char *state; /* ring, indexed by tag % size */
    double *received_at;  /* ring: when each tag was received */
    size_t size;
    uint64_t base;     /* every tag <= base is finished and forgotten */
    uint64_t received; /* the highest tag received */
    uint64_t done;     /* tags in (base, received] that are DONE */
    uint64_t settled;  /* tags in (base, received] that are SETTLED */
    double head_since; /* when the head (base + 1) last changed */
} pano_tags;

void pano_tags_init(pano_tags *t, size_t size);
void pano_tags_free(pano_tags *t);
/* A new channel. */
void pano_tags_reset(pano_tags *t, double now);

/* Record a delivery. False when tag is not the next one or the ring is
 * full: the channel is not in the state this code expects (reconnect). */
bool pano_tags_receive(pano_tags *t, uint64_t tag, double now);
/* Kafka confirmed it. False when the tag is not pending (ignored). */
bool pano_tags_done(pano_tags *t, uint64_t tag);
/* The broker forgot it (it was nacked). False when not pending. */
bool pano_tags_settled(pano_tags *t, uint64_t tag);
bool pano_tags_is_pending(const pano_tags *t, uint64_t tag);
/* The oldest tag not finished when it is pending (else 0). */
uint64_t pano_tags_head(const pano_tags *t);

/* Up to max pending tags received before `before`, oldest first, marked
 * SETTLED: the caller hands them back to the broker (nack, requeue). */
size_t pano_tags_take_expired(pano_tags *t, double before, uint64_t *out, size_t max);

/* The tag to ack with multiple=true, or 0 when there is nothing to ack at
 * the head. *count gets the number of messages that ack covers. Forgets
 * them (the caller must send the ack). */
uint64_t pano_tags_take_ack(pano_tags *t, double now, uint64_t *count);

/* Up to max DONE tags behind a pending head, for individual acks (marked
 * SETTLED). Returns how many were written to out. */
size_t pano_tags_take_single(pano_tags *t, uint64_t *out, size_t max);

/* Received and not yet forgotten by the broker (pending + done). */
uint64_t pano_tags_outstanding(const pano_tags *t);
uint64_t pano_tags_pending(const pano_tags *t);
/* How many more tags the ring can take. Settled tags behind a pending head
 * use room too (the broker does not count them against the prefetch). */
uint64_t pano_tags_room(const pano_tags *t);

#endif
