/* The per-run summaries (lib/summary.h): what each event contributes, the
 * documents' ids, the merge (the same document whatever the order, counts
 * only when asked), whether a run is open, and an update applied once
 * under its token. */
#include "json.h"
#include "partition.h"
#include "summary.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WF "0f2c8d4e-1b3a-4c5d-8e6f-7a8b9c0d1e2f"

static pano_json *parse(const char *text)
{
    char why[128];
    pano_json *j = pano_json_parse(text, strlen(text), 64, why, sizeof why);
    ck_assert_msg(j, "%s: %s", text, why);
    return j;
}

/* The contribution of an event given as text (arrival: its offset). */
static pano_run_summary part_of(const char *event, long arrival)
{
    pano_json *ev = parse(event);
    char a[24];
    snprintf(a, sizeof a, "%020ld", arrival);
    double ts = 0;
    pano_json_get_number(ev, "ts", &ts);
    pano_run_summary p;
    ck_assert_msg(pano_summary_of_event(ev, WF, ts, a, &p), "%s", event);
    pano_json_free(ev);
    return p;
}

/* A document read back from its tree and from its text, written again:
 * both the same text (or both refused, NULL). */
static char *read_back(const char *text)
{
    char why[128];
    pano_json *j = pano_json_parse(text, strlen(text), 64, why, sizeof why);
    pano_run_summary from_tree, from_text;
    bool tree_ok = j && pano_summary_read(j, &from_tree);
    bool text_ok = pano_summary_parse(text, strlen(text), &from_text);
    ck_assert_msg(tree_ok == text_ok, "%s: read %d, parsed %d", text, tree_ok, text_ok);
    pano_json_free(j);
    if (!tree_ok)
        return NULL;
    pano_buf a = {0}, b = {0};
    pano_summary_write(&from_tree, &a);
    pano_summary_write(&from_text, &b);
    ck_assert_str_eq(a.data, b.data);
    ck_assert_int_eq(from_tree.kind, from_text.kind);
    pano_summary_clear(&from_tree);
    pano_summary_clear(&from_text);
    pano_buf_free(&b);
    return a.data;
}

/* A summary as its document, parsed back (and read back: the same). */
static pano_json *as_json(const pano_run_summary *s)
{
    pano_buf b = {0};
    pano_summary_write(s, &b);
    pano_json *j = parse(b.data);
    char *again = read_back(b.data);
    ck_assert_ptr_nonnull(again);
    ck_assert_str_eq(again, b.data);
    free(again);
    pano_buf_free(&b);
    return j;
}

/* j at a path of keys separated by '.' ("max.last"), or NULL. */
static const pano_json *at(const pano_json *j, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save, *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
        j = pano_json_get(j, k);
    return j;
}

static double num(const pano_json *j, const char *path)
{
    const pano_json *v = at(j, path);
    if (!v)
        return NAN;
    return v->type == PANO_JSON_INT ? (double)v->u.integer
           : v->type == PANO_JSON_DOUBLE ? v->u.real.value
                                         : NAN;
}

static const char *str(const pano_json *j, const char *path)
{
    const pano_json *v = at(j, path);
    return v && v->type == PANO_JSON_STRING ? v->u.string.text : NULL;
}

#define CTX "\"dag_job_id\":\"j_ID1\",\"hostname\":\"n1\",\"pid\":42"

static const char *const run_events[] = {
    "{\"event\":\"kickstart.inv.start\",\"ts\":100.5,\"event_id\":\"e1\"," CTX
    ",\"xformation\":\"burn\",\"site\":\"local\",\"exe\":\"/bin/burn\",\"interval\":1}",
    "{\"event\":\"kickstart.inv.online\",\"ts\":101.5,\"event_id\":\"e2\"," CTX
    ",\"interval\":1,\"rss\":300,\"rss_peak\":310,\"utime\":0.5,\"stime\":\"0.25\",\"rchar\":10}",
    "{\"event\":\"kickstart.inv.online\",\"ts\":102.5,\"event_id\":\"e3\"," CTX
    ",\"interval\":1,\"rss\":200,\"rss_peak\":320,\"utime\":1,\"stime\":0.5,\"rchar\":20}",
    "{\"event\":\"kickstart.inv.end\",\"ts\":103,\"event_id\":\"e4\"," CTX
    ",\"xformation\":\"burn\",\"exitcode\":3,\"signal\":0,\"duration\":2.5,"
    "\"remote_cpu_time\":1.5,\"maxrss\":320,\"final\":{\"rchar\":20,\"wchar\":5},\"samples\":2}",
};

