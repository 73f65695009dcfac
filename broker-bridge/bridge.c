/*
 * pano-bridge - AMQP (RabbitMQ) to Kafka, losing nothing.
 *
 * Consumes a durable queue bound to the events exchange and produces every
 * message to the Kafka topic of its event family, keyed by wf_uuid so that a
 * workflow's events stay in order. A message is acknowledged to RabbitMQ only
 * after librdkafka's delivery report says Kafka persisted it (or persisted its
 * dead-letter record); messages whose delivery failed are requeued. Acks are
 * cumulative (multiple=true) up to the highest tag below which every message
 * is settled. Delivery tags belong to one channel: after a reconnect, reports
 * for messages of the old connection are not acked (RabbitMQ redelivers
 * them), so no stale tag is ever sent.
 */
#include "amqp_client.h"
#include "cli.h"
#include "event.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"
#include "normalize.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHANNEL 1
#define STATS_INTERVAL 30.0

/* State of one delivery tag of the current channel. */
enum { TAG_PENDING = 0, TAG_DONE, TAG_NACKED };

typedef struct {
    pano_config *cfg;
    pano_amqp_url url;
    pano_amqp_options amqp_options;
    pano_amqp *amqp;
    uint64_t generation; /* bumped at every reconnect */
    char consumer_tag[256];

    /* Tags of the current channel in (acked, received]: a ring of states. */
    unsigned char *tags;
    size_t ring;
    uint64_t acked, received;
    bool ack_due;

    rd_kafka_t *producer;
    char topics[8][256]; /* per family, same order as pano_event_families */
    char dead_letter_topic[256];
    size_t max_size;

    /* counters */
    uint64_t n_received, n_produced, n_dead, n_failed, n_acked;
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
            "\n"
            "The broker is pano.amqp.url (PANO_AMQP_URL); its exchange is the one\n"
            "publishers use. SIGTERM or SIGINT: stop consuming, wait for Kafka to\n"
            "confirm what is in flight, acknowledge it, exit 0.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

/* ---- acknowledgements -------------------------------------------------- */

static unsigned char *tag_state(bridge *b, uint64_t tag) { return &b->tags[tag % b->ring]; }

static void settle_tag(bridge *b, uint64_t tag, int state)
{
    if (tag <= b->acked || tag > b->received)
        return;
    *tag_state(b, tag) = (unsigned char)state;
    b->ack_due = true;
}

/* Ack every tag up to the highest one below which all are settled. */
static void send_acks(bridge *b)
{
    if (!b->ack_due || !b->amqp)
        return;
    b->ack_due = false;
    uint64_t upto = b->acked;
    while (upto < b->received && *tag_state(b, upto + 1) != TAG_PENDING)
        upto++;
    if (upto == b->acked)
        return;
    for (uint64_t t = b->acked + 1; t <= upto; t++)
        *tag_state(b, t) = TAG_PENDING;
    int rc = amqp_basic_ack(pano_amqp_connection(b->amqp), CHANNEL, upto, 1);
    if (rc != AMQP_STATUS_OK) {
        pano_warn("ack failed: %s", amqp_error_string2(rc));
        return; /* the connection error surfaces on the next read */
    }
    b->n_acked += upto - b->acked;
    b->acked = upto;
}

/* ---- Kafka --------------------------------------------------------------- */

/* The opaque of a Kafka message: connection generation and delivery tag. */
static void *pack_ref(uint64_t generation, uint64_t tag)
{
    return (void *)(uintptr_t)((generation << 48) | (tag & 0xFFFFFFFFFFFFULL));
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    bridge *b = opaque;
    uint64_t ref = (uint64_t)(uintptr_t)m->_private;
    uint64_t generation = ref >> 48, tag = ref & 0xFFFFFFFFFFFFULL;
    bool persisted = m->err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                     rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_PERSISTED;
    if (!persisted) {
        b->n_failed++;
        pano_warn("Kafka did not persist a message to %s: %s (it will be redelivered)",
                  rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
    }
    if (generation != b->generation || !b->amqp)
        return; /* its channel is gone; RabbitMQ redelivers it */
    if (persisted) {
        settle_tag(b, tag, TAG_DONE);
        return;
    }
    /* Requeue it now rather than hold it until the channel closes. */
    if (amqp_basic_nack(pano_amqp_connection(b->amqp), CHANNEL, tag, 0, 1) == AMQP_STATUS_OK)
        settle_tag(b, tag, TAG_NACKED);
}

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_fatal_error(rk, why, sizeof why);
        pano_error("fatal Kafka producer error: %s; exiting so that unacknowledged "
                   "messages are redelivered to a fresh producer",
                   why);
        exit(1);
    }
    pano_warn("Kafka: %s", reason);
}

