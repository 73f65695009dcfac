/*
 * pano-query - a workflow's live state, statistics, time series and
 * anomalies, from the store, for people (tables) and for scripts and the
 * running workflow itself (--json, --tsv).
 *
 *   pano-query workflows | status UUID | stats UUID | jobs UUID | job UUID JOB
 *              | series UUID --metric M | anomalies UUID [--publish] | metrics
 */
#include "cli.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "query.h"
#include "redact.h"
#include "sink.h"
#include "store.h"
#include "table.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Exit statuses besides 0 and 2 (usage). */
enum { EXIT_STORE = 1, EXIT_UNKNOWN = 3 };

enum {
    OPT_JSON = 0x2000,
    OPT_TSV,
    OPT_WATCH,
    OPT_SINCE,
    OPT_LIMIT,
    OPT_STATE,
    OPT_TRANSFORMATION,
    OPT_METRIC,
    OPT_STEP,
    OPT_JOB,
    OPT_PUBLISH,
    OPT_ES_URL,
    OPT_STORE,
    OPT_OUTPUT,
    OPT_REDACT,
    OPT_REDACT_TRANSFORMATIONS,
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-query [options] COMMAND [ARGS]\n"
            "A workflow's live state, statistics, time series and anomalies, read from the\n"
            "Elasticsearch store pano-indexer writes (pano.es.url, pano.indexer.index_prefix).\n"
            "\n"
            "Commands:\n"
            "  workflows [--since D] [--limit N]  recent workflows: label, state, runs\n"
            "  status UUID [--watch S]      what runs, what failed, now (like pegasus-status);\n"
            "                               --watch redraws every S seconds until the\n"
            "                               workflow's end event or Ctrl-C\n"
            "  stats UUID                   pegasus-statistics' figures, at any moment: jobs by\n"
            "                               state, wall times, per transformation and per host\n"
            "  jobs UUID [--state S] [--transformation T]\n"
            "                               one row per job run (S: queued, held, running,\n"
            "                               lost, succeeded, failed, killed)\n"
            "  job UUID JOB                 one job (its id from `jobs`, or a DAG job id for its\n"
            "                               latest attempt), with its Darshan, transfer and\n"
            "                               custom events\n"
            "  series UUID --metric M [--step D] [--job JOB]\n"
            "                               a metric over time (`metrics` lists them): the rates\n"
            "                               of counters, the mean and peak of gauges in each\n"
            "                               step; step default 10s\n"
            "  anomalies UUID [--publish] [--watch S]\n"
            "                               outliers within a transformation (modified z-score\n"
            "                               > 3.5 over >= 5 ended runs), running jobs longer\n"
            "                               than their transformation's p95, failed jobs;\n"
            "                               --publish sends them as pano.alert.* events through\n"
            "                               the broker (pano.amqp.url)\n"
            "  metrics                      the metrics of `series`\n"
            "  rejected [--since D] [--limit N]\n"
            "                               the messages the store refused, newest first,\n"
            "                               with the reason (--json: with the message)\n"
            "  export UUID... -o FILE [--redact]\n"
            "                               the workflows' events (their sub-workflows' too)\n"
            "                               and dead letters in one new file, which --store\n"
            "                               FILE reads anywhere, with no service\n"
            "  import FILE                  the events of such a file into the configured\n"
            "                               store: through the broker (pano.amqp.url), else\n"
            "                               into the embedded store; each stored once\n"
            "\n"
            "Output: aligned tables (times local, sizes in KiB/MiB/GiB)\n"
            "      --json             the command's JSON document (seconds, bytes, kB, epoch)\n"
            "      --tsv              tab-separated values with a header line (raw numbers)\n"
            "  -o, --output FILE      export: the file to write (it must not exist)\n"
            "      --redact           export: names, hosts, paths, environment and free text\n"
            "                         replaced by keyed pseudonyms; numbers, times, event\n"
            "                         and transformation names and the DAG kept\n"
            "      --redact-transformations  the transformations' names too\n"
            "      --es-url URL       Elasticsearch (pano.es.url)\n"
            "      --store PATH       read the embedded store instead (pano.store): a store\n"
            "                         directory or one of its files; several (the option\n"
            "                         again, or comma-separated) are read as one\n"
            "Durations (D): 10s, 5m, 2h, 7d, 2w, 1y or seconds. --since default 30d, --limit 50.\n"
            "\n"
            "Exit status: 0 ok; 1 the store cannot be asked (or --publish failed); 2 usage;\n"
            "3 no such workflow or job.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

typedef struct {
    pano_config *cfg;
    pano_query *q;
    bool json, tsv;
    double watch;
    double since;
    long limit;
    const char *state, *transformation, *metric, *job;
    double step;
    bool publish;
    const char *output; /* export -o */
    bool redact, redact_transformations;
} opts;

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = sig; }

static void print_json(pano_json *doc)
{
    char *text = pano_json_serialize(doc, NULL);
    puts(text);
    free(text);
    pano_json_free(doc);
}

/* pegasus-monitord's figures of the workflow, or an exit status. */
static int load_pegasus(opts *o, const char *uuid, pano_pegasus *p)
{
    char err[1024];
    if (pano_query_pegasus(o->q, uuid, p, err, sizeof err) < 0) {
        pano_error("%s", err);
        return EXIT_STORE;
    }
    return 0;
}

/* Which rows of the workflow a command needs. */
typedef enum { ROWS_ALL, ROWS_SERIES, ROWS_IN_STATE } rows_needed;

/* The jobs of the workflow (those a series needs, or every one in state
 * among others), or an exit status. */
