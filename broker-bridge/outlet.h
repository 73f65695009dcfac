/*
 * outlet.h - pano-bridge's Kafka side: the idempotent producer, dead-letter
 * records, messages waiting to be produced again, delivery reports and the
 * window of confirmed event_ids.
 *
 * It works on the bridge's state (bridge.h) and asks policy.h what a
 * result of librdkafka means; it never talks to RabbitMQ. What only
 * RabbitMQ can settle is left as data for the loop in bridge.c: the
 * dead-letter records Kafka refused for good wait in b->refused, a fatal
 * producer error sets b->fatal, and confirmations mark tags DONE and count
 * b->confirmed_since_ack.
 */
#ifndef PANO_BRIDGE_OUTLET_H
#define PANO_BRIDGE_OUTLET_H

#include "bridge.h"

/* A producer with the bridge's settings, its topics created (replication
 * as kafka.h says) before their handles are opened. NULL with a message. */
rd_kafka_t *outlet_create_producer(bridge *b, char *err, size_t errlen);
/* Drop what is queued (RabbitMQ redelivers it) and close the producer. */
void outlet_destroy_producer(bridge *b);
/* Serve the delivery reports that are ready, without waiting. */
void outlet_poll(bridge *b);
/* Messages in librdkafka's queues (0 without a producer). */
uint64_t outlet_queue_len(const bridge *b);

/* Hand a message to librdkafka. Never blocks: when librdkafka cannot take
 * it now, it waits in the retry queue. Takes ownership of headers. */
void outlet_produce(bridge *b, int topic, const void *key, size_t key_len, const void *value,
                    size_t len, rd_kafka_headers_t *headers, uint64_t tag, double backoff);
/* Send a rejected message to the dead-letter topic: its original bytes (cut
 * at the size limit) and, in headers, the reason and the routing key. */
void outlet_dead_letter(bridge *b, const char *routing_key, const char *exchange,
                        const char *body, size_t len, const char *reason, uint64_t tag);

/* Produce again what waited long enough. */
void outlet_process_retries(bridge *b, double now);
/* Forget the retry queue and the refused records: they belong to a
 * channel that is gone (RabbitMQ redelivers their messages). */
void outlet_drop_retries(bridge *b);
/* Forget the waiting copies of these messages (handed back to RabbitMQ). */
void outlet_forget_retries(bridge *b, const uint64_t *tags, size_t n);

/* The oldest dead-letter record Kafka refused for good (NULL: none), taken
 * off b->refused: the caller rejects its message to the queue's
 * dead-letter exchange and frees it, or keeps it. */
retry_item *outlet_take_refused(bridge *b);
/* Say so and try the record again in 30 s. */
void outlet_keep_refused(bridge *b, retry_item *r);
void outlet_free_refused(retry_item *r);

/* Note the event_id of a message just received (NULL: none to remember). */
void outlet_track_id(bridge *b, uint64_t tag, const pano_dedup_id *id);
/* Is this event a copy of one Kafka confirmed? Otherwise its id is noted
 * for when Kafka confirms it. A copy that arrives while the original is
 * still unconfirmed is produced. */
bool outlet_is_duplicate(bridge *b, uint64_t tag, const pano_normalized *n);

/* After handing messages back: does Kafka answer again? Asks its metadata
 * at most every 5 s. */
bool outlet_kafka_answers(bridge *b, double now);

#endif
