#include "api.h"

#include "event.h"
#include "log.h"
#include "mem.h"
#include "query.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one query client per thread ---------------------------------------------- */

static pthread_key_t client_key;
static pthread_once_t client_once = PTHREAD_ONCE_INIT;

static void free_client(void *q) { pano_query_free(q); }
static void make_key(void) { pthread_key_create(&client_key, free_client); }

static pano_query *client(const pano_config *cfg, char *err, size_t errlen)
{
    pthread_once(&client_once, make_key);
    pano_query *q = pthread_getspecific(client_key);
    if (!q && (q = pano_query_new(cfg, err, errlen)) != NULL)
        pthread_setspecific(client_key, q);
    return q;
}

/* ---- replies --------------------------------------------------------------------- */

static void reply_json(pano_http_reply *r, int status, pano_json *doc)
{
    r->status = status;
    r->content_type = "application/json";
    pano_json_serialize_to(&r->body, doc);
    pano_json_free(doc);
}

__attribute__((format(printf, 3, 4))) static void reply_error(pano_http_reply *r, int status,
                                                              const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pano_json *doc = pano_json_object();
    pano_json_set_str(doc, "error", msg);
    reply_json(r, status, doc);
}

double explorer_auto_step(double span, double interval)
{
    static const double nice[] = {0.1,  0.2,  0.5,  1,     2,     5,     10,    15,   30,
                                  60,   120,  300,  600,   900,   1800,  3600,  7200, 21600,
                                  43200, 86400};
    /* not finer than the samples come, or the gaps between them read as zeros */
    double want = span / 240 > interval ? span / 240 : interval;
    for (size_t i = 0; i < sizeof nice / sizeof nice[0]; i++)
        if (nice[i] >= want)
            return nice[i];
    return ceil(want / 86400) * 86400;
}

/* ---- endpoints --------------------------------------------------------------------- */

static void workflows(pano_query *q, const pano_http_request *req, pano_http_reply *r)
{
    const char *since_arg = pano_http_arg(req, "since"), *limit_arg = pano_http_arg(req, "limit");
    double since = 30 * 86400.0;
    long limit = 50;
    if (since_arg) {
        since = pano_config_parse_duration(since_arg);
        if (!(since > 0)) {
            reply_error(r, 400, "since: '%.40s' is not a duration (30d, 12h, 90m, 3600)", since_arg);
            return;
        }
    }
    if (limit_arg) {
        char *end;
        limit = strtol(limit_arg, &end, 10);
        if (end == limit_arg || *end || limit < 1 || limit > 1000) {
            reply_error(r, 400, "limit: 1 to 1000");
            return;
        }
    }
    pano_workflow *w;
    size_t n;
    char err[1024];
    double now = pano_now();
    if (pano_query_workflows(q, now - since, (size_t)limit, now, &w, &n, err, sizeof err) < 0) {
        reply_error(r, 502, "%s", err);
        return;
    }
    reply_json(r, 200, pano_workflows_to_json(w, n));
    pano_workflows_free(w, n);
}

/* The workflow's jobs, or an error reply (false). */
static bool load(pano_query *q, const char *uuid, pano_jobs *jobs, pano_http_reply *r)
{
    char err[1024];
    if (pano_query_jobs(q, uuid, pano_now(), jobs, err, sizeof err) < 0) {
        reply_error(r, 502, "%s", err);
        return false;
    }
    if (jobs->first_event <= 0) {
        reply_error(r, 404, "no events of workflow %s", jobs->wf_uuid);
        pano_jobs_free(jobs);
        return false;
    }
    return true;
}

/* The step a chart of the workflow (job NULL) or of one job is drawn at. */
static double auto_step(const pano_jobs *jobs, const pano_job *job)
{
    double from, to, interval = job ? job->interval : 0;
    for (size_t i = 0; !job && i < jobs->n; i++)
        if (jobs->jobs[i].interval > interval)
            interval = jobs->jobs[i].interval;
    return pano_jobs_span(jobs, job, &from, &to) ? explorer_auto_step(to - from, interval) : 1;
}

/* Reply with the error of a series: 400 for what the request asked wrong. */
static void reply_series_error(pano_http_reply *r, const char *err)
{
    reply_error(r, strstr(err, "unknown metric") || strstr(err, "points") ? 400 : 502, "%s", err);
}

/* ?series=cpu,rss,...: those metrics over the workflow's (or the job's)
 * time at the automatic step, as "series" in doc, read in one search, so
 * that a page needs one request and the jobs are read once. False (with the
 * error replied) when the list is bad or the store failed. */
