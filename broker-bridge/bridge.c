/*
 * pano-bridge - AMQP (RabbitMQ) to Kafka, losing nothing (bridge.h says
 * how). This file: the poll() loop over RabbitMQ, Kafka's delivery reports
 * and the status endpoint, and its policies, acting on both sides: what
 * becomes of each delivery, dead-letter records Kafka refused, stalls,
 * fatal producer errors; statistics; draining at shutdown; main.
 */
#include "bridge.h"
#include "intake.h"
#include "outlet.h"

#include "cli.h"
#include "event.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

#ifdef PANO_TEST_HOOKS
/* pano-bridge-test only: raise a fatal producer error after this many
 * deliveries (PANO_BRIDGE_TEST_FATAL_AFTER; tests/integration/bridge_faults.sh,
 * bridge_valgrind.sh). */
static uint64_t test_fatal_after;
#endif

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

/* ---- statistics -------------------------------------------------------- */

static void update_gauges(bridge *b)
{
    b->m.in_flight = pano_tags_outstanding(&b->tags);
    b->m.kafka_queue = outlet_queue_len(b);
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
    pano_bridge_counters_render(&b->m, pano_event_families, &text);
    pano_status_publish(b->status, text.data, text.len);
    pano_buf_free(&text);
    b->status_published = now;
}

static uint64_t produced_total(const pano_bridge_counters *m)
{
    uint64_t n = 0;
    for (int i = 0; i < PANO_N_FAMILIES; i++)
        n += m->produced[i];
    return n;
}

static void stats(bridge *b, double now)
{
    double dt = now - b->last_stats;
    if (dt <= 0)
        dt = 1;
    update_gauges(b);
    pano_bridge_counters *m = &b->m, *l = &b->m_last;
    pano_info("stats: received %" PRIu64 " (%.0f/s), produced %" PRIu64 " (%.0f/s), "
              "dead-lettered %" PRIu64 ", acked %" PRIu64 " (%.0f/s), in flight %" PRIu64
              ", kafka queue %" PRIu64 ", retries %" PRIu64 ", delivery errors %" PRIu64
              ", reconnects %" PRIu64 ", duplicates skipped %" PRIu64 "%s",
              m->received, (double)(m->received - l->received) / dt, produced_total(m),
              (double)(produced_total(m) - produced_total(l)) / dt, m->dead_lettered, m->acked,
              (double)(m->acked - l->acked) / dt, m->in_flight, m->kafka_queue,
              m->produce_retries, m->delivery_errors, m->amqp_disconnects,
              m->duplicates_skipped, b->stalled ? ", Kafka stalled" : "");
    if (b->dead_logged > LOG_LIMIT)
        pano_info("(%u more dead-lettered messages were not logged)", b->dead_logged - LOG_LIMIT);
    if (b->errors_logged > LOG_LIMIT)
        pano_info("(%u more Kafka errors were not logged)", b->errors_logged - LOG_LIMIT);
    b->dead_logged = b->errors_logged = 0;
    b->m_last = b->m;
    b->last_stats = now;
    if (b->status_file) {
        pano_buf text = {0};
        pano_bridge_counters_render(&b->m, pano_event_families, &text);
        char err[512];
        if (pano_status_write_file(b->status_file, text.data, text.len, err, sizeof err) < 0)
            pano_warn("%s", err);
        pano_buf_free(&text);
    }
}

/* ---- deliveries --------------------------------------------------------- */

/* A message from RabbitMQ: to the Kafka topic of its family, to the
 * dead-letter topic, or (a copy of an event Kafka confirmed) acked with the
 * others unproduced. */
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
        outlet_track_id(b, tag, NULL);
        outlet_dead_letter(b, key, exchange, body, len, n.reason, tag);
    } else if (outlet_is_duplicate(b, tag, &n) && pano_tags_done(&b->tags, tag)) {
        /* Acked with the others, never produced. */
        b->m.duplicates_skipped++;
        b->confirmed_since_ack++;
    } else
        outlet_produce(b, pano_policy_topic(n.family), n.wf_uuid, n.wf_uuid_len, n.body, n.len,
                       NULL, tag, 1.0);
    pano_normalized_free(&n);

#ifdef PANO_TEST_HOOKS
    if (test_fatal_after && b->m.received >= test_fatal_after) {
        test_fatal_after = 0;
        pano_warn("test hook: raising a fatal producer error");
        rd_kafka_test_fatal_error(b->producer, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                  "raised by PANO_BRIDGE_TEST_FATAL_AFTER");
    }
