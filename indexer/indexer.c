/*
 * pano-indexer - Kafka to Elasticsearch, keyed by workflow (indexer.h says
 * how). This file: signals, status and statistics, main, and the loop with
 * its policies, over intake.c (Kafka) and outlet.c (Elasticsearch).
 */
#include "indexer.h"

#include "buf.h"
#include "cli.h"
#include "kafka.h"
#include "log.h"
#include "thread.h"
#include "upkeep.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Set by SIGTERM/SIGINT: finish the batch in hand, then stop. */
static volatile sig_atomic_t indexer_stopping;

/* The partitions of now and of the next hour are made every PREPARE_EVERY
 * seconds. */
#define PREPARE_EVERY 600

/* A signal asked to stop, or the consumer failed for good. */
static bool stopping(const indexer *ix)
{
    return indexer_stopping || ix->fatal;
}

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
            "      --dry-run          with --retention: list what\n"
            "                         would go, change nothing\n"
            "\n"
            "SIGTERM or SIGINT: finish the batch in hand (at most\n"
            "pano.indexer.drain_timeout seconds), commit, exit 0.\n"
            "\n" PANO_CLI_COMMON_HELP);
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
    COUNTER("summary_compactions_total",
            "Summary indices force-merged without their deleted documents.", n->compactions);
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
    static const deltas_counters none;
    const deltas_counters *d = ix->deltas ? deltas_counts(ix->deltas) : &none;
    COUNTER("deltas_made_total", "Samples that came without delta given one by the indexer.",
            d->made);
    COUNTER("deltas_late_total",
            "Of those, older than their run's latest sample or a copy of it: delta 0.", d->late);
    COUNTER("closing_samples_total",
            "Closing samples made at the end of a run whose deltas the indexer made.",
            d->closings);
    COUNTER("closing_samples_stored_total", "Closing samples stored (created or there already).",
            n->closings);
    COUNTER("delta_lookups_total",
            "Workflows and runs looked up in Elasticsearch for the state of their samples.",
            d->lookups);
    COUNTER("delta_runs_evicted_total", "Runs evicted from the table of runs.", d->evicted);
    GAUGE("delta_runs", "Runs in the table of runs (pano.indexer.delta_runs at most).", "%zu",
          ix->deltas ? deltas_runs(ix->deltas) : 0);
    GAUGE("bulk_seconds_total", "Time spent in bulk requests.", "%.3f", n->bulk_seconds);
    const summary_round *r = &ix->summaries;
    COUNTER("summaries_written_total", "Summary documents written.", r->written);
    COUNTER("summaries_unchanged_total",
            "Summary updates found applied already (their answer was lost).", r->unchanged);
    COUNTER("summary_conflicts_total",
            "Summary documents written by another or not new (409), read and applied again.",
            r->conflicts);
    COUNTER("summary_retries_total", "Summary documents retried (429, 5xx).", r->retries);
    COUNTER("summary_reads_total",
            "Summary documents read (_mget): not as this indexer last wrote them.", r->reads);
    COUNTER("summaries_refused_total", "Summary documents refused (other 4xx): left out.",
            r->refused);
    COUNTER("summary_requests_total", "_mget and bulk requests of the summaries.",
            n->summary_requests);
    GAUGE("summary_seconds_total", "Time spent in the summaries' requests.", "%.3f",
          n->summary_seconds);
    GAUGE("in_hand", "Messages held: the batch being settled and those polled meanwhile.", "%zu",
          ix->cur->count + ix->next->count + ix->npending);
    GAUGE("elasticsearch_up", "1 when the last request to Elasticsearch was answered.", "%d",
          ix->es_up ? 1 : 0);
    GAUGE("paused", "1 while the partitions are paused (Elasticsearch unavailable).", "%d",
          ix->paused ? 1 : 0);
    GAUGE("uptime_seconds", "Seconds since start.", "%.0f", pano_monotonic() - ix->started);
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
    ix->last_publish = pano_monotonic();
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

/* ---- the loop ------------------------------------------------------------- */

/* Gather up to max_docs messages, or max_bytes, or what came within linger
 * seconds of the first one. */
