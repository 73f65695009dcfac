/*
 * series.c - a metric over time, with the rate math done right.
 *
 * The counters of a sample (utime, rchar, ...) are cumulative per process
 * tree, so averaging or summing them per bucket (what Panorama's charts
 * did) means nothing. pano-monitor's samples carry `delta`, each value's
 * change since the previous sample, so:
 *   counter rate in a bucket = sum of its deltas in the bucket / step
 *     (= the per-job differences of consecutive samples, summed over jobs);
 *   gauge                    = the running sum of its deltas
 *     (= the sum over jobs of each one's latest value; an ended job's last
 *      sample brings its share back to zero), a step function of time whose
 *      mean and peak per bucket gauge.c computes from the deltas' sums, the
 *      sums of delta x time, and the highest running sum on a grid.
 * One date_histogram does it, whatever the number of jobs. A lost run (no
 * end, samples stopped) has no last sample to bring its gauges back to
 * zero: its share ends at its last sample. Samples without delta (Pegasus's
 * own kickstart) are reduced per run: a run's last value in each bucket,
 * differenced (counters), or its first, last and the mean of those between
 * made into the changes of the run's level (gauges), then summed.
 */
#include "gauge.h"
#include "mem.h"
#include "query.h"
#include "runs.h"
#include "store_es.h"
#include "thread.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many buckets in one series (Elasticsearch's limit is 65,536). */
#define MAX_POINTS 20000
/* A gauge's peak is read on a grid of GRID_CELLS cells a bucket, fewer when
 * the series has more than GRID_BUDGET / GRID_CELLS buckets: Elasticsearch
 * spends about 10 us a cell on the histogram under each bucket. */
#define GRID_CELLS 16
/* From steps of this many ms (whole seconds), the grid is whole seconds. */
#define GRID_SECONDS_FROM 8000
#define GRID_BUDGET 4096
/* The buckets whose samples are asked cell by cell are named as at most this
 * many time ranges (else one range from the first to the last). */
#define MAX_RANGES 64
/* What a series' answer leaves out: the dates as text, the grid's cells
 * (only their highest running sum is read) and the cells that hold it. */
static const char SERIES_DROP[] = "**.key_as_string,**.value_as_string,**.grid.buckets,**.keys";

const pano_metric_info pano_series_metrics[] = {
    {"cpu", "CPUs", "CPU time used per second (user + system)", true, {"utime", "stime"}},
    {"read", "bytes/s", "bytes read by read-like calls per second (rchar)", true, {"rchar"}},
    {"write", "bytes/s", "bytes written by write-like calls per second (wchar)", true, {"wchar"}},
    {"disk_read", "bytes/s", "bytes read from storage per second", true, {"bread"}},
    {"disk_write", "bytes/s", "bytes written to storage per second", true, {"bwrite"}},
    {"syscalls", "calls/s", "read-like and write-like system calls per second", true,
     {"syscr", "syscw"}},
    {"iowait", "s/s", "time waiting for block I/O per second (needs delay accounting)", true,
     {"iowait"}},
    {"rss", "kB", "resident memory of the running processes", false, {"rss"}},
    {"vm", "kB", "virtual memory of the running processes", false, {"vm"}},
    {"procs", "processes", "processes running", false, {"procs"}},
    {"threads", "threads", "threads running", false, {"threads"}},
    {NULL, NULL, NULL, false, {NULL}},
};

bool pano_jobs_span(const pano_jobs *jobs, const pano_job *job, double *from, double *to)
{
    if (job) {
        *from = job->start;
        *to = job->state == PANO_JOB_RUNNING ? fmax(job->last_seen, jobs->now)
              : job->end > 0                 ? job->end
                                             : job->last_seen;
    } else {
        *from = jobs->first_event;
        *to = jobs->last_event;
        for (size_t i = 0; i < jobs->n && !jobs->wf_ended; i++)
            if (jobs->jobs[i].state == PANO_JOB_RUNNING)
                *to = fmax(*to, jobs->now);
    }
    return *from > 0 && *to >= *from;
}

