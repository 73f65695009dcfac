/*
 * summaries.h - pano-indexer's side of the per-run summaries (summary.h):
 * what each event contributes, a batch's contributions merged per
 * document, and one round of reading those documents, applying the
 * updates and writing them back.
 *
 * At intake an event that belongs to a summary gets its contribution and
 * the document's index, _id and routing (summaries_note). Once the batch's
 * events are settled, summaries_gather merges the contributions of the
 * events Elasticsearch holds (created, or already there: a replay) per
 * document, counting only the created ones, under a token, the Kafka
 * partition and offset of the document's newest event in the batch. A
 * round then reads the documents (_mget, real time), applies each update
 * (pano_summary_apply: nothing to write when the document holds the token
 * already) and writes them back, each only if nobody wrote it since it was
 * read (create for a new one; index with if_seq_no and if_primary_term).
 * Per written document:
 *   2xx                 settled
 *   409                 written meanwhile by another: read and applied again
 *   429, 5xx, none      read and applied again after a backoff (a write
 *                       that was applied but not answered finds its token)
 *   other 4xx           refused: settled without it, counted and logged
 * Only batch.h, bulk.h and summary.h: the HTTP requests are the outlet's.
 */
#ifndef PANO_INDEXER_SUMMARIES_H
#define PANO_INDEXER_SUMMARIES_H

#include "batch.h"
#include "buf.h"
#include "bulk.h"
#include "json.h"
#include "summary.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an event contributes to a summary, held by its batch item. */
struct batch_summary {
    char index[256];                  /* the document's partition */
    char id[PANO_SUMMARY_ID_LEN + 1]; /* its _id */
    char routing[PANO_WF_UUID_LEN + 1];
    pano_json *part;
};

/* Where summaries go: the index prefix and each stream's policy. */
typedef struct {
    const char *prefix;
    const pano_stream_policy *policies; /* PANO_N_STREAMS */
} summary_layout;

/* The contribution of a prepared event (doc->event, parsed; offset: its
 * Kafka message's) to its summary, or NULL: an event of no summary, or
 * whose summary partition is past its retention at time now. */
struct batch_summary *summaries_note(const summary_layout *l, const pano_bulk_doc *doc,
                                     int64_t offset, double now);
void summaries_free_note(struct batch_summary *s);

/* One summary document of a batch. */
typedef struct {
    char index[256], id[PANO_SUMMARY_ID_LEN + 1], routing[PANO_WF_UUID_LEN + 1];
    char op[64];       /* the update's token: "<partition>:<offset>" */
    pano_json *update; /* the merged contributions */
    /* the round in progress */
    pano_json *doc;    /* as read, with the update applied; NULL: nothing to write */
    bool found;        /* it existed: written with if_seq_no and if_primary_term */
    int64_t seq_no, primary_term;
    bool settled;
} summary_doc;

typedef struct {
    summary_doc *docs;
    size_t n, cap;
    /* what happened to them, for the counters */
    uint64_t written, unchanged, conflicts, retries, refused;
} summary_round;

/* Merge the contributions of b's items that Elasticsearch holds into
 * r (empty), one per document, ordered by index and _id. */
void summaries_gather(summary_round *r, const batch *b);
/* How many documents are not settled. */
size_t summaries_unsettled(const summary_round *r);
/* Free the documents and make r empty. */
void summaries_clear(summary_round *r);

/* The _mget body for the unsettled documents, in their order. */
void summaries_read_body(const summary_round *r, pano_buf *body);
/* Apply the _mget answer: each unsettled document read (or new) with its
 * update applied, or settled when it holds its token already. -1 with a
 * message in err when the answer is not one (then nothing changed). */
int summaries_apply_read(summary_round *r, const char *answer, size_t len, char *err,
                         size_t errlen);
/* The bulk body writing the documents with something to write; their
 * indices in r->docs in order[] (room for r->n), how many in the return. */
size_t summaries_write_body(const summary_round *r, pano_buf *body, size_t *order);
/* Apply the answer to that bulk request (results[k] for docs[order[k]]);
 * a refused document's reason is logged. */
void summaries_apply_write(summary_round *r, const size_t *order, size_t n,
                           const pano_bulk_result *results);

#endif
