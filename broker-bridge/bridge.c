/*
 * pano-bridge - AMQP (RabbitMQ) to Kafka, losing nothing.
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
 */
#include "amqp_client.h"
#include "cli.h"
#include "dedup.h"
#include "event.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"
#include "normalize.h"
#include "schema.h"
#include "metrics.h"
#include "status.h"
#include "tags.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define CHANNEL 1
#define N_FAMILIES PANO_STATUS_FAMILIES
#define DEAD_TOPIC N_FAMILIES /* index of the dead-letter topic */
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
    rd_kafka_topic_t *topics[N_FAMILIES + 1];
    char topic_names[N_FAMILIES + 1][256];
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

    pano_bridge_metrics m, m_last;
    double last_stats;
    unsigned dead_logged, errors_logged; /* rate limits per stats interval */
    uint64_t test_fatal_after;           /* test hook, see main() */
} bridge;

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-bridge [options]\n"
            "Consume pano events from RabbitMQ and produce them to Kafka.\n"
            "\n"
            "  -q, --queue NAME       queue to consume (pano.bridge.queue)\n"
            "  -b, --brokers LIST     Kafka bootstrap servers (pano.kafka.brokers)\n"
            "  -p, --status-port N    serve metrics on 127.0.0.1:N/metrics\n"
            "      --setup            declare the queue, exchanges and bindings, then exit\n"
            "\n"
            "The broker is pano.amqp.url (PANO_AMQP_URL); its exchange is the one\n"
            "publishers use. SIGTERM or SIGINT: stop consuming, wait for Kafka to\n"
            "confirm what is in flight, acknowledge it, exit 0.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

static double monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Log at most a few lines of a kind per stats interval. */
static bool may_log(unsigned *counter) { return (*counter)++ < 20; }

/* ---- opaque ------------------------------------------------------------ */

static void *pack_ref(uint64_t generation, int topic, uint64_t tag)
{
    uint64_t v = ((generation & GEN_MASK) << (TAG_BITS + TOPIC_BITS)) |
                 ((uint64_t)topic << TAG_BITS) | (tag & ((1ULL << TAG_BITS) - 1));
    return (void *)(uintptr_t)v;
}

static void unpack_ref(void *ref, uint64_t *generation, int *topic, uint64_t *tag)
{
    uint64_t v = (uint64_t)(uintptr_t)ref;
    *tag = v & ((1ULL << TAG_BITS) - 1);
    *topic = (int)((v >> TAG_BITS) & ((1u << TOPIC_BITS) - 1));
    *generation = v >> (TAG_BITS + TOPIC_BITS);
}

/* ---- acknowledgements -------------------------------------------------- */

static amqp_connection_state_t conn(bridge *b) { return pano_amqp_connection(b->amqp); }

static void send_acks(bridge *b, double now, bool force)
{
    if (!b->amqp || b->reconnect_needed)
        return;
    if (!force && b->confirmed_since_ack < b->ack_batch && now - b->last_ack < ACK_INTERVAL)
        return;
    b->confirmed_since_ack = 0;
    b->last_ack = now;
    uint64_t count;
    uint64_t upto = pano_tags_take_ack(&b->tags, now, &count);
    if (upto) {
        int rc = amqp_basic_ack(conn(b), CHANNEL, upto, 1);
        if (rc != AMQP_STATUS_OK) {
            pano_warn("ack failed: %s", amqp_error_string2(rc));
            b->reconnect_needed = true; /* RabbitMQ redelivers them */
            return;
        }
        b->m.acked += count;
    }
    /* A message stuck at the head: ack the finished ones behind it alone. */
    if (b->tags.done > 0 && pano_tags_pending(&b->tags) > 0 &&
        now - b->tags.head_since > SINGLE_ACK_AFTER) {
        uint64_t single[256];
        size_t n = pano_tags_take_single(&b->tags, single, 256);
        for (size_t i = 0; i < n; i++) {
            int rc = amqp_basic_ack(conn(b), CHANNEL, single[i], 0);
            if (rc != AMQP_STATUS_OK) {
                pano_warn("ack failed: %s", amqp_error_string2(rc));
                b->reconnect_needed = true;
                return;
            }
        }
        b->m.acked += n;
    }
}

/* ---- Kafka ------------------------------------------------------------- */

static void retry_free(retry_item *r)
{
    if (r->headers)
        rd_kafka_headers_destroy(r->headers);
    free(r->key);
    free(r->value);
    free(r);
}

static void drop_retries(bridge *b)
{
    while (b->retry_head) {
        retry_item *r = b->retry_head;
        b->retry_head = r->next;
        retry_free(r);
    }
    b->retry_tail = NULL;
    b->n_retry = 0;
}

/* Keep a copy of a message to produce it again after a backoff. Takes
 * ownership of headers. */
static void defer(bridge *b, int topic, const void *key, size_t key_len, const void *value,
                  size_t len, rd_kafka_headers_t *headers, uint64_t tag, double backoff)
{
    retry_item *r = pano_calloc(1, sizeof *r);
    r->tag = tag;
    r->topic = topic;
    if (key) {
        r->key = pano_malloc(key_len ? key_len : 1);
        memcpy(r->key, key, key_len);
        r->key_len = key_len;
    }
    r->value = pano_malloc(len ? len : 1);
    memcpy(r->value, value, len);
    r->len = len;
    r->headers = headers;
    r->backoff = backoff;
    r->due = monotonic() + backoff;
    if (b->retry_tail)
        b->retry_tail->next = r;
    else
        b->retry_head = r;
    b->retry_tail = r;
    b->n_retry++;
}

static void dead_letter(bridge *b, const char *routing_key, const char *exchange,
                        const char *body, size_t len, const char *reason, uint64_t tag);
static void permanent_failure(bridge *b, int topic, const void *key, size_t key_len,
                              const char *value, size_t len, rd_kafka_headers_t *headers,
                              const char *why, uint64_t tag);

/* Hand a message to librdkafka. Never blocks: when librdkafka cannot take
 * it now, it waits in the retry queue. Takes ownership of headers. */
