/*
 * pano-indexer - Kafka to Elasticsearch, keyed by workflow.
 *
 * Consumes the family topics in a consumer group and writes batches with the
 * _bulk API (bulk.h): `create` with _id = event_id, so a replay is a 409 and
 * counts as done. A batch is settled when every item is done: indexed,
 * already there (409), or written to the dead-letter index with its reason.
 * Items that failed for a passing reason (429, 5xx, Elasticsearch down) are
 * retried alone, in their order, with jittered exponential backoff.
 *
 * Offsets: enable.auto.offset.store=false; after a batch, the offset of each
 * partition is stored up to its last item that has every earlier item of
 * the partition settled (batches go one after the other, so earlier batches
 * are settled already), and auto-commit commits what was stored. A crash
 * replays at most the unsettled batch, absorbed by the create/409 rule.
 *
 * While Elasticsearch is unreachable the indexer pauses its partitions and
 * keeps polling the consumer, so it stays in the group (max.poll.interval.ms)
 * and sees rebalances: items of partitions taken away are dropped from the
 * batch in hand unsettled (their new owner replays them).
 *
 * Index names, partitions and retention: partition.h, bulk.h; the templates:
 * template.h; all of it for operators: docs/indexer.md.
 *
 * Messages the bridge dead-lettered (the dead-letter topic) are written to
 * the dead-letter index too, with the reason and routing key it gave.
 */
#include "buf.h"
#include "bulk.h"
#include "cli.h"
#include "es.h"
#include "event.h"
#include "json.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"
#include "partition.h"
#include "retention.h"
#include "status.h"
#include "template.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* A batch is split into concurrent bulk requests of at least this many
 * documents. */
#define MIN_SLICE 1000

/* Only what the outcome needs comes back: much less to read. */
#define BULK_PATH "/_bulk?filter_path=errors,items.*.status,items.*.error.type,items.*.error.reason"

typedef struct {
    rd_kafka_message_t *msg;
    pano_bulk_doc doc;
    bool settled;
    bool rejected; /* doc is now its dead-letter document */
    int status;    /* last HTTP status of the item */
    char reason[300];
} batch_item;

typedef struct {
    uint64_t consumed, indexed, duplicates, dead, unassigned, retries;
    uint64_t bulk_requests, bulk_failures, rebalances, dropped_revoked;
    uint64_t bridge_dead, expired, indices_deleted;
    uint64_t offsets_stored;
    double bulk_seconds;
} counters;

/* Where an event's time goes before it is searchable, per indexed document:
 * from its ts until the bridge produced it to Kafka (publisher, RabbitMQ,
 * bridge), from then until its bulk request left (Kafka, polling, batching,
 * the batch ahead), and the bulk request until settled. Refresh follows. */
enum { STAGE_TO_KAFKA, STAGE_TO_BULK, STAGE_BULK, N_STAGES };
static const char *const stage_names[N_STAGES] = {"to_kafka", "to_bulk", "bulk"};

typedef struct {
    pano_config *cfg;
    rd_kafka_t *consumer;
    pano_es *es;
    pano_bulk_layout layout;
    pano_stream_policy policies[PANO_N_STREAMS];
    const char *prefix;
    char fallback_index[256], dead_letter_index[256];
    char dead_letter_topic[256];
    double retention_interval, last_retention;
    size_t max_docs, max_bytes;
    double linger, max_backoff, drain_timeout, stats_interval;

    batch_item *items; /* the batch being settled */
    size_t count;
    /* the next batch, gathered while the current one is in flight */
    batch_item *next;
    size_t nnext, next_bytes;
    double next_first; /* when its first message came */
    bool in_flight;    /* bulk requests running in the HTTP thread */
    rd_kafka_topic_partition_list_t *deferred; /* revoked while in flight */
    /* messages polled while a batch was being settled, for the next one */
    rd_kafka_message_t **pending;
    size_t npending, cap_pending;
    bool paused;
    bool indices_ready;
    size_t concurrency;
    pano_buf *bodies; /* one per concurrent bulk request */
    size_t nbodies;
    pano_status *status;     /* /metrics over HTTP (pano.indexer.status_port) */
    const char *status_file; /* pano.indexer.status_file */
    double started, last_publish;
    bool es_up;
    bool fatal;       /* the consumer failed for good (fenced) */
    bool cooperative; /* the assignment strategy configured is cooperative */
    double last_prepared; /* when the coming partitions were last created */
    int replicas;         /* pano.indexer.replicas, or PANO_REPLICAS_AUTO */
    counters n;
    pano_histogram stages[N_STAGES];
} indexer;

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    if (stopping) {
        /* A second request: stop now (offsets stored so far are kept by
         * Kafka only if committed; the rest is replayed). */
        static const char msg[] = "pano-indexer: second signal, exiting now\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(1);
    }
    stopping = 1;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "pano-indexer: shutdown took too long, exiting\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-indexer [options]\n"
            "Consume pano events from Kafka and index them in Elasticsearch.\n"
            "\n"
            "  -b, --brokers LIST     Kafka bootstrap servers (pano.kafka.brokers)\n"
            "  -e, --es-url URL       Elasticsearch URL (pano.es.url)\n"
            "  -g, --group NAME       consumer group (pano.indexer.group)\n"
            "      --print-templates  print the index templates generated from the\n"
            "                         schemas as one JSON object and exit\n"
            "      --retention        delete the indices past their stream's retention\n"
            "                         (pano.indexer.retention) once and exit; the\n"
            "                         daemon does it every pano.indexer.retention_interval\n"
            "      --remove-aliases   remove the per-workflow aliases <prefix>wf-<uuid> of\n"
            "                         earlier versions (indices stay) and exit\n"
            "      --dry-run          with --retention or --remove-aliases: list what\n"
            "                         would go, change nothing\n"
            "\n"
            "SIGTERM or SIGINT: finish the batch in hand (at most\n"
            "pano.indexer.drain_timeout seconds), commit, exit 0.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

/* Random factor in [0.5, 1.5) so that indexers do not retry in step. */
static double jitter(void)
{
    unsigned short r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (unsigned short)getpid();
    return 0.5 + r / 65536.0;
}

/* ---- status ---------------------------------------------------------------- */

