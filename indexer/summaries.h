/*
 * summaries.h - pano-indexer's side of the per-run summaries (summary.h):
 * what each event contributes, a batch's contributions merged per
 * document, and one round of reading those documents, applying the
 * updates and writing them back.
 *
 * At intake an event that belongs to a summary gets its contribution and
 * the document's partition (summaries_note). Once the batch's events are
 * settled, summaries_gather merges the contributions of the events
 * Elasticsearch holds (created, or already there: a replay) per document,
 * counting only the created ones, under a token, the Kafka partition and
 * offset of the document's newest event in the batch; and applies each to
 * the document as this indexer last wrote it (kept in memory, the last
 * SUMMARY_CACHE written; pano_summary_apply: nothing to write when it holds
 * the token already), or to an empty one when it has none. Each is then
 * written only if nobody wrote it since: index with if_seq_no and
 * if_primary_term, create for one thought new. Per written document:
 *   2xx                 settled (kept in memory as written)
 *   409                 written by another, or not new: read (_mget, real
 *                       time), applied and written again at once
 *   429, 5xx, none      read, applied and written again after a backoff (a
 *                       write that was applied but not answered finds its
 *                       token)
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

/* Documents kept in memory as last written (their JSON, about 0.5 KB each). */
#define SUMMARY_CACHE 20000

/* What an event contributes to a summary, held by its batch item. */
struct batch_summary {
    char index[256]; /* the document's partition */
    pano_run_summary part;
};

/* Where summaries go: the index prefix and each stream's policy, and the
 * partition named last for each stream (its period), named again only for
 * an event of another period. */
typedef struct {
    const char *prefix;
    const pano_stream_policy *policies; /* PANO_N_STREAMS */
    struct {
        double from, to;
        char name[256];
    } last[PANO_N_STREAMS];
} summary_layout;

/* The contribution of a prepared event (doc->event, parsed; offset: its
 * Kafka message's) to its summary, or NULL: an event of no summary, or
 * whose summary partition is past its retention at time now. */
struct batch_summary *summaries_note(summary_layout *l, const pano_bulk_doc *doc,
                                     int64_t offset, double now);
void summaries_free_note(struct batch_summary *s);

/* One summary document of a batch. */
typedef struct {
    char index[256];
    char op[48];         /* the update's token: "<partition>:<offset>" */
    pano_run_summary update; /* the merged contributions */
    /* the round in progress */
    pano_run_summary doc; /* as last written or read, with the update applied */
    bool need_read;      /* to read before it is applied (_mget) */
    bool to_write;       /* doc is to be written */
    bool found;          /* it exists: written with if_seq_no and if_primary_term */
    int64_t seq_no, primary_term;
    bool settled;
    size_t line, at, len; /* where its action line and its JSON are in the last bulk body */
} summary_doc;

typedef struct summary_cache summary_cache;

typedef struct {
    summary_doc *docs;
    size_t n, cap;
    summary_cache *cache; /* the documents as this indexer last wrote them */
    /* what happened to them, for the counters */
    uint64_t written, unchanged, conflicts, retries, refused, reads;
} summary_round;

/* Merge the contributions of b's items that Elasticsearch holds into r
 * (empty), one per document, ordered by _id, each applied to its document
 * as last written, or as new. */
void summaries_gather(summary_round *r, const batch *b);
/* How many documents are not settled, and how many of them must be read. */
size_t summaries_unsettled(const summary_round *r);
size_t summaries_to_read(const summary_round *r);
/* Free the documents and make r empty (the memory of written documents
 * stays). */
void summaries_clear(summary_round *r);
/* Free everything r holds. */
void summaries_free(summary_round *r);

/* The _mget body for the documents to read, in their order. */
void summaries_read_body(const summary_round *r, pano_buf *body);
/* Apply the _mget answer: each document read (or new) with its update
 * applied, or settled when it holds its token already. -1 with a message
 * in err when the answer is not one (then nothing changed). */
int summaries_apply_read(summary_round *r, const char *answer, size_t len, char *err,
                         size_t errlen);
/* The bulk body writing the documents with something to write; their
 * indices in r->docs in order[] (room for r->n), how many in the return. */
size_t summaries_write_body(summary_round *r, pano_buf *body, size_t *order);
/* Apply the answer to that bulk request (results[k] for docs[order[k]],
 * body the request's); a refused document's reason is logged. */
void summaries_apply_write(summary_round *r, const pano_buf *body, const size_t *order, size_t n,
                           const pano_bulk_result *results);

#endif
