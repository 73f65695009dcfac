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
 * The program in four rooms sharing the indexer's state:
 *   intake.c   Kafka: the consumer, rebalances, polling, gathering batches
 *              (and the next one while a batch is in flight), dead letters;
 *   outlet.c   Elasticsearch: templates, bulk requests in flight, retries,
 *              settling a batch and storing the offsets it allows;
 *   store.c    the store's upkeep: partitions made ahead, retention,
 *              aliases of earlier versions, the shard budget;
 *   indexer.c  signals, status and statistics, the loop and main.
 * This header is internal to pano-indexer.
 */

#ifndef PANO_INDEXER_H
#define PANO_INDEXER_H

#include "bulk.h"
#include "config.h"
#include "es.h"
#include "json.h"
#include "partition.h"
#include "status.h"
#include "template.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* The bulk requests of one attempt at a batch: consecutive slices of its
 * unsettled items (order), run in an HTTP thread or in the caller. */
typedef struct {
    size_t *order;         /* the items sent, by index in the batch */
    size_t *first, k;      /* slice j is order[first[j] .. first[j + 1]) */
    pano_es_call *calls;   /* one per slice */
    atomic_bool done;      /* set by the HTTP thread when all are answered */
    pthread_t thread;
    bool threaded;
    double started, answered;
} bulk_attempt;

/* A batch of messages with what its bulk requests need. There are two: the
 * one being settled and the next, gathered meanwhile. When the next one is
 * complete it is sent ahead, while the one before it still waits for its
 * answers, on its own Elasticsearch client; its answers are read, and its
 * offsets stored, only once the one before it is settled. */
typedef struct {
    batch_item *items;
    size_t count, bytes;
    double first;  /* when its first message came */
    double sent;   /* when its first bulk request left */
    double answered; /* when the answers of its last attempt came */
    bool sealed;   /* sent ahead: takes no more messages */
    bool in_flight; /* an attempt was started, its answers not applied yet */
    bulk_attempt attempt;
    pano_es *es;
    pano_buf *bodies; /* one per concurrent bulk request */
    size_t nbodies;
    rd_kafka_topic_partition_list_t *deferred; /* revoked while in flight */
} batch;

typedef struct {
    uint64_t consumed, indexed, duplicates, dead, unassigned, retries;
    uint64_t bulk_requests, bulk_failures, rebalances, dropped_revoked;
    uint64_t bridge_dead, expired, indices_deleted;
    uint64_t offsets_stored, sent_ahead;
    double bulk_seconds;
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
    pano_stream_policy policies[PANO_N_STREAMS];
    const char *prefix;
    char fallback_index[256], dead_letter_index[256];
    char dead_letter_topic[256];
    double retention_interval, last_retention;
    size_t max_docs, max_bytes;
    double linger, max_backoff, drain_timeout, stats_interval;

    batch batches[2];
    batch *cur;  /* the batch being settled */
    batch *next; /* the next, gathered while the current one is in flight */
    /* messages polled while a batch was being settled, for the next one */
    rd_kafka_message_t **pending;
    size_t npending, cap_pending;
    bool paused;
    bool indices_ready;
    size_t concurrency;
    pano_status *status;     /* /metrics over HTTP (pano.indexer.status_port) */
    const char *status_file; /* pano.indexer.status_file */
    double started, last_publish;
    bool es_up;
    bool fatal;       /* the consumer failed for good (fenced) */
    bool cooperative; /* the assignment strategy configured is cooperative */
    bool was_assigned; /* the group gave this member an assignment (even an empty one) */
    double last_prepared; /* when the coming partitions were last created */
    int replicas;         /* pano.indexer.replicas, or PANO_REPLICAS_AUTO */
    counters n;
    pano_histogram stages[N_STAGES];
} indexer;

/* Set by SIGTERM/SIGINT: finish the batch in hand, then stop. */
extern volatile sig_atomic_t indexer_stopping;

/* The partitions of the next hour are made ahead every PREPARE_EVERY s. */
#define PREPARE_AHEAD 3600
#define PREPARE_EVERY 600