START_TEST(what_a_run_is_made_of)
{
    pano_run_summary sum;
    pano_summary_init(&sum);
    char id[PANO_SUMMARY_ID_LEN + 1] = "";
    for (size_t i = 0; i < 4; i++) {
        pano_run_summary p = part_of(run_events[i], (long)i);
        ck_assert_int_eq(p.stream, pano_stream_index("kickstart")); /* samples too */
        ck_assert_int_eq(strlen(p.id), PANO_SUMMARY_ID_LEN);
        ck_assert(p.id[0] == 'r' && p.id[1] == '-');
        if (i)
            ck_assert_str_eq(p.id, id); /* one run: one document */
        memcpy(id, p.id, sizeof id);
        pano_summary_merge(&sum, &p, true);
        pano_summary_clear(&p);
    }
    pano_json *doc = as_json(&sum);
    pano_summary_clear(&sum);
    ck_assert_str_eq(str(doc, "set.k"), "run");
    ck_assert_str_eq(str(doc, "set.job"), "j_ID1");
    ck_assert_str_eq(str(doc, "set.host"), "n1");
    ck_assert_double_eq(num(doc, "set.pid"), 42);
    ck_assert_double_eq(num(doc, "min.t0"), 100.5);
    ck_assert_double_eq(num(doc, "min.first"), 100.5); /* start and end only */
    ck_assert_double_eq(num(doc, "max.last"), 103);
    ck_assert_double_eq(num(doc, "max.end"), 1);
    ck_assert_double_eq(num(doc, "max.exit"), 3);
    ck_assert_double_eq(num(doc, "max.dur"), 2.5);
    ck_assert_double_eq(num(doc, "max.cpu"), 1.5);
    ck_assert_double_eq(num(doc, "max.rch"), 20); /* final.rchar */
    ck_assert_double_eq(num(doc, "max.wch"), 5);
    ck_assert_double_eq(num(doc, "max.ns"), 2);
    ck_assert_double_eq(num(doc, "max.slast"), 102.5);
    ck_assert_double_eq(num(doc, "max.speak"), 320);
    ck_assert_double_eq(num(doc, "add.n"), 4);
    ck_assert_double_eq(num(doc, "add.sn"), 2);
    ck_assert_str_eq(str(doc, "least.xf"), "burn");
    ck_assert_str_eq(str(doc, "least.exe"), "/bin/burn");
    /* the latest sample, its gauges as sent (a number in a string too) */
    ck_assert_double_eq(num(doc, "latest.s.v.rss"), 200);
    ck_assert_double_eq(num(doc, "latest.s.v.st"), 0.5);
    pano_json_free(doc);

    /* another pid, host, job or workflow: another document */
    pano_run_summary a = part_of(run_events[0], 0);
    pano_run_summary b = part_of("{\"event\":\"kickstart.inv.start\",\"ts\":1,\"event_id\":\"x\","
                                  "\"dag_job_id\":\"j_ID1\",\"hostname\":\"n1\",\"pid\":43}",
                                  0);
    pano_run_summary c = part_of("{\"event\":\"kickstart.inv.start\",\"ts\":1,\"event_id\":\"x\","
                                  "\"hostname\":\"n1\",\"pid\":42}",
                                  0);
    ck_assert_str_ne(a.id, b.id);
    ck_assert_str_ne(a.id, c.id);
    ck_assert_ptr_null(c.t[PANO_ST_JOB]); /* no DAG job id */
    pano_summary_clear(&a);
    pano_summary_clear(&b);
    pano_summary_clear(&c);
}
END_TEST

