/*
 * pano-indexer - Kafka to Elasticsearch, keyed by workflow (indexer.h says
 * how). This file: signals, status and statistics, the loop and main.
 */
#include "indexer.h"

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"
#include "retention.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

volatile sig_atomic_t indexer_stopping;

static const char *const stage_names[N_STAGES] = {"to_kafka", "to_bulk", "bulk"};

static void on_signal(int sig)
{
    (void)sig;
    if (indexer_stopping) {
        /* A second request: stop now (offsets stored so far are kept by
         * Kafka only if committed; the rest is replayed). */
        static const char msg[] = "pano-indexer: second signal, exiting now\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(1);
    }
    indexer_stopping = 1;
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
double indexer_jitter(void)
{
    unsigned short r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (unsigned short)getpid();
    return 0.5 + r / 65536.0;
}

/* ---- status ---------------------------------------------------------------- */

void indexer_publish_status(indexer *ix)
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
    COUNTER("batches_sent_ahead_total",
            "Batches whose bulk requests left while the batch before still waited for answers.",
            n->sent_ahead);
    GAUGE("bulk_seconds_total", "Time spent in bulk requests.", "%.3f", n->bulk_seconds);
    GAUGE("in_hand", "Messages held: the batch being settled and those polled meanwhile.", "%zu",
          ix->cur->count + ix->next->count + ix->npending);
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


static void sleep_unless_stopping(double s)
{
    for (double slept = 0; slept < s && !indexer_stopping; slept += 0.05)
        usleep(50000);
}

static int run(indexer *ix)
{
    double next_stats = pano_now() + ix->stats_interval;
    indexer_publish_status(ix);
    store_prepare_partitions(ix, pano_now());
    while (!indexer_stopping) {
        intake_collect_batch(ix);
        if (ix->cur->count) {
            outlet_settle_batch(ix);
            outlet_observe_stages(ix);
            outlet_finish_batch(ix);
        }
        double now = pano_now();
        if (now >= next_stats) {
            log_stats(ix);
            next_stats = now + ix->stats_interval;
        }
        if (now - ix->last_publish >= 1)
            indexer_publish_status(ix);
        if (now - ix->last_prepared >= PREPARE_EVERY)
            store_prepare_partitions(ix, now);
        if (store_any_retention(ix) && now - ix->last_retention >= ix->retention_interval) {
            store_retention_pass(ix, false);
            ix->last_retention = now;
        }
    }
    /* Drain: the batch in hand was settled (or given up) above, and one
     * sent ahead, its requests out already, is settled too; messages
     * polled meanwhile are left for the next run. */
    if (ix->next->sealed) {
        intake_collect_batch(ix); /* it becomes the batch in hand */
        outlet_settle_batch(ix);
        outlet_observe_stages(ix);
        outlet_finish_batch(ix);
    }
    intake_drop_partitions(ix, NULL); /* the next batch and pending: replayed */
    log_stats(ix);
    return 0;
}

static int print_templates(indexer *ix)
{
    pano_template *t;
    size_t nt;
    char err[512], *warnings;
    if (outlet_build_templates(ix, &t, &nt, &warnings, err, sizeof err) < 0) {
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
            goto usage_error;
        if (handled)
            continue;
        if (opt > 0 && opt < 128 && keys[opt]) {
            if (pano_cli_set(cfg, keys[opt], optarg) < 0)
                goto usage_error;
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
            pano_config_free(cfg);
            return 0;
        } else {
            usage(stderr);
            goto usage_error;
        }
    }
    if (optind < argc) {
        pano_error("unexpected argument '%s'", argv[optind]);
        goto usage_error;
    }
    if (dry_run && !want_retention && !want_unalias) {
        pano_error("--dry-run goes with --retention or --remove-aliases");
        goto usage_error;
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
        goto usage_error;
    }
    ix.replicas = pano_replicas_parse(pano_config_str(cfg, "pano.indexer.replicas"));
    if (ix.replicas < PANO_REPLICAS_AUTO) {
        pano_error("pano.indexer.replicas '%s': use auto or a number from 0 to 16",
                   pano_config_str(cfg, "pano.indexer.replicas"));
        goto usage_error;
    }
    if (!store_index_name_ok(ix.prefix, true)) {
        pano_error("pano.indexer.index_prefix '%s': use lowercase letters, digits, '.', '_' "
                   "and '-', not first '.', '_' or '-'",
                   ix.prefix);
        goto usage_error;
    }
    if (!store_index_name_ok(ix.fallback_index, false) || !store_index_name_ok(ix.dead_letter_index, false)) {
        pano_error("pano.indexer.fallback_index / dead_letter_index: not valid index names");
        goto usage_error;
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
    ix.cur = &ix.batches[0];
    ix.next = &ix.batches[1];

    int rc = 1;
    ix.es = pano_es_new(cfg, err, sizeof err);
    if (!ix.es) {
        pano_error("%s", err);
        rc = 2;
        goto out;
    }
    for (int k = 0; k < 2; k++) {
        ix.batches[k].items = pano_calloc(ix.max_docs, sizeof *ix.batches[k].items);
        ix.batches[k].es = pano_es_new(cfg, err, sizeof err);
        if (!ix.batches[k].es) {
            pano_error("%s", err);
            rc = 2;
            goto out;
        }
    }
    if (want_retention || want_unalias) {
        long n = 0, m = 0;
        if (want_retention && (n = store_retention_pass(&ix, dry_run)) >= 0 && !dry_run)
            pano_info("retention: %ld indices deleted", n);
        if (want_unalias && (m = store_remove_aliases(&ix, dry_run)) >= 0 && !dry_run)
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
    if (pano_cli_catch_stop_signals(on_signal, PANO_IGNORE_SIGPIPE) < 0)
        goto out;
    /* The templates must be in place before the first document creates an
     * index: wait for Elasticsearch rather than index with wrong types, and
     * before joining the group, so that no partition waits on an indexer
     * that cannot index (or must not, over the shard budget). */
    for (double backoff = 1; !indexer_stopping && outlet_setup_indices(&ix) < 0;
         backoff = backoff * 2 > ix.max_backoff ? ix.max_backoff : backoff * 2)
        sleep_unless_stopping(backoff * indexer_jitter());
    if (indexer_stopping) {
        rc = 0;
        goto out;
    }
    if (store_check_shard_budget(&ix) < 0) {
        rc = 2;
        goto out;
    }
    ix.consumer = intake_create_consumer(&ix, err, sizeof err);
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
    if (sigemptyset(&al.sa_mask) == 0 && sigaction(SIGALRM, &al, NULL) == 0)
        alarm(30);

    intake_close_consumer(&ix);
    indexer_publish_status(&ix);
out:
    pano_status_free(ix.status);
    pano_es_free(ix.es);
    for (int k = 0; k < 2; k++) {
        batch *b = &ix.batches[k];
        pano_es_free(b->es);
        for (size_t i = 0; i < b->nbodies; i++)
            pano_buf_free(&b->bodies[i]);
        free(b->bodies);
        free(b->items);
    }
    free(ix.pending);
    pano_config_free(cfg);
    return rc;
usage_error:
    pano_config_free(cfg);
    return 2;
}
