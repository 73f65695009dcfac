/* The deltas pano-indexer gives samples that come without one
 * (indexer/deltas.h) and the bounded table it keeps runs in
 * (indexer/run_table.h): the arithmetic, the first sample, late samples and
 * copies, the closing sample, runs left alone, the bound and its eviction,
 * and the lookups that recover a run not in the table. */
#include "deltas.h"
#include "json.h"
#include "run_table.h"
#include "sample.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WF "0f5e8a43-2b7c-4d1e-9a6f-3c2b1a0d9e8f"
#define WF2 "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"

/* ---- the table ------------------------------------------------------------- */

static char evicted_keys[8][32];
static int nevicted;

static void on_evict(const char *key, void *value, void *user)
{
    (void)user;
    ck_assert_int_eq(*(int *)value, key[0]); /* the value set when added */
    snprintf(evicted_keys[nevicted++ % 8], sizeof evicted_keys[0], "%s", key);
}

static void put(run_table *t, const char *key, int partition)
{
    *(int *)run_table_add(t, key, partition) = key[0];
}

START_TEST(table_bound_and_eviction)
{
    nevicted = 0;
    run_table *t = run_table_new(3, sizeof(int), on_evict, NULL);
    put(t, "a", 0);
    put(t, "b", 0);
    put(t, "c", 1);
    ck_assert_uint_eq(run_table_count(t), 3);
    /* finding a makes it the most recently used: b is the oldest now */
    ck_assert_ptr_nonnull(run_table_find(t, "a"));
    put(t, "d", 1);
    ck_assert_uint_eq(run_table_count(t), 3);
    ck_assert_int_eq(nevicted, 1);
    ck_assert_str_eq(evicted_keys[0], "b");
    ck_assert_ptr_null(run_table_find(t, "b"));
    put(t, "e", 0); /* c: a was found after it */
    ck_assert_str_eq(evicted_keys[1], "c");
    ck_assert_int_eq(*(int *)run_table_find(t, "a"), 'a');
    /* removing and forgetting a partition */
    ck_assert(run_table_remove(t, "a"));
    ck_assert(!run_table_remove(t, "a"));
    ck_assert_uint_eq(run_table_forget_partition(t, 1), 1); /* d */
    ck_assert_uint_eq(run_table_count(t), 1);
    ck_assert_ptr_nonnull(run_table_find(t, "e"));
    ck_assert_int_eq(nevicted, 2); /* removing is not evicting */
    run_table_free(t);
}
END_TEST

START_TEST(table_grows)
{
    run_table *t = run_table_new(20000, sizeof(int), NULL, NULL);
    char key[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "run-%d", i);
        *(int *)run_table_add(t, key, i % 4) = i;
    }
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "run-%d", i);
        int *v = run_table_find(t, key);
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(*v, i);
    }
    ck_assert_uint_eq(run_table_forget_partition(t, 2), 5000);
    ck_assert_uint_eq(run_table_count(t), 15000);
    run_table_free(t);
}
END_TEST

/* ---- events ---------------------------------------------------------------- */

static int64_t next_offset;

/* A run event of workflow wf as JSON: kind start, online or end; for a
 * sample, its values (rss, utime, rchar), its own delta when own_delta. */
static char *event_json(const char *wf, const char *kind, const char *job, int pid, double ts,
                        const char *id, const char *extra)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    fprintf(f,
            "{\"event\":\"kickstart.inv.%s\",\"ts\":%.3f,\"event_id\":\"%s\",\"hostname\":"
            "\"node-1\",\"wf_uuid\":\"%s\",\"dag_job_id\":\"%s\",\"pid\":%d,\"xformation\":"
            "\"pegasus::x\"%s%s}",
            kind, ts, id, wf, job, pid, extra && *extra ? "," : "", extra ? extra : "");
    fclose(f);
    return s;
}

static char *sample_fields(double utime, long rss, long rchar)
{
    char *s;
    ck_assert_int_ge(asprintf(&s,
                              "\"utime\":%.3f,\"stime\":0.5,\"iowait\":0,\"vm\":%ld,\"rss\":%ld,"
                              "\"procs\":1,\"threads\":2,\"bread\":0,\"bwrite\":0,\"rchar\":%ld,"
                              "\"wchar\":10,\"syscr\":3,\"syscw\":4",
                              utime, 2 * rss, rss, rchar),
                     0);
    return s;
}

/* One event through the deltas of a one-event batch: lookups none. */
typedef struct {
    char *json;
    pano_run_event *ev;
    pano_run_change ch;
    pano_json *doc; /* ch.doc parsed */
    pano_json *closing;
} passed;

static void pass_free(passed *p)
{
    free(p->json);
    pano_run_event_free(p->ev);
    free(p->ch.doc);
    free(p->ch.closing);
    pano_json_free(p->doc);
    pano_json_free(p->closing);
}

/* The tree pano_run_change_tree makes of ch from the event's own tree (read
 * as the store's checks read it) is the tree of ch->doc, parsed: members,
 * order and values; none when the event's members were written again. */
