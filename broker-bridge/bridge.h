/*
 * bridge.h - pano-bridge's parts: AMQP (RabbitMQ) to Kafka, losing nothing.
 *
 * Consumes a durable queue bound to the events exchange and produces every
 * message to the Kafka topic of its event family, keyed by wf_uuid so that a
 * workflow's events stay in order (one partition per key). Messages that are
 * not valid events (normalize.h: JSON, UTF-8, size, schemas/) go to the
 * dead-letter topic with their original bytes, the reason and the routing
 * key in headers. A bad message never stops the bridge.
 *
 * Delivery. The producer is idempotent with acks=all. A message is acked to
 * RabbitMQ only after librdkafka's delivery report says Kafka persisted it
 * (or persisted its dead-letter record). Acks are cumulative (multiple=true)
 * up to the highest tag below which every message is finished (tags.h);
 * when one message is stuck at the head, the finished ones behind it are
 * acked one by one. Each Kafka message carries (generation, topic, delivery
 * tag) as its opaque; the generation changes with every AMQP connection, and
 * reports for an older generation are never acked: delivery tags belong to
 * a channel, and RabbitMQ redelivers what that channel left unacked.
 *
 * Failures.
 *   - librdkafka retries a message itself (message.timeout.ms is infinite by
 *     default), so a delivery report only fails for a reason Kafka will not
 *     change its mind about, or after pano.bridge.delivery_timeout. A message
 *     Kafka refuses for good (too large, invalid record) is dead-lettered; a
 *     dead-letter record it refuses is rejected to the queue's dead-letter
 *     exchange when the bridge declared it, and otherwise kept and retried.
 *     Any other failure is produced again in-process with a growing backoff,
 *     never by hot-looping redeliveries through RabbitMQ.
 *   - While Kafka is down nothing is confirmed, so nothing is acked and the
 *     prefetch window fills: RabbitMQ stops delivering. The bridge keeps
 *     reading the connection (heartbeats). If Kafka confirms nothing for
 *     pano.bridge.hold_timeout (well below RabbitMQ's 30-minute consumer
 *     timeout), the bridge closes the channel, so RabbitMQ requeues the
 *     messages, and consumes again when Kafka answers metadata requests.
 *   - A fatal producer error (idempotence: OUT_OF_ORDER_SEQUENCE_NUMBER, ...)
 *     tears down the producer and the AMQP connection; unacked messages are
 *     redelivered to a fresh producer.
 *   - The broker cancelling the consumer (queue deleted) or closing the
 *     channel leads to a reconnect with backoff.
 *   - SIGTERM/SIGINT: cancel the consumer, produce what was delivered, wait
 *     up to pano.bridge.drain_timeout for Kafka, ack, close, exit 0.
 * Redelivered messages may reach Kafka twice (at-least-once); the event_id
 * makes the Elasticsearch document id idempotent downstream. A copy of an
 * event whose Kafka delivery this process saw confirmed (a publisher's
 * resend, a redelivery) is acked without producing it while its event_id is
 * in the window of the last pano.bridge.dedup_window confirmed ones
 * (dedup.h).
 *
 * One thread: a poll() loop over the AMQP socket, a pipe librdkafka signals
 * when delivery reports are ready, and the status endpoint.
 *
 * The program, its dependencies running one way (docs/bridge.md, "Code"):
 *   bridge.c   the poll() loop and its policies: what becomes of each
 *              delivery, acks, dead-letter records Kafka refused, stalls,
 *              fatal producer errors; statistics, draining, main;
 *   intake.c   RabbitMQ (intake.h): connection, topology, deliveries in,
 *              acks and nacks out;
 *   outlet.c   Kafka (outlet.h): producing, dead letters, retries,
 *              delivery reports, the duplicate window;
 *   policy.c   the decisions, pure functions (policy.h).
 * bridge.c calls intake.c and outlet.c; those two never call each other
 * nor bridge.c: they share this state, and outlet.c leaves what only
 * RabbitMQ can settle as data (b->refused, b->fatal). This header holds the
 * state and is internal to pano-bridge.
 */
#ifndef PANO_BRIDGE_H
#define PANO_BRIDGE_H

#include "amqp_client.h"
#include "clock.h"
#include "config.h"
#include "counters.h"
#include "dedup.h"
#include "normalize.h"
#include "policy.h"
#include "schema.h"
#include "status.h"
#include "tags.h"

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#define CHANNEL 1
#define DEAD_TOPIC PANO_N_FAMILIES /* index of the dead-letter topic */
#define READ_BATCH 256             /* deliveries handled between two Kafka polls */

/* The opaque of a Kafka message: generation (13 bits), topic (3), tag (48). */
#define TAG_BITS 48
#define TOPIC_BITS 3
#define GEN_MASK 0x1FFFu
_Static_assert(DEAD_TOPIC < 1 << TOPIC_BITS,
               "the families and the dead-letter topic fit in TOPIC_BITS");

/* A copy of a message waiting to be produced again, or (in b->refused) a
 * dead-letter record Kafka refused for good. */
typedef struct retry_item {
    struct retry_item *next;
    uint64_t tag;
    int topic;
    char *key;
    size_t key_len;
    char *value;
    size_t len;
    rd_kafka_headers_t *headers;
    double due;
    double backoff;
    const char *why; /* refused: Kafka's reason (a static string) */
} retry_item;

/* The event_id of the message with a delivery tag, remembered in the
 * duplicate window once Kafka confirms it. Indexed like the tag ring; the
 * generation and tag say whose it is. */
typedef struct {
    pano_dedup_id id;
    uint64_t tag;
    uint64_t generation; /* & GEN_MASK, as in the opaque */
    bool set;
} tagged_id;

typedef struct {
    pano_config *cfg;
    pano_amqp_url url;
    pano_amqp_options amqp_options;
    pano_amqp *amqp;
    const char *queue;
    const char *queue_type; /* classic or quorum */
    bool consuming;
    bool reconnect_needed; /* the connection is in a state we cannot continue from */
    bool dlx_known;        /* the queue has the dead-letter exchange we declared */
    char consumer_tag[256];
    uint64_t generation;
    pano_tags tags;
    double last_ack;
    unsigned confirmed_since_ack, ack_batch;
    double reconnect_at, backoff;
    unsigned connect_failures;

    rd_kafka_t *producer;
    rd_kafka_topic_t *topics[PANO_N_FAMILIES + 1];
    char topic_names[PANO_N_FAMILIES + 1][256];
    int kafka_pipe[2];
    bool fatal;
    double last_progress;   /* last time Kafka confirmed something */
    double now;             /* monotonic time of the current loop round */
    bool stalled;
    bool waiting_for_kafka; /* messages were handed back: consume again when Kafka answers */
    double next_probe;
    double producer_retry_at;

    retry_item *retry_head, *retry_tail;
    size_t n_retry;
    retry_item *refused; /* dead-letter records Kafka refused for good, oldest first */

    pano_schema_set *schemas;
    pano_normalize_options nopts;
    pano_normalizer *normalizer;
    int prefetch;
    double hold_timeout, drain_timeout, stats_interval;
    const char *status_file;
    pano_status *status;        /* /metrics (pano.bridge.status_port) */
    double status_published;    /* when its snapshot was last replaced */

    pano_dedup *dedup;   /* NULL: pano.bridge.dedup_window = 0 */
    tagged_id *tag_ids; /* tags.size entries */

    pano_bridge_counters m, m_last;
    double last_stats;
    unsigned dead_logged, errors_logged; /* rate limits per stats interval */
} bridge;

#endif