#define MAX_SERIES 8
static bool add_series(pano_query *q, const pano_http_request *req, const pano_jobs *jobs,
                       const pano_job *job, pano_json *doc, pano_http_reply *r)
{
    const char *arg = pano_http_arg(req, "series");
    if (!arg)
        return true;
    char list[256], *save = NULL;
    const char *names[MAX_SERIES];
    size_t n = 0;
    if (strlen(arg) >= sizeof list) {
        reply_error(r, 400, "series: too long a list");
        return false;
    }
    strcpy(list, arg);
    for (char *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        if (n == MAX_SERIES) {
            reply_error(r, 400, "series: at most %d metrics", MAX_SERIES);
            return false;
        }
        names[n++] = m;
    }
    pano_series s[MAX_SERIES];
    char err[1024];
    if (pano_query_series_many(q, jobs, job, names, n, auto_step(jobs, job), s, err,
                               sizeof err) < 0) {
        reply_series_error(r, err);
        for (size_t i = 0; i < n; i++)
            pano_series_free(&s[i]);
        return false;
    }
    pano_json *out = pano_json_set_object(doc, "series");
    for (size_t i = 0; i < n; i++) {
        pano_json_set(out, names[i], pano_series_to_json(&s[i]));
        pano_series_free(&s[i]);
    }
    return true;
}

static void workflow(pano_query *q, const char *uuid, const pano_http_request *req,
                     pano_http_reply *r)
{
    pano_jobs jobs;
    if (!load(q, uuid, &jobs, r))
        return;
    char err[1024];
    pano_pegasus pegasus;
    pano_json *io = NULL;
    if (pano_query_pegasus(q, uuid, &pegasus, err, sizeof err) < 0 ||
        !(io = pano_query_io(q, &jobs, NULL, err, sizeof err))) {
        reply_error(r, 502, "%s", err);
        pano_jobs_free(&jobs);
        return;
    }
    pano_stats s;
    pano_stats_compute(&jobs, &s);
    pano_anomaly *a;
    size_t na = pano_anomalies_find(&jobs, &a);
    pano_json *doc = pano_jobs_to_json(&jobs);
    pano_json_set(doc, "stats", pano_stats_to_json(&jobs, &s, &pegasus));
    pano_json_set(doc, "anomalies", pano_anomalies_to_json(a, na));
    pano_json_set(doc, "io", io);
    if (add_series(q, req, &jobs, NULL, doc, r))
        reply_json(r, 200, doc);
    else
        pano_json_free(doc);
    free(a);
    pano_stats_free(&s);
    pano_pegasus_free(&pegasus);
    pano_jobs_free(&jobs);
}

static void series(pano_query *q, const char *uuid, const pano_http_request *req,
                   pano_http_reply *r)
{
    const char *metric = pano_http_arg(req, "metric"), *job_id = pano_http_arg(req, "job");
    const char *step_arg = pano_http_arg(req, "step");
    if (!metric) {
        reply_error(r, 400, "series needs ?metric= (GET /api/metrics lists them)");
        return;
    }
    if (job_id && !pano_query_job_name_valid(job_id)) {
        reply_error(r, 400, "'%.80s' is not a job name", job_id);
        return;
    }
    pano_jobs jobs;
    if (!load(q, uuid, &jobs, r))
        return;
    const pano_job *job = job_id ? pano_jobs_find(&jobs, job_id) : NULL;
    if (job_id && !job) {
        reply_error(r, 404, "workflow %s has no job %s", jobs.wf_uuid, job_id);
        pano_jobs_free(&jobs);
        return;
    }
    double step;
    if (step_arg) {
        char *end;
        step = strtod(step_arg, &end);
        if (end == step_arg || !(step > 0) || (*end && strcmp(end, "s") != 0)) {
            reply_error(r, 400, "step: '%.40s' is not a number of seconds", step_arg);
            pano_jobs_free(&jobs);
            return;
        }
    } else
        step = auto_step(&jobs, job);
    pano_series s;
    char err[1024];
    if (pano_query_series(q, &jobs, job, metric, step, &s, err, sizeof err) < 0)
        reply_series_error(r, err);
    else {
        reply_json(r, 200, pano_series_to_json(&s));
        pano_series_free(&s);
    }
    pano_jobs_free(&jobs);
}

