/*
 * summaries.c - pano-indexer's side of the per-run summaries: contributions,
 * a batch's documents, the documents last written, and what a round reads
 * and writes (summaries.h).
 */
#include "summaries.h"

#include "log.h"
#include "mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "%020" PRId64 without printf: the arrival of a message. */
static void arrival_of(int64_t offset, char out[24])
{
    uint64_t v = offset < 0 ? 0 : (uint64_t)offset;
    for (int i = 19; i >= 0; i--, v /= 10)
        out[i] = (char)('0' + v % 10);
    out[20] = '\0';
}

struct batch_summary *summaries_note(summary_layout *l, const pano_bulk_doc *doc,
                                     int64_t offset, double now)
{
    char arrival[24];
    arrival_of(offset, arrival);
    struct batch_summary *s = pano_malloc(sizeof *s);
    if (!doc->event ||
        !pano_summary_of_event(doc->event, doc->wf_uuid, doc->ts, arrival, &s->part) ||
        pano_period_expired(&l->policies[s->part.stream], doc->ts, now)) {
        pano_summary_clear(&s->part);
        free(s);
        return NULL;
    }
    int st = s->part.stream;
    if (!(doc->ts >= l->last[st].from && doc->ts < l->last[st].to)) {
        pano_period p = l->policies[st].period;
        char base[256];
        pano_summary_base(l->prefix, st, base, sizeof base);
        pano_bulk_partition(base, p, doc->ts, l->last[st].name, sizeof l->last[st].name);
        l->last[st].from = pano_period_start(p, doc->ts);
        l->last[st].to = pano_period_next(p, doc->ts);
    }
    memcpy(s->index, l->last[st].name, sizeof s->index);
    return s;
}

void summaries_free_note(struct batch_summary *s)
{
    if (!s)
        return;
    pano_summary_clear(&s->part);
    free(s);
}

/* ---- the documents as last written -------------------------------------------- */

#define CACHE_SLOTS 65536 /* a power of two, more than twice SUMMARY_CACHE */

typedef struct {
    char *key; /* index, '/', _id; NULL: free; "" a removed one */
    char *text;
    int64_t seq_no, primary_term;
} cache_slot;

struct summary_cache {
    cache_slot slots[CACHE_SLOTS];
    size_t used; /* slots taken, removed ones too */
};

static uint64_t hash_of(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void cache_key(const summary_doc *d, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", d->index, d->update.id);
}

/* The slot of key, or the free one where it would go. */
static cache_slot *cache_find(summary_cache *c, const char *key)
{
    size_t i = hash_of(key) & (CACHE_SLOTS - 1);
    cache_slot *removed = NULL;
    for (;; i = (i + 1) & (CACHE_SLOTS - 1)) {
        cache_slot *s = &c->slots[i];
        if (!s->key)
            return removed ? removed : s;
        if (!*s->key) {
            if (!removed)
                removed = s;
        } else if (strcmp(s->key, key) == 0)
            return s;
    }
}

static void cache_empty(summary_cache *c)
{
    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        free(c->slots[i].key);
        free(c->slots[i].text);
    }
    memset(c, 0, sizeof *c);
}

static void cache_forget(summary_cache *c, const summary_doc *d)
{
    char key[320];
    cache_key(d, key, sizeof key);
    cache_slot *s = cache_find(c, key);
    if (s->key && *s->key) {
        free(s->text);
        s->text = NULL;
        s->key[0] = '\0'; /* removed: lookups go on past it */
    }
}

static void cache_put(summary_cache *c, const summary_doc *d, const char *text, size_t len,
                      int64_t seq_no, int64_t primary_term)
{
    char key[320];
    cache_key(d, key, sizeof key);
    cache_slot *s = cache_find(c, key);
    if (!s->key || !*s->key) {
        if (c->used >= SUMMARY_CACHE) { /* full: start again */
            cache_empty(c);
            s = cache_find(c, key);
        }
        if (!s->key)
            c->used++;
        free(s->key);
        s->key = pano_strdup(key);
    }
    free(s->text);
    s->text = pano_strndup(text, len);
    s->seq_no = seq_no;
    s->primary_term = primary_term;
}

