/* What a screen shows of a workflow's rows, worked out by hand: a page of
 * them by a filter and an order (pano_jobs_select), and a timeline's
 * overview, the runs alive per bin and state (pano_jobs_overview). */
#include "jobs_fixture.h"
#include "mem.h"
#include "query.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *id, *transformation, *host;
    pano_job_state state;
    double start, end, duration;
} row;

static pano_jobs make(const row *rows, size_t n, double now)
{
    pano_jobs w = pano_test_workflow("2fe0d1b0-8916-4d5a-b4f7-bc975b17c87b", "test", n, now);
    for (size_t i = 0; i < n; i++) {
        pano_job *j = &w.jobs[i];
        pano_test_name_job(j, rows[i].id, rows[i].transformation, rows[i].host, "", "");
        j->state = rows[i].state;
        j->start = rows[i].start;
        j->end = rows[i].end;
        j->duration = rows[i].duration;
    }
    return w;
}

/* ---- a page of rows --------------------------------------------------------- */

static const row page_rows[] = {
    {"prep_ID01", "prep", "node1", PANO_JOB_SUCCEEDED, 100, 110, 10},
    {"burn_ID02", "burn", "node2", PANO_JOB_FAILED, 200, 230, 30},
    {"burn_ID03", "burn", "Node1", PANO_JOB_RUNNING, 300, 0, 50},
    {"burn_ID04", "burn", "", PANO_JOB_QUEUED, 250, 0, 0},   /* submitted at 250 */
    {"post_ID05", "post", "", PANO_JOB_QUEUED, 0, 0, 0},     /* nothing known yet */
    {"burn_ID06", "burn", "node2", PANO_JOB_SUCCEEDED, 200, 220, 20},
};
enum { N_PAGE_ROWS = sizeof page_rows / sizeof page_rows[0] };

/* The ids of the page f gives from offset, limit rows, joined by spaces;
 * *total the rows that match. */
static const char *ids(const pano_jobs *w, const pano_job_filter *f, size_t offset, size_t limit,
                       size_t *total)
{
    static char out[512];
    size_t page[N_PAGE_ROWS], n;
    *total = pano_jobs_select(w, f, offset, limit, page, &n);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? " " : "",
                 w->jobs[page[i]].id);
    return out;
}

START_TEST(pages_in_each_order)
{
    pano_jobs w = make(page_rows, N_PAGE_ROWS, 1000);
    pano_job_filter f = {0};
    size_t total;
    /* newest: the waiting ones first (not started on top), then by start,
     * latest first; the same start by id */
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total),
                     "post_ID05 burn_ID04 burn_ID03 burn_ID02 burn_ID06 prep_ID01");
    ck_assert_uint_eq(total, 6);
    ck_assert_str_eq(ids(&w, &f, 2, 2, &total), "burn_ID03 burn_ID02");
    ck_assert_uint_eq(total, 6);
    ck_assert_str_eq(ids(&w, &f, 5, 10, &total), "prep_ID01");
    ck_assert_str_eq(ids(&w, &f, 6, 10, &total), "");
    ck_assert_uint_eq(total, 6);
    ck_assert_str_eq(ids(&w, &f, 0, 0, &total), "");
    ck_assert_uint_eq(total, 6);
    f.sort = PANO_SORT_OLDEST;
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total),
                     "prep_ID01 burn_ID02 burn_ID06 burn_ID04 burn_ID03 post_ID05");
    f.sort = PANO_SORT_LONGEST;
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total),
                     "burn_ID03 burn_ID02 burn_ID06 prep_ID01 burn_ID04 post_ID05");
    f.sort = PANO_SORT_ID;
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total),
                     "burn_ID02 burn_ID03 burn_ID04 burn_ID06 post_ID05 prep_ID01");
    pano_job_sort s;
    ck_assert(pano_job_sort_parse("newest", &s) && s == PANO_SORT_NEWEST);
    ck_assert(pano_job_sort_parse("longest", &s) && s == PANO_SORT_LONGEST);
    ck_assert(!pano_job_sort_parse("Newest", &s));
    ck_assert(!pano_job_sort_parse("", &s));
    pano_jobs_free(&w);
}
END_TEST

