/*
 * summaries.c - pano-indexer's side of the per-run summaries: contributions,
 * a batch's documents, and what a round reads and writes (summaries.h).
 */
#include "summaries.h"

#include "log.h"
#include "mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct batch_summary *summaries_note(const summary_layout *l, const pano_bulk_doc *doc,
                                     int64_t offset, double now)
{
    pano_summary_part p;
    char arrival[24];
    snprintf(arrival, sizeof arrival, "%020" PRId64, offset);
    if (!doc->event || !pano_summary_of_event(doc->event, doc->wf_uuid, doc->ts, arrival, &p))
        return NULL;
    const pano_stream_policy *policy = &l->policies[p.stream];
    if (pano_period_expired(policy, doc->ts, now)) {
        pano_summary_part_free(&p);
        return NULL;
    }
    struct batch_summary *s = pano_calloc(1, sizeof *s);
    char base[256];
    pano_summary_base(l->prefix, p.stream, base, sizeof base);
    pano_bulk_partition(base, policy->period, doc->ts, s->index, sizeof s->index);
    memcpy(s->id, p.id, sizeof s->id);
    memcpy(s->routing, doc->wf_uuid, sizeof s->routing);
    s->part = p.part;
    return s;
}

void summaries_free_note(struct batch_summary *s)
{
    if (!s)
        return;
    pano_json_free(s->part);
    free(s);
}

/* ---- a batch's documents --------------------------------------------------- */

typedef struct {
    const batch_item *it;
} held;

static int by_document(const void *a, const void *b)
{
    const struct batch_summary *x = ((const held *)a)->it->summary;
    const struct batch_summary *y = ((const held *)b)->it->summary;
    int c = strcmp(x->index, y->index);
    return c ? c : strcmp(x->id, y->id);
}

/* Elasticsearch holds the event: created by this batch (201) or before (409). */
static bool stored(const batch_item *it)
{
    return it->settled && !it->rejected && it->summary &&
           ((it->status >= 200 && it->status < 300) || it->status == 409);
}

void summaries_gather(summary_round *r, const batch *b)
{
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
        memcpy(d->id, s->id, sizeof d->id);
        memcpy(d->routing, s->routing, sizeof d->routing);
        d->update = pano_json_object();
        const rd_kafka_message_t *newest = h[i].it->msg;
        size_t j = i;
        for (; j < n && by_document(&h[i], &h[j]) == 0; j++) {
            const batch_item *it = h[j].it;
            pano_summary_merge(d->update, it->summary->part, it->status != 409);
            if (it->msg->offset > newest->offset)
                newest = it->msg;
        }
        snprintf(d->op, sizeof d->op, "%" PRId32 ":%" PRId64, newest->partition,
                 newest->offset);
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

void summaries_clear(summary_round *r)
{
    for (size_t i = 0; i < r->n; i++) {
        pano_json_free(r->docs[i].update);
        pano_json_free(r->docs[i].doc);
    }
    r->n = 0;
}

/* ---- a round ----------------------------------------------------------------- */

void summaries_read_body(const summary_round *r, pano_buf *body)
{
    pano_buf_append_str(body, "{\"docs\":[");
    bool first = true;
    for (size_t i = 0; i < r->n; i++) {
        const summary_doc *d = &r->docs[i];
        if (d->settled)
            continue;
        pano_buf_appendf(body, "%s{\"_index\":\"%s\",\"_id\":\"%s\",\"routing\":\"%s\"}",
                         first ? "" : ",", d->index, d->id, d->routing);
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
    size_t k = 0, want = summaries_unsettled(r);
    int rc = 0;
    if (!a || pano_json_len(docs) != want) {
        snprintf(err, errlen, "unusable _mget answer (%s): %zu documents for %zu", a ? "" : why,
                 pano_json_len(docs), want);
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < r->n && rc == 0; i++)
        if (!r->docs[i].settled) {
            const char *id = pano_json_get_str(pano_json_at(docs, k++), "_id");
            if (!id || strcmp(id, r->docs[i].id) != 0) {
                snprintf(err, errlen, "_mget answer out of order at %s", r->docs[i].id);
                rc = -1;
            }
        }
    k = 0;
    for (size_t i = 0; i < r->n && rc == 0; i++) {
        summary_doc *d = &r->docs[i];
        if (d->settled)
            continue;
        const pano_json *got = pano_json_at(docs, k++);
        const pano_json *found = pano_json_get(got, "found");
        const pano_json *source = pano_json_get(got, "_source");
        pano_json_free(d->doc);
        d->found = found && found->type == PANO_JSON_BOOL && found->u.boolean && source &&
                   source->type == PANO_JSON_OBJECT;
        /* a partition not made yet reads as an error: the document is new */
        d->doc = d->found ? pano_json_clone(source) : pano_json_object();
        if (d->found && (!pano_json_get_int(got, "_seq_no", &d->seq_no) ||
                         !pano_json_get_int(got, "_primary_term", &d->primary_term))) {
            snprintf(err, errlen, "_mget answer without _seq_no for %s", d->id);
            rc = -1;
        }
        if (!pano_summary_apply(d->doc, d->update, d->op)) {
            /* this very update was written before: its answer was lost */
            pano_json_free(d->doc);
            d->doc = NULL;
            d->settled = true;
            r->unchanged++;
        }
    }
done:
    pano_json_free(a);
    return rc;
}

size_t summaries_write_body(const summary_round *r, pano_buf *body, size_t *order)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) {
        const summary_doc *d = &r->docs[i];
        if (d->settled || !d->doc)
            continue;
        pano_buf_appendf(body, "{\"%s\":{\"_index\":\"%s\",\"_id\":\"%s\",\"routing\":\"%s\"",
                         d->found ? "index" : "create", d->index, d->id, d->routing);
        if (d->found)
            pano_buf_appendf(body, ",\"if_seq_no\":%" PRId64 ",\"if_primary_term\":%" PRId64,
                             d->seq_no, d->primary_term);
        pano_buf_append_str(body, "}}\n");
        pano_json_serialize_to(body, d->doc);
        pano_buf_append(body, "\n", 1);
        order[n++] = i;
    }
    return n;
}

void summaries_apply_write(summary_round *r, const size_t *order, size_t n,
                           const pano_bulk_result *results)
{
    static unsigned logged;
    for (size_t k = 0; k < n; k++) {
        summary_doc *d = &r->docs[order[k]];
        int st = results[k].status;
        if (st >= 200 && st < 300) {
            d->settled = true;
            r->written++;
        } else if (st == 409)
            r->conflicts++;
        else if (pano_bulk_classify(st) == PANO_BULK_RETRY)
            r->retries++;
        else {
            d->settled = true;
            r->refused++;
            if (logged++ < 100)
                pano_warn("summary %s in %s refused (%d): %s%s", d->id, d->index, st,
                          results[k].reason, logged == 100 ? " (no more of these messages)" : "");
        }
        pano_json_free(d->doc);
        d->doc = NULL;
    }
}
