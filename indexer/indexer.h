/*
 * indexer.h - pano-indexer's parts: Kafka to Elasticsearch, keyed by workflow.
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
 * the partition settled (batches are settled one after the other, so earlier
 * batches are settled already, even when the next one was sent ahead), and
 * auto-commit commits what was stored. A crash replays at most the two
 * unsettled batches, absorbed by the create/409 rule.
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
 *
 * The program's rooms, each calling only those below it (docs/indexer.md,
 * Code):
 *   indexer.c  signals, status and statistics, main, and the loop with its
 *              policies: gathering batches (linger), the next batch while
 *              one is in flight (sent ahead when complete), backoff while
 *              polling with the partitions paused, the drain, offsets;
 *   intake.c   Kafka: the consumer, rebalances, polling, pausing, messages
 *              into batches, storing offsets;
 *   outlet.c   Elasticsearch: templates, a batch's deltas with their
 *              lookups, bulk requests in flight and what their answers do
 *              to the items;
 *   upkeep.c   the store's upkeep (upkeep.h): partitions made ahead,
 *              retention, the shard budget;
 *   batch.c    a batch's items and lifetime, dead-letter documents, the
 *              decisions over one batch (batch.h);
 *   deltas.c   the delta of samples that come without one, per run
 *              (deltas.h), kept in run_table.c;
 *   summaries.c what the batch's events contribute to the per-run
 *              summaries, and what a round of updating them reads and
 *              writes (summaries.h);
 *   backoff.c  the waits between attempts and the drain deadline.
 * This header is internal to pano-indexer.
 */

#ifndef PANO_INDEXER_H
#define PANO_INDEXER_H

#include "backoff.h"
#include "batch.h"
#include "bulk.h"
#include "config.h"
#include "deltas.h"
#include "es.h"
#include "json.h"
#include "log.h"
#include "partition.h"
#include "status.h"
#include "summaries.h"
#include "template.h"

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A batch is split into concurrent bulk requests of at least this many
 * documents. */
#define MIN_SLICE 1000
/* The summary indices awaiting compaction that the indexer keeps in mind. */
#define COMPACT_INDICES 16

/* Only what the outcome needs comes back: much less to read. */
#define BULK_PATH "/_bulk?filter_path=errors,items.*.status,items.*.error.type,items.*.error.reason"

typedef struct {
    uint64_t consumed, indexed, duplicates, dead, unassigned, retries;
    uint64_t bulk_requests, bulk_failures, rebalances, dropped_revoked;
    uint64_t bridge_dead, expired, indices_deleted, compactions;
    uint64_t offsets_stored, sent_ahead;
    uint64_t closings; /* closing samples stored (created, or there already) */
    double bulk_seconds;
    uint64_t summary_requests; /* _mget and bulk requests of the summaries */
    double summary_seconds;
} counters;

/* Where an event's time goes before it is searchable, per indexed document:
 * from its ts until the bridge produced it to Kafka (publisher, RabbitMQ,
 * bridge), from then until its bulk request left (Kafka, polling, batching,
 * the batch ahead), and the bulk request until settled. Refresh follows. */
enum { STAGE_TO_KAFKA, STAGE_TO_BULK, STAGE_BULK, N_STAGES };

typedef struct {
    pano_config *cfg;
    rd_kafka_t *consumer;
    pano_es *es;
    pano_bulk_layout layout;
    pano_arena parse_arena;        /* layout.arena: the message being added, parsed */
    bool summarize;                /* pano.indexer.summaries: summaries are kept */
    summary_layout summary_layout;
    summary_round summaries; /* the summaries of the batch being delivered, and
                                what became of all of them */
    pano_stream_policy policies[PANO_N_STREAMS];
    const char *prefix;
    char fallback_index[256], dead_letter_index[256];
    char dead_letter_topic[256];
    char kickstart_topic[256]; /* the topic of run events (deltas.h) */
    deltas *deltas;            /* NULL when pano.indexer.delta_runs is 0 */
    double retention_interval, last_retention; /* last_*: pano_monotonic() */
    batch_limits limits;
    batch_dead_letters dead_letters;
    double max_backoff, drain_timeout, stats_interval;

    /* Two batches: the one being settled and the next, gathered meanwhile.
     * When the next one is complete it is sent ahead, while the one before
     * it still waits for its answers, on its own Elasticsearch client; its
     * answers are read, and its offsets stored, only once the one before it
     * is settled. */
    batch batches[2];
    batch *cur;  /* the batch being settled */
    batch *next; /* the next, gathered while the current one is in flight */
    /* messages polled while a batch was being settled, for the next one */
    rd_kafka_message_t **pending;
    size_t npending, cap_pending;
    bool paused;
    /* Where each partition held goes on: the offset after the last message
     * received from it (intake.c), which no seek of librdkafka's forgets;
     * and the partitions a resume left paused, their start not yet known,
     * placed again from the loop (intake_place_unplaced). */
    rd_kafka_topic_partition_list_t *received, *unplaced;
    int received_last; /* received's element the last message went to */
    double next_placing; /* pano_monotonic() */
    bool indices_ready;
    size_t concurrency;
    pano_status *status;     /* /metrics over HTTP (pano.indexer.status_port) */
    const char *status_file; /* pano.indexer.status_file */
    double started, last_publish; /* pano_monotonic() */
    bool es_up;
    bool fatal;       /* the consumer failed for good (fenced) */
    bool cooperative; /* the assignment strategy configured is cooperative */
    bool was_assigned; /* the group gave this member an assignment (even an empty one) */
    double last_prepared; /* when the coming partitions were last created (monotonic) */
    /* the summary indices updated since they were last compacted (upkeep.h) */
    struct {
        char name[256];
        double first, last; /* the first and last update since (monotonic) */
        bool pending;       /* updated since */
        bool configured;    /* its merge policy set by this process */
    } compact[COMPACT_INDICES];
    size_t ncompact;
    int replicas;         /* pano.indexer.replicas, or PANO_REPLICAS_AUTO */
    counters n;
    pano_histogram stages[N_STAGES];
} indexer;