static void same_tree_as_parsed(const pano_run_change *ch, const char *json,
                                const pano_json *parsed)
{
    pano_arena arena;
    pano_arena_init(&arena, 0);
    const pano_json_parse_options as_checked = {
        .arena = &arena, .reject_duplicates = true, .raw_strings = true};
    char why[64];
    const pano_json *own = pano_json_parse_with(json, strlen(json), &as_checked, why, sizeof why);
    ck_assert_msg(own, "%s", why);
    const pano_json *tree = pano_run_change_tree(ch, own, &arena);
    if (!ch->made_members.own_follow)
        ck_assert_ptr_null(tree);
    else {
        ck_assert_ptr_nonnull(tree);
        size_t a, b;
        char *made = pano_json_serialize(tree, &a), *whole = pano_json_serialize(parsed, &b);
        ck_assert_str_eq(made, whole);
        free(made);
        free(whole);
    }
    pano_arena_free(&arena);
}

static passed pass(deltas *d, const char *wf, const char *kind, const char *job, int pid,
                   double ts, const char *id, const char *extra)
{
    passed p = {0};
    p.json = event_json(wf, kind, job, pid, ts, id, extra);
    char why[128];
    pano_json *ev = pano_json_parse(p.json, strlen(p.json), 64, why, sizeof why);
    ck_assert_msg(ev, "%s", why);
    p.ev = pano_run_event_read(ev, wf, 0, next_offset++);
    pano_json_free(ev);
    ck_assert_ptr_nonnull(p.ev);
    deltas_begin(d, &p.ev, 1);
    pano_buf body = {0};
    ck_assert_uint_eq(deltas_plan(d, &body), 0); /* nothing to look up */
    pano_buf_free(&body);
    deltas_apply(d, p.ev, p.json, strlen(p.json), p.json, strlen(p.json), &p.ch);
    if (p.ch.doc) {
        ck_assert_ptr_nonnull(p.doc = pano_json_parse(p.ch.doc, strlen(p.ch.doc), 64, why,
                                                      sizeof why));
        same_tree_as_parsed(&p.ch, p.json, p.doc);
    }
    if (p.ch.closing)
        ck_assert_ptr_nonnull(p.closing = pano_json_parse(p.ch.closing, strlen(p.ch.closing),
                                                          64, why, sizeof why));
    return p;
}

/* Free the events passed and d. */
static void done(deltas *d, passed *const *all, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pass_free(all[i]);
    deltas_free(d);
}

static passed sample(deltas *d, const char *job, double ts, const char *id, double utime,
                     long rss, long rchar)
{
    char *f = sample_fields(utime, rss, rchar);
    passed p = pass(d, WF, "online", job, 42, ts, id, f);
    free(f);
    return p;
}

static double delta_of(const pano_json *doc, const char *field)
{
    double v = NAN;
    ck_assert(pano_json_get_number(pano_json_get(doc, "delta"), field, &v));
    return v;
}

/* A fresh table whose workflow WF was looked up and held nothing before. */
static deltas *fresh(size_t max_runs)
{
    deltas *d = deltas_new(max_runs, "pano-");
    /* One round: the workflow, answered "nothing stored before". */
    char *json = event_json(WF, "start", "probe", 1, 1, "probe-start", NULL);
    char why[64];
    pano_json *ev = pano_json_parse(json, strlen(json), 64, why, sizeof why);
    pano_run_event *e = pano_run_event_read(ev, WF, 0, next_offset++);
    deltas_begin(d, &e, 1);
    pano_buf body = {0};
    ck_assert_uint_eq(deltas_plan(d, &body), 1);
    const char *answer = "{\"responses\":[{\"hits\":{\"total\":{\"value\":0},\"hits\":[]}}]}";
    char err[256];
    ck_assert_int_eq(deltas_read(d, answer, strlen(answer), err, sizeof err), 0);
    pano_buf_clear(&body);
    ck_assert_uint_eq(deltas_plan(d, &body), 0); /* runs: none needed */
    pano_run_change ch;
    deltas_apply(d, e, json, strlen(json), json, strlen(json), &ch);
    ck_assert_ptr_null(ch.doc);
    pano_buf_free(&body);
    pano_run_event_free(e);
    pano_json_free(ev);
    free(json);
    return d;
}

START_TEST(first_sample_and_arithmetic)
{
    deltas *d = fresh(100);
    passed st = pass(d, WF, "start", "j1", 42, 100, "s0", "\"argv\":[\"x\"]");
    ck_assert_ptr_null(st.ch.doc);
    /* the first sample: delta = its values */
    passed a = sample(d, "j1", 101, "s1", 1.234, 1000, 500);
    ck_assert_ptr_nonnull(a.doc);
    ck_assert_str_eq(pano_json_get_str(a.doc, "delta_source"), "indexer");
    int64_t off;
    ck_assert(pano_json_get_int(a.doc, "delta_offset", &off));
    ck_assert_int_eq(off, next_offset - 1);
    ck_assert_double_eq_tol(delta_of(a.doc, "utime"), 1.234, 1e-9);
    ck_assert_double_eq(delta_of(a.doc, "rss"), 1000);
    ck_assert_double_eq(delta_of(a.doc, "vm"), 2000);
    ck_assert_double_eq(delta_of(a.doc, "rchar"), 500);
    ck_assert_double_eq(delta_of(a.doc, "syscw"), 4);
    /* the event is kept as it came */
    ck_assert_str_eq(pano_json_get_str(a.doc, "event_id"), "s1");
    ck_assert_str_eq(pano_json_get_str(a.doc, "xformation"), "pegasus::x");
    ck_assert(!a.ch.late);
    /* the next: the change, negative for a gauge that fell; CPU seconds as
     * differences of milliseconds (2.1 - 1.234 = 0.866) */
    passed b = sample(d, "j1", 102, "s2", 2.1, 600, 1500);
    ck_assert_double_eq_tol(delta_of(b.doc, "utime"), 0.866, 1e-9);
    ck_assert_double_eq(delta_of(b.doc, "rss"), -400);
    ck_assert_double_eq(delta_of(b.doc, "rchar"), 1000);
    ck_assert_double_eq(delta_of(b.doc, "stime"), 0);
    ck_assert_double_eq(delta_of(b.doc, "syscw"), 0);
    ck_assert_uint_eq(deltas_counts(d)->made, 2);
    pass_free(&st);
    pass_free(&a);
    pass_free(&b);
    deltas_free(d);
}
END_TEST