#define INST "\"job_id\":\"j_ID1\",\"job_inst_id\":2,\"site\":\"condor\""

static const char *const inst_events[] = {
    "{\"event\":\"stampede.job_inst.submit.start\",\"ts\":10,\"event_id\":\"s1\",\"js_id\":1," INST "}",
    "{\"event\":\"stampede.job_inst.main.start\",\"ts\":12,\"event_id\":\"s2\",\"js_id\":2," INST "}",
    "{\"event\":\"stampede.job_inst.host.info\",\"ts\":12,\"event_id\":\"s3\",\"hostname\":\"n7\"," INST "}",
    "{\"event\":\"stampede.inv.end\",\"ts\":20,\"event_id\":\"s4\",\"inv_id\":1,\"dur\":7.5,"
    "\"remote_cpu_time\":6,\"maxrss\":900,\"start_time\":12.5,\"transformation\":\"t\","
    "\"executable\":\"/bin/t\"," INST "}",
    "{\"event\":\"stampede.inv.end\",\"ts\":20.5,\"event_id\":\"s5\",\"inv_id\":-1,\"dur\":1,"
    "\"remote_cpu_time\":1," INST "}",
    "{\"event\":\"stampede.job_inst.pre.end\",\"ts\":21,\"event_id\":\"s6\",\"js_id\":3,"
    "\"exitcode\":\"512\",\"status\":-1," INST "}",
    "{\"event\":\"stampede.job_inst.main.end\",\"ts\":21,\"event_id\":\"s7\",\"js_id\":3,"
    "\"exitcode\":\"512\",\"local_dur\":8,\"status\":-1," INST "}",
};

START_TEST(what_an_instance_is_made_of)
{
    pano_run_summary sum;
    pano_summary_init(&sum);
    for (size_t i = 0; i < 7; i++) {
        pano_run_summary p = part_of(inst_events[i], (long)i);
        ck_assert_int_eq(p.stream, pano_stream_index("stampede"));
        ck_assert(p.id[0] == 'i');
        pano_summary_merge(&sum, &p, true);
        pano_summary_clear(&p);
    }
    pano_json *doc = as_json(&sum);
    pano_summary_clear(&sum);
    ck_assert_str_eq(str(doc, "set.k"), "inst");
    ck_assert_double_eq(num(doc, "set.inst"), 2);
    ck_assert_double_eq(num(doc, "min.sub"), 10);
    ck_assert_double_eq(num(doc, "max.exec"), 12);
    ck_assert_double_eq(num(doc, "max.last"), 21);
    ck_assert_str_eq(str(doc, "latest.h.v.h"), "n7");
    ck_assert_str_eq(str(doc, "latest.si.v.s"), "condor");
    /* the job's own invocation, not its PRE script's */
    ck_assert_str_eq(str(doc, "latest.iv.v.xf"), "t");
    ck_assert_double_eq(num(doc, "max.irss"), 900);
    ck_assert_double_eq(num(doc, "min.ist"), 12.5);
    ck_assert_int_eq(pano_json_len(at(doc, "put.inv")), 1);
    const pano_json *inv = at(doc, "put.inv.s4"); /* by event_id: [dur, remote_cpu_time] */
    ck_assert_int_eq(pano_json_len(inv), 2);
    ck_assert_double_eq(pano_json_at(inv, 0)->u.real.value, 7.5);
    ck_assert_int_eq(pano_json_at(inv, 1)->u.integer, 6);
    /* pre.end and main.end share ts and js_id: the first to arrive is the
     * latest state, as the first indexed is in top_hits */
    ck_assert_str_eq(str(doc, "latest.st.v.e"), "pre.end");
    ck_assert_double_eq(num(doc, "latest.me.v.x"), 512); /* "512" as a number */
    ck_assert_double_eq(num(doc, "latest.me.v.ld"), 8);
    ck_assert_double_eq(num(doc, "add.n"), 7);
    pano_json_free(doc);

    /* without a job_inst_id, or of another family: no summary */
    pano_json *ev = parse("{\"event\":\"stampede.job_inst.main.start\",\"ts\":1,\"event_id\":\"x\","
                          "\"job_id\":\"j\"}");
    pano_run_summary p;
    ck_assert(!pano_summary_of_event(ev, WF, 1, "0", &p));
    ck_assert_int_eq(p.stream, -1);
    pano_json_free(ev);
    ev = parse("{\"event\":\"custom.metric\",\"ts\":1,\"event_id\":\"x\"}");
    ck_assert(!pano_summary_of_event(ev, WF, 1, "0", &p));
    pano_json_free(ev);
}
END_TEST

