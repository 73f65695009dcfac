/*
 * The pano-darshan program: --json, --payload, exit codes and messages,
 * wrapper mode (a stand-in darshan-parser), --text, and --watch on a real
 * directory tree (inotify, the rescan, the state file across a restart,
 * SIGTERM).
 */
#include "darshan_testutil.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];
static const char *program;

static char *tmp_path(const char *name)
{
    char *p = malloc(512);
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

/* Run a shell command; its stdout and stderr land in out and err (files
 * in tmpdir, read back). Returns the exit status. */
static int run(const char *cmd, char **out, char **err)
{
    char *o = tmp_path("stdout"), *e = tmp_path("stderr");
    char full[8192];
    snprintf(full, sizeof full, "%s >%s 2>%s", cmd, o, e);
    int status = system(full);
    ck_assert(status != -1 && WIFEXITED(status));
    size_t len;
    *out = read_file(o, &len);
    *err = read_file(e, &len);
    free(o);
    free(e);
    return WEXITSTATUS(status);
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; text && *text; text++)
        n += *text == '\n';
    return n;
}

static pano_json *parse_json(const char *text, size_t len)
{
    char err[256];
    pano_json *v = pano_json_parse(text, len, 0, err, sizeof err);
    ck_assert_msg(v != NULL, "%s in %.*s", err, (int)len, text);
    return v;
}

static void copy_file(const char *from, const char *to)
{
    size_t len;
    char *data = read_file(from, &len);
    ck_assert_msg(data != NULL, "%s", from);
    FILE *f = fopen(to, "wb");
    ck_assert(f && fwrite(data, 1, len, f) == len && fclose(f) == 0);
    free(data);
}

static char *fixture(const char *name)
{
    char sub[512];
    snprintf(sub, sizeof sub, "darshan/%s", name);
    return fixture_dir(sub);
}

#define LOG_350 "mpi-io-test-x86_64-3.5.0.darshan"

START_TEST(json_event_per_log)
{
    char *log = fixture(LOG_350), cmd[2048], *out, *err;
    snprintf(cmd, sizeof cmd, "%s --json %s", program, log);
    ck_assert_int_eq(run(cmd, &out, &err), 0);
    ck_assert_uint_eq(count_lines(out), 1);
    pano_json *ev = parse_json(out, strlen(out));
    ck_assert_str_eq(pano_json_get_str(ev, "event"), "darshan.perf");
    ck_assert_str_eq(pano_json_get_str(ev, "log_file"), log);
    double ts;
    int64_t end;
    ck_assert(pano_json_get_number(ev, "ts", &ts) && pano_json_get_int(ev, "end_time", &end));
    ck_assert(ts >= (double)end && ts < (double)end + 1); /* the job's end, not now */
    ck_assert_ptr_nonnull(pano_json_get(pano_json_get(ev, "POSIX_module_data"), "totals"));
    pano_json_free(ev);
    free(out);
    free(err);
    free(log);
}
END_TEST

START_TEST(payload_block)
{
    char *log = fixture(LOG_350), cmd[2048], *out, *err;
    snprintf(cmd, sizeof cmd, "%s --payload %s", program, log);
    ck_assert_int_eq(run(cmd, &out, &err), 0);
    const char *start = "@@@MONITORING_PAYLOAD - START@@@", *end = "@@@MONITORING_PAYLOAD - END@@@";
    char *a = strstr(out, start), *b = strstr(out, end);
    ck_assert(a && b && a < b);
    a += strlen(start);
    pano_json *block = parse_json(a, (size_t)(b - a));
    int64_t ts;
    ck_assert(pano_json_get_int(block, "ts", &ts) && ts == 1762569885);
    ck_assert_str_eq(pano_json_get_str(block, "monitoring_event"), "darshan.perf");
    pano_json *payload = pano_json_get(block, "payload");
    ck_assert(payload && payload->type == PANO_JSON_ARRAY && pano_json_len(payload) == 1);
    pano_json *item = pano_json_at(payload, 0);
    /* The reader (pano-monitor, monitord) sets the envelope itself. */
    ck_assert_ptr_null(pano_json_get(item, "event"));
    ck_assert_ptr_null(pano_json_get(item, "event_id"));
    ck_assert_ptr_null(pano_json_get(item, "wf_uuid"));
    ck_assert_int_eq(pano_json_get_int(item, "nprocs", &ts), true);
    double perf;
    ck_assert(pano_json_get_number(pano_json_get(item, "POSIX_module_data"), "agg_perf_by_slowest",
                                   &perf) && perf > 3122 && perf < 3123);
    pano_json_free(block);
    free(out);
    free(err);
    free(log);
}
END_TEST