static int load_rows(opts *o, const char *uuid, rows_needed need, pano_job_state state,
                     pano_jobs *jobs)
{
    char err[1024];
    double now = pano_now();
    int rc = need == ROWS_SERIES ? pano_query_series_rows(o->q, uuid, now, jobs, err, sizeof err)
             : need == ROWS_IN_STATE
                 ? pano_query_jobs_in_state(o->q, uuid, now, state, jobs, err, sizeof err)
                 : pano_query_jobs(o->q, uuid, now, jobs, err, sizeof err);
    if (rc < 0) {
        pano_error("%s", err);
        return strstr(err, "not a workflow UUID") ? 2 : EXIT_STORE;
    }
    if (jobs->first_event <= 0) {
        pano_error("no events of workflow %s in %s", jobs->wf_uuid, pano_query_source(o->q));
        pano_jobs_free(jobs);
        return EXIT_UNKNOWN;
    }
    return 0;
}

static int load(opts *o, const char *uuid, pano_jobs *jobs)
{
    return load_rows(o, uuid, ROWS_ALL, PANO_JOB_QUEUED, jobs);
}

static const char *exit_text(char *buf, size_t size, const pano_job *j)
{
    if (j->state == PANO_JOB_KILLED)
        snprintf(buf, size, "signal %d", j->signal);
    else if (pano_job_state_ended(j->state) && j->exitcode >= 0)
        snprintf(buf, size, "%d", j->exitcode);
    else
        snprintf(buf, size, "-");
    return buf;
}

/* ---- workflows ------------------------------------------------------------ */

static int cmd_workflows(opts *o)
{
    pano_workflow *w;
    size_t n;
    char err[1024];
    double now = pano_now();
    if (pano_query_workflows(o->q, now - o->since, (size_t)o->limit, now, &w, &n, err,
                             sizeof err) < 0) {
        pano_error("%s", err);
        return EXIT_STORE;
    }
    if (o->json)
        print_json(pano_workflows_to_json(w, n));
    else {
        static const table_column cols[] = {
            {"WF_UUID", false}, {"LABEL", false}, {"STATE", false},  {"STARTED", false},
            {"LAST EVENT", false}, {"RUNS", true}, {"RUNNING", true}, {"OK", true},
            {"FAILED", true}};
        table *t = table_new(cols, 9);
        for (size_t i = 0; i < n; i++) {
            char a[32], b[32], c[24] = "-", d[24] = "-", e[24] = "-", f[24] = "-";
            if (w[i].runs_known) { /* else known only from pegasus-monitord */
                snprintf(c, sizeof c, "%zu", w[i].runs);
                snprintf(d, sizeof d, "%zu", w[i].running);
                snprintf(e, sizeof e, "%zu", w[i].succeeded);
                snprintf(f, sizeof f, "%zu", w[i].failed);
            }
            const char *row[] = {w[i].wf_uuid, w[i].wf_label, w[i].state,
                                 fmt_time(a, sizeof a, w[i].first_event, o->tsv),
                                 fmt_time(b, sizeof b, w[i].last_event, o->tsv), c, d, e, f};
            table_row(t, row);
        }
        table_print(t, stdout, o->tsv);
        table_free(t);
    }
    pano_workflows_free(w, n);
    return 0;
}

/* ---- a workflow in one file ------------------------------------------------- */

static int cmd_export(opts *o, const char *const *wfs, size_t n)
{
    if (!o->output) {
        pano_error("export writes a file: -o FILE");
        return 2;
    }
    char err[1024];
    pano_redactor *r = NULL;
    if ((o->redact || o->redact_transformations) &&
        !(r = pano_redactor_new(o->redact_transformations))) {
        pano_error("no random key for the pseudonyms: %s", strerror(errno));
        return EXIT_STORE;
    }
    int rc = pano_query_export(o->q, wfs, n, o->output, r, err, sizeof err);
    pano_redactor_free(r);
    if (rc < 0) {
        pano_error("%s", err);
        return EXIT_STORE;
    }
    pano_info("%zu workflow(s) exported to %s%s", n, o->output, r ? ", redacted" : "");
    return 0;
}

typedef struct {
    pano_sink *sink;
    const char *file;
    size_t failed;
} import_ctx;

static int import_event(const char *event, const char *event_id, const char *doc, size_t len,
                        void *user)
{
    import_ctx *im = user;
    char err[1024];
    if (pano_sink_send_raw(im->sink, event, event_id, doc, len, err, sizeof err) < 0) {
        pano_error("%s: %s", im->file, err);
        im->failed++;
    }
    return stop ? 1 : 0;
}

/* The events of an exported file (or any store) into the configured store. */
static int cmd_import(opts *o, const char *file)
{
    char err[1024];
    const char *paths[] = {file};
    sqlite3 *db = pano_store_open_reader(paths, 1, err, sizeof err);
    if (!db) {
        pano_error("%s", err);
        return EXIT_STORE;
    }
    /* the file is read, not written: pano.store names where the events go */
    import_ctx im = {.file = file};
    if (!(im.sink = pano_sink_open(o->cfg, err, sizeof err))) {
        pano_error("%s", err);
        sqlite3_close(db);
        return EXIT_STORE;
    }
    pano_sink_hold(im.sink, true);
    int rc = pano_store_each_event(db, NULL, 0, import_event, &im, err, sizeof err);
    if (rc < 0)
        pano_error("%s", err);
    pano_sink_flush(im.sink, err, sizeof err); /* a failure is logged */
    pano_sink_stats st = pano_sink_get_stats(im.sink);
    size_t failed = im.failed + st.rejected + st.failed;
    pano_info("%llu event(s) of %s sent to %s, %zu not", (unsigned long long)(st.sent + st.spooled),
              file, pano_sink_describe(im.sink), failed);
    pano_sink_close(im.sink);
    sqlite3_close(db);
    return rc != 0 || failed ? EXIT_STORE : 0;
}

/* ---- rejected --------------------------------------------------------------- */

