/*
 * pano-indexer - Kafka to Elasticsearch.
 *
 * Consumes the family topics in a consumer group and writes batches with the
 * _bulk API (bulk.h). A batch is settled when every item is done: indexed,
 * already there (409), or written to the dead-letter index with its reason.
 * Items that failed for a passing reason (429, 5xx, Elasticsearch down) are
 * retried alone with jittered exponential backoff. Only then are the batch's
 * offsets stored for commit, so a crash replays at most the unsettled batch,
 * and the replay is absorbed by the create/409 rule.
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

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define STATS_INTERVAL 30.0
#define MAX_BACKOFF 30.0

typedef struct {
    rd_kafka_message_t *msg;
    pano_bulk_doc doc;
    bool settled;
    bool rejected;      /* goes to the dead-letter index */
    int status;         /* last HTTP status of the item */
    char reason[256];
} batch_item;

typedef struct {
    pano_config *cfg;
    rd_kafka_t *consumer;
    pano_es *es;
    const char *index_prefix;
    char dead_letter_index[256];
    size_t max_docs, max_bytes;
    double linger;

    batch_item *items;
    size_t count;
    pano_buf body;

    uint64_t n_indexed, n_duplicates, n_dead, n_retries;
} indexer;

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
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
            "\n"
            "SIGTERM or SIGINT: finish the batch in hand, commit, exit 0.\n"
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

static void sleep_seconds(double s)
{
    for (double slept = 0; slept < s && !stopping; slept += 0.05)
        usleep(50000);
}

/* ---- batches ------------------------------------------------------------ */

static void add_message(indexer *ix, rd_kafka_message_t *msg)
{
    batch_item *it = &ix->items[ix->count++];
    memset(it, 0, sizeof *it);
    it->msg = msg;
    if (!pano_bulk_doc_prepare(msg->payload, msg->len, ix->index_prefix, &it->doc, it->reason,
                               sizeof it->reason))
        it->rejected = true;
}

/* Gather up to max_docs messages, or max_bytes, or what came within linger
 * seconds of the first one. */
static void collect_batch(indexer *ix)
{
    size_t bytes = 0;
    double deadline = 0;
    while (ix->count < ix->max_docs && bytes < ix->max_bytes && !stopping) {
        double left = deadline ? deadline - pano_now() : 0.5;
        if (deadline && left <= 0)
            break;
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(ix->consumer, (int)(left * 1000) + 1);
        if (!msg) {
            if (!deadline && ix->count == 0)
                return; /* nothing yet: let the caller check for signals */
            continue;
        }
        if (msg->err) {
            if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                pano_warn("Kafka: %s", rd_kafka_message_errstr(msg));
            rd_kafka_message_destroy(msg);
            continue;
        }
        add_message(ix, msg);
        bytes += msg->len;
        if (!deadline)
            deadline = pano_now() + ix->linger;
    }
}

/* One bulk request for the items not settled yet (dead letters included, as
 * documents of the dead-letter index). Returns false if Elasticsearch did not
 * answer usefully. */
