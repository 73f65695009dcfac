/* The query library's arithmetic on job rows: pegasus-statistics' counts,
 * summaries with exact medians and percentiles, robust outliers (modified
 * z-score), overdue running jobs, failures; and its input checks. */
#include "event.h"
#include "jobs_fixture.h"
#include "mem.h"
#include "query.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A workflow of n jobs of transformation "burn" on two hosts. */
static pano_jobs make_jobs(size_t n)
{
    pano_jobs w = pano_test_workflow("2fe0d1b0-8916-4d5a-b4f7-bc975b17c87b", "test", n, 10000);
    w.first_event = 1000;
    w.last_event = 9000;
    for (size_t i = 0; i < n; i++) {
        pano_job *j = &w.jobs[i];
        char id[32];
        snprintf(id, sizeof id, "burn_ID%02zu", i);
        pano_test_name_job(j, id, "burn", i % 2 ? "node2" : "node1", "local", "/bin/burn");
        j->attempt = 1;
        j->exitcode = 0;
        j->start = 1000 + (double)i;
        j->duration = 10 + 0.1 * (double)(i % 5); /* 10.0 .. 10.4 */
        j->end = j->start + j->duration;
        j->cpu_time = j->duration * 0.9;
        j->maxrss = 1000 + (int64_t)(i % 3);
        j->bytes_read = 4096;
        j->bytes_written = 8192;
        j->from_monitor = true;
    }
    return w;
}

static const pano_group_stats *find_group(const pano_group_stats *g, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(g[i].name, name) == 0)
            return &g[i];
    return NULL;
}

START_TEST(summaries_are_exact)
{
    double v[] = {4, 1, 3, 2};
    pano_summary s = pano_summarize(v, 4);
    ck_assert_uint_eq(s.n, 4);
    ck_assert_double_eq(s.min, 1);
    ck_assert_double_eq(s.max, 4);
    ck_assert_double_eq(s.median, 2.5);
    ck_assert_double_eq(s.mean, 2.5);
    ck_assert_double_eq(s.total, 10);
    ck_assert_double_eq_tol(s.p95, 3.85, 1e-9); /* 1 + 0.95 * 3 ranks */
    pano_summary none = pano_summarize(v, 0);
    ck_assert(isnan(none.median));
    double one[] = {7};
    ck_assert_double_eq(pano_summarize(one, 1).p95, 7);
}
END_TEST

/* The workflow of the issue: 20 jobs of one transformation, one of them five
 * times longer, two failing (exit 3, SIGKILL), one still running and
 * already longer than nearly all. */
