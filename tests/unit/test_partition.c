/* Time partitions, streams and their policies (lib/partition.h), and
 * durations (lib/config.h). */
#include "config.h"
#include "event.h"
#include "partition.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

START_TEST(suffixes_and_bounds)
{
    char s[16];
    double t = 1790000000.5; /* 2026-09-21T14:13:20.5Z */
    pano_period_suffix(PANO_PERIOD_DAY, t, s, sizeof s);
    ck_assert_str_eq(s, "2026.09.21");
    pano_period_suffix(PANO_PERIOD_MONTH, t, s, sizeof s);
    ck_assert_str_eq(s, "2026.09");
    pano_period_suffix(PANO_PERIOD_YEAR, t, s, sizeof s);
    ck_assert_str_eq(s, "2026");
    ck_assert_double_eq(pano_period_start(PANO_PERIOD_DAY, t), 1789948800);   /* 09-21 */
    ck_assert_double_eq(pano_period_start(PANO_PERIOD_MONTH, t), 1788220800); /* 09-01 */
    ck_assert_double_eq(pano_period_next(PANO_PERIOD_MONTH, t), 1790812800);  /* 10-01 */
    ck_assert_double_eq(pano_period_start(PANO_PERIOD_YEAR, t), 1767225600);  /* 2026-01-01 */
    /* December rolls into the next year; the last second stays in its period */
    ck_assert_double_eq(pano_period_next(PANO_PERIOD_MONTH, 1798761599), 1798761600);
    pano_period_suffix(PANO_PERIOD_DAY, 1798761599.999, s, sizeof s);
    ck_assert_str_eq(s, "2026.12.31");
    pano_period_suffix(PANO_PERIOD_DAY, 0, s, sizeof s);
    ck_assert_str_eq(s, "1970.01.01");
}
END_TEST

