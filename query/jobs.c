/*
 * jobs.c - a workflow's job runs, and the rows joined from them.
 *
 * The runs come from pano-indexer's summaries when they cover the workflow
 * (jobs_summaries.c, after request 1), else from the store's aggregations.
 * Requests (each skipped when the workflow has no such events):
 *   1. the workflow: label, first and last event, the stampede.xwf.end
 *      status, and how many events of each kind there are (and of each
 *      kind of summary, with the earliest);
 *   2. pano-monitor's runs: a composite aggregation over kickstart.inv.start
 *      and .end per (dag_job_id, hostname, pid), the end's figures per run;
 *   3. the runs without an end: their latest sample (a few runs at a time
 *      normally, so this reads the samples of those runs only);
 *   4. pegasus-monitord's job instances: stampede.job_inst.* and
 *      stampede.inv.end per (job_id, job_inst_id);
 *   5. darshan.* and transfer.* events per (dag_job_id, hostname).
 */
#include "event.h"
#include "mem.h"
#include "query.h"
#include "runs.h"
#include "store.h"
#include "store_es.h"
#include "store_sqlite.h"
#include "summary.h"
#include "thread.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Composite pages: buckets per request. Every page scans all the documents
 * the query selects, so pages are large (Elasticsearch's limit on buckets
 * in one answer is 65,536). */
#define PAGE 10000
/* Runs without an end whose samples are asked for one by one; more, and the
 * samples of the whole workflow are aggregated instead. */
#define MAX_OPEN_RUNS 1000
/* A run is lost when no sample came for this many intervals (plus the time
 * the pipeline takes to make one searchable, pano.query.ingest_delay). */
#define LOST_AFTER_INTERVALS 3

static const char *const state_names[PANO_JOB_STATES] = {
    "queued", "held", "running", "lost", "succeeded", "failed", "killed",
};

const char *pano_job_state_name(pano_job_state s)
{
    return s < PANO_JOB_STATES ? state_names[s] : "unknown";
}

bool pano_job_state_parse(const char *name, pano_job_state *out)
{
    for (int i = 0; i < PANO_JOB_STATES; i++)
        if (strcmp(name, state_names[i]) == 0) {
            *out = (pano_job_state)i;
            return true;
        }
    return false;
}

bool pano_job_state_ended(pano_job_state s)
{
    return s == PANO_JOB_SUCCEEDED || s == PANO_JOB_FAILED || s == PANO_JOB_KILLED;
}

bool pano_query_job_name_valid(const char *name)
{
    size_t n = 0;
    for (const char *p = name; *p; p++, n++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("_.:@#+-", *p)))
            return false;
    return n >= 1 && n <= 255;
}

/* The embedded store's files and directories, pano.store's comma-separated
 * paths, read as one. */
static sqlite3 *open_store(const char *paths, char *err, size_t errlen)
{
    char *copy = pano_strdup(paths), *save = NULL;
    const char *list[64];
    size_t n = 0;
    for (char *p = strtok_r(copy, ",", &save); p && n < 64; p = strtok_r(NULL, ",", &save))
        list[n++] = p;
    sqlite3 *db = pano_store_open_reader(list, n, err, errlen);
    free(copy);
    if (db && store_sqlite_prepare(db, err, errlen) < 0) {
        sqlite3_close(db);
        db = NULL;
    }
    return db;
}

pano_query *pano_query_new(const pano_config *cfg, char *err, size_t errlen)
{
    pano_stream_policy policies[PANO_N_STREAMS];
    if (pano_stream_policies(cfg, policies, err, errlen) < 0)
        return NULL;
    pano_query *q = pano_calloc(1, sizeof *q);
    q->prefix = pano_strdup(pano_config_str(cfg, "pano.indexer.index_prefix"));
    memcpy(q->policies, policies, sizeof policies);
    q->ingest_delay = pano_config_double(cfg, "pano.query.ingest_delay");
    q->use_summaries = pano_config_bool(cfg, "pano.query.summaries");
    char store[4096];
    if (pano_store_to_read(cfg, store, sizeof store)) {
        if (!(q->db = open_store(store, err, errlen)))
            goto fail;
        q->source = pano_asprintf("the embedded store %s", store);
    } else {
        if (!(q->es = pano_es_new(cfg, err, errlen)) || !(q->reader = pano_es_new(cfg, err, errlen)))
            goto fail;
        q->source = pano_asprintf("Elasticsearch at %s, indices %s*", pano_es_describe(q->es),
                                  q->prefix);
    }
    return q;
fail:
    pano_query_free(q);
    return NULL;
}

const char *pano_query_source(const pano_query *q)
{
    return q->source;
}

void pano_query_free(pano_query *q)
{
    if (!q)
        return;
    pano_es_free(q->es);
    pano_es_free(q->reader);
    if (q->db)
        sqlite3_close(q->db);
    free(q->prefix);
    free(q->source);
    free(q);
}

typedef struct {
    bool (*should_stop)(void *user);
    void *user;
} abort_check;

