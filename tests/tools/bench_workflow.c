#include "bench_workflow.h"

#include "buf.h"
#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define JOB_SPACING 0.35 /* s between two jobs' starts */
#define MONITOR_UNENDED 20
#define PEGASUS_UNENDED 10

bool bench_shape_parse(const char *name, bench_shape *out)
{
    if (strcmp(name, "monitor") == 0)
        *out = BENCH_SHAPE_MONITOR;
    else if (strcmp(name, "pegasus") == 0)
        *out = BENCH_SHAPE_PEGASUS;
    else
        return false;
    return true;
}

int bench_shape_default_samples(bench_shape shape)
{
    return shape == BENCH_SHAPE_PEGASUS ? 12 : 100;
}

static long long unended_of(const bench_workflow *w)
{
    long long n = w->shape == BENCH_SHAPE_PEGASUS ? PEGASUS_UNENDED : MONITOR_UNENDED;
    return n < w->jobs ? n : w->jobs;
}

static bool ends(const bench_workflow *w, long long j)
{
    return j < w->jobs - unended_of(w);
}

static bool fails(const bench_workflow *w, long long j)
{
    return ends(w, j) && (w->shape == BENCH_SHAPE_PEGASUS ? j % 100 == 7 : j % 33 == 5);
}

/* Samples of job j: all of them when it ends, else half. */
static int samples_of(const bench_workflow *w, long long j)
{
    return ends(w, j) ? w->samples : w->samples / 2;
}

long long bench_workflow_unended(const bench_workflow *w)
{
    return unended_of(w);
}

long long bench_workflow_failed(const bench_workflow *w)
{
    long long n = 0;
    for (long long j = 0; j < w->jobs; j++)
        n += fails(w, j);
    return n;
}

long long bench_workflow_count(const bench_workflow *w)
{
    long long ended = w->jobs - unended_of(w), unended = unended_of(w);
    /* kickstart start, samples, end; pegasus adds main.start and main.end */
    long long per_ended = 2 + w->samples, per_unended = 1 + w->samples / 2;
    if (w->shape == BENCH_SHAPE_MONITOR)
        return ended * per_ended + unended * per_unended;
    return 1 + ended * (per_ended + 2) + unended * (per_unended + 1);
}

/* ---- writing one event ----------------------------------------------------- */

typedef struct {
    const bench_workflow *w;
    bench_emit emit;
    void *user;
    pano_buf buf;
    pano_json_writer *out;
    uint64_t id_seed;
    long long events;
    double t0; /* the first job's start */
} gen;

static void begin(gen *g, const char *event, double ts, int decimals)
{
    pano_buf_clear(&g->buf);
    g->out = pano_json_writer_new(&g->buf);
    pano_json_write_object_open(g->out);
    pano_json_write_key(g->out, "event");
    pano_json_write_str(g->out, event);
    pano_json_write_key(g->out, "ts");
    if (decimals == 0)
        pano_json_write_int(g->out, (int64_t)ts);
    else
        pano_json_write_double(g->out, ts, decimals);
}

static int finish(gen *g, const char *event)
{
    pano_json_write_object_close(g->out);
    pano_json_writer_free(g->out);
    g->out = NULL;
    g->events++;
    return g->emit(event, g->buf.data, g->buf.len, g->user);
}

static void str(gen *g, const char *key, const char *value)
{
    pano_json_write_key(g->out, key);
    pano_json_write_str(g->out, value);
}

static void num(gen *g, const char *key, int64_t value)
{
    pano_json_write_key(g->out, key);
    pano_json_write_int(g->out, value);
}

static void real(gen *g, const char *key, double value)
{
    pano_json_write_key(g->out, key);
    pano_json_write_double(g->out, value, 3);
}

/* The task's command line, as both publishers give it in kickstart.inv.start. */
static void argv(gen *g)
{
    pano_json_write_key(g->out, "argv");
    pano_json_write_array_open(g->out);
    pano_json_write_str(g->out, "/opt/app/xf");
    pano_json_write_str(g->out, "-i");
    pano_json_write_str(g->out, "in.dat");
    pano_json_write_array_close(g->out);
}

/* splitmix64's finalizer: a bijection, so distinct inputs give distinct ids. */
static uint64_t mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The 32 hexadecimal digits pano-bridge gives an event that came without an
 * event_id; here one of the run's numbered ids. */
