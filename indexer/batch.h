/*
 * batch.h - pano-indexer's batches: the Kafka messages of one round of bulk
 * requests, each with its bulk document and how far it got.
 *
 * A batch holds up to a batch's worth of items in the order they were
 * polled. An item is settled once Elasticsearch has it (indexed, already
 * there, or as its dead-letter document); a message that cannot be indexed
 * becomes its dead-letter document (batch_make_dead_letter). A batch owns
 * its messages and documents until it is released, and its own
 * Elasticsearch client and request bodies for its whole life.
 *
 * Besides the holding, the decisions that only look at a batch and what is
 * asked: when it is due for sending (batch_left), what a bulk response does
 * to an item (batch_verdict), which offsets it allows to store
 * (batch_offsets). Times are pano_monotonic() seconds unless a field says
 * otherwise. It uses bulk.h and librdkafka's message types, nothing else of
 * the indexer.
 */
#ifndef PANO_INDEXER_BATCH_H
#define PANO_INDEXER_BATCH_H

#include "bulk.h"
#include "buf.h"
#include "es.h"
#include "partition.h"
#include "run_delta.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct batch_summary; /* summaries.h */

typedef struct {
    rd_kafka_message_t *msg; /* a closing sample's: the item's before it, not its own */
    pano_bulk_doc doc;
    pano_run_event *run; /* what a run event says (run_delta.h), or NULL */
    bool closing;  /* a closing sample the indexer made (deltas.h), after its end's item */
    struct batch_summary *summary; /* its contribution to a summary, or NULL */
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

/* A batch of messages with what its bulk requests need. */
typedef struct {
    batch_item *items;
    size_t count, bytes;
    double first;     /* when its first message came */
    double sent;      /* when its first bulk request left */
    double sent_date; /* the same on the wall clock (pano_now()), to compare
                         with Kafka's timestamps */
    double answered;  /* when the answers of its last attempt came */
    bool sealed;      /* takes no more messages: sent ahead, or prepared to be
                         sent once the batch before it is settled */
    bool prepared;    /* its samples have their deltas (outlet_prepare) */
    bool ordered;     /* it must be sent after the batch before it is
                         settled, in one bulk request (pano_run_change.late) */
    bool in_flight;   /* an attempt was started, its answers not applied yet */
    bool gathering;   /* its summaries are gathered in a thread (indexer.c) */
    bulk_attempt attempt;
    pano_es *es;
    pano_buf *bodies; /* one per concurrent bulk request */
    size_t nbodies;
    rd_kafka_topic_partition_list_t *deferred; /* revoked while in flight or
                                                  gathering */
} batch;

/* How big a batch may grow, and how long it waits for more. */
typedef struct {
    size_t max_docs, max_bytes;
    double linger; /* seconds after its first message */
} batch_limits;

/* ---- lifetime ------------------------------------------------------------ */

/* An empty batch of room for capacity items (messages and the closing
 * samples they bring: twice pano.indexer.batch_docs), with a client of its
 * own from pano.es.*; -1 with a message in err. */
int batch_init(batch *b, size_t capacity, const pano_config *cfg, char *err, size_t errlen);
/* Free what batch_init and the requests made (the items must be released). */
void batch_free(batch *b);
/* Destroy every item's document and message, and make the batch empty. */
void batch_release(batch *b);
/* Make a batch whose items are gone an empty, open one again. */
void batch_reset(batch *b);

/* ---- holding ------------------------------------------------------------- */

/* Append msg as a new item (its document not prepared yet), at time now;
 * the batch must have room (batch_full says when not). */
batch_item *batch_add(batch *b, rd_kafka_message_t *msg, double now);
/* Put closing samples into b, docs[k] (taken over) right after the item
 * after[k] (ascending), each with that item's message. b must have room. */
void batch_insert_closings(batch *b, const size_t *after, pano_bulk_doc *docs, size_t n);
/* Drop, unsettled, the items of the partitions in parts (NULL: all), a
 * closing sample with its end's; returns how many messages. */
size_t batch_drop(batch *b, const rd_kafka_topic_partition_list_t *parts);
/* Note partitions revoked while the batch is in flight (parts not NULL). */
void batch_defer(batch *b, const rd_kafka_topic_partition_list_t *parts);
/* Drop the items of the partitions deferred, once the answers are in;
 * returns how many. */
size_t batch_drop_deferred(batch *b);
/* How many items are not settled. */
size_t batch_unsettled(const batch *b);

/* A header of a Kafka message as a string in buf ("" when absent). */
const char *batch_header(const rd_kafka_message_t *m, const char *name, char *buf, size_t size);

/* Where dead-letter documents go. */
typedef struct {
    const char *index;        /* the dead-letter index's base name */
    pano_period period;       /* its partitions' */
    const char *bridge_topic; /* the bridge's dead-letter topic */
} batch_dead_letters;

/* Turn an item into its dead-letter document, made at the wall-clock time
 * now (batch.c says what it holds). */
void batch_make_dead_letter(batch_item *it, const batch_dead_letters *dl, double now);

/* ---- decisions ----------------------------------------------------------- */

/* Whether the batch takes no more messages: max_docs or max_bytes reached. */
bool batch_full(const batch *b, const batch_limits *lim);
/* Seconds until the batch is due for sending at time now: its linger after
 * its first message (<= 0: due); when it is empty, the wait given. */
double batch_left(const batch *b, const batch_limits *lim, double now, double empty_wait);

/* What a bulk response's result does to an item. */
typedef enum {
    BATCH_INDEXED,     /* settled: created */
    BATCH_UNASSIGNED,  /* settled: created in the fallback index */
    BATCH_DUPLICATE,   /* settled: already there (409) */
    BATCH_DEAD,        /* settled: its dead-letter document is written */
    BATCH_RETRY,       /* send it again (429, 5xx, no status) */
    BATCH_DEAD_LETTER, /* refused: make it its dead-letter document, send that */
    BATCH_REFUSED,     /* its dead-letter document refused: send it again, loudly */
} batch_verdict;

batch_verdict batch_verdict_of(const batch_item *it, const pano_bulk_result *r);

/* The offsets the batch allows to store: for each partition, one past its
 * last item with every earlier item of that partition settled (none for a
 * partition whose first item is unsettled); an end is settled with its
 * closing sample. Free with
 * rd_kafka_topic_partition_list_destroy(). */
rd_kafka_topic_partition_list_t *batch_offsets(const batch *b);

#endif