#endif
}

/* Handle what RabbitMQ sent: up to READ_BATCH deliveries and frames.
 * Returns -1 when the connection has to be reopened. */
static int read_intake(bridge *b, double now)
{
    for (int i = 0; i < READ_BATCH && !b->reconnect_needed; i++) {
        amqp_envelope_t env;
        switch (intake_next(b, &env)) {
        case INTAKE_DELIVERY:
            handle_delivery(b, &env, now);
            amqp_destroy_envelope(&env);
            break;
        case INTAKE_FRAME:
            break;
        case INTAKE_IDLE:
            return 0;
        case INTAKE_LOST:
            return -1;
        }
    }
    return b->reconnect_needed ? -1 : 0;
}

/* Dead-letter records Kafka refused for good: their messages are rejected
 * to the queue's dead-letter exchange when the bridge declared it, and
 * otherwise kept and tried again. */
static void settle_refused(bridge *b)
{
    retry_item *r;
    while ((r = outlet_take_refused(b))) {
        if (!(b->dlx_known && b->amqp && intake_reject(b, r->tag))) {
            outlet_keep_refused(b, r);
            continue;
        }
        pano_tags_settled(&b->tags, r->tag);
        b->m.rejected_to_dlx++;
        pano_error("Kafka refused a dead-letter record (%s): rejected the message to the "
                   "queue's dead-letter exchange %s",
                   r->why, pano_config_str(b->cfg, "pano.bridge.dead_letter_exchange"));
        outlet_free_refused(r);
    }
}

/* Close the connection (RabbitMQ requeues what is unacked) and forget the
 * copies waiting for a retry: they belong to its channel. */
static void disconnect(bridge *b, bool clean)
{
    intake_disconnect(b, clean);
    outlet_drop_retries(b);
}

/* ---- stalls and fatal producer errors ----------------------------------- */

/* Kafka confirmed nothing for a while: after hold_timeout, hand the
 * messages back to RabbitMQ and wait until Kafka answers again. Messages
 * stuck while the others flow (their partition or topic is unavailable)
 * go back alone before RabbitMQ's consumer timeout closes the channel; a
 * copy waiting for a retry is dropped. */
static void check_stall(bridge *b, double now)
{
    double quiet = now - b->last_progress;
    pano_stall_decision d =
        pano_policy_stall(b->stalled, pano_tags_pending(&b->tags), quiet, b->hold_timeout,
                          b->amqp != NULL, b->amqp && !b->reconnect_needed);
    if (d.idle)
        b->last_progress = now;
    if (d.change == PANO_STALL_BEGINS)
        pano_warn("Kafka has confirmed nothing for %.0f s while %" PRIu64
                  " message(s) wait; the bridge takes no more than its prefetch window (%d) "
                  "meanwhile and hands them back to RabbitMQ after %.0f s",
                  quiet, pano_tags_pending(&b->tags), b->prefetch, b->hold_timeout);
    else if (d.change == PANO_STALL_ENDS)
        pano_info("Kafka is confirming again");
    b->stalled = d.stalled;
    if (d.hand_back == PANO_HAND_BACK_ALL) {
        pano_warn("handing %" PRIu64 " unconfirmed message(s) back to RabbitMQ: Kafka "
                  "confirmed nothing for %.0f s; consuming again when Kafka answers",
                  pano_tags_outstanding(&b->tags), quiet);
        b->m.hold_timeouts++;
        intake_send_acks(b, now, true); /* what Kafka did confirm is not sent again */
        disconnect(b, true);
        b->waiting_for_kafka = true;
        b->next_probe = now + 5;
        return;
    }
    if (d.hand_back != PANO_HAND_BACK_EXPIRED)
        return;
    uint64_t expired[256];
    size_t n = pano_tags_take_expired(&b->tags, now - b->hold_timeout, expired, 256);
    if (n == 0)
        return;
    pano_warn("%zu message(s) unconfirmed by Kafka for %.0f s while others were: handing "
              "them back to RabbitMQ",
              n, b->hold_timeout);
    b->m.hold_timeouts++;
    if (!intake_hand_back(b, expired, n))
        return;
    outlet_forget_retries(b, expired, n);
    intake_send_acks(b, now, true); /* moves the head on */
}

/* A new producer after a fatal error (and a new AMQP connection: RabbitMQ
 * redelivers what was not acked), or when none could be created. */
