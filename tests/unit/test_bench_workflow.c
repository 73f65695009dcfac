/* The benchmarks' big workflow (tests/tools/bench_workflow.c): each shape's
 * events, counted and checked against what its header promises, with the
 * answers worked out by hand. */
#include "bench_workflow.h"
#include "json.h"
#include "mem.h"
#include "testutil.h"

#include <math.h>
#include <string.h>

#define WF "0b6a5c1e-3f2d-4c8b-9e7a-1d2c3b4a5f60"
#define NOW 1795000000.0

typedef struct {
    pano_json **events;
    size_t n, cap;
} captured;

static int capture(const char *event, const char *text, size_t len, void *user)
{
    captured *c = user;
    char err[256];
    pano_json *doc = pano_json_parse(text, len, 0, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s: %s", err, text);
    ck_assert_str_eq(pano_json_get_str(doc, "event"), event);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        c->events = pano_reallocarray(c->events, c->cap, sizeof *c->events);
    }
    c->events[c->n++] = doc;
    return 0;
}

static void captured_free(captured *c)
{
    for (size_t i = 0; i < c->n; i++)
        pano_json_free(c->events[i]);
    free(c->events);
}

static captured write_all(const bench_workflow *w)
{
    captured c = {0};
    ck_assert_int_eq(bench_workflow_write(w, capture, &c), (long long)bench_workflow_count(w));
    ck_assert_int_eq((long long)c.n, bench_workflow_count(w));
    return c;
}

static size_t count_of(const captured *c, const char *event)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        n += strcmp(pano_json_get_str(c->events[i], "event"), event) == 0;
    return n;
}

static double number(const pano_json *doc, const char *key)
{
    double v = NAN;
    ck_assert_msg(pano_json_get_number(doc, key, &v), "no number %s", key);
    return v;
}

/* The events of one job (dag_job_id or job_id), in order. */
static size_t of_job(const captured *c, const char *job, const pano_json **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n && n < max; i++) {
        const char *id = pano_json_get_str(c->events[i], "dag_job_id");
        if (!id)
            id = pano_json_get_str(c->events[i], "job_id");
        if (id && strcmp(id, job) == 0)
            out[n++] = c->events[i];
    }
    return n;
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void assert_ids_unique(const captured *c)
{
    const char **ids = pano_calloc(c->n, sizeof *ids);
    for (size_t i = 0; i < c->n; i++) {
        ids[i] = pano_json_get_str(c->events[i], "event_id");
        ck_assert_ptr_nonnull(ids[i]);
        ck_assert_str_eq(pano_json_get_str(c->events[i], "wf_uuid"), WF);
    }
    qsort(ids, c->n, sizeof *ids, by_str);
    for (size_t i = 1; i < c->n; i++)
        ck_assert_msg(strcmp(ids[i - 1], ids[i]) != 0, "event_id %s twice", ids[i]);
    free(ids);
}

START_TEST(shape_names)
{
    bench_shape s;
    ck_assert(bench_shape_parse("pegasus", &s) && s == BENCH_SHAPE_PEGASUS);
    ck_assert(bench_shape_parse("monitor", &s) && s == BENCH_SHAPE_MONITOR);
    ck_assert(!bench_shape_parse("Pegasus", &s));
    ck_assert_int_eq(bench_shape_default_samples(BENCH_SHAPE_PEGASUS), 12);
    ck_assert_int_eq(bench_shape_default_samples(BENCH_SHAPE_MONITOR), 100);
}
END_TEST

/* 300 jobs of Pegasus's shape: 290 end (16 events each), 10 do not (start,
 * 6 samples, main.start: 8 each), and the xwf.start: 1 + 4640 + 80. Jobs 7,
 * 107 and 207 fail. */
START_TEST(pegasus_counts)
{
    bench_workflow w = {BENCH_SHAPE_PEGASUS, 300, 12, WF, "run", NOW};
    ck_assert_int_eq(bench_workflow_count(&w), 4721);
    ck_assert_int_eq(bench_workflow_failed(&w), 3);
    ck_assert_int_eq(bench_workflow_unended(&w), 10);
    captured c = write_all(&w);
    ck_assert_str_eq(pano_json_get_str(c.events[0], "event"), "stampede.xwf.start");
    ck_assert_int_eq(count_of(&c, "stampede.xwf.start"), 1);
    ck_assert_int_eq(count_of(&c, "kickstart.inv.start"), 300);
    ck_assert_int_eq(count_of(&c, "kickstart.inv.online"), 290 * 12 + 10 * 6);
    ck_assert_int_eq(count_of(&c, "kickstart.inv.end"), 290);
    ck_assert_int_eq(count_of(&c, "stampede.job_inst.main.start"), 300);
    ck_assert_int_eq(count_of(&c, "stampede.job_inst.main.end"), 290);
    size_t failed_ends = 0, failed_insts = 0;
    for (size_t i = 0; i < c.n; i++) {
        const pano_json *e = c.events[i];
        const char *name = pano_json_get_str(e, "event");
        /* as Pegasus's kickstart sends them: cumulative, no delta */
        if (strcmp(name, "kickstart.inv.online") == 0)
            ck_assert_ptr_null(pano_json_get(e, "delta"));
        if (strcmp(name, "kickstart.inv.end") == 0 && number(e, "exitcode") != 0)
            failed_ends++;
        if (strcmp(name, "stampede.job_inst.main.end") == 0 &&
            strcmp(pano_json_get_str(e, "exitcode"), "0") != 0) {
            ck_assert_str_eq(pano_json_get_str(e, "exitcode"), "256");
            ck_assert_int_eq((int)number(e, "status"), -1);
            failed_insts++;
        }
        if (strncmp(name, "stampede.", 9) == 0)
            ck_assert_str_eq(pano_json_get_str(e, "xwf_id"), WF);
    }
    ck_assert_int_eq(failed_ends, 3);
    ck_assert_int_eq(failed_insts, 3);
    assert_ids_unique(&c);
    captured_free(&c);
}
END_TEST