static const pano_metric_info *find_metric(const char *name)
{
    for (const pano_metric_info *m = pano_series_metrics; m->name; m++)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

/* The buckets of a series: n of step ms from first (ms since the epoch), on
 * multiples of the step as date_histogram makes them. */
typedef struct {
    int64_t first, step, grid; /* grid: a gauge's peak is read every grid ms (gauge.h) */
    size_t n;
} frame;

/* The bucket of an answer's key (ms); false when it is outside the frame. */
static bool bucket_of(const frame *f, double key, size_t *k)
{
    if (isnan(key) || key < (double)f->first)
        return false;
    int64_t i = ((int64_t)key - f->first) / f->step;
    *k = (size_t)i;
    return i < (int64_t)f->n;
}

/* One metric: a counter's changes summed per bucket, or a gauge's changes. */
typedef struct {
    const pano_metric_info *m;
    double *sum; /* counters */
    gauge g;     /* gauges, whose one field is m->fields[0] */
} track;

/* A date_histogram named name in aggs, of interval ms on its multiples since
 * the epoch: every bucket of the frame when given, else those from the
 * first sample to the last (min_doc_count 0) or those with a sample (1).
 * *sub is its aggs. */
static void histogram(pano_json *aggs, const char *name, int64_t interval, int min_doc_count,
                      const frame *bounds, pano_json **sub)
{
    pano_json *a = pano_json_set_object(aggs, name);
    pano_json *h = pano_json_set_object(a, "date_histogram");
    pano_json_set_str(h, "field", "@timestamp");
    char text[32];
    snprintf(text, sizeof text, "%lldms", (long long)interval);
    pano_json_set_str(h, "fixed_interval", text);
    pano_json_set_int(h, "min_doc_count", min_doc_count);
    pano_json_set_int(h, "offset", 0);
    if (bounds) {
        pano_json *b = pano_json_set_object(h, "extended_bounds");
        pano_json_set_int(b, "min", bounds->first);
        pano_json_set_int(b, "max", bounds->first + bounds->step * (int64_t)(bounds->n - 1));
    }
    *sub = pano_json_set_object(a, "aggs");
}

/* A search of the samples of the workflow (or of one job); *filter to add to. */
static pano_json *samples_body(const pano_jobs *jobs, const pano_job *job, pano_json **filter)
{
    pano_json *body = store_body(jobs->wf_uuid, filter);
    pano_json_append(*filter, store_term("event", "kickstart.inv.online"));
    if (job)
        pano_json_append(*filter, store_run_filter(job));
    return body;
}

static pano_json *without_delta(void)
{
    pano_json *none = pano_json_object();
    pano_json_append(pano_json_set_array(pano_json_set_object(none, "bool"), "must_not"),
                     store_exists("delta"));
    return none;
}

static const char *agg_name(char *out, size_t size, const char *field, const char *suffix)
{
    snprintf(out, size, "%s%s", field, suffix);
    return out;
}

static pano_json *sum_of_delta(const char *field)
{
    char name[64];
    return store_metric("sum", agg_name(name, sizeof name, "delta.", field));
}

/* ---- the samples with delta: one date_histogram ---------------------------------- */

/* Under each bucket: the sum of every field's deltas; for gauges also the
 * sums of delta x time (weighted_avg by @timestamp x the sum of @timestamp),
 * the first sample's time, and the highest running sum of the deltas on the
 * grid (cumulative_sum and max_bucket over a date_histogram of grid ms). */
static void add_bucket_aggs(pano_json *sub, const frame *f, const track *t, size_t count)
{
    pano_json *grid = NULL;
    char name[64];
    for (size_t i = 0; i < count; i++) {
        const pano_metric_info *m = t[i].m;
        for (size_t k = 0; k < 2 && m->fields[k]; k++)
            pano_json_set(sub, m->fields[k], sum_of_delta(m->fields[k]));
        if (m->rate)
            continue;
        const char *field = m->fields[0];
        if (!grid) {
            pano_json_set(sub, "time", store_metric("sum", "@timestamp"));
            pano_json_set(sub, "first", store_metric("min", "@timestamp"));
            histogram(sub, "grid", f->grid, 0, NULL, &grid);
        }
        pano_json *w = pano_json_set_object(
            pano_json_set_object(sub, agg_name(name, sizeof name, field, "_by_time")),
            "weighted_avg");
        pano_json *value = pano_json_set_object(w, "value");
        pano_json_set_str(value, "field", agg_name(name, sizeof name, "delta.", field));
        pano_json_set_int(value, "missing", 0);
        pano_json_set_str(pano_json_set_object(w, "weight"), "field", "@timestamp");
        pano_json_set(grid, field, sum_of_delta(field));
        pano_json_set_str(
            pano_json_set_object(
                pano_json_set_object(grid, agg_name(name, sizeof name, field, "_run")),
                "cumulative_sum"),
            "buckets_path", field);
        char path[80];
        snprintf(path, sizeof path, "grid>%s_run", field);
        pano_json_set_str(
            pano_json_set_object(
                pano_json_set_object(sub, agg_name(name, sizeof name, field, "_top")),
                "max_bucket"),
            "buckets_path", path);
    }
}

/* One bucket of the answer into every metric; *docs its samples. */
static void read_bucket(const pano_json *bk, size_t k, track *t, size_t count, int64_t *docs)
{
    pano_json_get_int(bk, "doc_count", docs);
    char name[64];
    for (size_t i = 0; i < count; i++) {
        const pano_metric_info *m = t[i].m;
        if (m->rate) {
            for (size_t f = 0; f < 2 && m->fields[f]; f++)
                t[i].sum[k] += store_value(bk, m->fields[f], 0);
            continue;
        }
        if (*docs == 0)
            continue;
        const char *field = m->fields[0];
        double by_time = store_value(bk, agg_name(name, sizeof name, field, "_by_time"), 0) *
                         store_value(bk, "time", 0);
        gauge_add_stored(&t[i].g, k, store_value(bk, field, 0), by_time,
                         store_value(bk, agg_name(name, sizeof name, field, "_top"), NAN),
                         (int64_t)store_value(bk, "first", 0));
    }
}

/* ---- the runs whose samples came without delta ------------------------------------- */

/* The rows of pano-monitor's runs by "job host pid", to tell how a run whose
 * samples came without delta ended, and which runs those are. */
typedef struct {
    char *key;
    const pano_job *job;
    bool raw; /* its samples came without delta */
} run_entry;

typedef struct {
    run_entry *e; /* sorted by key */
    size_t n;
} run_index;

static char *run_key(const char *job, const char *host, const char *pid)
{
    return pano_asprintf("%s\x1f%s\x1f%s", job ? job : "", host ? host : "", pid);
}

static char *job_key(const pano_job *j)
{
    char pid[32];
    snprintf(pid, sizeof pid, "%lld", (long long)j->pid);
    return run_key(j->dag_job_id, j->host, pid);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const run_entry *)a)->key, ((const run_entry *)b)->key);
}

