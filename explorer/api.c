#include "api.h"

#include "event.h"
#include "log.h"
#include "mem.h"
#include "query.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
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

/* ---- one request ------------------------------------------------------------------- */

/* What every endpoint works with. */
typedef struct {
    pano_query *q;
    jobs_cache *cache;
    const pano_http_request *req;
    pano_http_reply *r;
} call;

/* A whole number argument between least and most, def when absent; false
 * (with the error replied) when it is something else. */
static bool count_arg(call *c, const char *name, long def, long least, long most, long *out)
{
    const char *arg = pano_http_arg(c->req, name);
    *out = def;
    if (!arg)
        return true;
    char *end;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || v < least || v > most) {
        reply_error(c->r, 400, "%s: a whole number from %ld to %ld", name, least, most);
        return false;
    }
    *out = v;
    return true;
}

/* A time argument, epoch seconds: *given false when absent. */
static bool time_arg(call *c, const char *name, double *out, bool *given)
{
    const char *arg = pano_http_arg(c->req, name);
    *given = arg != NULL;
    if (!arg)
        return true;
    char *end;
    *out = strtod(arg, &end);
    if (end == arg || *end || !isfinite(*out) || *out < 0) {
        reply_error(c->r, 400, "%s: '%.40s' is not a time (epoch seconds)", name, arg);
        return false;
    }
    return true;
}

/* The workflow's events as they are now; an error reply (false) when the
 * store fails or it has none. */
static bool changes_of(call *c, const char *uuid, pano_changes *now)
{
    char err[1024];
    if (pano_query_changes(c->q, uuid, now, err, sizeof err) < 0) {
        reply_error(c->r, 502, "%s", err);
        return false;
    }
    if (now->events == 0) {
        reply_error(c->r, 404, "no events of workflow %s", uuid);
        return false;
    }
    return true;
}

/* The workflow's rows as of its events now (kept ones when they still
 * hold), and the cursor of an answer made from them; NULL with an error
 * replied. Release them with jobs_cache_release. */
static const pano_jobs *rows_at(call *c, const char *uuid, const pano_changes *now,
                                explorer_cursor *cursor)
{
    double t = pano_now();
    const pano_jobs *kept = jobs_cache_get(c->cache, uuid, now, t, cursor);
    if (kept)
        return kept;
    pano_jobs jobs;
    char err[1024];
    if (pano_query_jobs(c->q, uuid, t, &jobs, err, sizeof err) < 0) {
        reply_error(c->r, 502, "%s", err);
        return NULL;
    }
    if (jobs.first_event <= 0) { /* removed since */
        reply_error(c->r, 404, "no events of workflow %s", jobs.wf_uuid);
        pano_jobs_free(&jobs);
        return NULL;
    }
    *cursor = (explorer_cursor){.at = *now, .until = explorer_cursor_until(&jobs)};
    return jobs_cache_put(c->cache, &jobs, cursor, t);
}

/* rows_at() of the workflow's events now. */
static const pano_jobs *rows(call *c, const char *uuid, explorer_cursor *cursor)
{
    pano_changes now;
    return changes_of(c, uuid, &now) ? rows_at(c, uuid, &now, cursor) : NULL;
}

static void set_cursor(pano_json *doc, const explorer_cursor *cursor)
{
    char text[64];
    explorer_cursor_format(cursor, text, sizeof text);
    pano_json_set_str(doc, "cursor", text);
}

/* ---- endpoints --------------------------------------------------------------------- */