static void produce(bridge *b, int topic, const void *key, size_t key_len, const void *value,
                    size_t len, rd_kafka_headers_t *headers, uint64_t tag, double backoff)
{
    rd_kafka_resp_err_t err = rd_kafka_producev(
        b->producer, RD_KAFKA_V_RKT(b->topics[topic]), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_VALUE((void *)value, len),
        RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(pack_ref(b->generation, topic, tag)),
        RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
        return; /* librdkafka owns the headers now */
    switch (err) {
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
        defer(b, topic, key, key_len, value, len, headers, tag, 0.05);
        return;
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        permanent_failure(b, topic, key, key_len, value, len, headers, rd_kafka_err2str(err), tag);
        return;
    case RD_KAFKA_RESP_ERR__FATAL:
        if (headers)
            rd_kafka_headers_destroy(headers);
        b->fatal = true; /* the message stays unacked: redelivered after the restart */
        return;
    default:
        if (may_log(&b->errors_logged))
            pano_error("cannot produce to %s: %s (trying again in %.1f s)",
                       b->topic_names[topic], rd_kafka_err2str(err), backoff);
        defer(b, topic, key, key_len, value, len, headers, tag, backoff);
    }
}

/* Kafka refused a message for good. Takes ownership of headers (those of a
 * dead-letter record are kept when it has to be tried again). */
static void permanent_failure(bridge *b, int topic, const void *key, size_t key_len,
                              const char *value, size_t len, rd_kafka_headers_t *headers,
                              const char *why, uint64_t tag)
{
    if (topic != DEAD_TOPIC && headers) {
        rd_kafka_headers_destroy(headers);
        headers = NULL;
    }
    if (topic != DEAD_TOPIC) {
        /* Its routing key is not kept; the event name stands in for it. */
        char reason[300], name[256] = "";
        snprintf(reason, sizeof reason, "Kafka refused it: %s", why);
        char err[64];
        pano_json *doc = pano_json_parse(value, len, PANO_NORMALIZE_MAX_DEPTH, err, sizeof err);
        const char *event = doc ? pano_json_get_str(doc, "event") : NULL;
        snprintf(name, sizeof name, "%s", event ? event : "");
        pano_json_free(doc);
        dead_letter(b, name, b->url.exchange, value, len, reason, tag);
        return;
    }
    /* Even its dead-letter record. */
    if (b->dlx_known && b->amqp &&
        amqp_basic_nack(conn(b), CHANNEL, tag, 0, 0) == AMQP_STATUS_OK) {
        if (headers)
            rd_kafka_headers_destroy(headers);
        pano_tags_settled(&b->tags, tag);
        b->m.rejected_to_dlx++;
        pano_error("Kafka refused a dead-letter record (%s): rejected the message to the "
                   "queue's dead-letter exchange %s",
                   why, pano_config_str(b->cfg, "pano.bridge.dead_letter_exchange"));
        return;
    }
    if (may_log(&b->errors_logged))
        pano_error("Kafka refused a dead-letter record (%s) and the queue has no dead-letter "
                   "exchange of the bridge's: the message stays unacknowledged and is tried "
                   "again in 30 s; check the topic %s",
                   why, b->topic_names[DEAD_TOPIC]);
    defer(b, DEAD_TOPIC, key, key_len, value, len, headers, tag, 30);
}

static bool is_permanent(rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT:
        return true;
    default:
        return false;
    }
}

/* ---- duplicates --------------------------------------------------------- */

/* Note the event_id of a message just received (NULL: none to remember). */
static void track_id(bridge *b, uint64_t tag, const pano_dedup_id *id)
{
    if (!b->dedup)
        return;
    tagged_id *t = &b->tag_ids[tag % b->tags.size];
    t->tag = tag;
    t->generation = b->generation & GEN_MASK;
    t->set = id != NULL;
    if (id)
        t->id = *id;
}

/* Kafka persisted the event of (generation, tag): remember its event_id. */
static void remember_confirmed(bridge *b, uint64_t generation, uint64_t tag)
{
    if (!b->dedup)
        return;
    tagged_id *t = &b->tag_ids[tag % b->tags.size];
    if (t->set && t->tag == tag && t->generation == generation) {
        pano_dedup_remember(b->dedup, t->id);
        t->set = false;
    }
}

/* Is this event a copy of one Kafka confirmed? Otherwise its id is noted
 * for when Kafka confirms it. A copy that arrives while the original is
 * still unconfirmed is produced. */
static bool is_duplicate(bridge *b, uint64_t tag, const pano_normalized *n)
{
    if (!b->dedup || !n->event_id) {
        track_id(b, tag, NULL);
        return false;
    }
    pano_dedup_id id = pano_dedup_id_of(b->dedup, n->event_id, n->event_id_len);
    if (pano_dedup_seen(b->dedup, id)) {
        track_id(b, tag, NULL);
        return true;
    }
    track_id(b, tag, &id);
    return false;
}

/* ---- delivery reports ---------------------------------------------------- */

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    bridge *b = opaque;
    uint64_t generation, tag;
    int topic;
    unpack_ref(m->_private, &generation, &topic, &tag);
    bool current = b->amqp && generation == (b->generation & GEN_MASK) && !b->reconnect_needed;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_PERSISTED) {
        b->last_progress = b->now;
        b->waiting_for_kafka = false;
        if (topic != DEAD_TOPIC)
            remember_confirmed(b, generation, tag); /* even for a channel that is gone */
        if (!current || !pano_tags_done(&b->tags, tag))
            return; /* its channel is gone; RabbitMQ redelivers it */
        if (topic == DEAD_TOPIC)
            b->m.dead_lettered++;
        else
            b->m.produced[topic]++;
        b->confirmed_since_ack++;
        return;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        return; /* dropped on purpose (see destroy_producer) */
    b->m.delivery_errors++;
    if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
        b->fatal = true;
        return;
    }
    if (!current || !pano_tags_is_pending(&b->tags, tag))
        return;
    if (is_permanent(m->err)) {
        rd_kafka_headers_t *h = NULL;
        permanent_failure(b, topic, m->key, m->key_len, m->payload, m->len,
                          topic == DEAD_TOPIC &&
                                  rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR
                              ? rd_kafka_headers_copy(h)
                              : NULL,
                          rd_kafka_err2str(m->err), tag);
        return;
    }
    if (may_log(&b->errors_logged))
        pano_warn("Kafka did not persist a message to %s: %s (producing it again)",
                  b->topic_names[topic], rd_kafka_err2str(m->err));
    rd_kafka_headers_t *h = NULL, *copy = NULL;
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR)
        copy = rd_kafka_headers_copy(h);
    defer(b, topic, m->key, m->key_len, m->payload, m->len, copy, tag, 1.0);
}

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    bridge *b = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_fatal_error(rk, why, sizeof why);
        pano_error("fatal Kafka producer error: %s", why);
        b->fatal = true;
        return;
    }
    if (may_log(&b->errors_logged))
        pano_warn("Kafka: %s", reason);
}