static int cmd_rejected(opts *o)
{
    pano_rejected *r;
    size_t n;
    char err[1024];
    if (pano_query_rejected(o->q, pano_now() - o->since, (size_t)o->limit, &r, &n, err,
                            sizeof err) < 0) {
        pano_error("%s", err);
        return EXIT_STORE;
    }
    if (o->json)
        print_json(pano_rejected_to_json(r, n));
    else {
        static const table_column cols[] = {{"TIME", false},    {"SOURCE", false},
                                            {"EVENT", false},   {"WF_UUID", false},
                                            {"REASON", false}};
        table *t = table_new(cols, 5);
        for (size_t i = 0; i < n; i++) {
            char a[32];
            const char *row[] = {fmt_time(a, sizeof a, r[i].ts, o->tsv), r[i].source,
                                 *r[i].event ? r[i].event : "-",
                                 *r[i].wf_uuid ? r[i].wf_uuid : "-", r[i].reason};
            table_row(t, row);
        }
        table_print(t, stdout, o->tsv);
        table_free(t);
    }
    pano_rejected_free(r, n);
    return 0;
}

/* ---- jobs ------------------------------------------------------------------ */

static void jobs_table(const opts *o, const pano_jobs *jobs, bool (*keep)(const pano_job *,
                                                                          const opts *))
{
    static const table_column cols[] = {
        {"JOB", false},     {"STATE", false},   {"EXIT", true},     {"TRANSFORMATION", false},
        {"HOST", false},    {"SITE", false},    {"START", false},   {"DURATION", true},
        {"CPU", true},      {"MAXRSS", true},   {"READ", true},     {"WRITTEN", true},
        {"SAMPLES", true}};
    table *t = table_new(cols, 13);
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        if (keep && !keep(j, o))
            continue;
        char ex[24], st[32], du[32], cpu[32], rss[32], rd[32], wr[32], sa[24];
        snprintf(sa, sizeof sa, "%lld", (long long)j->samples);
        const char *row[] = {j->id,
                             pano_job_state_name(j->state),
                             exit_text(ex, sizeof ex, j),
                             j->transformation,
                             j->host,
                             j->site,
                             fmt_time(st, sizeof st, j->start, o->tsv),
                             fmt_seconds(du, sizeof du, j->duration, o->tsv),
                             fmt_seconds(cpu, sizeof cpu, j->cpu_time, o->tsv),
                             fmt_bytes(rss, sizeof rss, j->maxrss < 0 ? NAN : (double)j->maxrss * 1024,
                                       o->tsv),
                             fmt_bytes(rd, sizeof rd, (double)j->bytes_read, o->tsv),
                             fmt_bytes(wr, sizeof wr, (double)j->bytes_written, o->tsv),
                             sa};
        table_row(t, row);
    }
    table_print(t, stdout, o->tsv);
    table_free(t);
}

static bool matches_filters(const pano_job *j, const opts *o)
{
    pano_job_state s;
    if (o->state && pano_job_state_parse(o->state, &s) && j->state != s)
        return false;
    return !o->transformation || strcmp(j->transformation, o->transformation) == 0;
}

static int cmd_jobs(opts *o, const char *uuid)
{
    pano_job_state s = PANO_JOB_QUEUED;
    if (o->state && !pano_job_state_parse(o->state, &s)) {
        pano_error("--state: '%s' is not one of queued, held, running, lost, succeeded, "
                   "failed, killed", o->state);
        return 2;
    }
    pano_jobs jobs;
    int rc = load_rows(o, uuid, o->state ? ROWS_IN_STATE : ROWS_ALL, s, &jobs);
    if (rc)
        return rc;
    if (o->json) {
        pano_json *doc = pano_jobs_to_json(&jobs);
        pano_json *rows = pano_json_set_array(doc, "jobs"); /* the filtered rows */
        for (size_t i = 0; i < jobs.n; i++)
            if (matches_filters(&jobs.jobs[i], o))
                pano_json_append(rows, pano_job_to_json(&jobs.jobs[i]));
        print_json(doc);
    } else
        jobs_table(o, &jobs, matches_filters);
    pano_jobs_free(&jobs);
    return 0;
}

/* ---- status ------------------------------------------------------------------ */

static bool needs_attention(const pano_job *j, const opts *o)
{
    (void)o;
    return j->state != PANO_JOB_SUCCEEDED;
}

static void status_screen(const opts *o, const pano_jobs *jobs, const pano_pegasus *p)
{
    pano_stats s;
    pano_stats_count(jobs, &s); /* no groups: status shows none */
    if (o->json) {
        pano_json *doc = pano_stats_to_json(jobs, &s, p);
        pano_json *rows = pano_json_set_array(doc, "jobs_not_succeeded");
        for (size_t i = 0; i < jobs->n; i++)
            if (jobs->jobs[i].state != PANO_JOB_SUCCEEDED)
                pano_json_append(rows, pano_job_to_json(&jobs->jobs[i]));
        pano_json_remove(doc, "transformations");
        pano_json_remove(doc, "hosts");
        print_json(doc);
        pano_stats_free(&s);
        return;
    }
    char wall[32], now[32];
    size_t done = s.jobs_by_state[PANO_JOB_SUCCEEDED];
    const char *state = jobs->wf_ended ? (jobs->wf_status == 0 ? "succeeded" : "failed")
                        : s.jobs_by_state[PANO_JOB_RUNNING] ? "running"
                        : s.jobs_by_state[PANO_JOB_FAILED] + s.jobs_by_state[PANO_JOB_KILLED]
                            ? "failed so far"
                            : "no job running";
    if (!o->tsv) {
        printf("Workflow %s%s%s%s  %s, %s\n", jobs->wf_uuid, *jobs->wf_label ? " (" : "",
               jobs->wf_label, *jobs->wf_label ? ")" : "", state,
               fmt_seconds(wall, sizeof wall, s.wall_time, false));
        if (p->present) {
            const pano_pegasus_status *ps = &p->status;
            printf("DAG nodes (as pegasus-status): %zu unready, %zu ready, %zu pre, %zu queued, "
                   "%zu post, %zu succeeded, %zu failed of %zu; %.2f %% done; %s\n",
                   ps->unready, ps->ready, ps->pre, ps->queued, ps->post, ps->succeeded,
                   ps->failed, ps->total, ps->percent_done, ps->state);
        }
        printf("%zu job(s): %zu running, %zu succeeded, %zu failed, %zu killed, %zu lost, "
               "%zu queued, %zu held; %zu retries; %.1f %% done   (as of %s)\n\n",
               s.jobs, s.jobs_by_state[PANO_JOB_RUNNING], done,
               s.jobs_by_state[PANO_JOB_FAILED], s.jobs_by_state[PANO_JOB_KILLED],
               s.jobs_by_state[PANO_JOB_LOST], s.jobs_by_state[PANO_JOB_QUEUED],
               s.jobs_by_state[PANO_JOB_HELD], s.retries,
               s.jobs ? 100.0 * (double)done / (double)s.jobs : 0.0,
               fmt_time(now, sizeof now, jobs->now, false));
    }
    jobs_table(o, jobs, needs_attention);
    pano_stats_free(&s);
}