/* --json and --payload follow the event filter and the toggle like
 * publishing does: one configuration, whatever the output. */
START_TEST(filter_applies_to_every_output)
{
    char *log = fixture(LOG_350), cmd[2048], *out, *err;
    const char *outputs[] = {"--json", "--payload"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s %s --set pano.events=kickstart.* %s", program, outputs[i],
                 log);
        ck_assert_int_eq(run(cmd, &out, &err), 0);
        ck_assert_msg(out[0] == '\0', "%s printed a filtered event: %.200s", outputs[i], out);
        free(out);
        free(err);
        snprintf(cmd, sizeof cmd, "%s %s --set pano.darshan.enabled=false %s", program,
                 outputs[i], log);
        ck_assert_int_eq(run(cmd, &out, &err), 0);
        ck_assert_msg(out[0] == '\0', "%s printed with darshan off: %.200s", outputs[i], out);
        free(out);
        free(err);
        snprintf(cmd, sizeof cmd, "%s %s --set pano.events=^darshan %s", program, outputs[i],
                 log);
        ck_assert_int_eq(run(cmd, &out, &err), 0);
        ck_assert_msg(strstr(out, "darshan.perf"), "%s: nothing printed", outputs[i]);
        free(out);
        free(err);
    }
    free(log);
}
END_TEST

START_TEST(bad_logs_fail_with_their_name)
{
    char *good = fixture(LOG_350), *garbage = tmp_path("garbage.darshan");
    char *newer = tmp_path("newer.darshan"), cmd[4096], *out, *err;
    FILE *f = fopen(garbage, "w");
    ck_assert(f && fputs("this is not a darshan log\n", f) >= 0 && fclose(f) == 0);

    snprintf(cmd, sizeof cmd, "%s --json %s %s %s", program, good, garbage, good);
    ck_assert_int_eq(run(cmd, &out, &err), 1);
    ck_assert_uint_eq(count_lines(out), 2); /* the good ones are still published */
    ck_assert_msg(strstr(err, garbage) && strstr(err, "not a Darshan log"), "%s", err);
    free(out);
    free(err);

    /* a newer format, and no darshan-parser to hand it to */
    copy_file(good, newer);
    int fd = open(newer, O_WRONLY);
    ck_assert(fd >= 0 && pwrite(fd, "3.50", 4, 0) == 4 && close(fd) == 0);
    snprintf(cmd, sizeof cmd, "PATH=/nonexistent %s --json %s", program, newer);
    ck_assert_int_eq(run(cmd, &out, &err), 1);
    ck_assert_msg(strstr(err, "unsupported log format version '3.50'") &&
                      strstr(err, "use --parser"),
                  "%s", err);
    free(out);
    free(err);

    snprintf(cmd, sizeof cmd, "%s --json /nonexistent.darshan", program);
    ck_assert_int_eq(run(cmd, &out, &err), 1);
    ck_assert_msg(strstr(err, "/nonexistent.darshan: cannot open"), "%s", err);
    free(out);
    free(err);

    snprintf(cmd, sizeof cmd, "%s", program);
    ck_assert_int_eq(run(cmd, &out, &err), 2);
    free(out);
    free(err);
    snprintf(cmd, sizeof cmd, "%s --help", program);
    ck_assert_int_eq(run(cmd, &out, &err), 0);
    ck_assert(strstr(out, "--watch DIR") && strstr(out, "--parser PATH") && strstr(out, "--payload"));
    free(out);
    free(err);
    free(garbage);
    free(newer);
    free(good);
}
END_TEST