static void run_index_build(run_index *x, const pano_jobs *jobs)
{
    x->e = pano_calloc(jobs->n ? jobs->n : 1, sizeof *x->e);
    x->n = 0;
    for (size_t i = 0; i < jobs->n; i++)
        if (jobs->jobs[i].from_monitor)
            x->e[x->n++] = (run_entry){job_key(&jobs->jobs[i]), &jobs->jobs[i], false};
    pano_sort(x->e, x->n, sizeof *x->e, by_key);
}

static run_entry *run_index_find(const run_index *x, char *key)
{
    run_entry probe = {.key = key};
    return store_find(&probe, x->e, x->n, sizeof *x->e, by_key);
}

static void run_index_free(run_index *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->e[i].key);
    free(x->e);
    memset(x, 0, sizeof *x);
}

typedef struct {
    const frame *f;
    track *t;
    run_index *runs;
} raw_ctx;

/* A sample's value of the metric: its fields summed. */
static double sample_value(const pano_json *doc, const pano_metric_info *m)
{
    double v = 0;
    for (size_t f = 0; f < 2 && m->fields[f]; f++)
        v += store_num(doc, m->fields[f], 0);
    return v;
}

/* One run's samples, bucket by bucket in time order: a counter's last value
 * in each, differenced; a gauge's level, in a bucket of n samples, moves to
 * the first one's value at its time, to the mean of the n - 2 between at
 * the second one's time (taken as if they came evenly spaced), to the last
 * one's value at its time; and back to zero where the run ended (its end
 * event), or at its last sample when it is lost. */