static rd_kafka_t *create_producer(bridge *b, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = pano_kafka_conf_new(b->cfg, err, errlen);
    if (!conf)
        return NULL;
    char max[32];
    /* Room for the largest accepted message plus its key and headers. */
    snprintf(max, sizeof max, "%zu", b->max_size + 65536);
    if (pano_kafka_conf_set(conf, "enable.idempotence", "true", err, errlen) < 0 ||
        pano_kafka_conf_set(conf, "acks", "all", err, errlen) < 0 ||
        pano_kafka_conf_set(conf, "linger.ms", "20", err, errlen) < 0 ||
        pano_kafka_conf_set(conf, "message.max.bytes", max, err, errlen) < 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, b);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    char why[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!rk) {
        snprintf(err, errlen, "cannot create the Kafka producer: %s", why);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

static const char *topic_of_family(bridge *b, const char *family)
{
    for (size_t i = 0; pano_event_families[i]; i++)
        if (strcmp(pano_event_families[i], family) == 0)
            return b->topics[i];
    return b->topics[0]; /* unreachable: families come from the same list */
}

/* Produce, waiting while librdkafka's queue is full. Returns 0 or -1. */
static int produce(bridge *b, const char *topic, const char *key, const void *value,
                   size_t len, rd_kafka_headers_t *headers, uint64_t tag)
{
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            b->producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, key ? strlen(key) : 0), RD_KAFKA_V_VALUE((void *)value, len),
            RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(pack_ref(b->generation, tag)),
            RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
            return 0;
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            pano_error("cannot produce to %s: %s", topic, rd_kafka_err2str(err));
            if (headers)
                rd_kafka_headers_destroy(headers);
            return -1;
        }
        rd_kafka_poll(b->producer, 100);
    }
}

/* Send a rejected message to the dead-letter topic: its original bytes (cut
 * at the size limit) and, in headers, the reason and the routing key. */
static int dead_letter(bridge *b, const char *routing_key, const char *body, size_t len,
                       const char *reason, uint64_t tag)
{
    rd_kafka_headers_t *h = rd_kafka_headers_new(4);
    rd_kafka_header_add(h, "reason", -1, reason, -1);
    rd_kafka_header_add(h, "routing_key", -1, routing_key, -1);
    char size[32];
    snprintf(size, sizeof size, "%zu", len);
    rd_kafka_header_add(h, "original_size", -1, size, -1);
    if (len > b->max_size) {
        rd_kafka_header_add(h, "truncated", -1, "true", -1);
        len = b->max_size;
    }
    b->n_dead++;
    pano_info("dead-lettered a message (routing key '%.100s'): %s", routing_key, reason);
    return produce(b, b->dead_letter_topic, NULL, body, len, h, tag);
}

/* ---- AMQP ---------------------------------------------------------------- */

static int check_rpc(bridge *b, const char *what)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(pano_amqp_connection(b->amqp));
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    pano_error("%s: %s", what, why);
    return -1;
}

/* Declare (or, with pano.bridge.declare=false, check) the topology, then
 * start consuming. */