/* ---- indexer.c ----------------------------------------------------------- */

/* A factor in [0.5, 1.5) for backoffs, so indexers do not retry in step. */
double indexer_jitter(void);
/* Replace the metrics served and written (pano.indexer.status_*). */
void indexer_publish_status(indexer *ix);

/* ---- intake.c: Kafka ----------------------------------------------------- */

rd_kafka_t *intake_create_consumer(indexer *ix, char *err, size_t errlen);
/* Commit what is settled, leave the group and destroy the consumer. */
void intake_close_consumer(indexer *ix);
/* Gather up to max_docs messages, or max_bytes, or what came within linger
 * seconds of the first one. */
void intake_collect_batch(indexer *ix);
/* Gather the next batch while the HTTP thread works, until *done, sending
 * it ahead once it is complete (full, or linger passed). */
void intake_prefetch(indexer *ix, atomic_bool *done);
/* Poll for seconds (at most until deadline, when not 0), keeping what
 * arrives for the next batch: the consumer stays in its group. */
void intake_wait_polling(indexer *ix, double seconds, double deadline);
/* Pause or resume every assigned partition (Elasticsearch unavailable). */
void intake_set_paused(indexer *ix, bool pause);
/* Turn an item into its dead-letter document (see intake.c). */
void intake_make_dead_letter(indexer *ix, batch_item *it);
/* Drop the items of the partitions in parts (NULL: all), unsettled: their
 * new owner replays them. */
void intake_drop_items(indexer *ix, batch *b, const rd_kafka_topic_partition_list_t *parts);
/* Make a batch whose items are gone an empty, open one again. */
void intake_reset_batch(batch *b);
/* The same for both batches (after the answers of one in flight) and the
 * messages polled meanwhile. */
void intake_drop_partitions(indexer *ix, const rd_kafka_topic_partition_list_t *parts);

/* ---- outlet.c: Elasticsearch -------------------------------------------- */

/* A request whose answer is only checked for its status. Returns the HTTP
 * status, or 0 when none came; the body is in *answer when wanted. */
long outlet_es_call(indexer *ix, const char *method, const char *path, const char *body,
                    char **answer);
/* GET path and parse the answer: NULL unless it came with status 200 and is
 * JSON (*status: the HTTP status, 0 when none came). */
pano_json *outlet_es_get_json(indexer *ix, const char *path, long *status);
/* The index templates for this configuration, from the embedded schemas. */
int outlet_build_templates(const indexer *ix, pano_template **t, size_t *nt, char **warnings,
                           char *err, size_t errlen);
/* Install the templates; 0 when every one was accepted. */
int outlet_setup_indices(indexer *ix);
/* Send the next batch ahead, its requests in an HTTP thread of their own. */
void outlet_send_ahead(indexer *ix);
/* Wait for the answers of a batch in flight and apply them. */
void outlet_land(indexer *ix, batch *b);
/* Send until every item of the current batch is settled (see outlet.c). */
void outlet_settle_batch(indexer *ix);
/* Store the offsets the current batch allows, then empty it. */
void outlet_finish_batch(indexer *ix);
/* Record where the time of the current batch's indexed events went. */
void outlet_observe_stages(indexer *ix);

/* ---- store.c: the store's upkeep ---------------------------------------- */

/* A valid index name (prefix_only: a prefix of one). */
bool store_index_name_ok(const char *name, bool prefix_only);
/* Create the partitions of now and of the next hour ahead of their events. */
void store_prepare_partitions(indexer *ix, double now);
/* Whether any stream has a retention (else nothing is ever deleted). */
bool store_any_retention(const indexer *ix);
/* Delete the partitions past their stream's retention (a dry run lists
 * them); how many, or -1 when Elasticsearch did not answer. */
long store_retention_pass(indexer *ix, bool dry_run);
/* Remove the per-workflow aliases of earlier versions (a dry run lists
 * them); how many, or -1. */
long store_remove_aliases(indexer *ix, bool dry_run);
/* Refuse (-1) a configuration needing more shards than the cluster allows. */
int store_check_shard_budget(indexer *ix);

#endif