static void job(pano_query *q, const char *uuid, const char *id, const pano_http_request *req,
                pano_http_reply *r)
{
    if (!pano_query_job_name_valid(id)) {
        reply_error(r, 400, "'%.80s' is not a job name", id);
        return;
    }
    pano_jobs jobs;
    if (!load(q, uuid, &jobs, r))
        return;
    const pano_job *j = pano_jobs_find(&jobs, id);
    if (!j) {
        reply_error(r, 404, "workflow %s has no job %s", jobs.wf_uuid, id);
        pano_jobs_free(&jobs);
        return;
    }
    char err[1024];
    pano_json *start = pano_query_job_start(q, &jobs, j, err, sizeof err);
    pano_json *events = start ? pano_query_job_events(q, &jobs, j, 200, err, sizeof err) : NULL;
    pano_json *io = events ? pano_query_io(q, &jobs, j, err, sizeof err) : NULL;
    if (!io) {
        reply_error(r, 502, "%s", err);
        pano_json_free(start);
        pano_json_free(events);
    } else {
        pano_json *doc = pano_job_to_json(j);
        pano_json_set_str(doc, "wf_uuid", jobs.wf_uuid);
        pano_json_set_str(doc, "wf_label", jobs.wf_label);
        pano_json_set(doc, "start_event", start);
        pano_json_set(doc, "events", events);
        pano_json_set(doc, "io", io);
        if (add_series(q, req, &jobs, j, doc, r))
            reply_json(r, 200, doc);
        else
            pano_json_free(doc);
    }
    pano_jobs_free(&jobs);
}

static void metrics(pano_http_reply *r)
{
    pano_json *list = pano_json_array();
    for (const pano_metric_info *m = pano_series_metrics; m->name; m++) {
        pano_json *o = pano_json_object();
        pano_json_set_str(o, "metric", m->name);
        pano_json_set_str(o, "unit", m->unit);
        pano_json_set_str(o, "kind", m->rate ? "rate" : "gauge");
        pano_json_set_str(o, "help", m->help);
        pano_json_append(list, o);
    }
    reply_json(r, 200, list);
}

/* Why a request in progress is abandoned: the server stops, or nobody
 * waits for the answer any more. */
typedef struct {
    const pano_http_request *req;
    bool (*stopping)(void);
    const char *why; /* set once it is abandoned */
} abandon;

static bool should_abandon(void *user)
{
    abandon *a = user;
    if (!a->why && a->stopping && a->stopping())
        a->why = "the explorer is stopping";
    if (!a->why && pano_http_client_gone(a->req))
        a->why = "the client went away";
    return a->why != NULL;
}

static void answer(pano_query *q, const pano_http_request *req, pano_http_reply *r)
{
    const char *path = pano_http_path(req) + strlen("/api");
    if (strcmp(path, "/workflows") == 0) {
        workflows(q, req, r);
        return;
    }
    /* /workflows/UUID[/series | /jobs/JOB] */
    const char *prefix = "/workflows/";
    if (strncmp(path, prefix, strlen(prefix)) != 0) {
        reply_error(r, 404, "no such API: %.100s", pano_http_path(req));
        return;
    }
    const char *rest = path + strlen(prefix);
    size_t len = strcspn(rest, "/");
    char given[64], uuid[PANO_WF_UUID_LEN + 1];
    snprintf(given, sizeof given, "%.*s", (int)(len < 63 ? len : 63), rest);
    if (len >= sizeof given || !pano_wf_uuid_normalize(given, uuid)) {
        reply_error(r, 400, "'%.40s' is not a workflow UUID", given);
        return;
    }
    rest += len;
    if (!*rest)
        workflow(q, uuid, req, r);
    else if (strcmp(rest, "/series") == 0)
        series(q, uuid, req, r);
    else if (strncmp(rest, "/jobs/", 6) == 0 && rest[6])
        job(q, uuid, rest + 6, req, r);
    else
        reply_error(r, 404, "no such API: %.100s", pano_http_path(req));
}

void explorer_api(const pano_config *cfg, bool (*stopping)(void), const pano_http_request *req,
                  pano_http_reply *r)
{
    if (strcmp(pano_http_path(req), "/api/metrics") == 0) {
        metrics(r);
        return;
    }
    char err[1024];
    pano_query *q = client(cfg, err, sizeof err);
    if (!q) {
        reply_error(r, 500, "%s", err);
        return;
    }
    abandon a = {.req = req, .stopping = stopping};
    pano_query_set_abort(q, should_abandon, &a);
    answer(q, req, r);
    pano_query_set_abort(q, NULL, NULL);
    if (a.why) {
        pano_info("abandoned %.200s: %s", pano_http_path(req), a.why);
        pano_buf_clear(&r->body);
        reply_error(r, 503, "abandoned: %s", a.why);
    }
}