static void hashed_event_id(gen *g)
{
    char id[33];
    uint64_t k = 2 * (uint64_t)g->events;
    snprintf(id, sizeof id, "%016llx%016llx", (unsigned long long)mix(g->id_seed + k),
             (unsigned long long)mix(g->id_seed + k + 1));
    str(g, "event_id", id);
}

/* ---- pano-monitor's shape ---------------------------------------------------- */

static void monitor_envelope(gen *g, long long j, int seq)
{
    char buf[96];
    snprintf(buf, sizeof buf, "%s-%lld-%d", g->w->run_id, j, seq);
    str(g, "event_id", buf);
    num(g, "seq", seq);
    snprintf(buf, sizeof buf, "node-%02lld.example.org", j % 50);
    str(g, "hostname", buf);
    str(g, "wf_uuid", g->w->wf_uuid);
    str(g, "wf_label", "bench");
    snprintf(buf, sizeof buf, "job_ID%05lld", j);
    str(g, "dag_job_id", buf);
    snprintf(buf, sizeof buf, "xf_%lld", j % 10);
    str(g, "xformation", buf);
    str(g, "site", "bench");
    num(g, "pid", 10000 + j);
    str(g, "exe", "/opt/app/xf");
}

static int monitor_job(gen *g, long long j)
{
    const bench_workflow *w = g->w;
    double start = g->t0 + (double)j * JOB_SPACING;
    int n = samples_of(w, j);
    bool ended = ends(w, j);
    double cpu_rate = 0.5 + (double)(j % 10) * 0.05;
    int64_t rss_running = 20000 + (j % 7) * 1000;

    begin(g, "kickstart.inv.start", start, 6);
    monitor_envelope(g, j, 1);
    argv(g);
    real(g, "interval", 1);
    if (finish(g, "kickstart.inv.start"))
        return -1;

    double u = 0;
    int64_t rchar = 0, rss = 0;
    for (int s = 0; s < n; s++) {
        double du = s ? cpu_rate : 0;
        int64_t dr = s ? 65536 : 1580;
        u += du;
        rchar += dr;
        const char *kind = s == 0 ? "start" : s == n - 1 && ended ? "end" : "periodic";
        bool last = strcmp(kind, "end") == 0;
        int64_t procs = last ? 0 : 1;
        int64_t drss = (last || s == 0 ? 0 : rss_running) - rss;
        rss += drss;
        int64_t dprocs = last ? -1 : s == 0 ? 1 : 0;
        begin(g, "kickstart.inv.online", start + s, 6);
        monitor_envelope(g, j, s + 2);
        real(g, "utime", u);
        real(g, "stime", 0);
        real(g, "iowait", 0);
        num(g, "vm", rss * 2);
        num(g, "rss", rss);
        num(g, "procs", procs);
        num(g, "threads", procs);
        num(g, "bread", 0);
        num(g, "bwrite", 0);
        num(g, "rchar", rchar);
        num(g, "wchar", 0);
        num(g, "syscr", s + 1);
        num(g, "syscw", 0);
        str(g, "sample", kind);
        real(g, "interval", 1);
        pano_json_write_key(g->out, "delta");
        pano_json_write_object_open(g->out);
        real(g, "utime", du);
        num(g, "stime", 0);
        num(g, "iowait", 0);
        num(g, "vm", drss * 2);
        num(g, "rss", drss);
        num(g, "procs", dprocs);
        num(g, "threads", dprocs);
        num(g, "bread", 0);
        num(g, "bwrite", 0);
        num(g, "rchar", dr);
        num(g, "wchar", 0);
        num(g, "syscr", 1);
        num(g, "syscw", 0);
        pano_json_write_object_close(g->out);
        if (finish(g, "kickstart.inv.online"))
            return -1;
    }
    if (!ended)
        return 0;
    int code = fails(w, j) ? 1 : 0;
    double dur = n - 1;
    begin(g, "kickstart.inv.end", start + dur, 6);
    monitor_envelope(g, j, n + 2);
    num(g, "exitcode", code);
    num(g, "signal", 0);
    num(g, "status", code ? 1 : 0);
    real(g, "duration", dur);
    real(g, "utime", u);
    real(g, "stime", 0);
    real(g, "remote_cpu_time", u);
    num(g, "maxrss", rss_running);
    pano_json_write_key(g->out, "final");
    pano_json_write_object_open(g->out);
    real(g, "utime", u);
    real(g, "stime", 0);
    num(g, "rchar", rchar);
    num(g, "wchar", 0);
    num(g, "rss", 0);
    num(g, "procs", 0);
    pano_json_write_object_close(g->out);
    num(g, "samples", n);
    return finish(g, "kickstart.inv.end") ? -1 : 0;
}