static void publish_status(indexer *ix)
{
    if (!ix->status && !ix->status_file)
        return;
    const counters *n = &ix->n;
    pano_buf t = {0};
#define COUNTER(name, help, value)                                                             \
    pano_buf_appendf(&t, "# HELP pano_indexer_" name " " help "\n# TYPE pano_indexer_" name    \
                         " counter\npano_indexer_" name " %llu\n",                            \
                     (unsigned long long)(value))
#define GAUGE(name, help, fmt, value)                                                          \
    pano_buf_appendf(&t, "# HELP pano_indexer_" name " " help "\n# TYPE pano_indexer_" name    \
                         " gauge\npano_indexer_" name " " fmt "\n",                           \
                     value)
    COUNTER("consumed_total", "Kafka messages consumed.", n->consumed);
    COUNTER("indexed_total", "Events indexed (created).", n->indexed);
    COUNTER("duplicates_total", "Events already indexed (409 on create, a replay).",
            n->duplicates);
    COUNTER("dead_lettered_total", "Messages written to the dead-letter index.", n->dead);
    COUNTER("bridge_dead_letters_total",
            "Of those, the bridge's dead letters (from the dead-letter topic).", n->bridge_dead);
    COUNTER("expired_total", "Events older than their stream's retention, dead-lettered.",
            n->expired);
    COUNTER("indices_deleted_total", "Indices deleted by retention.", n->indices_deleted);
    COUNTER("unassigned_total", "Events without a valid wf_uuid, in the fallback index.",
            n->unassigned);
    COUNTER("item_retries_total", "Bulk items retried (429, 5xx).", n->retries);
    COUNTER("bulk_requests_total", "Bulk requests sent.", n->bulk_requests);
    COUNTER("bulk_failures_total", "Bulk requests without a usable answer.", n->bulk_failures);
    COUNTER("rebalances_total", "Partition assignments and revocations.", n->rebalances);
    COUNTER("revoked_dropped_total", "Unsettled messages dropped because their partition was revoked.",
            n->dropped_revoked);
    COUNTER("offsets_stored_total", "Offset stores (one per partition and batch).",
            n->offsets_stored);
    GAUGE("bulk_seconds_total", "Time spent in bulk requests.", "%.3f", n->bulk_seconds);
    GAUGE("in_hand", "Messages held: the batch being settled and those polled meanwhile.", "%zu",
          ix->count + ix->nnext + ix->npending);
    GAUGE("elasticsearch_up", "1 when the last request to Elasticsearch was answered.", "%d",
          ix->es_up ? 1 : 0);
    GAUGE("paused", "1 while the partitions are paused (Elasticsearch unavailable).", "%d",
          ix->paused ? 1 : 0);
    GAUGE("uptime_seconds", "Seconds since start.", "%.0f", pano_now() - ix->started);
#undef COUNTER
#undef GAUGE
    pano_histogram_format(&t, "pano_indexer_stage_seconds",
                          "Time of an indexed event per stage: to_kafka (from its ts until the "
                          "bridge produced it), to_bulk (until its bulk request left), bulk "
                          "(until the request settled).",
                          "stage", stage_names, ix->stages, N_STAGES);
    if (ix->status)
        pano_status_publish(ix->status, t.data, t.len);
    char err[512];
    if (ix->status_file &&
        pano_status_write_file(ix->status_file, t.data, t.len, err, sizeof err) < 0)
        pano_warn("%s", err);
    pano_buf_free(&t);
    ix->last_publish = pano_now();
}

static void log_stats(const indexer *ix)
{
    const counters *n = &ix->n;
    pano_info("consumed %llu, indexed %llu, duplicates %llu, unassigned %llu, dead-lettered "
              "%llu, item retries %llu, bulk requests %llu (%llu failed)",
              (unsigned long long)n->consumed, (unsigned long long)n->indexed,
              (unsigned long long)n->duplicates, (unsigned long long)n->unassigned,
              (unsigned long long)n->dead, (unsigned long long)n->retries,
              (unsigned long long)n->bulk_requests, (unsigned long long)n->bulk_failures);
}

/* ---- Elasticsearch requests ------------------------------------------------ */

/* A request whose answer is only checked for its status. Returns the HTTP
 * status, or 0 when none came; the body is in *body when wanted. */