static void on_raw_run(const pano_json *run_bucket, void *user)
{
    raw_ctx *c = user;
    const pano_json *key = pano_json_get(run_bucket, "key");
    char job[256], host[256], pid[32];
    char *rk = run_key(store_str(key, "job", job, sizeof job),
                       store_str(key, "host", host, sizeof host),
                       store_str(key, "pid", pid, sizeof pid));
    run_entry *row = run_index_find(c->runs, rk);
    free(rk);
    if (row)
        row->raw = true;
    const pano_json *list = pano_json_get_array(store_agg(run_bucket, "t"), "buckets");
    double prev = 0;
    int64_t last = 0;
    for (size_t i = 0; i < pano_json_len(list); i++) {
        const pano_json *bk = pano_json_at(list, i);
        const pano_json *doc = store_top_hit(bk, "last");
        size_t k;
        if (!doc || !bucket_of(c->f, store_num(bk, "key", NAN), &k))
            continue;
        double v = sample_value(doc, c->t->m);
        last = pano_event_ms(store_num(doc, "ts", 0));
        if (c->t->m->rate) {
            c->t->sum[k] += v - prev;
        } else {
            const pano_json *first = store_top_hit(bk, "first");
            double v0 = first ? sample_value(first, c->t->m) : v;
            int64_t t0 = first ? pano_event_ms(store_num(first, "ts", 0)) : last, n = 0;
            pano_json_get_int(bk, "doc_count", &n);
            gauge_add(&c->t->g, t0, v0 - prev);
            if (n > 2) {
                double between = (store_value(bk, "total", 0) - v0 - v) / (double)(n - 2);
                gauge_add(&c->t->g, t0 + (last - t0) / (n - 1), between - v0);
                v0 = between;
            }
            gauge_add(&c->t->g, last, v - v0);
        }
        prev = v;
    }
    if (c->t->m->rate || (row && row->job->state == PANO_JOB_RUNNING))
        return;
    int64_t end = row && row->job->end > 0 ? pano_event_ms(row->job->end) : last;
    gauge_add(&c->t->g, end > last ? end : last, -prev);
}

static int ask_raw(pano_query *q, const pano_jobs *jobs, const pano_job *job, const frame *f,
                   track *t, run_index *runs, char *err, size_t errlen)
{
    static const char *const fam[] = {"samples", NULL};
    pano_json *filter, *body = samples_body(jobs, job, &filter);
    pano_json_append(filter, without_delta());
    static const char *const keys[][2] = {{"job", "dag_job_id"}, {"host", "hostname"},
                                          {"pid", "pid"}};
    pano_json *a = pano_json_set_object(pano_json_set_object(body, "aggs"), "runs");
    pano_json *c = pano_json_set_object(a, "composite");
    pano_json_set_int(c, "size", 100);
    pano_json *sources = pano_json_set_array(c, "sources");
    for (size_t i = 0; i < 3; i++) {
        pano_json *s = pano_json_object();
        pano_json *terms = pano_json_set_object(pano_json_set_object(s, keys[i][0]), "terms");
        pano_json_set_str(terms, "field", keys[i][1]);
        pano_json_set_bool(terms, "missing_bucket", true);
        pano_json_append(sources, s);
    }
    pano_json *sub;
    histogram(pano_json_set_object(a, "aggs"), "t", f->step, 1, NULL, &sub);
    if (!t->m->rate)
        pano_json_set(sub, "total", store_metric("sum", t->m->fields[0]));
    for (int end = 0; end < 2; end++) {
        if (end == 0 && t->m->rate)
            continue; /* a counter's last value in each bucket is enough */
        pano_json *top =
            pano_json_set_object(pano_json_set_object(sub, end ? "last" : "first"), "top_hits");
        pano_json_set_int(top, "size", 1);
        pano_json_set(top, "sort",
                      store_literal(end ? "[{\"ts\":\"desc\"}]" : "[{\"ts\":\"asc\"}]"));
        pano_json *src = pano_json_set_array(top, "_source");
        pano_json_append(src, pano_json_string("ts"));
        for (size_t k = 0; k < 2 && t->m->fields[k]; k++)
            pano_json_append(src, pano_json_string(t->m->fields[k]));
    }
    raw_ctx ctx = {f, t, runs};
    return store_composite_each(q, jobs, fam, body, "runs", on_raw_run, &ctx, err, errlen);
}