static int setup_consumer(bridge *b)
{
    amqp_connection_state_t c = pano_amqp_connection(b->amqp);
    const char *queue = pano_config_str(b->cfg, "pano.bridge.queue");
    const char *dlx = pano_config_str(b->cfg, "pano.bridge.dead_letter_exchange");
    bool declare = pano_config_bool(b->cfg, "pano.bridge.declare");
    char what[512];

    if (declare) {
        amqp_exchange_declare(c, CHANNEL, amqp_cstring_bytes(b->url.exchange),
                              amqp_cstring_bytes("topic"), 0, 1, 0, 0, amqp_empty_table);
        snprintf(what, sizeof what, "declaring exchange '%s'", b->url.exchange);
        if (check_rpc(b, what) < 0)
            return -1;
        amqp_exchange_declare(c, CHANNEL, amqp_cstring_bytes(dlx),
                              amqp_cstring_bytes("fanout"), 0, 1, 0, 0, amqp_empty_table);
        snprintf(what, sizeof what, "declaring dead-letter exchange '%.200s'", dlx);
        if (check_rpc(b, what) < 0)
            return -1;
        char dead_queue[256];
        snprintf(dead_queue, sizeof dead_queue, "%.200s.dead", queue);
        amqp_queue_declare(c, CHANNEL, amqp_cstring_bytes(dead_queue), 0, 1, 0, 0,
                           amqp_empty_table);
        amqp_queue_bind(c, CHANNEL, amqp_cstring_bytes(dead_queue), amqp_cstring_bytes(dlx),
                        amqp_cstring_bytes(""), amqp_empty_table);
        snprintf(what, sizeof what, "declaring dead-letter queue '%.210s'", dead_queue);
        if (check_rpc(b, what) < 0)
            return -1;
    }
    amqp_table_entry_t arg = {amqp_cstring_bytes("x-dead-letter-exchange"),
                              {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(dlx)}}};
    amqp_table_t args = {1, &arg};
    amqp_queue_declare(c, CHANNEL, amqp_cstring_bytes(queue), !declare, 1, 0, 0,
                       declare ? args : amqp_empty_table);
    snprintf(what, sizeof what, "%s queue '%s'", declare ? "declaring" : "checking", queue);
    if (check_rpc(b, what) < 0)
        return -1;
    if (declare) {
        char *keys = pano_strdup(pano_config_str(b->cfg, "pano.bridge.bindings")), *save;
        for (char *k = strtok_r(keys, ", ", &save); k; k = strtok_r(NULL, ", ", &save)) {
            amqp_queue_bind(c, CHANNEL, amqp_cstring_bytes(queue),
                            amqp_cstring_bytes(b->url.exchange), amqp_cstring_bytes(k),
                            amqp_empty_table);
            snprintf(what, sizeof what, "binding '%s' to '%s' with key '%s'", queue,
                     b->url.exchange, k);
            if (check_rpc(b, what) < 0) {
                free(keys);
                return -1;
            }
        }
        free(keys);
    }
    amqp_basic_qos(c, CHANNEL, 0, (uint16_t)pano_config_int(b->cfg, "pano.bridge.prefetch"), 0);
    if (check_rpc(b, "setting the prefetch count") < 0)
        return -1;
    amqp_basic_consume_ok_t *ok = amqp_basic_consume(
        c, CHANNEL, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    snprintf(what, sizeof what, "consuming from '%s'", queue);
    if (check_rpc(b, what) < 0 || !ok)
        return -1;
    snprintf(b->consumer_tag, sizeof b->consumer_tag, "%.*s", (int)ok->consumer_tag.len,
             (const char *)ok->consumer_tag.bytes);
    return 0;
}

static void disconnect(bridge *b)
{
    pano_amqp_close(b->amqp);
    b->amqp = NULL;
    b->generation++;
    b->acked = b->received = 0;
    memset(b->tags, 0, b->ring);
}

