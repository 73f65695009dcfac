/*
 * outlet.c - pano-indexer's Elasticsearch side: the templates, bulk
 * requests in flight, per-item retries, settling a batch and the offsets it
 * allows (indexer.h).
 */
#include "indexer.h"

#include "buf.h"
#include "event.h"
#include "json.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Elasticsearch requests ------------------------------------------------ */

/* A request whose answer is only checked for its status. Returns the HTTP
 * status, or 0 when none came; the body is in *answer when wanted. */
long outlet_es_call(indexer *ix, const char *method, const char *path, const char *body,
                    char **answer)
{
    pano_es_response resp;
    char err[512];
    if (answer)
        *answer = NULL;
    if (pano_es_request(ix->es, method, path, body, body ? strlen(body) : 0, &resp, err,
                        sizeof err) < 0) {
        if (ix->es_up)
            pano_warn("%s", err);
        ix->es_up = false;
        return 0;
    }
    ix->es_up = true;
    long status = resp.status;
    if (answer)
        *answer = resp.body;
    else
        pano_es_response_free(&resp);
    return status;
}

/* GET path and parse the answer: NULL unless it came with status 200 and is
 * JSON (*status: the HTTP status, 0 when none came). */
pano_json *outlet_es_get_json(indexer *ix, const char *path, long *status)
{
    char *answer, why[200];
    *status = outlet_es_call(ix, "GET", path, NULL, &answer);
    pano_json *j = *status == 200 && answer ? pano_json_parse(answer, strlen(answer),
                                                              PANO_JSON_DEFAULT_DEPTH, why,
                                                              sizeof why)
                                            : NULL;
    free(answer);
    return j;
}

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
        long st = outlet_es_call(ix, "PUT", path, t[i].body, &answer);
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

/* ---- bulk requests ----------------------------------------------------------- */

static void *http_run(void *arg)
{
    batch *b = arg;
    bulk_attempt *a = &b->attempt;
    pano_es_request_many(b->es, a->calls, a->k);
    a->answered = pano_now();
    atomic_store(&a->done, true);
    return NULL;
}

/* Start an attempt at the unsettled items of b: up to
 * pano.indexer.concurrency bulk requests at once (consecutive slices, so
 * Elasticsearch works on them in parallel), in an HTTP thread when
 * threaded, else before returning. False when nothing is left to send. */
static bool attempt_start(indexer *ix, batch *b, bool threaded)
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
    a->started = pano_now();
    if (!b->sent)
        b->sent = a->started;
    atomic_init(&a->done, false);
    a->threaded = false;
    if (threaded) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        a->threaded = pthread_create(&a->thread, NULL, http_run, b) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
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
        switch (results[k].outcome) {
        case PANO_BULK_DONE:
            it->settled = true;
            if (it->rejected)
                ix->n.dead++;
            else if (results[k].status == 409)
                ix->n.duplicates++;
            else {
                ix->n.indexed++;
                if (!it->doc.wf_uuid[0])
                    ix->n.unassigned++;
            }
            break;
        case PANO_BULK_RETRY:
            ix->n.retries++;
            break;
        case PANO_BULK_REJECTED:
            if (it->rejected) {
                /* The dead-letter index refused it too: a deployment
                 * problem; keep retrying loudly rather than lose it. */
                pano_error("the dead-letter index refused a document: %s", results[k].reason);
                break;
            }
            snprintf(it->reason, sizeof it->reason, "%s", results[k].reason);
            intake_make_dead_letter(ix, it);
            break;
        }
    }
}

/* Wait for the attempt's answers (if in a thread) and apply them. Returns
 * false if some request got no usable answer (Elasticsearch down or
 * overloaded as a whole). */
static bool attempt_finish(indexer *ix, batch *b)
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
        if (c->rc < 0) {
            if (ix->es_up)
                pano_warn("%s", c->err);
            ix->es_up = false;
        } else if (c->resp.status != 200) {
            ix->es_up = true;
            pano_warn("bulk request answered %ld: %.300s", c->resp.status, c->resp.body);
        } else {
            ix->es_up = true;
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
    if (b->deferred) {
        /* Partitions revoked while the requests ran: their messages leave
         * the batch now, settled or not, before any offset is stored. */
        intake_drop_items(ix, b, b->deferred);
        rd_kafka_topic_partition_list_destroy(b->deferred);
        b->deferred = NULL;
    }
    free(a->first);
    free(a->calls);
    free(a->order);
    a->first = a->order = NULL;
    a->calls = NULL;
    a->k = 0;
    return answered;
}

void outlet_send_ahead(indexer *ix)
{
    batch *b = ix->next;
    b->sealed = attempt_start(ix, b, true);
    ix->n.sent_ahead += b->sealed;
}

void outlet_land(indexer *ix, batch *b)
{
    if (b->in_flight)
        attempt_finish(ix, b);
}