START_TEST(statistics_and_anomalies)
{
    pano_jobs w = make_jobs(20);
    w.jobs[7].duration = 50;
    w.jobs[7].cpu_time = 45;
    w.jobs[3].state = PANO_JOB_FAILED;
    w.jobs[3].exitcode = 3;
    w.jobs[11].state = PANO_JOB_KILLED;
    w.jobs[11].exitcode = 137;
    w.jobs[11].signal = 9;
    w.jobs[19].state = PANO_JOB_RUNNING;
    w.jobs[19].end = 0;
    w.jobs[19].duration = 30;

    pano_stats s;
    pano_stats_compute(&w, &s);
    ck_assert_uint_eq(s.jobs, 20);
    ck_assert_uint_eq(s.runs, 20);
    ck_assert_uint_eq(s.retries, 0);
    ck_assert_uint_eq(s.jobs_by_state[PANO_JOB_SUCCEEDED], 17);
    ck_assert_uint_eq(s.jobs_by_state[PANO_JOB_FAILED], 1);
    ck_assert_uint_eq(s.jobs_by_state[PANO_JOB_KILLED], 1);
    ck_assert_uint_eq(s.jobs_by_state[PANO_JOB_RUNNING], 1);
    ck_assert_uint_eq(s.n_transformations, 1);
    const pano_group_stats *g = find_group(s.transformations, 1, "burn");
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(g->runs, 20);
    ck_assert_uint_eq(g->failed, 2);
    ck_assert_uint_eq(g->running, 1);
    ck_assert_uint_eq(g->duration.n, 19); /* ended runs */
    ck_assert_double_eq(g->duration.max, 50);
    ck_assert_uint_eq(s.n_hosts, 2);
    ck_assert_uint_eq(find_group(s.hosts, 2, "node1")->runs, 10);
    double ended = 0, bad = 0;
    for (size_t i = 0; i < 19; i++) {
        ended += w.jobs[i].duration;
        bad += i == 3 || i == 11 ? w.jobs[i].duration : 0;
    }
    ck_assert_double_eq_tol(s.cumulative_job_wall_time, ended, 1e-9);
    ck_assert_double_eq_tol(s.cumulative_badput, bad, 1e-9);
    ck_assert_double_eq_tol(s.cumulative_job_wall_time_running, 30, 1e-9);
    ck_assert_double_eq_tol(s.wall_time, w.now - w.first_event, 1e-9); /* still running */
    pano_stats_free(&s);

    pano_anomaly *a;
    size_t n = pano_anomalies_find(&w, &a);
    bool failed3 = false, killed = false, long_dur = false, long_cpu = false, overdue = false;
    for (size_t i = 0; i < n; i++) {
        const char *id = a[i].job->id;
        if (a[i].kind == PANO_ANOMALY_FAILED) {
            failed3 |= strcmp(id, "burn_ID03") == 0;
            killed |= strcmp(id, "burn_ID11") == 0;
        } else if (a[i].kind == PANO_ANOMALY_OUTLIER) {
            ck_assert_str_eq(id, "burn_ID07"); /* nothing else stands out */
            long_dur |= strcmp(a[i].metric, "duration") == 0;
            long_cpu |= strcmp(a[i].metric, "cpu_time") == 0;
            ck_assert(a[i].score > PANO_OUTLIER_Z);
            ck_assert_uint_eq(a[i].peers, 19);
        } else {
            ck_assert_str_eq(id, "burn_ID19");
            ck_assert_str_eq(a[i].metric, "duration");
            overdue = true;
            ck_assert(a[i].value > a[i].threshold);
        }
    }
    ck_assert(failed3 && killed && long_dur && long_cpu && overdue);
    ck_assert_uint_eq(n, 5);
    free(a);
    pano_jobs_free(&w);
}
END_TEST

/* Fewer than 5 ended peers: no outlier verdict, however far a value is. */
START_TEST(outliers_need_peers)
{
    pano_jobs w = make_jobs(4);
    w.jobs[0].duration = 1000;
    pano_anomaly *a;
    ck_assert_uint_eq(pano_anomalies_find(&w, &a), 0);
    free(a);
    pano_jobs_free(&w);
}
END_TEST

/* When more than half the peers are equal the MAD is 0: the mean absolute
 * deviation stands in, and the equal ones are no outliers. */
START_TEST(identical_peers)
{
    pano_jobs w = make_jobs(8);
    for (size_t i = 0; i < 8; i++)
        w.jobs[i].duration = 10;
    w.jobs[5].duration = 20;
    pano_anomaly *a;
    size_t n = pano_anomalies_find(&w, &a);
    bool five = false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i].metric, "duration") == 0) {
            ck_assert_str_eq(a[i].job->id, "burn_ID05");
            five = true;
        }
    ck_assert(five);
    free(a);
    pano_jobs_free(&w);
}
END_TEST

/* Alike runs have a tiny MAD: a difference must also matter (25 % of the
 * median, and 1 s or 10 MiB) to make an outlier. */
START_TEST(small_differences_are_no_outliers)
{
    pano_jobs w = make_jobs(20);
    for (size_t i = 0; i < 20; i++) {
        w.jobs[i].duration = 0.300 + 0.001 * (double)(i % 3);
        w.jobs[i].cpu_time = w.jobs[i].duration;
        w.jobs[i].bytes_read = 1580;
        w.jobs[i].maxrss = 3800;
    }
    w.jobs[2].duration = 0.35;       /* a slow start: 17 % more, 50 ms */
    w.jobs[4].bytes_read = 5000;     /* three times more, but 3 KB */
    w.jobs[6].maxrss = 3200;         /* 16 % less */
    w.jobs[8].duration = 40;         /* that one matters */
    pano_anomaly *a;
    size_t n = pano_anomalies_find(&w, &a);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(a[0].job->id, "burn_ID08");
    ck_assert_str_eq(a[0].metric, "duration");
    free(a);
    pano_jobs_free(&w);
}
END_TEST