/* Over many samples with values of three decimals the deltas add up to the
 * last values exactly (in milliseconds). */
START_TEST(deltas_add_up)
{
    deltas *d = fresh(100);
    passed st = pass(d, WF, "start", "j1", 42, 100, "s0", NULL);
    uint64_t rng = 7;
    double sum_utime = 0, sum_rss = 0, utime = 0;
    long rss = 0;
    for (int k = 0; k < 500; k++) {
        utime += (double)(pano_test_random(&rng) % 1000) / 1000;
        rss = (long)(pano_test_random(&rng) % 100000);
        char id[32];
        snprintf(id, sizeof id, "s%d", k + 1);
        passed p = sample(d, "j1", 101 + k, id, utime, rss, k);
        sum_utime += delta_of(p.doc, "utime");
        sum_rss += delta_of(p.doc, "rss");
        pass_free(&p);
    }
    ck_assert_int_eq(llround(sum_utime * 1000), llround(utime * 1000));
    ck_assert_double_eq(sum_rss, (double)rss);
    pass_free(&st);
    deltas_free(d);
}
END_TEST

START_TEST(late_and_copies)
{
    deltas *d = fresh(100);
    passed st = pass(d, WF, "start", "j1", 42, 100, "s0", NULL);
    passed s1 = sample(d, "j1", 101, "s1", 1, 100, 10);
    passed s3 = sample(d, "j1", 103, "s3", 3, 300, 30);
    /* s3 came before s2: it carries the change since s1 */
    ck_assert_double_eq(delta_of(s3.doc, "rss"), 200);
    ck_assert_double_eq(delta_of(s3.doc, "rchar"), 20);
    /* s2, late: delta 0, and the batch must be sent in order */
    passed s2 = sample(d, "j1", 102, "s2", 2, 250, 20);
    ck_assert(s2.ch.late);
    for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
        ck_assert_double_eq(delta_of(s2.doc, pano_sample_values[i].name), 0);
    /* a copy of the latest (the same event_id and ts): delta 0 too */
    passed copy = sample(d, "j1", 103, "s3", 3, 300, 30);
    ck_assert(copy.ch.late);
    ck_assert_double_eq(delta_of(copy.doc, "rss"), 0);
    /* another sample of the same second is not a copy */
    passed s3b = sample(d, "j1", 103, "s3b", 3, 310, 30);
    ck_assert(!s3b.ch.late);
    ck_assert_double_eq(delta_of(s3b.doc, "rss"), 10);
    /* the table was not corrupted by them: s4 differs from s3b */
    passed s4 = sample(d, "j1", 104, "s4", 4, 400, 40);
    ck_assert_double_eq(delta_of(s4.doc, "rss"), 90);
    ck_assert_double_eq(delta_of(s4.doc, "rchar"), 10);
    /* the stored deltas add up to the latest values (the copy is refused
     * by the store as a duplicate of s3) */
    double rss = 0, rchar = 0;
    const passed *stored[] = {&s1, &s3, &s2, &s3b, &s4};
    for (size_t i = 0; i < 5; i++) {
        rss += delta_of(stored[i]->doc, "rss");
        rchar += delta_of(stored[i]->doc, "rchar");
    }
    ck_assert_double_eq(rss, 400);
    ck_assert_double_eq(rchar, 40);
    ck_assert_uint_eq(deltas_counts(d)->late, 2);
    passed *all[] = {&st, &s1, &s3, &s2, &copy, &s3b, &s4};
    done(d, all, sizeof all / sizeof *all);
}
END_TEST