static rd_kafka_t *create_producer(bridge *b, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = pano_kafka_conf_new(b->cfg, err, errlen);
    if (!conf)
        return NULL;
    char max[32], linger[32], timeout[32], queue[32];
    /* Room for the largest accepted message plus its key and headers. */
    snprintf(max, sizeof max, "%zu", b->nopts.max_size + 65536);
    snprintf(linger, sizeof linger, "%.3f", pano_config_double(b->cfg, "pano.bridge.linger") * 1000);
    snprintf(timeout, sizeof timeout, "%.0f",
             pano_config_double(b->cfg, "pano.bridge.delivery_timeout") * 1000);
    /* Above what the bridge can have in flight, so that a full queue is rare:
     * this channel's window, one of a previous channel, retries. */
    snprintf(queue, sizeof queue, "%d", 4 * b->prefetch + 10000);
    /* Batches of events shrink about 10x with lz4: Kafka stores, replicates
     * and serves a tenth of the bytes. A default: compression.type may be
     * changed. */
    if (pano_kafka_conf_set(conf, "compression.type", "lz4", err, errlen) < 0)
        goto fail;
    /* The bridge's own settings: its guarantees and bounds depend on them. */
    const pano_kafka_property own[] = {
        {"enable.idempotence", "true"},
        {"acks", "all"},
        {"client.id", "pano-bridge"},
        {"batch.num.messages", "10000"},
        {"socket.nagle.disable", "true"},
        /* Java's partitioner: the same wf_uuid lands where a Java
         * producer would put it. */
        {"partitioner", "murmur2_random"},
        {"message.max.bytes", max},
        {"linger.ms", linger},
        {"message.timeout.ms", timeout},
        {"queue.buffering.max.messages", queue},
    };
    if (pano_kafka_conf_apply(conf, own, sizeof own / sizeof own[0], b->cfg,
                              "pano.bridge.kafka_properties", err, errlen) < 0)
        goto fail;
    rd_kafka_conf_set_opaque(conf, b);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    char why[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!rk) {
        snprintf(err, errlen, "cannot create the Kafka producer: %s", why);
        goto fail;
    }
    /* Before the topic handles: their metadata requests would have the
     * brokers auto-create the topics with the brokers' defaults. */
    if (pano_kafka_ensure_topics(rk, b->cfg, why, sizeof why) < 0)
        pano_warn("%s (going on: Kafka may create topics itself)", why);
    for (int i = 0; i <= N_FAMILIES; i++) {
        b->topics[i] = rd_kafka_topic_new(rk, b->topic_names[i], NULL);
        if (!b->topics[i]) {
            snprintf(err, errlen, "Kafka topic %s: %s", b->topic_names[i],
                     rd_kafka_err2str(rd_kafka_last_error()));
            for (int k = 0; k < i; k++)
                rd_kafka_topic_destroy(b->topics[k]);
            rd_kafka_destroy(rk);
            return NULL;
        }
    }
    /* Delivery reports wake the poll() loop through the pipe. */
    rd_kafka_queue_t *main_queue = rd_kafka_queue_get_main(rk);
    rd_kafka_queue_io_event_enable(main_queue, b->kafka_pipe[1], "k", 1);
    rd_kafka_queue_destroy(main_queue);
    return rk;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

static void destroy_producer(bridge *b)
{
    if (!b->producer)
        return;
    /* What is still queued belongs to channels that are gone: RabbitMQ
     * delivers it again, so it is dropped here. */
    rd_kafka_purge(b->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(b->producer, 0);
    for (int i = 0; i <= N_FAMILIES; i++)
        if (b->topics[i])
            rd_kafka_topic_destroy(b->topics[i]);
    memset(b->topics, 0, sizeof b->topics);
    rd_kafka_destroy(b->producer);
    b->producer = NULL;
}

/* Produce again what waited long enough. */
static void process_retries(bridge *b, double now)
{
    size_t n = b->producer ? b->n_retry : 0;
    for (size_t i = 0; i < n && b->retry_head && b->retry_head->due <= now && !b->fatal; i++) {
        retry_item *r = b->retry_head;
        b->retry_head = r->next;
        if (!b->retry_head)
            b->retry_tail = NULL;
        b->n_retry--;
        b->m.produce_retries++;
        rd_kafka_headers_t *h = r->headers;
        r->headers = NULL;
        double backoff = r->backoff * 2 > 30 ? 30 : r->backoff * 2;
        produce(b, r->topic, r->key, r->key_len, r->value, r->len, h, r->tag, backoff);
        retry_free(r);
    }
}

/* ---- messages ---------------------------------------------------------- */

/* Send a rejected message to the dead-letter topic: its original bytes (cut
 * at the size limit) and, in headers, the reason and the routing key. */
static void dead_letter(bridge *b, const char *routing_key, const char *exchange,
                        const char *body, size_t len, const char *reason, uint64_t tag)
{
    rd_kafka_headers_t *h = rd_kafka_headers_new(6);
    rd_kafka_header_add(h, "reason", -1, reason, -1);
    rd_kafka_header_add(h, "routing_key", -1, routing_key, -1);
    rd_kafka_header_add(h, "exchange", -1, exchange, -1);
    char size[32];
    snprintf(size, sizeof size, "%zu", len);
    rd_kafka_header_add(h, "original_size", -1, size, -1);
    if (len > b->nopts.max_size) {
        rd_kafka_header_add(h, "truncated", -1, "true", -1);
        len = b->nopts.max_size;
    }
    if (may_log(&b->dead_logged))
        pano_info("dead-lettering a message (routing key '%.100s'): %s", routing_key, reason);
    produce(b, DEAD_TOPIC, routing_key, strlen(routing_key), body, len, h, tag, 1.0);
}

static int family_index(const char *family)
{
    for (int i = 0; i < N_FAMILIES; i++)
        if (pano_event_families[i] == family || strcmp(pano_event_families[i], family) == 0)
            return i;
    return N_FAMILIES - 1;
}

static void handle_delivery(bridge *b, const amqp_envelope_t *env, double now)
{
    uint64_t tag = env->delivery_tag;
    if (!pano_tags_receive(&b->tags, tag, now)) {
        pano_warn("delivery tag %" PRIu64 " after %" PRIu64 " with %" PRIu64
                  " unfinished: reconnecting (RabbitMQ delivers the unacked ones again)",
                  tag, b->tags.received, pano_tags_outstanding(&b->tags));
        b->reconnect_needed = true;
        return;
    }
    b->m.received++;
    b->m.received_bytes += env->message.body.len;
    if (env->redelivered)
        b->m.redelivered++;

    char key[256], exchange[256];
    size_t klen = env->routing_key.len < sizeof key ? env->routing_key.len : sizeof key - 1;
    memcpy(key, env->routing_key.bytes, klen);
    key[klen] = '\0';
    size_t elen = env->exchange.len < sizeof exchange ? env->exchange.len : sizeof exchange - 1;
    memcpy(exchange, env->exchange.bytes, elen);
    exchange[elen] = '\0';
    const char *body = env->message.body.bytes;
    size_t len = env->message.body.len;

    pano_normalized n;
    if (!pano_normalize(b->normalizer, key, body, len, &n)) {
        track_id(b, tag, NULL);
        dead_letter(b, key, exchange, body, len, n.reason, tag);
    } else if (is_duplicate(b, tag, &n) && pano_tags_done(&b->tags, tag)) {
        /* Acked with the others, never produced. */
        b->m.duplicates_skipped++;
        b->confirmed_since_ack++;
    } else
        produce(b, family_index(n.family), n.wf_uuid, n.wf_uuid_len, n.body, n.len, NULL, tag,
                1.0);
    pano_normalized_free(&n);

    if (b->test_fatal_after && b->m.received >= b->test_fatal_after) {
        b->test_fatal_after = 0;
        pano_warn("test hook: raising a fatal producer error");
        rd_kafka_test_fatal_error(b->producer, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                  "raised by PANO_BRIDGE_TEST_FATAL_AFTER");
    }
}

/* ---- AMQP -------------------------------------------------------------- */

static bool is_precondition_failed(amqp_rpc_reply_t r)
{
    return r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
           r.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
           ((amqp_channel_close_t *)r.reply.decoded)->reply_code == AMQP_PRECONDITION_FAILED;
}

/* After the broker closed the channel: confirm, and open it again. */
static int reopen_channel(bridge *b)
{
    amqp_channel_close_ok_t ok = {0};
    if (amqp_send_method(conn(b), CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) != AMQP_STATUS_OK)
        return -1;
    amqp_channel_open(conn(b), CHANNEL);
    return amqp_get_rpc_reply(conn(b)).reply_type == AMQP_RESPONSE_NORMAL ? 0 : -1;
}

static int rpc_failed(bridge *b, amqp_rpc_reply_t r, const char *what)
{
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    pano_error("%s: %s", what, why);
    return -1;
}

/* Declare something; if it exists with other settings, say so and use it
 * as it is (a passive declare). Returns 1 if it was declared as asked, 0 if
 * it exists with other settings, -1 on failure. */
static int declare_or_accept(bridge *b, const char *what, void (*declare)(bridge *, bool, const void *),
                             const void *arg)
{
    declare(b, false, arg);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(conn(b));
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 1;
    if (!is_precondition_failed(r))
        return rpc_failed(b, r, what);
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    pano_warn("%s: it exists with other settings (%s); using it as it is", what, why);
    if (reopen_channel(b) < 0)
        return rpc_failed(b, amqp_get_rpc_reply(conn(b)), "reopening the channel");
    declare(b, true, arg);
    return rpc_failed(b, amqp_get_rpc_reply(conn(b)), what) < 0 ? -1 : 0;
}

typedef struct {
    const char *name, *type;
} exchange_spec;

static void declare_exchange(bridge *b, bool passive, const void *arg)
{
    const exchange_spec *e = arg;
    amqp_exchange_declare(conn(b), CHANNEL, amqp_cstring_bytes(e->name),
                          amqp_cstring_bytes(e->type), passive, 1, 0, 0, amqp_empty_table);
}

/* Declare a durable queue of the configured type, with a dead-letter
 * exchange when dlx is not empty. */
static void declare_typed_queue(bridge *b, const char *name, bool passive, const char *dlx)
{
    amqp_table_entry_t entries[2] = {
        {amqp_cstring_bytes("x-queue-type"),
         {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(b->queue_type)}}},
        {amqp_cstring_bytes("x-dead-letter-exchange"),
         {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(dlx)}}},
    };
    /* A classic queue is declared without x-queue-type, so one made by an
     * earlier version (or by hand, Panorama's way) is accepted as it is. */
    bool typed = strcmp(b->queue_type, "classic") != 0;
    amqp_table_t args = {(typed ? 1 : 0) + (*dlx ? 1 : 0), typed ? entries : entries + 1};
    amqp_queue_declare(conn(b), CHANNEL, amqp_cstring_bytes(name), passive, 1, 0, 0,
                       passive || args.num_entries == 0 ? amqp_empty_table : args);
}

