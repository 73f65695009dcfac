/*
 * query.h - a workflow's live state, statistics, time series and anomalies,
 * read back from the Elasticsearch store pano-indexer writes.
 *
 * Every request is scoped to one workflow the way the store is laid out:
 * the partitions of its time span (partition.h), routing = the lowercased
 * wf_uuid and a term on wf_uuid. Everything is aggregated on the server; no
 * request reads a workflow's samples one by one:
 *
 *   jobs      one row per job run: pano-monitor's kickstart.inv.start/.end
 *             per (dag_job_id, hostname, pid), with its samples consulted
 *             only for the runs that have no end yet; and the job instances
 *             of pegasus-monitord's stampede.job_inst.* / stampede.inv.end
 *             events, per (job_id, job_inst_id). A Pegasus job seen both
 *             ways is one row per attempt: the k-th run of a DAG job with
 *             its k-th instance. The runs are read from pano-indexer's
 *             summaries (summary.h) when they cover the workflow, else
 *             reduced from its events; the rows are the same.
 *   stats     computed from the rows (exact medians and percentiles).
 *   series    a date_histogram of the samples' delta fields: a counter's
 *             rate is the sum of its deltas in a bucket over the bucket's
 *             length (the per-job differences between consecutive samples,
 *             summed over jobs); a gauge (the sum over jobs of each one's
 *             latest value, the running sum of its deltas) gets its mean
 *             over the bucket, each level weighted by the time it held,
 *             and its peak (gauge.h). Samples without deltas (Pegasus's own
 *             kickstart) are reduced per job from their cumulative values
 *             to the same figures.
 *   anomalies robust outliers within a transformation (median and MAD),
 *             running jobs longer than their transformation's p95, failures.
 *
 * Workflow UUIDs are checked (pano_wf_uuid_normalize) and job names
 * (pano_query_job_name_valid) before they become part of a request.
 */
#ifndef PANO_QUERY_H
#define PANO_QUERY_H

#include "config.h"
#include "json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pano_query pano_query;

/* A client from pano.es.* and pano.indexer.index_prefix / .layout (the
 * store the indexer writes). NULL with a message in err. */
pano_query *pano_query_new(const pano_config *cfg, char *err, size_t errlen);
void pano_query_free(pano_query *q);
/* What q reads, for messages: "the embedded store PATH" or "Elasticsearch
 * at URL, indices PREFIX*". */
const char *pano_query_source(const pano_query *q);
/* Give up the requests in progress once should_stop(user) is true: the
 * call asking fails with "abandoned" in its error (pano_es_set_abort()).
 * NULL: never. should_stop may be called from two threads at once (the
 * summaries are read in two slices). */
void pano_query_set_abort(pano_query *q, bool (*should_stop)(void *user), void *user);

/* ---- jobs ---------------------------------------------------------------- */

typedef enum {
    PANO_JOB_QUEUED,    /* submitted (stampede), not running yet */
    PANO_JOB_HELD,      /* held by the batch system (stampede) */
    PANO_JOB_RUNNING,   /* started, no end, samples still coming */
    PANO_JOB_LOST,      /* started, no end, no sample for 3 intervals */
    PANO_JOB_SUCCEEDED, /* ended with exit code 0 */
    PANO_JOB_FAILED,    /* ended with a non-zero exit code */
    PANO_JOB_KILLED,    /* ended by a signal */
    PANO_JOB_STATES
} pano_job_state;

const char *pano_job_state_name(pano_job_state s); /* "running", "killed", ... */
bool pano_job_state_parse(const char *name, pano_job_state *out);
bool pano_job_state_ended(pano_job_state s);