static bool connect_amqp(bridge *b)
{
    char err[512];
    b->amqp = pano_amqp_connect(&b->amqp_options, err, sizeof err);
    if (!b->amqp) {
        pano_warn("%s", err);
        return false;
    }
    if (setup_consumer(b) < 0) {
        disconnect(b);
        return false;
    }
    char shown[512];
    pano_url_redact(pano_config_str(b->cfg, "pano.amqp.url"), shown, sizeof shown);
    pano_info("consuming '%s' from %s", pano_config_str(b->cfg, "pano.bridge.queue"), shown);
    return true;
}

static void handle_delivery(bridge *b, const amqp_envelope_t *env)
{
    uint64_t tag = env->delivery_tag;
    if (tag != b->received + 1)
        pano_warn("unexpected delivery tag %llu after %llu", (unsigned long long)tag,
                  (unsigned long long)b->received);
    b->received = tag;
    b->n_received++;

    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)env->routing_key.len,
             (const char *)env->routing_key.bytes);
    const char *body = env->message.body.bytes;
    size_t len = env->message.body.len;

    pano_normalized n;
    int rc;
    if (pano_normalize(key, body, len, b->max_size, &n)) {
        rc = produce(b, topic_of_family(b, n.family), n.wf_uuid, n.body, n.len, NULL, tag);
        if (rc == 0)
            b->n_produced++;
    } else
        rc = dead_letter(b, key, body, len, n.reason, tag);
    pano_normalized_free(&n);
    if (rc < 0 && amqp_basic_nack(pano_amqp_connection(b->amqp), CHANNEL, tag, 0, 1) ==
                      AMQP_STATUS_OK)
        settle_tag(b, tag, TAG_NACKED);
}

/* Read what the broker sent: a delivery, or a frame that explains why there
 * was none. Returns -1 when the connection has to be reopened. */
static int receive(bridge *b, double wait_seconds)
{
    amqp_connection_state_t c = pano_amqp_connection(b->amqp);
    amqp_envelope_t env;
    struct timeval tv = {0, (suseconds_t)(wait_seconds * 1e6)};
    amqp_maybe_release_buffers(c);
    amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        handle_delivery(b, &env);
        amqp_destroy_envelope(&env);
        return 0;
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_TIMEOUT)
        return 0;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
        amqp_frame_t frame;
        if (amqp_simple_wait_frame(c, &frame) != AMQP_STATUS_OK)
            return -1;
        if (frame.frame_type == AMQP_FRAME_METHOD) {
            switch (frame.payload.method.id) {
            case AMQP_CHANNEL_CLOSE_METHOD:
            case AMQP_CONNECTION_CLOSE_METHOD:
            case AMQP_BASIC_CANCEL_METHOD:
                pano_warn("the broker closed the consumer (method 0x%08X)",
                          frame.payload.method.id);
                return -1;
            default:
                return 0;
            }
        }
        return 0;
    }
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    pano_warn("AMQP connection lost: %s", why);
    return -1;
}

static void log_stats(bridge *b)
{
    pano_info("received %llu, produced %llu, dead-lettered %llu, delivery failures %llu, "
              "acked %llu, in flight %d",
              (unsigned long long)b->n_received, (unsigned long long)b->n_produced,
              (unsigned long long)b->n_dead, (unsigned long long)b->n_failed,
              (unsigned long long)b->n_acked, rd_kafka_outq_len(b->producer));
}

