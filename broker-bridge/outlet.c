/*
 * outlet.c - pano-bridge's Kafka side (outlet.h): the idempotent producer,
 * dead-letter records, messages waiting to be produced again, delivery
 * reports (which make messages ackable), the window of confirmed event_ids.
 */
#include "outlet.h"

#include "kafka.h"
#include "log.h"
#include "mem.h"

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

static void item_free(retry_item *r)
{
    if (r->headers)
        rd_kafka_headers_destroy(r->headers);
    free(r->key);
    free(r->value);
    free(r);
}

static void free_list(retry_item *r)
{
    while (r) {
        retry_item *next = r->next;
        item_free(r);
        r = next;
    }
}

void outlet_drop_retries(bridge *b)
{
    free_list(b->retry_head);
    b->retry_head = b->retry_tail = NULL;
    b->n_retry = 0;
    free_list(b->refused);
    b->refused = NULL;
}

/* A copy of a message. Takes ownership of headers. */
static retry_item *item_new(int topic, const void *key, size_t key_len, const void *value,
                            size_t len, rd_kafka_headers_t *headers, uint64_t tag)
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
    return r;
}

/* Queue a copy to be produced again after a backoff. */
static void enqueue(bridge *b, retry_item *r, double backoff)
{
    r->next = NULL;
    r->backoff = backoff;
    r->due = pano_monotonic() + backoff;
    if (b->retry_tail)
        b->retry_tail->next = r;
    else
        b->retry_head = r;
    b->retry_tail = r;
    b->n_retry++;
}

/* Keep a copy of a message to produce it again after a backoff. Takes
 * ownership of headers. */
static void defer(bridge *b, int topic, const void *key, size_t key_len, const void *value,
                  size_t len, rd_kafka_headers_t *headers, uint64_t tag, double backoff)
{
    enqueue(b, item_new(topic, key, key_len, value, len, headers, tag), backoff);
}

static void refuse(bridge *b, int topic, const void *key, size_t key_len, const char *value,
                   size_t len, rd_kafka_headers_t *headers, const char *why, uint64_t tag);

void outlet_produce(bridge *b, int topic, const void *key, size_t key_len, const void *value,
                    size_t len, rd_kafka_headers_t *headers, uint64_t tag, double backoff)
{
    rd_kafka_resp_err_t err = rd_kafka_producev(
        b->producer, RD_KAFKA_V_RKT(b->topics[topic]), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_VALUE((void *)value, len),
        RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(pack_ref(b->generation, topic, tag)),
        RD_KAFKA_V_END);
    switch (pano_policy_produce(err)) {
    case PANO_PRODUCE_SENT:
        return; /* librdkafka owns the headers now */
    case PANO_PRODUCE_WAIT:
        defer(b, topic, key, key_len, value, len, headers, tag, 0.05);
        return;
    case PANO_PRODUCE_REFUSED:
        refuse(b, topic, key, key_len, value, len, headers, rd_kafka_err2str(err), tag);
        return;
    case PANO_PRODUCE_FATAL:
        if (headers)
            rd_kafka_headers_destroy(headers);
        b->fatal = true; /* the message stays unacked: redelivered after the restart */
        return;
    case PANO_PRODUCE_RETRY:
        if (pano_policy_may_log(&b->errors_logged))
            pano_error("cannot produce to %s: %s (trying again in %.1f s)",
                       b->topic_names[topic], rd_kafka_err2str(err), backoff);
        defer(b, topic, key, key_len, value, len, headers, tag, backoff);
        return;
    }
}

void outlet_dead_letter(bridge *b, const char *routing_key, const char *exchange,
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
    if (pano_policy_may_log(&b->dead_logged))
        pano_info("dead-lettering a message (routing key '%.100s'): %s", routing_key, reason);
    outlet_produce(b, DEAD_TOPIC, routing_key, strlen(routing_key), body, len, h, tag, 1.0);
}

/* Kafka refused a message for good: an event goes to the dead-letter topic;
 * a dead-letter record waits in b->refused for the loop's decision. Takes
 * ownership of headers (those of a dead-letter record are kept). */