START_TEST(closing_sample)
{
    deltas *d = fresh(100);
    passed st = pass(d, WF, "start", "j1", 42, 100, "s0", NULL);
    passed s1 = sample(d, "j1", 101, "s1", 1.5, 100, 10);
    passed s2 = sample(d, "j1", 102, "s2", 2.25, 300, 30);
    passed end = pass(d, WF, "end", "j1", 42, 102.5, "e1", "\"exitcode\":0,\"exe\":\"/bin/x\"");
    ck_assert_ptr_null(end.ch.doc);
    ck_assert_ptr_nonnull(end.closing);
    const pano_json *c = end.closing;
    ck_assert_str_eq(pano_json_get_str(c, "event"), "kickstart.inv.online");
    ck_assert_str_eq(pano_json_get_str(c, "event_id"), "e1-closing");
    ck_assert_str_eq(pano_json_get_str(c, "sample"), "closing");
    ck_assert_str_eq(pano_json_get_str(c, "delta_source"), "indexer");
    ck_assert_str_eq(pano_json_get_str(c, "wf_uuid"), WF);
    ck_assert_str_eq(pano_json_get_str(c, "dag_job_id"), "j1");
    ck_assert_str_eq(pano_json_get_str(c, "hostname"), "node-1");
    ck_assert_str_eq(pano_json_get_str(c, "xformation"), "pegasus::x");
    ck_assert_str_eq(pano_json_get_str(c, "exe"), "/bin/x");
    ck_assert_ptr_null(pano_json_get(c, "exitcode"));
    double ts;
    int64_t pid, v;
    ck_assert(pano_json_get_number(c, "ts", &ts) && ts == 102.5);
    ck_assert(pano_json_get_int(c, "pid", &pid) && pid == 42);
    /* gauges at zero, by their negative; counters as last, unchanged */
    ck_assert(pano_json_get_int(c, "rss", &v) && v == 0);
    ck_assert(pano_json_get_int(c, "rchar", &v) && v == 30);
    ck_assert_double_eq(delta_of(c, "rss"), -300);
    ck_assert_double_eq(delta_of(c, "vm"), -600);
    ck_assert_double_eq(delta_of(c, "procs"), -1);
    ck_assert_double_eq(delta_of(c, "threads"), -2);
    ck_assert_double_eq(delta_of(c, "rchar"), 0);
    ck_assert_double_eq(delta_of(c, "utime"), 0);
    double utime;
    ck_assert(pano_json_get_number(c, "utime", &utime) && utime == 2.25);
    /* the run's gauges add up to zero, its counters to its totals */
    ck_assert_double_eq(delta_of(s1.doc, "rss") + delta_of(s2.doc, "rss") + delta_of(c, "rss"),
                        0);
    /* a sample after the end counts nothing; a copy of the end closes nothing more */
    passed late = sample(d, "j1", 102.2, "s3", 2.4, 200, 40);
    ck_assert(late.ch.late);
    ck_assert_double_eq(delta_of(late.doc, "rchar"), 0);
    /* and says so, for a lookup after a restart to find the run ended */
    const pano_json *after = pano_json_get(late.doc, "delta_after_end");
    ck_assert(after && after->type == PANO_JSON_BOOL && after->u.boolean);
    ck_assert_ptr_null(pano_json_get(s2.doc, "delta_after_end"));
    passed again = pass(d, WF, "end", "j1", 42, 102.5, "e1", NULL);
    ck_assert_ptr_null(again.ch.closing);
    ck_assert_uint_eq(deltas_counts(d)->closings, 1);
    /* a closing sample is never before the last sample */
    passed st2 = pass(d, WF, "start", "j2", 43, 100, "t0", NULL);
    passed t1 = pass(d, WF, "online", "j2", 43, 105, "t1", "\"rss\":7");
    passed end2 = pass(d, WF, "end", "j2", 43, 104, "t2", NULL);
    ck_assert(pano_json_get_number(end2.closing, "ts", &ts) && ts == 105);
    ck_assert_double_eq(delta_of(end2.closing, "rss"), -7);
    passed *all[] = {&st, &s1, &s2, &end, &late, &again, &st2, &t1, &end2};
    done(d, all, sizeof all / sizeof *all);
}
END_TEST

START_TEST(retried_on_the_same_pid)
{
    /* a job retried on the same host may get the same pid: a start after
     * the run ended begins a new run */
    deltas *d = fresh(100);
    passed a0 = pass(d, WF, "start", "j1", 42, 100, "a0", NULL);
    passed a1 = sample(d, "j1", 101, "a1", 2, 500, 50);
    passed a2 = pass(d, WF, "end", "j1", 42, 102, "a2", NULL);
    ck_assert_ptr_nonnull(a2.closing);
    passed copy = pass(d, WF, "start", "j1", 42, 100, "a0", NULL); /* a replay: nothing */
    passed b1 = sample(d, "j1", 201, "b1", 1, 400, 30);
    ck_assert(b1.ch.late); /* still the first run's, ended */
    passed b0 = pass(d, WF, "start", "j1", 42, 200, "b0", NULL);
    passed b2 = sample(d, "j1", 202, "b2", 1, 400, 30);
    ck_assert(!b2.ch.late);
    ck_assert_double_eq(delta_of(b2.doc, "rss"), 400); /* from zero, not from the first run */
    ck_assert_double_eq(delta_of(b2.doc, "rchar"), 30);
    passed *all[] = {&a0, &a1, &a2, &copy, &b1, &b0, &b2};
    done(d, all, sizeof all / sizeof *all);
}
END_TEST

