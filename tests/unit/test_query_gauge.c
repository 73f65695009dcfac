/* The mean and peak of a summed gauge per bucket (query/gauge.c), on
 * changes whose answers are worked out by hand, and the same answers
 * whether Elasticsearch sums the changes or the client knows them. */
#include "gauge.h"
#include "store_es.h"
#include "testutil.h"

#include <math.h>
#include <string.h>

/* Buckets start at T0 (ms, a multiple of every step below). */
#define T0 1700000000000LL

static pano_point *points_of(const gauge *g)
{
    pano_point *p = calloc(g->n, sizeof *p);
    gauge_points(g, p);
    return p;
}

START_TEST(a_short_job_beside_a_long_one)
{
    /* A 2 s step read every 125 ms. B holds 213 since before the bucket;
     * A holds 113 from 0.2 s to 1.0 s into it: 0.8 s of the bucket's 2 s.
     *   mean = 213 + 113 * 0.8 / 2 = 258.2, peak = 213 + 113 = 326;
     * the next bucket: B alone, 213. */
    gauge g;
    gauge_init(&g, T0, 2000, 125, 2);
    gauge_add(&g, T0 - 5000, 213);
    gauge_add(&g, T0 + 200, 113);
    gauge_add(&g, T0 + 1000, -113);
    pano_point *p = points_of(&g);
    ck_assert_double_eq_tol(p[0].value, 258.2, 1e-9);
    ck_assert_double_eq_tol(p[0].peak, 326, 1e-9);
    ck_assert_double_eq_tol(p[0].t, 1700000000.0, 1e-9);
    ck_assert_double_eq_tol(p[1].value, 213, 1e-9);
    ck_assert_double_eq_tol(p[1].peak, 213, 1e-9);
    ck_assert_double_eq_tol(p[1].t, 1700000002.0, 1e-9);
    free(p);
    gauge_free(&g);
}
END_TEST

START_TEST(a_small_job_sampled_every_step)
{
    /* 3.1 MiB (3174.4 kB) from 0.1 s into the first of three 0.2 s buckets
     * to 0.1 s into the third: 1/2, then all, then 1/2 of each bucket. */
    gauge g;
    gauge_init(&g, T0, 200, 12, 3);
    gauge_add(&g, T0 + 100, 3174.4);
    gauge_add(&g, T0 + 500, -3174.4);
    pano_point *p = points_of(&g);
    ck_assert_double_eq_tol(p[0].value, 1587.2, 1e-9);
    ck_assert_double_eq_tol(p[1].value, 3174.4, 1e-9);
    ck_assert_double_eq_tol(p[2].value, 1587.2, 1e-9);
    for (int k = 0; k < 3; k++)
        ck_assert_double_eq_tol(p[k].peak, 3174.4, 1e-9);
    free(p);
    gauge_free(&g);
}
END_TEST

START_TEST(a_level_shorter_than_the_grid)
{
    /* 1 s buckets read every 100 ms; 50 more held from 310 to 350 ms:
     * no grid instant sees it (the level just before 400 ms is 10 again),
     * the mean does: 10 + 50 * 0.04 = 12, and the peak is never below the
     * mean. Read every millisecond, the peak is the true one, 60. */
    for (int64_t grid = 100; grid >= 1; grid -= 99) {
        gauge g;
        gauge_init(&g, T0, 1000, grid, 1);
        gauge_add(&g, T0 - 1, 10);
        gauge_add(&g, T0 + 310, 50);
        gauge_add(&g, T0 + 350, -50);
        pano_point *p = points_of(&g);
        ck_assert_double_eq_tol(p[0].value, 12, 1e-9);
        ck_assert_double_eq_tol(p[0].peak, grid == 1 ? 60 : 12, 1e-9);
        free(p);
        gauge_free(&g);
    }
}
END_TEST

START_TEST(a_change_at_a_bucket_start)
{
    /* A run of 40 ends exactly where the second bucket starts, another of
     * 25 starts there: that bucket holds 25 all along, never 40 or 65. */
    gauge g;
    gauge_init(&g, T0, 1000, 100, 2);
    gauge_add(&g, T0 + 500, 40);
    gauge_add(&g, T0 + 1000, -40);
    gauge_add(&g, T0 + 1000, 25);
    pano_point *p = points_of(&g);
    ck_assert_double_eq_tol(p[0].value, 20, 1e-9);
    ck_assert_double_eq_tol(p[0].peak, 40, 1e-9);
    ck_assert_double_eq_tol(p[1].value, 25, 1e-9);
    ck_assert_double_eq_tol(p[1].peak, 25, 1e-9);
    free(p);
    gauge_free(&g);
}
END_TEST