/* Stop consuming, let Kafka confirm what is in flight, ack it. */
static void drain(bridge *b)
{
    /* Messages already prefetched but not produced stay unacked and are
     * requeued by RabbitMQ when the connection closes. */
    if (b->amqp)
        amqp_basic_cancel(pano_amqp_connection(b->amqp), CHANNEL,
                          amqp_cstring_bytes(b->consumer_tag));
    pano_info("draining %d message(s) in flight", rd_kafka_outq_len(b->producer));
    for (int i = 0; i < 300 && rd_kafka_outq_len(b->producer) > 0; i++) {
        rd_kafka_poll(b->producer, 100);
        send_acks(b);
    }
    send_acks(b);
    if (rd_kafka_outq_len(b->producer) > 0)
        pano_warn("%d message(s) still unconfirmed by Kafka; RabbitMQ will redeliver them",
                  rd_kafka_outq_len(b->producer));
}

static int run(bridge *b)
{
    double backoff = 1, next_stats = pano_now() + STATS_INTERVAL;
    while (!stopping) {
        if (!b->amqp && !connect_amqp(b)) {
            /* Keep serving delivery reports while waiting to reconnect. */
            for (double waited = 0; waited < backoff && !stopping; waited += 0.1)
                rd_kafka_poll(b->producer, 100);
            backoff = backoff * 2 > 30 ? 30 : backoff * 2;
            continue;
        }
        backoff = 1;
        /* Short waits while reports are due, so acks are not delayed. */
        double wait = rd_kafka_outq_len(b->producer) > 0 ? 0.005 : 0.2;
        if (receive(b, wait) < 0)
            disconnect(b);
        rd_kafka_poll(b->producer, 0);
        send_acks(b);
        if (pano_now() >= next_stats) {
            log_stats(b);
            next_stats = pano_now() + STATS_INTERVAL;
        }
    }
    drain(b);
    log_stats(b);
    return 0;
}

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-bridge", argc, argv, false);
    if (!cfg)
        return 2;
    static const struct option options[] = {
        {"queue", required_argument, NULL, 'q'},
        {"brokers", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "q:b:h", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            return 2;
        if (handled)
            continue;
        switch (opt) {
        case 'q':
            if (pano_cli_set(cfg, "pano.bridge.queue", optarg) < 0)
                return 2;
            break;
        case 'b':
            if (pano_cli_set(cfg, "pano.kafka.brokers", optarg) < 0)
                return 2;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        pano_error("unexpected argument '%s'", argv[optind]);
        return 2;
    }

    bridge b = {.cfg = cfg, .generation = 1};
    char err[512];
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    if (!url) {
        pano_error("no broker URL: set pano.amqp.url (or PANO_AMQP_URL)");
        return 2;
    }
    if (pano_amqp_url_parse(url, &b.url, err, sizeof err) < 0) {
        pano_error("pano.amqp.url: %s", err);
        return 2;
    }
    b.amqp_options = (pano_amqp_options){
        .url = &b.url,
        .heartbeat = (int)pano_config_int(cfg, "pano.amqp.heartbeat"),
        .timeout = pano_config_double(cfg, "pano.amqp.timeout"),
        .tls_verify = pano_config_bool(cfg, "pano.amqp.tls_verify"),
        .cacert = pano_config_str(cfg, "pano.amqp.cacert"),
    };
    b.max_size = pano_config_size(cfg, "pano.bridge.max_message_size");
    b.ring = (size_t)pano_config_int(cfg, "pano.bridge.prefetch") * 2 + 16;
    b.tags = pano_calloc(b.ring, 1);
    for (size_t i = 0; pano_event_families[i]; i++)
        pano_kafka_topic(cfg, pano_event_families[i], b.topics[i], sizeof b.topics[i]);
    snprintf(b.dead_letter_topic, sizeof b.dead_letter_topic, "%s",
             pano_config_str(cfg, "pano.kafka.dead_letter_topic"));

    b.producer = create_producer(&b, err, sizeof err);
    if (!b.producer) {
        pano_error("%s", err);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = run(&b);

    pano_amqp_close(b.amqp);
    rd_kafka_destroy(b.producer);
    free(b.tags);
    pano_amqp_url_free(&b.url);
    pano_config_free(cfg);
    return rc;
}