START_TEST(odd_names_and_values)
{
    deltas *d = fresh(100);
    char why[64];
    /* a control character in a host or job name: not a run's (left as it came) */
    const char *odd[] = {
        "{\"event\":\"kickstart.inv.online\",\"ts\":1,\"event_id\":\"x\",\"hostname\":\"a\\u001fb\","
        "\"pid\":1,\"rss\":1}",
        "{\"event\":\"kickstart.inv.online\",\"ts\":1,\"event_id\":\"x\",\"hostname\":\"a\\u0000b\","
        "\"pid\":1,\"rss\":1}",
        "{\"event\":\"kickstart.inv.start\",\"ts\":1,\"event_id\":\"x\",\"hostname\":\"n\","
        "\"dag_job_id\":\"j\\nk\",\"pid\":1}"};
    for (size_t i = 0; i < 3; i++) {
        pano_json *ev = pano_json_parse(odd[i], strlen(odd[i]), 64, why, sizeof why);
        ck_assert_msg(ev, "%s", why);
        ck_assert_ptr_null(pano_run_event_read(ev, WF, 0, next_offset++));
        pano_json_free(ev);
    }
    /* values no sample can have are left out of its delta */
    passed st = pass(d, WF, "start", "j1", 42, 100, "s0", NULL);
    passed s1 = pass(d, WF, "online", "j1", 42, 101, "s1", "\"rss\":-5,\"rchar\":1e19,\"wchar\":7");
    ck_assert_ptr_nonnull(s1.doc);
    ck_assert_double_eq(delta_of(s1.doc, "rss"), 0);
    ck_assert_double_eq(delta_of(s1.doc, "rchar"), 0);
    ck_assert_double_eq(delta_of(s1.doc, "wchar"), 7);
    passed *all[] = {&st, &s1};
    done(d, all, sizeof all / sizeof *all);
}
END_TEST

START_TEST(runs_left_alone)
{
    deltas *d = fresh(100);
    /* no start before its first sample: stored as it came, all of it */
    passed r1 = sample(d, "raw", 101, "r1", 1, 100, 10);
    passed r2 = sample(d, "raw", 102, "r2", 2, 200, 20);
    passed re = pass(d, WF, "end", "raw", 42, 103, "re", NULL);
    ck_assert_ptr_null(r1.ch.doc);
    ck_assert_ptr_null(r2.ch.doc);
    ck_assert_ptr_null(re.ch.closing);
    /* pano-monitor's samples, with their own delta: left alone */
    passed ps = pass(d, WF, "start", "mon", 43, 100, "m0", NULL);
    passed p1 = pass(d, WF, "online", "mon", 43, 101, "m1", "\"rss\":5,\"delta\":{\"rss\":5}");
    passed pe = pass(d, WF, "end", "mon", 43, 102, "m2", NULL);
    ck_assert_ptr_null(p1.ch.doc);
    ck_assert_ptr_null(pe.ch.closing);
    /* a start and an end without samples: nothing to close */
    passed es = pass(d, WF, "start", "empty", 44, 100, "x0", NULL);
    passed ee = pass(d, WF, "end", "empty", 44, 101, "x1", NULL);
    ck_assert_ptr_null(ee.ch.closing);
    ck_assert_uint_eq(deltas_counts(d)->made, 0);
    /* events that are not run events */
    char why[64];
    const char *other = "{\"event\":\"stampede.job_inst.main.end\",\"ts\":1,\"event_id\":\"o\","
                        "\"hostname\":\"h\",\"pid\":1,\"wf_uuid\":\"" WF "\"}";
    pano_json *o = pano_json_parse(other, strlen(other), 64, why, sizeof why);
    ck_assert_ptr_null(pano_run_event_read(o, WF, 0, 1));
    pano_json_free(o);
    const char *no_pid = "{\"event\":\"kickstart.inv.online\",\"ts\":1,\"event_id\":\"o\","
                         "\"hostname\":\"h\",\"wf_uuid\":\"" WF "\",\"rss\":1}";
    o = pano_json_parse(no_pid, strlen(no_pid), 64, why, sizeof why);
    ck_assert_ptr_null(pano_run_event_read(o, WF, 0, 1));
    ck_assert_ptr_null(pano_run_event_read(o, "", 0, 1)); /* no valid wf_uuid */
    pano_json_free(o);
    passed *all[] = {&r1, &r2, &re, &ps, &p1, &pe, &es, &ee};
    done(d, all, sizeof all / sizeof *all);
}
END_TEST

/* A sample that says delta_source itself keeps one key of each name. */
START_TEST(clashing_keys)
{
    deltas *d = fresh(100);
    passed st = pass(d, WF, "start", "j1", 42, 100, "s0", NULL);
    passed s = pass(d, WF, "online", "j1", 42, 101, "s1",
                    "\"rss\":9,\"delta_source\":\"mine\",\"delta_offset\":-1,"
                    "\"delta_after_end\":true");
    ck_assert_ptr_nonnull(s.doc);
    size_t n = 0;
    for (size_t i = 0; i < pano_json_len(s.doc); i++)
        n += strcmp(pano_json_key_at(s.doc, i), "delta_source") == 0;
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(pano_json_get_str(s.doc, "delta_source"), "indexer");
    ck_assert_ptr_null(pano_json_get(s.doc, "delta_after_end")); /* not the indexer's word */
    ck_assert_double_eq(delta_of(s.doc, "rss"), 9);
    pass_free(&st);
    pass_free(&s);
    deltas_free(d);
}
END_TEST