/* The lost runs whose samples carry delta: nothing brings their gauges back
 * to zero, so their latest sample's values leave the level at its time. */
static void end_lost_runs(const pano_jobs *jobs, const pano_job *job, track *t,
                          const run_index *runs)
{
    static const char *const gauges[] = {"rss", "vm", "procs", "threads"};
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        if (j->state != PANO_JOB_LOST || !j->from_monitor || (job && j != job))
            continue;
        if (runs->n) {
            char *key = job_key(j);
            const run_entry *row = run_index_find(runs, key);
            free(key);
            if (row && row->raw)
                continue; /* ended in on_raw_run */
        }
        int64_t latest[] = {j->rss, j->vm, j->procs, j->threads};
        for (size_t g = 0; g < 4; g++)
            if (strcmp(t->m->fields[0], gauges[g]) == 0)
                gauge_add(&t->g, pano_event_ms(j->last_seen), -(double)latest[g]);
    }
}

/* ---- the buckets with changes of both kinds: their samples cell by cell ------------ */

static pano_json *time_range(int64_t from, int64_t to)
{
    pano_json *r = pano_json_object();
    pano_json *t = pano_json_set_object(pano_json_set_object(r, "range"), "@timestamp");
    pano_json_set_int(t, "gte", from);
    pano_json_set_int(t, "lt", to);
    pano_json_set_str(t, "format", "epoch_millis");
    return r;
}

/* The buckets that have changes known in the client and samples with delta
 * get those samples' deltas summed per cell of the grid (gauge.h). */
static int ask_cells(pano_query *q, const pano_jobs *jobs, const pano_job *job, const frame *f,
                     track *t, size_t count, const int64_t *docs, char *err, size_t errlen)
{
    pano_json *ranges = pano_json_array();
    size_t n_ranges = 0;
    int64_t from = 0, to = 0, lo = 0, hi = 0;
    for (size_t k = 0; k < f->n; k++) {
        bool need = false;
        for (size_t i = 0; i < count && !need; i++)
            need = !t[i].m->rate && docs[k] > 0 && gauge_has_cells(&t[i].g, k);
        if (!need)
            continue;
        int64_t a = f->first + (int64_t)k * f->step;
        if (n_ranges && a == to) {
            to = a + f->step; /* the range goes on */
        } else {
            if (n_ranges)
                pano_json_append(ranges, time_range(from, to));
            else
                lo = a;
            from = a;
            to = a + f->step;
            n_ranges++;
        }
        hi = a + f->step;
    }
    if (n_ranges == 0) {
        pano_json_free(ranges);
        return 0;
    }
    pano_json_append(ranges, time_range(from, to));
    static const char *const fam[] = {"samples", NULL};
    pano_json *filter, *body = samples_body(jobs, job, &filter);
    pano_json_append(filter, store_exists("delta"));
    if (n_ranges > MAX_RANGES) {
        pano_json_free(ranges);
        pano_json_append(filter, time_range(lo, hi));
    } else {
        pano_json *any = pano_json_object();
        pano_json *b = pano_json_set_object(any, "bool");
        pano_json_set(b, "should", ranges);
        pano_json_set_int(b, "minimum_should_match", 1);
        pano_json_append(filter, any);
    }
    pano_json *sub, *cells;
    histogram(pano_json_set_object(body, "aggs"), "t", f->step, 1, NULL, &sub);
    histogram(sub, "cells", f->grid, 1, NULL, &cells);
    for (size_t i = 0; i < count; i++)
        if (!t[i].m->rate)
            pano_json_set(cells, t[i].m->fields[0], sum_of_delta(t[i].m->fields[0]));
    pano_json *answer = store_search_except(q, jobs, fam, body, "**.key_as_string", err, errlen);
    if (!answer)
        return -1;
    const pano_json *list =
        pano_json_get_array(store_agg(pano_json_get(answer, "aggregations"), "t"), "buckets");
    for (size_t b = 0; b < pano_json_len(list); b++) {
        const pano_json *bk = pano_json_at(list, b);
        size_t k;
        if (!bucket_of(f, store_num(bk, "key", NAN), &k))
            continue;
        const pano_json *in = pano_json_get_array(store_agg(bk, "cells"), "buckets");
        for (size_t c = 0; c < pano_json_len(in); c++) {
            const pano_json *cell = pano_json_at(in, c);
            int64_t start = (int64_t)store_num(cell, "key", 0);
            for (size_t i = 0; i < count; i++)
                if (!t[i].m->rate)
                    gauge_add_cell(&t[i].g, k, start, store_value(cell, t[i].m->fields[0], 0));
        }
    }
    pano_json_free(answer);
    return 0;
}