/* Note whether Elasticsearch answered a request (status 0: it did not, err
 * says why), warning when it stops answering. Returns status. */
static inline long indexer_es_answered(indexer *ix, long status, const char *err)
{
    if (!status && ix->es_up)
        pano_warn("%s", err);
    ix->es_up = status != 0;
    return status;
}

/* ---- indexer.c ----------------------------------------------------------- */

/* Replace the metrics served and written (pano.indexer.status_*). */
void indexer_publish_status(indexer *ix);

/* ---- intake.c: Kafka ----------------------------------------------------- */

rd_kafka_t *intake_create_consumer(indexer *ix, char *err, size_t errlen);
/* Commit what is settled, leave the group and destroy the consumer (no
 * batch in flight). */
void intake_close_consumer(indexer *ix);
/* Poll the consumer for at most timeout_ms: serves rebalances and keeps this
 * member in the group. A message, or NULL. A fatal error of the consumer
 * sets ix->fatal. */
rd_kafka_message_t *intake_poll(indexer *ix, int timeout_ms);
/* Add a polled message to b (which has room), with its bulk document, or
 * its dead-letter document when it cannot be indexed. */
void intake_add(indexer *ix, batch *b, rd_kafka_message_t *msg);
/* Keep a polled message for a later batch (ix->pending). */
void intake_keep_pending(indexer *ix, rd_kafka_message_t *m);
/* Move what waits in pending into b, oldest first, until b is full. */
void intake_take_pending(indexer *ix, batch *b);
/* Pause or resume every assigned partition (Elasticsearch unavailable). A
 * partition resumes at the message after the last one received from it,
 * or at its committed offset (its start when it has none) when nothing was
 * received from it since it was assigned; one whose committed offset cannot
 * be read, or that cannot be sought, stays paused (ix->unplaced) rather than
 * go on where librdkafka stood, which may be past messages it fetched and
 * dropped at the pause. */
void intake_set_paused(indexer *ix, bool pause);
/* Try again to resume the partitions a resume left paused; at most once a
 * second. */
void intake_place_unplaced(indexer *ix);
/* Drop the messages of the partitions in parts from both batches (a batch
 * in flight once its answers are in) and from pending, unsettled: their new
 * owner replays them. parts NULL: all of them, with no batch in flight. */
void intake_drop_partitions(indexer *ix, const rd_kafka_topic_partition_list_t *parts);
/* Store offsets (batch_offsets) for auto-commit. */
void intake_store_offsets(indexer *ix, rd_kafka_topic_partition_list_t *offsets);

/* ---- outlet.c: Elasticsearch -------------------------------------------- */

/* The index templates for this configuration, from the embedded schemas. */
int outlet_build_templates(const indexer *ix, pano_template **t, size_t *nt, char **warnings,
                           char *err, size_t errlen);
/* Install the templates; 0 when every one was accepted. */
int outlet_setup_indices(indexer *ix);
/* Give b's samples their delta (deltas.h), with the lookups that needs
 * (a _refresh and an _msearch per round), once; then it takes no more
 * messages. False when Elasticsearch did not answer them: try again. */
bool outlet_prepare(indexer *ix, batch *b);
/* Start an attempt at the unsettled items of b (in an HTTP thread of its
 * own when threaded, else answered before returning). False when nothing
 * is left to send. */
bool outlet_start(indexer *ix, batch *b, bool threaded);
/* Wait for the answers of b's attempt and apply them to its items. False
 * when some request got no usable answer (Elasticsearch down or overloaded
 * as a whole). */
bool outlet_finish(indexer *ix, batch *b);
/* outlet_finish() for a batch in flight; nothing for one that is not. */
void outlet_land(indexer *ix, batch *b);
/* One round over the unsettled summaries of a batch (summaries.h), the
 * first one gathered from the batch first: read what must be, apply,
 * write. It may run in a thread of its own while the
 * loop gathers the next batch: it touches only the round, ix->es and the
 * summaries' counters, and leaves what Elasticsearch answered in the call
 * for indexer_es_answered(). */
typedef struct {
    indexer *ix;
    summary_round *r;
    const batch *gather; /* the batch to gather r from first (summaries_gather), or NULL */
    bool answered;     /* every request got a usable answer */
    long status;       /* the last request's HTTP status, 0: none came */
    char err[512];     /* why, when none came */
    atomic_bool done;  /* set when the round is over */
} summary_call;
void outlet_summaries(summary_call *c);

#endif