/* A stand-in darshan-parser printing the reference text of LOG_350. */
static char *fake_parser(void)
{
    char *script = tmp_path("darshan-parser");
    char *perf = fixture("mpi-io-test-x86_64-3.5.0.total-perf.txt");
    char *file = fixture("mpi-io-test-x86_64-3.5.0.file.txt");
    FILE *f = fopen(script, "w");
    ck_assert(f);
    fprintf(f, "#!/bin/sh\necho \"$@\" > %s/parser-args\ncat '%s' '%s'\n", tmpdir, perf, file);
    ck_assert(fclose(f) == 0 && chmod(script, 0755) == 0);
    free(perf);
    free(file);
    return script;
}

static double posix_perf(const char *json_line)
{
    pano_json *ev = parse_json(json_line, strlen(json_line));
    double perf = -1;
    pano_json_get_number(pano_json_get(ev, "POSIX_module_data"), "agg_perf_by_slowest", &perf);
    pano_json_free(ev);
    return perf;
}

START_TEST(wrapper_and_text_modes)
{
    char *parser = fake_parser(), *log = fixture(LOG_350), cmd[4096], *out, *err;
    snprintf(cmd, sizeof cmd, "%s --json %s", program, log);
    ck_assert_int_eq(run(cmd, &out, &err), 0);
    double native = posix_perf(out);
    free(out);
    free(err);

    snprintf(cmd, sizeof cmd, "%s --json --parser %s %s", program, parser, log);
    ck_assert_int_eq(run(cmd, &out, &err), 0);
    char want[32], got[32];
    snprintf(want, sizeof want, "%.6f", native);
    snprintf(got, sizeof got, "%.6f", posix_perf(out));
    ck_assert_str_eq(want, got);
    free(out);
    free(err);
    char *args_path = tmp_path("parser-args"), *args;
    size_t len;
    args = read_file(args_path, &len);
    ck_assert_msg(strstr(args, "--total --perf --file"), "%s", args);
    free(args);

    /* a newer log goes to darshan-parser from PATH by itself */
    char *newer = tmp_path("newer.darshan");
    copy_file(log, newer);
    int fd = open(newer, O_WRONLY);
    ck_assert(fd >= 0 && pwrite(fd, "3.50", 4, 0) == 4 && close(fd) == 0);
    snprintf(cmd, sizeof cmd, "PATH=%s:/usr/bin:/bin %s --json %s", tmpdir, program, newer);
    ck_assert_int_eq(run(cmd, &out, &err), 0);
    ck_assert_uint_eq(count_lines(out), 1);
    free(out);
    free(err);

    /* --text - */
    char *perf = fixture("mpi-io-test-x86_64-3.5.0.total-perf.txt");
    snprintf(cmd, sizeof cmd, "%s --json --text - < %s", program, perf);
    ck_assert_int_eq(run(cmd, &out, &err), 0);
    snprintf(got, sizeof got, "%.6f", posix_perf(out));
    ck_assert_str_eq(want, got);
    free(out);
    free(err);

    free(perf);
    free(newer);
    free(args_path);
    free(parser);
    free(log);
}
END_TEST

/* ---- --watch -------------------------------------------------------------- */

static pid_t start_watch(const char *dir, const char *state, const char *out_path)
{
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int out = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        char *err_path = tmp_path("watch-stderr");
        int err = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(99);
        execl(program, program, "--watch", dir, "--json", "--state", state, "--set",
              "pano.darshan.rescan_interval=0.5", (char *)NULL);
        _exit(98);
    }
    return pid;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static size_t lines_now(const char *path)
{
    size_t len;
    char *text = read_file(path, &len);
    size_t n = count_lines(text);
    free(text);
    return n;
}

/* Lines in the output file, waiting up to 10 s for `want` of them. */
static size_t wait_lines(const char *path, size_t want)
{
    size_t n = 0;
    for (int i = 0; i < 100; i++) {
        size_t len;
        char *text = read_file(path, &len);
        n = count_lines(text);
        free(text);
        if (n >= want)
            break;
        pause_ms(100);
    }
    return n;
}

/* Wait (up to 20 s) until the watcher has said `count` times that its
 * initial scan is done. */
