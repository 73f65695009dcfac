/*
 * stats.c - pegasus-statistics' figures at any moment of a run, and the
 * anomalies, computed from the job rows (exact medians and percentiles).
 */
#include "event.h"
#include "mem.h"
#include "query.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The p-th percentile (0..100) of sorted values, linear between ranks. */
static double percentile(const double *v, size_t n, double p)
{
    if (n == 0)
        return NAN;
    double rank = p / 100 * (double)(n - 1);
    size_t lo = (size_t)floor(rank), hi = (size_t)ceil(rank);
    return v[lo] + (v[hi] - v[lo]) * (rank - (double)lo);
}

pano_summary pano_summarize(double *values, size_t n)
{
    pano_summary s = {.n = n, .min = NAN, .median = NAN, .mean = NAN, .max = NAN, .p95 = NAN};
    if (n == 0)
        return s;
    qsort(values, n, sizeof *values, compare_doubles);
    for (size_t i = 0; i < n; i++)
        s.total += values[i];
    s.min = values[0];
    s.max = values[n - 1];
    s.mean = s.total / (double)n;
    s.median = percentile(values, n, 50);
    s.p95 = percentile(values, n, 95);
    return s;
}

/* The metrics compared within a transformation. */
typedef struct {
    const char *name;
    double (*of)(const pano_job *j); /* NAN when the run has no value */
    double least; /* an outlier differs from the median by at least this much */
} metric;

static double duration_of(const pano_job *j) { return j->duration; }
static double cpu_of(const pano_job *j) { return j->cpu_time; }
static double maxrss_of(const pano_job *j) { return j->maxrss < 0 ? NAN : (double)j->maxrss; }
static double read_of(const pano_job *j)
{
    return j->bytes_read < 0 ? NAN : (double)j->bytes_read;
}
static double written_of(const pano_job *j)
{
    return j->bytes_written < 0 ? NAN : (double)j->bytes_written;
}

static const metric metrics[] = {
    {"duration", duration_of, 1.0},          /* s */
    {"cpu_time", cpu_of, 1.0},               /* s */
    {"maxrss", maxrss_of, 10240},            /* kB: 10 MiB */
    {"bytes_read", read_of, 10485760},       /* 10 MiB */
    {"bytes_written", written_of, 10485760}, /* 10 MiB */
};
enum { N_METRICS = sizeof metrics / sizeof metrics[0] };

/* Jobs grouped by a name (transformation, host or DAG job id): the jobs'
 * indices in the order of that name, so each group is a contiguous slice;
 * within a group in their order in jobs. */
typedef enum { BY_TRANSFORMATION, BY_HOST, BY_DAG_JOB } grouping;

typedef struct {
    const char *name;
    size_t n;     /* its jobs */
    size_t start; /* its slice */
    size_t next;  /* where its next job goes */
} name_group;

static const char *group_name(const pano_job *j, grouping by)
{
    return by == BY_HOST ? j->host : by == BY_DAG_JOB ? j->dag_job_id : j->transformation;
}

static int by_group_name(const void *a, const void *b, void *groups)
{
    const name_group *g = groups;
    return strcmp(g[*(const size_t *)a].name, g[*(const size_t *)b].name);
}

/* The names told apart by a hash table (a group per distinct name, in the
 * order first seen), then only the groups sorted: a linear pass over the
 * jobs, whose names repeat (tens of transformations and hosts among
 * 100,000 jobs). */
static size_t *sorted_members(const pano_jobs *jobs, grouping by)
{
    size_t n = jobs->n, cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *slots = pano_malloc(cap * sizeof *slots), *of = pano_calloc(n ? n : 1, sizeof *of);
    memset(slots, 0xff, cap * sizeof *slots); /* SIZE_MAX: free */
    name_group *g = pano_calloc(n ? n : 1, sizeof *g);
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = group_name(&jobs->jobs[i], by);
        size_t h = pano_hash_str(name) & (cap - 1);
        while (slots[h] != SIZE_MAX && strcmp(g[slots[h]].name, name) != 0)
            h = (h + 1) & (cap - 1);
        if (slots[h] == SIZE_MAX) {
            slots[h] = ng;
            g[ng++] = (name_group){.name = name};
        }
        of[i] = slots[h];
        g[of[i]].n++;
    }
    size_t *rank = slots; /* reused: the groups in the order of their names */
    for (size_t k = 0; k < ng; k++)
        rank[k] = k;
    qsort_r(rank, ng, sizeof *rank, by_group_name, g);
    for (size_t k = 0, at = 0; k < ng; at += g[rank[k]].n, k++)
        g[rank[k]].start = g[rank[k]].next = at;
    size_t *idx = pano_calloc(n ? n : 1, sizeof *idx);
    for (size_t i = 0; i < n; i++)
        idx[g[of[i]].next++] = i;
    free(slots);
    free(of);
    free(g);
    return idx;
}

