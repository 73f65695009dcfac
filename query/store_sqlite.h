/*
 * store_sqlite.h - the query library's searches answered by the embedded
 * store (internal).
 *
 * The query library asks a store in one language: the part of
 * Elasticsearch's search DSL that store_es.h's helpers build. The embedded
 * store (store.h) compiles each search into SQL over its `events` view, so
 * that SQLite filters, groups and aggregates, and gives the answer the shape
 * Elasticsearch gives it; everything above (rows, statistics, anomalies,
 * series, JSON forms) is the same code for both stores.
 *
 * Understood:
 *   queries   bool (filter, must, should, must_not, minimum_should_match),
 *             term, terms, prefix, exists, range (gt, gte, lt, lte; on
 *             @timestamp in epoch milliseconds), match_all;
 *   buckets   terms (size, order by _count, _key or a metric of the
 *             bucket), composite (terms sources, missing_bucket; every
 *             bucket in one page), date_histogram (fixed_interval in ms,
 *             offset, min_doc_count, extended_bounds), filter, filters
 *             (keyed);
 *   metrics   min, max, sum, avg, value_count, stats, weighted_avg,
 *             top_hits (size, sort, _source);
 *   pipelines cumulative_sum inside a date_histogram, max_bucket;
 *   hits      size, sort, _source, track_total_hits, terminate_after.
 * Fields are the events' JSON members (a dotted name is a path), with
 * @timestamp the event's ts in whole milliseconds (pano_event_ms) as
 * pano-indexer stores it. Sums and means add as Elasticsearch does
 * (compensated), so figures agree to the last digit. Anything else is
 * refused with a message naming it: a search only Elasticsearch can answer
 * (the summaries) is never sent here.
 */
#ifndef PANO_QUERY_STORE_SQLITE_H
#define PANO_QUERY_STORE_SQLITE_H

#include "json.h"
#include "query.h"
#include "summary.h"

#include <sqlite3.h>
#include <stdbool.h>

/* Register the functions the compiled SQL calls on a connection of the
 * store (pano_store_open_reader, which registers pano_ms itself). 0, or -1
 * with a message in err. */
int store_sqlite_prepare(sqlite3 *db, char *err, size_t errlen);

/* Answer a search of the given streams (NULL-terminated; NULL: the event
 * streams) as Elasticsearch would: {"hits": ..., "aggregations": ...}. Does
 * not take body. NULL with a message in err. */
pano_json *store_sqlite_search(sqlite3 *db, const char *const *streams, const pano_json *body,
                               char *err, size_t errlen);

/* The store's own summaries (store_summaries.h), where the summaries
 * Elasticsearch would be searched for (store_sqlite_summaries.c). */

/* How many events the summaries of workflow wf count, per kind
 * (pano_summary_kind: run, inst, side; a run's closing samples included),
 * and, when events is not NULL, how many events of each kind the store
 * holds (summary.h: kickstart.inv.*; stampede.job_inst.* and
 * stampede.inv.end with a job_id and a job_inst_id; darshan.* and
 * transfer.*), from the events' index. 0, or -1 with a message in err. */
int store_sqlite_summarized(sqlite3 *db, const char *wf, int64_t counted[3], int64_t events[3],
                            char *err, size_t errlen);

/* Each summary document of workflow wf, by id, the rows of one id (a run
 * written into two hosts' files) merged, to each(doc, user), which may take
 * the document's strings (cleared once each returns); *read counts
 * the rows. When scoped, only the documents of the jobs in scope: of the
 * DAG jobs with a document open (or failed, with_failed), every document;
 * of the documents without a DAG job, those open (or failed). 0; 1, with
 * the reason in err, when a row is not a summary (damaged: the caller
 * reads the events instead; what each was given is then to be dropped);
 * -1 with a message in err. */
int store_sqlite_summaries(sqlite3 *db, const char *wf, bool scoped, bool with_failed,
                           void (*each)(pano_run_summary *doc, void *user), void *user,
                           size_t *read, char *err, size_t errlen);

#endif
