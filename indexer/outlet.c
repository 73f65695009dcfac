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

typedef struct {
    pano_es *es;
    pano_es_call *calls;
    size_t n;
    atomic_bool done;
} http_job;

static void *http_run(void *arg)
{
    http_job *job = arg;
    pano_es_request_many(job->es, job->calls, job->n);
    atomic_store(&job->done, true);
    return NULL;
}

/* Run the requests; when prefetching, in a thread while the next batch is
 * gathered from Kafka (Elasticsearch is never idle waiting for us). */
static void perform(indexer *ix, pano_es_call *calls, size_t n, bool with_prefetch)
{
    http_job job = {.es = ix->es, .calls = calls, .n = n};
    atomic_init(&job.done, false);
    pthread_t thread;
    bool threaded = false;
    if (with_prefetch) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        threaded = pthread_create(&thread, NULL, http_run, &job) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (!threaded) {
        http_run(&job);
        return;
    }
    ix->in_flight = true;
    intake_prefetch(ix, &job.done);
    pthread_join(thread, NULL);
    ix->in_flight = false;
}

/* Apply one bulk response to its items. */
static void apply_results(indexer *ix, const size_t *order, size_t n,
                          const pano_bulk_result *results)
{
    for (size_t k = 0; k < n; k++) {
        batch_item *it = &ix->items[order[k]];
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

/* Send the items not settled yet: in up to pano.indexer.concurrency bulk
 * requests at once (consecutive slices of the batch, so Elasticsearch works
 * on them in parallel). Returns false if some request got no usable answer
 * (Elasticsearch down or overloaded as a whole). */
static bool send_pending(indexer *ix, bool with_prefetch)
{
    size_t *order = pano_calloc(ix->count ? ix->count : 1, sizeof *order), n = 0;
    for (size_t i = 0; i < ix->count; i++)
        if (!ix->items[i].settled)
            order[n++] = i;
    if (n == 0) {
        free(order);
        return true;
    }
    size_t k = (n + MIN_SLICE - 1) / MIN_SLICE;
    if (k > ix->concurrency)
        k = ix->concurrency;
    pano_es_call *calls = pano_calloc(k, sizeof *calls);
    size_t *first = pano_calloc(k + 1, sizeof *first);
    if (ix->nbodies < k) {
        ix->bodies = pano_reallocarray(ix->bodies, k, sizeof *ix->bodies);
        memset(ix->bodies + ix->nbodies, 0, (k - ix->nbodies) * sizeof *ix->bodies);
        ix->nbodies = k;
    }
    for (size_t j = 0; j < k; j++) {
        first[j] = n * j / k;
        first[j + 1] = n * (j + 1) / k;
        pano_buf *b = &ix->bodies[j];
        pano_buf_clear(b);
        for (size_t q = first[j]; q < first[j + 1]; q++)
            pano_bulk_append(b, &ix->items[order[q]].doc);
        calls[j] = (pano_es_call){.method = "POST", .path = BULK_PATH, .body = b->data, .len = b->len};
    }
    double t0 = pano_now();
    perform(ix, calls, k, with_prefetch);
    ix->n.bulk_seconds += pano_now() - t0;
    ix->n.bulk_requests += k;
    bool answered = true;
    for (size_t j = 0; j < k; j++) {
        pano_es_call *c = &calls[j];
        size_t m = first[j + 1] - first[j];
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
                apply_results(ix, order + first[j], m, results);
                ok = true;
            } else {
                char err[512];
                if (pano_bulk_read_response(c->resp.body, c->resp.len, m, results, err,
                                            sizeof err) < 0)
                    pano_warn("%s", err);
                else {
                    apply_results(ix, order + first[j], m, results);
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
    if (ix->deferred) {
        /* Partitions revoked while the requests ran: their messages leave
         * the batch now, settled or not, before any offset is stored. */
        intake_drop_items(ix, ix->items, &ix->count, ix->deferred);
        rd_kafka_topic_partition_list_destroy(ix->deferred);
        ix->deferred = NULL;
    }
    free(first);
    free(calls);
    free(order);
    return answered;
}

static bool all_settled(const indexer *ix)
{
    for (size_t i = 0; i < ix->count; i++)
        if (!ix->items[i].settled)
            return false;
    return true;
}

/* Send until every item is settled, backing off between attempts (polling
 * the consumer with the partitions paused). After a shutdown request, give
 * up when pano.indexer.drain_timeout has passed. */
void outlet_settle_batch(indexer *ix)
{
    double backoff = 0.1, deadline = indexer_stopping ? pano_now() + ix->drain_timeout : 0;
    for (bool first = true;; first = false) {
        bool answered = ix->count == 0 ||
                        ((ix->indices_ready || outlet_setup_indices(ix) == 0) &&
                         send_pending(ix, first && !indexer_stopping));
        if (all_settled(ix))
            break;
        if (indexer_stopping && !deadline)
            deadline = pano_now() + ix->drain_timeout;
        if (deadline && pano_now() >= deadline) {
            size_t left = 0;
            for (size_t i = 0; i < ix->count; i++)
                left += !ix->items[i].settled;
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
 * with every earlier item of that partition settled. Then free the batch. */
void outlet_finish_batch(indexer *ix)
{
    rd_kafka_topic_partition_list_t *seen = rd_kafka_topic_partition_list_new(16);
    for (size_t i = 0; i < ix->count; i++) {
        batch_item *it = &ix->items[i];
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
    for (size_t i = 0; i < ix->count; i++) {
        pano_bulk_doc_free(&ix->items[i].doc);
        rd_kafka_message_destroy(ix->items[i].msg);
    }
    ix->count = 0;
}


/* Record where the time of the batch's indexed events went (a replayed or
 * late event's to_kafka is its age: the histogram shows it as such). */
void outlet_observe_stages(indexer *ix, double sent, double settled)
{
    for (size_t i = 0; i < ix->count; i++) {
        const batch_item *it = &ix->items[i];
        int64_t produced_ms = rd_kafka_message_timestamp(it->msg, NULL);
        if (!it->settled || it->rejected || produced_ms <= 0 || it->doc.ts <= 0)
            continue;
        double produced = (double)produced_ms / 1000;
        pano_histogram_observe(&ix->stages[STAGE_TO_KAFKA], produced - it->doc.ts);
        pano_histogram_observe(&ix->stages[STAGE_TO_BULK], sent - produced);
        pano_histogram_observe(&ix->stages[STAGE_BULK], settled - sent);
    }
}