/* Job 107 fails: its kickstart run and its job instance (job_id = the DAG
 * job id, job_inst_id 108) say so, the run inside the instance's time. */
START_TEST(pegasus_one_job)
{
    bench_workflow w = {BENCH_SHAPE_PEGASUS, 300, 12, WF, "run", NOW};
    captured c = write_all(&w);
    const pano_json *ev[32];
    ck_assert_int_eq(of_job(&c, "job_ID00107", ev, 32), 16);
    ck_assert_str_eq(pano_json_get_str(ev[0], "event"), "stampede.job_inst.main.start");
    ck_assert_str_eq(pano_json_get_str(ev[1], "event"), "kickstart.inv.start");
    ck_assert_str_eq(pano_json_get_str(ev[14], "event"), "kickstart.inv.end");
    ck_assert_str_eq(pano_json_get_str(ev[15], "event"), "stampede.job_inst.main.end");
    ck_assert_int_eq((int)number(ev[0], "job_inst_id"), 108);
    ck_assert_int_eq((int)number(ev[15], "job_inst_id"), 108);
    ck_assert_int_eq((int)number(ev[14], "exitcode"), 1);
    ck_assert_int_eq((int)number(ev[1], "pid"), 10107);
    ck_assert_str_eq(pano_json_get_str(ev[1], "hostname"), "node-07.example.org");
    /* t0 = now - (300 * 0.35 + 12 + 60); job 107 starts 107 * 0.35 s later */
    double start = NOW - 177 + 107 * 0.35;
    ck_assert_double_eq_tol(number(ev[1], "ts"), start, 1e-6);
    ck_assert_double_eq_tol(number(ev[13], "ts"), start + 12, 1e-6);
    ck_assert_double_eq_tol(number(ev[14], "ts"), start + 12.2, 1e-6);
    ck_assert_double_eq(number(ev[0], "ts"), floor(start));
    ck_assert_double_eq(number(ev[15], "ts"), ceil(start + 12.2) + 1);
    ck_assert_double_eq(number(ev[15], "local_dur"), ceil(start + 12.2) + 1 - floor(start));
    /* xf_7 burns 0.85 CPU s a second: utime of the last sample 12 * 0.85 */
    ck_assert_double_eq_tol(number(ev[13], "utime"), 10.2, 1e-9);
    ck_assert_double_eq(number(ev[13], "rchar"), 1580 + 12 * 65536);
    ck_assert_double_eq_tol(number(ev[14], "remote_cpu_time"), 10.2 + 0.24, 1e-9);
    /* the last job never ends: start, 6 samples, main.start */
    ck_assert_int_eq(of_job(&c, "job_ID00299", ev, 32), 8);
    captured_free(&c);
}
END_TEST

/* pano-monitor's shape, 30 jobs: 10 end (102 events each), the last 20 do
 * not (start and 50 samples); job 5 fails. */
START_TEST(monitor_counts_and_deltas)
{
    bench_workflow w = {BENCH_SHAPE_MONITOR, 30, 100, WF, "run", NOW};
    ck_assert_int_eq(bench_workflow_count(&w), 10 * 102 + 20 * 51);
    ck_assert_int_eq(bench_workflow_failed(&w), 1);
    ck_assert_int_eq(bench_workflow_unended(&w), 20);
    captured c = write_all(&w);
    ck_assert_int_eq(count_of(&c, "kickstart.inv.end"), 10);
    const pano_json *ev[128];
    /* an ended job's deltas bring its gauges back to zero and add up to
     * its totals: 99 s at 0.75 CPU s a second for xf_5 */
    ck_assert_int_eq(of_job(&c, "job_ID00005", ev, 128), 102);
    double rss = 0, utime = 0;
    for (size_t i = 1; i < 101; i++) {
        const pano_json *d = pano_json_get(ev[i], "delta");
        ck_assert_ptr_nonnull(d);
        rss += number(d, "rss");
        utime += number(d, "utime");
    }
    ck_assert_double_eq(rss, 0);
    ck_assert_double_eq_tol(utime, 99 * 0.75, 1e-6);
    ck_assert_int_eq((int)number(ev[101], "exitcode"), 1);
    /* a job that never ended holds its memory: 20000 + (12 % 7) * 1000 kB */
    ck_assert_int_eq(of_job(&c, "job_ID00012", ev, 128), 51);
    rss = 0;
    for (size_t i = 1; i < 51; i++)
        rss += number(pano_json_get(ev[i], "delta"), "rss");
    ck_assert_double_eq(rss, 25000);
    assert_ids_unique(&c);
    captured_free(&c);
}
END_TEST

static int stop_after_three(const char *event, const char *text, size_t len, void *user)
{
    (void)event, (void)text, (void)len;
    return ++*(int *)user == 3;
}

START_TEST(emit_failure_stops)
{
    bench_workflow w = {BENCH_SHAPE_PEGASUS, 10, 12, WF, "run", NOW};
    int calls = 0;
    ck_assert_int_eq(bench_workflow_write(&w, stop_after_three, &calls), -1);
    ck_assert_int_eq(calls, 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bench_workflow");
    TCase *tc = tcase_create("shapes");
    tcase_add_test(tc, shape_names);
    tcase_add_test(tc, pegasus_counts);
    tcase_add_test(tc, pegasus_one_job);
    tcase_add_test(tc, monitor_counts_and_deltas);
    tcase_add_test(tc, emit_failure_stops);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