/* The document as last written into d->doc: false when it is not known. */
static bool cache_get(summary_cache *c, summary_doc *d)
{
    char key[320];
    cache_key(d, key, sizeof key);
    cache_slot *s = cache_find(c, key);
    if (!s->key || !*s->key)
        return false;
    bool ok = pano_summary_parse(s->text, strlen(s->text), &d->doc);
    d->seq_no = s->seq_no;
    d->primary_term = s->primary_term;
    return ok;
}

/* ---- a batch's documents --------------------------------------------------- */

typedef struct {
    const batch_item *it;
} held;

static int by_document(const void *a, const void *b)
{
    const struct batch_summary *x = ((const held *)a)->it->summary;
    const struct batch_summary *y = ((const held *)b)->it->summary;
    int c = strcmp(x->part.id, y->part.id);
    return c ? c : strcmp(x->index, y->index);
}

/* Elasticsearch holds the event: created by this batch (201) or before (409). */
static bool stored(const batch_item *it)
{
    return it->settled && !it->rejected && it->summary &&
           ((it->status >= 200 && it->status < 300) || it->status == 409);
}

/* The update applied to d->doc: to write, or settled when it was already. */
static void apply(summary_round *r, summary_doc *d)
{
    d->to_write = pano_summary_apply(&d->doc, &d->update, d->op);
    if (!d->to_write) { /* this very update was written before: its answer was lost */
        d->settled = true;
        r->unchanged++;
    }
}

void summaries_gather(summary_round *r, const batch *b)
{
    if (!r->cache)
        r->cache = pano_calloc(1, sizeof *r->cache);
    held *h = pano_calloc(b->count ? b->count : 1, sizeof *h);
    size_t n = 0;
    for (size_t i = 0; i < b->count; i++)
        if (stored(&b->items[i]))
            h[n++].it = &b->items[i];
    if (n > 1)
        qsort(h, n, sizeof *h, by_document);
    for (size_t i = 0; i < n;) {
        const struct batch_summary *s = h[i].it->summary;
        if (r->n == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 256;
            r->docs = pano_reallocarray(r->docs, r->cap, sizeof *r->docs);
        }
        summary_doc *d = &r->docs[r->n++];
        memset(d, 0, sizeof *d);
        memcpy(d->index, s->index, sizeof d->index);
        pano_summary_init(&d->update);
        pano_summary_init(&d->doc);
        const rd_kafka_message_t *newest = h[i].it->msg;
        size_t j = i;
        for (; j < n && by_document(&h[i], &h[j]) == 0; j++) {
            const batch_item *it = h[j].it;
            pano_summary_merge(&d->update, &it->summary->part, it->status != 409);
            if (it->msg->offset > newest->offset)
                newest = it->msg;
        }
        snprintf(d->op, sizeof d->op, "%" PRId32 ":%" PRId64, newest->partition,
                 newest->offset);
        d->found = cache_get(r->cache, d); /* else thought new: created */
        apply(r, d);
        i = j;
    }
    free(h);
}

size_t summaries_unsettled(const summary_round *r)
{
    size_t left = 0;
    for (size_t i = 0; i < r->n; i++)
        left += !r->docs[i].settled;
    return left;
}

size_t summaries_to_read(const summary_round *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += !r->docs[i].settled && r->docs[i].need_read;
    return n;
}

void summaries_clear(summary_round *r)
{
    for (size_t i = 0; i < r->n; i++) {
        pano_summary_clear(&r->docs[i].update);
        pano_summary_clear(&r->docs[i].doc);
    }
    r->n = 0;
}

void summaries_free(summary_round *r)
{
    summaries_clear(r);
    free(r->docs);
    if (r->cache)
        cache_empty(r->cache);
    free(r->cache);
    r->docs = NULL;
    r->cache = NULL;
    r->cap = 0;
}

/* ---- a round ----------------------------------------------------------------- */

static bool to_read(const summary_doc *d)
{
    return !d->settled && d->need_read;
}

void summaries_read_body(const summary_round *r, pano_buf *body)
{
    pano_buf_append_str(body, "{\"docs\":[");
    bool first = true;
    for (size_t i = 0; i < r->n; i++) {
        const summary_doc *d = &r->docs[i];
        if (!to_read(d))
            continue;
        pano_buf_appendf(body, "%s{\"_index\":\"%s\",\"_id\":\"%s\",\"routing\":\"%s\"}",
                         first ? "" : ",", d->index, d->update.id, d->update.wf);
        first = false;
    }
    pano_buf_append_str(body, "]}");
}