/* ---- lookups ---------------------------------------------------------------- */

/* The events of one batch, offsets from 100, with the rounds of lookups
 * answered by answers[] in turn; the bodies asked written to asked[]. */
typedef struct {
    char *json[8];
    pano_run_event *ev[8];
    pano_run_change ch[8];
    size_t n;
    char asked[4][8192];
    size_t rounds;
} batch_run;

static void batch_free(batch_run *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->json[i]);
        pano_run_event_free(b->ev[i]);
        free(b->ch[i].doc);
        free(b->ch[i].closing);
    }
}

static void batch_add(batch_run *b, const char *wf, const char *kind, const char *job, double ts,
                      const char *id, const char *extra, int64_t offset)
{
    char why[64];
    b->json[b->n] = event_json(wf, kind, job, 42, ts, id, extra);
    pano_json *ev = pano_json_parse(b->json[b->n], strlen(b->json[b->n]), 64, why, sizeof why);
    b->ev[b->n] = pano_run_event_read(ev, wf, 3, offset);
    ck_assert_ptr_nonnull(b->ev[b->n]);
    pano_json_free(ev);
    b->n++;
}

static void batch_pass(deltas *d, batch_run *b, const char *const *answers)
{
    deltas_begin(d, b->ev, b->n);
    pano_buf body = {0};
    char err[256];
    for (b->rounds = 0; deltas_plan(d, &body) > 0; b->rounds++) {
        ck_assert_msg(answers[b->rounds], "round %zu was not expected: %s", b->rounds, body.data);
        snprintf(b->asked[b->rounds], sizeof b->asked[0], "%s", body.data);
        ck_assert_msg(deltas_read(d, answers[b->rounds], strlen(answers[b->rounds]), err,
                                  sizeof err) == 0,
                      "%s", err);
        pano_buf_clear(&body);
    }
    ck_assert_ptr_null(answers[b->rounds]);
    pano_buf_free(&body);
    for (size_t i = 0; i < b->n; i++)
        deltas_apply(d, b->ev[i], b->json[i], strlen(b->json[i]), b->json[i],
                     strlen(b->json[i]), &b->ch[i]);
}

#define NONE "{\"hits\":{\"total\":{\"value\":0},\"hits\":[]}}"
#define SOME "{\"hits\":{\"total\":{\"value\":1,\"relation\":\"gte\"},\"hits\":[]}}"

static double doc_delta(const char *doc, const char *field)
{
    char why[64];
    pano_json *o = pano_json_parse(doc, strlen(doc), 64, why, sizeof why);
    ck_assert_ptr_nonnull(o);
    double v = delta_of(o, field);
    pano_json_free(o);
    return v;
}

/* After a restart: the workflow held deltas of an indexer, the run's latest
 * sample below the offset is looked up, and its values go on from there,
 * not from zero. */
START_TEST(lookup_goes_on_from_the_store)
{
    deltas *d = deltas_new(100, "pano-");
    batch_run b = {0};
    batch_add(&b, WF, "online", "j1", 105, "s5", "\"rss\":500,\"rchar\":70", 100);
    batch_add(&b, WF, "online", "j1", 106, "s6", "\"rss\":450,\"rchar\":90", 101);
    batch_add(&b, WF, "end", "j1", 107, "e", NULL, 102);
    const char *answers[] = {
        "{\"responses\":[" SOME "]}",
        "{\"responses\":[{\"hits\":{\"total\":{\"value\":1},\"hits\":[{\"_source\":{\"ts\":104,"
        "\"event_id\":\"s4\",\"delta\":{\"rss\":1},\"delta_source\":\"indexer\",\"rss\":400,"
        "\"vm\":800,\"rchar\":60,\"utime\":1.5}}]}}]}",
        NULL};
    batch_pass(d, &b, answers);
    ck_assert_uint_eq(b.rounds, 2);
    /* the workflow: its samples without delta, or with an indexer's (at any
     * offset), routed by the workflow, over the samples' indices */
    ck_assert_ptr_nonnull(strstr(b.asked[0], "\"routing\":\"" WF "\""));
    ck_assert_ptr_nonnull(strstr(b.asked[0], "\"index\":[\"pano-samples-*\",\"pano-kickstart\"]"));
    ck_assert_ptr_null(strstr(b.asked[0], "delta_offset"));
    ck_assert_ptr_nonnull(strstr(b.asked[0], "\"delta_source\":\"indexer\""));
    /* the run: one search, its latest sample below offset 100 or its start,
     * over the starts' indices too */
    ck_assert_ptr_nonnull(strstr(b.asked[1], "\"pano-kickstart\",\"pano-kickstart-*\"]"));
    ck_assert_ptr_nonnull(
        strstr(b.asked[1], "\"event\":[\"kickstart.inv.online\",\"kickstart.inv.start\"]"));
    ck_assert_ptr_nonnull(strstr(b.asked[1], "{\"term\":{\"dag_job_id\":\"j1\"}}"));
    ck_assert_ptr_nonnull(strstr(b.asked[1], "{\"term\":{\"hostname\":\"node-1\"}}"));
    ck_assert_ptr_nonnull(strstr(b.asked[1], "{\"term\":{\"pid\":42}}"));
    ck_assert_ptr_nonnull(strstr(b.asked[1], "{\"range\":{\"delta_offset\":{\"lt\":100}}}"));
    ck_assert_ptr_nonnull(strstr(b.asked[1], "\"size\":1"));
    ck_assert_ptr_null(strstr(strstr(b.asked[1], "routing") + 1, "routing")); /* one search */
    ck_assert_double_eq(doc_delta(b.ch[0].doc, "rss"), 100);
    ck_assert_double_eq(doc_delta(b.ch[0].doc, "rchar"), 10);
    ck_assert_double_eq(doc_delta(b.ch[1].doc, "rss"), -50);
    ck_assert_ptr_nonnull(b.ch[2].closing);
    ck_assert_double_eq(doc_delta(b.ch[2].closing, "rss"), -450);
    ck_assert_double_eq(doc_delta(b.ch[2].closing, "vm"), -800);
    ck_assert_uint_eq(deltas_counts(d)->lookups, 2);
    batch_free(&b);
    deltas_free(d);
}
END_TEST

