/* The JSON-lines sink: events written one by one, or held and written
 * together on pano_sink_flush() / pano_sink_close(); write failures. */
#include "config.h"
#include "event.h"
#include "sink.h"
#include "store.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64], out[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/pano-sink-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/events.jsonl", dir);
}

static void teardown(void)
{
    unlink(out);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s/store", dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}

static pano_sink *open_sink(const char *path)
{
    pano_config *cfg = pano_config_new();
    char err[256];
    ck_assert(pano_config_set(cfg, "pano.output", path, PANO_CFG_CLI, err, sizeof err) == 0);
    pano_sink *s = pano_sink_open(cfg, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    pano_config_free(cfg);
    return s;
}

static pano_json *event(int i)
{
    pano_json *ev = pano_json_object();
    pano_json_set_str(ev, "event", "transfer.inv.local.single");
    pano_json_set_int(ev, "seq", i);
    pano_json_set_str(ev, "pad", "0123456789012345678901234567890123456789");
    return ev;
}

static void send_event(pano_sink *s, int i, int expect)
{
    char err[256] = "";
    pano_json *ev = event(i);
    ck_assert_int_eq(pano_sink_send(s, ev, err, sizeof err), expect);
    pano_json_free(ev);
}

static off_t size_of(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

/* The file holds exactly the events first..last, in order, one a line. */
static void assert_lines(int first, int last)
{
    FILE *f = fopen(out, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int want = first;
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg(line[strlen(line) - 1] == '\n', "incomplete line: %s", line);
        char expected[64];
        snprintf(expected, sizeof expected, "\"seq\":%d,", want++);
        ck_assert_msg(strstr(line, expected), "line %s is not event %d", line, want - 1);
    }
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(want, last + 1);
}

START_TEST(lines_are_written_one_by_one)
{
    pano_sink *s = open_sink(out);
    for (int i = 1; i <= 3; i++) {
        send_event(s, i, 0);
        assert_lines(1, i);
    }
    ck_assert_uint_eq(pano_sink_get_stats(s).sent, 3);
    pano_sink_close(s);
}
END_TEST

START_TEST(held_lines_wait_for_flush)
{
    pano_sink *s = open_sink(out);
    pano_sink_hold(s, true);
    for (int i = 1; i <= 3; i++)
        send_event(s, i, 0);
    ck_assert_int_eq(size_of(out), 0);
    char err[256];
    ck_assert_int_eq(pano_sink_flush(s, err, sizeof err), 0);
    assert_lines(1, 3);
    ck_assert_uint_eq(pano_sink_get_stats(s).sent, 3);
    /* what is held at the end is written by close */
    send_event(s, 4, 0);
    ck_assert_int_eq(size_of(out) > 0, 1);
    pano_sink_close(s);
    assert_lines(1, 4);
}
END_TEST

START_TEST(held_lines_are_written_when_many)
{
    pano_sink *s = open_sink(out);
    pano_sink_hold(s, true);
    int n = 0;
    while (size_of(out) == 0) { /* 64 KiB of ~90-byte lines */
        send_event(s, ++n, 0);
        ck_assert_int_lt(n, 2000);
    }
    ck_assert_int_gt(n, 500);
    assert_lines(1, n); /* whole lines only */
    pano_sink_close(s);
}
END_TEST

START_TEST(held_payload_blocks)
{
    pano_config *cfg = pano_config_new();
    char err[256];
    pano_sink *s = pano_sink_open_file(cfg, out, PANO_SINK_PAYLOAD, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    pano_config_free(cfg);
    pano_sink_hold(s, true);
    send_event(s, 1, 0);
    send_event(s, 2, 0);
    ck_assert_int_eq(size_of(out), 0);
    ck_assert_int_eq(pano_sink_flush(s, err, sizeof err), 0);
    FILE *f = fopen(out, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg(strncmp(line, PANO_PAYLOAD_START, strlen(PANO_PAYLOAD_START)) == 0, "%s",
                      line);
        ck_assert_msg(strstr(line, PANO_PAYLOAD_END "\n"), "%s", line);
        n++;
    }
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(n, 2);
    pano_sink_close(s);
}
END_TEST

START_TEST(write_failures)
{
    /* one by one: the caller hears of it */
    pano_sink *s = open_sink("/dev/full");
    char err[256];
    pano_json *ev = event(1);
    ck_assert_int_eq(pano_sink_send(s, ev, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/dev/full") && strstr(err, "space"), "%s", err);
    pano_json_free(ev);
    ck_assert_uint_eq(pano_sink_get_stats(s).failed, 1);
    /* held: accepted, then reported by flush and counted */
    pano_sink_hold(s, true);
    for (int i = 2; i <= 4; i++)
        send_event(s, i, 0);
    ck_assert_int_eq(pano_sink_flush(s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "space"), "%s", err);
    pano_sink_stats st = pano_sink_get_stats(s);
    ck_assert_uint_eq(st.failed, 4);
    ck_assert_uint_eq(st.sent, 0);
    /* nothing is kept after a failure */
    ck_assert_int_eq(pano_sink_flush(s, err, sizeof err), 0);
    pano_sink_close(s);
}
END_TEST

/* An output file asked for is written with a broker URL too: a copy of
 * every event, whatever the broker does (here: nothing listens). */
START_TEST(output_file_beside_a_broker)
{
    pano_config *cfg = pano_config_new();
    char err[256];
    ck_assert(pano_config_set(cfg, "pano.output", out, PANO_CFG_CLI, err, sizeof err) == 0);
    ck_assert(pano_config_set(cfg, "pano.amqp.url", "amqp://u:secret@127.0.0.1:1/v/x",
                              PANO_CFG_ENV, err, sizeof err) == 0);
    ck_assert(pano_config_set(cfg, "pano.spool.enabled", "false", PANO_CFG_CLI, err,
                              sizeof err) == 0);
    ck_assert(pano_config_set(cfg, "pano.amqp.timeout", "1", PANO_CFG_CLI, err, sizeof err) ==
              0);
    pano_sink *s = pano_sink_open(cfg, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    pano_config_free(cfg);
    const char *d = pano_sink_describe(s);
    ck_assert_msg(strstr(d, "amqp://u:***@127.0.0.1:1") && strstr(d, " and ") &&
                      strstr(d, out) && !strstr(d, "secret"),
                  "%s", d);
    for (int i = 1; i <= 3; i++)
        send_event(s, i, -1); /* not delivered: no broker, no spool */
    assert_lines(1, 3);
    pano_sink_stats st = pano_sink_get_stats(s);
    ck_assert_uint_eq(st.failed, 3);
    ck_assert_uint_eq(st.sent, 0);
    pano_sink_close(s);
}
END_TEST

/* How many rows the store's files hold in table. */
static long long stored(const char *table)
{
    char path[128], err[256], sql[64];
    snprintf(path, sizeof path, "%s/store", dir);
    const char *paths[] = {path};
    sqlite3 *db = pano_store_open_reader(paths, 1, err, sizeof err);
    ck_assert_msg(db != NULL, "%s", err);
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* No broker: the embedded store, with a copy in pano.output when both are
 * set; an event its checks refuse is an error, kept as a dead letter. */
START_TEST(the_store_without_a_broker)
{
    pano_config *cfg = pano_config_new();
    char err[256], store[128];
    snprintf(store, sizeof store, "%s/store", dir);
    ck_assert(pano_config_set(cfg, "pano.store", store, PANO_CFG_CLI, err, sizeof err) == 0);
    ck_assert(pano_config_set(cfg, "pano.output", out, PANO_CFG_CLI, err, sizeof err) == 0);
    ck_assert(pano_config_set(cfg, "pano.hostname", "n1", PANO_CFG_CLI, err, sizeof err) == 0);
    pano_sink *s = pano_sink_open(cfg, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    pano_config_free(cfg);
    ck_assert_msg(strstr(pano_sink_describe(s), "/store/n1.pano.sqlite"), "%s",
                  pano_sink_describe(s));
    for (int i = 1; i <= 3; i++) {
        pano_json *ev = pano_json_object();
        char id[16];
        snprintf(id, sizeof id, "e%d", i);
        pano_json_set_str(ev, "event", "stampede.xwf.start");
        pano_json_set_double(ev, "ts", 1764000000 + i, 3);
        pano_json_set_str(ev, "event_id", id);
        pano_json_set_str(ev, "wf_uuid", "0b5c8a6e-1111-2222-3333-444455556666");
        ck_assert_msg(pano_sink_send(s, ev, err, sizeof err) == 0, "%s", err);
        if (i == 3) /* sent again: the same event_id, stored once */
            ck_assert_msg(pano_sink_send(s, ev, err, sizeof err) == 0, "%s", err);
        pano_json_free(ev);
    }
    pano_json *bad = pano_json_object();
    pano_json_set_str(bad, "event", "stampede.xwf.start");
    ck_assert_int_eq(pano_sink_send(s, bad, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "refused") && strstr(err, "dead letters"), "%s", err);
    pano_json_free(bad);
    pano_sink_stats st = pano_sink_get_stats(s);
    ck_assert_uint_eq(st.sent, 4);
    ck_assert_uint_eq(st.rejected, 1);
    pano_sink_close(s);
    ck_assert_int_eq(stored("events"), 3);
    ck_assert_int_eq(stored("dead_letters"), 1);
    /* the copy holds every event the sink was given */
    FILE *f = fopen(out, "r");
    ck_assert_ptr_nonnull(f);
    int lines = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        lines += c == '\n';
    fclose(f);
    ck_assert_int_eq(lines, 5);
}
END_TEST

/* Held events go into the store on its writer thread: a refusal is told at
 * once, the others count as sent once flushed. */
START_TEST(held_events_in_the_store_count_once_flushed)
{
    pano_config *cfg = pano_config_new();
    char err[256], store[128];
    snprintf(store, sizeof store, "%s/store", dir);
    ck_assert(pano_config_set(cfg, "pano.store", store, PANO_CFG_CLI, err, sizeof err) == 0);
    ck_assert(pano_config_set(cfg, "pano.hostname", "n1", PANO_CFG_CLI, err, sizeof err) == 0);
    pano_sink *s = pano_sink_open(cfg, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    pano_config_free(cfg);
    pano_sink_hold(s, true);
    for (int i = 1; i <= 3; i++) {
        char json[256];
        int n = snprintf(json, sizeof json,
                         "{\"event\":\"stampede.xwf.start\",\"ts\":%d,\"event_id\":\"e%d\","
                         "\"wf_uuid\":\"0b5c8a6e-1111-2222-3333-444455556666\"}",
                         1764000000 + i, i);
        for (int copy = 0; copy < (i == 3 ? 2 : 1); copy++) /* the last sent twice */
            ck_assert_msg(pano_sink_send_raw(s, "stampede.xwf.start", NULL, json, (size_t)n, err,
                                             sizeof err) == 0,
                          "%s", err);
    }
    const char *bad = "{\"event\":\"stampede.xwf.start\"}";
    ck_assert_int_eq(pano_sink_send_raw(s, "stampede.xwf.start", NULL, bad, strlen(bad), err,
                                        sizeof err),
                     -1);
    ck_assert_msg(strstr(err, "refused") && strstr(err, "wf_uuid"), "%s", err);
    pano_sink_stats st = pano_sink_get_stats(s);
    ck_assert_uint_eq(st.sent, 0);
    ck_assert_uint_eq(st.rejected, 1);
    ck_assert_int_eq(pano_sink_flush(s, err, sizeof err), 0);
    st = pano_sink_get_stats(s);
    ck_assert_uint_eq(st.sent, 4);
    ck_assert_uint_eq(st.failed, 0);
    ck_assert_int_eq(stored("events"), 3);
    ck_assert_int_eq(stored("dead_letters"), 1);
    pano_sink_close(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sink");
    TCase *tc = tcase_create("json_lines");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, lines_are_written_one_by_one);
    tcase_add_test(tc, held_lines_wait_for_flush);
    tcase_add_test(tc, held_lines_are_written_when_many);
    tcase_add_test(tc, held_payload_blocks);
    tcase_add_test(tc, write_failures);
    tcase_add_test(tc, output_file_beside_a_broker);
    tcase_add_test(tc, the_store_without_a_broker);
    tcase_add_test(tc, held_events_in_the_store_count_once_flushed);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