static void refuse(bridge *b, int topic, const void *key, size_t key_len, const char *value,
                   size_t len, rd_kafka_headers_t *headers, const char *why, uint64_t tag)
{
    if (topic == DEAD_TOPIC) {
        retry_item *r = item_new(topic, key, key_len, value, len, headers, tag);
        r->why = why;
        retry_item **end = &b->refused;
        while (*end)
            end = &(*end)->next;
        *end = r;
        return;
    }
    if (headers)
        rd_kafka_headers_destroy(headers);
    /* Its routing key is not kept; the event name stands in for it. */
    char reason[300], name[256] = "";
    snprintf(reason, sizeof reason, "Kafka refused it: %s", why);
    char err[64];
    pano_json *doc = pano_json_parse(value, len, PANO_NORMALIZE_MAX_DEPTH, err, sizeof err);
    const char *event = doc ? pano_json_get_str(doc, "event") : NULL;
    snprintf(name, sizeof name, "%s", event ? event : "");
    pano_json_free(doc);
    outlet_dead_letter(b, name, b->url.exchange, value, len, reason, tag);
}

retry_item *outlet_take_refused(bridge *b)
{
    retry_item *r = b->refused;
    if (r)
        b->refused = r->next;
    return r;
}

void outlet_keep_refused(bridge *b, retry_item *r)
{
    if (pano_policy_may_log(&b->errors_logged))
        pano_error("Kafka refused a dead-letter record (%s) and the queue has no dead-letter "
                   "exchange of the bridge's: the message stays unacknowledged and is tried "
                   "again in 30 s; check the topic %s",
                   r->why, b->topic_names[DEAD_TOPIC]);
    enqueue(b, r, 30);
}

void outlet_free_refused(retry_item *r) { item_free(r); }

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

/* Kafka persisted the message of (generation, topic, tag). */
static void confirmed(bridge *b, uint64_t generation, int topic, uint64_t tag, bool current)
{
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
}

/* A copy of a report's headers (NULL: none). */
static rd_kafka_headers_t *headers_of(const rd_kafka_message_t *m)
{
    rd_kafka_headers_t *h = NULL;
    return rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR ? rd_kafka_headers_copy(h)
                                                                          : NULL;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    bridge *b = opaque;
    uint64_t generation, tag;
    int topic;
    unpack_ref(m->_private, &generation, &topic, &tag);
    bool current = b->amqp && generation == (b->generation & GEN_MASK) && !b->reconnect_needed;
    pano_report_action action =
        pano_policy_report(m->err, rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_PERSISTED,
                           current && pano_tags_is_pending(&b->tags, tag));
    if (action != PANO_REPORT_PERSISTED && action != PANO_REPORT_PURGED)
        b->m.delivery_errors++;
    switch (action) {
    case PANO_REPORT_PERSISTED:
        confirmed(b, generation, topic, tag, current);
        return;
    case PANO_REPORT_PURGED: /* dropped on purpose (see outlet_destroy_producer) */
    case PANO_REPORT_STALE:
        return;
    case PANO_REPORT_FATAL:
        b->fatal = true;
        return;
    case PANO_REPORT_REFUSED:
        refuse(b, topic, m->key, m->key_len, m->payload, m->len,
               topic == DEAD_TOPIC ? headers_of(m) : NULL, rd_kafka_err2str(m->err), tag);
        return;
    case PANO_REPORT_RETRY:
        if (pano_policy_may_log(&b->errors_logged))
            pano_warn("Kafka did not persist a message to %s: %s (producing it again)",
                      b->topic_names[topic], rd_kafka_err2str(m->err));
        defer(b, topic, m->key, m->key_len, m->payload, m->len, headers_of(m), tag, 1.0);
        return;
    }
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
    if (pano_policy_may_log(&b->errors_logged))
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

void outlet_poll(bridge *b)
{
    if (b->producer)
        rd_kafka_poll(b->producer, 0);
}

uint64_t outlet_queue_len(const bridge *b)
{
    return b->producer ? (uint64_t)rd_kafka_outq_len(b->producer) : 0;
}

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
        outlet_produce(b, r->topic, r->key, r->key_len, r->value, r->len, h, r->tag,
                       pano_policy_backoff(r->backoff, 30));
        item_free(r);
    }
}

void outlet_forget_retries(bridge *b, const uint64_t *tags, size_t n)
{
    b->retry_tail = NULL;
    for (retry_item **p = &b->retry_head; *p;) {
        retry_item *r = *p;
        bool gone = false;
        for (size_t i = 0; i < n && !gone; i++)
            gone = r->tag == tags[i];
        if (!gone) {
            b->retry_tail = r;
            p = &r->next;
            continue;
        }
        *p = r->next;
        b->n_retry--;
        item_free(r);
    }
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