static bool send_pending(indexer *ix)
{
    pano_buf_clear(&ix->body);
    size_t *order = pano_calloc(ix->count, sizeof *order), n = 0;
    pano_bulk_doc *dead_docs = pano_calloc(ix->count, sizeof *dead_docs);
    for (size_t i = 0; i < ix->count; i++) {
        batch_item *it = &ix->items[i];
        if (it->settled)
            continue;
        if (it->rejected) {
            /* {"@timestamp", "reason", "status", "topic", "partition",
             *  "offset", "original"} keyed by topic/partition/offset. */
            pano_json *d = pano_json_object();
            char stamp[64];
            pano_bulk_timestamp(pano_now(), stamp, sizeof stamp);
            pano_json_set_str(d, "@timestamp", stamp);
            pano_json_set_str(d, "reason", it->reason);
            pano_json_set_int(d, "status", it->status);
            pano_json_set_str(d, "topic", rd_kafka_topic_name(it->msg->rkt));
            pano_json_set_int(d, "partition", it->msg->partition);
            pano_json_set_int(d, "offset", it->msg->offset);
            pano_json_set(d, "original", pano_json_string_len(it->msg->payload, it->msg->len));
            pano_bulk_doc *dd = &dead_docs[i];
            snprintf(dd->index, sizeof dd->index, "%s", ix->dead_letter_index);
            snprintf(dd->id, sizeof dd->id, "%s-%d-%lld", rd_kafka_topic_name(it->msg->rkt),
                     (int)it->msg->partition, (long long)it->msg->offset);
            dd->doc = pano_json_serialize(d, &dd->doc_len);
            pano_json_free(d);
            pano_bulk_append(&ix->body, dd);
        } else
            pano_bulk_append(&ix->body, &it->doc);
        order[n++] = i;
    }
    bool answered = false;
    if (n == 0) {
        answered = true;
        goto done;
    }
    pano_es_response resp;
    char err[512];
    if (pano_es_request(ix->es, "POST", "/_bulk", ix->body.data, ix->body.len, &resp, err,
                        sizeof err) < 0) {
        pano_warn("%s", err);
        goto done;
    }
    if (resp.status != 200) {
        pano_warn("bulk request answered %ld: %.300s", resp.status, resp.body);
        pano_es_response_free(&resp);
        goto done;
    }
    pano_bulk_result *results = pano_calloc(n, sizeof *results);
    if (pano_bulk_read_response(resp.body, resp.len, n, results, err, sizeof err) < 0)
        pano_warn("%s", err);
    else {
        answered = true;
        for (size_t k = 0; k < n; k++) {
            batch_item *it = &ix->items[order[k]];
            it->status = results[k].status;
            switch (results[k].outcome) {
            case PANO_BULK_DONE:
                it->settled = true;
                if (it->rejected)
                    ix->n_dead++;
                else if (results[k].status == 409)
                    ix->n_duplicates++;
                else
                    ix->n_indexed++;
                break;
            case PANO_BULK_RETRY:
                ix->n_retries++;
                break;
            case PANO_BULK_REJECTED:
                if (it->rejected) {
                    /* The dead-letter index refused it too: that is a
                     * deployment problem; keep retrying loudly. */
                    pano_error("dead-letter index refused a document: %s", results[k].reason);
                    break;
                }
                it->rejected = true;
                snprintf(it->reason, sizeof it->reason, "%s", results[k].reason);
                break;
            }
        }
    }
    free(results);
    pano_es_response_free(&resp);
done:
    for (size_t i = 0; i < ix->count; i++)
        pano_bulk_doc_free(&dead_docs[i]);
    free(dead_docs);
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

/* Send until every item is settled, backing off between attempts. On a
 * shutdown request the batch is abandoned unsettled: its offsets are not
 * stored, so it is consumed again next time. */
static bool settle_batch(indexer *ix)
{
    double backoff = 0.1;
    for (;;) {
        bool answered = send_pending(ix);
        if (all_settled(ix))
            return true;
        if (stopping)
            return false;
        double wait = backoff * jitter();
        pano_info("%s; retrying in %.1f s", answered ? "some documents must be retried"
                                                     : "Elasticsearch unavailable",
                  wait);
        sleep_seconds(wait);
        backoff = backoff * 2 > MAX_BACKOFF ? MAX_BACKOFF : backoff * 2;
    }
}

static void finish_batch(indexer *ix, bool settled)
{
    for (size_t i = 0; i < ix->count; i++) {
        batch_item *it = &ix->items[i];
        if (settled) {
            rd_kafka_resp_err_t e = rd_kafka_offset_store(it->msg->rkt, it->msg->partition,
                                                          it->msg->offset);
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
                pano_warn("cannot store offset %lld of %s [%d]: %s (it will be replayed)",
                          (long long)it->msg->offset, rd_kafka_topic_name(it->msg->rkt),
                          (int)it->msg->partition, rd_kafka_err2str(e));
        }
        pano_bulk_doc_free(&it->doc);
        rd_kafka_message_destroy(it->msg);
    }
    ix->count = 0;
}

/* ---- setup ---------------------------------------------------------------- */

static rd_kafka_t *create_consumer(indexer *ix, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = pano_kafka_conf_new(ix->cfg, err, errlen);
    if (!conf)
        return NULL;
    if (pano_kafka_conf_set(conf, "group.id", pano_config_str(ix->cfg, "pano.indexer.group"),
                            err, errlen) < 0 ||
        pano_kafka_conf_set(conf, "enable.auto.offset.store", "false", err, errlen) < 0 ||
        pano_kafka_conf_set(conf, "enable.auto.commit", "true", err, errlen) < 0 ||
        pano_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, errlen) < 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
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
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(err, errlen, "cannot subscribe: %s", rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return NULL;
    }
    return rk;
}

/* The index template: explicit types for the envelope, safe dynamic rules
 * for the rest (strings as keywords, numbers as long/double). */
static int install_template(indexer *ix)
{
    const char *prefix = ix->index_prefix;
    pano_buf t = {0};
    pano_buf_appendf(
        &t,
        "{\"index_patterns\":[\"%s*\"],\"priority\":100,\"template\":{"
        "\"settings\":{\"number_of_replicas\":0,\"refresh_interval\":\"1s\"},"
        "\"mappings\":{\"dynamic_templates\":["
        "{\"strings\":{\"match_mapping_type\":\"string\",\"mapping\":"
        "{\"type\":\"keyword\",\"ignore_above\":1024}}},"
        "{\"reals\":{\"match_mapping_type\":\"double\",\"mapping\":{\"type\":\"double\"}}}],"
        "\"properties\":{"
        "\"@timestamp\":{\"type\":\"date\"},\"ts\":{\"type\":\"double\"},"
        "\"event\":{\"type\":\"keyword\"},\"event_id\":{\"type\":\"keyword\"},"
        "\"seq\":{\"type\":\"long\"},\"hostname\":{\"type\":\"keyword\"},"
        "\"wf_uuid\":{\"type\":\"keyword\"},\"wf_label\":{\"type\":\"keyword\"},"
        "\"dag_job_id\":{\"type\":\"keyword\"},\"condor_job_id\":{\"type\":\"keyword\"},"
        "\"xformation\":{\"type\":\"keyword\"},\"task_id\":{\"type\":\"keyword\"},"
        "\"site\":{\"type\":\"keyword\"},\"rank\":{\"type\":\"long\"},"
        "\"original\":{\"type\":\"keyword\",\"index\":false,\"doc_values\":false},"
        "\"reason\":{\"type\":\"text\"}}}}}",
        prefix);
    char path[300], err[512];
    snprintf(path, sizeof path, "/_index_template/%.200sevents", prefix);
    pano_es_response resp;
    int rc = pano_es_request(ix->es, "PUT", path, t.data, t.len, &resp, err, sizeof err);
    pano_buf_free(&t);
    if (rc < 0) {
        pano_warn("cannot install the index template: %s", err);
        return -1;
    }
    if (resp.status != 200) {
        pano_warn("index template refused (%ld): %.300s", resp.status, resp.body);
        rc = -1;
    }
    pano_es_response_free(&resp);
    return rc;
}

static void log_stats(const indexer *ix)
{
    pano_info("indexed %llu, duplicates %llu, dead-lettered %llu, item retries %llu",
              (unsigned long long)ix->n_indexed, (unsigned long long)ix->n_duplicates,
              (unsigned long long)ix->n_dead, (unsigned long long)ix->n_retries);
}

static int run(indexer *ix)
{
    /* The template must be in place before the first document creates an
     * index; wait for Elasticsearch rather than index with wrong types. */
    for (double backoff = 1; install_template(ix) < 0 && !stopping;
         backoff = backoff * 2 > MAX_BACKOFF ? MAX_BACKOFF : backoff * 2)
        sleep_seconds(backoff * jitter());
    double next_stats = pano_now() + STATS_INTERVAL;
    while (!stopping) {
        collect_batch(ix);
        if (ix->count)
            finish_batch(ix, settle_batch(ix));
        if (pano_now() >= next_stats) {
            log_stats(ix);
            next_stats = pano_now() + STATS_INTERVAL;
        }
    }
    if (ix->count)
        finish_batch(ix, false);
    log_stats(ix);
    return 0;
}

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-indexer", argc, argv, false);
    if (!cfg)
        return 2;
    static const struct option options[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"es-url", required_argument, NULL, 'e'},
        {"group", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    static const char *const keys[128] = {
        ['b'] = "pano.kafka.brokers", ['e'] = "pano.es.url", ['g'] = "pano.indexer.group"};
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
        } else if (opt == 'h') {
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

    indexer ix = {.cfg = cfg};
    ix.index_prefix = pano_config_str(cfg, "pano.indexer.index_prefix");
    snprintf(ix.dead_letter_index, sizeof ix.dead_letter_index, "%.200sdead-letter",
             ix.index_prefix);
    ix.max_docs = (size_t)pano_config_int(cfg, "pano.indexer.batch_docs");
    ix.max_bytes = pano_config_size(cfg, "pano.indexer.batch_bytes");
    ix.linger = pano_config_double(cfg, "pano.indexer.linger");
    ix.items = pano_calloc(ix.max_docs, sizeof *ix.items);

    char err[512];
    ix.es = pano_es_new(cfg, err, sizeof err);
    if (!ix.es) {
        pano_error("%s", err);
        return 2;
    }
    ix.consumer = create_consumer(&ix, err, sizeof err);
    if (!ix.consumer) {
        pano_error("%s", err);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    pano_info("indexing into %s (%s*)", pano_es_describe(ix.es), ix.index_prefix);

    int rc = run(&ix);

    rd_kafka_consumer_close(ix.consumer); /* commits the stored offsets */
    rd_kafka_destroy(ix.consumer);
    pano_es_free(ix.es);
    pano_buf_free(&ix.body);
    free(ix.items);
    pano_config_free(cfg);
    return rc;
}