static void collect_batch(indexer *ix)
{
    if (ix->cur->count == 0 && ix->next->count > 0) {
        /* What was gathered (and maybe sent ahead) while the last batch
         * was in flight. */
        batch *t = ix->cur;
        ix->cur = ix->next;
        ix->next = t;
    }
    batch *b = ix->cur;
    if (b->sealed)
        return;
    intake_take_pending(ix, b);
    while (!batch_full(b, &ix->limits) && !stopping(ix)) {
        double left = batch_left(b, &ix->limits, pano_monotonic(), 0.5);
        if (b->count && left <= 0)
            break;
        rd_kafka_message_t *msg = intake_poll(ix, (int)(left * 1000) + 1);
        if (!msg) {
            if (b->count == 0)
                return; /* nothing yet: let the caller check for signals */
            continue;
        }
        intake_add(ix, b, msg);
    }
}

/* Gather the next batch while the HTTP thread works, until it is done.
 * Older messages (polled during a backoff) first. Once the next batch is
 * complete (full, or linger passed since its first message) it is sent
 * ahead, and what comes after waits in pending (up to a batch of it; then
 * nothing more is polled until the answers come). */
static void prefetch(indexer *ix, atomic_bool *done)
{
    batch *b = ix->next;
    if (!b->sealed)
        intake_take_pending(ix, b);
    while (!atomic_load(done) && !stopping(ix)) {
        bool full = batch_full(b, &ix->limits);
        double left = batch_left(b, &ix->limits, pano_monotonic(), 1);
        if (!b->sealed && (full || left <= 0) && ix->indices_ready && ix->es_up && !ix->paused) {
            /* sealed now; an ordered one waits for the answers, and one
             * whose lookups failed is tried again as the batch in hand */
            if (outlet_prepare(ix, b) && !b->ordered)
                ix->n.sent_ahead += outlet_start(ix, b, true);
        }
        if (b->sealed ? ix->npending >= ix->limits.max_docs : full) {
            /* nowhere to put more: wait for the answers */
            usleep(1000);
            continue;
        }
        int timeout = 5; /* ms: the answers are checked for this often */
        if (!b->sealed && left > 0 && left * 1000 < timeout)
            timeout = (int)(left * 1000) + 1;
        rd_kafka_message_t *m = intake_poll(ix, timeout);
        if (!m)
            continue;
        if (b->sealed)
            intake_keep_pending(ix, m);
        else
            intake_add(ix, b, m);
    }
}

/* Wait between attempts while polling (the partitions are paused, so only
 * already fetched messages arrive; they wait in pending): the consumer
 * stays in its group. At most until deadline, when not 0. */
static void wait_polling(indexer *ix, double seconds, double deadline)
{
    double until = pano_monotonic() + seconds;
    if (deadline && until > deadline)
        until = deadline;
    for (double now = pano_monotonic(); now < until; now = pano_monotonic()) {
        rd_kafka_message_t *m = intake_poll(ix, (int)((until - now) * 1000) + 1);
        if (m)
            intake_keep_pending(ix, m);
    }
}

/* Send the current batch's unsettled items and apply the answers; on the
 * first attempt the next batch is gathered (and sent ahead) meanwhile.
 * When the batch was sent ahead, its first attempt is already running. */
static bool send_pending(indexer *ix, bool first)
{
    batch *b = ix->cur;
    if (!b->in_flight && !outlet_prepare(ix, b))
        return false;
    if (!b->in_flight && !outlet_start(ix, b, first))
        return true;
    if (b->attempt.threaded && first)
        prefetch(ix, &b->attempt.done);
    return outlet_finish(ix, b);
}

/* Send until every item is settled, backing off between attempts (polling
 * the consumer with the partitions paused while Elasticsearch does not
 * answer). After a shutdown request, give up when pano.indexer.drain_timeout
 * has passed. */