static int sqlite_should_stop(void *user)
{
    const abort_check *a = user;
    return a->should_stop(a->user);
}

void pano_query_set_abort(pano_query *q, bool (*should_stop)(void *user), void *user)
{
    if (q->db) {
        static _Thread_local abort_check check;
        check = (abort_check){should_stop, user};
        sqlite3_progress_handler(q->db, should_stop ? 10000 : 0, sqlite_should_stop, &check);
        return;
    }
    pano_es_set_abort(q->es, should_stop, user);
    pano_es_set_abort(q->reader, should_stop, user);
}

/* ---- collecting runs -------------------------------------------------------- */

run *runs_add(collect *c)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->runs = pano_reallocarray(c->runs, c->cap, sizeof *c->runs);
    }
    run *r = &c->runs[c->n++];
    memset(r, 0, sizeof *r);
    r->inst_id = -1;
    r->job.pid = -1;
    r->job.exitcode = -1;
    r->job.maxrss = -1;
    r->job.bytes_read = -1;
    r->job.bytes_written = -1;
    return r;
}

static char *key_str(const pano_json *key, const char *name)
{
    char buf[512];
    return pano_strdup(store_str(key, name, buf, sizeof buf));
}

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

pano_job_state runs_decode_status(double raw, int *exitcode, int *signal)
{
    long v = (long)raw;
    *signal = 0;
    if (v < 0) {
        *exitcode = -1;
        return PANO_JOB_FAILED;
    }
    if (v & 0x7f) {
        *signal = (int)(v & 0x7f);
        *exitcode = 128 + *signal;
        return PANO_JOB_KILLED;
    }
    *exitcode = (int)(v >> 8);
    return *exitcode == 0 ? PANO_JOB_SUCCEEDED : PANO_JOB_FAILED;
}

/* ---- 1. the workflow ---------------------------------------------------------- */

typedef struct {
    int64_t monitor_events, stampede_events, side_events;
    runs_coverage cover; /* when the summaries are asked */
} wf_counts;

static int64_t filter_count(const pano_json *aggs, const char *name)
{
    int64_t n = 0;
    const pano_json *a = store_agg(aggs, name);
    return a && pano_json_get_int(a, "doc_count", &n) ? n : 0;
}

/* The events each kind of summary is made of (summary.h), how many and the
 * earliest: kickstart.inv.* but the closing samples pano-indexer makes
 * (indexer/deltas.h); stampede.job_inst.* and stampede.inv.end with a job_id
 * and a job_inst_id; darshan.* and transfer.*. */
static const char *const cover_names[RUNS_KINDS] = {"cover_run", "cover_inst", "cover_side"};

static void coverage_aggs(pano_json *aggs)
{
    pano_json *f[RUNS_KINDS], *sub, *b, *should;
    f[RUNS_KIND_RUN] = pano_json_object();
    b = pano_json_set_object(f[RUNS_KIND_RUN], "bool");
    pano_json_append(pano_json_set_array(b, "filter"), store_prefix("event", "kickstart.inv."));
    pano_json_append(pano_json_set_array(b, "must_not"), store_term("sample", "closing"));
    f[RUNS_KIND_INST] = pano_json_object();
    b = pano_json_set_object(f[RUNS_KIND_INST], "bool");
    pano_json *all = pano_json_set_array(b, "filter");
    pano_json *either = pano_json_object();
    should = pano_json_set_array(pano_json_set_object(either, "bool"), "should");
    pano_json_append(should, store_prefix("event", "stampede.job_inst."));
    pano_json_append(should, store_term("event", "stampede.inv.end"));
    pano_json_append(all, either);
    pano_json_append(all, store_exists("job_id"));
    pano_json_append(all, store_exists("job_inst_id"));
    f[RUNS_KIND_SIDE] = pano_json_object();
    should = pano_json_set_array(pano_json_set_object(f[RUNS_KIND_SIDE], "bool"), "should");
    pano_json_append(should, store_prefix("event", "darshan."));
    pano_json_append(should, store_prefix("event", "transfer."));
    for (int k = 0; k < RUNS_KINDS; k++) {
        pano_json_set(aggs, cover_names[k], store_filter_agg(f[k], &sub));
        pano_json_set(sub, "first", store_metric("min", "ts"));
    }
}

static void coverage_read(const pano_json *aggs, runs_coverage *c)
{
    for (int k = 0; k < RUNS_KINDS; k++) {
        c->events[k] = filter_count(aggs, cover_names[k]);
        c->first[k] = store_value(store_agg(aggs, cover_names[k]), "first", 0);
    }
}

