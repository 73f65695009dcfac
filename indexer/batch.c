/*
 * batch.c - pano-indexer's batches: their items, lifetime, dead-letter
 * documents and the decisions that look only at a batch (batch.h).
 */
#include "batch.h"

#include "deltas.h"
#include "event.h"
#include "json.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"
#include "summaries.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lifetime ------------------------------------------------------------ */

int batch_init(batch *b, size_t capacity, const pano_config *cfg, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    b->items = pano_calloc(capacity, sizeof *b->items);
    b->es = pano_es_new(cfg, err, errlen);
    return b->es ? 0 : -1;
}

void batch_free(batch *b)
{
    pano_es_free(b->es);
    for (size_t i = 0; i < b->nbodies; i++)
        pano_buf_free(&b->bodies[i]);
    free(b->bodies);
    free(b->items);
    memset(b, 0, sizeof *b);
}

void batch_reset(batch *b)
{
    b->count = b->bytes = 0;
    b->first = b->sent = b->sent_date = b->answered = 0;
    b->sealed = b->prepared = b->ordered = false;
}

/* Free what an item holds (a closing sample's message is its end's). */
static void item_free(batch_item *it)
{
    pano_bulk_doc_free(&it->doc);
    pano_run_event_free(it->run);
    summaries_free_note(it->summary);
    if (!it->closing)
        rd_kafka_message_destroy(it->msg);
}

void batch_release(batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        item_free(&b->items[i]);
    batch_reset(b);
}

/* ---- holding ------------------------------------------------------------- */

batch_item *batch_add(batch *b, rd_kafka_message_t *msg, double now)
{
    if (b->count == 0)
        b->first = now;
    b->bytes += msg->len;
    batch_item *it = &b->items[b->count++];
    memset(it, 0, sizeof *it);
    it->msg = msg;
    return it;
}

void batch_insert_closings(batch *b, const size_t *after, pano_bulk_doc *docs, size_t n)
{
    /* From the back, each item moves once. */
    size_t to = b->count + n;
    for (size_t k = n, i = b->count; k > 0;) {
        while (i > after[k - 1] + 1)
            b->items[--to] = b->items[--i];
        batch_item *c = &b->items[--to];
        memset(c, 0, sizeof *c);
        c->doc = docs[k - 1];
        c->closing = true;
        c->msg = b->items[after[k - 1]].msg;
        k--;
    }
    b->count += n;
}

/* The messages of revoked partitions are not settled, their offsets are not
 * stored: the new owner replays them. */
size_t batch_drop(batch *b, const rd_kafka_topic_partition_list_t *parts)
{
    size_t keep = 0, dropped = 0;
    bool dropping = false; /* the last message's fate, for its closing sample */
    b->bytes = 0;
    for (size_t i = 0; i < b->count; i++) {
        batch_item *it = &b->items[i];
        if (!it->closing)
            dropping = !parts || rd_kafka_topic_partition_list_find(
                                     parts, rd_kafka_topic_name(it->msg->rkt), it->msg->partition);
        if (dropping) {
            dropped += !it->closing;
            item_free(it);
        } else if (it->closing)
            b->items[keep++] = *it;
        else {
            b->bytes += it->msg->len;
            b->items[keep++] = *it;
        }
    }
    b->count = keep;
    if (keep == 0)
        batch_reset(b);
    return dropped;
}

void batch_defer(batch *b, const rd_kafka_topic_partition_list_t *parts)
{
    if (!b->deferred)
        b->deferred = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++)
        rd_kafka_topic_partition_list_add(b->deferred, parts->elems[i].topic,
                                          parts->elems[i].partition);
}

size_t batch_drop_deferred(batch *b)
{
    if (!b->deferred)
        return 0;
    size_t dropped = batch_drop(b, b->deferred);
    rd_kafka_topic_partition_list_destroy(b->deferred);
    b->deferred = NULL;
    return dropped;
}

size_t batch_unsettled(const batch *b)
{
    size_t left = 0;
    for (size_t i = 0; i < b->count; i++)
        left += !b->items[i].settled;
    return left;
}

const char *batch_header(const rd_kafka_message_t *m, const char *name, char *buf, size_t size)
{
    rd_kafka_headers_t *h;
    const void *value;
    size_t len;
    buf[0] = '\0';
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(h, name, &value, &len) == RD_KAFKA_RESP_ERR_NO_ERROR && value)
        snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), (const char *)value);
    return buf;
}

/* ---- dead letters -------------------------------------------------------- */

/* Dead letters keep this much of the original bytes; the size says how
 * much there was. */
#define DEAD_LETTER_EXCERPT (256 * 1024)

/* The dead-letter document holds the reason, where the message came from,
 * the original bytes (an excerpt of large ones; a closing sample's own)
 * and their size, in the dead-letter partition of now. Its _id makes a
 * replay harmless: the topic, partition and offset of a message the indexer
 * refused with a hash of the bytes; for one the bridge
 * refused (and may dead-letter again after a crash), a hash of the routing
 * key and the bytes. */