/* ---- Pegasus's shape ----------------------------------------------------------- */

/* The context Panorama's kickstart puts in each of its events. */
static void kickstart_envelope(gen *g, long long j)
{
    char buf[96];
    hashed_event_id(g);
    snprintf(buf, sizeof buf, "node-%02lld.example.org", j % 50);
    str(g, "hostname", buf);
    str(g, "site", "condorpool");
    str(g, "wf_uuid", g->w->wf_uuid);
    str(g, "wf_label", "bench");
    snprintf(buf, sizeof buf, "job_ID%05lld", j);
    str(g, "dag_job_id", buf);
    snprintf(buf, sizeof buf, "%lld.0", 1000 + j);
    str(g, "condor_job_id", buf);
    snprintf(buf, sizeof buf, "bench::xf_%lld:1.0", j % 10);
    str(g, "xformation", buf);
    snprintf(buf, sizeof buf, "ID%07lld", j + 1);
    str(g, "task_id", buf);
    num(g, "pid", 10000 + j);
    str(g, "exe", "/opt/app/xf");
}

/* The workflow context pegasus-monitord (Pegasus >= 4.9.2) adds to every
 * stampede event, then what pano-bridge adds. */
static void stampede_tail(gen *g)
{
    const char *wf = g->w->wf_uuid;
    str(g, "root_xwf_id", wf);
    str(g, "dax", "/home/bench/workflow.yml");
    str(g, "dag", "bench-0.dag");
    num(g, "wf_ts", (int64_t)g->t0 - 10);
    str(g, "submit_dir", "/home/bench/submit/bench/pegasus/bench/run0001");
    str(g, "pegasus_version", "5.0.5");
    str(g, "submit_hostname", "submit.example.org");
    str(g, "wf_user", "bench");
    str(g, "wf_uuid", wf);
    hashed_event_id(g);
}

/* The job instance's fields that main.start and main.end share. */
static void job_inst(gen *g, long long j, int js_id)
{
    char buf[96];
    str(g, "xwf_id", g->w->wf_uuid);
    snprintf(buf, sizeof buf, "job_ID%05lld", j);
    str(g, "job_id", buf);
    num(g, "job_inst_id", j + 1);
    num(g, "js_id", js_id);
    snprintf(buf, sizeof buf, "00/00/job_ID%05lld.in", j);
    str(g, "stdin_file", buf);
    snprintf(buf, sizeof buf, "%lld.0", 1000 + j);
    str(g, "sched_id", buf);
}

static int pegasus_workflow_start(gen *g)
{
    begin(g, "stampede.xwf.start", g->t0 - 5, 6);
    str(g, "xwf_id", g->w->wf_uuid);
    pano_json_write_key(g->out, "reason");
    pano_json_write_null(g->out);
    num(g, "restart_count", 0);
    stampede_tail(g);
    return finish(g, "stampede.xwf.start");
}

