/*
 * outlet.c - pano-indexer's Elasticsearch side: the templates, bulk
 * requests in flight, and what their answers do to a batch's items
 * (indexer.h).
 */
#include "indexer.h"

#include "buf.h"
#include "event.h"
#include "json.h"
#include "log.h"
#include "mem.h"
#include "thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index templates for this configuration, from the embedded schemas. */
int outlet_build_templates(const indexer *ix, pano_template **t, size_t *nt, char **warnings,
                           char *err, size_t errlen)
{
    pano_template_options opt = {
        .prefix = ix->prefix,
        .fallback_index = ix->fallback_index,
        .dead_letter_index = ix->dead_letter_index,
        .shards = (int)pano_config_int(ix->cfg, "pano.indexer.shards"),
        .replicas = ix->replicas,
        .refresh_interval = pano_config_str(ix->cfg, "pano.indexer.refresh_interval"),
        .total_fields_limit = (int)pano_config_int(ix->cfg, "pano.indexer.total_fields_limit"),
    };
    return pano_templates_build(pano_builtin_schemas, &opt, t, nt, warnings, err, errlen);
}

/* The templates from the schemas. The partitions are created from them,
 * ahead of their events (prepare_partitions) or by the bulk requests that
 * first write to them. */
int outlet_setup_indices(indexer *ix)
{
    pano_template *t;
    size_t nt;
    char err[512], *warnings = NULL;
    if (outlet_build_templates(ix, &t, &nt, &warnings, err, sizeof err) < 0) {
        pano_error("%s", err);
        return -1;
    }
    if (*warnings)
        pano_warn("schema clashes: %s", warnings);
    free(warnings);
    int rc = 0;
    for (size_t i = 0; i < nt && rc == 0; i++) {
        char path[300], *answer;
        snprintf(path, sizeof path, "/_index_template/%s", t[i].name);
        long st = indexer_es_answered(
            ix, pano_es_send(ix->es, "PUT", path, t[i].body, &answer, err, sizeof err), err);
        if (st != 200) {
            if (st)
                pano_warn("index template %s refused (%ld): %.300s", t[i].name, st, answer);
            rc = -1;
        }
        free(answer);
    }
    pano_templates_free(t, nt);
    if (rc == 0) {
        pano_info("index templates installed (%zu)", nt);
        ix->indices_ready = true;
    }
    return rc;
}

/* ---- deltas -------------------------------------------------------------------- */

/* One round of lookups for batch b, on its own client (ix->es may be busy
 * with the summaries of the batch before, in their thread): the samples
 * made visible first (once a batch), so that a search finds every sample
 * stored before. */
static int lookup_round(indexer *ix, batch *b, const pano_buf *body, bool *refreshed)
{
    char err[512], path[600], *answer = NULL;
    long st;
    if (!*refreshed) {
        snprintf(path, sizeof path,
                 "/%ssamples-*,%skickstart/_refresh?ignore_unavailable=true&allow_no_indices=true",
                 ix->prefix, ix->prefix);
        st = indexer_es_answered(ix, pano_es_send(b->es, "POST", path, NULL, &answer, err,
                                                  sizeof err), err);
        if (st != 200) {
            if (st)
                pano_warn("refreshing the samples before a lookup: %ld %.300s", st, answer);
            free(answer);
            return -1;
        }
        free(answer);
        *refreshed = true;
    }
    st = indexer_es_answered(
        ix, pano_es_send(b->es, "POST", "/_msearch", body->data, &answer, err, sizeof err), err);
    int rc = -1;
    if (st == 200 && deltas_read(ix->deltas, answer, strlen(answer), err, sizeof err) == 0)
        rc = 0;
    else if (st == 200)
        pano_warn("looking runs up: %s", err);
    else if (st)
        pano_warn("looking runs up: %ld %.300s", st, answer);
    free(answer);
    return rc;
}