/* ---- a series ------------------------------------------------------------------- */

/* The frame of a series over [from, to] (epoch s) in steps of step s; false
 * with a message in err when it would have too many points. */
static bool frame_of(double from, double to, double step, frame *f, char *err, size_t errlen)
{
    f->step = llround(step * 1000);
    if (f->step < 1) {
        snprintf(err, errlen, "a step of %g s is under a millisecond", step);
        return false;
    }
    f->first = pano_event_ms(from) / f->step * f->step;
    int64_t n = (pano_event_ms(to) - f->first) / f->step + 1;
    if (n > MAX_POINTS) {
        snprintf(err, errlen, "a step of %g s gives %lld points over %.0f s; at most %d "
                 "(take a step of %g s or more)", step, (long long)n, to - from, MAX_POINTS,
                 ceil((to - from) / MAX_POINTS));
        return false;
    }
    f->n = (size_t)n;
    int64_t cells = GRID_BUDGET / n;
    cells = cells < 1 ? 1 : cells > GRID_CELLS ? GRID_CELLS : cells;
    f->grid = f->step / cells > 0 ? f->step / cells : 1;
    /* whole seconds from steps of 8 s, which the embedded store keeps
     * counts of (store_figures.h) */
    if (f->grid >= 1000)
        f->grid -= f->grid % 1000;
    else if (f->step >= GRID_SECONDS_FROM && f->step % 1000 == 0)
        f->grid = 1000;
    return true;
}

static int ask_series(pano_query *q, const pano_jobs *jobs, const pano_job *job, const frame *f,
                      track *t, size_t count, pano_series *out, char *err, size_t errlen)
{
    static const char *const fam[] = {"samples", NULL};
    pano_json *filter, *body = samples_body(jobs, job, &filter);
    pano_json *aggs = pano_json_set_object(body, "aggs"), *with, *sub, *unused;
    pano_json_set(aggs, "with", store_filter_agg(store_exists("delta"), &with));
    histogram(with, "t", f->step, 0, f, &sub);
    add_bucket_aggs(sub, f, t, count);
    pano_json_set(aggs, "without", store_filter_agg(without_delta(), &unused));
    pano_json *answer = store_search_except(q, jobs, fam, body, SERIES_DROP, err, errlen);
    if (!answer)
        return -1;
    const pano_json *a = pano_json_get(answer, "aggregations");
    int64_t raw = 0, delta = 0;
    pano_json_get_int(store_agg(a, "without"), "doc_count", &raw);
    pano_json_get_int(store_agg(a, "with"), "doc_count", &delta);
    int64_t *docs = pano_calloc(f->n, sizeof *docs);
    const pano_json *list = pano_json_get_array(store_agg(store_agg(a, "with"), "t"), "buckets");
    for (size_t i = 0; i < pano_json_len(list); i++) {
        const pano_json *bk = pano_json_at(list, i);
        size_t k;
        if (bucket_of(f, store_num(bk, "key", NAN), &k))
            read_bucket(bk, k, t, count, &docs[k]);
    }
    pano_json_free(answer);
    for (size_t i = 0; i < count; i++)
        out[i].samples = delta + raw;
    run_index runs = {0};
    int rc = 0;
    if (raw > 0) { /* Pegasus's own kickstart: a request per metric */
        run_index_build(&runs, jobs);
        for (size_t i = 0; i < count && rc == 0; i++)
            rc = ask_raw(q, jobs, job, f, &t[i], &runs, err, errlen);
    }
    for (size_t i = 0; i < count && rc == 0; i++)
        if (!t[i].m->rate)
            end_lost_runs(jobs, job, &t[i], &runs);
    if (rc == 0)
        rc = ask_cells(q, jobs, job, f, t, count, docs, err, errlen);
    run_index_free(&runs);
    free(docs);
    return rc;
}

