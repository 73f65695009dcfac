/* pano-bridge's metrics in Prometheus text (broker-bridge/counters.h). */
#include "buf.h"
#include "counters.h"
#include "event.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pano_bridge_counters sample(void)
{
    pano_bridge_counters m = {.received = 10, .received_bytes = 4000, .dead_lettered = 2,
                             .acked = 9, .in_flight = 1, .amqp_connected = true,
                             .consuming = true, .start_time = 1700000000.5,
                             .duplicates_skipped = 3, .dedup_ids = 6, .dedup_bytes = 2621536};
    m.produced[0] = 7; /* kickstart */
    m.produced[5] = 1; /* other */
    return m;
}

START_TEST(render)
{
    pano_bridge_counters m = sample();
    pano_buf out = {0};
    pano_bridge_counters_render(&m, pano_event_families, &out);
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE pano_bridge_messages_received_total counter\n"
                                           "pano_bridge_messages_received_total 10\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_events_produced_total{family=\"kickstart\"} 7\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_events_produced_total{family=\"other\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_messages_dead_lettered_total 2\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE pano_bridge_messages_in_flight gauge\n"
                                           "pano_bridge_messages_in_flight 1\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE pano_bridge_duplicates_skipped_total counter\n"
                                           "pano_bridge_duplicates_skipped_total 3\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_dedup_window_ids 6\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE pano_bridge_dedup_window_bytes gauge\n"
                                           "pano_bridge_dedup_window_bytes 2621536\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_start_time_seconds 1700000000.500\n"));
    /* every sample line is "name[{labels}] value" */
    char *save, *copy = strdup(out.data);
    int samples = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        ck_assert_msg(strncmp(line, "pano_bridge_", 12) == 0, "bad line: %s", line);
        const char *space = strrchr(line, ' ');
        ck_assert_ptr_nonnull(space);
        char *end;
        strtod(space + 1, &end);
        ck_assert_msg(*end == '\0', "bad value: %s", line);
        samples++;
    }
    ck_assert_int_ge(samples, 20);
    free(copy);
    pano_buf_free(&out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bridge_counters");
    TCase *tc = tcase_create("metrics");
    tcase_add_test(tc, render);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