typedef struct {
    char *id;             /* dag_job_id, else "exe@host:pid"; with #N for attempt N > 1 */
    char *dag_job_id;     /* "" when the run had none */
    char *transformation; /* xformation (Pegasus), else the executable's name */
    char *site, *host, *exe;
    int64_t pid;   /* of the task (pano-monitor), -1 unknown */
    int attempt;   /* 1 for the first run of a DAG job, 2 for its first retry ... */
    pano_job_state state;
    int exitcode;  /* when ended: the exit code (128+N for signal N); -1 unknown */
    int signal;    /* when killed */
    double start, end;  /* epoch s; end 0 while not ended */
    double duration;    /* s: end - start, or so far */
    double last_seen;   /* ts of the run's latest event */
    double interval;    /* sampling interval, 0 unknown */
    double cpu_time;    /* s, user + system, so far */
    int64_t maxrss;     /* kB, -1 unknown */
    int64_t bytes_read, bytes_written; /* rchar, wchar; -1 unknown */
    int64_t samples;    /* kickstart.inv.online samples */
    int64_t rss, vm, procs, threads; /* at the latest sample of a run without an end;
                                        0 once ended */
    int64_t darshan_events, transfer_events;
    bool from_monitor, from_stampede; /* what it was seen through */
} pano_job;

typedef struct {
    char wf_uuid[37];
    char *wf_label;      /* "" when unknown */
    double now;          /* the time the state refers to */
    double first_event, last_event; /* its span, Darshan logs aside (docs/query.md); 0: none */
    double stored_from, stored_to;  /* min and max ts of all its events: where they are stored */
    bool wf_ended;       /* a stampede.xwf.end was seen */
    int wf_status;       /* its status (0: success) */
    pano_job *jobs;      /* ordered by start, then id */
    size_t n;
    bool partial;        /* only the jobs a narrower question needs are in jobs
                            (pano_query_series_rows, pano_query_jobs_in_state) */
} pano_jobs;

/* Every job run of a workflow, as of now (epoch s; a run whose last sample
 * is older than 3 intervals is lost). An unknown workflow gives 0 rows and
 * returns 0; -1 with a message in err when the store cannot be asked. */
int pano_query_jobs(pano_query *q, const char *wf_uuid, double now, pano_jobs *out, char *err,
                    size_t errlen);

/* Every row in state, among others: where the indexer's summaries can
 * tell, only the rows of the jobs that did not end (for queued, held,
 * running and lost) or that did not end or ended badly (failed, killed),
 * each with every attempt, with partial set; all rows else. */
int pano_query_jobs_in_state(pano_query *q, const char *wf_uuid, double now,
                             pano_job_state state, pano_jobs *out, char *err, size_t errlen);
void pano_jobs_free(pano_jobs *jobs);

/* The row of a job: a DAG job id for its latest attempt
 * ("preprocess_ID01"), with #N for attempt N ("preprocess_ID01#2"; rows
 * show attempt 1 without it), or the id of a run without a DAG job id
 * ("app@node1:4242"). NULL when there is none. */
const pano_job *pano_jobs_find(const pano_jobs *jobs, const char *id);

/* Letters, digits and _ . : @ # + - , 1 to 255 of them. */
bool pano_query_job_name_valid(const char *name);

/* The events a job published beside its samples (darshan.perf,
 * transfer.*, custom.*, payload events; at most limit, oldest first), as a
 * JSON array of their documents. NULL with a message in err. */
pano_json *pano_query_job_events(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                                 size_t limit, char *err, size_t errlen);

/* A job's custom metrics (custom.metric events), the newest limit of them:
 * {"NAME": [[ts, value], ...], ...}, each oldest first; *left_out says
 * whether older ones were left out. NULL with a message in err. */
pano_json *pano_query_job_metrics(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                                  size_t limit, bool *left_out, char *err, size_t errlen);

/* The Darshan logs and transfers of the workflow (job NULL) or of one job,
 * summed: {"darshan": {logs, modules: {POSIX: {bytes_read, bytes_written},
 * ...}, posix_agg_perf_by_slowest: {min, mean, max}, processes, run_time},
 * "transfers": {files, failed, bytes, time, retries, mean_rate}, "globus":
 * {tasks, bytes, files}}. NULL with a message in err. */
