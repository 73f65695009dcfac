/*
 * series.c - a metric over time, with the rate math done right.
 *
 * The counters of a sample (utime, rchar, ...) are cumulative per process
 * tree, so averaging or summing them per bucket (what Panorama's charts
 * did) means nothing. pano-monitor's samples carry `delta`, each value's
 * change since the previous sample, so:
 *   counter rate in a bucket = sum of its deltas in the bucket / step
 *     (= the per-job differences of consecutive samples, summed over jobs);
 *   gauge in a bucket        = sum of its deltas up to the bucket's end
 *     (= the sum over jobs of each one's latest value; an ended job's last
 *      sample brings its share back to zero).
 * One date_histogram of sums does it, whatever the number of jobs. A lost
 * run (no end, samples stopped) has no last sample to bring its gauges back
 * to zero: its share ends after the bucket of its last sample. Samples
 * without delta (Pegasus's own kickstart) are reduced per run: the last
 * cumulative value per bucket, differenced (counters) or carried forward
 * (gauges) per run, then summed.
 */
#include "mem.h"
#include "query.h"
#include "store_es.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many buckets in one series (Elasticsearch's limit is 65,536). */
#define MAX_POINTS 20000

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

typedef struct {
    double from, step; /* the first bucket's start, epoch s; bucket length */
    size_t n;
    double *sum;       /* per bucket: deltas (or differences) summed */
} buckets;

static size_t bucket_of(const buckets *b, double t)
{
    double i = floor((t - b->from) / b->step);
    return i < 0 ? 0 : i >= (double)b->n ? b->n - 1 : (size_t)i;
}

/* A date_histogram over [from, to] in steps, empty buckets included. */
static pano_json *histogram(pano_json *aggs, const char *name, const buckets *b, pano_json **sub)
{
    pano_json *h = pano_json_set_object(pano_json_set_object(aggs, name), "date_histogram");
    pano_json_set_str(h, "field", "@timestamp");
    char interval[32];
    snprintf(interval, sizeof interval, "%lldms", (long long)llround(b->step * 1000));
    pano_json_set_str(h, "fixed_interval", interval);
    pano_json_set_int(h, "min_doc_count", 0);
    pano_json_set_int(h, "offset", 0);
    pano_json *bounds = pano_json_set_object(h, "extended_bounds");
    pano_json_set_int(bounds, "min", (int64_t)llround(b->from * 1000));
    pano_json_set_int(bounds, "max",
                      (int64_t)llround((b->from + b->step * (double)(b->n - 1)) * 1000));
    *sub = pano_json_set_object(pano_json_get(aggs, name), "aggs");
    return h;
}

static void field_name(char *out, size_t size, const char *prefix, const char *field)
{
    snprintf(out, size, "%s%s", prefix, field);
}

/* The sum of a metric's fields in one bucket of an answer. */
static double bucket_sum(const pano_json *bucket, const pano_metric_info *m)
{
    double v = 0;
    for (size_t f = 0; f < 2 && m->fields[f]; f++)
        v += store_value(bucket, m->fields[f], 0);
    return v;
}

static void add_bucket_values(buckets *b, const pano_json *hist, const pano_metric_info *m)
{
    const pano_json *list = pano_json_get_array(hist, "buckets");
    for (size_t i = 0; i < pano_json_len(list); i++) {
        const pano_json *bk = pano_json_at(list, i);
        double key = store_num(bk, "key", NAN);
        if (!isnan(key))
            b->sum[bucket_of(b, key / 1000)] += bucket_sum(bk, m);
    }
}

/* The runs whose samples came without delta, by "job host pid": their
 * share of a gauge already ends after their last sample. */
typedef struct {
    char **keys; /* sorted once filled */
    size_t n, cap;
} run_set;

static char *run_key(const char *job, const char *host, const char *pid)
{
    return pano_asprintf("%s\x1f%s\x1f%s", job ? job : "", host ? host : "", pid);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool run_set_has(const run_set *s, const pano_job *j)
{
    char pid[32];
    snprintf(pid, sizeof pid, "%lld", (long long)j->pid);
    char *key = run_key(j->dag_job_id, j->host, pid);
    bool found = s->n && store_find(&key, s->keys, s->n, sizeof *s->keys, by_key) != NULL;
    free(key);
    return found;
}

static void run_set_free(run_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->keys[i]);
    free(s->keys);
    memset(s, 0, sizeof *s);
}

/* Runs of samples without delta: the last cumulative value per bucket, per
 * run, made into differences (counters) or carried forward (gauges). */