START_TEST(filters_on_words_and_states)
{
    pano_jobs w = make(page_rows, N_PAGE_ROWS, 1000);
    size_t total;
    /* in id, state, transformation or host, without case, trimmed */
    pano_job_filter f = {.text = "  NODE1 "};
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total), "burn_ID03 prep_ID01");
    ck_assert_uint_eq(total, 2);
    /* over the fields as one text: the id's end and the state's start */
    f.text = "id02 fail";
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total), "burn_ID02");
    f.text = "queued";
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total), "post_ID05 burn_ID04");
    f.text = "nothing like it";
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total), "");
    ck_assert_uint_eq(total, 0);
    f.text = "   ";
    ids(&w, &f, 0, 1, &total);
    ck_assert_uint_eq(total, 6);
    /* states, and both at once; a page of the matching ones */
    f.text = NULL;
    f.states = 1u << PANO_JOB_RUNNING | 1u << PANO_JOB_QUEUED;
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total), "post_ID05 burn_ID04 burn_ID03");
    ck_assert_str_eq(ids(&w, &f, 1, 1, &total), "burn_ID04");
    ck_assert_uint_eq(total, 3);
    f.text = "burn";
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total), "burn_ID04 burn_ID03");
    f.states = 1u << PANO_JOB_SUCCEEDED | 1u << PANO_JOB_FAILED;
    ck_assert_str_eq(ids(&w, &f, 0, 10, &total), "burn_ID02 burn_ID06");
    pano_jobs_free(&w);
}
END_TEST

/* ---- a timeline's overview ----------------------------------------------------- */

/* [1000, 1100] in 10 bins of 10 s; now is 1100. */
static const row timeline_rows[] = {
    {"a", "x", "h", PANO_JOB_SUCCEEDED, 1005, 1025, 20}, /* bins 0, 1, 2 */
    {"b", "x", "h", PANO_JOB_FAILED, 1030, 1040, 10},    /* bin 3: it ended as bin 4 began */
    {"c", "x", "h", PANO_JOB_RUNNING, 1095, 0, 5},       /* bin 9, until now */
    {"d", "x", "h", PANO_JOB_QUEUED, 1050, 0, 0},        /* no length: bin 5, where it is */
    {"e", "x", "h", PANO_JOB_QUEUED, 0, 0, 0},           /* not started: nowhere */
    {"f", "x", "h", PANO_JOB_LOST, 1060, 0, 15},         /* until its last event: bins 6, 7 */
    {"g", "x", "h", PANO_JOB_SUCCEEDED, 990, 1001, 11},  /* began before the window: bin 0 */
    {"h", "x", "h", PANO_JOB_SUCCEEDED, 1100, 1110, 10}, /* at the window's end: bin 9 */
    {"i", "x", "h", PANO_JOB_SUCCEEDED, 1200, 1210, 10}, /* after it: nowhere */
    {"j", "x", "h", PANO_JOB_FAILED, 1010, 1020, 10},    /* exactly bin 1 */
};
enum { N_TIMELINE_ROWS = sizeof timeline_rows / sizeof timeline_rows[0] };

static size_t alive(const pano_overview *o, size_t bin, pano_job_state s)
{
    return o->alive[bin * PANO_JOB_STATES + s];
}

START_TEST(overview_counts_runs_alive_per_bin)
{
    pano_jobs w = make(timeline_rows, N_TIMELINE_ROWS, 1100);
    pano_overview o;
    pano_jobs_overview(&w, 1000, 1100, 10, &o);
    ck_assert_double_eq(o.from, 1000);
    ck_assert_double_eq(o.to, 1100);
    ck_assert_uint_eq(o.bins, 10);
    /* by hand, bin by bin: succeeded, failed, running, queued, lost */
    static const size_t want[10][5] = {
        {2, 0, 0, 0, 0}, /* a, g */
        {1, 1, 0, 0, 0}, /* a, j */
        {1, 0, 0, 0, 0}, /* a */
        {0, 1, 0, 0, 0}, /* b */
        {0, 0, 0, 0, 0},
        {0, 0, 0, 1, 0}, /* d */
        {0, 0, 0, 0, 1}, /* f */
        {0, 0, 0, 0, 1}, /* f */
        {0, 0, 0, 0, 0},
        {1, 0, 1, 0, 0}, /* h, c */
    };
    static const pano_job_state states[5] = {PANO_JOB_SUCCEEDED, PANO_JOB_FAILED,
                                             PANO_JOB_RUNNING, PANO_JOB_QUEUED, PANO_JOB_LOST};
    for (size_t b = 0; b < 10; b++) {
        size_t all = 0;
        for (size_t s = 0; s < PANO_JOB_STATES; s++)
            all += alive(&o, b, (pano_job_state)s);
        size_t expected = 0;
        for (size_t s = 0; s < 5; s++) {
            ck_assert_msg(alive(&o, b, states[s]) == want[b][s], "bin %zu, %s: %zu, not %zu", b,
                          pano_job_state_name(states[s]), alive(&o, b, states[s]), want[b][s]);
            expected += want[b][s];
        }
        ck_assert_uint_eq(all, expected); /* and nothing in another state */
    }
    ck_assert_uint_eq(o.runs, 8); /* a b c d f g h j */
    ck_assert_uint_eq(o.peak, 2);
    pano_overview_free(&o);

    /* one bin: every run of the window in it */
    pano_jobs_overview(&w, 1000, 1100, 1, &o);
    ck_assert_uint_eq(alive(&o, 0, PANO_JOB_SUCCEEDED), 3);
    ck_assert_uint_eq(o.runs, 8);
    ck_assert_uint_eq(o.peak, 8);
    pano_overview_free(&o);

    /* no window: the span of the started runs, g's start to i's end */
    pano_jobs_overview(&w, 0, 0, 22, &o);
    ck_assert_double_eq(o.from, 990);
    ck_assert_double_eq(o.to, 1210);
    ck_assert_uint_eq(o.runs, 9);
    ck_assert_uint_eq(alive(&o, 21, PANO_JOB_SUCCEEDED), 1); /* i, in [1200, 1210] */
    ck_assert_uint_eq(alive(&o, 20, PANO_JOB_SUCCEEDED), 0);
    ck_assert_uint_eq(alive(&o, 0, PANO_JOB_SUCCEEDED), 1);  /* g, in [990, 1000) */
    pano_overview_free(&o);
    pano_jobs_free(&w);
}
END_TEST