bool outlet_prepare(indexer *ix, batch *b)
{
    if (b->prepared)
        return true;
    b->sealed = true; /* its deltas are made for the messages it holds now */
    if (!ix->deltas) {
        b->prepared = true;
        return true;
    }
    pano_run_event **events = pano_calloc(b->count ? b->count : 1, sizeof *events);
    size_t n = 0;
    for (size_t i = 0; i < b->count; i++)
        if (b->items[i].run && !b->items[i].rejected)
            events[n++] = b->items[i].run;
    deltas_begin(ix->deltas, events, n);
    bool refreshed = false;
    int rc = 0;
    pano_buf body = {0};
    while (rc == 0) {
        pano_buf_clear(&body);
        if (deltas_plan(ix->deltas, &body) == 0)
            break;
        rc = lookup_round(ix, b, &body, &refreshed);
    }
    pano_buf_free(&body);
    free(events);
    if (rc < 0)
        return false;
    size_t *after = pano_calloc(b->count ? b->count : 1, sizeof *after), nc = 0;
    pano_bulk_doc *closings = pano_calloc(b->count ? b->count : 1, sizeof *closings);
    for (size_t i = 0; i < b->count; i++) {
        batch_item *it = &b->items[i];
        if (!it->run || it->rejected)
            continue;
        pano_run_change ch;
        deltas_apply(ix->deltas, it->run, it->doc.doc, it->doc.doc_len,
                     it->msg->payload ? it->msg->payload : "", it->msg->len, &ch);
        b->ordered |= ch.late;
        if (ch.doc) {
            pano_bulk_doc_free(&it->doc);
            it->doc.doc = ch.doc;
            it->doc.doc_len = strlen(ch.doc);
        }
        char reason[256];
        /* (one past its samples' retention is not written, as they are not) */
        if (ch.closing && pano_bulk_doc_prepare(ch.closing, strlen(ch.closing), &ix->layout,
                                                pano_now(), &closings[nc], reason,
                                                sizeof reason) == PANO_BULK_DOC_OK)
            after[nc++] = i;
        else if (ch.closing)
            pano_bulk_doc_free(&closings[nc]);
        free(ch.closing);
    }
    batch_insert_closings(b, after, closings, nc);
    free(after);
    free(closings);
    b->prepared = true;
    return true;
}

/* ---- bulk requests ----------------------------------------------------------- */

static void *http_run(void *arg)
{
    batch *b = arg;
    bulk_attempt *a = &b->attempt;
    pano_es_request_many(b->es, a->calls, a->k);
    a->answered = pano_monotonic();
    atomic_store(&a->done, true);
    return NULL;
}

/* An attempt is up to pano.indexer.concurrency bulk requests at once
 * (consecutive slices, so Elasticsearch works on them in parallel). */
bool outlet_start(indexer *ix, batch *b, bool threaded)
{
    bulk_attempt *a = &b->attempt;
    size_t n = 0;
    a->order = pano_calloc(b->count ? b->count : 1, sizeof *a->order);
    for (size_t i = 0; i < b->count; i++)
        if (!b->items[i].settled)
            a->order[n++] = i;
    if (n == 0) {
        free(a->order);
        a->order = NULL;
        return false;
    }
    size_t k = (n + MIN_SLICE - 1) / MIN_SLICE;
    if (k > ix->concurrency)
        k = ix->concurrency;
    if (b->ordered)
        k = 1; /* items in order: one shard stores its items in that order */
    a->k = k;
    a->calls = pano_calloc(k, sizeof *a->calls);
    a->first = pano_calloc(k + 1, sizeof *a->first);
    if (b->nbodies < k) {
        b->bodies = pano_reallocarray(b->bodies, k, sizeof *b->bodies);
        memset(b->bodies + b->nbodies, 0, (k - b->nbodies) * sizeof *b->bodies);
        b->nbodies = k;
    }
    for (size_t j = 0; j < k; j++) {
        a->first[j] = n * j / k;
        a->first[j + 1] = n * (j + 1) / k;
        pano_buf *body = &b->bodies[j];
        pano_buf_clear(body);
        for (size_t q = a->first[j]; q < a->first[j + 1]; q++)
            pano_bulk_append(body, &b->items[a->order[q]].doc);
        a->calls[j] = (pano_es_call){.method = "POST", .path = BULK_PATH, .body = body->data,
                                     .len = body->len};
    }
    a->started = pano_monotonic();
    if (!b->sent) {
        b->sent = a->started;
        b->sent_date = pano_now();
    }
    atomic_init(&a->done, false);
    a->threaded = false;
    if (threaded)
        a->threaded = pano_thread_start(&a->thread, http_run, b);
    if (!a->threaded)
        http_run(b);
    b->in_flight = true;
    return true;
}