/* The end of the group that starts at idx[from]. */
static size_t group_end(const pano_jobs *jobs, const size_t *idx, size_t from, grouping by)
{
    const char *name = group_name(&jobs->jobs[idx[from]], by);
    size_t to = from + 1;
    while (to < jobs->n && strcmp(group_name(&jobs->jobs[idx[to]], by), name) == 0)
        to++;
    return to;
}

/* The values of a metric over the ended runs among idx[from..to). */
static size_t ended_values(const pano_jobs *jobs, const size_t *idx, size_t from, size_t to,
                           const metric *m, double *out)
{
    size_t n = 0;
    for (size_t i = from; i < to; i++) {
        const pano_job *j = &jobs->jobs[idx[i]];
        double v = pano_job_state_ended(j->state) ? m->of(j) : NAN;
        if (!isnan(v))
            out[n++] = v;
    }
    return n;
}

/* One row per distinct transformation (or host), sorted by name. */
static pano_group_stats *group(const pano_jobs *jobs, grouping by, size_t *count)
{
    size_t *idx = sorted_members(jobs, by);
    double *values = pano_calloc(jobs->n ? jobs->n : 1, sizeof *values);
    pano_group_stats *g = NULL;
    size_t n = 0;
    for (size_t from = 0, to; from < jobs->n; from = to) {
        to = group_end(jobs, idx, from, by);
        g = pano_reallocarray(g, n + 1, sizeof *g);
        pano_group_stats *row = &g[n++];
        memset(row, 0, sizeof *row);
        row->name = pano_strdup(group_name(&jobs->jobs[idx[from]], by));
        for (size_t i = from; i < to; i++) {
            pano_job_state st = jobs->jobs[idx[i]].state;
            row->runs++;
            row->succeeded += st == PANO_JOB_SUCCEEDED;
            row->failed += st == PANO_JOB_FAILED || st == PANO_JOB_KILLED;
            row->running += st == PANO_JOB_RUNNING;
        }
        pano_summary *s[N_METRICS] = {&row->duration, &row->cpu_time, &row->maxrss,
                                      &row->bytes_read, &row->bytes_written};
        for (size_t m = 0; m < N_METRICS; m++)
            *s[m] = pano_summarize(values, ended_values(jobs, idx, from, to, &metrics[m], values));
    }
    free(values);
    free(idx);
    *count = n;
    return g;
}

void pano_stats_count(const pano_jobs *jobs, pano_stats *out)
{
    memset(out, 0, sizeof *out);
    out->runs = jobs->n;
    bool running = false;
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        running |= j->state == PANO_JOB_RUNNING;
        if (pano_job_state_ended(j->state)) {
            out->cumulative_job_wall_time += j->duration;
            if (j->state != PANO_JOB_SUCCEEDED)
                out->cumulative_badput += j->duration;
        } else if (j->state == PANO_JOB_RUNNING)
            out->cumulative_job_wall_time_running += j->duration;
    }
    /* A job counts once, by its latest attempt (a run without a DAG job id
     * is a job of its own). */
    size_t *idx = sorted_members(jobs, BY_DAG_JOB);
    for (size_t from = 0, to; from < jobs->n; from = to) {
        const pano_job *latest = &jobs->jobs[idx[from]];
        to = *latest->dag_job_id ? group_end(jobs, idx, from, BY_DAG_JOB) : from + 1;
        for (size_t i = from + 1; i < to; i++) /* of attempts alike, the last in jobs */
            if (jobs->jobs[idx[i]].attempt >= latest->attempt)
                latest = &jobs->jobs[idx[i]];
        out->jobs++;
        out->jobs_by_state[latest->state]++;
    }
    free(idx);
    out->retries = out->runs - out->jobs;
    if (jobs->first_event > 0) {
        double until = running && !jobs->wf_ended ? jobs->now : jobs->last_event;
        out->wall_time = until > jobs->first_event ? until - jobs->first_event : 0;
    }
}