static void restart_producer(bridge *b, double now)
{
    if (b->producer) {
        pano_error("replacing the Kafka producer after a fatal error; RabbitMQ delivers the "
                   "%" PRIu64 " unacknowledged message(s) again",
                   pano_tags_outstanding(&b->tags));
        intake_send_acks(b, now, true); /* what Kafka did confirm is not sent again */
        disconnect(b, true);
        outlet_destroy_producer(b);
        b->m.producer_restarts++;
    }
    char err[512];
    b->producer = outlet_create_producer(b, err, sizeof err);
    if (!b->producer) {
        pano_error("%s (trying again in 5 s)", err);
        b->producer_retry_at = now + 5;
        return;
    }
    b->fatal = false;
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
        fds[n++] = (struct pollfd){.fd = intake_fd(b), .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = b->kafka_pipe[0], .events = POLLIN};

    double now = pano_monotonic(), wait = max_wait;
    if (intake_buffered(b) || b->fatal)
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
    now = b->now = pano_monotonic();

    if (b->amqp && !b->reconnect_needed && read_intake(b, now) < 0)
        b->reconnect_needed = true;
    outlet_poll(b);
    outlet_process_retries(b, now);
    settle_refused(b);
    intake_send_acks(b, now, false);
    if (b->reconnect_needed)
        disconnect(b, false);
    publish_metrics(b, now);
}

static void drain(bridge *b)
{
    double deadline = pano_monotonic() + b->drain_timeout;
    if (b->amqp && b->consuming) {
        /* Deliveries that arrive before cancel-ok are queued by rabbitmq-c
         * and produced like the others below. */
        if (intake_cancel(b) < 0)
            b->reconnect_needed = true;
    }
    if (b->amqp && !b->reconnect_needed)
        pano_info("stopping: waiting for Kafka to confirm %" PRIu64 " message(s)",
                  pano_tags_outstanding(&b->tags));
    while (b->amqp && !b->fatal && pano_monotonic() < deadline &&
           (pano_tags_outstanding(&b->tags) > 0 || intake_buffered(b)))
        step(b, 0.05);
    if (b->amqp) {
        intake_send_acks(b, pano_monotonic(), true);
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
    b->last_stats = pano_monotonic();
    while (!stopping) {
        double now = pano_monotonic();
        if ((b->fatal || !b->producer) && now >= b->producer_retry_at)
            restart_producer(b, now);
        if (!b->amqp && b->producer && !b->fatal && now >= b->reconnect_at &&
            outlet_kafka_answers(b, now))
            intake_connect(b, true);
        step(b, b->amqp ? 0.2 : 0.1);
        now = pano_monotonic();
        check_stall(b, now);
        if (now - b->last_stats >= b->stats_interval)
            stats(b, now);
    }
    drain(b);
    stats(b, pano_monotonic());
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
    if (password_file &&
        !(password = pano_secret_read("pano.amqp.password_file", password_file, err, sizeof err))) {
        pano_error("%s", err);
        goto out_url;
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
        rc = intake_connect(&b, false) ? 0 : 1;
        if (rc == 0)
            pano_info("declared queue '%s' on exchange '%s'", b.queue, b.url.exchange);
        if (b.amqp)
            pano_amqp_close(b.amqp);
        free(password);
        goto out_url;
    }

    const char *schema_dir = pano_config_str(cfg, "pano.bridge.schema_dir");
    if (!(b.schemas = pano_schema_set_configured(cfg, err, sizeof err))) {
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
    for (int i = 0; i < PANO_N_FAMILIES; i++)
        pano_kafka_topic(cfg, pano_event_families[i], b.topic_names[i], sizeof b.topic_names[i]);
    snprintf(b.topic_names[DEAD_TOPIC], sizeof b.topic_names[DEAD_TOPIC], "%s",
             pano_config_str(cfg, "pano.kafka.dead_letter_topic"));
#ifdef PANO_TEST_HOOKS
    const char *test_fatal = getenv("PANO_BRIDGE_TEST_FATAL_AFTER");
    if (test_fatal)
        test_fatal_after = strtoull(test_fatal, NULL, 10);
#endif

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
    b.producer = outlet_create_producer(&b, err, sizeof err);
    if (!b.producer) {
        pano_error("%s", err);
        rc = 2;
        goto out_all;
    }

    if (pano_cli_catch_stop_signals(on_signal, PANO_IGNORE_SIGPIPE) < 0) {
        rc = 2;
        goto out_all;
    }

    rc = run(&b);

out_all:
    disconnect(&b, true);
    outlet_destroy_producer(&b);
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