/* Apply one bulk response to its items. */
static void apply_results(indexer *ix, batch *b, const size_t *order, size_t n,
                          const pano_bulk_result *results)
{
    for (size_t k = 0; k < n; k++) {
        batch_item *it = &b->items[order[k]];
        it->status = results[k].status;
        batch_verdict v = batch_verdict_of(it, &results[k]);
        switch (v) {
        case BATCH_INDEXED:
        case BATCH_UNASSIGNED: /* indexed in the fallback index */
        case BATCH_DUPLICATE:
            /* a closing sample is not an event: counted apart */
            ix->n.closings += it->closing;
            ix->n.indexed += !it->closing && v != BATCH_DUPLICATE;
            ix->n.unassigned += v == BATCH_UNASSIGNED;
            ix->n.duplicates += !it->closing && v == BATCH_DUPLICATE;
            it->settled = true;
            break;
        case BATCH_DEAD:
            ix->n.dead++;
            it->settled = true;
            break;
        case BATCH_RETRY:
            ix->n.retries++;
            break;
        case BATCH_REFUSED:
            /* The dead-letter index refused it too: a deployment problem;
             * keep retrying loudly rather than lose it. */
            pano_error("the dead-letter index refused a document: %s", results[k].reason);
            break;
        case BATCH_DEAD_LETTER:
            snprintf(it->reason, sizeof it->reason, "%s", results[k].reason);
            batch_make_dead_letter(it, &ix->dead_letters, pano_now());
            break;
        }
    }
}

bool outlet_finish(indexer *ix, batch *b)
{
    bulk_attempt *a = &b->attempt;
    if (a->threaded)
        pthread_join(a->thread, NULL);
    a->threaded = false;
    b->in_flight = false;
    /* a batch sent ahead may have had its answers long before they are
     * read: the time is the requests' own */
    ix->n.bulk_seconds += a->answered - a->started;
    b->answered = a->answered;
    ix->n.bulk_requests += a->k;
    bool answered = true;
    for (size_t j = 0; j < a->k; j++) {
        pano_es_call *c = &a->calls[j];
        size_t m = a->first[j + 1] - a->first[j];
        bool ok = false;
        long status = indexer_es_answered(ix, c->rc < 0 ? 0 : c->resp.status, c->err);
        if (status && status != 200)
            pano_warn("bulk request answered %ld: %.300s", status, c->resp.body);
        else if (status == 200) {
            pano_bulk_result *results = pano_calloc(m, sizeof *results);
            if (pano_bulk_all_created(c->resp.body, c->resp.len)) {
                /* The common case, without reading every item. */
                for (size_t q = 0; q < m; q++)
                    results[q] = (pano_bulk_result){.outcome = PANO_BULK_DONE, .status = 201};
                apply_results(ix, b, a->order + a->first[j], m, results);
                ok = true;
            } else {
                char err[512];
                if (pano_bulk_read_response(c->resp.body, c->resp.len, m, results, err,
                                            sizeof err) < 0)
                    pano_warn("%s", err);
                else {
                    apply_results(ix, b, a->order + a->first[j], m, results);
                    ok = true;
                }
            }
            free(results);
        }
        if (!ok) {
            ix->n.bulk_failures++;
            answered = false;
        }
        if (c->rc == 0)
            pano_es_response_free(&c->resp);
    }
    /* Partitions revoked while the requests ran: their messages leave the
     * batch now, settled or not, before any offset is stored. */
    ix->n.dropped_revoked += batch_drop_deferred(b);
    free(a->first);
    free(a->calls);
    free(a->order);
    a->first = a->order = NULL;
    a->calls = NULL;
    a->k = 0;
    return answered;
}

void outlet_land(indexer *ix, batch *b)
{
    if (b->in_flight)
        outlet_finish(ix, b);
}

/* ---- summaries ----------------------------------------------------------------- */

/* Summary documents a bulk request holds at least, of up to
 * pano.indexer.concurrency requests at once. */