/* Retries: a DAG job counts once, by its latest attempt. */
START_TEST(retries_count_once)
{
    pano_jobs w = make_jobs(3);
    free(w.jobs[1].dag_job_id);
    w.jobs[1].dag_job_id = pano_strdup(w.jobs[0].dag_job_id);
    w.jobs[0].state = PANO_JOB_FAILED;
    w.jobs[0].exitcode = 1;
    w.jobs[1].attempt = 2;
    pano_stats s;
    pano_stats_compute(&w, &s);
    ck_assert_uint_eq(s.runs, 3);
    ck_assert_uint_eq(s.jobs, 2);
    ck_assert_uint_eq(s.retries, 1);
    ck_assert_uint_eq(s.jobs_by_state[PANO_JOB_SUCCEEDED], 2);
    ck_assert_uint_eq(s.jobs_by_state[PANO_JOB_FAILED], 0);
    pano_stats_free(&s);
    const pano_job *latest = pano_jobs_find(&w, w.jobs[0].dag_job_id);
    ck_assert_int_eq(latest->attempt, 2);
    char first[64];
    snprintf(first, sizeof first, "%s#1", w.jobs[0].dag_job_id);
    ck_assert_ptr_eq(pano_jobs_find(&w, first), &w.jobs[0]);
    ck_assert_ptr_null(pano_jobs_find(&w, "burn_ID00#3"));
    ck_assert_ptr_null(pano_jobs_find(&w, "nothing"));
    pano_jobs_free(&w);
}
END_TEST

START_TEST(names_are_checked)
{
    ck_assert(pano_query_job_name_valid("preprocess_ID0000001"));
    ck_assert(pano_query_job_name_valid("preprocess_ID01#2"));
    ck_assert(pano_query_job_name_valid("burn@node-1.example.org:4242"));
    const char *bad[] = {"", "a b", "x\"}", "../etc", "a*", "a,b", "a/b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!pano_query_job_name_valid(bad[i]), "accepted '%s'", bad[i]);
    char long_name[300];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    ck_assert(!pano_query_job_name_valid(long_name));
    pano_job_state s;
    ck_assert(pano_job_state_parse("killed", &s) && s == PANO_JOB_KILLED);
    ck_assert(!pano_job_state_parse("done", &s));
}
END_TEST

/* The JSON forms carry pegasus-statistics' names and null for what is not known. */
START_TEST(json_forms)
{
    pano_jobs w = make_jobs(2);
    w.jobs[1].state = PANO_JOB_RUNNING;
    w.jobs[1].maxrss = -1;
    pano_stats s;
    pano_stats_compute(&w, &s);
    pano_json *doc = pano_stats_to_json(&w, &s, NULL);
    char *text = pano_json_serialize(doc, NULL);
    ck_assert_msg(strstr(text, "\"workflow_wall_time\":") &&
                      strstr(text, "\"workflow_cumulative_job_wall_time\":") &&
                      strstr(text, "\"incomplete\":1") && strstr(text, "\"total\":2"),
                  "%s", text);
    free(text);
    pano_json_free(doc);
    pano_json *job = pano_job_to_json(&w.jobs[1]);
    text = pano_json_serialize(job, NULL);
    ck_assert_msg(strstr(text, "\"state\":\"running\"") && strstr(text, "\"exitcode\":null") &&
                      strstr(text, "\"maxrss\":null") && strstr(text, "\"end\":null"),
                  "%s", text);
    free(text);
    pano_json_free(job);
    pano_stats_free(&s);
    pano_jobs_free(&w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("query_stats");
    TCase *tc = tcase_create("stats");
    tcase_add_test(tc, summaries_are_exact);
    tcase_add_test(tc, statistics_and_anomalies);
    tcase_add_test(tc, outliers_need_peers);
    tcase_add_test(tc, identical_peers);
    tcase_add_test(tc, small_differences_are_no_outliers);
    tcase_add_test(tc, retries_count_once);
    tcase_add_test(tc, names_are_checked);
    tcase_add_test(tc, json_forms);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