static int pegasus_job(gen *g, long long j)
{
    const bench_workflow *w = g->w;
    double start = g->t0 + (double)j * JOB_SPACING;
    int n = samples_of(w, j);
    bool ended = ends(w, j);
    int code = fails(w, j) ? 1 : 0;
    double cpu_rate = 0.5 + (double)(j % 10) * 0.05;
    int64_t rss = 20000 + (j % 7) * 1000;
    char buf[96];

    /* DAGMan's EXECUTE, the second before kickstart starts the task */
    double inst_start = floor(start);
    begin(g, "stampede.job_inst.main.start", inst_start, 0);
    job_inst(g, j, 2);
    snprintf(buf, sizeof buf, "00/00/job_ID%05lld.out", j);
    str(g, "stdout_file", buf);
    snprintf(buf, sizeof buf, "00/00/job_ID%05lld.err", j);
    str(g, "stderr_file", buf);
    stampede_tail(g);
    if (finish(g, "stampede.job_inst.main.start"))
        return -1;

    begin(g, "kickstart.inv.start", start, 6);
    kickstart_envelope(g, j);
    argv(g);
    if (finish(g, "kickstart.inv.start"))
        return -1;

    /* cumulative counters; the gauges of the one running process */
    double u = 0, st = 0;
    int64_t rchar = 0, wchar = 0;
    for (int s = 1; s <= n; s++) {
        u = cpu_rate * s;
        st = 0.02 * s;
        rchar = 1580 + 65536LL * s;
        wchar = 4096LL * s;
        begin(g, "kickstart.inv.online", start + s, 6);
        kickstart_envelope(g, j);
        num(g, "rank", 0);
        real(g, "utime", u);
        real(g, "stime", st);
        real(g, "iowait", 0);
        num(g, "vm", rss * 2);
        num(g, "rss", rss);
        num(g, "procs", 1);
        num(g, "threads", 2);
        num(g, "bread", 0);
        num(g, "bwrite", wchar);
        num(g, "rchar", rchar);
        num(g, "wchar", wchar);
        num(g, "syscr", 2LL * s);
        num(g, "syscw", s);
        num(g, "bsend", 0);
        num(g, "brecv", 0);
        if (finish(g, "kickstart.inv.online"))
            return -1;
    }
    if (!ended)
        return 0;

    double dur = n + 0.2;
    begin(g, "kickstart.inv.end", start + dur, 6);
    kickstart_envelope(g, j);
    num(g, "exitcode", code);
    num(g, "signal", 0);
    num(g, "status", code);
    real(g, "duration", dur);
    real(g, "utime", u);
    real(g, "stime", st);
    real(g, "remote_cpu_time", u + st);
    real(g, "avg_cpu", (u + st) / dur);
    num(g, "maxrss", rss);
    pano_json_write_key(g->out, "final");
    pano_json_write_object_open(g->out);
    real(g, "utime", u);
    real(g, "stime", st);
    num(g, "rchar", rchar);
    num(g, "wchar", wchar);
    num(g, "rss", 0);
    num(g, "procs", 0);
    pano_json_write_object_close(g->out);
    if (finish(g, "kickstart.inv.end"))
        return -1;

    /* DAGMan's JOB_TERMINATED, the second after kickstart ends */
    double inst_end = ceil(start + dur) + 1;
    begin(g, "stampede.job_inst.main.end", inst_end, 0);
    job_inst(g, j, 4);
    str(g, "site", "condorpool");
    str(g, "user", "bench");
    num(g, "local_dur", (int64_t)(inst_end - inst_start));
    str(g, "multiplier_factor", "1");
    str(g, "exitcode", code ? "256" : "0"); /* a raw wait status, as a string */
    num(g, "status", code ? -1 : 0);
    snprintf(buf, sizeof buf, "/var/lib/condor/execute/dir_%lld", 1000 + j);
    str(g, "work_dir", buf);
    snprintf(buf, sizeof buf, "00/00/job_ID%05lld.out.000", j);
    str(g, "stdout_file", buf);
    snprintf(buf, sizeof buf, "00/00/job_ID%05lld.err.000", j);
    str(g, "stderr_file", buf);
    str(g, "stdout_text", "#@ 1 stdout%0A%0A#@ 1 stderr%0A%0A");
    str(g, "stderr_text", code ? "xf: exit 1%0A" : "");
    stampede_tail(g);
    return finish(g, "stampede.job_inst.main.end") ? -1 : 0;
}

long long bench_workflow_write(const bench_workflow *w, bench_emit emit, void *user)
{
    gen g = {.w = w, .emit = emit, .user = user};
    /* FNV-1a of the run id: the first of the run's event id numbers */
    g.id_seed = 0xcbf29ce484222325ULL;
    for (const char *p = w->run_id; *p; p++)
        g.id_seed = (g.id_seed ^ (unsigned char)*p) * 0x100000001b3ULL;
    g.t0 = w->now - ((double)w->jobs * JOB_SPACING + w->samples + 60);
    int rc = 0;
    if (w->shape == BENCH_SHAPE_PEGASUS)
        rc = pegasus_workflow_start(&g);
    for (long long j = 0; j < w->jobs && rc == 0; j++)
        rc = w->shape == BENCH_SHAPE_PEGASUS ? pegasus_job(&g, j) : monitor_job(&g, j);
    pano_buf_free(&g.buf);
    return rc ? -1 : g.events;
}