void batch_make_dead_letter(batch_item *it, const batch_dead_letters *dl, double now)
{
    rd_kafka_message_t *m = it->msg;
    /* a closing sample's own bytes, not its end's */
    char *own = it->closing ? it->doc.doc : NULL;
    size_t len = own ? it->doc.doc_len : m->len;
    const char *payload = own ? own : m->payload ? m->payload : "";
    if (own)
        it->doc.doc = NULL; /* freed once it is written down */
    bool bridge = strcmp(rd_kafka_topic_name(m->rkt), dl->bridge_topic) == 0;
    static unsigned logged;
    if (!bridge && logged++ < 100)
        pano_info("dead letter from %s [%d] at %lld: %s%s", rd_kafka_topic_name(m->rkt),
                  (int)m->partition, (long long)m->offset, it->reason,
                  logged == 100 ? " (no more of these messages)" : "");
    pano_json *d = pano_json_object();
    char stamp[64], hash[33], key[256], value[64];
    pano_bulk_timestamp(now, stamp, sizeof stamp);
    pano_json_set_str(d, "@timestamp", stamp);
    pano_json_set_str(d, "source", bridge ? "pano-bridge" : "pano-indexer");
    pano_json_set_str(d, "reason", it->reason);
    if (!bridge)
        pano_json_set_int(d, "status", it->status);
    pano_json_set_str(d, "topic", rd_kafka_topic_name(m->rkt));
    pano_json_set_int(d, "partition", m->partition);
    pano_json_set_int(d, "offset", m->offset);
    if (it->doc.wf_uuid[0])
        pano_json_set_str(d, "wf_uuid", it->doc.wf_uuid);
    if (it->doc.id[0])
        pano_json_set_str(d, "event_id", it->doc.id);
    long long size = (long long)len;
    bool truncated = len > DEAD_LETTER_EXCERPT;
    if (bridge) {
        pano_json_set_str(d, "routing_key", batch_header(m, "routing_key", key, sizeof key));
        pano_json_set_str(d, "exchange", batch_header(m, "exchange", value, sizeof value));
        size = atoll(batch_header(m, "original_size", value, sizeof value));
        truncated |= strcmp(batch_header(m, "truncated", value, sizeof value), "true") == 0;
    }
    pano_json_set_int(d, "original_size", size > 0 ? size : (long long)len);
    pano_json_set_bool(d, "truncated", truncated);
    size_t kept = len > DEAD_LETTER_EXCERPT ? DEAD_LETTER_EXCERPT : len;
    pano_json_set(d, "original", pano_json_string_len(payload, kept));
    pano_bulk_doc_free(&it->doc);
    pano_bulk_doc *dd = &it->doc;
    pano_bulk_partition(dl->index, dl->period, now, dd->index, sizeof dd->index);
    if (bridge) {
        pano_buf both = {0};
        pano_buf_append_str(&both, key);
        pano_buf_append(&both, "\n", 1);
        pano_buf_append(&both, payload, len);
        pano_event_id_of(both.data, both.len, hash);
        pano_buf_free(&both);
        snprintf(dd->id, sizeof dd->id, "bridge-%s", hash);
    } else {
        pano_event_id_of(payload, len, hash);
        snprintf(dd->id, sizeof dd->id, "%.120s-%d-%lld-%.16s", rd_kafka_topic_name(m->rkt),
                 (int)m->partition, (long long)m->offset, hash);
    }
    dd->routing[0] = '\0';
    dd->doc = pano_json_serialize(d, &dd->doc_len);
    pano_json_free(d);
    free(own);
    it->rejected = true;
}

/* ---- decisions ----------------------------------------------------------- */

bool batch_full(const batch *b, const batch_limits *lim)
{
    return b->count >= lim->max_docs || b->bytes >= lim->max_bytes;
}

double batch_left(const batch *b, const batch_limits *lim, double now, double empty_wait)
{
    return b->count ? b->first + lim->linger - now : empty_wait;
}

batch_verdict batch_verdict_of(const batch_item *it, const pano_bulk_result *r)
{
    switch (r->outcome) {
    case PANO_BULK_DONE:
        if (it->rejected)
            return BATCH_DEAD;
        if (r->status == 409)
            return BATCH_DUPLICATE;
        return it->doc.wf_uuid[0] ? BATCH_INDEXED : BATCH_UNASSIGNED;
    case PANO_BULK_REJECTED:
        return it->rejected ? BATCH_REFUSED : BATCH_DEAD_LETTER;
    case PANO_BULK_RETRY:
        break;
    }
    return BATCH_RETRY;
}

rd_kafka_topic_partition_list_t *batch_offsets(const batch *b)
{
    rd_kafka_topic_partition_list_t *seen = rd_kafka_topic_partition_list_new(16);
    for (size_t i = 0; i < b->count; i++) {
        const batch_item *it = &b->items[i];
        const char *topic = rd_kafka_topic_name(it->msg->rkt);
        rd_kafka_topic_partition_t *p =
            rd_kafka_topic_partition_list_find(seen, topic, it->msg->partition);
        if (!p) {
            p = rd_kafka_topic_partition_list_add(seen, topic, it->msg->partition);
            p->offset = RD_KAFKA_OFFSET_INVALID;
        }
        if (p->opaque)
            continue; /* blocked by an earlier unsettled item */
        if (it->settled)
            p->offset = it->msg->offset + 1;
        else {
            p->opaque = p; /* blocked */
            if (it->closing) /* its end, settled just before it, waits for it */
                p->offset = it->msg->offset;
        }
    }
    rd_kafka_topic_partition_list_t *store = pano_kafka_with_offsets(seen);
    rd_kafka_topic_partition_list_destroy(seen);
    return store;
}