int summaries_apply_read(summary_round *r, const char *answer, size_t len, char *err,
                         size_t errlen)
{
    char why[200];
    pano_json *a = pano_json_parse(answer, len, PANO_JSON_DEFAULT_DEPTH, why, sizeof why);
    const pano_json *docs = pano_json_get_array(a, "docs");
    size_t k = 0, want = summaries_to_read(r);
    int rc = 0;
    if (!a || pano_json_len(docs) != want) {
        snprintf(err, errlen, "unusable _mget answer (%s): %zu documents for %zu", a ? "" : why,
                 pano_json_len(docs), want);
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < r->n && rc == 0; i++)
        if (to_read(&r->docs[i])) {
            const char *id = pano_json_get_str(pano_json_at(docs, k++), "_id");
            if (!id || strcmp(id, r->docs[i].update.id) != 0) {
                snprintf(err, errlen, "_mget answer out of order at %s", r->docs[i].update.id);
                rc = -1;
            }
        }
    k = 0;
    for (size_t i = 0; i < r->n && rc == 0; i++) {
        summary_doc *d = &r->docs[i];
        if (!to_read(d))
            continue;
        const pano_json *got = pano_json_at(docs, k++);
        const pano_json *found = pano_json_get(got, "found");
        const pano_json *source = pano_json_get(got, "_source");
        pano_summary_clear(&d->doc);
        d->found = found && found->type == PANO_JSON_BOOL && found->u.boolean && source &&
                   pano_summary_read(source, &d->doc);
        /* a partition not made yet reads as an error: the document is new */
        if (d->found && (!pano_json_get_int(got, "_seq_no", &d->seq_no) ||
                         !pano_json_get_int(got, "_primary_term", &d->primary_term))) {
            snprintf(err, errlen, "_mget answer without _seq_no for %s", d->update.id);
            rc = -1;
        }
        d->need_read = false;
        r->reads++;
        apply(r, d);
    }
done:
    pano_json_free(a);
    return rc;
}

size_t summaries_write_body(summary_round *r, pano_buf *body, size_t *order)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) {
        summary_doc *d = &r->docs[i];
        if (d->settled || !d->to_write)
            continue;
        d->line = body->len;
        pano_buf_appendf(body, "{\"%s\":{\"_index\":\"%s\",\"_id\":\"%s\",\"routing\":\"%s\"",
                         d->found ? "index" : "create", d->index, d->update.id, d->update.wf);
        if (d->found)
            pano_buf_appendf(body, ",\"if_seq_no\":%" PRId64 ",\"if_primary_term\":%" PRId64,
                             d->seq_no, d->primary_term);
        pano_buf_append_str(body, "}}\n");
        d->at = body->len;
        pano_summary_write(&d->doc, body);
        d->len = body->len - d->at;
        pano_buf_append(body, "\n", 1);
        order[n++] = i;
    }
    return n;
}

void summaries_apply_write(summary_round *r, const pano_buf *body, const size_t *order, size_t n,
                           const pano_bulk_result *results)
{
    static unsigned logged;
    for (size_t k = 0; k < n; k++) {
        summary_doc *d = &r->docs[order[k]];
        int st = results[k].status;
        d->to_write = false;
        if (st >= 200 && st < 300) {
            d->settled = true;
            r->written++;
            if (results[k].seq_no >= 0)
                cache_put(r->cache, d, body->data + d->at, d->len, results[k].seq_no,
                          results[k].primary_term);
            else
                cache_forget(r->cache, d);
            continue;
        }
        cache_forget(r->cache, d);
        if (st == 409 || pano_bulk_classify(st) == PANO_BULK_RETRY) {
            /* written by another, not new, or not known: read it again */
            d->need_read = true;
            if (st == 409)
                r->conflicts++;
            else
                r->retries++;
        } else {
            d->settled = true;
            r->refused++;
            if (logged++ < 100)
                pano_warn("summary %s in %s refused (%d): %s%s", d->update.id, d->index, st,
                          results[k].reason, logged == 100 ? " (no more of these messages)" : "");
        }
    }
}
