/* Which indices retention deletes, and the shards a configuration keeps
 * (indexer/retention.h). */
#include "retention.h"
#include "testutil.h"

#include <string.h>

static const char *const bases[PANO_N_STREAMS] = {
    "pano-kickstart", "pano-samples", "pano-stampede",   "pano-darshan",    "pano-transfer",
    "pano-custom",    "pano-other",   "pano-unassigned", "pano-dead-letter"};

START_TEST(only_partitions_past_their_retention)
{
    pano_stream_policy p[PANO_N_STREAMS];
    for (int i = 0; i < PANO_N_STREAMS; i++)
        p[i] = (pano_stream_policy){PANO_PERIOD_MONTH, 0};
    p[1] = (pano_stream_policy){PANO_PERIOD_DAY, 90 * 86400.0};  /* samples: 90 days */
    p[0].retention = 2 * 365 * 86400.0;                          /* kickstart: 2 years */
    double now = 1790000000; /* 2026-09-21 */
    ck_assert(pano_retention_expired("pano-samples-2026.06.22", bases, p, now));
    ck_assert(!pano_retention_expired("pano-samples-2026.06.23", bases, p, now));
    ck_assert(!pano_retention_expired("pano-samples-2026.09.21", bases, p, now));
    ck_assert(pano_retention_expired("pano-kickstart-2024.08", bases, p, now));
    ck_assert(!pano_retention_expired("pano-kickstart-2024.09", bases, p, now));
    /* written under another period setting: still recognized */
    ck_assert(pano_retention_expired("pano-samples-2025", bases, p, now));
    ck_assert(pano_retention_expired("pano-samples-2026.05", bases, p, now));
    /* kept forever */
    ck_assert(!pano_retention_expired("pano-stampede-1970.01", bases, p, now));
    /* never: the old unpartitioned indices, other names, lookalikes */
    static const char *never[] = {"pano-samples",          "pano-kickstart",
                                  "pano-samples-old",      "pano-samples-2020.13",
                                  "pano-samples-2020.1.1", "pano-samplesx-2020.01",
                                  "other-samples-2020.01", "pano-kickstart-0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20",
                                  ".kibana",               NULL};
    for (size_t i = 0; never[i]; i++)
        ck_assert_msg(!pano_retention_expired(never[i], bases, p, now), "would delete %s",
                      never[i]);
    /* the summaries: kept as the stream they summarize (bases of their own,
     * "" for a stream without summaries, which no name matches) */
    static const char *const summaries[PANO_N_STREAMS] = {
        "pano-summary-kickstart", "", "pano-summary-stampede", "pano-summary-darshan",
        "pano-summary-transfer", "", "", "", ""};
    ck_assert(pano_retention_expired("pano-summary-kickstart-2024.08", summaries, p, now));
    ck_assert(!pano_retention_expired("pano-summary-kickstart-2024.09", summaries, p, now));
    ck_assert(!pano_retention_expired("pano-summary-stampede-1970.01", summaries, p, now));
    ck_assert(!pano_retention_expired("pano-summary-samples-2020.01", summaries, p, now));
    ck_assert(!pano_retention_expired("pano-summary-kickstart-2024.08", bases, p, now));
    double end;
    ck_assert_int_eq(pano_retention_stream_of("pano-dead-letter-2026.09", bases, &end),
                     PANO_STREAM_DEAD_LETTER);
    ck_assert_double_eq(end, 1790812800);
}
END_TEST

START_TEST(shard_budget)
{
    pano_stream_policy p[PANO_N_STREAMS];
    for (int i = 0; i < PANO_N_STREAMS; i++)
        p[i] = (pano_stream_policy){PANO_PERIOD_MONTH, 365 * 86400.0};
    long per_year;
    /* a year by month: 14 months at most (13 whole, the current one), 9 streams */
    ck_assert_int_eq(pano_retention_shards(p, 1, 0, false, &per_year), 9 * 16);
    ck_assert_int_eq(per_year, 0);
    ck_assert_int_eq(pano_retention_shards(p, 2, 1, false, &per_year), 9 * 16 * 4);
    /* the summaries of kickstart, stampede, darshan and transfer: 4 streams more */
    ck_assert_int_eq(pano_retention_shards(p, 1, 0, true, &per_year), 13 * 16);
    p[1] = (pano_stream_policy){PANO_PERIOD_DAY, 0}; /* samples by day, forever */
    ck_assert_int_eq(pano_retention_shards(p, 1, 0, false, &per_year), 8 * 16);
    ck_assert_int_eq(per_year, 366);
    /* samples have no summary stream of their own: they belong to kickstart's runs */
    ck_assert_int_eq(pano_retention_shards(p, 1, 0, true, &per_year), 12 * 16);
    ck_assert_int_eq(per_year, 366);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("indexer_retention");
    TCase *tc = tcase_create("retention");
    tcase_add_test(tc, only_partitions_past_their_retention);
    tcase_add_test(tc, shard_budget);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