pano_json *pano_query_io(pano_query *q, const pano_jobs *jobs, const pano_job *job, char *err,
                         size_t errlen);

/* A pano-monitor run's start event (argv, cwd, user, the host's CPUs ...),
 * or JSON null for a run pano-monitor did not see. NULL with a message in
 * err when the store cannot be asked. */
pano_json *pano_query_job_start(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                                char *err, size_t errlen);

/* ---- statistics ----------------------------------------------------------- */

typedef struct {
    size_t n;
    double min, median, mean, max, p95, total;
} pano_summary;

typedef struct {
    char *name;
    size_t runs, succeeded, failed, running; /* failed includes killed */
    pano_summary duration, cpu_time, maxrss, bytes_read, bytes_written; /* ended runs */
} pano_group_stats;

typedef struct {
    double wall_time;            /* first event to the last one (or now while running) */
    double cumulative_job_wall_time;       /* sum of the ended runs' durations */
    double cumulative_job_wall_time_running; /* the running ones, so far */
    double cumulative_badput;    /* ended runs that did not succeed */
    size_t jobs;                 /* DAG jobs (a run without dag_job_id counts as one) */
    size_t jobs_by_state[PANO_JOB_STATES]; /* by the state of each job's latest attempt */
    size_t runs, retries;        /* runs = jobs + retries */
    pano_group_stats *transformations, *hosts; /* sorted by name */
    size_t n_transformations, n_hosts;
} pano_stats;

/* The workflow's counts and times: every figure but the groups (left empty),
 * which cost a sort of the runs each. */
void pano_stats_count(const pano_jobs *jobs, pano_stats *out);
/* Every figure: pano_stats_count's and the groups by transformation and by host. */
void pano_stats_compute(const pano_jobs *jobs, pano_stats *out);
void pano_stats_free(pano_stats *stats);

/* The summary of n values (sorted in place); percentiles interpolate
 * linearly between closest ranks. */
pano_summary pano_summarize(double *values, size_t n);

/* ---- Pegasus: pegasus-statistics' and pegasus-status' figures ---------------- */

/* A row of pegasus-statistics' summary. */
typedef struct {
    size_t succeeded, failed, incomplete, total, retries, total_with_retries;
} pano_pegasus_counts;

/* pegasus-status' counts of DAG nodes (over the workflow's DAGs that ran). */
typedef struct {
    size_t unready, ready, pre, queued, post, succeeded, failed, total;
    double percent_done;
    const char *state; /* "Running", "Success", "Failure" */
} pano_pegasus_status;

/* A row of pegasus-statistics' transformation breakdown: the invocations of
 * one transformation (PRE and POST scripts, sub-workflow DAGMans
 * included) that succeeded or failed. */
typedef struct {
    char *transformation;
    bool succeeded;       /* exit code 0; any other (or none) is failed */
    size_t count;
    pano_summary runtime; /* s, dur x multiplier_factor (min, max, mean, total) */
    pano_summary memory;  /* MiB, maxrss / 1024, of the invocations that have one */
    pano_summary avg_cpu; /* %, avg_cpu x 100, likewise */
} pano_pegasus_breakdown;

typedef struct {
    bool present;  /* the workflow has pegasus-monitord's events */
    pano_pegasus_counts tasks, jobs, sub_workflows;
    double workflow_wall_time;   /* NAN until every DAGMan run of the root ended */
    double cumulative_job_wall_time, cumulative_job_walltime_from_submit_side;
    double cumulative_badput_time, cumulative_badput_walltime_from_submit_side;
    size_t workflow_retries;     /* DAGMan restarts (rescue DAGs) */
    pano_pegasus_status status;
    pano_pegasus_breakdown *breakdown; /* by transformation, then failed after succeeded */
    size_t n_breakdown;
} pano_pegasus;