static void settle_batch(indexer *ix)
{
    batch *b = ix->cur;
    double backoff = BACKOFF_FIRST;
    double deadline = backoff_deadline(0, stopping(ix), pano_monotonic(), ix->drain_timeout);
    for (bool first = true;; first = false) {
        bool answered = b->count == 0 ||
                        ((b->in_flight || ix->indices_ready || outlet_setup_indices(ix) == 0) &&
                         send_pending(ix, first && !stopping(ix)));
        size_t left = batch_unsettled(b);
        if (left == 0)
            break;
        deadline = backoff_deadline(deadline, stopping(ix), pano_monotonic(), ix->drain_timeout);
        if (backoff_expired(deadline, pano_monotonic())) {
            pano_warn("giving up on %zu unsettled messages at shutdown (they will be replayed)",
                      left);
            break;
        }
        double wait = backoff * backoff_jitter();
        if (!answered) {
            intake_set_paused(ix, true);
            pano_info("Elasticsearch unavailable; retrying in %.1f s", wait);
        } else
            pano_debug("some documents must be retried; retrying in %.1f s", wait);
        if (pano_monotonic() - ix->last_publish >= 1)
            indexer_publish_status(ix);
        wait_polling(ix, wait, deadline);
        backoff = backoff_next(backoff, ix->max_backoff);
    }
    intake_set_paused(ix, false);
}

/* Bring the summaries of the current batch's events up to date (after its
 * events are settled, before its offsets are stored): rounds until every
 * document is written or refused, backing off (polling, the partitions
 * paused) while Elasticsearch does not answer; after a shutdown request,
 * at most until pano.indexer.drain_timeout. */
static void *summaries_thread(void *arg)
{
    outlet_summaries(arg);
    return NULL;
}

/* A round; the first one in a thread of its own while the next batch is
 * gathered (and sent ahead when complete), as for the events' first
 * attempt. */
static bool summaries_round(indexer *ix, summary_round *r, bool first)
{
    summary_call c = {.ix = ix, .r = r, .gather = first ? ix->cur : NULL};
    atomic_init(&c.done, false);
    pthread_t t;
    bool threaded = false;
    if (first && !stopping(ix))
        threaded = pano_thread_start(&t, summaries_thread, &c);
    if (threaded) {
        /* a rebalance while polling must not drop what the thread reads */
        ix->cur->gathering = true;
        prefetch(ix, &c.done);
        pthread_join(t, NULL);
        ix->cur->gathering = false;
        ix->n.dropped_revoked += batch_drop_deferred(ix->cur);
    } else
        outlet_summaries(&c);
    indexer_es_answered(ix, c.status, c.err);
    return c.answered;
}

static void settle_summaries(indexer *ix)
{
    summary_round *r = &ix->summaries;
    double backoff = BACKOFF_FIRST;
    double deadline = backoff_deadline(0, stopping(ix), pano_monotonic(), ix->drain_timeout);
    for (bool first = true; first || summaries_unsettled(r); first = false) {
        uint64_t conflicts = r->conflicts;
        bool answered = summaries_round(ix, r, first);
        size_t left = summaries_unsettled(r);
        if (left == 0)
            break;
        if (answered && r->conflicts - conflicts == left)
            continue; /* written meanwhile by another: read them again at once */
        deadline = backoff_deadline(deadline, stopping(ix), pano_monotonic(), ix->drain_timeout);
        if (backoff_expired(deadline, pano_monotonic())) {
            pano_warn("giving up on %zu summaries at shutdown", left);
            break;
        }
        double wait = backoff * backoff_jitter();
        if (!answered) {
            intake_set_paused(ix, true);
            pano_info("Elasticsearch unavailable; writing %zu summaries again in %.1f s", left,
                      wait);
        } else
            pano_debug("%zu summaries to write again in %.1f s", left, wait);
        if (pano_monotonic() - ix->last_publish >= 1)
            indexer_publish_status(ix);
        wait_polling(ix, wait, deadline);
        backoff = backoff_next(backoff, ix->max_backoff);
    }
    intake_set_paused(ix, false);
    double now = pano_monotonic();
    for (size_t i = 0; i < r->n; i++)
        if (r->docs[i].found)
            upkeep_note_update(ix, r->docs[i].index, now);
    summaries_clear(r);
}

/* Record where the time of the current batch's indexed events went (a
 * replayed or late event's to_kafka is its age: the histogram shows it as
 * such). */