START_TEST(alive_in_a_window)
{
    pano_jobs w = make(timeline_rows, N_TIMELINE_ROWS, 1100);
    const pano_job *a = &w.jobs[0], *c = &w.jobs[2], *d = &w.jobs[3], *e = &w.jobs[4];
    const pano_job *f = &w.jobs[5], *h = &w.jobs[7];
    ck_assert_double_eq(pano_job_timeline_end(&w, a), 1025);
    ck_assert_double_eq(pano_job_timeline_end(&w, c), 1100); /* now */
    ck_assert_double_eq(pano_job_timeline_end(&w, f), 1075); /* start + duration */
    ck_assert(pano_job_alive_in(&w, a, 1020, 1030, false));
    ck_assert(!pano_job_alive_in(&w, a, 1025, 1030, false)); /* ended as it began */
    ck_assert(!pano_job_alive_in(&w, a, 990, 1005, false));  /* began as it ended */
    ck_assert(pano_job_alive_in(&w, a, 990, 1005, true));
    ck_assert(pano_job_alive_in(&w, d, 1050, 1060, false));
    ck_assert(!pano_job_alive_in(&w, d, 1040, 1050, false));
    ck_assert(pano_job_alive_in(&w, d, 1040, 1050, true));
    ck_assert(!pano_job_alive_in(&w, e, 0, 2000, true));
    ck_assert(!pano_job_alive_in(&w, h, 1050, 1100, false));
    ck_assert(pano_job_alive_in(&w, h, 1050, 1100, true));
    pano_jobs_free(&w);
}
END_TEST

/* Many long runs cost no more than many short ones: a bin is never visited
 * per run. 100,000 runs of the whole window, 4,000 bins. */
START_TEST(overview_of_many_long_runs)
{
    size_t n = 100000;
    row *rows = pano_calloc(n, sizeof *rows);
    for (size_t i = 0; i < n; i++)
        rows[i] = (row){"r", "x", "h", i % 100 ? PANO_JOB_SUCCEEDED : PANO_JOB_FAILED,
                        1000 + (double)(i % 10), 5000, 4000};
    pano_jobs w = make(rows, n, 6000);
    pano_overview o;
    pano_jobs_overview(&w, 1000, 5000, 4000, &o);
    ck_assert_uint_eq(o.runs, n);
    ck_assert_uint_eq(o.peak, n);
    ck_assert_uint_eq(alive(&o, 3999, PANO_JOB_FAILED), 1000);
    ck_assert_uint_eq(alive(&o, 3999, PANO_JOB_SUCCEEDED), 99000);
    /* started in the first second: i % 10 == 0, of which i % 100 == 0 failed */
    ck_assert_uint_eq(alive(&o, 0, PANO_JOB_SUCCEEDED), 9000);
    ck_assert_uint_eq(alive(&o, 0, PANO_JOB_FAILED), 1000);
    pano_overview_free(&o);
    pano_jobs_free(&w);
    free(rows);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("query_page");
    TCase *t = tcase_create("page");
    tcase_add_test(t, pages_in_each_order);
    tcase_add_test(t, filters_on_words_and_states);
    tcase_add_test(t, overview_counts_runs_alive_per_bin);
    tcase_add_test(t, alive_in_a_window);
    tcase_add_test(t, overview_of_many_long_runs);
    suite_add_tcase(s, t);
    return pano_test_run(s);
}