/* What the latest stored sample says decides the run's state. */
START_TEST(lookup_states)
{
    deltas *d = deltas_new(100, "pano-");
    batch_run b = {0};
    batch_add(&b, WF, "online", "raw", 105, "r5", "\"rss\":5", 10);
    batch_add(&b, WF, "online", "closed", 105, "c5", "\"rss\":5", 11);
    batch_add(&b, WF, "end", "mon", 105, "m5", NULL, 12);
    batch_add(&b, WF, "online", "new", 105, "n5", "\"rss\":5", 13);
    batch_add(&b, WF, "end", "closed", 106, "c6", NULL, 14);
    batch_add(&b, WF, "online", "started", 105, "t5", "\"rss\":5", 15);
    batch_add(&b, WF, "online", "after", 105, "a5", "\"rss\":5", 16);
    const char *answers[] = {
        "{\"responses\":[" SOME "]}",
        "{\"responses\":["
        /* raw: a sample stored without delta */
        "{\"hits\":{\"hits\":[{\"_source\":{\"ts\":104,\"rss\":4}}]}},"
        /* closed: its closing sample */
        "{\"hits\":{\"hits\":[{\"_source\":{\"ts\":104,\"rss\":0,\"delta\":{\"rss\":-4},"
        "\"delta_source\":\"indexer\",\"sample\":\"closing\"}}]}},"
        /* mon: pano-monitor's own deltas */
        "{\"hits\":{\"hits\":[{\"_source\":{\"ts\":104,\"rss\":0,\"delta\":{\"rss\":-4}}}]}},"
        /* new: nothing stored */
        NONE ","
        /* started: its start stored (committed), none of its samples below
         * the offset (an indexer stopped before committing made them) */
        "{\"hits\":{\"hits\":[{\"_source\":{\"event\":\"kickstart.inv.start\",\"ts\":100}}]}},"
        /* after: a sample that came after its end, the latest by time */
        "{\"hits\":{\"hits\":[{\"_source\":{\"ts\":104,\"rss\":4,\"delta\":{\"rss\":0},"
        "\"delta_source\":\"indexer\",\"delta_after_end\":true}}]}}"
        "]}",
        NULL};
    batch_pass(d, &b, answers);
    ck_assert_ptr_null(b.ch[0].doc);                       /* stays raw */
    ck_assert_ptr_nonnull(b.ch[1].doc);                    /* ended: */
    ck_assert_double_eq(doc_delta(b.ch[1].doc, "rss"), 0); /* delta 0 */
    ck_assert(b.ch[1].late);
    ck_assert_ptr_null(b.ch[2].closing); /* pano-monitor's: nothing to close */
    ck_assert_ptr_null(b.ch[3].doc);     /* no start seen, nothing stored: raw */
    ck_assert_ptr_null(b.ch[4].closing); /* closed already */
    ck_assert_ptr_nonnull(b.ch[5].doc);  /* started: its first sample's delta */
    ck_assert_double_eq(doc_delta(b.ch[5].doc, "rss"), 5);
    ck_assert_ptr_nonnull(b.ch[6].doc);                    /* ended too: */
    ck_assert_double_eq(doc_delta(b.ch[6].doc, "rss"), 0); /* delta 0, not 1 */
    ck_assert(b.ch[6].late);
    batch_free(&b);
    /* The same workflow again: nothing asked for runs in the table. */
    batch_run c = {0};
    batch_add(&c, WF, "online", "raw", 106, "r6", "\"rss\":6", 20);
    const char *none[] = {NULL};
    batch_pass(d, &c, none);
    ck_assert_ptr_null(c.ch[0].doc);
    batch_free(&c);
    deltas_free(d);
}
END_TEST

/* A workflow with nothing stored before: its runs are not looked up; a run
 * evicted in ingest is, when it comes back. */
