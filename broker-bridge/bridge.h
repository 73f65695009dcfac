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
 * The program in three rooms sharing the bridge's state:
 *   intake.c   RabbitMQ: connection, topology, deliveries in, acks out;
 *   outlet.c   Kafka: producing, retries, delivery reports, the duplicate
 *              window, stalls and fatal producer errors;
 *   bridge.c   the poll() loop, statistics, draining at shutdown and main.
 * This header is internal to pano-bridge.
 */
#ifndef PANO_BRIDGE_H
#define PANO_BRIDGE_H

#include "amqp_client.h"
#include "clock.h"
#include "config.h"
#include "dedup.h"
#include "counters.h"
#include "normalize.h"
#include "schema.h"
#include "status.h"
#include "tags.h"

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#define CHANNEL 1
#define DEAD_TOPIC PANO_N_FAMILIES /* index of the dead-letter topic */
#define STALL_AFTER 10.0      /* seconds without a confirmation: Kafka is stalled */
#define SINGLE_ACK_AFTER 1.0  /* a head stuck this long: ack the others one by one */
#define ACK_INTERVAL 0.02     /* at most this long between cumulative acks */
/* ... or an ack per tenth of the prefetch window confirmed, as RabbitMQ's
 * guidance has it: every ack costs the broker work. */
#define READ_BATCH 256        /* deliveries handled between two Kafka polls */

/* The opaque of a Kafka message: generation (13 bits), topic (3), tag (48). */
#define TAG_BITS 48
#define TOPIC_BITS 3
#define GEN_MASK 0x1FFFu
_Static_assert(DEAD_TOPIC < 1 << TOPIC_BITS, "the families and the dead-letter topic fit in TOPIC_BITS");

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
    uint64_t test_fatal_after;           /* test hook, see main() */
} bridge;

/* ---- bridge.c ------------------------------------------------------------ */

/* Log at most a few lines of a kind per stats interval. */
bool bridge_may_log(unsigned *counter);

/* ---- intake.c: RabbitMQ -------------------------------------------------- */

amqp_connection_state_t intake_connection(bridge *b);
/* Connect (and with consume, set up the topology and start consuming);
 * false when it failed and a reconnect is scheduled. */
bool intake_connect(bridge *b, bool consume);
/* Close the connection: RabbitMQ requeues every unacked message. A clean
 * close when the connection still works, else just drop it. */
void intake_disconnect(bridge *b, bool clean);
/* Read what the broker sent, without waiting: deliveries (up to a batch) and
 * the frames that explain why there are none. Also sends heartbeats when
 * due. Returns -1 when the connection has to be reopened. */
int intake_service(bridge *b, double now);
/* Whether frames are already read and waiting in rabbitmq-c's buffer. */
bool intake_buffered(bridge *b);
/* Ack what Kafka confirmed: cumulatively when due (force: now), one by one
 * behind a head stuck for SINGLE_ACK_AFTER. */
void intake_send_acks(bridge *b, double now, bool force);
/* Send a rejected message to the dead-letter topic: its original bytes (cut
 * at the size limit) and, in headers, the reason and the routing key. */
void intake_dead_letter(bridge *b, const char *routing_key, const char *exchange,
                        const char *body, size_t len, const char *reason, uint64_t tag);
/* Log a failed AMQP call as "what: why"; -1 when it failed, else 0. */
int intake_rpc_failed(bridge *b, amqp_rpc_reply_t r, const char *what);

/* ---- outlet.c: Kafka ----------------------------------------------------- */

/* A producer with the bridge's settings, its topics created (replication
 * as kafka.h says) before their handles are opened. NULL with a message. */
rd_kafka_t *outlet_create_producer(bridge *b, char *err, size_t errlen);
void outlet_destroy_producer(bridge *b);
/* A fatal producer error: a new producer, a new AMQP connection (RabbitMQ
 * redelivers what was not acked). */
void outlet_restart_producer(bridge *b, double now);
/* Hand a message to librdkafka. Never blocks: when librdkafka cannot take
 * it now, it waits in the retry queue. Takes ownership of headers. */
void outlet_produce(bridge *b, int topic, const void *key, size_t key_len, const void *value,
                    size_t len, rd_kafka_headers_t *headers, uint64_t tag, double backoff);
/* Produce again what waited long enough. */
void outlet_process_retries(bridge *b, double now);
/* Forget the retry queue (its messages are redelivered by RabbitMQ). */
void outlet_drop_retries(bridge *b);
/* Note the event_id of a message just received (NULL: none to remember). */
void outlet_track_id(bridge *b, uint64_t tag, const pano_dedup_id *id);
/* Is this event a copy of one Kafka confirmed? Otherwise its id is noted
 * for when Kafka confirms it. A copy that arrives while the original is
 * still unconfirmed is produced. */
bool outlet_is_duplicate(bridge *b, uint64_t tag, const pano_normalized *n);
/* Kafka confirmed nothing for a while: after hold_timeout, hand the
 * messages back to RabbitMQ and wait until Kafka answers again. */
void outlet_check_stall(bridge *b, double now);
/* After handing messages back: does Kafka answer again? */
bool outlet_kafka_answers(bridge *b, double now);

#endif