START_TEST(outside_the_buckets)
{
    gauge g;
    gauge_init(&g, T0, 1000, 1000, 2);
    size_t k = 9;
    ck_assert(gauge_bucket_of(&g, T0 - 1, &k) && k == 0);
    ck_assert(gauge_bucket_of(&g, T0 + 1999, &k) && k == 1);
    ck_assert(!gauge_bucket_of(&g, T0 + 2000, &k));
    gauge_add(&g, T0 - 300, 7);   /* before: counts from the start */
    gauge_add(&g, T0 + 2000, -7); /* after the last bucket: changes none */
    ck_assert(!gauge_has_cells(&g, 1));
    ck_assert(gauge_has_cells(&g, 0));
    pano_point *p = points_of(&g);
    ck_assert_double_eq_tol(p[1].value, 7, 1e-9);
    ck_assert_double_eq_tol(p[1].peak, 7, 1e-9);
    free(p);
    gauge_free(&g);
}
END_TEST

START_TEST(never_below_zero)
{
    /* what rounding in the sums of d·t leaves under zero reads 0 */
    gauge g;
    gauge_init(&g, T0, 1000, 100, 1);
    gauge_add_stored(&g, 0, -1e-9, (double)(T0 + 500) * -1e-9, -1e-9, T0);
    pano_point *p = points_of(&g);
    ck_assert(p[0].value == 0 && p[0].peak == 0);
    free(p);
    gauge_free(&g);
}
END_TEST

/* ---- Elasticsearch's sums against the changes one by one --------------------------- */

typedef struct {
    int64_t t;
    double d;
} change;

/* What the histogram answers for the changes of bucket k: the sum of d and
 * of d·t, the highest running sum over the cells from the first with a
 * change to the last (cumulative_sum, max_bucket), the first time. */
static void store_as_es(gauge *g, size_t k, const change *c, size_t n)
{
    int64_t a = g->first + (int64_t)k * g->step, first = INT64_MAX;
    double sum = 0, by_time = 0, top = NAN, run = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++)
        if (c[i].t >= a && c[i].t < a + g->step) {
            sum += c[i].d;
            by_time += c[i].d * (double)c[i].t;
            first = c[i].t < first ? c[i].t : first;
            lo = c[i].t / g->grid < lo ? c[i].t / g->grid : lo;
            hi = c[i].t / g->grid > hi ? c[i].t / g->grid : hi;
        }
    for (int64_t cell = lo; cell <= hi && lo != INT64_MAX; cell++) {
        for (size_t i = 0; i < n; i++)
            if (c[i].t >= a && c[i].t < a + g->step && c[i].t / g->grid == cell)
                run += c[i].d;
        top = isnan(top) ? run : fmax(top, run);
    }
    if (first != INT64_MAX)
        gauge_add_stored(g, k, sum, by_time, top, first);
}

/* The cells Elasticsearch answers for bucket k: the sum per non-empty cell. */
static void cells_as_es(gauge *g, size_t k, const change *c, size_t n)
{
    int64_t a = g->first + (int64_t)k * g->step;
    for (size_t i = 0; i < n; i++)
        if (c[i].t >= a && c[i].t < a + g->step)
            gauge_add_cell(g, k, c[i].t / g->grid * g->grid, c[i].d);
}

START_TEST(stored_or_known_the_same)
{
    /* Random runs over 6 buckets of 1 s on a grid of 62 ms (16 a second,
     * not a divisor of it), some changes on a bucket's or a cell's edge:
     * the stored path (sums, running sums) gives what the changes one by
     * one give; and so does half of them stored, half known. */
    uint64_t seed = 42;
    enum { N = 400, BUCKETS = 6 };
    change c[N];
    for (int round = 0; round < 100; round++) {
        /* from a few changes (buckets whose first change is late) to many */
        size_t pairs = round < 50 ? 1 + (size_t)round / 10 : N / 2, n = 0;
        for (size_t i = 0; i < N; i++)
            c[i] = (change){T0 + 100000, 0}; /* after the buckets: changes none */
        while (n + 2 <= 2 * pairs) {
            int64_t from = (int64_t)(pano_test_random(&seed) % (BUCKETS * 1000));
            int64_t len = 1 + (int64_t)(pano_test_random(&seed) % 1500);
            if (pano_test_random(&seed) % 4 == 0)
                from = from / 1000 * 1000; /* on a bucket's start */
            double v = (double)(1 + pano_test_random(&seed) % 1000);
            c[n++] = (change){T0 + from, v};
            c[n++] = (change){T0 + from + len, -v};
        }
        gauge known, stored, mixed;
        gauge_init(&known, T0, 1000, 62, BUCKETS);
        gauge_init(&stored, T0, 1000, 62, BUCKETS);
        gauge_init(&mixed, T0, 1000, 62, BUCKETS);
        for (size_t i = 0; i < N; i++) {
            gauge_add(&known, c[i].t, c[i].d);
            if (i % 2)
                gauge_add(&mixed, c[i].t, c[i].d);
        }
        change even[N / 2];
        for (size_t i = 0; i < N / 2; i++)
            even[i] = c[2 * i];
        for (size_t k = 0; k < BUCKETS; k++) {
            store_as_es(&stored, k, c, N);
            store_as_es(&mixed, k, even, N / 2);
            cells_as_es(&mixed, k, even, N / 2);
        }
        pano_point *pk = points_of(&known), *ps = points_of(&stored), *pm = points_of(&mixed);
        for (size_t k = 0; k < BUCKETS; k++) {
            /* within the rounding of sums of d·t near 1e17 */
            ck_assert_double_eq_tol(ps[k].value, pk[k].value, 0.05);
            ck_assert_double_eq_tol(ps[k].peak, pk[k].peak, 0.05);
            ck_assert_double_eq_tol(pm[k].value, pk[k].value, 0.05);
            ck_assert_double_eq_tol(pm[k].peak, pk[k].peak, 0.05);
            ck_assert(pk[k].peak >= pk[k].value);
        }
        free(pk);
        free(ps);
        free(pm);
        gauge_free(&known);
        gauge_free(&stored);
        gauge_free(&mixed);
    }
}
END_TEST