typedef struct {
    buckets *b;
    const pano_metric_info *m;
    double *run;  /* per bucket, this run's last value (NAN: no sample) */
    run_set *raw; /* the runs seen, when not NULL */
} raw_ctx;

static void on_raw_run(const pano_json *run_bucket, void *user)
{
    raw_ctx *c = user;
    buckets *b = c->b;
    if (c->raw) {
        const pano_json *key = pano_json_get(run_bucket, "key");
        char job[256], host[256], pid[32];
        run_set *s = c->raw;
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 64;
            s->keys = pano_reallocarray(s->keys, s->cap, sizeof *s->keys);
        }
        s->keys[s->n++] = run_key(store_str(key, "job", job, sizeof job),
                                  store_str(key, "host", host, sizeof host),
                                  store_str(key, "pid", pid, sizeof pid));
    }
    for (size_t i = 0; i < b->n; i++)
        c->run[i] = NAN;
    const pano_json *list = pano_json_get_array(store_agg(run_bucket, "t"), "buckets");
    size_t last = 0;
    for (size_t i = 0; i < pano_json_len(list); i++) {
        const pano_json *bk = pano_json_at(list, i);
        const pano_json *doc = store_top_hit(bk, "last");
        double key = store_num(bk, "key", NAN);
        if (!doc || isnan(key))
            continue;
        double v = 0;
        for (size_t f = 0; f < 2 && c->m->fields[f]; f++)
            v += store_num(doc, c->m->fields[f], 0);
        size_t k = bucket_of(b, key / 1000);
        c->run[k] = v;
        if (k > last)
            last = k;
    }
    double prev = 0;
    for (size_t k = 0; k <= last && k < b->n; k++) {
        if (isnan(c->run[k]))
            continue;
        b->sum[k] += c->run[k] - prev; /* a difference, summed up again for gauges */
        prev = c->run[k];
    }
    if (!c->m->rate && last + 1 < b->n)
        b->sum[last + 1] -= prev; /* the run's samples stopped: its share ends */
}

