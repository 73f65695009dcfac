/*
 * store_summaries.h - the embedded store's per-run summaries: the same
 * documents pano-indexer keeps in Elasticsearch (summary.h), kept in the
 * store's file as its events are written, so that pano-query reads a
 * workflow's runs from one row per run instead of reducing its events.
 *
 * A file's table (store.h):
 *
 *   summaries(id, wf_uuid, kind, stream, job, open, failed, t0, last, n,
 *             closing, doc)
 *       one row per document id (summary.h's _id: a run, a job instance,
 *       a DAG job's side events on a host), in the order of (wf_uuid,
 *       id); doc its JSON
 *       (pano_summary_write); the other columns what searches filter on:
 *       kind "run", "inst" or "side", stream the summary stream's name,
 *       job set.job, open and failed pano_summary_open and _failed, t0
 *       the earliest event, last the latest (the run's last ts, else t0),
 *       n the events it counts, closing the run's closing samples
 *       (run_delta.h), stored but, as pano-indexer's, not summarized.
 *
 * Within one of the writer's transactions, the documents its events touch
 * are read once, merged in memory (pano_summary_merge, counts included:
 * only events that were stored count, not duplicates) and written at the
 * commit, in the same transaction as the events: a file's summaries count
 * exactly its events (n and closing), which is what tells a reader they
 * can be used (query.md). Only store.c calls this.
 */
#ifndef PANO_STORE_SUMMARIES_H
#define PANO_STORE_SUMMARIES_H

#include "json.h"
#include "partition.h"
#include "summary.h"

#include <sqlite3.h>
#include <stdint.h>

/* Its columns, in order. */
#define STORE_SUMMARIES_COLUMNS \
    "id, wf_uuid, kind, stream, job, open, failed, t0, last, n, closing, doc"

/* The table and its index in a writer's file, within the caller's
 * transaction (file names it in messages): made when missing (a file made
 * before summaries gets them for the events written from then on). The
 * rows are kept in the order of (wf_uuid, id), so that a workflow's
 * documents are read one page after another; the index holds what a
 * reader counts and which documents are in scope (store_sqlite_summaries).
 * A table of the layout of earlier versions (rows in the order written)
 * is rewritten in this one. 0, or -1 with a message in err. */
int store_summaries_make(sqlite3 *db, const char *file, char *err, size_t errlen);

typedef struct store_summaries store_summaries;

/* Statements prepared on a writer's connection (whose file has the
 * table). NULL with a message in err. */
store_summaries *store_summaries_new(sqlite3 *db, char *err, size_t errlen);

/* An event's contribution to its run's summary, made before it is
 * written (on any thread): doc, its tree; place, where store.c puts it.
 * has is false when it belongs to none. */
typedef struct {
    bool has;
    bool closing; /* a closing sample (run_delta.h): counted apart */
    pano_run_summary part;
} store_summary_part;
void store_summaries_part(const pano_json *doc, const pano_place *place, store_summary_part *out);
void store_summaries_part_clear(store_summary_part *p);

/* An event just stored (p, its contribution, which this clears; rowid, its
 * row, which orders it after the events written before it) counted in its
 * run's summary, when it belongs to one: its document read from the file
 * at the transaction's first touch. A closing sample is counted apart, in
 * closing. 0, or -1 with a message in err. */
int store_summaries_add(store_summaries *ss, store_summary_part *p, int64_t rowid, char *err,
                        size_t errlen);

/* Write the documents the transaction changed (before its COMMIT), and
 * forget them. 0, or -1 with a message in err. */
int store_summaries_flush(store_summaries *ss, char *err, size_t errlen);

/* Forget what the transaction changed (after a ROLLBACK). */
void store_summaries_discard(store_summaries *ss);

void store_summaries_free(store_summaries *ss);

#endif