void pano_stats_compute(const pano_jobs *jobs, pano_stats *out)
{
    pano_stats_count(jobs, out);
    out->transformations = group(jobs, BY_TRANSFORMATION, &out->n_transformations);
    out->hosts = group(jobs, BY_HOST, &out->n_hosts);
}

void pano_stats_free(pano_stats *s)
{
    for (size_t i = 0; i < s->n_transformations; i++)
        free(s->transformations[i].name);
    for (size_t i = 0; i < s->n_hosts; i++)
        free(s->hosts[i].name);
    free(s->transformations);
    free(s->hosts);
    memset(s, 0, sizeof *s);
}

/* ---- anomalies -------------------------------------------------------------- */

static const char *const kind_names[] = {"outlier", "overdue", "failed"};

const char *pano_anomaly_kind_name(pano_anomaly_kind kind) { return kind_names[kind]; }

/* Iglewicz and Hoaglin's modified z-score, 0.6745 (x - median) / MAD; when
 * more than half the peers are equal (MAD = 0), the mean absolute
 * deviation stands in (x - median) / (1.253314 MeanAD); when every peer is
 * equal, any other value is infinitely far. */
static double modified_z(double x, double median, double mad, double meanad)
{
    if (mad > 0)
        return 0.6745 * (x - median) / mad;
    if (meanad > 0)
        return (x - median) / (1.253314 * meanad);
    return x == median ? 0 : x > median ? INFINITY : -INFINITY;
}

static void add(pano_anomaly **out, size_t *n, pano_anomaly a)
{
    *out = pano_reallocarray(*out, *n + 1, sizeof **out);
    (*out)[(*n)++] = a;
}

size_t pano_anomalies_find(const pano_jobs *jobs, pano_anomaly **out)
{
    *out = NULL;
    size_t n = 0;
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        if (j->state == PANO_JOB_FAILED || j->state == PANO_JOB_KILLED)
            add(out, &n, (pano_anomaly){.kind = PANO_ANOMALY_FAILED, .job = j,
                                        .metric = "exitcode", .value = j->exitcode});
    }
    size_t *idx = sorted_members(jobs, BY_TRANSFORMATION);
    double *values = pano_calloc(jobs->n ? jobs->n : 1, sizeof *values);
    double *dev = pano_calloc(jobs->n ? jobs->n : 1, sizeof *dev);
    for (size_t from = 0, to; from < jobs->n; from = to) {
        to = group_end(jobs, idx, from, BY_TRANSFORMATION);
        for (size_t m = 0; m < N_METRICS; m++) {
            size_t peers = ended_values(jobs, idx, from, to, &metrics[m], values);
            if (peers < PANO_OUTLIER_MIN_PEERS)
                continue;
            pano_summary s = pano_summarize(values, peers);
            double meanad = 0;
            for (size_t k = 0; k < peers; k++) {
                dev[k] = fabs(values[k] - s.median);
                meanad += dev[k];
            }
            meanad /= (double)peers;
            double mad = pano_summarize(dev, peers).median;
            for (size_t i = from; i < to; i++) {
                const pano_job *j = &jobs->jobs[idx[i]];
                double x = metrics[m].of(j);
                if (j->state == PANO_JOB_RUNNING && m == 0 && x > s.p95)
                    /* still going, and already longer than nearly all ended peers */
                    add(out, &n, (pano_anomaly){.kind = PANO_ANOMALY_OVERDUE, .job = j,
                                                .metric = metrics[m].name, .value = x,
                                                .median = s.median, .score = x / s.p95,
                                                .threshold = s.p95, .peers = peers});
                if (!pano_job_state_ended(j->state) || isnan(x))
                    continue;
                /* Far in the statistical sense, and by enough to matter: runs
                 * that are all alike have a tiny MAD, and would make
                 * milliseconds or kilobytes outliers. */
                double z = modified_z(x, s.median, mad, meanad);
                double least = fmax(PANO_OUTLIER_MIN_CHANGE * fabs(s.median), metrics[m].least);
                if (fabs(z) > PANO_OUTLIER_Z && fabs(x - s.median) >= least)
                    add(out, &n, (pano_anomaly){.kind = PANO_ANOMALY_OUTLIER, .job = j,
                                                .metric = metrics[m].name, .value = x,
                                                .median = s.median, .mad = mad, .score = z,
                                                .threshold = PANO_OUTLIER_Z, .peers = peers});
            }
        }
    }
    free(values);
    free(dev);
    free(idx);
    return n;
}