static int cmd_status(opts *o, const char *uuid)
{
    bool terminal = isatty(STDOUT_FILENO) && !o->json && !o->tsv;
    for (;;) {
        pano_jobs jobs;
        pano_pegasus p;
        int rc = load(o, uuid, &jobs);
        if (rc == 0 && (rc = load_pegasus(o, uuid, &p)) != 0)
            pano_jobs_free(&jobs);
        if (rc)
            return rc;
        if (o->watch > 0 && terminal)
            fputs("\033[H\033[2J", stdout);
        status_screen(o, &jobs, &p);
        fflush(stdout);
        bool ended = jobs.wf_ended;
        pano_jobs_free(&jobs);
        pano_pegasus_free(&p);
        if (o->watch <= 0 || ended)
            return 0;
        for (double slept = 0; slept < o->watch && !stop; slept += 0.1)
            usleep(100000);
        if (stop)
            return 0;
        if (!terminal)
            putchar('\n');
    }
}

/* ---- stats ------------------------------------------------------------------- */

static void groups_table(const opts *o, const char *title, const pano_group_stats *g,
                         size_t n)
{
    table_column cols[] = {
        {title, false},   {"RUNS", true},       {"FAILED", true},    {"RUNNING", true},
        {"MIN", true},    {"MEDIAN", true},     {"MEAN", true},      {"P95", true},
        {"MAX", true},    {"CPU MEAN", true},   {"MAXRSS MAX", true}, {"READ", true},
        {"WRITTEN", true}};
    table *t = table_new(cols, 13);
    for (size_t i = 0; i < n; i++) {
        char r[24], f[24], ru[24], a[32], b[32], c[32], d[32], e[32], cpu[32], rss[32], rd[32],
            wr[32];
        snprintf(r, sizeof r, "%zu", g[i].runs);
        snprintf(f, sizeof f, "%zu", g[i].failed);
        snprintf(ru, sizeof ru, "%zu", g[i].running);
        const pano_summary *du = &g[i].duration;
        const char *row[] = {
            g[i].name, r, f, ru,
            fmt_seconds(a, sizeof a, du->min, o->tsv),
            fmt_seconds(b, sizeof b, du->median, o->tsv),
            fmt_seconds(c, sizeof c, du->mean, o->tsv),
            fmt_seconds(d, sizeof d, du->p95, o->tsv),
            fmt_seconds(e, sizeof e, du->max, o->tsv),
            fmt_seconds(cpu, sizeof cpu, g[i].cpu_time.mean, o->tsv),
            fmt_bytes(rss, sizeof rss, g[i].maxrss.max * 1024, o->tsv),
            fmt_bytes(rd, sizeof rd, g[i].bytes_read.n ? g[i].bytes_read.total : NAN, o->tsv),
            fmt_bytes(wr, sizeof wr, g[i].bytes_written.n ? g[i].bytes_written.total : NAN,
                      o->tsv)};
        table_row(t, row);
    }
    table_print(t, stdout, o->tsv);
    table_free(t);
}

static void breakdown_table(const opts *o, const pano_pegasus *p)
{
    static const table_column cols[] = {
        {"TRANSFORMATION", false}, {"TYPE", false},       {"COUNT", true},
        {"MIN", true},             {"MAX", true},         {"MEAN", true},
        {"TOTAL", true},           {"MEM MEAN (MiB)", true}, {"AVG CPU MEAN", true}};
    table *t = table_new(cols, 9);
    for (size_t i = 0; i < p->n_breakdown; i++) {
        const pano_pegasus_breakdown *b = &p->breakdown[i];
        char n[24], a[32], c[32], d[32], e[32], m[32], u[32];
        snprintf(n, sizeof n, "%zu", b->count);
        const char *row[] = {b->transformation,
                             b->succeeded ? "successful" : "failed",
                             n,
                             fmt_number(a, sizeof a, b->runtime.min, 3),
                             fmt_number(c, sizeof c, b->runtime.max, 3),
                             fmt_number(d, sizeof d, b->runtime.mean, 3),
                             fmt_number(e, sizeof e, b->runtime.total, 3),
                             fmt_number(m, sizeof m, b->memory.mean, 3),
                             fmt_number(u, sizeof u, b->avg_cpu.mean, 2)};
        table_row(t, row);
    }
    table_print(t, stdout, o->tsv);
    table_free(t);
}

static void print_counts(const char *type, const pano_pegasus_counts *c)
{
    printf("%-14s %10zu %7zu %11zu %6zu %8zu %14zu\n", type, c->succeeded, c->failed,
           c->incomplete, c->total, c->retries, c->total_with_retries);
}