static void declare_queue(bridge *b, bool passive, const void *arg)
{
    declare_typed_queue(b, b->queue, passive, arg);
}

/* Declare (or with pano.bridge.declare=false, check) the topology. */
static int setup_topology(bridge *b)
{
    const char *dlx = pano_config_str(b->cfg, "pano.bridge.dead_letter_exchange");
    if (!dlx)
        dlx = "";
    char what[600];
    b->dlx_known = false;
    if (!pano_config_bool(b->cfg, "pano.bridge.declare")) {
        declare_queue(b, true, dlx);
        snprintf(what, sizeof what, "checking that queue '%s' exists", b->queue);
        return rpc_failed(b, amqp_get_rpc_reply(conn(b)), what);
    }
    exchange_spec events = {b->url.exchange, "topic"};
    snprintf(what, sizeof what, "declaring exchange '%s' (durable topic)", b->url.exchange);
    if (declare_or_accept(b, what, declare_exchange, &events) < 0)
        return -1;
    if (*dlx) {
        exchange_spec dead = {dlx, "fanout"};
        snprintf(what, sizeof what, "declaring dead-letter exchange '%s'", dlx);
        if (declare_or_accept(b, what, declare_exchange, &dead) < 0)
            return -1;
        /* A queue behind the dead-letter exchange, so what is rejected to it
         * is kept, not dropped as unroutable. */
        char dead_queue[300];
        snprintf(dead_queue, sizeof dead_queue, "%s.dead", b->queue);
        declare_typed_queue(b, dead_queue, false, "");
        snprintf(what, sizeof what, "declaring dead-letter queue '%s'", dead_queue);
        if (rpc_failed(b, amqp_get_rpc_reply(conn(b)), what) < 0)
            return -1;
        amqp_queue_bind(conn(b), CHANNEL, amqp_cstring_bytes(dead_queue),
                        amqp_cstring_bytes(dlx), amqp_cstring_bytes(""), amqp_empty_table);
        snprintf(what, sizeof what, "binding '%s' to '%s'", dead_queue, dlx);
        if (rpc_failed(b, amqp_get_rpc_reply(conn(b)), what) < 0)
            return -1;
    }
    snprintf(what, sizeof what, "declaring queue '%s'", b->queue);
    int rc = declare_or_accept(b, what, declare_queue, dlx);
    if (rc < 0)
        return -1;
    b->dlx_known = rc == 1 && *dlx;
    if (rc == 0)
        pano_warn("queue '%s' has no dead-letter exchange of the bridge's: a message Kafka "
                  "refuses even as a dead letter stays in the queue",
                  b->queue);
    char *keys = pano_strdup(pano_config_str(b->cfg, "pano.bridge.bindings")), *save;
    for (char *k = strtok_r(keys, ", ", &save); k; k = strtok_r(NULL, ", ", &save)) {
        amqp_queue_bind(conn(b), CHANNEL, amqp_cstring_bytes(b->queue),
                        amqp_cstring_bytes(b->url.exchange), amqp_cstring_bytes(k),
                        amqp_empty_table);
        snprintf(what, sizeof what, "binding '%s' to '%s' with key '%s'", b->queue,
                 b->url.exchange, k);
        if (rpc_failed(b, amqp_get_rpc_reply(conn(b)), what) < 0) {
            free(keys);
            return -1;
        }
    }
    free(keys);
    return 0;
}