START_TEST(side_events)
{
    pano_run_summary d = part_of("{\"event\":\"darshan.perf\",\"ts\":5,\"event_id\":\"d\","
                                  "\"dag_job_id\":\"j\",\"hostname\":\"h\"}",
                                  0);
    pano_run_summary t = part_of("{\"event\":\"transfer.inv.local\",\"ts\":6,\"event_id\":\"t\","
                                  "\"dag_job_id\":\"j\",\"hostname\":\"h\"}",
                                  1);
    ck_assert_int_eq(d.stream, pano_stream_index("darshan"));
    ck_assert_int_eq(t.stream, pano_stream_index("transfer"));
    ck_assert_str_ne(d.id, t.id); /* one key, two streams: two documents */
    ck_assert_double_eq(d.v[PANO_SF_D], 1);
    ck_assert_double_eq(t.v[PANO_SF_T], 1);
    ck_assert(isnan(d.v[PANO_SF_T]));
    pano_summary_clear(&d);
    pano_summary_clear(&t);
    ck_assert(pano_summary_stream(pano_stream_index("kickstart")));
    ck_assert(!pano_summary_stream(pano_stream_index("samples")));
    ck_assert(!pano_summary_stream(pano_stream_index("custom")));
    char base[64];
    pano_summary_base("pano-", pano_stream_index("stampede"), base, sizeof base);
    ck_assert_str_eq(base, "pano-summary-stampede");
}
END_TEST

/* Every order of the run's and the instance's events gives one document,
 * byte for byte. */
START_TEST(any_order_the_same)
{
    const char *const *sets[] = {run_events, inst_events};
    size_t sizes[] = {4, 7};
    for (size_t s = 0; s < 2; s++) {
        char *first = NULL;
        uint64_t seed = 7;
        for (int round = 0; round < 50; round++) {
            size_t order[8];
            for (size_t i = 0; i < sizes[s]; i++)
                order[i] = i;
            for (size_t i = sizes[s] - 1; round && i > 0; i--) {
                size_t k = pano_test_random(&seed) % (i + 1), x = order[i];
                order[i] = order[k];
                order[k] = x;
            }
            /* merged two at a time, and into the document */
            pano_run_summary doc, pair;
            pano_summary_init(&doc);
            pano_summary_init(&pair);
            for (size_t i = 0; i < sizes[s]; i++) {
                pano_run_summary p = part_of(sets[s][order[i]], (long)order[i]);
                pano_summary_merge(i % 2 ? &doc : &pair, &p, true);
                pano_summary_clear(&p);
            }
            pano_summary_merge(&doc, &pair, true);
            pano_summary_clear(&pair);
            pano_buf b = {0};
            pano_summary_write(&doc, &b);
            pano_summary_clear(&doc);
            char *t = b.data;
            if (!first)
                first = t;
            else {
                ck_assert_str_eq(t, first);
                free(t);
            }
        }
        free(first);
    }
}
END_TEST

/* The events of list in mask (bit i: list[i]), merged. */
static pano_run_summary merged(const char *const *list, size_t n, unsigned mask)
{
    pano_run_summary doc;
    pano_summary_init(&doc);
    for (size_t i = 0; i < n; i++)
        if (mask & (1u << i)) {
            pano_run_summary p = part_of(list[i], (long)i);
            pano_summary_merge(&doc, &p, true);
            pano_summary_clear(&p);
        }
    return doc;
}

/* Whether a run or an instance is open or failed, and that a run whose
 * events fall in two documents (two periods) and is open has a document
 * open by itself, and one that failed a document open or failed, however
 * its events are split. */