/* pegasus-statistics' summary, with what pano adds. */
static void print_summary(const pano_jobs *jobs, const pano_stats *s, const pano_pegasus *p)
{
    char a[32], b[32], c[32], d[32], e[32];
    printf("Workflow %s%s%s%s\n\n", jobs->wf_uuid, *jobs->wf_label ? " (" : "", jobs->wf_label,
           *jobs->wf_label ? ")" : "");
    printf("%-14s %10s %7s %11s %6s %8s %14s\n", "Type", "Succeeded", "Failed", "Incomplete",
           "Total", "Retries", "Total+Retries");
    size_t ok = s->jobs_by_state[PANO_JOB_SUCCEEDED];
    size_t bad = s->jobs_by_state[PANO_JOB_FAILED] + s->jobs_by_state[PANO_JOB_KILLED];
    pano_pegasus_counts runs = {ok, bad, s->jobs - ok - bad, s->jobs, s->retries, s->runs};
    if (p->present) {
        print_counts("Tasks", &p->tasks);
        print_counts("Jobs", &p->jobs);
        print_counts("Sub-Workflows", &p->sub_workflows);
    } else
        print_counts("Jobs", &runs);
    putchar('\n');
    if (p->present) {
        printf("Workflow wall time                                       : %s\n",
               fmt_seconds(a, sizeof a, p->workflow_wall_time, false));
        printf("Cumulative job wall time                                 : %s\n",
               fmt_seconds(b, sizeof b, p->cumulative_job_wall_time, false));
        printf("Cumulative job wall time as seen from submit side        : %s\n",
               fmt_seconds(c, sizeof c, p->cumulative_job_walltime_from_submit_side, false));
        printf("Cumulative job badput wall time                          : %s\n",
               fmt_seconds(d, sizeof d, p->cumulative_badput_time, false));
        printf("Cumulative job badput wall time as seen from submit side : %s\n",
               fmt_seconds(e, sizeof e, p->cumulative_badput_walltime_from_submit_side, false));
    } else {
        printf("Workflow wall time so far    : %s\n", fmt_seconds(a, sizeof a, s->wall_time, false));
        printf("Cumulative job wall time     : %s\n",
               fmt_seconds(b, sizeof b, s->cumulative_job_wall_time, false));
        printf("Cumulative job badput        : %s\n",
               fmt_seconds(d, sizeof d, s->cumulative_badput, false));
    }
    if (s->cumulative_job_wall_time_running > 0)
        printf("Running jobs so far (pano)   : %s\n",
               fmt_seconds(c, sizeof c, s->cumulative_job_wall_time_running, false));
    putchar('\n');
}

static int cmd_stats(opts *o, const char *uuid)
{
    pano_jobs jobs;
    pano_pegasus p;
    int rc = load(o, uuid, &jobs);
    if (rc == 0 && (rc = load_pegasus(o, uuid, &p)) != 0)
        pano_jobs_free(&jobs);
    if (rc)
        return rc;
    pano_stats s;
    pano_stats_compute(&jobs, &s);
    if (o->json)
        print_json(pano_stats_to_json(&jobs, &s, &p));
    else {
        if (!o->tsv)
            print_summary(&jobs, &s, &p);
        if (p.present && !o->tsv) {
            puts("Invocations by transformation (as pegasus-statistics' breakdown)");
            breakdown_table(o, &p);
            puts("\nJob runs by transformation");
        }
        groups_table(o, "TRANSFORMATION", s.transformations, s.n_transformations);
        if (!o->tsv) {
            putchar('\n');
            groups_table(o, "HOST", s.hosts, s.n_hosts);
        }
    }
    pano_stats_free(&s);
    pano_jobs_free(&jobs);
    pano_pegasus_free(&p);
    return 0;
}

/* ---- job ---------------------------------------------------------------------- */

static int cmd_job(opts *o, const char *uuid, const char *id)
{
    if (!pano_query_job_name_valid(id)) {
        pano_error("'%.80s' is not a job name (letters, digits and _ . : @ # + -)", id);
        return 2;
    }
    pano_jobs jobs;
    int rc = load(o, uuid, &jobs);
    if (rc)
        return rc;
    const pano_job *j = pano_jobs_find(&jobs, id);
    if (!j) {
        pano_error("workflow %s has no job %s (pano-query jobs %s lists them)", jobs.wf_uuid,
                   id, jobs.wf_uuid);
        pano_jobs_free(&jobs);
        return EXIT_UNKNOWN;
    }
    char err[1024];
    pano_json *events = pano_query_job_events(o->q, &jobs, j, 200, err, sizeof err);
    if (!events) {
        pano_error("%s", err);
        pano_jobs_free(&jobs);
        return EXIT_STORE;
    }
    if (o->json) {
        pano_json *doc = pano_job_to_json(j);
        pano_json_set_str(doc, "wf_uuid", jobs.wf_uuid);
        pano_json_set(doc, "events", events);
        print_json(doc);
    } else {
        char b[64];
        const struct {
            const char *k;
            const char *v;
        } rows[] = {
            {"job", j->id},
            {"DAG job id", j->dag_job_id},
            {"state", pano_job_state_name(j->state)},
            {"exit", exit_text((char[24]){0}, 24, j)},
            {"transformation", j->transformation},
            {"executable", j->exe},
            {"host", j->host},
            {"site", j->site},
        };
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            printf("%-16s %s\n", rows[i].k, *rows[i].v ? rows[i].v : "-");
        printf("%-16s %lld\n", "pid", (long long)j->pid);
        printf("%-16s %d\n", "attempt", j->attempt);
        printf("%-16s %s\n", "start", fmt_time(b, sizeof b, j->start, o->tsv));
        printf("%-16s %s\n", "end", fmt_time(b, sizeof b, j->end, o->tsv));
        printf("%-16s %s\n", "duration", fmt_seconds(b, sizeof b, j->duration, o->tsv));
        printf("%-16s %s\n", "CPU time", fmt_seconds(b, sizeof b, j->cpu_time, o->tsv));
        printf("%-16s %s\n", "max RSS",
               fmt_bytes(b, sizeof b, j->maxrss < 0 ? NAN : (double)j->maxrss * 1024, o->tsv));
        printf("%-16s %s\n", "read", fmt_bytes(b, sizeof b, (double)j->bytes_read, o->tsv));
        printf("%-16s %s\n", "written", fmt_bytes(b, sizeof b, (double)j->bytes_written, o->tsv));
        printf("%-16s %lld every %s\n", "samples", (long long)j->samples,
               fmt_seconds(b, sizeof b, j->interval > 0 ? j->interval : NAN, false));
        printf("\n%zu event(s) beside its samples:\n", pano_json_len(events));
        static const table_column cols[] = {{"TIME", false}, {"EVENT", false}, {"WHAT", false}};
        table *t = table_new(cols, 3);
        for (size_t i = 0; i < pano_json_len(events); i++) {
            const pano_json *e = pano_json_at(events, i);
            double ts = 0;
            pano_json_get_number(e, "ts", &ts);
            char what[256] = "", v[64];
            const char *name = pano_json_get_str(e, "event");
            double x;
            if (pano_json_get_str(e, "name") && pano_json_get_number(e, "value", &x))
                snprintf(what, sizeof what, "%s = %g", pano_json_get_str(e, "name"), x);
            else if (pano_json_get_number(e, "bytes_transferred", &x))
                snprintf(what, sizeof what, "%s  %s",
                         pano_json_get_str(e, "filename") ? pano_json_get_str(e, "filename")
                                                          : "",
                         fmt_bytes(v, sizeof v, x, false));
            else if (pano_json_get_str(e, "exe"))
                snprintf(what, sizeof what, "%s", pano_json_get_str(e, "exe"));
            const char *row[] = {fmt_time(b, sizeof b, ts, o->tsv), name ? name : "", what};
            table_row(t, row);
        }
        table_print(t, stdout, o->tsv);
        table_free(t);
        pano_json_free(events);
    }
    pano_jobs_free(&jobs);
    return 0;
}