static int ask_raw(pano_query *q, const pano_jobs *jobs, const pano_job *job, buckets *b,
                   const pano_metric_info *m, run_set *raw, char *err, size_t errlen)
{
    static const char *const fam[] = {"samples", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json_append(filter, store_term("event", "kickstart.inv.online"));
    if (job)
        pano_json_append(filter, store_run_filter(job));
    pano_json *no_delta = pano_json_object();
    pano_json_append(pano_json_set_array(pano_json_set_object(no_delta, "bool"), "must_not"),
                     store_exists("delta"));
    pano_json_append(filter, no_delta);
    static const char *const keys[][2] = {{"job", "dag_job_id"}, {"host", "hostname"},
                                          {"pid", "pid"}};
    pano_json *a = pano_json_set_object(pano_json_set_object(body, "aggs"), "runs");
    pano_json *c = pano_json_set_object(a, "composite");
    pano_json_set_int(c, "size", 100);
    pano_json *sources = pano_json_set_array(c, "sources");
    for (size_t i = 0; i < 3; i++) {
        pano_json *s = pano_json_object();
        pano_json *t = pano_json_set_object(pano_json_set_object(s, keys[i][0]), "terms");
        pano_json_set_str(t, "field", keys[i][1]);
        pano_json_set_bool(t, "missing_bucket", true);
        pano_json_append(sources, s);
    }
    pano_json *sub, *per = pano_json_set_object(a, "aggs");
    histogram(per, "t", b, &sub);
    pano_json *h = pano_json_get(pano_json_get(per, "t"), "date_histogram");
    pano_json_set_int(h, "min_doc_count", 1);
    pano_json_remove(h, "extended_bounds");
    pano_json *top = pano_json_set_object(pano_json_set_object(sub, "last"), "top_hits");
    pano_json_set_int(top, "size", 1);
    pano_json_set(top, "sort", store_literal("[{\"ts\":\"desc\"}]"));
    pano_json *src = pano_json_set_array(top, "_source");
    for (size_t f = 0; f < 2 && m->fields[f]; f++)
        pano_json_append(src, pano_json_string(m->fields[f]));
    raw_ctx ctx = {b, m, pano_calloc(b->n, sizeof(double)), raw};
    int rc = store_composite_each(q, jobs, fam, body, "runs", on_raw_run, &ctx, err, errlen);
    free(ctx.run);
    if (raw)
        store_sort(raw->keys, raw->n, sizeof *raw->keys, by_key);
    return rc;
}

/* The gauges of lost runs whose samples carry delta: their share ends after
 * their last sample. (Nothing brings their deltas back to zero; the runs
 * without delta, in raw, end there already.) */
static void end_lost_runs(const pano_jobs *jobs, const pano_job *job, buckets *b,
                          const pano_metric_info *m, const run_set *raw)
{
    static const char *const gauges[] = {"rss", "vm", "procs", "threads"};
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        if (j->state != PANO_JOB_LOST || !j->from_monitor || (job && j != job) ||
            run_set_has(raw, j))
            continue;
        size_t k = bucket_of(b, j->last_seen) + 1;
        int64_t last[] = {j->rss, j->vm, j->procs, j->threads};
        for (size_t g = 0; g < 4 && k < b->n; g++)
            if (strcmp(m->fields[0], gauges[g]) == 0)
                b->sum[k] -= (double)last[g];
    }
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
    if (count == 0 || !(step > 0) || !pano_jobs_span(jobs, job, &from, &to))
        return 0; /* nothing to show yet */
    /* Buckets on multiples of the step, as date_histogram makes them. */
    double first = floor(from / step) * step;
    double n = floor((to - first) / step) + 1;
    if (n > MAX_POINTS) {
        snprintf(err, errlen, "a step of %g s gives %.0f points over %.0f s; at most %d "
                 "(take a step of %g s or more)", step, n, to - from, MAX_POINTS,
                 ceil((to - from) / MAX_POINTS));
        return -1;
    }
    buckets *b = pano_calloc(count, sizeof *b);
    for (size_t i = 0; i < count; i++)
        b[i] = (buckets){.from = first, .step = step, .n = (size_t)n,
                         .sum = pano_calloc((size_t)n, sizeof(double))};

    /* One date_histogram with the sums of every metric's fields. */
    static const char *const fam[] = {"samples", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json_append(filter, store_term("event", "kickstart.inv.online"));
    if (job)
        pano_json_append(filter, store_run_filter(job));
    pano_json *aggs = pano_json_set_object(body, "aggs"), *with, *sub;
    pano_json_set(aggs, "with", store_filter_agg(store_exists("delta"), &with));
    histogram(with, "t", &b[0], &sub);
    for (size_t i = 0; i < count; i++)
        for (size_t f = 0; f < 2 && out[i].metric->fields[f]; f++) {
            char field[64];
            field_name(field, sizeof field, "delta.", out[i].metric->fields[f]);
            pano_json_set(sub, out[i].metric->fields[f], store_metric("sum", field));
        }
    pano_json *none = pano_json_object();
    pano_json_append(pano_json_set_array(pano_json_set_object(none, "bool"), "must_not"),
                     store_exists("delta"));
    pano_json *unused;
    pano_json_set(aggs, "without", store_filter_agg(none, &unused));
    pano_json *answer = store_search(q, jobs, fam, body, err, errlen);
    run_set raw_runs = {0};
    int rc = -1;
    if (answer) {
        const pano_json *a = pano_json_get(answer, "aggregations");
        int64_t raw = 0, delta = 0;
        pano_json_get_int(store_agg(a, "without"), "doc_count", &raw);
        pano_json_get_int(store_agg(a, "with"), "doc_count", &delta);
        rc = 0;
        for (size_t i = 0; i < count && rc == 0; i++) {
            out[i].samples = delta + raw;
            add_bucket_values(&b[i], store_agg(store_agg(a, "with"), "t"), out[i].metric);
            if (raw > 0) /* Pegasus's own kickstart: a request per metric; the runs
                          * are the same for every metric, noted on the first */
                rc = ask_raw(q, jobs, job, &b[i], out[i].metric, i == 0 ? &raw_runs : NULL,
                             err, errlen);
        }
        pano_json_free(answer);
    }
    for (size_t i = 0; i < count; i++) {
        const pano_metric_info *m = out[i].metric;
        if (rc == 0) {
            if (!m->rate)
                end_lost_runs(jobs, job, &b[i], m, &raw_runs);
            out[i].points = pano_calloc(b[i].n, sizeof *out[i].points);
            out[i].n = b[i].n;
            double level = 0;
            for (size_t k = 0; k < b[i].n; k++) {
                level += b[i].sum[k];
                out[i].points[k] = (pano_point){first + step * (double)k,
                                                m->rate ? b[i].sum[k] / step : level};
            }
        }
        free(b[i].sum);
    }
    free(b);
    run_set_free(&raw_runs);
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