static void wait_ready(int count)
{
    char *err_path = tmp_path("watch-stderr");
    for (int i = 0; i < 200; i++) {
        size_t len;
        char *text = read_file(err_path, &len);
        int n = 0;
        for (const char *p = text; p && (p = strstr(p, "logs handled so far")); p++)
            n++;
        free(text);
        if (n >= count)
            break;
        pause_ms(100);
    }
    free(err_path);
}

static int stop(pid_t pid)
{
    ck_assert(kill(pid, SIGTERM) == 0);
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    ck_assert_msg(WIFEXITED(status), "pano-darshan --watch did not exit cleanly");
    return WEXITSTATUS(status);
}

START_TEST(watch_publishes_each_new_log_once)
{
    char *dir = tmp_path("logs"), *state = tmp_path("watch.state");
    char *out = tmp_path("watch.out"), *log = fixture(LOG_350);
    char path[1024], partial[1024];
    ck_assert(mkdir(dir, 0755) == 0);
    snprintf(path, sizeof path, "%s/old.darshan", dir);
    copy_file(log, path); /* there before the first start: recorded, not published */

    pid_t pid = start_watch(dir, state, out);
    wait_ready(1);
    /* a new dated folder, and Darshan's way: write *.darshan_partial, rename */
    snprintf(path, sizeof path, "%s/2026", dir);
    ck_assert(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/2026/11", dir);
    ck_assert(mkdir(path, 0755) == 0);
    snprintf(partial, sizeof partial, "%s/2026/11/job1.darshan_partial", dir);
    snprintf(path, sizeof path, "%s/2026/11/job1.darshan", dir);
    copy_file(log, partial);
    pause_ms(200);
    ck_assert(rename(partial, path) == 0);
    ck_assert_uint_eq(wait_lines(out, 1), 1);
    /* written in place (close_write), and a damaged one */
    snprintf(path, sizeof path, "%s/2026/11/job2.darshan", dir);
    copy_file(log, path);
    snprintf(path, sizeof path, "%s/2026/11/broken.darshan", dir);
    FILE *f = fopen(path, "w");
    ck_assert(f && fputs("garbage", f) >= 0 && fclose(f) == 0);
    ck_assert_uint_eq(wait_lines(out, 2), 2);
    pause_ms(1200); /* two rescans: nothing published twice */
    ck_assert_uint_eq(lines_now(out), 2);
    ck_assert_int_eq(stop(pid), 0);

    /* a restart publishes only what is new */
    pid = start_watch(dir, state, out);
    wait_ready(2);
    ck_assert_uint_eq(lines_now(out), 2);
    snprintf(path, sizeof path, "%s/2026/11/job3.darshan", dir);
    copy_file(log, path);
    ck_assert_uint_eq(wait_lines(out, 3), 3);
    ck_assert_int_eq(stop(pid), 0);

    size_t len;
    char *text = read_file(out, &len);
    ck_assert(strstr(text, "job1.darshan") && strstr(text, "job2.darshan") &&
              strstr(text, "job3.darshan") && !strstr(text, "old.darshan"));
    free(text);
    char *err_path = tmp_path("watch-stderr");
    text = read_file(err_path, &len);
    ck_assert_msg(strstr(text, "broken.darshan"), "%s", text);
    free(text);
    free(err_path);
    free(dir);
    free(state);
    free(out);
    free(log);
}
END_TEST

int main(void)
{
    program = getenv("PANO_DARSHAN");
    if (!program) {
        fprintf(stderr, "PANO_DARSHAN (the pano-darshan program) is not set\n");
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pano-darshan-test.XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    Suite *s = suite_create("darshan_cli");
    TCase *tc = tcase_create("pano-darshan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, json_event_per_log);
    tcase_add_test(tc, payload_block);
    tcase_add_test(tc, filter_applies_to_every_output);
    tcase_add_test(tc, bad_logs_fail_with_their_name);
    tcase_add_test(tc, wrapper_and_text_modes);
    tcase_add_test(tc, watch_publishes_each_new_log_once);
    suite_add_tcase(s, tc);
    int rc = pano_test_run(s);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return rc;
}
