/*
 * store_es.h - how the query library asks Elasticsearch (internal).
 *
 * One place knows how the indexer lays a workflow's events out, so that
 * every request is scoped the same way: the partitions of the streams
 * (partition.h) that hold the workflow's time span, routing = the wf_uuid
 * and a term on it.
 */
#ifndef PANO_QUERY_STORE_ES_H
#define PANO_QUERY_STORE_ES_H

#include "es.h"
#include "json.h"
#include "partition.h"
#include "query.h"

#include <sqlite3.h>

struct pano_query {
    sqlite3 *db; /* the embedded store (pano.store), asked instead of Elasticsearch */
    pano_es *es;
    pano_es *reader; /* a second client, for reading summaries two slices at once */
    char *prefix; /* pano.indexer.index_prefix */
    char *source; /* what it reads, for messages (pano_query_source) */
    pano_stream_policy policies[PANO_N_STREAMS]; /* pano.indexer.partition */
    double ingest_delay; /* pano.query.ingest_delay */
    bool use_summaries;  /* pano.query.summaries */
};

/* A search body {"size": 0, "track_total_hits": false, "query": {"bool":
 * {"filter": [...]}}} whose filter array already holds the term on wf_uuid
 * (when given); *filter is that array, to add more to. */
pano_json *store_body(const char *wf_uuid, pano_json **filter);

/* Small builders for the query DSL. */
pano_json *store_term(const char *field, const char *value);
pano_json *store_terms(const char *field, const char *const *values);
pano_json *store_prefix(const char *field, const char *value);
pano_json *store_exists(const char *field);
/* {"<kind>": {"field": field}}, for min, max, sum, ... */
pano_json *store_metric(const char *kind, const char *field);
/* {"filter": filter, "aggs": {}}: returns the object; *aggs is its aggs. */
pano_json *store_filter_agg(pano_json *filter, pano_json **aggs);

/* A JSON literal written in the code (a sort clause, a fixed filter); a
 * typo in one aborts, so any test catches it. */
pano_json *store_literal(const char *text);

/* A workflow's time span: the first and last ts of its events, its Darshan
 * logs aside unless it has nothing else. A darshan.perf event's ts is the end
 * of the run the log recorded, so a log published long after that run (an
 * archive imported into a workflow) would stretch the workflow back to it.
 * store_span_aggs adds the aggregations to aggs; store_span_read reads them
 * from the answer's aggregations. */
void store_span_aggs(pano_json *aggs);
void store_span_read(const pano_json *aggs, double *first, double *last);


/* The events of one pano-monitor run: its dag_job_id (or none), host and pid. */
pano_json *store_run_filter(const pano_job *j);

/* Adds to filter what a job's events published from inside its run carry:
 * its DAG job id and host (when known) and its time, a second either side
 * (which tells the attempts of a DAG job apart, and runs without one). */
void store_add_published_by(pano_json *filter, const pano_jobs *jobs, const pano_job *job);

/* store_search and store_composite_each search the given streams
 * (NULL-terminated, e.g. {"kickstart", "samples", NULL}; STORE_EVENT_STREAMS:
 * the PANO_N_EVENT_STREAMS streams of pano_streams) of one workflow,
 * routed by its UUID, or of every workflow (jobs NULL). Once the workflow's
 * span is known (jobs->stored_from, set by the first request) only the
 * partitions of that span (partition.h) are named, else every partition of
 * the streams; and the stream's unpartitioned index of earlier versions
 * (<prefix><family>), which stays readable. Both take body and free it.
 *
 * The parsed answer, or NULL with a message in err (no answer, or an error
 * status with Elasticsearch's reason). */
#define STORE_EVENT_STREAMS NULL
/* The streams of a search: *streams made the list they stand for, and
 * their count. */
size_t store_streams(const char *const **streams);
pano_json *store_search(pano_query *q, const pano_jobs *jobs, const char *const *streams,
                        pano_json *body, char *err, size_t errlen);
/* The same, with the parts of the answer that match drop (Elasticsearch's
 * filter_path exclusions without their "-", comma-separated:
 * "**.key_as_string,**.grid.buckets") left out by Elasticsearch. */
pano_json *store_search_except(pano_query *q, const pano_jobs *jobs, const char *const *streams,
                               pano_json *body, const char *drop, char *err, size_t errlen);

/* The summary partitions (summary.h) of the workflow's span, as a list of
 * index names for a request path (the caller frees it): for each summary
 * stream, the partitions from jobs->stored_from to jobs->stored_to, or all
 * of them when there are too many to name. */
char *store_summary_indices(const pano_query *q, const pano_jobs *jobs);

/* Whether the workflow's span lies in one partition of every summary
 * stream, so that no run has documents in two (a run's are then one). */
bool store_summary_one_period(const pano_query *q, const pano_jobs *jobs);

/* A search of the workflow's summaries (over store_summary_indices, routed
 * by its UUID), the answer filtered to keep (a filter_path): the parsed
 * answer, or NULL with a message in err. Takes body and frees it. */
pano_json *store_summary_search(pano_query *q, const pano_jobs *jobs, pano_json *body,
                                const char *keep, char *err, size_t errlen);

/* How many events the workflow's summaries count (the sum of their add.n,
 * mapped for this by pano-indexer's template), over the summary partitions
 * of its span (store_summary_indices). 0, or -1 with a message in err. */
int store_summarized(pano_query *q, const pano_jobs *jobs, int64_t *out, char *err,
                     size_t errlen);

/* POST body to path and parse the answer (into arena when given, else
 * onto the heap): NULL with a message in err when none came or its status
 * is not 2xx. Does not take body. */
pano_json *store_post(pano_query *q, const char *path, const pano_json *body, pano_arena *arena,
                      char *err, size_t errlen);
/* The same, on the given client (one of the query's). */
pano_json *store_post_on(pano_es *es, const char *path, const pano_json *body, pano_arena *arena,
                         char *err, size_t errlen);
/* The same, the answer read as it arrives, its JSON's events given to ev
 * (pano_json_stream_begin), no tree made: 0, or -1 with a message in err
 * (no answer, a refusal's reason, or the answer unreadable or stopped by
 * a callback of ev). */
int store_post_stream(pano_es *es, const char *path, const pano_json *body,
                      const pano_json_events *ev, void *user, char *err, size_t errlen);

/* Run the composite aggregation named `name` at the top of body's aggs to
 * its last page (page_size buckets a request), calling each() for every
 * bucket. 0, or -1 with a message in err. */
int store_composite_each(pano_query *q, const pano_jobs *jobs, const char *const *streams,
                         pano_json *body, const char *name,
                         void (*each)(const pano_json *bucket, void *user), void *user,
                         char *err, size_t errlen);

/* bsearch for arrays that may be empty (and NULL), which the C library's
 * own must not be given (pano_sort, thread.h, sorts them). */
void *store_find(const void *key, const void *base, size_t n, size_t size,
                 int (*cmp)(const void *, const void *));

/* Readers of an aggregation answer. */
double store_value(const pano_json *aggs, const char *name, double missing); /* {"value": x} */
const pano_json *store_agg(const pano_json *aggs, const char *name);
/* The _source of the first hit of a top_hits aggregation, or NULL. */
const pano_json *store_top_hit(const pano_json *aggs, const char *name);
/* A string or number field of a document as text ("" when absent). */
const char *store_str(const pano_json *doc, const char *field, char *buf, size_t size);
/* A number field, also when it was sent as a string ("512"); missing when absent. */
double store_num(const pano_json *doc, const char *field, double missing);

#endif