static void workflows(call *c)
{
    const char *since_arg = pano_http_arg(c->req, "since");
    double since = 30 * 86400.0;
    long limit;
    if (since_arg) {
        since = pano_config_parse_duration(since_arg);
        if (!(since > 0)) {
            reply_error(c->r, 400, "since: '%.40s' is not a duration (30d, 12h, 90m, 3600)",
                        since_arg);
            return;
        }
    }
    if (!count_arg(c, "limit", 50, 1, 1000, &limit))
        return;
    pano_workflow *w;
    size_t n;
    char err[1024];
    double now = pano_now();
    if (pano_query_workflows(c->q, now - since, (size_t)limit, now, &w, &n, err, sizeof err) < 0) {
        reply_error(c->r, 502, "%s", err);
        return;
    }
    reply_json(c->r, 200, pano_workflows_to_json(w, n));
    pano_workflows_free(w, n);
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
static bool add_series(call *c, const pano_jobs *jobs, const pano_job *job, pano_json *doc)
{
    const char *arg = pano_http_arg(c->req, "series");
    if (!arg)
        return true;
    char list[256], *save = NULL;
    const char *names[MAX_SERIES];
    size_t n = 0;
    if (strlen(arg) >= sizeof list) {
        reply_error(c->r, 400, "series: too long a list");
        return false;
    }
    strcpy(list, arg);
    for (char *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        if (n == MAX_SERIES) {
            reply_error(c->r, 400, "series: at most %d metrics", MAX_SERIES);
            return false;
        }
        names[n++] = m;
    }
    pano_series s[MAX_SERIES];
    char err[1024];
    if (pano_query_series_many(c->q, jobs, job, names, n, auto_step(jobs, job), s, err,
                               sizeof err) < 0) {
        reply_series_error(c->r, err);
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

/* Bins of a timeline: as many as the screen has pixels for it. */
#define DEFAULT_BINS 600
#define MAX_BINS 4000

/* The anomalies of each kind listed in a workflow's answer, in their order
 * (every one is counted). */
#define ANOMALIES_PER_KIND 100

static void add_anomalies(pano_json *doc, const pano_jobs *jobs)
{
    pano_anomaly *all;
    size_t n = pano_anomalies_find(jobs, &all), kept = 0;
    size_t count[PANO_ANOMALY_FAILED + 1] = {0};
    for (size_t i = 0; i < n; i++)
        if (count[all[i].kind]++ < ANOMALIES_PER_KIND)
            all[kept++] = all[i];
    pano_json_set(doc, "anomalies", pano_anomalies_to_json(all, kept));
    pano_json *counts = pano_json_set_object(doc, "anomaly_counts");
    for (int k = 0; k <= PANO_ANOMALY_FAILED; k++)
        pano_json_set_int(counts, pano_anomaly_kind_name((pano_anomaly_kind)k), (int64_t)count[k]);
    free(all);
}

static void add_rows(pano_json *doc, const pano_jobs *jobs, const size_t *which, size_t n)
{
    pano_json *list = pano_json_set_array(doc, "jobs");
    for (size_t i = 0; i < n; i++)
        pano_json_append(list, pano_job_to_json(&jobs->jobs[which ? which[i] : i]));
}

static void workflow(call *c, const char *uuid)
{
    const char *since = pano_http_arg(c->req, "since");
    explorer_cursor asked, cursor;
    long bins;
    if (since && !explorer_cursor_parse(since, &asked)) {
        reply_error(c->r, 400, "since: '%.40s' is not a cursor this API gave", since);
        return;
    }
    if (!count_arg(c, "bins", DEFAULT_BINS, 1, MAX_BINS, &bins))
        return;
    pano_changes now;
    if (!changes_of(c, uuid, &now))
        return;
    double t = pano_now();
    if (since && explorer_cursor_holds(&asked, &now, t)) {
        pano_json *doc = pano_json_object();
        pano_json_set_bool(doc, "unchanged", true);
        pano_json_set_str(doc, "cursor", since);
        pano_json_set_double(doc, "now", t, 3);
        reply_json(c->r, 200, doc);
        return;
    }
    const pano_jobs *jobs = rows_at(c, uuid, &now, &cursor);
    if (!jobs)
        return;
    char err[1024];
    pano_pegasus pegasus;
    pano_json *io = NULL;
    if (pano_query_pegasus(c->q, uuid, &pegasus, err, sizeof err) < 0 ||
        !(io = pano_query_io(c->q, jobs, NULL, err, sizeof err))) {
        reply_error(c->r, 502, "%s", err);
        pano_pegasus_free(&pegasus);
        jobs_cache_release(c->cache, jobs);
        return;
    }
    pano_stats s;
    pano_stats_compute(jobs, &s);
    pano_overview o;
    pano_jobs_overview(jobs, 0, 0, (size_t)bins, &o);
    pano_json *doc = pano_workflow_to_json(jobs);
    if (jobs->n <= EXPLORER_BAR_JOBS)
        add_rows(doc, jobs, NULL, jobs->n);
    pano_json_set(doc, "stats", pano_stats_to_json(jobs, &s, &pegasus));
    add_anomalies(doc, jobs);
    pano_json_set(doc, "io", io);
    pano_json_set(doc, "overview", pano_overview_to_json(&o));
    set_cursor(doc, &cursor);
    if (add_series(c, jobs, NULL, doc))
        reply_json(c->r, 200, doc);
    else
        pano_json_free(doc);
    pano_overview_free(&o);
    pano_stats_free(&s);
    pano_pegasus_free(&pegasus);
    jobs_cache_release(c->cache, jobs);
}

/* ?state=failed,killed: the states' bits; false (replied) for a name that is none. */
static bool states_arg(call *c, unsigned *states)
{
    const char *arg = pano_http_arg(c->req, "state");
    *states = 0;
    if (!arg)
        return true;
    char list[128], *save = NULL;
    if (strlen(arg) >= sizeof list) {
        reply_error(c->r, 400, "state: too long a list");
        return false;
    }
    strcpy(list, arg);
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        pano_job_state s;
        if (!pano_job_state_parse(name, &s)) {
            reply_error(c->r, 400, "state: '%.40s' is not a state (queued, held, running, lost, "
                        "succeeded, failed, killed)", name);
            return false;
        }
        *states |= 1u << s;
    }
    return true;
}

#define MAX_PAGE 10000
#define MAX_WORDS 200

static void jobs_page(call *c, const char *uuid)
{
    long offset, limit;
    pano_job_filter f = {.text = pano_http_arg(c->req, "q")};
    const char *sort = pano_http_arg(c->req, "sort");
    if (!count_arg(c, "offset", 0, 0, 1000000000, &offset) ||
        !count_arg(c, "limit", 500, 1, MAX_PAGE, &limit) || !states_arg(c, &f.states))
        return;
    if (f.text && strlen(f.text) > MAX_WORDS) {
        reply_error(c->r, 400, "q: at most %d characters", MAX_WORDS);
        return;
    }
    if (sort && !pano_job_sort_parse(sort, &f.sort)) {
        reply_error(c->r, 400, "sort: newest, oldest, longest or id");
        return;
    }
    explorer_cursor cursor;
    const pano_jobs *jobs = rows(c, uuid, &cursor);
    if (!jobs)
        return;
    size_t *page = pano_calloc((size_t)limit, sizeof *page), n;
    size_t total = pano_jobs_select(jobs, &f, (size_t)offset, (size_t)limit, page, &n);
    pano_json *doc = pano_json_object();
    pano_json_set_int(doc, "total", (int64_t)total);
    pano_json_set_int(doc, "runs", (int64_t)jobs->n);
    pano_json_set_int(doc, "offset", offset);
    pano_json_set_int(doc, "limit", limit);
    pano_json_set_double(doc, "now", jobs->now, 3);
    set_cursor(doc, &cursor);
    add_rows(doc, jobs, page, n);
    reply_json(c->r, 200, doc);
    free(page);
    jobs_cache_release(c->cache, jobs);
}

static void timeline(call *c, const char *uuid)
{
    double from = 0, to = 0;
    bool has_from, has_to;
    long bins;
    if (!time_arg(c, "from", &from, &has_from) || !time_arg(c, "to", &to, &has_to) ||
        !count_arg(c, "bins", DEFAULT_BINS, 1, MAX_BINS, &bins))
        return;
    if (has_from != has_to || (has_from && !(from < to))) {
        reply_error(c->r, 400, "from and to: both or neither, from before to");
        return;
    }
    explorer_cursor cursor;
    const pano_jobs *jobs = rows(c, uuid, &cursor);
    if (!jobs)
        return;
    pano_overview o;
    pano_jobs_overview(jobs, from, to, (size_t)bins, &o);
    pano_json *doc = pano_json_object();
    pano_json_set_double(doc, "now", jobs->now, 3);
    set_cursor(doc, &cursor);
    pano_json_set(doc, "overview", pano_overview_to_json(&o));
    if (o.runs <= EXPLORER_BAR_JOBS) {
        size_t *alive = pano_calloc(o.runs ? o.runs : 1, sizeof *alive), n = 0;
        for (size_t i = 0; i < jobs->n && n < o.runs; i++)
            if (pano_job_alive_in(jobs, &jobs->jobs[i], o.from, o.to, true))
                alive[n++] = i;
        add_rows(doc, jobs, alive, n);
        free(alive);
    }
    reply_json(c->r, 200, doc);
    pano_overview_free(&o);
    jobs_cache_release(c->cache, jobs);
}

static void series(call *c, const char *uuid)
{
    const char *metric = pano_http_arg(c->req, "metric"), *job_id = pano_http_arg(c->req, "job");
    const char *step_arg = pano_http_arg(c->req, "step");
    if (!metric) {
        reply_error(c->r, 400, "series needs ?metric= (GET /api/metrics lists them)");
        return;
    }
    if (job_id && !pano_query_job_name_valid(job_id)) {
        reply_error(c->r, 400, "'%.80s' is not a job name", job_id);
        return;
    }
    double step = 0;
    if (step_arg) {
        char *end;
        step = strtod(step_arg, &end);
        if (end == step_arg || !(step > 0) || (*end && strcmp(end, "s") != 0)) {
            reply_error(c->r, 400, "step: '%.40s' is not a number of seconds", step_arg);
            return;
        }
    }
    explorer_cursor cursor;
    const pano_jobs *jobs = rows(c, uuid, &cursor);
    if (!jobs)
        return;
    const pano_job *job = job_id ? pano_jobs_find(jobs, job_id) : NULL;
    if (job_id && !job) {
        reply_error(c->r, 404, "workflow %s has no job %s", jobs->wf_uuid, job_id);
        jobs_cache_release(c->cache, jobs);
        return;
    }
    if (!step_arg)
        step = auto_step(jobs, job);
    pano_series s;
    char err[1024];
    if (pano_query_series(c->q, jobs, job, metric, step, &s, err, sizeof err) < 0)
        reply_series_error(c->r, err);
    else {
        reply_json(c->r, 200, pano_series_to_json(&s));
        pano_series_free(&s);
    }
    jobs_cache_release(c->cache, jobs);
}

/* A job page's custom metrics: the newest this many (the events, not the
 * job's size, set the cost). */
#define JOB_METRICS_MAX 2000

static void job(call *c, const char *uuid, const char *id)
{
    if (!pano_query_job_name_valid(id)) {
        reply_error(c->r, 400, "'%.80s' is not a job name", id);
        return;
    }
    explorer_cursor cursor;
    const pano_jobs *jobs = rows(c, uuid, &cursor);
    if (!jobs)
        return;
    const pano_job *j = pano_jobs_find(jobs, id);
    if (!j) {
        reply_error(c->r, 404, "workflow %s has no job %s", jobs->wf_uuid, id);
        jobs_cache_release(c->cache, jobs);
        return;
    }
    char err[1024];
    pano_json *start = pano_query_job_start(c->q, jobs, j, err, sizeof err);
    pano_json *events = start ? pano_query_job_events(c->q, jobs, j, 200, err, sizeof err) : NULL;
    pano_json *io = events ? pano_query_io(c->q, jobs, j, err, sizeof err) : NULL;
    bool left_out = false;
    pano_json *custom =
        io ? pano_query_job_metrics(c->q, jobs, j, JOB_METRICS_MAX, &left_out, err, sizeof err)
           : NULL;
    if (!custom) {
        reply_error(c->r, 502, "%s", err);
        pano_json_free(start);
        pano_json_free(events);
        pano_json_free(io);
    } else {
        pano_json *doc = pano_job_to_json(j);
        pano_json_set_str(doc, "wf_uuid", jobs->wf_uuid);
        pano_json_set_str(doc, "wf_label", jobs->wf_label);
        pano_json_set(doc, "start_event", start);
        pano_json_set(doc, "events", events);
        pano_json_set(doc, "io", io);
        pano_json_set(doc, "metrics", custom);
        pano_json_set_bool(doc, "metrics_left_out", left_out);
        if (add_series(c, jobs, j, doc))
            reply_json(c->r, 200, doc);
        else
            pano_json_free(doc);
    }
    jobs_cache_release(c->cache, jobs);
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
    const char *_Atomic why; /* set once it is abandoned (asked from two threads) */
} abandon;

static bool should_abandon(void *user)
{
    abandon *a = user;
    const char *why = atomic_load(&a->why);
    if (!why && a->stopping && a->stopping())
        why = "the explorer is stopping";
    if (!why && pano_http_client_gone(a->req))
        why = "the client went away";
    if (why)
        atomic_store(&a->why, why);
    return why != NULL;
}

static void answer(call *c)
{
    const char *path = pano_http_path(c->req) + strlen("/api");
    if (strcmp(path, "/workflows") == 0) {
        workflows(c);
        return;
    }
    /* /workflows/UUID[/jobs | /timeline | /series | /jobs/JOB] */
    const char *prefix = "/workflows/";
    if (strncmp(path, prefix, strlen(prefix)) != 0) {
        reply_error(c->r, 404, "no such API: %.100s", pano_http_path(c->req));
        return;
    }
    const char *rest = path + strlen(prefix);
    size_t len = strcspn(rest, "/");
    char given[64], uuid[PANO_WF_UUID_LEN + 1];
    snprintf(given, sizeof given, "%.*s", (int)(len < 63 ? len : 63), rest);
    if (len >= sizeof given || !pano_wf_uuid_normalize(given, uuid)) {
        reply_error(c->r, 400, "'%.40s' is not a workflow UUID", given);
        return;
    }
    rest += len;
    if (!*rest)
        workflow(c, uuid);
    else if (strcmp(rest, "/jobs") == 0)
        jobs_page(c, uuid);
    else if (strcmp(rest, "/timeline") == 0)
        timeline(c, uuid);
    else if (strcmp(rest, "/series") == 0)
        series(c, uuid);
    else if (strncmp(rest, "/jobs/", 6) == 0 && rest[6])
        job(c, uuid, rest + 6);
    else
        reply_error(c->r, 404, "no such API: %.100s", pano_http_path(c->req));
}

void explorer_api(const explorer_context *ctx, const pano_http_request *req, pano_http_reply *r)
{
    if (strcmp(pano_http_path(req), "/api/metrics") == 0) {
        metrics(r);
        return;
    }
    char err[1024];
    pano_query *q = client(ctx->cfg, err, sizeof err);
    if (!q) {
        reply_error(r, 500, "%s", err);
        return;
    }
    abandon a = {.req = req, .stopping = ctx->stopping};
    pano_query_set_abort(q, should_abandon, &a);
    call c = {.q = q, .cache = ctx->cache, .req = req, .r = r};
    answer(&c);
    pano_query_set_abort(q, NULL, NULL);
    const char *why = atomic_load(&a.why);
    if (why) {
        pano_info("abandoned %.200s: %s", pano_http_path(req), why);
        pano_buf_clear(&r->body);
        reply_error(r, 503, "abandoned: %s", why);
    }
}