/* ---- series -------------------------------------------------------------------- */

static int cmd_series(opts *o, const char *uuid)
{
    if (!o->metric) {
        pano_error("series needs --metric (pano-query metrics lists them)");
        return 2;
    }
    if (o->job && !pano_query_job_name_valid(o->job)) {
        pano_error("'%.80s' is not a job name", o->job);
        return 2;
    }
    pano_jobs jobs;
    int rc = load_rows(o, uuid, o->job ? ROWS_ALL : ROWS_SERIES, PANO_JOB_QUEUED, &jobs);
    if (rc)
        return rc;
    const pano_job *j = o->job ? pano_jobs_find(&jobs, o->job) : NULL;
    if (o->job && !j) {
        pano_error("workflow %s has no job %s", jobs.wf_uuid, o->job);
        pano_jobs_free(&jobs);
        return EXIT_UNKNOWN;
    }
    pano_series s;
    char err[1024];
    if (pano_query_series(o->q, &jobs, j, o->metric, o->step, &s, err, sizeof err) < 0) {
        pano_error("%s", err);
        pano_jobs_free(&jobs);
        return strstr(err, "unknown metric") || strstr(err, "points") ? 2 : EXIT_STORE;
    }
    if (o->json)
        print_json(pano_series_to_json(&s));
    else {
        /* a gauge: its mean over each bucket, and its peak */
        bool gauge = !s.metric->rate;
        char header[64], peak[64];
        snprintf(header, sizeof header, "%s%s (%s)", gauge ? "MEAN " : "", s.metric->name,
                 s.metric->unit);
        snprintf(peak, sizeof peak, "PEAK %s (%s)", s.metric->name, s.metric->unit);
        table_column cols[] = {{"TIME", false}, {header, true}, {peak, true}};
        table *t = table_new(cols, gauge ? 3 : 2);
        int decimals = time_decimals(s.step);
        for (size_t i = 0; i < s.n; i++) {
            char a[40], b[32], c[32];
            const char *row[] = {fmt_time_fraction(a, sizeof a, s.points[i].t, o->tsv, decimals),
                                 fmt_number(b, sizeof b, s.points[i].value, 3),
                                 fmt_number(c, sizeof c, s.points[i].peak, 3)};
            table_row(t, row);
        }
        table_print(t, stdout, o->tsv);
        table_free(t);
    }
    pano_series_free(&s);
    pano_jobs_free(&jobs);
    return 0;
}

static int cmd_metrics(opts *o)
{
    static const table_column cols[] = {{"METRIC", false}, {"UNIT", false}, {"KIND", false},
                                        {"WHAT", false}};
    table *t = table_new(cols, 4);
    for (const pano_metric_info *m = pano_series_metrics; m->name; m++) {
        const char *row[] = {m->name, m->unit, m->rate ? "rate" : "gauge", m->help};
        table_row(t, row);
    }
    table_print(t, stdout, o->tsv);
    table_free(t);
    return 0;
}

/* ---- anomalies ------------------------------------------------------------------- */

/* One pano.alert.<kind> event: the anomalous job's context, not pano-query's
 * own (which may be a job of the workflow asking about itself), and an
 * event_id that is the same every time the same anomaly is published. */