START_TEST(suffixes_parse_back)
{
    double a, b;
    ck_assert(pano_period_parse(PANO_PERIOD_MONTH, "2026.09", &a, &b));
    ck_assert_double_eq(a, 1788220800);
    ck_assert_double_eq(b, 1790812800);
    ck_assert(pano_period_parse(PANO_PERIOD_DAY, "2024.02.29", &a, &b));
    ck_assert_double_eq(b - a, 86400);
    ck_assert(pano_period_parse(PANO_PERIOD_YEAR, "2024", &a, &b));
    ck_assert_double_eq(b - a, 366 * 86400.0);
    static const struct {
        pano_period p;
        const char *s;
    } bad[] = {{PANO_PERIOD_MONTH, "2026.9"},     {PANO_PERIOD_MONTH, "2026.13"},
               {PANO_PERIOD_MONTH, "2026.09.01"}, {PANO_PERIOD_MONTH, "2026"},
               {PANO_PERIOD_DAY, "2026.02.30"},   {PANO_PERIOD_DAY, "2025.02.29"},
               {PANO_PERIOD_YEAR, "1969"},        {PANO_PERIOD_YEAR, "26"},
               {PANO_PERIOD_YEAR, "2026x"},       {PANO_PERIOD_MONTH, "+026.09"},
               {PANO_PERIOD_DAY, ""},             {PANO_PERIOD_MONTH, "wf-0b2f"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!pano_period_parse(bad[i].p, bad[i].s, &a, &b), "parsed %s", bad[i].s);
}
END_TEST

START_TEST(streams)
{
    ck_assert_str_eq(pano_event_stream("kickstart.inv.online"), "samples");
    ck_assert_str_eq(pano_event_stream("kickstart.inv.end"), "kickstart");
    ck_assert_str_eq(pano_event_stream("stampede.job_inst.main.end"), "stampede");
    ck_assert_str_eq(pano_event_stream("myapp.step"), "other");
    ck_assert_int_eq(pano_stream_index("dead-letter"), PANO_STREAM_DEAD_LETTER);
    ck_assert_int_eq(pano_stream_index("unassigned"), PANO_STREAM_UNASSIGNED);
    ck_assert_int_eq(pano_stream_index("nope"), -1);
}
END_TEST

/* Every stream an event is stored in (its family, or samples) is one of the
 * first PANO_N_EVENT_STREAMS, and each of those is one. */
START_TEST(event_streams_come_first)
{
    size_t n = 0;
    for (const char *const *f = pano_event_families; *f; f++, n++) {
        int i = pano_stream_index(*f);
        ck_assert_msg(i >= 0 && i < PANO_N_EVENT_STREAMS, "%s is stream %d", *f, i);
    }
    int samples = pano_stream_index(pano_event_stream("kickstart.inv.online"));
    ck_assert(samples >= 0 && samples < PANO_N_EVENT_STREAMS);
    ck_assert_int_eq(n + 1, PANO_N_EVENT_STREAMS);
}
END_TEST

static int policies_of(const char *partition, const char *retention,
                       pano_stream_policy out[PANO_N_STREAMS], char *err, size_t errlen)
{
    pano_config *cfg = pano_config_new();
    char e[256];
    if (partition)
        ck_assert_int_eq(pano_config_set(cfg, "pano.indexer.partition", partition, PANO_CFG_CLI, e, sizeof e), 0);
    if (retention)
        ck_assert_int_eq(pano_config_set(cfg, "pano.indexer.retention", retention, PANO_CFG_CLI, e, sizeof e), 0);
    int rc = pano_stream_policies(cfg, out, err, errlen);
    pano_config_free(cfg);
    return rc;
}

START_TEST(policies_from_the_keys)
{
    pano_stream_policy p[PANO_N_STREAMS];
    char err[256];
    ck_assert_int_eq(policies_of(NULL, NULL, p, err, sizeof err), 0);
    for (int i = 0; i < PANO_N_STREAMS; i++) {
        ck_assert_int_eq(p[i].period, PANO_PERIOD_MONTH);
        ck_assert_double_eq(p[i].retention, 0);
    }
    ck_assert_int_eq(policies_of("year,samples=day, dead-letter=month", "2y,samples=90d", p, err,
                                 sizeof err), 0);
    int samples = pano_stream_index("samples");
    ck_assert_int_eq(p[samples].period, PANO_PERIOD_DAY);
    ck_assert_double_eq(p[samples].retention, 90 * 86400.0);
    ck_assert_int_eq(p[0].period, PANO_PERIOD_YEAR);
    ck_assert_double_eq(p[0].retention, 2 * 365 * 86400.0);
    ck_assert_int_eq(p[PANO_STREAM_DEAD_LETTER].period, PANO_PERIOD_MONTH);
    /* errors name the key and what is wrong */
    ck_assert_int_eq(policies_of("week", NULL, p, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "pano.indexer.partition: 'week'"));
    ck_assert_int_eq(policies_of(NULL, "90d,sample=30d", p, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "no stream 'sample'"));
    ck_assert_int_eq(policies_of(NULL, "samples=30d,90d", p, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "only the first item is a default"));
    ck_assert_int_eq(policies_of(NULL, "samples=soon", p, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "'soon' is not a value for samples"));
}
END_TEST

START_TEST(expiry)
{
    pano_stream_policy keep = {PANO_PERIOD_MONTH, 0}, month = {PANO_PERIOD_MONTH, 30 * 86400.0};
    double aug = 1787000000; /* 2026-08-17: August ends 1788220800 */
    ck_assert(!pano_period_expired(&keep, 0, 1790000000));
    ck_assert(!pano_period_expired(&month, aug, 1788220800 + 30 * 86400.0 - 1));
    ck_assert(pano_period_expired(&month, aug, 1788220800 + 30 * 86400.0 + 1));
}
END_TEST

START_TEST(durations)
{
    ck_assert_double_eq(pano_config_parse_duration("90d"), 90 * 86400.0);
    ck_assert_double_eq(pano_config_parse_duration("2y"), 2 * 365 * 86400.0);
    ck_assert_double_eq(pano_config_parse_duration("1.5h"), 5400);
    ck_assert_double_eq(pano_config_parse_duration("250ms"), 0.25);
    ck_assert_double_eq(pano_config_parse_duration("2w"), 14 * 86400.0);
    ck_assert_double_eq(pano_config_parse_duration("45"), 45);
    ck_assert_double_eq(pano_config_parse_duration("0"), 0);
    static const char *bad[] = {"", "d", "-1d", "3 days", "inf", "nan", "1e999", "5x", NULL};
    for (size_t i = 0; bad[i]; i++)
        ck_assert_msg(pano_config_parse_duration(bad[i]) < 0, "parsed '%s'", bad[i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("partition");
    TCase *tc = tcase_create("partition");
    tcase_add_test(tc, suffixes_and_bounds);
    tcase_add_test(tc, suffixes_parse_back);
    tcase_add_test(tc, streams);
    tcase_add_test(tc, event_streams_come_first);
    tcase_add_test(tc, policies_from_the_keys);
    tcase_add_test(tc, expiry);
    tcase_add_test(tc, durations);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