static int ask_workflow(pano_query *q, pano_jobs *out, wf_counts *counts, char *err,
                        size_t errlen)
{
    pano_json *filter, *body = store_body(out->wf_uuid, &filter);
    pano_json *aggs = pano_json_set_object(body, "aggs");
    store_span_aggs(aggs);
    /* pano's publishers name it wf_label, monitord dax_label */
    const char *label_fields[] = {"wf_label", "dax_label"};
    for (size_t i = 0; i < 2; i++) {
        pano_json *t = pano_json_set_object(pano_json_set_object(aggs, label_fields[i]), "terms");
        pano_json_set_str(t, "field", label_fields[i]);
        pano_json_set_int(t, "size", 1);
    }
    pano_json *sub;
    pano_json_set(aggs, "monitor", store_filter_agg(store_prefix("event", "kickstart.inv."), &sub));
    pano_json_set(aggs, "stampede",
                  store_filter_agg(store_prefix("event", "stampede.job_inst."), &sub));
    static const char *const side[] = {"darshan.perf", NULL};
    pano_json *either = pano_json_object();
    pano_json *should = pano_json_set_array(pano_json_set_object(either, "bool"), "should");
    pano_json_append(should, store_terms("event", side));
    pano_json_append(should, store_prefix("event", "transfer."));
    pano_json_set(aggs, "side", store_filter_agg(either, &sub));
    if (q->use_summaries && !q->db) /* the embedded store counts its own */
        coverage_aggs(aggs);
    pano_json *end = store_filter_agg(store_term("event", "stampede.xwf.end"), &sub);
    pano_json *top = pano_json_set_object(pano_json_set_object(sub, "latest"), "top_hits");
    pano_json_set_int(top, "size", 1);
    pano_json_set(top, "sort", store_literal("[{\"ts\":\"desc\"}]"));
    pano_json_set(aggs, "xwf_end", end);

    pano_json *answer = store_search(q, out, STORE_EVENT_STREAMS, body, err, errlen);
    if (!answer)
        return -1;
    const pano_json *a = pano_json_get(answer, "aggregations");
    store_span_read(a, &out->first_event, &out->last_event);
    out->stored_from = store_value(a, "first", 0);
    out->stored_to = store_value(a, "last", 0);
    char buf[512] = "";
    for (size_t i = 0; i < 2 && !buf[0]; i++) {
        const pano_json *buckets = pano_json_get_array(store_agg(a, label_fields[i]), "buckets");
        if (pano_json_len(buckets) > 0)
            store_str(pano_json_at(buckets, 0), "key", buf, sizeof buf);
    }
    out->wf_label = pano_strdup(buf);
    counts->monitor_events = filter_count(a, "monitor");
    counts->stampede_events = filter_count(a, "stampede");
    counts->side_events = filter_count(a, "side");
    if (q->use_summaries && !q->db)
        coverage_read(a, &counts->cover);
    const pano_json *xwf = store_top_hit(store_agg(a, "xwf_end"), "latest");
    if (xwf) {
        out->wf_ended = true;
        out->wf_status = (int)store_num(xwf, "status", 0);
    }
    pano_json_free(answer);
    return 0;
}

/* ---- 2. pano-monitor's runs ----------------------------------------------------- */

/* Composite sources: the first n of (name, field) pairs. */
static pano_json *sources_of(const char *const pairs[][2], size_t n, bool missing_bucket)
{
    pano_json *sources = pano_json_array();
    for (size_t i = 0; i < n; i++) {
        pano_json *s = pano_json_object();
        pano_json *t = pano_json_set_object(pano_json_set_object(s, pairs[i][0]), "terms");
        pano_json_set_str(t, "field", pairs[i][1]);
        if (missing_bucket)
            pano_json_set_bool(t, "missing_bucket", true);
        pano_json_append(sources, s);
    }
    return sources;
}

/* What tells pano-monitor's runs apart (the first three), and their
 * context, the same in every event of a run (one monitor process sets it). */
static const char *const run_keys[][2] = {{"job", "dag_job_id"}, {"host", "hostname"},
                                          {"pid", "pid"},        {"xf", "xformation"},
                                          {"site", "site"},      {"exe", "exe"}};

static pano_json *run_sources(bool with_context)
{
    return sources_of(run_keys, with_context ? 6 : 3, true);
}

static pano_json *composite_agg(pano_json *aggs, const char *name, pano_json *sources,
                                pano_json **sub)
{
    pano_json *a = pano_json_set_object(aggs, name);
    pano_json *c = pano_json_set_object(a, "composite");
    pano_json_set_int(c, "size", PAGE);
    pano_json_set(c, "sources", sources);
    *sub = pano_json_set_object(a, "aggs");
    return a;
}

static void on_monitor_run(const pano_json *b, void *user)
{
    collect *c = user;
    const pano_json *key = pano_json_get(b, "key");
    run *r = runs_add(c);
    pano_job *j = &r->job;
    j->from_monitor = true;
    j->dag_job_id = key_str(key, "job");
    j->host = key_str(key, "host");
    j->transformation = key_str(key, "xf");
    j->site = key_str(key, "site");
    j->pid = (int64_t)store_num(key, "pid", -1);
    j->exe = key_str(key, "exe");
    j->start = store_value(b, "start", 0);
    j->last_seen = store_value(b, "last", j->start);
    j->interval = store_value(b, "interval", 0);
    const pano_json *end = store_agg(b, "end");
    if (filter_count(b, "end") > 0) {
        r->ended = true;
        j->end = j->last_seen; /* the end is the run's last event */
        j->exitcode = (int)store_value(end, "exitcode", -1);
        j->signal = (int)store_value(end, "signal", 0);
        j->state = j->signal > 0      ? PANO_JOB_KILLED
                   : j->exitcode == 0 ? PANO_JOB_SUCCEEDED
                                      : PANO_JOB_FAILED;
        j->duration = store_value(end, "duration", j->end - j->start);
        j->cpu_time = store_value(end, "cpu", 0);
        j->maxrss = (int64_t)store_value(end, "maxrss", -1);
        j->bytes_read = (int64_t)store_value(end, "rchar", -1);
        j->bytes_written = (int64_t)store_value(end, "wchar", -1);
        j->samples = (int64_t)store_value(end, "samples", 0);
    }
}