static int start_consuming(bridge *b)
{
    amqp_basic_qos(conn(b), CHANNEL, 0, (uint16_t)b->prefetch, 0);
    if (rpc_failed(b, amqp_get_rpc_reply(conn(b)), "setting the prefetch count") < 0)
        return -1;
    amqp_basic_consume_ok_t *ok = amqp_basic_consume(
        conn(b), CHANNEL, amqp_cstring_bytes(b->queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    char what[300];
    snprintf(what, sizeof what, "consuming from '%s'", b->queue);
    if (rpc_failed(b, amqp_get_rpc_reply(conn(b)), what) < 0 || !ok)
        return -1;
    snprintf(b->consumer_tag, sizeof b->consumer_tag, "%.*s", (int)ok->consumer_tag.len,
             (const char *)ok->consumer_tag.bytes);
    b->consuming = true;
    return 0;
}

/* Close the connection: RabbitMQ requeues every unacked message. A clean
 * close when the connection still works, else just drop it. */
static void disconnect(bridge *b, bool clean)
{
    if (!b->amqp)
        return;
    if (!clean)
        pano_amqp_mark_broken(b->amqp);
    pano_amqp_close(b->amqp);
    b->amqp = NULL;
    b->consuming = false;
    b->reconnect_needed = false;
    b->generation++;
    pano_tags_reset(&b->tags, monotonic());
    drop_retries(b); /* they belong to the old channel */
    b->m.amqp_disconnects++;
    b->reconnect_at = monotonic() + b->backoff;
}

static bool connect_amqp(bridge *b, bool consume)
{
    char err[512];
    b->amqp = pano_amqp_connect(&b->amqp_options, err, sizeof err);
    if (!b->amqp) {
        if (b->connect_failures++ < 3 || b->connect_failures % 10 == 0)
            pano_warn("%s (retrying in %.0f s)", err, b->backoff);
        b->reconnect_at = monotonic() + b->backoff;
        b->backoff = b->backoff * 2 > 10 ? 10 : b->backoff * 2;
        return false;
    }
    if (setup_topology(b) < 0 || (consume && start_consuming(b) < 0)) {
        pano_amqp_mark_broken(b->amqp);
        pano_amqp_close(b->amqp);
        b->amqp = NULL;
        b->reconnect_at = monotonic() + b->backoff;
        b->backoff = b->backoff * 2 > 10 ? 10 : b->backoff * 2;
        return false;
    }
    b->generation++;
    if (consume)
        pano_tags_reset(&b->tags, monotonic());
    b->last_progress = monotonic(); /* the stall clock starts now */
    b->connect_failures = 0;
    b->backoff = 1;
    b->m.amqp_connections++;
    char shown[512];
    pano_url_redact(pano_config_str(b->cfg, "pano.amqp.url"), shown, sizeof shown);
    if (consume)
        pano_info("consuming '%s' from %s (prefetch %d)", b->queue, shown, b->prefetch);
    return true;
}

/* A method frame other than a delivery. Returns -1 when the channel or
 * connection is gone. */
static int handle_frame(bridge *b)
{
    amqp_frame_t frame;
    struct timeval zero = {0, 0};
    int rc = amqp_simple_wait_frame_noblock(conn(b), &frame, &zero);
    if (rc == AMQP_STATUS_TIMEOUT)
        return 0;
    if (rc != AMQP_STATUS_OK) {
        pano_warn("AMQP connection lost: %s", amqp_error_string2(rc));
        return -1;
    }
    if (frame.frame_type != AMQP_FRAME_METHOD)
        return 0;
    switch (frame.payload.method.id) {
    case AMQP_BASIC_CANCEL_METHOD:
        pano_error("RabbitMQ cancelled the consumer of '%s' (was the queue deleted?); "
                   "reconnecting",
                   b->queue);
        return -1;
    case AMQP_BASIC_CANCEL_OK_METHOD:
        b->consuming = false;
        return 0;
    case AMQP_CHANNEL_CLOSE_METHOD: {
        amqp_channel_close_t *m = frame.payload.method.decoded;
        pano_error("RabbitMQ closed the channel: %u %.*s", m->reply_code,
                   (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        return -1;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
        amqp_connection_close_t *m = frame.payload.method.decoded;
        pano_error("RabbitMQ closed the connection: %u %.*s", m->reply_code,
                   (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        return -1;
    }
    default:
        return 0; /* connection.blocked and the like */
    }
}

/* Read what the broker sent, without waiting: deliveries (up to a batch) and
 * the frames that explain why there are none. Also sends heartbeats when
 * due. Returns -1 when the connection has to be reopened. */
static int service_amqp(bridge *b, double now)
{
    amqp_connection_state_t c = conn(b);
    for (int i = 0; i < READ_BATCH && !b->reconnect_needed; i++) {
        amqp_envelope_t env;
        struct timeval zero = {0, 0};
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, &zero, 0);
        if (r.reply_type == AMQP_RESPONSE_NORMAL) {
            handle_delivery(b, &env, now);
            amqp_destroy_envelope(&env);
            continue;
        }
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_TIMEOUT)
            return 0;
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
            if (handle_frame(b) < 0)
                return -1;
            continue;
        }
        char why[256];
        pano_amqp_reply_text(r, why, sizeof why);
        pano_warn("AMQP connection lost: %s", why);
        return -1;
    }
    return b->reconnect_needed ? -1 : 0;
}

static bool amqp_buffered(bridge *b)
{
    return b->amqp && (amqp_data_in_buffer(conn(b)) || amqp_frames_enqueued(conn(b)));
}

/* ---- stalls ------------------------------------------------------------ */

static void check_stall(bridge *b, double now)
{
    if (pano_tags_pending(&b->tags) == 0) {
        b->last_progress = now;
        if (b->stalled)
            pano_info("Kafka is confirming again");
        b->stalled = false;
        return;
    }
    double quiet = now - b->last_progress;
    if (!b->stalled && quiet > STALL_AFTER) {
        b->stalled = true;
        pano_warn("Kafka has confirmed nothing for %.0f s while %" PRIu64
                  " message(s) wait; the bridge takes no more than its prefetch window (%d) "
                  "meanwhile and hands them back to RabbitMQ after %.0f s",
                  quiet, pano_tags_pending(&b->tags), b->prefetch, b->hold_timeout);
    } else if (b->stalled && quiet < STALL_AFTER) {
        pano_info("Kafka is confirming again");
        b->stalled = false;
    }
    if (b->stalled && quiet > b->hold_timeout && b->amqp) {
        pano_warn("handing %" PRIu64 " unconfirmed message(s) back to RabbitMQ: Kafka "
                  "confirmed nothing for %.0f s; consuming again when Kafka answers",
                  pano_tags_outstanding(&b->tags), quiet);
        b->m.hold_timeouts++;
        send_acks(b, now, true); /* what Kafka did confirm is not sent again */
        disconnect(b, true);
        b->waiting_for_kafka = true;
        b->stalled = false;
        b->next_probe = now + 5;
        return;
    }
    /* Messages stuck while the others flow (their partition or topic is
     * unavailable): hand them alone back before RabbitMQ's consumer timeout
     * closes the channel. A copy waiting for a retry is dropped. */
    uint64_t expired[256];
    size_t n = b->amqp && !b->reconnect_needed
                   ? pano_tags_take_expired(&b->tags, now - b->hold_timeout, expired, 256)
                   : 0;
    if (n == 0)
        return;
    pano_warn("%zu message(s) unconfirmed by Kafka for %.0f s while others were: handing "
              "them back to RabbitMQ",
              n, b->hold_timeout);
    b->m.hold_timeouts++;
    for (size_t i = 0; i < n; i++)
        if (amqp_basic_nack(conn(b), CHANNEL, expired[i], 0, 1) != AMQP_STATUS_OK) {
            b->reconnect_needed = true;
            return;
        }
    b->retry_tail = NULL;
    for (retry_item **p = &b->retry_head; *p;) {
        retry_item *r = *p;
        bool gone = false;
        for (size_t i = 0; i < n && !gone; i++)
            gone = r->tag == expired[i];
        if (!gone) {
            b->retry_tail = r;
            p = &r->next;
            continue;
        }
        *p = r->next;
        b->n_retry--;
        retry_free(r);
    }
    send_acks(b, now, true); /* moves the head on */
}

/* After handing messages back: does Kafka answer again? */
static bool kafka_answers(bridge *b, double now)
{
    if (!b->waiting_for_kafka)
        return true;
    if (now < b->next_probe)
        return false;
    b->next_probe = now + 5;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(b->producer, 0, b->topics[0], &md, 2000);
    bool ok = err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
              md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topics[0].partition_cnt > 0;
    for (int i = 0; ok && i < md->topics[0].partition_cnt; i++)
        ok = md->topics[0].partitions[i].leader >= 0;
    if (md)
        rd_kafka_metadata_destroy(md);
    if (ok) {
        pano_info("Kafka answers again: consuming");
        b->waiting_for_kafka = false;
    }
    return ok;
}

/* ---- fatal producer errors --------------------------------------------- */

static void restart_producer(bridge *b, double now)
{
    if (b->producer) {
        pano_error("replacing the Kafka producer after a fatal error; RabbitMQ delivers the "
                   "%" PRIu64 " unacknowledged message(s) again",
                   pano_tags_outstanding(&b->tags));
        send_acks(b, now, true); /* what Kafka did confirm is not sent again */
        disconnect(b, true);
        destroy_producer(b);
        b->m.producer_restarts++;
    }
    char err[512];
    b->producer = create_producer(b, err, sizeof err);
    if (!b->producer) {
        pano_error("%s (trying again in 5 s)", err);
        b->producer_retry_at = now + 5;
        return;
    }
    b->fatal = false;
}

/* ---- statistics -------------------------------------------------------- */

static void update_gauges(bridge *b)
{
    b->m.in_flight = pano_tags_outstanding(&b->tags);
    b->m.kafka_queue = b->producer ? (uint64_t)rd_kafka_outq_len(b->producer) : 0;
    b->m.retry_queue = b->n_retry;
    b->m.dedup_ids = b->dedup ? pano_dedup_count(b->dedup) : 0;
    b->m.amqp_connected = b->amqp != NULL;
    b->m.consuming = b->consuming;
    b->m.kafka_stalled = b->stalled;
}

/* The snapshot /metrics serves, a tenth of a second old at most while the
 * bridge works (it is replaced at the end of a round of the loop). */
#define STATUS_REFRESH 0.1

static void publish_metrics(bridge *b, double now)
{
    if (!b->status || now - b->status_published < STATUS_REFRESH)
        return;
    update_gauges(b);
    pano_buf text = {0};
    pano_bridge_metrics_render(&b->m, pano_event_families, &text);
    pano_status_publish(b->status, text.data, text.len);
    pano_buf_free(&text);
    b->status_published = now;
}

static uint64_t produced_total(const pano_bridge_metrics *m)
{
    uint64_t n = 0;
    for (int i = 0; i < N_FAMILIES; i++)
        n += m->produced[i];
    return n;
}

static void stats(bridge *b, double now)
{
    double dt = now - b->last_stats;
    if (dt <= 0)
        dt = 1;
    update_gauges(b);
    pano_bridge_metrics *m = &b->m, *l = &b->m_last;
    pano_info("stats: received %" PRIu64 " (%.0f/s), produced %" PRIu64 " (%.0f/s), "
              "dead-lettered %" PRIu64 ", acked %" PRIu64 " (%.0f/s), in flight %" PRIu64
              ", kafka queue %" PRIu64 ", retries %" PRIu64 ", delivery errors %" PRIu64
              ", reconnects %" PRIu64 ", duplicates skipped %" PRIu64 "%s",
              m->received, (double)(m->received - l->received) / dt, produced_total(m),
              (double)(produced_total(m) - produced_total(l)) / dt, m->dead_lettered, m->acked,
              (double)(m->acked - l->acked) / dt, m->in_flight, m->kafka_queue,
              m->produce_retries, m->delivery_errors, m->amqp_disconnects,
              m->duplicates_skipped, b->stalled ? ", Kafka stalled" : "");
    if (b->dead_logged > 20)
        pano_info("(%u more dead-lettered messages were not logged)", b->dead_logged - 20);
    if (b->errors_logged > 20)
        pano_info("(%u more Kafka errors were not logged)", b->errors_logged - 20);
    b->dead_logged = b->errors_logged = 0;
    b->m_last = b->m;
    b->last_stats = now;
    if (b->status_file) {
        pano_buf text = {0};
        pano_bridge_metrics_render(&b->m, pano_event_families, &text);
        char err[512];
        if (pano_status_write_file(b->status_file, text.data, text.len, err, sizeof err) < 0)
            pano_warn("%s", err);
        pano_buf_free(&text);
    }
}

/* ---- main loop --------------------------------------------------------- */

static void drain_pipe(bridge *b)
{
    char buf[256];
    while (read(b->kafka_pipe[0], buf, sizeof buf) > 0)
        ;
}

/* One round: wait for something to do (at most max_wait seconds), then do
 * it. */
static void step(bridge *b, double max_wait)
{
    /* (Sleeping between reads to batch wake-ups was tried: it throttles the
     * broker's deliveries to half the rate on a quiet machine.) */
    struct pollfd fds[2];
    size_t n = 0;
    if (b->amqp)
        fds[n++] = (struct pollfd){.fd = amqp_get_sockfd(conn(b)), .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = b->kafka_pipe[0], .events = POLLIN};

    double now = monotonic(), wait = max_wait;
    if (amqp_buffered(b) || b->fatal)
        wait = 0;
    if (b->retry_head && b->retry_head->due - now < wait)
        wait = b->retry_head->due - now;
    if (b->tags.done > 0 && wait > ACK_INTERVAL)
        wait = ACK_INTERVAL;
    if (wait < 0)
        wait = 0;
    if (poll(fds, n, (int)(wait * 1000 + 0.999)) < 0 && errno != EINTR)
        pano_warn("poll: %s", strerror(errno));
    drain_pipe(b);
    now = b->now = monotonic();

    if (b->amqp && !b->reconnect_needed && service_amqp(b, now) < 0)
        b->reconnect_needed = true;
    if (b->producer)
        rd_kafka_poll(b->producer, 0);
    process_retries(b, now);
    send_acks(b, now, false);
    if (b->reconnect_needed)
        disconnect(b, false);
    publish_metrics(b, now);
}

static void drain(bridge *b)
{
    double deadline = monotonic() + b->drain_timeout;
    if (b->amqp && b->consuming) {
        /* Deliveries that arrive before cancel-ok are queued by rabbitmq-c
         * and produced like the others below. */
        amqp_basic_cancel(conn(b), CHANNEL, amqp_cstring_bytes(b->consumer_tag));
        if (rpc_failed(b, amqp_get_rpc_reply(conn(b)), "cancelling the consumer") < 0)
            b->reconnect_needed = true;
        b->consuming = false;
    }
    if (b->amqp && !b->reconnect_needed)
        pano_info("stopping: waiting for Kafka to confirm %" PRIu64 " message(s)",
                  pano_tags_outstanding(&b->tags));
    while (b->amqp && !b->fatal && monotonic() < deadline &&
           (pano_tags_outstanding(&b->tags) > 0 || amqp_buffered(b)))
        step(b, 0.05);
    if (b->amqp) {
        send_acks(b, monotonic(), true);
        uint64_t left = pano_tags_outstanding(&b->tags);
        if (left > 0)
            pano_warn("%" PRIu64 " message(s) not confirmed by Kafka within %.0f s: RabbitMQ "
                      "delivers them again",
                      left, b->drain_timeout);
        disconnect(b, !b->reconnect_needed);
    }
}

static int run(bridge *b)
{
    b->last_stats = monotonic();
    while (!stopping) {
        double now = monotonic();
        if ((b->fatal || !b->producer) && now >= b->producer_retry_at)
            restart_producer(b, now);
        if (!b->amqp && b->producer && !b->fatal && now >= b->reconnect_at &&
            kafka_answers(b, now))
            connect_amqp(b, true);
        step(b, b->amqp ? 0.2 : 0.1);
        now = monotonic();
        check_stall(b, now);
        if (now - b->last_stats >= b->stats_interval)
            stats(b, now);
    }
    drain(b);
    stats(b, monotonic());
    return 0;
}

/* ---- setup ------------------------------------------------------------- */

static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-bridge", argc, argv, false);
    if (!cfg)
        return 2;
    enum { OPT_SETUP = 0x2000 };
    static const struct option options[] = {
        {"queue", required_argument, NULL, 'q'},
        {"brokers", required_argument, NULL, 'b'},
        {"status-port", required_argument, NULL, 'p'},
        {"setup", no_argument, NULL, OPT_SETUP},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    bool setup_only = false;
    int opt, rc = 2;
    while ((opt = getopt_long(argc, argv, "q:b:p:h", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            goto out_cfg;
        if (handled)
            continue;
        switch (opt) {
        case 'q':
            if (pano_cli_set(cfg, "pano.bridge.queue", optarg) < 0)
                goto out_cfg;
            break;
        case 'b':
            if (pano_cli_set(cfg, "pano.kafka.brokers", optarg) < 0)
                goto out_cfg;
            break;
        case 'p':
            if (pano_cli_set(cfg, "pano.bridge.status_port", optarg) < 0)
                goto out_cfg;
            break;
        case OPT_SETUP:
            setup_only = true;
            break;
        case 'h':
            usage(stdout);
            rc = 0;
            goto out_cfg;
        default:
            usage(stderr);
            goto out_cfg;
        }
    }
    if (optind < argc) {
        pano_error("unexpected argument '%s'", argv[optind]);
        goto out_cfg;
    }

    static bridge b; /* large; zeroed */
    b.cfg = cfg;
    b.generation = 1;
    b.backoff = 1;
    b.kafka_pipe[0] = b.kafka_pipe[1] = -1;
    b.m.start_time = pano_now();
    char err[1024];
    b.queue_type = pano_config_str(cfg, "pano.bridge.queue_type");
    if (strcmp(b.queue_type, "classic") != 0 && strcmp(b.queue_type, "quorum") != 0) {
        pano_error("pano.bridge.queue_type '%s': use classic or quorum", b.queue_type);
        goto out_cfg;
    }
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    if (!url) {
        pano_error("no broker URL: set pano.amqp.url (or PANO_AMQP_URL)");
        goto out_cfg;
    }
    if (pano_amqp_url_parse(url, &b.url, err, sizeof err) < 0) {
        pano_error("pano.amqp.url: %s", err);
        goto out_cfg;
    }
    char *password = NULL;
    const char *password_file = pano_config_str(cfg, "pano.amqp.password_file");
    if (password_file) {
        FILE *f = fopen(password_file, "r");
        char line[512];
        if (!f || !fgets(line, sizeof line, f)) {
            pano_error("pano.amqp.password_file %s: %s", password_file,
                       f ? "empty" : strerror(errno));
            if (f)
                fclose(f);
            goto out_url;
        }
        fclose(f);
        line[strcspn(line, "\r\n")] = '\0';
        password = pano_strdup(line);
    }
    b.queue = pano_config_str(cfg, "pano.bridge.queue");
    b.amqp_options = (pano_amqp_options){
        .url = &b.url,
        .password = password,
        .heartbeat = (int)pano_config_int(cfg, "pano.amqp.heartbeat"),
        .timeout = pano_config_double(cfg, "pano.amqp.timeout"),
        .tls_verify = pano_config_bool(cfg, "pano.amqp.tls_verify"),
        .cacert = pano_config_str(cfg, "pano.amqp.cacert"),
        .connection_name = "pano-bridge",
    };
    if (b.url.heartbeat >= 0)
        b.amqp_options.heartbeat = b.url.heartbeat;
    if (b.url.connection_timeout > 0)
        b.amqp_options.timeout = b.url.connection_timeout;

    if (setup_only) {
        rc = connect_amqp(&b, false) ? 0 : 1;
        if (rc == 0)
            pano_info("declared queue '%s' on exchange '%s'", b.queue, b.url.exchange);
        if (b.amqp)
            pano_amqp_close(b.amqp);
        free(password);
        goto out_url;
    }

    const char *schema_dir = pano_config_str(cfg, "pano.bridge.schema_dir");
    b.schemas = schema_dir ? pano_schema_set_load(schema_dir, err, sizeof err)
                           : pano_schema_set_from_files(pano_builtin_schemas, err, sizeof err);
    if (!b.schemas) {
        pano_error("%s", err);
        free(password);
        goto out_url;
    }
    pano_info("checking events against %zu event schema(s) and the envelope (%s)",
              pano_schema_set_event_count(b.schemas), schema_dir ? schema_dir : "built in");
    b.nopts = (pano_normalize_options){
        .schemas = b.schemas,
        .max_size = pano_config_size(cfg, "pano.bridge.max_message_size"),
    };
    b.normalizer = pano_normalizer_new(&b.nopts);
    b.prefetch = (int)pano_config_int(cfg, "pano.bridge.prefetch");
    b.ack_batch = b.prefetch / 10 > 0 ? (unsigned)b.prefetch / 10 : 1;
    b.hold_timeout = pano_config_double(cfg, "pano.bridge.hold_timeout");
    b.drain_timeout = pano_config_double(cfg, "pano.bridge.drain_timeout");
    b.stats_interval = pano_config_double(cfg, "pano.bridge.stats_interval");
    b.status_file = pano_config_str(cfg, "pano.bridge.status_file");
    /* Room for a window of this channel and one of a channel being closed. */
    pano_tags_init(&b.tags, (size_t)b.prefetch * 2 + 64);
    int64_t window = pano_config_int(cfg, "pano.bridge.dedup_window");
    if (window > 0) {
        unsigned char key[16];
        if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
            pano_error("cannot draw a key for the duplicate window: %s", strerror(errno));
            rc = 1;
            goto out_all;
        }
        b.dedup = pano_dedup_new((size_t)window, key);
        b.tag_ids = pano_calloc(b.tags.size, sizeof *b.tag_ids);
        b.m.dedup_bytes = pano_dedup_bytes(b.dedup) + b.tags.size * sizeof *b.tag_ids;
        pano_info("skipping copies of the last %" PRId64 " events Kafka confirmed (%.1f MB)",
                  window, (double)b.m.dedup_bytes / (1024 * 1024));
    }
    for (int i = 0; i < N_FAMILIES; i++)
        pano_kafka_topic(cfg, pano_event_families[i], b.topic_names[i], sizeof b.topic_names[i]);
    snprintf(b.topic_names[DEAD_TOPIC], sizeof b.topic_names[DEAD_TOPIC], "%s",
             pano_config_str(cfg, "pano.kafka.dead_letter_topic"));
    const char *test_fatal = getenv("PANO_BRIDGE_TEST_FATAL_AFTER"); /* tests only */
    if (test_fatal)
        b.test_fatal_after = strtoull(test_fatal, NULL, 10);

    int port = (int)pano_config_int(cfg, "pano.bridge.status_port");
    if (port > 0) {
        b.status = pano_status_new("127.0.0.1", port, err, sizeof err);
        if (!b.status) {
            pano_error("%s", err);
            rc = 2;
            goto out_all;
        }
        pano_info("metrics at http://127.0.0.1:%d/metrics", pano_status_port(b.status));
    }
    if (make_pipe(b.kafka_pipe) < 0) {
        pano_error("pipe: %s", strerror(errno));
        rc = 1;
        goto out_all;
    }
    b.producer = create_producer(&b, err, sizeof err);
    if (!b.producer) {
        pano_error("%s", err);
        rc = 2;
        goto out_all;
    }

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    rc = run(&b);

out_all:
    if (b.amqp)
        disconnect(&b, true);
    drop_retries(&b);
    destroy_producer(&b);
    pano_status_free(b.status);
    for (int i = 0; i < 2; i++)
        if (b.kafka_pipe[i] >= 0)
            close(b.kafka_pipe[i]);
    pano_tags_free(&b.tags);
    pano_dedup_free(b.dedup);
    free(b.tag_ids);
    pano_normalizer_free(b.normalizer);
    pano_schema_set_free(b.schemas);
    free(password);
out_url:
    pano_amqp_url_free(&b.url);
out_cfg:
    pano_config_free(cfg);
    return rc;
}