static long es_call(indexer *ix, const char *method, const char *path, const char *body,
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

/* The index templates for this configuration, from the embedded schemas. */
static int build_templates(const indexer *ix, pano_template **t, size_t *nt, char **warnings,
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
static int setup_indices(indexer *ix)
{
    pano_template *t;
    size_t nt;
    char err[512], *warnings = NULL;
    if (build_templates(ix, &t, &nt, &warnings, err, sizeof err) < 0) {
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
        long st = es_call(ix, "PUT", path, t[i].body, &answer);
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

/* ---- batches ------------------------------------------------------------ */

/* Dead letters keep this much of the original bytes; the size says how
 * much there was. */
#define DEAD_LETTER_EXCERPT (256 * 1024)

/* A header of a Kafka message as a string ("" when absent). */
static const char *header(const rd_kafka_message_t *m, const char *name, char *buf, size_t size)
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

static bool from_bridge(const indexer *ix, const rd_kafka_message_t *m)
{
    return strcmp(rd_kafka_topic_name(m->rkt), ix->dead_letter_topic) == 0;
}

/* Turn an item into its dead-letter document: the reason, where it came
 * from, the original bytes (an excerpt of large ones) and their size, in
 * the dead-letter partition of now. Its _id makes a replay harmless: the
 * topic, partition and offset of a message the indexer refused; for one the
 * bridge refused (and may dead-letter again after a crash), a hash of the
 * routing key and the bytes. */
static void make_dead_letter(indexer *ix, batch_item *it)
{
    rd_kafka_message_t *m = it->msg;
    const char *payload = m->payload ? m->payload : "";
    bool bridge = from_bridge(ix, m);
    static unsigned logged;
    if (!bridge && logged++ < 100)
        pano_info("dead letter from %s [%d] at %lld: %s%s", rd_kafka_topic_name(m->rkt),
                  (int)m->partition, (long long)m->offset, it->reason,
                  logged == 100 ? " (no more of these messages)" : "");
    double now = pano_now();
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
    long long size = (long long)m->len;
    bool truncated = m->len > DEAD_LETTER_EXCERPT;
    if (bridge) {
        pano_json_set_str(d, "routing_key", header(m, "routing_key", key, sizeof key));
        pano_json_set_str(d, "exchange", header(m, "exchange", value, sizeof value));
        size = atoll(header(m, "original_size", value, sizeof value));
        truncated |= strcmp(header(m, "truncated", value, sizeof value), "true") == 0;
    }
    pano_json_set_int(d, "original_size", size > 0 ? size : (long long)m->len);
    pano_json_set_bool(d, "truncated", truncated);
    size_t kept = m->len > DEAD_LETTER_EXCERPT ? DEAD_LETTER_EXCERPT : m->len;
    pano_json_set(d, "original", pano_json_string_len(payload, kept));
    pano_bulk_doc_free(&it->doc);
    pano_bulk_doc *dd = &it->doc;
    pano_bulk_partition(ix->dead_letter_index, ix->policies[PANO_STREAM_DEAD_LETTER].period, now,
                        dd->index, sizeof dd->index);
    if (bridge) {
        pano_buf both = {0};
        pano_buf_append_str(&both, key);
        pano_buf_append(&both, "\n", 1);
        pano_buf_append(&both, payload, m->len);
        pano_event_id_of(both.data, both.len, hash);
        pano_buf_free(&both);
        snprintf(dd->id, sizeof dd->id, "bridge-%s", hash);
    } else {
        pano_event_id_of(payload, m->len, hash);
        snprintf(dd->id, sizeof dd->id, "%.120s-%d-%lld-%.16s", rd_kafka_topic_name(m->rkt),
                 (int)m->partition, (long long)m->offset, hash);
    }
    dd->routing[0] = '\0';
    dd->doc = pano_json_serialize(d, &dd->doc_len);
    pano_json_free(d);
    it->rejected = true;
}

/* The workflow and event id of a message the bridge refused, when it still
 * says them: they make its dead letter findable with the workflow. */
static void bridge_record_ids(const rd_kafka_message_t *m, pano_bulk_doc *doc)
{
    char why[64];
    pano_json *ev = pano_json_parse(m->payload ? m->payload : "", m->len, PANO_JSON_DEFAULT_DEPTH,
                                    why, sizeof why);
    if (ev && ev->type == PANO_JSON_OBJECT) {
        if (!pano_wf_uuid_normalize(pano_json_get_str(ev, "wf_uuid"), doc->wf_uuid))
            doc->wf_uuid[0] = '\0';
        const char *id = pano_json_get_str(ev, "event_id");
        if (id && strlen(id) < sizeof doc->id && strlen(id) == pano_json_get(ev, "event_id")->u.string.len)
            snprintf(doc->id, sizeof doc->id, "%s", id);
    }
    pano_json_free(ev);
}

static void add_message_to(indexer *ix, batch_item *items, size_t *count,
                           rd_kafka_message_t *msg)
{
    batch_item *it = &items[(*count)++];
    memset(it, 0, sizeof *it);
    it->msg = msg;
    ix->n.consumed++;
    if (from_bridge(ix, msg)) {
        char reason[sizeof it->reason];
        snprintf(it->reason, sizeof it->reason, "%s",
                 *header(msg, "reason", reason, sizeof reason) ? reason : "refused by pano-bridge");
        bridge_record_ids(msg, &it->doc);
        ix->n.bridge_dead++;
        make_dead_letter(ix, it);
        return;
    }
    pano_bulk_doc_status st = pano_bulk_doc_prepare(msg->payload ? msg->payload : "", msg->len,
                                                    &ix->layout, pano_now(), &it->doc,
                                                    it->reason, sizeof it->reason);
    if (st == PANO_BULK_DOC_EXPIRED)
        ix->n.expired++;
    if (st != PANO_BULK_DOC_OK)
        make_dead_letter(ix, it);
}

static void add_message(indexer *ix, rd_kafka_message_t *msg)
{
    add_message_to(ix, ix->items, &ix->count, msg);
}

static void drop_message_list(rd_kafka_message_t **msgs, size_t *n,
                              const rd_kafka_topic_partition_list_t *parts, uint64_t *dropped)
{
    size_t keep = 0;
    for (size_t i = 0; i < *n; i++) {
        rd_kafka_message_t *m = msgs[i];
        if (!parts || rd_kafka_topic_partition_list_find(parts, rd_kafka_topic_name(m->rkt),
                                                         m->partition)) {
            rd_kafka_message_destroy(m);
            ++*dropped;
        } else
            msgs[keep++] = m;
    }
    *n = keep;
}

/* Forget the messages of revoked partitions (all when parts is NULL): they
 * are not settled, their offsets are not stored, the new owner replays
 * them. */
static void drop_items(indexer *ix, batch_item *items, size_t *count,
                       const rd_kafka_topic_partition_list_t *parts)
{
    size_t keep = 0;
    for (size_t i = 0; i < *count; i++) {
        batch_item *it = &items[i];
        if (!parts || rd_kafka_topic_partition_list_find(parts, rd_kafka_topic_name(it->msg->rkt),
                                                         it->msg->partition)) {
            pano_bulk_doc_free(&it->doc);
            rd_kafka_message_destroy(it->msg);
            ix->n.dropped_revoked++;
        } else
            items[keep++] = *it;
    }
    *count = keep;
}

/* While bulk requests are in flight, the batch being settled is left alone
 * and its messages of revoked partitions are dropped once the answers are
 * in (before any offset is stored). */
static void drop_partitions(indexer *ix, const rd_kafka_topic_partition_list_t *parts)
{
    if (ix->in_flight && parts) {
        if (!ix->deferred)
            ix->deferred = rd_kafka_topic_partition_list_new(parts->cnt);
        for (int i = 0; i < parts->cnt; i++)
            rd_kafka_topic_partition_list_add(ix->deferred, parts->elems[i].topic,
                                              parts->elems[i].partition);
    } else
        drop_items(ix, ix->items, &ix->count, parts);
    drop_items(ix, ix->next, &ix->nnext, parts);
    if (ix->nnext == 0)
        ix->next_bytes = 0;
    drop_message_list(ix->pending, &ix->npending, parts, &ix->n.dropped_revoked);
}

static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    indexer *ix = opaque;
    /* The protocol in use; NULL while the consumer is not in a group (on
     * close, say): then the one configured. */
    const char *protocol = rd_kafka_rebalance_protocol(rk);
    bool coop = protocol ? strcmp(protocol, "COOPERATIVE") == 0 : ix->cooperative;
    ix->n.rebalances++;
    rd_kafka_error_t *e = NULL;
    rd_kafka_resp_err_t r = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        pano_info("assigned %d partition(s)", parts->cnt);
        if (coop)
            e = rd_kafka_incremental_assign(rk, parts);
        else
            r = rd_kafka_assign(rk, parts);
        if (ix->paused && !e && !r)
            rd_kafka_pause_partitions(rk, parts);
    } else {
        pano_info("%s %d partition(s)",
                  err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS ? "revoked" : "lost", parts->cnt);
        /* What was settled is stored: commit it while the partitions are
         * still ours. The rest of the batch in hand is dropped. */
        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
            rd_kafka_resp_err_t c = rd_kafka_commit(rk, NULL, 0);
            if (c && c != RD_KAFKA_RESP_ERR__NO_OFFSET)
                pano_warn("commit on revocation: %s", rd_kafka_err2str(c));
        }
        drop_partitions(ix, parts);
        if (coop)
            e = rd_kafka_incremental_unassign(rk, parts);
        else
            r = rd_kafka_assign(rk, NULL);
    }
    if (e) {
        pano_error("rebalance: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    } else if (r)
        pano_error("rebalance: %s", rd_kafka_err2str(r));
}

static void set_paused(indexer *ix, bool pause)
{
    if (ix->paused == pause)
        return;
    rd_kafka_topic_partition_list_t *parts = NULL;
    rd_kafka_resp_err_t e = rd_kafka_assignment(ix->consumer, &parts);
    if (!e) {
        e = pause ? rd_kafka_pause_partitions(ix->consumer, parts)
                  : rd_kafka_resume_partitions(ix->consumer, parts);
        rd_kafka_topic_partition_list_destroy(parts);
    }
    if (e)
        pano_warn("cannot %s the partitions: %s", pause ? "pause" : "resume", rd_kafka_err2str(e));
    ix->paused = pause;
    if (pause)
        pano_info("partitions paused until Elasticsearch takes documents again");
    else
        pano_info("partitions resumed");
}

/* Poll the consumer: serves rebalances and keeps this member in the group.
 * Returns a message or NULL. */
static rd_kafka_message_t *poll_one(indexer *ix, int timeout_ms)
{
    rd_kafka_message_t *msg = rd_kafka_consumer_poll(ix->consumer, timeout_ms);
    if (msg && msg->err == RD_KAFKA_RESP_ERR__FATAL) {
        /* the consumer is unusable: above all, another member with this
         * group.instance.id took our place (fenced) */
        char why[512];
        rd_kafka_resp_err_t e = rd_kafka_fatal_error(ix->consumer, why, sizeof why);
        pano_error("Kafka: %s%s", why,
                   e == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID
                       ? " (another pano-indexer of this group uses the same "
                         "pano.indexer.instance_id: give each its own)"
                       : "");
        ix->fatal = true;
        stopping = 1;
    }
    if (msg && msg->err) {
        if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && msg->err != RD_KAFKA_RESP_ERR__FATAL)
            pano_warn("Kafka: %s", rd_kafka_message_errstr(msg));
        rd_kafka_message_destroy(msg);
        return NULL;
    }
    return msg;
}

/* Wait between attempts while polling (the partitions are paused, so only
 * already fetched messages arrive; they wait in pending). */
static void wait_polling(indexer *ix, double seconds, double deadline)
{
    double until = pano_now() + seconds;
    if (deadline && until > deadline)
        until = deadline;
    for (double now = pano_now(); now < until; now = pano_now()) {
        rd_kafka_message_t *m = poll_one(ix, (int)((until - now) * 1000) + 1);
        if (!m)
            continue;
        if (ix->npending == ix->cap_pending) {
            ix->cap_pending = ix->cap_pending ? ix->cap_pending * 2 : 64;
            ix->pending = pano_reallocarray(ix->pending, ix->cap_pending, sizeof *ix->pending);
        }
        ix->pending[ix->npending++] = m;
    }
}

/* Gather up to max_docs messages, or max_bytes, or what came within linger
 * seconds of the first one. */
static void collect_batch(indexer *ix)
{
    size_t bytes = 0, taken = 0;
    double deadline = 0;
    if (ix->count == 0 && ix->nnext > 0) {
        /* What was gathered while the last batch was in flight. */
        batch_item *t = ix->items;
        ix->items = ix->next;
        ix->count = ix->nnext;
        ix->next = t;
        ix->nnext = 0;
        bytes = ix->next_bytes;
        ix->next_bytes = 0;
        deadline = ix->next_first + ix->linger;
    }
    while (taken < ix->npending && ix->count < ix->max_docs && bytes < ix->max_bytes) {
        rd_kafka_message_t *m = ix->pending[taken++];
        add_message(ix, m);
        bytes += m->len;
    }
    if (taken) {
        memmove(ix->pending, ix->pending + taken, (ix->npending - taken) * sizeof *ix->pending);
        ix->npending -= taken;
    }
    if (!deadline && ix->count)
        deadline = pano_now() + ix->linger;
    while (ix->count < ix->max_docs && bytes < ix->max_bytes && !stopping) {
        double left = deadline ? deadline - pano_now() : 0.5;
        if (deadline && left <= 0)
            break;
        rd_kafka_message_t *msg = poll_one(ix, (int)(left * 1000) + 1);
        if (!msg) {
            if (!deadline && ix->count == 0)
                return; /* nothing yet: let the caller check for signals */
            continue;
        }
        add_message(ix, msg);
        bytes += msg->len;
        if (!deadline)
            deadline = pano_now() + ix->linger;
    }
}

/* Gather the next batch while the HTTP thread works, until it is done or
 * the next batch is full. Older messages (polled during a backoff) first. */
static void prefetch(indexer *ix, atomic_bool *done)
{
    size_t taken = 0;
    while (taken < ix->npending && ix->nnext < ix->max_docs && ix->next_bytes < ix->max_bytes) {
        rd_kafka_message_t *m = ix->pending[taken++];
        if (ix->nnext == 0)
            ix->next_first = pano_now();
        add_message_to(ix, ix->next, &ix->nnext, m);
        ix->next_bytes += m->len;
    }
    if (taken) {
        memmove(ix->pending, ix->pending + taken, (ix->npending - taken) * sizeof *ix->pending);
        ix->npending -= taken;
    }
    while (!atomic_load(done) && ix->nnext < ix->max_docs && ix->next_bytes < ix->max_bytes &&
           !stopping) {
        rd_kafka_message_t *m = poll_one(ix, 5);
        if (!m)
            continue;
        if (ix->nnext == 0)
            ix->next_first = pano_now();
        add_message_to(ix, ix->next, &ix->nnext, m);
        ix->next_bytes += m->len;
    }
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
    prefetch(ix, &job.done);
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
            make_dead_letter(ix, it);
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
        drop_items(ix, ix->items, &ix->count, ix->deferred);
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
static void settle_batch(indexer *ix)
{
    double backoff = 0.1, deadline = stopping ? pano_now() + ix->drain_timeout : 0;
    for (bool first = true;; first = false) {
        bool answered = ix->count == 0 ||
                        ((ix->indices_ready || setup_indices(ix) == 0) &&
                         send_pending(ix, first && !stopping));
        if (all_settled(ix))
            break;
        if (stopping && !deadline)
            deadline = pano_now() + ix->drain_timeout;
        if (deadline && pano_now() >= deadline) {
            size_t left = 0;
            for (size_t i = 0; i < ix->count; i++)
                left += !ix->items[i].settled;
            pano_warn("giving up on %zu unsettled messages at shutdown (they will be replayed)",
                      left);
            break;
        }
        double wait = backoff * jitter();
        if (!answered) {
            set_paused(ix, true);
            pano_info("Elasticsearch unavailable; retrying in %.1f s", wait);
        } else
            pano_debug("some documents must be retried; retrying in %.1f s", wait);
        if (pano_now() - ix->last_publish >= 1)
            publish_status(ix);
        wait_polling(ix, wait, deadline);
        backoff = backoff * 2 > ix->max_backoff ? ix->max_backoff : backoff * 2;
    }
    set_paused(ix, false);
}

/* Store the offsets the batch allows: per partition, up to the last item
 * with every earlier item of that partition settled. Then free the batch. */
static void finish_batch(indexer *ix)
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

/* ---- setup ---------------------------------------------------------------- */

static rd_kafka_t *create_consumer(indexer *ix, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = pano_kafka_conf_new(ix->cfg, err, errlen);
    if (!conf)
        return NULL;
    /* The indexer's own settings: offsets are stored only once
     * Elasticsearch settled everything before them. */
    const pano_kafka_property own[] = {
        {"group.id", pano_config_str(ix->cfg, "pano.indexer.group")},
        {"enable.auto.offset.store", "false"},
        {"enable.auto.commit", "true"},
    };
    /* Fast failover: a static member that comes back (within the session
     * timeout) takes its partitions back without a rebalance, and a
     * rebalance moves only the partitions that change hands. */
    char host[256] = "pano-indexer";
    const char *instance = pano_config_str(ix->cfg, "pano.indexer.instance_id");
    if (!instance && gethostname(host, sizeof host - 1) == 0)
        host[sizeof host - 1] = '\0';
    if (pano_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, errlen) < 0 ||
        pano_kafka_conf_set(conf, "partition.assignment.strategy", "cooperative-sticky", err,
                            errlen) < 0 ||
        pano_kafka_conf_set(conf, "group.instance.id", instance ? instance : host, err,
                            errlen) < 0 ||
        pano_kafka_conf_apply(conf, own, sizeof own / sizeof own[0], ix->cfg,
                              "pano.indexer.kafka_properties", err, errlen) < 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    char strategy[128] = "";
    size_t len = sizeof strategy;
    if (rd_kafka_conf_get(conf, "partition.assignment.strategy", strategy, &len) ==
        RD_KAFKA_CONF_OK)
        ix->cooperative = strstr(strategy, "cooperative") != NULL;
    rd_kafka_conf_set_rebalance_cb(conf, rebalance);
    rd_kafka_conf_set_opaque(conf, ix);
    char why[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    if (!rk) {
        snprintf(err, errlen, "cannot create the Kafka consumer: %s", why);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    if (pano_kafka_ensure_topics(rk, ix->cfg, err, errlen) < 0) {
        rd_kafka_destroy(rk);
        return NULL;
    }
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(8);
    char name[256];
    for (size_t i = 0; pano_event_families[i]; i++) {
        pano_kafka_topic(ix->cfg, pano_event_families[i], name, sizeof name);
        rd_kafka_topic_partition_list_add(topics, name, RD_KAFKA_PARTITION_UA);
    }
    /* and what the bridge refused, to make it findable */
    rd_kafka_topic_partition_list_add(topics, ix->dead_letter_topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(err, errlen, "cannot subscribe: %s", rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return NULL;
    }
    return rk;
}

/* Elasticsearch index names: lowercase letters, digits and . _ -, not
 * starting with . _ or -. */
static bool index_name_ok(const char *name, bool prefix_only)
{
    size_t len = strlen(name);
    if (len == 0 || len > (prefix_only ? 100 : 200) || strchr("._-+", name[0]))
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("._-", *p)))
            return false;
    return true;
}

static void sleep_unless_stopping(double s)
{
    for (double slept = 0; slept < s && !stopping; slept += 0.05)
        usleep(50000);
}

/* ---- retention ---------------------------------------------------------------- */

static void stream_bases(const indexer *ix, char names[PANO_N_STREAMS][256],
                         const char *bases[PANO_N_STREAMS])
{
    for (int i = 0; i < PANO_N_STREAMS; i++) {
        if (i == PANO_STREAM_UNASSIGNED)
            snprintf(names[i], 256, "%s", ix->fallback_index);
        else if (i == PANO_STREAM_DEAD_LETTER)
            snprintf(names[i], 256, "%s", ix->dead_letter_index);
        else
            snprintf(names[i], 256, "%.200s%s", ix->prefix, pano_streams[i]);
        bases[i] = names[i];
    }
}

/* Delete the partitions past their stream's retention (a dry run lists
 * them on stdout). How many, or -1 when Elasticsearch did not answer. */
static long retention_pass(indexer *ix, bool dry_run)
{
    char names[PANO_N_STREAMS][256], path[1024], *answer;
    const char *bases[PANO_N_STREAMS];
    stream_bases(ix, names, bases);
    snprintf(path, sizeof path,
             "/_cat/indices/%s*,%s-*,%s-*?h=index&format=json&expand_wildcards=open,closed",
             ix->prefix, ix->fallback_index, ix->dead_letter_index);
    long st = es_call(ix, "GET", path, NULL, &answer);
    char why[200];
    pano_json *list = st == 200 && answer ? pano_json_parse(answer, strlen(answer),
                                                            PANO_JSON_DEFAULT_DEPTH, why,
                                                            sizeof why)
                                          : NULL;
    free(answer);
    if (!list || list->type != PANO_JSON_ARRAY) {
        pano_warn("retention: cannot list the indices (HTTP %ld)", st);
        pano_json_free(list);
        return -1;
    }
    long n = 0;
    double now = pano_now();
    for (size_t i = 0; i < list->u.items.len; i++) {
        const char *index = pano_json_get_str(list->u.items.values[i], "index");
        if (!index || !pano_retention_expired(index, bases, ix->policies, now))
            continue;
        n++;
        if (dry_run) {
            printf("%s\n", index);
            continue;
        }
        snprintf(path, sizeof path, "/%s", index); /* a name of pano's own form */
        st = es_call(ix, "DELETE", path, NULL, &answer);
        if (st == 200 || st == 404) {
            pano_info("retention: deleted index %s", index);
            ix->n.indices_deleted += st == 200;
        } else {
            pano_warn("retention: cannot delete index %s (HTTP %ld): %.200s", index, st,
                      answer ? answer : "");
            n--;
        }
        free(answer);
    }
    pano_json_free(list);
    return n;
}

/* Remove the per-workflow aliases (<prefix>wf-<uuid>) earlier versions
 * made; indices are never touched. A dry run lists them. How many, or -1
 * when Elasticsearch did not answer. */
static long remove_aliases(indexer *ix, bool dry_run)
{
    char path[512], *answer, why[200];
    snprintf(path, sizeof path, "/_cat/aliases/%swf-*?h=alias,index&format=json", ix->prefix);
    long st = es_call(ix, "GET", path, NULL, &answer);
    pano_json *list = st == 200 && answer ? pano_json_parse(answer, strlen(answer),
                                                            PANO_JSON_DEFAULT_DEPTH, why,
                                                            sizeof why)
                                          : NULL;
    free(answer);
    if (!list || list->type != PANO_JSON_ARRAY) {
        pano_warn("cannot list the aliases (HTTP %ld)", st);
        pano_json_free(list);
        return -1;
    }
    long n = 0, failed = 0;
    pano_buf actions = {0};
    size_t prefix_len = strlen(ix->prefix);
    for (size_t i = 0; i <= list->u.items.len; i++) {
        const pano_json *a = i < list->u.items.len ? list->u.items.values[i] : NULL;
        const char *alias = a ? pano_json_get_str(a, "alias") : NULL;
        const char *index = a ? pano_json_get_str(a, "index") : NULL;
        char uuid[PANO_WF_UUID_LEN + 1];
        /* only <prefix>wf-<uuid>, the form pano made */
        if (alias && index && strncmp(alias, ix->prefix, prefix_len) == 0 &&
            strncmp(alias + prefix_len, "wf-", 3) == 0 &&
            pano_wf_uuid_normalize(alias + prefix_len + 3, uuid) &&
            strcmp(alias + prefix_len + 3, uuid) == 0 && index_name_ok(index, false)) {
            n++;
            if (dry_run)
                printf("%s %s\n", alias, index);
            else
                pano_buf_appendf(&actions, "%s{\"remove\":{\"index\":\"%s\",\"alias\":\"%s\"}}",
                                 actions.len ? "," : "{\"actions\":[", index, alias);
        }
        /* one request per 500 aliases, and the rest at the end */
        if (actions.len && (n % 500 == 0 || i == list->u.items.len)) {
            pano_buf_append_str(&actions, "]}");
            st = es_call(ix, "POST", "/_aliases", actions.data, &answer);
            if (st != 200) {
                pano_warn("cannot remove aliases (HTTP %ld): %.200s", st, answer ? answer : "");
                failed = 1;
            }
            free(answer);
            pano_buf_clear(&actions);
        }
    }
    pano_buf_free(&actions);
    pano_json_free(list);
    return failed ? -1 : n;
}

static bool any_retention(const indexer *ix)
{
    for (int i = 0; i < PANO_N_STREAMS; i++)
        if (ix->policies[i].retention > 0)
            return true;
    return false;
}

/* How many shards the cluster allows: cluster.max_shards_per_node times the
 * data nodes (in *data_nodes); 0 when Elasticsearch does not say. */
static long cluster_shard_limit(indexer *ix, long *data_nodes)
{
    char *answer, why[200];
    long per_node = 0, nodes = 0;
    long st = es_call(ix, "GET", "/_cluster/settings?include_defaults=true&flat_settings=true",
                      NULL, &answer);
    pano_json *j = st == 200 && answer ? pano_json_parse(answer, strlen(answer),
                                                         PANO_JSON_DEFAULT_DEPTH, why, sizeof why)
                                       : NULL;
    free(answer);
    /* transient overrides persistent, which overrides the default */
    static const char *const levels[] = {"transient", "persistent", "defaults"};
    for (size_t i = 0; i < 3 && j && !per_node; i++) {
        const char *v = pano_json_get_str(pano_json_get(j, levels[i]),
                                          "cluster.max_shards_per_node");
        per_node = v ? atol(v) : 0;
    }
    pano_json_free(j);
    st = es_call(ix, "GET", "/_cluster/health?filter_path=number_of_data_nodes", NULL, &answer);
    j = st == 200 && answer ? pano_json_parse(answer, strlen(answer), PANO_JSON_DEFAULT_DEPTH, why,
                                              sizeof why)
                            : NULL;
    free(answer);
    int64_t v = 0;
    if (j && pano_json_get_int(j, "number_of_data_nodes", &v))
        nodes = (long)v;
    pano_json_free(j);
    *data_nodes = nodes;
    return per_node * nodes;
}

/* Refuse a configuration whose partitions, within their retention, would
 * need more shards than the cluster allows (it would stop creating indices,
 * and so indexing, when it reached the limit). -1 to refuse. */
static int check_shard_budget(indexer *ix)
{
    int shards = (int)pano_config_int(ix->cfg, "pano.indexer.shards");
    long nodes = 0, limit = cluster_shard_limit(ix, &nodes);
    if (limit <= 0) {
        pano_warn("cannot read the cluster's shard limit: the shard budget is not checked");
        return 0;
    }
    int replicas = ix->replicas == PANO_REPLICAS_AUTO ? (nodes > 1) : ix->replicas;
    long per_year, kept = pano_retention_shards(ix->policies, shards, replicas, &per_year);
    if (kept > limit) {
        pano_error("pano.indexer.retention and .partition keep up to %ld shards (%d primary "
                   "and %d replica per index), more than the %ld the cluster allows "
                   "(cluster.max_shards_per_node x data nodes): use longer periods, shorter "
                   "retention, or fewer shards or replicas (docs/operating.md, sizing)",
                   kept, shards, replicas, limit);
        return -1;
    }
    if (per_year > 0)
        pano_info("shards: %ld within retention; the streams kept forever add %ld a year, of "
                  "the %ld the cluster allows",
                  kept, per_year, limit);
    return 0;
}

/* Record where the time of the batch's indexed events went (a replayed or
 * late event's to_kafka is its age: the histogram shows it as such). */
static void observe_stages(indexer *ix, double sent, double settled)
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

/* Create the partitions of now and of the next hour ahead of their events:
 * Elasticsearch takes a second or two to create an index, and the first
 * batch of a new period would wait that long, with every event in it. An
 * index that exists already is left as it is. */
#define PREPARE_AHEAD 3600
#define PREPARE_EVERY 600
static void prepare_partitions(indexer *ix, double now)
{
    char names[PANO_N_STREAMS][256], index[256], last[256] = "", path[300];
    const char *bases[PANO_N_STREAMS];
    ix->last_prepared = now;
    if (!ix->indices_ready)
        return; /* without the templates, an index would get no mappings */
    stream_bases(ix, names, bases);
    for (int i = 0; i < PANO_N_STREAMS; i++)
        for (double t = now; t <= now + PREPARE_AHEAD; t += PREPARE_AHEAD) {
            pano_bulk_partition(bases[i], ix->policies[i].period, t, index, sizeof index);
            if (strcmp(index, last) == 0)
                continue;
            snprintf(last, sizeof last, "%s", index);
            snprintf(path, sizeof path, "/%s", index);
            char *answer;
            long st = es_call(ix, "PUT", path, NULL, &answer);
            if (st == 0)
                return; /* not answering: the next time, or the bulk requests */
            if (st != 200 && !(st == 400 && answer &&
                               strstr(answer, "resource_already_exists_exception")))
                pano_debug("cannot create %s ahead of its events (HTTP %ld): it will be "
                           "created by them",
                           index, st);
            free(answer);
        }
}

static int run(indexer *ix)
{
    double next_stats = pano_now() + ix->stats_interval;
    publish_status(ix);
    prepare_partitions(ix, pano_now());
    while (!stopping) {
        collect_batch(ix);
        if (ix->count) {
            double sent = pano_now();
            settle_batch(ix);
            observe_stages(ix, sent, pano_now());
            finish_batch(ix);
        }
        double now = pano_now();
        if (now >= next_stats) {
            log_stats(ix);
            next_stats = now + ix->stats_interval;
        }
        if (now - ix->last_publish >= 1)
            publish_status(ix);
        if (now - ix->last_prepared >= PREPARE_EVERY)
            prepare_partitions(ix, now);
        if (any_retention(ix) && now - ix->last_retention >= ix->retention_interval) {
            retention_pass(ix, false);
            ix->last_retention = now;
        }
    }
    /* Drain: the batch in hand was settled (or given up) above; messages
     * polled meanwhile are left for the next run. */
    if (ix->count)
        finish_batch(ix);
    drop_partitions(ix, NULL); /* the next batch and pending: replayed */
    log_stats(ix);
    return 0;
}

static int print_templates(indexer *ix)
{
    pano_template *t;
    size_t nt;
    char err[512], *warnings;
    if (build_templates(ix, &t, &nt, &warnings, err, sizeof err) < 0) {
        pano_error("%s", err);
        return 1;
    }
    if (*warnings)
        pano_warn("schema clashes: %s", warnings);
    free(warnings);
    printf("{");
    for (size_t i = 0; i < nt; i++)
        printf("%s\"%s\":%s", i ? "," : "", t[i].name, t[i].body);
    printf("}\n");
    pano_templates_free(t, nt);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-indexer", argc, argv, false);
    if (!cfg)
        return 2;
    enum { OPT_PRINT_TEMPLATES = 0x2000, OPT_RETENTION, OPT_REMOVE_ALIASES, OPT_DRY_RUN };
    static const struct option options[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"es-url", required_argument, NULL, 'e'},
        {"group", required_argument, NULL, 'g'},
        {"print-templates", no_argument, NULL, OPT_PRINT_TEMPLATES},
        {"retention", no_argument, NULL, OPT_RETENTION},
        {"remove-aliases", no_argument, NULL, OPT_REMOVE_ALIASES},
        {"dry-run", no_argument, NULL, OPT_DRY_RUN},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    static const char *const keys[128] = {
        ['b'] = "pano.kafka.brokers", ['e'] = "pano.es.url", ['g'] = "pano.indexer.group"};
    bool want_templates = false, want_retention = false, want_unalias = false, dry_run = false;
    int opt;
    while ((opt = getopt_long(argc, argv, "b:e:g:h", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            return 2;
        if (handled)
            continue;
        if (opt > 0 && opt < 128 && keys[opt]) {
            if (pano_cli_set(cfg, keys[opt], optarg) < 0)
                return 2;
        } else if (opt == OPT_PRINT_TEMPLATES)
            want_templates = true;
        else if (opt == OPT_RETENTION)
            want_retention = true;
        else if (opt == OPT_REMOVE_ALIASES)
            want_unalias = true;
        else if (opt == OPT_DRY_RUN)
            dry_run = true;
        else if (opt == 'h') {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        pano_error("unexpected argument '%s'", argv[optind]);
        return 2;
    }
    if (dry_run && !want_retention && !want_unalias) {
        pano_error("--dry-run goes with --retention or --remove-aliases");
        return 2;
    }
    pano_cli_apply_logging(cfg);

    indexer ix = {.cfg = cfg, .started = pano_now()};
    ix.prefix = pano_config_str(cfg, "pano.indexer.index_prefix");
    const char *fallback = pano_config_str(cfg, "pano.indexer.fallback_index");
    const char *dead = pano_config_str(cfg, "pano.indexer.dead_letter_index");
    snprintf(ix.fallback_index, sizeof ix.fallback_index, "%.200s%s", fallback ? "" : ix.prefix,
             fallback ? fallback : "unassigned");
    snprintf(ix.dead_letter_index, sizeof ix.dead_letter_index, "%.200s%s",
             dead ? "" : ix.prefix, dead ? dead : "dead-letter");
    char err[512];
    if (pano_stream_policies(cfg, ix.policies, err, sizeof err) < 0) {
        pano_error("%s", err);
        return 2;
    }
    ix.replicas = pano_replicas_parse(pano_config_str(cfg, "pano.indexer.replicas"));
    if (ix.replicas < PANO_REPLICAS_AUTO) {
        pano_error("pano.indexer.replicas '%s': use auto or a number from 0 to 16",
                   pano_config_str(cfg, "pano.indexer.replicas"));
        return 2;
    }
    if (!index_name_ok(ix.prefix, true)) {
        pano_error("pano.indexer.index_prefix '%s': use lowercase letters, digits, '.', '_' "
                   "and '-', not first '.', '_' or '-'",
                   ix.prefix);
        return 2;
    }
    if (!index_name_ok(ix.fallback_index, false) || !index_name_ok(ix.dead_letter_index, false)) {
        pano_error("pano.indexer.fallback_index / dead_letter_index: not valid index names");
        return 2;
    }
    ix.layout = (pano_bulk_layout){.prefix = ix.prefix,
                                   .fallback_index = ix.fallback_index,
                                   .policies = ix.policies};
    snprintf(ix.dead_letter_topic, sizeof ix.dead_letter_topic, "%s",
             pano_config_str(cfg, "pano.kafka.dead_letter_topic"));
    ix.retention_interval = pano_config_double(cfg, "pano.indexer.retention_interval");
    if (want_templates) {
        int rc = print_templates(&ix);
        pano_config_free(cfg);
        return rc;
    }
    ix.max_docs = (size_t)pano_config_int(cfg, "pano.indexer.batch_docs");
    ix.max_bytes = pano_config_size(cfg, "pano.indexer.batch_bytes");
    ix.linger = pano_config_double(cfg, "pano.indexer.linger");
    ix.max_backoff = pano_config_double(cfg, "pano.indexer.max_backoff");
    ix.drain_timeout = pano_config_double(cfg, "pano.indexer.drain_timeout");
    ix.stats_interval = pano_config_double(cfg, "pano.indexer.stats_interval");
    ix.concurrency = (size_t)pano_config_int(cfg, "pano.indexer.concurrency");
    ix.items = pano_calloc(ix.max_docs, sizeof *ix.items);
    ix.next = pano_calloc(ix.max_docs, sizeof *ix.next);

    int rc = 1;
    ix.es = pano_es_new(cfg, err, sizeof err);
    if (!ix.es) {
        pano_error("%s", err);
        rc = 2;
        goto out;
    }
    if (want_retention || want_unalias) {
        long n = 0, m = 0;
        if (want_retention && (n = retention_pass(&ix, dry_run)) >= 0 && !dry_run)
            pano_info("retention: %ld indices deleted", n);
        if (want_unalias && (m = remove_aliases(&ix, dry_run)) >= 0 && !dry_run)
            pano_info("%ld workflow aliases removed", m);
        rc = n < 0 || m < 0 ? 1 : fflush(stdout) == 0 ? 0 : 1;
        goto out;
    }
    ix.status_file = pano_config_str(cfg, "pano.indexer.status_file");
    int status_port = (int)pano_config_int(cfg, "pano.indexer.status_port");
    if (status_port) {
        ix.status = pano_status_new(pano_config_str(cfg, "pano.indexer.status_bind"),
                                    status_port, err, sizeof err);
        if (!ix.status) {
            pano_error("%s", err);
            goto out;
        }
        pano_info("status on http://%s:%d/metrics", pano_config_str(cfg, "pano.indexer.status_bind"),
                  pano_status_port(ix.status));
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* The templates must be in place before the first document creates an
     * index: wait for Elasticsearch rather than index with wrong types, and
     * before joining the group, so that no partition waits on an indexer
     * that cannot index (or must not, over the shard budget). */
    for (double backoff = 1; !stopping && setup_indices(&ix) < 0;
         backoff = backoff * 2 > ix.max_backoff ? ix.max_backoff : backoff * 2)
        sleep_unless_stopping(backoff * jitter());
    if (stopping) {
        rc = 0;
        goto out;
    }
    if (check_shard_budget(&ix) < 0) {
        rc = 2;
        goto out;
    }
    ix.consumer = create_consumer(&ix, err, sizeof err);
    if (!ix.consumer) {
        pano_error("%s", err);
        goto out;
    }
    pano_info("indexing into %s (%s<stream>-<period>)", pano_es_describe(ix.es), ix.prefix);

    rc = run(&ix);
    if (ix.fatal)
        rc = 1;
    /* Leaving the group can hang when Kafka misbehaves: bound it. */
    struct sigaction al = {.sa_handler = on_alarm};
    sigemptyset(&al.sa_mask);
    sigaction(SIGALRM, &al, NULL);
    alarm(30);

    rd_kafka_resp_err_t e = rd_kafka_commit(ix.consumer, NULL, 0);
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
        pano_warn("final commit: %s", rd_kafka_err2str(e));
    e = rd_kafka_consumer_close(ix.consumer);
    if (e)
        pano_warn("closing the consumer: %s", rd_kafka_err2str(e));
    drop_partitions(&ix, NULL); /* anything the close delivered */
    rd_kafka_destroy(ix.consumer);
    publish_status(&ix);
out:
    pano_status_free(ix.status);
    pano_es_free(ix.es);
    for (size_t i = 0; i < ix.nbodies; i++)
        pano_buf_free(&ix.bodies[i]);
    free(ix.bodies);
    free(ix.pending);
    free(ix.items);
    free(ix.next);
    pano_config_free(cfg);
    return rc;
}