/* The figures pegasus-statistics (summary) and pegasus-status compute, from
 * the stampede events of the workflow and of every sub-workflow under it
 * (root_xwf_id), at any moment of the run, with their definitions
 * (docs/query.md). out->present is false for a workflow monitord never
 * reported. -1 with a message in err when the store cannot be asked. */
int pano_query_pegasus(pano_query *q, const char *wf_uuid, pano_pegasus *out, char *err,
                       size_t errlen);
void pano_pegasus_free(pano_pegasus *p);

/* ---- anomalies ------------------------------------------------------------ */

typedef enum {
    PANO_ANOMALY_OUTLIER, /* metric far from its transformation's median */
    PANO_ANOMALY_OVERDUE, /* running longer than its transformation's p95 */
    PANO_ANOMALY_FAILED,  /* ended with a failure or a signal */
} pano_anomaly_kind;

typedef struct {
    pano_anomaly_kind kind;
    const pano_job *job;
    const char *metric; /* duration, cpu_time, maxrss, bytes_read, bytes_written */
    double value;
    double median, mad; /* of the job's peers (outliers) */
    double score;       /* modified z-score (outliers), value / p95 (overdue) */
    double threshold;   /* 3.5 (outliers), the p95 (overdue) */
    size_t peers;       /* ended runs of the transformation */
} pano_anomaly;

/* An outlier: a modified z-score above PANO_OUTLIER_Z among at least
 * PANO_OUTLIER_MIN_PEERS ended runs, and a difference from the median of at
 * least PANO_OUTLIER_MIN_CHANGE of it and at least 1 s (duration, CPU time)
 * or 10 MiB (maxrss, bytes read, bytes written). */
#define PANO_OUTLIER_Z 3.5
#define PANO_OUTLIER_MIN_PEERS 5
#define PANO_OUTLIER_MIN_CHANGE 0.25

const char *pano_anomaly_kind_name(pano_anomaly_kind kind); /* "outlier", ... */

/* Every anomaly among the jobs: the failures in the jobs' order, then the
 * outliers and overdue runs by transformation. Free *out with free(). */
size_t pano_anomalies_find(const pano_jobs *jobs, pano_anomaly **out);

/* ---- what a screen shows of the rows: a page of them, a timeline ---------- */

typedef enum {
    PANO_SORT_NEWEST, /* waiting runs (queued, held, not started) first, then by start, latest first */
    PANO_SORT_OLDEST, /* by start, earliest first; runs not started last */
    PANO_SORT_LONGEST, /* by duration, longest first */
    PANO_SORT_ID,     /* by id */
} pano_job_sort;

/* "newest", "oldest", "longest", "id". */
bool pano_job_sort_parse(const char *name, pano_job_sort *out);

typedef struct {
    const char *text;  /* case-insensitive, in "ID STATE TRANSFORMATION HOST"; NULL or "": any */
    unsigned states;   /* a bit (1u << state) per state kept; 0: any */
    pano_job_sort sort; /* ties: by id */
} pano_job_filter;

/* The rows that match f, in f's order: the indices into jobs->jobs of at
 * most limit of them from the offset-th on, into page[limit]. Returns how
 * many rows match in all; *n_page is how many were put in page. */
size_t pano_jobs_select(const pano_jobs *jobs, const pano_job_filter *f, size_t offset,
                        size_t limit, size_t *page, size_t *n_page);

/* Where a run ends on a timeline: its end, now while it runs, else its start
 * plus its duration (a lost run's last event, a queued run's start). */
double pano_job_timeline_end(const pano_jobs *jobs, const pano_job *j);

/* Whether a started run was alive during part of [from, to): it started
 * before to and ended after from; a run of no length, when its start is in
 * the window. closed: [from, to], a run starting at to counts too. */
bool pano_job_alive_in(const pano_jobs *jobs, const pano_job *j, double from, double to,
                       bool closed);