/* Send the current batch's unsettled items and apply the answers; on the
 * first attempt the next batch is gathered (and sent ahead) meanwhile.
 * When the batch was sent ahead, its first attempt is already running. */
static bool send_pending(indexer *ix, bool first)
{
    batch *b = ix->cur;
    if (!b->in_flight && !attempt_start(ix, b, first))
        return true;
    if (b->attempt.threaded && first)
        intake_prefetch(ix, &b->attempt.done);
    return attempt_finish(ix, b);
}

static bool all_settled(const batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        if (!b->items[i].settled)
            return false;
    return true;
}

/* Send until every item is settled, backing off between attempts (polling
 * the consumer with the partitions paused). After a shutdown request, give
 * up when pano.indexer.drain_timeout has passed. */
void outlet_settle_batch(indexer *ix)
{
    batch *b = ix->cur;
    double backoff = 0.1, deadline = indexer_stopping ? pano_now() + ix->drain_timeout : 0;
    for (bool first = true;; first = false) {
        bool answered = b->count == 0 ||
                        ((b->in_flight || ix->indices_ready || outlet_setup_indices(ix) == 0) &&
                         send_pending(ix, first && !indexer_stopping));
        if (all_settled(b))
            break;
        if (indexer_stopping && !deadline)
            deadline = pano_now() + ix->drain_timeout;
        if (deadline && pano_now() >= deadline) {
            size_t left = 0;
            for (size_t i = 0; i < b->count; i++)
                left += !b->items[i].settled;
            pano_warn("giving up on %zu unsettled messages at shutdown (they will be replayed)",
                      left);
            break;
        }
        double wait = backoff * indexer_jitter();
        if (!answered) {
            intake_set_paused(ix, true);
            pano_info("Elasticsearch unavailable; retrying in %.1f s", wait);
        } else
            pano_debug("some documents must be retried; retrying in %.1f s", wait);
        if (pano_now() - ix->last_publish >= 1)
            indexer_publish_status(ix);
        intake_wait_polling(ix, wait, deadline);
        backoff = backoff * 2 > ix->max_backoff ? ix->max_backoff : backoff * 2;
    }
    intake_set_paused(ix, false);
}

/* Store the offsets the batch allows: per partition, up to the last item
 * with every earlier item of that partition settled. Then empty the batch. */
void outlet_finish_batch(indexer *ix)
{
    batch *b = ix->cur;
    rd_kafka_topic_partition_list_t *seen = rd_kafka_topic_partition_list_new(16);
    for (size_t i = 0; i < b->count; i++) {
        batch_item *it = &b->items[i];
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
        else
            p->opaque = p; /* blocked */
    }
    rd_kafka_topic_partition_list_t *store = rd_kafka_topic_partition_list_new(seen->cnt);
    for (int i = 0; i < seen->cnt; i++)
        if (seen->elems[i].offset >= 0)
            rd_kafka_topic_partition_list_add(store, seen->elems[i].topic,
                                              seen->elems[i].partition)
                ->offset = seen->elems[i].offset;
    if (store->cnt > 0) {
        rd_kafka_resp_err_t e = rd_kafka_offsets_store(ix->consumer, store);
        for (int i = 0; i < store->cnt; i++) {
            rd_kafka_resp_err_t pe = store->elems[i].err;
            if (pe)
                pano_warn("cannot store offset %lld of %s [%d]: %s (it will be replayed)",
                          (long long)store->elems[i].offset, store->elems[i].topic,
                          (int)store->elems[i].partition, rd_kafka_err2str(pe));
            else
                ix->n.offsets_stored++;
        }
        if (e && e != RD_KAFKA_RESP_ERR__INVALID_ARG)
            pano_warn("cannot store offsets: %s", rd_kafka_err2str(e));
    }
    rd_kafka_topic_partition_list_destroy(store);
    rd_kafka_topic_partition_list_destroy(seen);
    for (size_t i = 0; i < b->count; i++) {
        pano_bulk_doc_free(&b->items[i].doc);
        rd_kafka_message_destroy(b->items[i].msg);
    }
    intake_reset_batch(b);
}


/* Record where the time of the batch's indexed events went (a replayed or
 * late event's to_kafka is its age: the histogram shows it as such). */
void outlet_observe_stages(indexer *ix)
{
    const batch *b = ix->cur;
    double sent = b->sent, settled = b->answered;
    for (size_t i = 0; i < b->count; i++) {
        const batch_item *it = &b->items[i];
        int64_t produced_ms = rd_kafka_message_timestamp(it->msg, NULL);
        if (!it->settled || it->rejected || produced_ms <= 0 || it->doc.ts <= 0)
            continue;
        double produced = (double)produced_ms / 1000;
        pano_histogram_observe(&ix->stages[STAGE_TO_KAFKA], produced - it->doc.ts);
        pano_histogram_observe(&ix->stages[STAGE_TO_BULK], sent - produced);
        pano_histogram_observe(&ix->stages[STAGE_BULK], settled - sent);
    }
}