START_TEST(open_until_the_end_or_the_verdict)
{
    static const char *const post_end =
        "{\"event\":\"stampede.job_inst.post.end\",\"ts\":25,\"event_id\":\"s8\",\"js_id\":4,"
        "\"exitcode\":0," INST "}";
    static const char *const late_main_end =
        "{\"event\":\"stampede.job_inst.main.end\",\"ts\":22,\"event_id\":\"s9\",\"js_id\":4,"
        "\"exitcode\":0,\"local_dur\":8," INST "}";
    static const char *const no_exit_main_end =
        "{\"event\":\"stampede.job_inst.main.end\",\"ts\":22,\"event_id\":\"s9\",\"js_id\":4,"
        "\"local_dur\":8," INST "}";
    const char *with_post[8], *with_main[8], *no_exit[8];
    for (size_t i = 0; i < 7; i++)
        with_post[i] = with_main[i] = no_exit[i] = inst_events[i];
    with_post[7] = post_end;
    with_main[7] = late_main_end;
    no_exit[7] = no_exit_main_end;
    struct {
        const char *const *events;
        size_t n;
        bool open, failed; /* all of them */
    } cases[] = {
        {run_events, 4, false, true}, /* exit code 3 */
        {run_events, 3, true, false}, /* no .end yet */
        {inst_events, 7, true, true}, /* pre.end, not main.end, is the latest state; 512 */
        {with_post, 8, false, true},  /* the POST script's verdict, 0; main.end's 512 */
        {with_main, 8, false, false}, /* main.end the latest state, with exit code 0 */
        {no_exit, 8, true, false},    /* main.end without an exit code */
        {inst_events, 2, true, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        unsigned all = (1u << cases[c].n) - 1;
        pano_run_summary whole = merged(cases[c].events, cases[c].n, all);
        ck_assert_msg(pano_summary_open(&whole) == cases[c].open, "case %zu", c);
        ck_assert_msg(pano_summary_failed(&whole) == cases[c].failed, "case %zu", c);
        pano_json *doc = as_json(&whole);
        const pano_json *flag = at(doc, "set.open");
        ck_assert(flag && flag->type == PANO_JSON_BOOL && flag->u.boolean == cases[c].open);
        flag = at(doc, "set.failed");
        ck_assert(flag && flag->type == PANO_JSON_BOOL && flag->u.boolean == cases[c].failed);
        pano_json_free(doc);
        pano_summary_clear(&whole);
        for (unsigned mask = 1; mask < all; mask++) {
            pano_run_summary a = merged(cases[c].events, cases[c].n, mask);
            pano_run_summary b = merged(cases[c].events, cases[c].n, all & ~mask);
            pano_run_summary m;
            pano_summary_init(&m);
            pano_summary_merge(&m, &a, true);
            pano_summary_merge(&m, &b, true);
            ck_assert(pano_summary_open(&m) == cases[c].open);
            ck_assert(pano_summary_failed(&m) == cases[c].failed);
            if (cases[c].open)
                ck_assert_msg(pano_summary_open(&a) || pano_summary_open(&b), "case %zu, split %x",
                              c, mask);
            if (cases[c].failed)
                ck_assert_msg(pano_summary_open(&a) || pano_summary_open(&b) ||
                                  pano_summary_failed(&a) || pano_summary_failed(&b),
                              "case %zu, split %x", c, mask);
            pano_summary_clear(&a);
            pano_summary_clear(&b);
            pano_summary_clear(&m);
        }
    }
    /* a side document is never open */
    pano_run_summary d = part_of("{\"event\":\"darshan.perf\",\"ts\":5,\"event_id\":\"d\","
                                  "\"dag_job_id\":\"j\",\"hostname\":\"h\"}",
                                  0);
    ck_assert(!pano_summary_open(&d) && !pano_summary_failed(&d));
    pano_json *doc = as_json(&d);
    const pano_json *flag = at(doc, "set.open");
    ck_assert(flag && flag->type == PANO_JSON_BOOL && !flag->u.boolean);
    flag = at(doc, "set.failed");
    ck_assert(flag && flag->type == PANO_JSON_BOOL && !flag->u.boolean);
    pano_json_free(doc);
    pano_summary_clear(&d);
}
END_TEST

START_TEST(counts_only_when_asked)
{
    pano_run_summary p = part_of(run_events[1], 1), doc;
    pano_summary_init(&doc);
    pano_summary_merge(&doc, &p, true);
    pano_summary_merge(&doc, &p, false); /* the same event again, a replay */
    ck_assert_double_eq(doc.v[PANO_SF_N], 1);
    ck_assert_double_eq(doc.v[PANO_SF_SN], 1);
    ck_assert_double_eq(doc.v[PANO_SF_SLAST], 101.5);
    pano_summary_merge(&doc, &p, true); /* counted: another event */
    ck_assert_double_eq(doc.v[PANO_SF_SN], 2);
    pano_summary_clear(&doc);
    pano_summary_clear(&p);
}
END_TEST

START_TEST(an_update_applied_once)
{
    pano_run_summary p = part_of(run_events[1], 1), doc;
    pano_summary_init(&doc);
    ck_assert(pano_summary_apply(&doc, &p, "0:17"));
    pano_buf once = {0}, twice = {0};
    pano_summary_write(&doc, &once);
    ck_assert(!pano_summary_apply(&doc, &p, "0:17")); /* its answer was lost: retried */
    pano_summary_write(&doc, &twice);
    ck_assert_str_eq(once.data, twice.data);
    ck_assert_double_eq(doc.v[PANO_SF_N], 1);
    pano_buf_free(&once);
    pano_buf_free(&twice);
    /* the last 16 tokens are kept */
    char op[16];
    for (int i = 0; i < 20; i++) {
        snprintf(op, sizeof op, "0:%d", 100 + i);
        ck_assert(pano_summary_apply(&doc, &p, op));
    }
    pano_json *j = as_json(&doc);
    const pano_json *ops = pano_json_get(j, "ops");
    ck_assert_int_eq(pano_json_len(ops), 16);
    ck_assert_str_eq(pano_json_at(ops, 0)->u.string.text, "0:104");
    ck_assert_str_eq(pano_json_at(ops, 15)->u.string.text, "0:119");
    ck_assert_double_eq(num(j, "add.n"), 21);
    pano_json_free(j);
    pano_summary_clear(&doc);
    pano_summary_clear(&p);
}
END_TEST

/* What a reader keeps of a document, and what it passes over, the same from
 * its tree and from its text: unknown keys and groups, values of the wrong
 * type, nested containers where none belong, tokens past the 16 kept. */
START_TEST(read_whatever_else_it_holds)
{
    char *w = read_back(
        "{\"set\":{\"k\":\"inst\",\"id\":\"i-0123\",\"wf\":\"" WF "\",\"open\":true,\"job\":\"j1\","
        "\"inst\":3,\"pid\":\"7\",\"more\":{\"a\":[1,2]}},"
        "\"min\":{\"t0\":5.5,\"sub\":[1],\"ist\":null},\"max\":{\"last\":9,\"exec\":{\"x\":1},\"end\":1e3},"
        "\"add\":{\"n\":4,\"d\":true},\"least\":{\"xf\":\"x\",\"site\":7},\"other\":{\"k\":\"run\"},"
        "\"latest\":{\"st\":{\"o\":[1796516157,4,9],\"i\":\"00000000000000003132\","
        "\"v\":{\"ts\":12.25,\"status\":-1,\"e\":\"main.end\",\"zz\":1}},"
        "\"me\":{\"o\":[null,[2]],\"v\":{\"x\":\"0\",\"ld\":14}},\"h\":null,\"nope\":{\"v\":{\"h\":\"a\"}},"
        "\"iv\":{\"o\":[-3],\"v\":{\"xf\":\"burn\",\"exe\":[\"/bin\"]}}},"
        "\"put\":{\"inv\":{\"e1\":[1.5,null],\"e2\":[null,2.5,7],\"e3\":4,\"e4\":[]},\"x\":{}},"
        "\"ops\":[\"0:1\",2,\"1:2\",\"2:3\",\"3:4\",\"4:5\",\"5:6\",\"6:7\",\"7:8\",\"8:9\",\"9:10\","
        "\"10:11\",\"11:12\",\"12:13\",\"13:14\",\"14:15\",\"15:16\",\"16:17\"]}");
    ck_assert_ptr_nonnull(w);
    pano_json *j = parse(w);
    ck_assert_str_eq(str(j, "set.k"), "inst");
    ck_assert_str_eq(str(j, "set.job"), "j1");
    ck_assert(num(j, "set.inst") == 3);
    ck_assert(!at(j, "set.pid")); /* a string where a number belongs */
    ck_assert(num(j, "min.t0") == 5.5);
    ck_assert(!at(j, "min.sub") && !at(j, "max.exec") && !at(j, "add.d") && !at(j, "least.site"));
    ck_assert(num(j, "max.end") == 1000 && num(j, "add.n") == 4);
    ck_assert_str_eq(str(j, "least.xf"), "x");
    ck_assert(num(j, "latest.st.v.ts") == 12.25 && num(j, "latest.st.v.status") == -1);
    ck_assert_str_eq(str(j, "latest.st.v.e"), "main.end");
    ck_assert(!at(j, "latest.me.v.x") && num(j, "latest.me.v.ld") == 14);
    ck_assert(at(j, "latest.h")); /* present, whatever its value */
    ck_assert(!at(j, "latest.nope"));
    ck_assert_str_eq(str(j, "latest.iv.v.xf"), "burn");
    ck_assert(!at(j, "latest.iv.v.exe"));
    const pano_json *inv = at(j, "put.inv");
    ck_assert_int_eq(pano_json_len(inv), 4);
    ck_assert(num(j, "put.inv.e1") != num(j, "put.inv.e1")); /* an array, not a number */
    const pano_json *ops = pano_json_get_array(j, "ops");
    ck_assert_int_eq(pano_json_len(ops), 16);
    ck_assert_str_eq(pano_json_at(ops, 0)->u.string.text, "0:1");
    ck_assert_str_eq(pano_json_at(ops, 1)->u.string.text, "1:2"); /* the number left out */
    pano_json_free(j);
    free(w);
    /* not summaries: both refuse them */
    const char *not_summaries[] = {
        "[]", "{\"set\":{\"id\":\"r-1\"}}", "{\"set\":{\"k\":\"run\"}}",
        "{\"set\":{\"k\":\"nothing\",\"id\":\"r-1\"}}", "{\"set\":{\"k\":\"runs-and-more\",\"id\":\"r-1\"}}",
        "{\"set\":{\"k\":1,\"id\":\"r-1\"}}", "{\"set\":[\"k\",\"run\"]}", "{\"latest\":{\"set\":{\"k\":\"run\",\"id\":\"x\"}}}",
    };
    for (size_t i = 0; i < sizeof not_summaries / sizeof *not_summaries; i++)
        ck_assert_ptr_null(read_back(not_summaries[i]));
    pano_run_summary s;
    ck_assert(!pano_summary_parse("{\"set\":{\"k\":\"run\",\"id\":", 22, &s)); /* cut short */
    ck_assert(!pano_summary_parse("{\"set\":{\"k\":\"run\",\"id\":\"r\"}} x", 30, &s));
    w = read_back("{\"set\":{\"k\":\"run\",\"id\":\"r-1\"}}");
    ck_assert_str_eq(w, "{\"set\":{\"k\":\"run\",\"id\":\"r-1\",\"wf\":\"\",\"open\":true,\"failed\":false}}");
    free(w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("summary");
    TCase *tc = tcase_create("summary");
    tcase_add_test(tc, what_a_run_is_made_of);
    tcase_add_test(tc, what_an_instance_is_made_of);
    tcase_add_test(tc, side_events);
    tcase_add_test(tc, any_order_the_same);
    tcase_add_test(tc, open_until_the_end_or_the_verdict);
    tcase_add_test(tc, counts_only_when_asked);
    tcase_add_test(tc, an_update_applied_once);
    tcase_add_test(tc, read_whatever_else_it_holds);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
