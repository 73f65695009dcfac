/*
 * outlet.c - pano-bridge's Kafka side: the idempotent producer, messages
 * waiting to be produced again, delivery reports (which make messages
 * ackable), the window of confirmed event_ids, stalls and fatal producer
 * errors (bridge.h).
 */
#include "bridge.h"

#include "kafka.h"
#include "log.h"
#include "mem.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- Kafka ------------------------------------------------------------- */

static void retry_free(retry_item *r)
{
    if (r->headers)
        rd_kafka_headers_destroy(r->headers);
    free(r->key);
    free(r->value);
    free(r);
}

void outlet_drop_retries(bridge *b)
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
    r->due = pano_monotonic() + backoff;
    if (b->retry_tail)
        b->retry_tail->next = r;
    else
        b->retry_head = r;
    b->retry_tail = r;
    b->n_retry++;
}

static void permanent_failure(bridge *b, int topic, const void *key, size_t key_len,
                              const char *value, size_t len, rd_kafka_headers_t *headers,
                              const char *why, uint64_t tag);

/* Hand a message to librdkafka. Never blocks: when librdkafka cannot take
 * it now, it waits in the retry queue. Takes ownership of headers. */
void outlet_produce(bridge *b, int topic, const void *key, size_t key_len, const void *value,
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
        if (bridge_may_log(&b->errors_logged))
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
        intake_dead_letter(b, name, b->url.exchange, value, len, reason, tag);
        return;
    }
    /* Even its dead-letter record. */
    if (b->dlx_known && b->amqp &&
        amqp_basic_nack(intake_connection(b), CHANNEL, tag, 0, 0) == AMQP_STATUS_OK) {
        if (headers)
            rd_kafka_headers_destroy(headers);
        pano_tags_settled(&b->tags, tag);
        b->m.rejected_to_dlx++;
        pano_error("Kafka refused a dead-letter record (%s): rejected the message to the "
                   "queue's dead-letter exchange %s",
                   why, pano_config_str(b->cfg, "pano.bridge.dead_letter_exchange"));
        return;
    }
    if (bridge_may_log(&b->errors_logged))
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
void outlet_track_id(bridge *b, uint64_t tag, const pano_dedup_id *id)
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
bool outlet_is_duplicate(bridge *b, uint64_t tag, const pano_normalized *n)
{
    if (!b->dedup || !n->event_id) {
        outlet_track_id(b, tag, NULL);
        return false;
    }
    pano_dedup_id id = pano_dedup_id_of(b->dedup, n->event_id, n->event_id_len);
    if (pano_dedup_seen(b->dedup, id)) {
        outlet_track_id(b, tag, NULL);
        return true;
    }
    outlet_track_id(b, tag, &id);
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
    if (bridge_may_log(&b->errors_logged))
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
    if (bridge_may_log(&b->errors_logged))
        pano_warn("Kafka: %s", reason);
}

rd_kafka_t *outlet_create_producer(bridge *b, char *err, size_t errlen)
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
    for (int i = 0; i <= PANO_N_FAMILIES; i++) {
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

void outlet_destroy_producer(bridge *b)
{
    if (!b->producer)
        return;
    /* What is still queued belongs to channels that are gone: RabbitMQ
     * delivers it again, so it is dropped here. */
    rd_kafka_purge(b->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(b->producer, 0);
    for (int i = 0; i <= PANO_N_FAMILIES; i++)
        if (b->topics[i])
            rd_kafka_topic_destroy(b->topics[i]);
    memset(b->topics, 0, sizeof b->topics);
    rd_kafka_destroy(b->producer);
    b->producer = NULL;
}

/* Produce again what waited long enough. */
void outlet_process_retries(bridge *b, double now)
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
        outlet_produce(b, r->topic, r->key, r->key_len, r->value, r->len, h, r->tag, backoff);
        retry_free(r);
    }
}

/* ---- stalls ------------------------------------------------------------ */

void outlet_check_stall(bridge *b, double now)
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
        intake_send_acks(b, now, true); /* what Kafka did confirm is not sent again */
        intake_disconnect(b, true);
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
        if (amqp_basic_nack(intake_connection(b), CHANNEL, expired[i], 0, 1) != AMQP_STATUS_OK) {
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
    intake_send_acks(b, now, true); /* moves the head on */
}

/* After handing messages back: does Kafka answer again? */
bool outlet_kafka_answers(bridge *b, double now)
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

void outlet_restart_producer(bridge *b, double now)
{
    if (b->producer) {
        pano_error("replacing the Kafka producer after a fatal error; RabbitMQ delivers the "
                   "%" PRIu64 " unacknowledged message(s) again",
                   pano_tags_outstanding(&b->tags));
        intake_send_acks(b, now, true); /* what Kafka did confirm is not sent again */
        intake_disconnect(b, true);
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