/* A timeline at a screen's resolution: [from, to] cut into bins equal bins
 * (the last one closed at to), and in each how many runs of each state were
 * alive during part of it (a run counts in its state of now, in every bin
 * it touched). */
typedef struct {
    double from, to;
    size_t bins;
    size_t *alive; /* alive[bin * PANO_JOB_STATES + state] */
    size_t runs;   /* the runs alive in the window */
    size_t peak;   /* the most runs of all states in one bin */
} pano_overview;

/* The overview of [from, to] in bins bins (at least 1); from >= to: the
 * span of the started runs (first start to last timeline end). O(runs +
 * bins). */
void pano_jobs_overview(const pano_jobs *jobs, double from, double to, size_t bins,
                        pano_overview *out);
void pano_overview_free(pano_overview *o);

/* ---- what changed --------------------------------------------------------- */

/* What a workflow's stored events are: how many, and the latest ts. Any
 * event stored (or removed) changes them. And how many of them its per-run
 * summaries (summary.h) count, which pano-indexer writes after the events
 * themselves: so an answer made from summaries that lagged the events
 * changes once they catch up. */
typedef struct {
    int64_t events;
    double latest;
    int64_t summarized; /* 0 when pano.query.summaries is off */
} pano_changes;

/* One search of size 0, routed to the workflow: the count of its events
 * and the max of their ts, over every partition of the event streams; and
 * when summaries are read, one more over the summary partitions: the sum
 * of their events' counts.
 * -1 with a message in err when the store cannot be asked. */
int pano_query_changes(pano_query *q, const char *wf_uuid, pano_changes *out, char *err,
                       size_t errlen);

/* ---- time series ---------------------------------------------------------- */

typedef struct {
    const char *name;  /* cpu, rss, read, write, ... */
    const char *unit;  /* "CPUs", "kB", "bytes/s" ... */
    const char *help;
    bool rate;         /* a counter shown per second; else a gauge */
    const char *fields[2]; /* the sample fields summed (the second may be NULL; a gauge has one) */
} pano_metric_info;

/* The metrics series() knows, NULL-name terminated. */
extern const pano_metric_info pano_series_metrics[];

typedef struct {
    double t;     /* start of the bucket, epoch s */
    double value; /* a rate: per second over the bucket; a gauge: its time-weighted mean */
    double peak;  /* a gauge: the highest level in the bucket (docs/query.md); rates: NAN */
} pano_point;

typedef struct {
    const pano_metric_info *metric;
    double step;  /* s */
    pano_point *points;
    size_t n;
    int64_t samples; /* the samples it was made from (0: the points are no measurement) */
} pano_series;

/* The time a series covers: the job's (or, job NULL, the workflow's) first
 * event to its last, or to now while it runs. False when there is none yet. */
bool pano_jobs_span(const pano_jobs *jobs, const pano_job *job, double *from, double *to);

/* The rows a series of the whole workflow needs, as of now: its span, and
 * the jobs that did not end (running, lost, queued, held), each with every
 * attempt, with partial set; at the cost of those jobs, where the
 * indexer's summaries can tell. Every row, as pano_query_jobs gives them,
 * where they cannot, or when the workflow has samples without delta (they
 * are reduced run by run, ended runs too). 0, or -1 with a message in err. */
int pano_query_series_rows(pano_query *q, const char *wf_uuid, double now, pano_jobs *out,
                           char *err, size_t errlen);

/* A metric over time in buckets of step seconds, over pano_jobs_span() of
 * the whole workflow or one job (NULL: all). -1 with a message in err for
 * an unknown metric or a store that cannot be asked. */
int pano_query_series(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                      const char *metric, double step, pano_series *out, char *err,
                      size_t errlen);
/* The same for count metrics at once, into out[count], from one search (the
 * samples are read once, whatever the number of metrics). */
int pano_query_series_many(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                           const char *const *metrics, size_t count, double step,
                           pano_series *out, char *err, size_t errlen);