static int ask_monitor_runs(pano_query *q, const pano_jobs *jobs, collect *c, char *err,
                            size_t errlen)
{
    static const char *const fam[] = {"kickstart", NULL};
    static const char *const ends[] = {"kickstart.inv.start", "kickstart.inv.end", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json_append(filter, store_terms("event", ends));
    pano_json *sub, *end;
    composite_agg(pano_json_set_object(body, "aggs"), "runs", run_sources(true), &sub);
    pano_json_set(sub, "start", store_metric("min", "ts"));
    pano_json_set(sub, "last", store_metric("max", "ts"));
    pano_json_set(sub, "interval", store_metric("max", "interval"));
    pano_json_set(sub, "end", store_filter_agg(store_term("event", "kickstart.inv.end"), &end));
    const char *end_metrics[][2] = {{"exitcode", "exitcode"},
                                    {"signal", "signal"},   {"duration", "duration"},
                                    {"cpu", "remote_cpu_time"}, {"maxrss", "maxrss"},
                                    {"rchar", "final.rchar"}, {"wchar", "final.wchar"},
                                    {"samples", "samples"}};
    for (size_t i = 0; i < sizeof end_metrics / sizeof end_metrics[0]; i++)
        pano_json_set(end, end_metrics[i][0], store_metric("max", end_metrics[i][1]));
    int rc = store_composite_each(q, jobs, fam, body, "runs", on_monitor_run, c, err, errlen);
    return rc;
}

/* ---- 3. the latest sample of the runs without an end ------------------------------ */

static bool same_run(const pano_job *j, const pano_json *key)
{
    char job[512], host[512];
    store_str(key, "job", job, sizeof job);
    store_str(key, "host", host, sizeof host);
    return strcmp(j->dag_job_id, job) == 0 && strcmp(j->host, host) == 0 &&
           j->pid == (int64_t)store_num(key, "pid", -1);
}

static void on_open_run(const pano_json *b, void *user)
{
    collect *c = user;
    const pano_json *key = pano_json_get(b, "key");
    for (size_t i = 0; i < c->n; i++) {
        run *r = &c->runs[i];
        if (r->ended || r->inst_id >= 0 || !same_run(&r->job, key))
            continue;
        pano_job *j = &r->job;
        int64_t n = 0;
        pano_json_get_int(b, "doc_count", &n);
        j->samples = n;
        double last = store_value(b, "last", 0);
        if (last > j->last_seen)
            j->last_seen = last;
        if (j->interval <= 0)
            j->interval = store_value(b, "interval", 0);
        j->maxrss = (int64_t)store_value(b, "peak", -1);
        const pano_json *s = store_top_hit(b, "latest");
        if (s) {
            j->cpu_time = store_num(s, "utime", 0) + store_num(s, "stime", 0);
            j->bytes_read = (int64_t)store_num(s, "rchar", -1);
            j->bytes_written = (int64_t)store_num(s, "wchar", -1);
            j->rss = (int64_t)store_num(s, "rss", 0);
            j->vm = (int64_t)store_num(s, "vm", 0);
            j->procs = (int64_t)store_num(s, "procs", 0);
            j->threads = (int64_t)store_num(s, "threads", 0);
        }
        return;
    }
}

static int ask_open_runs(pano_query *q, const pano_jobs *jobs, collect *c, char *err, size_t errlen)
{
    size_t open = 0;
    for (size_t i = 0; i < c->n; i++)
        open += !c->runs[i].ended;
    if (open == 0)
        return 0;
    static const char *const fam[] = {"samples", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json_append(filter, store_term("event", "kickstart.inv.online"));
    if (open <= MAX_OPEN_RUNS) {
        pano_json *any = pano_json_object();
        pano_json *b = pano_json_set_object(any, "bool");
        pano_json *should = pano_json_set_array(b, "should");
        for (size_t i = 0; i < c->n; i++)
            if (!c->runs[i].ended)
                pano_json_append(should, store_run_filter(&c->runs[i].job));
        pano_json_set_int(b, "minimum_should_match", 1);
        pano_json_append(filter, any);
    }
    pano_json *sub;
    composite_agg(pano_json_set_object(body, "aggs"), "runs", run_sources(false), &sub);
    pano_json_set(sub, "last", store_metric("max", "ts"));
    pano_json_set(sub, "interval", store_metric("max", "interval"));
    pano_json_set(sub, "peak", store_metric("max", "rss_peak"));
    pano_json *top = pano_json_set_object(pano_json_set_object(sub, "latest"), "top_hits");
    pano_json_set_int(top, "size", 1);
    pano_json_set(top, "sort", store_literal("[{\"ts\":\"desc\"}]"));
    static const char *const fields[] = {"utime", "stime", "rchar", "wchar", "rss",
                                         "vm",    "procs", "threads", NULL};
    pano_json *src = pano_json_set_array(top, "_source");
    for (size_t i = 0; fields[i]; i++)
        pano_json_append(src, pano_json_string(fields[i]));
    int rc = store_composite_each(q, jobs, fam, body, "runs", on_open_run, c, err, errlen);
    return rc;
}

/* ---- 4. pegasus-monitord's job instances --------------------------------------------- */

pano_job_state runs_state_after(const char *event, double status)
{
    const char *e = event + strlen("stampede.job_inst.");
    if (strcmp(e, "main.start") == 0 || strncmp(e, "post.", 5) == 0 ||
        strcmp(e, "main.term") == 0)
        return status < 0 && strcmp(e, "main.term") == 0 ? PANO_JOB_QUEUED /* evicted */
                                                          : PANO_JOB_RUNNING;
    if (strcmp(e, "held.start") == 0)
        return PANO_JOB_HELD;
    if (strcmp(e, "abort.info") == 0 || (status < 0 && (strcmp(e, "submit.end") == 0 ||
                                                         strcmp(e, "pre.end") == 0)))
        return PANO_JOB_FAILED;
    return PANO_JOB_QUEUED;
}

static void on_instance(const pano_json *b, void *user)
{
    collect *c = user;
    const pano_json *key = pano_json_get(b, "key");
    run *r = runs_add(c);
    pano_job *j = &r->job;
    j->from_stampede = true;
    j->dag_job_id = key_str(key, "job");
    r->inst_id = (int64_t)store_num(key, "inst", 0);
    char buf[512];
    const pano_json *host = store_top_hit(store_agg(b, "host"), "doc");
    j->host = pano_strdup(store_str(host, "hostname", buf, sizeof buf));
    const pano_json *site = store_top_hit(store_agg(b, "site"), "doc");
    j->site = pano_strdup(store_str(site, "site", buf, sizeof buf));
    const pano_json *inv = store_agg(b, "inv");
    const pano_json *inv_doc = store_top_hit(inv, "doc");
    j->transformation = pano_strdup(store_str(inv_doc, "transformation", buf, sizeof buf));
    j->exe = pano_strdup(store_str(inv_doc, "executable", buf, sizeof buf));
    r->submitted = store_value(store_agg(b, "submit"), "ts", 0);
    double exec = store_value(store_agg(b, "exec"), "ts", 0);
    double inv_start = store_value(inv, "start", 0);
    j->start = exec > 0 ? exec : inv_start > 0 ? inv_start : r->submitted;
    j->last_seen = store_value(b, "last", j->start);
    if (filter_count(b, "inv") > 0) {
        j->cpu_time = store_value(inv, "cpu", 0);
        j->maxrss = (int64_t)store_value(inv, "maxrss", -1);
    }
    const pano_json *latest = store_top_hit(store_agg(b, "state"), "doc");
    const pano_json *main_end = store_top_hit(store_agg(b, "main_end"), "doc");
    const pano_json *post_end = store_top_hit(store_agg(b, "post_end"), "doc");
    const char *event = latest ? pano_json_get_str(latest, "event") : NULL;
    j->state = event ? runs_state_after(event, store_num(latest, "status", 0)) : PANO_JOB_QUEUED;
    /* The verdict is the POST script's when it ran, else the job's own. */
    const pano_json *verdict = post_end ? post_end : main_end;
    bool final_verdict = post_end || (event && strcmp(event, "stampede.job_inst.main.end") == 0);
    if (verdict && final_verdict && !isnan(store_num(verdict, "exitcode", NAN))) {
        r->ended = true;
        j->state = runs_decode_status(store_num(verdict, "exitcode", 0), &j->exitcode, &j->signal);
        j->end = store_num(verdict, "ts", j->last_seen);
    }
    double local = store_num(main_end, "local_dur", NAN);
    double inv_dur = store_value(inv, "dur", NAN);
    if (r->ended)
        j->duration = !isnan(local) ? local : !isnan(inv_dur) ? inv_dur : j->end - j->start;
}

static pano_json *top_hit_agg(const pano_json *filter, const char *const *fields, bool latest)
{
    pano_json *sub, *a = store_filter_agg(pano_json_clone(filter), &sub);
    pano_json *top = pano_json_set_object(pano_json_set_object(sub, "doc"), "top_hits");
    pano_json_set_int(top, "size", 1);
    pano_json_set(top, "sort",
                  store_literal(latest ? "[{\"ts\":\"desc\"},{\"js_id\":{\"order\":\"desc\","
                                   "\"unmapped_type\":\"long\"}}]"
                                 : "[{\"ts\":\"asc\"}]"));
    pano_json *src = pano_json_set_array(top, "_source");
    for (size_t i = 0; fields[i]; i++)
        pano_json_append(src, pano_json_string(fields[i]));
    return a;
}

static int ask_instances(pano_query *q, const pano_jobs *jobs, collect *c, char *err, size_t errlen)
{
    static const char *const fam[] = {"stampede", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json *any = pano_json_object();
    pano_json *b = pano_json_set_object(any, "bool");
    pano_json *should = pano_json_set_array(b, "should");
    pano_json_append(should, store_prefix("event", "stampede.job_inst."));
    pano_json_append(should, store_term("event", "stampede.inv.end"));
    pano_json_set_int(b, "minimum_should_match", 1);
    pano_json_append(filter, any);

    static const char *const inst_keys[][2] = {{"job", "job_id"}, {"inst", "job_inst_id"}};
    pano_json *sub;
    composite_agg(pano_json_set_object(body, "aggs"), "instances", sources_of(inst_keys, 2, false),
                  &sub);
    pano_json_set(sub, "last", store_metric("max", "ts"));

    pano_json *f = store_terms("event", pano_job_inst_state_events);
    static const char *const state_fields[] = {"event", "ts", "status", NULL};
    pano_json_set(sub, "state", top_hit_agg(f, state_fields, true));
    pano_json_free(f);
    static const char *const end_fields[] = {"exitcode", "local_dur", "ts", NULL};
    f = store_term("event", "stampede.job_inst.main.end");
    pano_json_set(sub, "main_end", top_hit_agg(f, end_fields, true));
    pano_json_free(f);
    static const char *const post_fields[] = {"exitcode", "ts", NULL};
    f = store_term("event", "stampede.job_inst.post.end");
    pano_json_set(sub, "post_end", top_hit_agg(f, post_fields, true));
    pano_json_free(f);
    static const char *const host_fields[] = {"hostname", NULL};
    f = store_term("event", "stampede.job_inst.host.info");
    pano_json_set(sub, "host", top_hit_agg(f, host_fields, false));
    pano_json_free(f);
    static const char *const site_fields[] = {"site", NULL};
    f = store_exists("site");
    pano_json_set(sub, "site", top_hit_agg(f, site_fields, false));
    pano_json_free(f);

    pano_json *inv_aggs, *ts_aggs;
    /* Invocations of the job itself (inv_id >= 0), not its PRE/POST scripts. */
    pano_json *inv_filter =
        store_literal("{\"bool\":{\"filter\":[{\"term\":{\"event\":\"stampede.inv.end\"}},"
                "{\"range\":{\"inv_id\":{\"gte\":0}}}]}}");
    static const char *const inv_fields[] = {"transformation", "executable", NULL};
    pano_json *inv = top_hit_agg(inv_filter, inv_fields, false);
    pano_json_free(inv_filter);
    inv_aggs = pano_json_get(inv, "aggs");
    pano_json_set(inv_aggs, "dur", store_metric("sum", "dur"));
    pano_json_set(inv_aggs, "cpu", store_metric("sum", "remote_cpu_time"));
    pano_json_set(inv_aggs, "maxrss", store_metric("max", "maxrss"));
    pano_json_set(inv_aggs, "start", store_metric("min", "start_time"));
    pano_json_set(sub, "inv", inv);
    pano_json_set(sub, "submit",
                  store_filter_agg(store_term("event", "stampede.job_inst.submit.start"), &ts_aggs));
    pano_json_set(ts_aggs, "ts", store_metric("min", "ts"));
    pano_json_set(sub, "exec",
                  store_filter_agg(store_term("event", "stampede.job_inst.main.start"), &ts_aggs));
    pano_json_set(ts_aggs, "ts", store_metric("max", "ts"));

    int rc = store_composite_each(q, jobs, fam, body, "instances", on_instance, c, err, errlen);
    return rc;
}

/* ---- 5. Darshan and transfer events per job ---------------------------------------- */

void runs_side(collect *c, const char *job, const char *host, int64_t darshan, int64_t transfer)
{
    size_t lo = 0, hi = c->n; /* the job's first run */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(c->runs[mid].job.dag_job_id, job) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    run *best = NULL;
    for (size_t i = lo; i < c->n && strcmp(c->runs[i].job.dag_job_id, job) == 0; i++) {
        run *r = &c->runs[i];
        bool here = strcmp(r->job.host, host) == 0;
        bool best_here = best && strcmp(best->job.host, host) == 0;
        if (!best || (here && !best_here) || (here == best_here && r->job.start > best->job.start))
            best = r;
    }
    if (!best)
        return;
    best->job.darshan_events += darshan;
    best->job.transfer_events += transfer;
}

static void on_side(const pano_json *b, void *user)
{
    const pano_json *key = pano_json_get(b, "key");
    char job[512], host[512];
    store_str(key, "job", job, sizeof job);
    store_str(key, "host", host, sizeof host);
    const pano_json *buckets = pano_json_get(store_agg(b, "kinds"), "buckets");
    runs_side(user, job, host, filter_count(buckets, "darshan"), filter_count(buckets, "transfer"));
}

static int ask_side_events(pano_query *q, const pano_jobs *jobs, collect *c, char *err, size_t errlen)
{
    static const char *const fam[] = {"darshan", "transfer", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json *sub;
    composite_agg(pano_json_set_object(body, "aggs"), "jobs", sources_of(run_keys, 2, true), &sub);
    pano_json *kinds = pano_json_set_object(pano_json_set_object(sub, "kinds"), "filters");
    pano_json *fs = pano_json_set_object(kinds, "filters");
    pano_json_set(fs, "darshan", store_prefix("event", "darshan."));
    pano_json_set(fs, "transfer", store_prefix("event", "transfer."));
    runs_sort(c);
    return store_composite_each(q, jobs, fam, body, "jobs", on_side, c, err, errlen);
}

/* ---- making rows ------------------------------------------------------------------ */

/* The order of runs.h (runs_sort). */
static int in_run_order(const void *a, const void *b)
{
    const run *x = a, *y = b;
    const pano_job *j = &x->job, *k = &y->job;
    int c = strcmp(j->dag_job_id, k->dag_job_id);
    if (c)
        return c;
    if (j->from_monitor != k->from_monitor)
        return j->from_monitor ? -1 : 1; /* monitor runs first, then instances */
    double tx = x->inst_id >= 0 ? (double)x->inst_id : j->start;
    double ty = y->inst_id >= 0 ? (double)y->inst_id : k->start;
    if (tx < ty || tx > ty)
        return tx < ty ? -1 : 1;
    if ((c = strcmp(j->host, k->host)))
        return c;
    if (j->pid != k->pid)
        return j->pid < k->pid ? -1 : 1;
    if ((c = strcmp(j->transformation, k->transformation)) || (c = strcmp(j->site, k->site)))
        return c;
    return strcmp(j->exe, k->exe);
}

void runs_sort(collect *c)
{
    for (size_t i = 1; i < c->n; i++)
        if (in_run_order(&c->runs[i - 1], &c->runs[i]) > 0) {
            pano_sort(c->runs, c->n, sizeof *c->runs, in_run_order);
            return;
        }
}

static int by_start_then_id(const void *a, const void *b)
{
    const pano_job *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return strcmp(x->id, y->id);
}

static void replace(char **field, char *value)
{
    free(*field);
    *field = value;
}

/* The k-th monitor run of a DAG job and its k-th stampede instance are one
 * attempt: the run gives what it measured, the instance the site and, when
 * it has one, the Pegasus verdict (the POST script's). */
static void merge(run *m, run *s)
{
    pano_job *j = &m->job, *k = &s->job;
    j->from_stampede = true;
    if (!*j->site && *k->site)
        replace(&j->site, pano_strdup(k->site));
    if (!*j->transformation && *k->transformation)
        replace(&j->transformation, pano_strdup(k->transformation));
    if (s->ended) {
        m->ended = true;
        j->state = k->state;
        j->exitcode = k->exitcode;
        j->signal = k->signal;
        if (j->end <= 0)
            j->end = k->end;
    }
    if (k->last_seen > j->last_seen)
        j->last_seen = k->last_seen;
}

void runs_free_job(pano_job *j)
{
    free(j->id);
    free(j->dag_job_id);
    free(j->transformation);
    free(j->site);
    free(j->host);
    free(j->exe);
}

/* A run without an end: running, or lost when pano-monitor's samples
 * stopped coming (a job seen only through monitord has no samples to miss). */
static void settle_open_run(pano_job *j, double now, double ingest_delay)
{
    if (j->from_monitor) {
        double every = j->interval > 0 ? j->interval : 1;
        j->state = now - j->last_seen > LOST_AFTER_INTERVALS * every + ingest_delay
                       ? PANO_JOB_LOST
                       : PANO_JOB_RUNNING;
    }
    j->end = 0;
    if (j->state == PANO_JOB_RUNNING && j->start > 0)
        j->duration = now - j->start;
    else if (j->state == PANO_JOB_LOST)
        j->duration = j->last_seen - j->start;
    else
        j->duration = 0;
}

static void make_rows(collect *c, pano_jobs *out, double ingest_delay)
{
    runs_sort(c);
    out->jobs = pano_calloc(c->n ? c->n : 1, sizeof *out->jobs);
    size_t i = 0;
    while (i < c->n) {
        /* One DAG job (or, without dag_job_id, each run alone). */
        size_t end = i + 1;
        if (*c->runs[i].job.dag_job_id)
            while (end < c->n && strcmp(c->runs[end].job.dag_job_id, c->runs[i].job.dag_job_id) == 0)
                end++;
        size_t nm = 0;
        while (i + nm < end && c->runs[i + nm].job.from_monitor)
            nm++;
        size_t ns = end - i - nm;
        size_t attempts = nm > ns ? nm : ns;
        for (size_t k = 0; k < attempts; k++) {
            run *m = k < nm ? &c->runs[i + k] : NULL;
            run *s = k < ns ? &c->runs[i + nm + k] : NULL;
            run *r = m ? m : s;
            if (m && s) {
                merge(m, s);
                runs_free_job(&s->job);
            }
            pano_job *j = &r->job;
            j->attempt = (int)k + 1;
            if (!*j->transformation && *j->exe)
                replace(&j->transformation, pano_strdup(basename_of(j->exe)));
            if (*j->dag_job_id)
                j->id = j->attempt > 1 ? pano_asprintf("%s#%d", j->dag_job_id, j->attempt)
                                       : pano_strdup(j->dag_job_id);
            else
                j->id = pano_asprintf("%s@%s:%lld", *j->exe ? basename_of(j->exe) : "task",
                                      j->host, (long long)j->pid);
            if (!r->ended)
                settle_open_run(j, out->now, ingest_delay);
            out->jobs[out->n++] = *j;
        }
        i = end;
    }
    pano_sort(out->jobs, out->n, sizeof *out->jobs, by_start_then_id);
}

int runs_query_jobs(pano_query *q, const char *wf_uuid, double now, runs_scope scope,
                    pano_jobs *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->now = now;
    if (!pano_wf_uuid_normalize(wf_uuid, out->wf_uuid)) {
        snprintf(err, errlen, "'%.80s' is not a workflow UUID (8-4-4-4-12 hexadecimal digits)",
                 wf_uuid);
        return -1;
    }
    wf_counts counts = {0};
    if (ask_workflow(q, out, &counts, err, errlen) < 0)
        return -1;
    collect c = {0};
    int rc = 0;
    /* From the summaries when they cover the workflow; else from its events. */
    const runs_coverage *cover = &counts.cover;
    if (q->use_summaries &&
        (q->db || cover->events[RUNS_KIND_RUN] + cover->events[RUNS_KIND_INST] +
                      cover->events[RUNS_KIND_SIDE]))
        rc = runs_from_summaries(q, out, cover, counts.side_events > 0, scope, &c, err, errlen);
    out->partial = rc == 2;
    if (rc == 0 && counts.monitor_events > 0)
        rc = ask_monitor_runs(q, out, &c, err, errlen);
    if (rc == 0 && counts.monitor_events > 0)
        rc = ask_open_runs(q, out, &c, err, errlen);
    if (rc == 0 && counts.stampede_events > 0)
        rc = ask_instances(q, out, &c, err, errlen);
    if (rc == 0 && counts.side_events > 0 && c.n > 0)
        rc = ask_side_events(q, out, &c, err, errlen);
    if (rc > 0)
        rc = 0;
    if (rc < 0) {
        for (size_t i = 0; i < c.n; i++)
            runs_free_job(&c.runs[i].job);
        free(c.runs);
        free(out->wf_label);
        out->wf_label = NULL;
        return -1;
    }
    make_rows(&c, out, q->ingest_delay);
    free(c.runs);
    return 0;
}

int pano_query_jobs(pano_query *q, const char *wf_uuid, double now, pano_jobs *out, char *err,
                    size_t errlen)
{
    return runs_query_jobs(q, wf_uuid, now, RUNS_ALL, out, err, errlen);
}

int pano_query_jobs_in_state(pano_query *q, const char *wf_uuid, double now,
                             pano_job_state state, pano_jobs *out, char *err, size_t errlen)
{
    runs_scope scope = state == PANO_JOB_SUCCEEDED                               ? RUNS_ALL
                       : state == PANO_JOB_FAILED || state == PANO_JOB_KILLED ? RUNS_OPEN_OR_FAILED
                                                                               : RUNS_OPEN;
    return runs_query_jobs(q, wf_uuid, now, scope, out, err, errlen);
}

void pano_jobs_free(pano_jobs *jobs)
{
    for (size_t i = 0; i < jobs->n; i++)
        runs_free_job(&jobs->jobs[i]);
    free(jobs->jobs);
    free(jobs->wf_label);
    memset(jobs, 0, sizeof *jobs);
}

const pano_job *pano_jobs_find(const pano_jobs *jobs, const char *id)
{
    /* "dag_job_id#N": attempt N; "dag_job_id": its latest attempt; else an
     * id as shown (exe@host:pid). */
    const char *hash = strrchr(id, '#');
    char *end = NULL;
    long attempt = hash ? strtol(hash + 1, &end, 10) : 0;
    size_t len = hash && end != hash + 1 && *end == '\0' ? (size_t)(hash - id) : strlen(id);
    const pano_job *best = NULL;
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        bool same_dag = *j->dag_job_id && strlen(j->dag_job_id) == len &&
                        strncmp(j->dag_job_id, id, len) == 0;
        if (same_dag && len < strlen(id)) {
            if (j->attempt == attempt)
                return j;
        } else if (same_dag) {
            if (!best || j->attempt > best->attempt)
                best = j;
        } else if (!*j->dag_job_id && strcmp(j->id, id) == 0)
            return j;
    }
    return best;
}