static pano_json *alert_event(pano_source *src, const pano_jobs *jobs, const pano_anomaly *a)
{
    char name[64];
    snprintf(name, sizeof name, "pano.alert.%s", pano_anomaly_kind_name(a->kind));
    pano_json *ev = pano_event_new(src, name);
    static const char *const context[] = {"dag_job_id", "condor_job_id", "xformation",
                                          "task_id",    "site",          "rank"};
    for (size_t i = 0; i < sizeof context / sizeof context[0]; i++)
        pano_json_remove(ev, context[i]);
    const pano_job *j = a->job;
    char *material = pano_asprintf("%s|%s|%s|%s", name, jobs->wf_uuid, j->id, a->metric);
    char id[33];
    pano_event_id_of(material, strlen(material), id);
    free(material);
    pano_json_set_str(ev, "event_id", id);
    pano_json_set_str(ev, "wf_uuid", jobs->wf_uuid);
    if (*jobs->wf_label)
        pano_json_set_str(ev, "wf_label", jobs->wf_label);
    if (*j->dag_job_id)
        pano_json_set_str(ev, "dag_job_id", j->dag_job_id);
    if (*j->transformation)
        pano_json_set_str(ev, "xformation", j->transformation);
    if (*j->site)
        pano_json_set_str(ev, "site", j->site);
    /* the fields of alert.schema.json */
    pano_json *doc = pano_anomalies_to_json(a, 1);
    pano_json *fields = pano_json_at(doc, 0);
    for (size_t i = 0; i < pano_json_len(fields); i++) {
        const char *k = pano_json_key_at(fields, i);
        const pano_json *v = pano_json_at(fields, i);
        if (strcmp(k, "transformation") == 0 || v->type == PANO_JSON_NULL)
            continue;
        pano_json_set(ev, strcmp(k, "host") == 0 ? "job_host" : k, pano_json_clone(v));
    }
    if (a->kind == PANO_ANOMALY_FAILED)
        pano_json_set_int(ev, "exitcode", j->exitcode);
    pano_json_free(doc);
    return ev;
}

static int publish(const pano_jobs *jobs, const pano_anomaly *a, size_t n,
                   pano_sink *sink, pano_source *src)
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        pano_json *ev = alert_event(src, jobs, &a[i]);
        char err[512];
        if (pano_sink_send(sink, ev, err, sizeof err) < 0) {
            pano_error("alert for %s not published: %s", a[i].job->id, err);
            failed++;
        }
        pano_json_free(ev);
    }
    if (n && !failed)
        pano_info("%zu alert(s) published to %s", n, pano_sink_describe(sink));
    return failed ? EXIT_STORE : 0;
}

static int cmd_anomalies(opts *o, const char *uuid)
{
    pano_sink *sink = NULL;
    pano_source *src = NULL;
    char err[1024];
    if (o->publish) {
        const char *url = pano_config_str(o->cfg, "pano.amqp.url");
        const char *file = pano_config_str(o->cfg, "pano.output");
        if (!(url && *url) && !(file && *file)) {
            pano_error("--publish needs a broker (pano.amqp.url, PANO_AMQP_URL) or a file "
                       "(pano.output)");
            return 2;
        }
        char canonical[PANO_WF_UUID_LEN + 1];
        if (pano_wf_uuid_normalize(uuid, canonical))
            pano_cli_set(o->cfg, "pano.wf_uuid", canonical);
        if (!(sink = pano_sink_open(o->cfg, err, sizeof err))) {
            pano_error("%s", err);
            return EXIT_STORE;
        }
        src = pano_source_new(o->cfg);
    }
    int rc;
    bool terminal = isatty(STDOUT_FILENO) && !o->json && !o->tsv;
    for (;;) {
        pano_jobs jobs;
        if ((rc = load(o, uuid, &jobs)) != 0)
            break;
        pano_anomaly *a;
        size_t n = pano_anomalies_find(&jobs, &a);
        if (o->watch > 0 && terminal)
            fputs("\033[H\033[2J", stdout);
        if (o->json)
            print_json(pano_anomalies_to_json(a, n));
        else {
            static const table_column cols[] = {
                {"KIND", false},  {"JOB", false},    {"TRANSFORMATION", false}, {"STATE", false},
                {"METRIC", false}, {"VALUE", true},  {"MEDIAN", true},          {"SCORE", true},
                {"PEERS", true}};
            table *t = table_new(cols, 9);
            for (size_t i = 0; i < n; i++) {
                char v[32], m[32], s[32], p[24];
                bool failed = a[i].kind == PANO_ANOMALY_FAILED;
                snprintf(p, sizeof p, "%zu", a[i].peers);
                const char *row[] = {pano_anomaly_kind_name(a[i].kind),
                                     a[i].job->id,
                                     a[i].job->transformation,
                                     pano_job_state_name(a[i].job->state),
                                     a[i].metric,
                                     failed ? exit_text(v, sizeof v, a[i].job)
                                            : fmt_number(v, sizeof v, a[i].value, 3),
                                     failed ? "" : fmt_number(m, sizeof m, a[i].median, 3),
                                     failed ? "" : fmt_number(s, sizeof s, a[i].score, 2),
                                     failed ? "" : p};
                table_row(t, row);
            }
            table_print(t, stdout, o->tsv);
            table_free(t);
        }
        fflush(stdout);
        if (sink)
            rc = publish(&jobs, a, n, sink, src);
        free(a);
        bool ended = jobs.wf_ended;
        pano_jobs_free(&jobs);
        if (rc || o->watch <= 0 || ended)
            break;
        for (double slept = 0; slept < o->watch && !stop; slept += 0.1)
            usleep(100000);
        if (stop)
            break;
    }
    pano_source_free(src);
    pano_sink_close(sink);
    return rc;
}