void pano_series_free(pano_series *s);

/* ---- workflows ------------------------------------------------------------ */

typedef struct {
    char wf_uuid[37];
    char *wf_label;
    double first_event, last_event; /* as in pano_jobs */
    /* pano-monitor's runs. A workflow known only from pegasus-monitord has
     * none: its counts need the job-by-job reading of pano_query_jobs, too
     * costly for a list, and runs_known is false (the list shows "-"). */
    size_t runs, running, succeeded, failed;
    bool runs_known;
    const char *state; /* running, stalled, succeeded, failed */
} pano_workflow;

/* The workflows with events since `since` (epoch s), most recent first, at
 * most limit. */
int pano_query_workflows(pano_query *q, double since, size_t limit, double now,
                         pano_workflow **out, size_t *n, char *err, size_t errlen);
void pano_workflows_free(pano_workflow *w, size_t n);

/* ---- JSON forms (pano-query --json, pano-explorer's API) ------------------ */

pano_json *pano_job_to_json(const pano_job *job);
pano_json *pano_jobs_to_json(const pano_jobs *jobs); /* the workflow and its rows */
/* The workflow (wf_uuid, wf_label, now, first_event, last_event, wf_status)
 * and "runs", its number of rows, without the rows. */
pano_json *pano_workflow_to_json(const pano_jobs *jobs);
/* {"from", "to", "bins", "runs", "peak", "alive": {STATE: [a count per bin],
 * ...}}, the states no run of the window is in left out. */
pano_json *pano_overview_to_json(const pano_overview *o);
/* The statistics; with pegasus-monitord's figures when pegasus is given and
 * present (they then take pegasus-statistics' names and meaning). */
pano_json *pano_stats_to_json(const pano_jobs *jobs, const pano_stats *stats,
                              const pano_pegasus *pegasus);
pano_json *pano_anomalies_to_json(const pano_anomaly *a, size_t n);
pano_json *pano_series_to_json(const pano_series *s);
pano_json *pano_workflows_to_json(const pano_workflow *w, size_t n);

/* ---- rejected events ------------------------------------------------------ */

/* A message a store refused, kept with its reason: Elasticsearch's
 * dead-letter partitions (<prefix>dead-letter-*: pano-bridge's and
 * pano-indexer's) or the embedded store's dead_letters. */
typedef struct {
    double ts;      /* when it was refused (epoch s) */
    char *source;   /* pano-bridge, pano-indexer, pano-store */
    char *reason;
    char *event;    /* its name or routing key, "" when unknown */
    char *event_id; /* "" when unknown */
    char *wf_uuid;  /* "" when unknown */
    char *original; /* the message as it came (perhaps truncated by the indexer) */
} pano_rejected;

/* ---- a workflow in one file ------------------------------------------------ */

/* Every event of the workflows wfs[0..n) and of their sub-workflows, with
 * their dead letters, into the new file (pano_store_export: a store file of
 * its own, read back with --store FILE). With a redactor (redact.h) each
 * event is redacted and the dead letters are left out. 0, or -1 with a
 * message in err. */
typedef struct pano_redactor pano_redactor;
int pano_query_export(pano_query *q, const char *const *wfs, size_t n, const char *file,
                      pano_redactor *r, char *err, size_t errlen);

/* The newest limit ones refused since then, newest first. 0, or -1 with a
 * message in err. */
int pano_query_rejected(pano_query *q, double since, size_t limit, pano_rejected **out,
                        size_t *n, char *err, size_t errlen);
/* The newest limit ones of the workflows wfs[0..nwfs), newest first. */
int pano_query_rejected_of(pano_query *q, const char *const *wfs, size_t nwfs, size_t limit,
                           pano_rejected **out, size_t *n, char *err, size_t errlen);
void pano_rejected_free(pano_rejected *r, size_t n);
pano_json *pano_rejected_to_json(const pano_rejected *r, size_t n);

#endif