START_TEST(bound_and_eviction)
{
    deltas *d = deltas_new(2, "pano-");
    batch_run b = {0};
    batch_add(&b, WF, "start", "j1", 100, "a0", NULL, 1);
    batch_add(&b, WF, "online", "j1", 101, "a1", "\"rss\":10", 2);
    batch_add(&b, WF, "start", "j2", 100, "b0", NULL, 3);
    batch_add(&b, WF, "online", "j2", 101, "b1", "\"rss\":20", 4);
    const char *answers[] = {"{\"responses\":[" NONE "]}", NULL};
    batch_pass(d, &b, answers);
    ck_assert_double_eq(doc_delta(b.ch[1].doc, "rss"), 10);
    ck_assert_double_eq(doc_delta(b.ch[3].doc, "rss"), 20);
    batch_free(&b);
    ck_assert_uint_eq(deltas_runs(d), 2);
    /* a third run: j1, the least recently seen, is evicted */
    batch_run c = {0};
    batch_add(&c, WF, "start", "j3", 102, "c0", NULL, 5);
    const char *none[] = {NULL};
    batch_pass(d, &c, none);
    batch_free(&c);
    ck_assert_uint_eq(deltas_runs(d), 2);
    ck_assert_uint_eq(deltas_counts(d)->evicted, 1);
    /* j1 comes back: looked up (its latest sample), not started from zero */
    batch_run e = {0};
    batch_add(&e, WF, "online", "j1", 103, "a2", "\"rss\":15", 6);
    const char *back[] = {
        "{\"responses\":[{\"hits\":{\"hits\":[{\"_source\":{\"ts\":101,\"event_id\":\"a1\","
        "\"rss\":10,\"delta\":{\"rss\":10},\"delta_source\":\"indexer\"}}]}}]}",
        NULL};
    batch_pass(d, &e, back);
    ck_assert_ptr_nonnull(strstr(e.asked[0], "{\"range\":{\"delta_offset\":{\"lt\":6}}}"));
    ck_assert_double_eq(doc_delta(e.ch[0].doc, "rss"), 5);
    batch_free(&e);
    /* a partition taken away: its runs and workflows are forgotten, and
     * asked for again */
    deltas_forget_partition(d, 3);
    ck_assert_uint_eq(deltas_runs(d), 0);
    batch_run f = {0};
    batch_add(&f, WF, "online", "j1", 104, "a3", "\"rss\":15", 7);
    const char *again[] = {"{\"responses\":[" NONE "]}", NULL};
    batch_pass(d, &f, again);
    ck_assert_ptr_null(f.ch[0].doc); /* nothing stored before offset 7: as it came */
    batch_free(&f);
    deltas_free(d);
}
END_TEST

START_TEST(unusable_answers)
{
    deltas *d = deltas_new(100, "pano-");
    batch_run b = {0};
    batch_add(&b, WF, "online", "j1", 105, "s5", "\"rss\":5", 10);
    batch_add(&b, WF2, "online", "j1", 105, "t5", "\"rss\":5", 11);
    deltas_begin(d, b.ev, b.n);
    pano_buf body = {0};
    char err[256];
    ck_assert_uint_eq(deltas_plan(d, &body), 2);
    const char *bad[] = {
        "not json", "{\"responses\":[" NONE "]}",
        "{\"responses\":[" NONE ",{\"error\":{\"reason\":\"no shard\"},\"status\":503}]}",
        /* a shard of the store missing, or out of time: what it holds is not known */
        "{\"responses\":[" NONE ",{\"_shards\":{\"failed\":1},\"hits\":{\"total\":{\"value\":0},"
        "\"hits\":[]}}]}",
        "{\"responses\":[" NONE ",{\"timed_out\":true,\"hits\":{\"total\":{\"value\":0},"
        "\"hits\":[]}}]}",
        "{\"responses\":[" NONE ",{\"hits\":{\"hits\":[]}}]}"};
    const char *why[] = {"unreadable",           "answered 1 searches of 2", "no shard",
                         "1 shards failed",      "timed out",                "no total"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(deltas_read(d, bad[i], strlen(bad[i]), err, sizeof err), -1);
        ck_assert_msg(strstr(err, why[i]), "%s", err);
    }
    /* nothing was applied: both workflows are asked for again */
    deltas_begin(d, b.ev, b.n);
    pano_buf_clear(&body);
    ck_assert_uint_eq(deltas_plan(d, &body), 2);
    pano_buf_free(&body);
    batch_free(&b);
    deltas_free(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("indexer_deltas");
    TCase *t = tcase_create("table");
    tcase_add_test(t, table_bound_and_eviction);
    tcase_add_test(t, table_grows);
    suite_add_tcase(s, t);
    t = tcase_create("deltas");
    tcase_add_test(t, first_sample_and_arithmetic);
    tcase_add_test(t, deltas_add_up);
    tcase_add_test(t, late_and_copies);
    tcase_add_test(t, closing_sample);
    tcase_add_test(t, retried_on_the_same_pid);
    tcase_add_test(t, odd_names_and_values);
    tcase_add_test(t, runs_left_alone);
    tcase_add_test(t, clashing_keys);
    suite_add_tcase(s, t);
    t = tcase_create("lookups");
    tcase_add_test(t, lookup_goes_on_from_the_store);
    tcase_add_test(t, lookup_states);
    tcase_add_test(t, bound_and_eviction);
    tcase_add_test(t, unusable_answers);
    suite_add_tcase(s, t);
    return pano_test_run(s);
}