START_TEST(the_peak_on_the_grid_by_hand)
{
    /* 1 s, grid 250 ms. From 0: +30 at 100, +20 at 300, -50 at 600,
     * +10 at 900. Just before 250: 30; 500: 50; 750: 0; 1000: 10. */
    change c[] = {{T0 + 100, 30}, {T0 + 300, 20}, {T0 + 600, -50}, {T0 + 900, 10}};
    gauge g;
    gauge_init(&g, T0, 1000, 250, 1);
    store_as_es(&g, 0, c, 4);
    pano_point *p = points_of(&g);
    /* mean: 30*0.9 + 20*0.7 - 50*0.4 + 10*0.1 = 27 + 14 - 20 + 1 = 22 */
    ck_assert_double_eq_tol(p[0].value, 22, 1e-6);
    ck_assert_double_eq_tol(p[0].peak, 50, 1e-6);
    free(p);
    gauge_free(&g);
}
END_TEST

START_TEST(a_late_drop_stored)
{
    /* 100 from 900 ms leaves 600 ms into the next bucket: that bucket's
     * stored cells start at the one of 600, yet 100 stood at 250 and 500. */
    change c[] = {{T0 + 900, 100}, {T0 + 1600, -100}};
    gauge g;
    gauge_init(&g, T0, 1000, 250, 2);
    store_as_es(&g, 0, c, 2);
    store_as_es(&g, 1, c, 2);
    pano_point *p = points_of(&g);
    ck_assert_double_eq_tol(p[0].value, 10, 1e-6);
    ck_assert_double_eq_tol(p[0].peak, 100, 1e-6);
    ck_assert_double_eq_tol(p[1].value, 60, 1e-6);
    ck_assert_double_eq_tol(p[1].peak, 100, 1e-6);
    free(p);
    gauge_free(&g);
}
END_TEST

START_TEST(gauges_are_one_field)
{
    /* a gauge's running sum is one cumulative_sum of one field */
    for (const pano_metric_info *m = pano_series_metrics; m->name; m++)
        if (!m->rate)
            ck_assert_msg(m->fields[0] && !m->fields[1], "%s", m->name);
}
END_TEST

START_TEST(the_millisecond_stored)
{
    /* @timestamp to the microsecond, Elasticsearch keeps the milliseconds */
    ck_assert_int_eq(pano_event_ms(1700000000.25), 1700000000250LL);
    ck_assert_int_eq(pano_event_ms(1700000000.0019), 1700000000001LL);
    ck_assert_int_eq(pano_event_ms(1700000000.9999996), 1700000001000LL);
    ck_assert_int_eq(pano_event_ms(1700000001), 1700000001000LL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("query_gauge");
    TCase *tc = tcase_create("gauge");
    tcase_add_test(tc, a_short_job_beside_a_long_one);
    tcase_add_test(tc, a_small_job_sampled_every_step);
    tcase_add_test(tc, a_level_shorter_than_the_grid);
    tcase_add_test(tc, a_change_at_a_bucket_start);
    tcase_add_test(tc, outside_the_buckets);
    tcase_add_test(tc, never_below_zero);
    tcase_add_test(tc, stored_or_known_the_same);
    tcase_add_test(tc, the_peak_on_the_grid_by_hand);
    tcase_add_test(tc, a_late_drop_stored);
    tcase_add_test(tc, gauges_are_one_field);
    tcase_add_test(tc, the_millisecond_stored);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