static void observe_stages(indexer *ix)
{
    const batch *b = ix->cur;
    for (size_t i = 0; i < b->count; i++) {
        const batch_item *it = &b->items[i];
        int64_t produced_ms = rd_kafka_message_timestamp(it->msg, NULL);
        if (!it->settled || it->rejected || it->closing || produced_ms <= 0 || it->doc.ts <= 0)
            continue;
        double produced = (double)produced_ms / 1000;
        pano_histogram_observe(&ix->stages[STAGE_TO_KAFKA], produced - it->doc.ts);
        pano_histogram_observe(&ix->stages[STAGE_TO_BULK], b->sent_date - produced);
        pano_histogram_observe(&ix->stages[STAGE_BULK], b->answered - b->sent);
    }
}

/* Settle the current batch, record its times, store the offsets it allows,
 * and empty it. */
static void deliver_batch(indexer *ix)
{
    settle_batch(ix);
    if (ix->summarize)
        settle_summaries(ix);
    observe_stages(ix);
    rd_kafka_topic_partition_list_t *offsets = batch_offsets(ix->cur);
    intake_store_offsets(ix, offsets);
    rd_kafka_topic_partition_list_destroy(offsets);
    batch_release(ix->cur);
}

static int run(indexer *ix)
{
    double next_stats = pano_monotonic() + ix->stats_interval;
    indexer_publish_status(ix);
    upkeep_prepare_partitions(ix);
    ix->last_retention = pano_monotonic() - ix->retention_interval; /* due at once */
    while (!stopping(ix)) {
        collect_batch(ix);
        if (ix->cur->count)
            deliver_batch(ix);
        intake_place_unplaced(ix);
        double now = pano_monotonic();
        if (now >= next_stats) {
            log_stats(ix);
            next_stats = now + ix->stats_interval;
        }
        if (now - ix->last_publish >= 1)
            indexer_publish_status(ix);
        if (now - ix->last_prepared >= PREPARE_EVERY)
            upkeep_prepare_partitions(ix);
        if (upkeep_any_retention(ix) && now - ix->last_retention >= ix->retention_interval) {
            upkeep_retention_pass(ix, false);
            ix->last_retention = now;
        }
        upkeep_compact_summaries(ix, now, false);
    }
    /* Drain: the batch in hand was settled (or given up) above, and one
     * sent ahead, its requests out already, is settled too; messages
     * polled meanwhile are left for the next run. */
    if (ix->next->sealed) {
        collect_batch(ix); /* it becomes the batch in hand */
        deliver_batch(ix);
    }
    /* the next batch and pending: replayed */
    for (int k = 0; k < 2; k++)
        outlet_land(ix, &ix->batches[k]);
    intake_drop_partitions(ix, NULL);
    upkeep_compact_summaries(ix, pano_monotonic(), true);
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
    enum { OPT_PRINT_TEMPLATES = 0x2000, OPT_RETENTION, OPT_DRY_RUN };
    static const struct option options[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"es-url", required_argument, NULL, 'e'},
        {"group", required_argument, NULL, 'g'},
        {"print-templates", no_argument, NULL, OPT_PRINT_TEMPLATES},
        {"retention", no_argument, NULL, OPT_RETENTION},
        {"dry-run", no_argument, NULL, OPT_DRY_RUN},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    static const char *const keys[128] = {
        ['b'] = "pano.kafka.brokers", ['e'] = "pano.es.url", ['g'] = "pano.indexer.group"};
    bool want_templates = false, want_retention = false, dry_run = false;
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
    if (dry_run && !want_retention) {
        pano_error("--dry-run goes with --retention");
        goto usage_error;
    }
    pano_cli_apply_logging(cfg);

    indexer ix = {.cfg = cfg, .started = pano_monotonic()};
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
    if (!upkeep_index_name_ok(ix.prefix, true)) {
        pano_error("pano.indexer.index_prefix '%s': use lowercase letters, digits, '.', '_' "
                   "and '-', not first '.', '_' or '-'",
                   ix.prefix);
        goto usage_error;
    }
    if (!upkeep_index_name_ok(ix.fallback_index, false) || !upkeep_index_name_ok(ix.dead_letter_index, false)) {
        pano_error("pano.indexer.fallback_index / dead_letter_index: not valid index names");
        goto usage_error;
    }
    ix.summarize = pano_config_bool(cfg, "pano.indexer.summaries");
    ix.layout = (pano_bulk_layout){.prefix = ix.prefix,
                                   .fallback_index = ix.fallback_index,
                                   .policies = ix.policies};
    ix.summary_layout = (summary_layout){.prefix = ix.prefix, .policies = ix.policies};
    snprintf(ix.dead_letter_topic, sizeof ix.dead_letter_topic, "%s",
             pano_config_str(cfg, "pano.kafka.dead_letter_topic"));
    ix.retention_interval = pano_config_double(cfg, "pano.indexer.retention_interval");
    if (want_templates) {
        int rc = print_templates(&ix);
        pano_config_free(cfg);
        return rc;
    }
    ix.limits = (batch_limits){
        .max_docs = (size_t)pano_config_int(cfg, "pano.indexer.batch_docs"),
        .max_bytes = pano_config_size(cfg, "pano.indexer.batch_bytes"),
        .linger = pano_config_double(cfg, "pano.indexer.linger"),
    };
    ix.dead_letters = (batch_dead_letters){
        .index = ix.dead_letter_index,
        .period = ix.policies[PANO_STREAM_DEAD_LETTER].period,
        .bridge_topic = ix.dead_letter_topic,
    };
    ix.max_backoff = pano_config_double(cfg, "pano.indexer.max_backoff");
    ix.drain_timeout = pano_config_double(cfg, "pano.indexer.drain_timeout");
    ix.stats_interval = pano_config_double(cfg, "pano.indexer.stats_interval");
    ix.concurrency = (size_t)pano_config_int(cfg, "pano.indexer.concurrency");
    ix.cur = &ix.batches[0];
    ix.next = &ix.batches[1];
    int64_t delta_runs = pano_config_int(cfg, "pano.indexer.delta_runs");
    if (delta_runs > 0 && (size_t)delta_runs < 2 * ix.limits.max_docs) {
        pano_error("pano.indexer.delta_runs (%lld) must be 0 or at least twice "
                   "pano.indexer.batch_docs (%zu): the runs of two batches in flight",
                   (long long)delta_runs, ix.limits.max_docs);
        goto usage_error;
    }
    if (delta_runs > 0)
        ix.deltas = deltas_new((size_t)delta_runs, ix.prefix);
    /* Both the summaries and the deltas read the event as parsed. */
    ix.layout.keep_event = ix.summarize || ix.deltas;
    pano_arena_init(&ix.parse_arena, 0); /* each message parsed there, dropped at the next */
    ix.layout.arena = &ix.parse_arena;
    pano_kafka_topic(cfg, "kickstart", ix.kickstart_topic, sizeof ix.kickstart_topic);

    int rc = 1;
    ix.es = pano_es_new(cfg, err, sizeof err);
    if (!ix.es) {
        pano_error("%s", err);
        rc = 2;
        goto out;
    }
    for (int k = 0; k < 2; k++) {
        if (batch_init(&ix.batches[k], 2 * ix.limits.max_docs, cfg, err, sizeof err) < 0) {
            pano_error("%s", err);
            rc = 2;
            goto out;
        }
    }
    if (want_retention) {
        long n = upkeep_retention_pass(&ix, dry_run);
        if (n >= 0 && !dry_run)
            pano_info("retention: %ld indices deleted", n);
        rc = n < 0 ? 1 : fflush(stdout) == 0 ? 0 : 1;
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
         backoff = backoff_next(backoff, ix.max_backoff))
        sleep_unless_stopping(backoff * backoff_jitter());
    if (indexer_stopping) {
        rc = 0;
        goto out;
    }
    if (upkeep_check_shard_budget(&ix) < 0) {
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
    for (int k = 0; k < 2; k++)
        batch_free(&ix.batches[k]);
    free(ix.pending);
    if (ix.received)
        rd_kafka_topic_partition_list_destroy(ix.received);
    if (ix.unplaced)
        rd_kafka_topic_partition_list_destroy(ix.unplaced);
    deltas_free(ix.deltas);
    summaries_free(&ix.summaries);
    pano_arena_free(&ix.parse_arena);
    pano_config_free(cfg);
    return rc;
usage_error:
    pano_config_free(cfg);
    return 2;
}
