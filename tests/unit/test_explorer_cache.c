/* pano-explorer's cursor (what a page sends back to learn whether its
 * workflow changed) and the cache of rows the requests share while they
 * hold. */
#include "cursor.h"
#include "jobs_cache.h"
#include "jobs_fixture.h"
#include "testutil.h"

#include <stdio.h>
#include <string.h>

START_TEST(cursor_text)
{
    explorer_cursor c = {.at = {.events = 1234, .summarized = 1200, .latest = 1700000000.123},
                         .until = 1700000060.5};
    char text[64];
    explorer_cursor_format(&c, text, sizeof text);
    ck_assert_str_eq(text, "1234-1200-1700000000123-1700000060500");
    explorer_cursor back;
    ck_assert(explorer_cursor_parse(text, &back));
    ck_assert_int_eq(back.at.events, 1234);
    ck_assert_int_eq(back.at.summarized, 1200);
    ck_assert_double_eq_tol(back.at.latest, 1700000000.123, 1e-6);
    ck_assert_double_eq_tol(back.until, 1700000060.5, 1e-6);
    c.until = 0;
    explorer_cursor_format(&c, text, sizeof text);
    ck_assert_str_eq(text, "1234-1200-1700000000123-0");
    static const char *const bad[] = {"", "1-2", "1-2-3", "1-2-3-4-5", "a-2-3-4", "1-2-3-4x",
                                      "1--3-4", "-1-2-3-4", "1-2-3-1234567890123456789",
                                      " 1-2-3-4", "1-2-3-4 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!explorer_cursor_parse(bad[i], &back), "'%s' was taken", bad[i]);
}
END_TEST

START_TEST(cursor_holds)
{
    explorer_cursor c = {.at = {.events = 10, .latest = 500.25}, .until = 1000};
    pano_changes same = {.events = 10, .latest = 500.25};
    pano_changes more = {.events = 11, .latest = 500.25};
    pano_changes later = {.events = 10, .latest = 500.5};
    pano_changes caught_up = {.events = 10, .latest = 500.25, .summarized = 10};
    ck_assert(explorer_cursor_holds(&c, &same, 999.9));
    ck_assert(!explorer_cursor_holds(&c, &same, 1000)); /* the clock may have changed it */
    ck_assert(!explorer_cursor_holds(&c, &more, 999));
    ck_assert(!explorer_cursor_holds(&c, &later, 999));
    /* the summaries written after the events they count */
    ck_assert(!explorer_cursor_holds(&c, &caught_up, 999));
    c.until = 0;
    ck_assert(explorer_cursor_holds(&c, &same, 1e12));
    /* what went through the text still holds: milliseconds compared */
    char text[64];
    explorer_cursor back;
    c.at.latest = 1700000000.1234567;
    explorer_cursor_format(&c, text, sizeof text);
    ck_assert(explorer_cursor_parse(text, &back));
    pano_changes now = {.events = 10, .latest = 1700000000.1234567};
    ck_assert(explorer_cursor_holds(&back, &now, 0));
}
END_TEST

/* A workflow of n runs, the state and interval of each given. */
static pano_jobs make(const char *uuid, size_t n, double now)
{
    pano_jobs w = pano_test_workflow(uuid, "", n, now);
    w.first_event = now - 100;
    for (size_t i = 0; i < n; i++) {
        pano_job *j = &w.jobs[i];
        char id[32];
        snprintf(id, sizeof id, "job_%zu", i);
        pano_test_name_job(j, id, "x", "h", "", "");
        j->from_monitor = true;
    }
    return w;
}

START_TEST(until_the_clock_may_change_it)
{
    pano_jobs w = make("00000000-0000-4000-8000-000000000001", 3, 1000);
    ck_assert_double_eq(explorer_cursor_until(&w), 0); /* all ended */
    w.jobs[1].state = PANO_JOB_RUNNING;
    w.jobs[1].interval = 5;
    w.jobs[2].state = PANO_JOB_RUNNING;
    w.jobs[2].interval = 7;
    ck_assert_double_eq(explorer_cursor_until(&w), 1005); /* the shortest interval */
    w.jobs[1].interval = 0.2;
    ck_assert_double_eq(explorer_cursor_until(&w), 1001); /* at least a second */
    w.jobs[1].interval = 0;
    ck_assert_double_eq(explorer_cursor_until(&w), 1001);
    w.jobs[1].interval = 600;
    w.jobs[2].interval = 900;
    ck_assert_double_eq(explorer_cursor_until(&w), 1000 + EXPLORER_CLOCK_RECHECK);
    /* pegasus-monitord's running jobs do not turn lost by the clock */
    w.jobs[1].from_monitor = w.jobs[2].from_monitor = false;
    ck_assert_double_eq(explorer_cursor_until(&w), 0);
    pano_jobs_free(&w);
}
END_TEST

#define WF_A "00000000-0000-4000-8000-00000000000a"
#define WF_B "00000000-0000-4000-8000-00000000000b"

START_TEST(cache_shares_rows_while_they_hold)
{
    jobs_cache *c = jobs_cache_new(100);
    pano_jobs a = make(WF_A, 3, 1000);
    explorer_cursor at = {.at = {.events = 6, .latest = 999}, .until = 1010}, got;
    pano_changes same = at.at, more = {.events = 7, .latest = 999.5};
    const pano_jobs *kept = jobs_cache_put(c, &a, &at, 1000);
    ck_assert_uint_eq(kept->n, 3);
    ck_assert_ptr_null(a.jobs); /* taken */
    const pano_jobs *again = jobs_cache_get(c, WF_A, &same, 1005, &got);
    ck_assert_ptr_eq(again, kept);
    ck_assert_int_eq(got.at.events, 6);
    ck_assert_double_eq(got.until, 1010);
    ck_assert_ptr_null(jobs_cache_get(c, WF_B, &same, 1005, &got));
    ck_assert_ptr_null(jobs_cache_get(c, WF_A, &same, 1010, &got)); /* the clock */
    /* dropped as out of date, yet the rows handed out stay until released */
    ck_assert_ptr_null(jobs_cache_get(c, WF_A, &same, 1005, &got));
    ck_assert_str_eq(again->jobs[2].id, "job_2");
    jobs_cache_release(c, again);
    jobs_cache_release(c, kept);

    pano_jobs a2 = make(WF_A, 4, 1020);
    at = (explorer_cursor){.at = more, .until = 0};
    kept = jobs_cache_put(c, &a2, &at, 1020);
    jobs_cache_release(c, kept);
    ck_assert_ptr_null(jobs_cache_get(c, WF_A, &same, 1021, &got)); /* events changed */
    pano_jobs a3 = make(WF_A, 4, 1020);
    kept = jobs_cache_put(c, &a3, &at, 1020);
    jobs_cache_release(c, kept);
    kept = jobs_cache_get(c, WF_A, &more, 1020 + JOBS_CACHE_IDLE, &got); /* until 0: always */
    ck_assert_ptr_nonnull(kept);
    jobs_cache_release(c, kept);
    /* but not once unused for longer than JOBS_CACHE_IDLE */
    ck_assert_ptr_null(jobs_cache_get(c, WF_A, &more, 1021 + 2 * JOBS_CACHE_IDLE, &got));
    jobs_cache_free(c);
}
END_TEST

START_TEST(cache_keeps_the_latest_within_bounds)
{
    /* at most 10 rows in all, beyond the latest workflow's */
    jobs_cache *c = jobs_cache_new(10);
    explorer_cursor at = {.at = {.events = 1, .latest = 1}}, got;
    pano_jobs a = make(WF_A, 6, 1000), b = make(WF_B, 6, 1000);
    jobs_cache_release(c, jobs_cache_put(c, &a, &at, 1000));
    jobs_cache_release(c, jobs_cache_put(c, &b, &at, 1001));
    ck_assert_ptr_null(jobs_cache_get(c, WF_A, &at.at, 1002, &got)); /* 12 rows: A went */
    const pano_jobs *kept = jobs_cache_get(c, WF_B, &at.at, 1002, &got);
    ck_assert_ptr_nonnull(kept);
    jobs_cache_release(c, kept);
    pano_jobs big = make(WF_A, 50, 1000);
    jobs_cache_release(c, jobs_cache_put(c, &big, &at, 1003));
    kept = jobs_cache_get(c, WF_A, &at.at, 1004, &got); /* more than the bound, but the latest */
    ck_assert_ptr_nonnull(kept);
    ck_assert_uint_eq(kept->n, 50);
    jobs_cache_release(c, kept);
    ck_assert_ptr_null(jobs_cache_get(c, WF_B, &at.at, 1004, &got));
    jobs_cache_free(c);

    /* at most JOBS_CACHE_WORKFLOWS workflows: the least recently used goes */
    c = jobs_cache_new(1000);
    char uuids[JOBS_CACHE_WORKFLOWS + 1][37];
    for (int i = 0; i <= JOBS_CACHE_WORKFLOWS; i++) {
        snprintf(uuids[i], sizeof uuids[i], "00000000-0000-4000-8000-%012d", i);
        pano_jobs w = make(uuids[i], 1, 1000);
        if (i == JOBS_CACHE_WORKFLOWS) /* the first one was used since */
            jobs_cache_release(c, jobs_cache_get(c, uuids[0], &at.at, 1000 + i, &got));
        jobs_cache_release(c, jobs_cache_put(c, &w, &at, 1000 + i));
    }
    ck_assert_ptr_null(jobs_cache_get(c, uuids[1], &at.at, 1010, &got));
    for (int i = 0; i <= JOBS_CACHE_WORKFLOWS; i++)
        if (i != 1) {
            kept = jobs_cache_get(c, uuids[i], &at.at, 1010, &got);
            ck_assert_msg(kept != NULL, "workflow %d was dropped", i);
            jobs_cache_release(c, kept);
        }
    jobs_cache_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("explorer_cache");
    TCase *t = tcase_create("cache");
    tcase_add_test(t, cursor_text);
    tcase_add_test(t, cursor_holds);
    tcase_add_test(t, until_the_clock_may_change_it);
    tcase_add_test(t, cache_shares_rows_while_they_hold);
    tcase_add_test(t, cache_keeps_the_latest_within_bounds);
    suite_add_tcase(s, t);
    return pano_test_run(s);
}