int pano_query_series_rows(pano_query *q, const char *wf_uuid, double now, pano_jobs *out,
                           char *err, size_t errlen)
{
    if (runs_query_jobs(q, wf_uuid, now, RUNS_OPEN, out, err, errlen) < 0)
        return -1;
    if (!out->partial)
        return 0;
    static const char *const fam[] = {"samples", NULL};
    pano_json *filter, *body = samples_body(out, NULL, &filter);
    pano_json_append(filter, without_delta());
    pano_json_set_int(body, "size", 0);
    pano_json_set_int(body, "terminate_after", 1);
    pano_json_set_bool(body, "track_total_hits", true);
    pano_json *answer = store_search(q, out, fam, body, err, errlen);
    if (!answer) {
        pano_jobs_free(out);
        return -1;
    }
    int64_t raw = 0;
    pano_json_get_int(pano_json_get(pano_json_get(answer, "hits"), "total"), "value", &raw);
    pano_json_free(answer);
    if (raw == 0)
        return 0;
    pano_jobs_free(out);
    return pano_query_jobs(q, wf_uuid, now, out, err, errlen);
}

int pano_query_series_many(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                           const char *const *metrics, size_t count, double step,
                           pano_series *out, char *err, size_t errlen)
{
    memset(out, 0, count * sizeof *out);
    for (size_t i = 0; i < count; i++) {
        if (!(out[i].metric = find_metric(metrics[i]))) {
            pano_buf names = {0};
            for (const pano_metric_info *k = pano_series_metrics; k->name; k++)
                pano_buf_appendf(&names, "%s%s", k == pano_series_metrics ? "" : ", ", k->name);
            snprintf(err, errlen, "unknown metric '%.40s' (one of %s)", metrics[i], names.data);
            pano_buf_free(&names);
            return -1;
        }
        out[i].step = step;
    }
    double from, to;
    frame f;
    if (count == 0 || !(step > 0) || !pano_jobs_span(jobs, job, &from, &to))
        return 0; /* nothing to show yet */
    if (!frame_of(from, to, step, &f, err, errlen))
        return -1;
    track *t = pano_calloc(count, sizeof *t);
    for (size_t i = 0; i < count; i++) {
        t[i].m = out[i].metric;
        if (t[i].m->rate)
            t[i].sum = pano_calloc(f.n, sizeof(double));
        else
            gauge_init(&t[i].g, f.first, f.step, f.grid, f.n);
    }
    int rc = ask_series(q, jobs, job, &f, t, count, out, err, errlen);
    for (size_t i = 0; i < count; i++) {
        if (rc == 0) {
            out[i].points = pano_calloc(f.n, sizeof *out[i].points);
            out[i].n = f.n;
            if (t[i].m->rate)
                for (size_t k = 0; k < f.n; k++)
                    out[i].points[k] = (pano_point){(double)(f.first + f.step * (int64_t)k) / 1000,
                                                    t[i].sum[k] * 1000 / (double)f.step, NAN};
            else
                gauge_points(&t[i].g, out[i].points);
        }
        if (t[i].m->rate)
            free(t[i].sum);
        else
            gauge_free(&t[i].g);
    }
    free(t);
    return rc;
}

int pano_query_series(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                      const char *metric, double step, pano_series *out, char *err,
                      size_t errlen)
{
    return pano_query_series_many(q, jobs, job, &metric, 1, step, out, err, errlen);
}

void pano_series_free(pano_series *s)
{
    free(s->points);
    memset(s, 0, sizeof *s);
}