/* ---- main ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    char(*uuids)[PANO_WF_UUID_LEN + 1] = NULL; /* export's workflows */
    const char **wfs = NULL;
    pano_config *cfg = pano_cli_init("pano-query", argc, argv, false);
    if (!cfg)
        return 2;
    static const struct option options[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"tsv", no_argument, NULL, OPT_TSV},
        {"watch", required_argument, NULL, OPT_WATCH},
        {"since", required_argument, NULL, OPT_SINCE},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"state", required_argument, NULL, OPT_STATE},
        {"transformation", required_argument, NULL, OPT_TRANSFORMATION},
        {"metric", required_argument, NULL, OPT_METRIC},
        {"step", required_argument, NULL, OPT_STEP},
        {"job", required_argument, NULL, OPT_JOB},
        {"publish", no_argument, NULL, OPT_PUBLISH},
        {"es-url", required_argument, NULL, OPT_ES_URL},
        {"store", required_argument, NULL, OPT_STORE},
        {"output", required_argument, NULL, 'o'},
        {"redact", no_argument, NULL, OPT_REDACT},
        {"redact-transformations", no_argument, NULL, OPT_REDACT_TRANSFORMATIONS},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    opts o = {.cfg = cfg, .since = 30 * 86400.0, .limit = 50, .step = 10};
    int opt, rc = 2;
    while ((opt = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            goto out;
        if (handled)
            continue;
        char *end;
        switch (opt) {
        case OPT_JSON: o.json = true; break;
        case OPT_TSV: o.tsv = true; break;
        case OPT_WATCH:
        case OPT_SINCE:
        case OPT_STEP: {
            double d = pano_config_parse_duration(optarg);
            if (d <= 0) {
                pano_error("'%s' is not a duration (10s, 5m, 2h, 7d or seconds)", optarg);
                goto out;
            }
            *(opt == OPT_WATCH ? &o.watch : opt == OPT_SINCE ? &o.since : &o.step) = d;
            break;
        }
        case OPT_LIMIT:
            o.limit = strtol(optarg, &end, 10);
            if (end == optarg || *end || o.limit < 1 || o.limit > 10000) {
                pano_error("--limit expects 1 to 10000, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_STATE: o.state = optarg; break;
        case OPT_TRANSFORMATION: o.transformation = optarg; break;
        case OPT_METRIC: o.metric = optarg; break;
        case OPT_JOB: o.job = optarg; break;
        case OPT_PUBLISH: o.publish = true; break;
        case OPT_ES_URL:
            if (pano_cli_set(cfg, "pano.es.url", optarg) < 0)
                goto out;
            break;
        case 'o': o.output = optarg; break;
        case OPT_REDACT: o.redact = true; break;
        case OPT_REDACT_TRANSFORMATIONS: o.redact_transformations = true; break;
        case OPT_STORE:
            if (pano_cli_add(cfg, "pano.store", optarg) < 0)
                goto out;
            break;
        case 'h':
            usage(stdout);
            rc = 0;
            goto out;
        default: usage(stderr); goto out;
        }
    }
    pano_cli_apply_logging(cfg);
    if (o.json && o.tsv) {
        pano_error("--json and --tsv: choose one");
        goto out;
    }
    if (optind >= argc) {
        usage(stderr);
        goto out;
    }
    const char *cmd = argv[optind];
    int nargs = argc - optind - 1;
    static const struct {
        const char *name;
        int args;
    } commands[] = {{"workflows", 0}, {"status", 1},    {"stats", 1},   {"jobs", 1},
                    {"job", 2},       {"series", 1},    {"anomalies", 1}, {"metrics", 0},
                    {"rejected", 0},  {"export", -1},   {"import", 1}};
    size_t c = 0;
    while (c < sizeof commands / sizeof commands[0] && strcmp(commands[c].name, cmd) != 0)
        c++;
    if (c == sizeof commands / sizeof commands[0]) {
        pano_error("unknown command '%s' (pano-query --help lists them)", cmd);
        goto out;
    }
    if (commands[c].args < 0 ? nargs < 1 : nargs != commands[c].args) {
        pano_error("%s takes %s", cmd,
                   commands[c].args < 0     ? "one or more workflow UUIDs"
                   : commands[c].args == 0  ? "no argument"
                   : strcmp(cmd, "import") == 0 ? "one argument, the file"
                   : commands[c].args == 1  ? "one argument, the workflow UUID"
                                            : "two arguments, the workflow UUID and the job");
        goto out;
    }
    if (strcmp(cmd, "import") == 0) {
        rc = cmd_import(&o, argv[optind + 1]);
        goto out;
    }
    if (strcmp(cmd, "metrics") == 0) {
        rc = cmd_metrics(&o);
        goto out;
    }
    /* the workflow UUIDs (export's all its arguments, the others' the first),
     * each checked and canonical */
    int nuuids = nargs == 0 ? 0 : commands[c].args < 0 ? nargs : 1;
    uuids = pano_calloc((size_t)nuuids + 1, sizeof *uuids);
    wfs = pano_calloc((size_t)nuuids + 1, sizeof *wfs);
    for (int i = 0; i < nuuids; i++) {
        const char *u = argv[optind + 1 + i];
        if (!pano_wf_uuid_normalize(u, uuids[i])) {
            pano_error("'%.80s' is not a workflow UUID (8-4-4-4-12 hexadecimal digits)", u);
            goto out;
        }
        wfs[i] = uuids[i];
    }
    const char *canonical = uuids[0];
    char err[1024];
    if (!(o.q = pano_query_new(cfg, err, sizeof err))) {
        pano_error("%s", err);
        rc = 2;
        goto out;
    }
    if (pano_cli_catch_stop_signals(on_signal, 0) < 0) {
        rc = 1;
        goto out;
    }
    if (strcmp(cmd, "workflows") == 0)
        rc = cmd_workflows(&o);
    else if (strcmp(cmd, "rejected") == 0)
        rc = cmd_rejected(&o);
    else if (strcmp(cmd, "export") == 0)
        rc = cmd_export(&o, wfs, (size_t)nargs);
    else if (strcmp(cmd, "status") == 0)
        rc = cmd_status(&o, canonical);
    else if (strcmp(cmd, "stats") == 0)
        rc = cmd_stats(&o, canonical);
    else if (strcmp(cmd, "jobs") == 0)
        rc = cmd_jobs(&o, canonical);
    else if (strcmp(cmd, "job") == 0)
        rc = cmd_job(&o, canonical, argv[optind + 2]);
    else if (strcmp(cmd, "series") == 0)
        rc = cmd_series(&o, canonical);
    else
        rc = cmd_anomalies(&o, canonical);
out:
    free(uuids);
    free(wfs);
    pano_query_free(o.q);
    pano_config_free(cfg);
    return rc;
}