#define SUMMARY_SLICE 500
#define MGET_PATH "/_mget?filter_path=docs._id,docs.found,docs._seq_no,docs._primary_term,docs._source"
/* The version each write made comes back too: the document as written is
 * kept with it (summaries.h). */
#define SUMMARY_BULK_PATH                                                                      \
    "/_bulk?filter_path=items.*.status,items.*.error.type,items.*.error.reason,items.*._seq_no,"  \
    "items.*._primary_term"

/* One request; its answer is the caller's when the status is 200, else
 * logged and freed. */
static bool summary_request(summary_call *c, const char *path, const pano_buf *body,
                            pano_es_response *resp)
{
    indexer *ix = c->ix;
    double t0 = pano_monotonic();
    int rc = pano_es_request(ix->es, "POST", path, body->data, body->len, resp, c->err,
                             sizeof c->err);
    ix->n.summary_seconds += pano_monotonic() - t0;
    ix->n.summary_requests++;
    c->status = rc < 0 ? 0 : resp->status;
    if (c->status && c->status != 200)
        pano_warn("summaries: %s answered %ld: %.300s", path, c->status, resp->body);
    if (c->status == 200)
        return true;
    if (rc == 0)
        pano_es_response_free(resp);
    return false;
}

static bool summaries_round(summary_call *c)
{
    summary_round *r = c->r;
    pano_buf body = {0};
    pano_es_response resp = {0};
    char err[512];
    if (summaries_to_read(r)) {
        summaries_read_body(r, &body);
        if (!summary_request(c, MGET_PATH, &body, &resp)) {
            pano_buf_free(&body);
            return false;
        }
        int rc = summaries_apply_read(r, resp.body, resp.len, err, sizeof err);
        pano_es_response_free(&resp);
        if (rc < 0) {
            pano_warn("summaries: %s", err);
            pano_buf_free(&body);
            return false;
        }
        pano_buf_clear(&body);
    }
    size_t *order = pano_calloc(r->n ? r->n : 1, sizeof *order);
    size_t n = summaries_write_body(r, &body, order);
    /* consecutive slices of the body, sent at once as the events' are */
    size_t k = (n + SUMMARY_SLICE - 1) / SUMMARY_SLICE;
    if (k > c->ix->concurrency)
        k = c->ix->concurrency;
    pano_es_call *calls = pano_calloc(k ? k : 1, sizeof *calls);
    for (size_t j = 0; j < k; j++) {
        size_t from = r->docs[order[n * j / k]].line;
        size_t to = j + 1 < k ? r->docs[order[n * (j + 1) / k]].line : body.len;
        calls[j] = (pano_es_call){.method = "POST", .path = SUMMARY_BULK_PATH,
                                  .body = body.data + from, .len = to - from};
    }
    double t0 = pano_monotonic();
    if (k)
        pano_es_request_many(c->ix->es, calls, k);
    c->ix->n.summary_seconds += pano_monotonic() - t0;
    c->ix->n.summary_requests += k;
    bool ok = true;
    for (size_t j = 0; j < k; j++) {
        pano_es_call *call = &calls[j];
        size_t first = n * j / k, m = n * (j + 1) / k - first;
        long status = call->rc < 0 ? 0 : call->resp.status;
        if (status != 200) {
            c->status = status;
            snprintf(c->err, sizeof c->err, "%s", call->rc < 0 ? call->err : "");
            if (status)
                pano_warn("summaries: bulk request answered %ld: %.300s", status, call->resp.body);
            ok = false;
        } else {
            pano_bulk_result *results = pano_calloc(m, sizeof *results);
            if (pano_bulk_read_response(call->resp.body, call->resp.len, m, results, err,
                                        sizeof err) < 0) {
                pano_warn("summaries: %s", err);
                ok = false;
            } else
                summaries_apply_write(r, &body, order + first, m, results);
            free(results);
        }
        if (call->rc == 0)
            pano_es_response_free(&call->resp);
    }
    free(calls);
    free(order);
    pano_buf_free(&body);
    return ok;
}

void outlet_summaries(summary_call *c)
{
    c->status = 200;
    c->err[0] = '\0';
    if (c->gather)
        summaries_gather(c->r, c->gather);
    c->answered = summaries_round(c);
    atomic_store(&c->done, true);
}
