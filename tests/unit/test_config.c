/* Configuration: properties syntax, precedence file < env < command line,
 * validation errors that name the key, Pegasus aliases. */
#include "cli.h"
#include "config.h"
#include "secret.h"
#include "kafka.h"
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[] = "/tmp/pano-test-config-XXXXXX";

static void write_file(const char *text)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void cleanup(void)
{
    unlink(path);
    strcpy(path, "/tmp/pano-test-config-XXXXXX");
    unsetenv("PANO_WF_UUID");
    unsetenv("PEGASUS_WF_UUID");
    unsetenv("PANO_AMQP_HEARTBEAT");
    unsetenv("KICKSTART_MON_URL");
    unsetenv("PANO_RANK");
    unsetenv("PMI_RANK");
    unsetenv("SLURM_PROCID");
}

START_TEST(properties_syntax)
{
    write_file("# comment\n"
               "! also a comment\n"
               "pano.wf_label = my workflow  \n"
               "pano.site:condorpool\n"
               "pano.dag_job_id   job\\\n"
               "    _ID0001\n"
               "pano.task_id=\\u00e9t\\u00e9\n"
               "pegasus.catalog.workflow.amqp.url amqp://h/v/x\n"
               "pegasus.unrelated.key = ignored\n"
               "pano.amqp.heartbeat = 7\r\n");
    pano_config *c = pano_config_new();
    char err[512];
    ck_assert_msg(pano_config_load_file(c, path, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(pano_config_str(c, "pano.wf_label"), "my workflow  ");
    ck_assert_str_eq(pano_config_str(c, "pano.site"), "condorpool");
    ck_assert_str_eq(pano_config_str(c, "pano.dag_job_id"), "job_ID0001");
    ck_assert_str_eq(pano_config_str(c, "pano.task_id"), "\xc3\xa9t\xc3\xa9");
    ck_assert_str_eq(pano_config_str(c, "pano.amqp.url"), "amqp://h/v/x");
    ck_assert_int_eq(pano_config_int(c, "pano.amqp.heartbeat"), 7);
    ck_assert_int_eq(pano_config_source_of(c, "pano.site"), PANO_CFG_FILE);
    pano_config_free(c);
    cleanup();
}
END_TEST

START_TEST(precedence_file_env_cli)
{
    write_file("pano.wf_uuid = from-file\npano.amqp.heartbeat = 5\npano.site = s1\n");
    setenv("PANO_WF_UUID", "from-env", 1);
    setenv("PANO_AMQP_HEARTBEAT", "6", 1);
    pano_config *c = pano_config_new();
    char err[512];
    ck_assert(pano_config_load(c, path, err, sizeof err) == 0);
    ck_assert_int_eq(pano_config_set(c, "pano.amqp.heartbeat", "9", PANO_CFG_CLI, err,
                                     sizeof err), 0);
    ck_assert_str_eq(pano_config_str(c, "pano.site"), "s1");             /* file */
    ck_assert_str_eq(pano_config_str(c, "pano.wf_uuid"), "from-env");    /* env > file */
    ck_assert_int_eq(pano_config_int(c, "pano.amqp.heartbeat"), 9);      /* cli > env */
    /* A lower layer never overrides a higher one, whatever the order. */
    ck_assert_int_eq(pano_config_set(c, "pano.amqp.heartbeat", "1", PANO_CFG_FILE, err,
                                     sizeof err), 0);
    ck_assert_int_eq(pano_config_int(c, "pano.amqp.heartbeat"), 9);
    ck_assert(pano_config_double(c, "pano.amqp.timeout") == 10.0); /* default */
    ck_assert_int_eq(pano_config_source_of(c, "pano.amqp.timeout"), PANO_CFG_DEFAULT);
    pano_config_free(c);
    cleanup();
}
END_TEST

START_TEST(pegasus_environment_aliases)
{
    setenv("PEGASUS_WF_UUID", "pegasus-value", 1);
    setenv("PMI_RANK", "3", 1);
    setenv("SLURM_PROCID", "5", 1);
    pano_config *c = pano_config_new();
    char err[512];
    ck_assert(pano_config_load_env(c, err, sizeof err) == 0);
    ck_assert_str_eq(pano_config_str(c, "pano.wf_uuid"), "pegasus-value");
    ck_assert_int_eq(pano_config_int(c, "pano.rank"), 3); /* PMI_RANK before SLURM_PROCID */
    pano_config_free(c);
    /* The PANO_ name wins over the Pegasus alias. */
    setenv("PANO_WF_UUID", "pano-value", 1);
    c = pano_config_new();
    ck_assert(pano_config_load_env(c, err, sizeof err) == 0);
    ck_assert_str_eq(pano_config_str(c, "pano.wf_uuid"), "pano-value");
    pano_config_free(c);
    cleanup();
}
END_TEST

START_TEST(bad_values_name_the_key_and_origin)
{
    char err[512];
    pano_config *c = pano_config_new();
    ck_assert_int_eq(pano_config_set(c, "pano.amqp.heartbeat", "often", PANO_CFG_CLI, err,
                                     sizeof err), -1);
    ck_assert_msg(strstr(err, "pano.amqp.heartbeat") && strstr(err, "not an integer"), "%s", err);
    ck_assert_int_eq(pano_config_set(c, "pano.amqp.timeout", "0", PANO_CFG_CLI, err,
                                     sizeof err), -1);
    ck_assert_msg(strstr(err, "out of range"), "%s", err);
    ck_assert_int_eq(pano_config_set(c, "pano.amqp.tls_verify", "maybe", PANO_CFG_CLI, err,
                                     sizeof err), -1);
    ck_assert_int_eq(pano_config_set(c, "pano.log.level", "loud", PANO_CFG_CLI, err,
                                     sizeof err), -1);
    ck_assert_int_eq(pano_config_set(c, "pano.no.such.key", "1", PANO_CFG_CLI, err,
                                     sizeof err), -1);
    ck_assert_msg(strstr(err, "unknown configuration key 'pano.no.such.key'"), "%s", err);
    pano_config_free(c);

    write_file("pano.site = ok\npano.amqp.heartbeat = -4\npano.wf_label = after\n");
    c = pano_config_new();
    ck_assert_int_eq(pano_config_load_file(c, path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "pano.amqp.heartbeat") && strstr(err, ":2"), "%s", err);
    /* The keys around the bad one are still loaded. */
    ck_assert_str_eq(pano_config_str(c, "pano.site"), "ok");
    ck_assert_str_eq(pano_config_str(c, "pano.wf_label"), "after");
    pano_config_free(c);
    cleanup();

    setenv("PANO_AMQP_HEARTBEAT", "x", 1);
    c = pano_config_new();
    ck_assert_int_eq(pano_config_load_env(c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "PANO_AMQP_HEARTBEAT"), "%s", err);
    pano_config_free(c);
    cleanup();
}
END_TEST

/* The value librdkafka holds for a property, or "" when it has none. */
static const char *kafka_value(rd_kafka_conf_t *conf, const char *name, char *buf, size_t size)
{
    if (rd_kafka_conf_get(conf, name, buf, &size) != RD_KAFKA_CONF_OK)
        buf[0] = '\0';
    return buf;
}

START_TEST(kafka_property_lists)
{
    static const pano_kafka_property own[] = {{"acks", "all"}};
    char err[512], value[64];
    pano_config *c = pano_config_new();
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    /* unset: nothing changes */
    ck_assert_int_eq(pano_kafka_conf_apply(conf, own, 1, c, "pano.bridge.kafka_properties", err,
                                           sizeof err), 0);
    ck_assert_int_eq(pano_config_set(c, "pano.bridge.kafka_properties",
                                     "compression.type=lz4,linger.ms=7", PANO_CFG_CLI, err,
                                     sizeof err), 0);
    ck_assert_int_eq(pano_kafka_conf_apply(conf, own, 1, c, "pano.bridge.kafka_properties", err,
                                           sizeof err), 0);
    ck_assert_str_eq(kafka_value(conf, "compression.type", value, sizeof value), "lz4");
    ck_assert_str_eq(kafka_value(conf, "linger.ms", value, sizeof value), "7");

    /* one of the program's own, an item without '=', an unknown property: refused,
     * with the key named and no value repeated */
    static const char *const bad[][2] = {
        {"acks=0", "acks is set by the program itself"},
        {"linger.ms=1,secret-token", "item 2 is not name=value"},
        {"no.such.property=1", "no.such.property"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(pano_config_set(c, "pano.bridge.kafka_properties", bad[i][0],
                                         PANO_CFG_CLI, err, sizeof err), 0);
        ck_assert_int_eq(pano_kafka_conf_apply(conf, own, 1, c, "pano.bridge.kafka_properties", err,
                                               sizeof err), -1);
        ck_assert_msg(strstr(err, "pano.bridge.kafka_properties") && strstr(err, bad[i][1]),
                      "%s", err);
        ck_assert_msg(!strstr(err, "secret-token"), "%s", err);
    }
    ck_assert_str_eq(kafka_value(conf, "acks", value, sizeof value), "-1"); /* unchanged: all */
    rd_kafka_conf_destroy(conf);
    pano_config_free(c);
}
END_TEST

START_TEST(missing_file_is_an_error)
{
    pano_config *c = pano_config_new();
    char err[512];
    ck_assert_int_eq(pano_config_load_file(c, "/nonexistent/pano.properties", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent/pano.properties"), "%s", err);
    pano_config_free(c);
}
END_TEST

START_TEST(secret_values_are_redacted_in_dumps)
{
    pano_config *c = pano_config_new();
    char err[512];
    ck_assert(pano_config_set(c, "pano.amqp.url", "amqp://u:s3cret@h/v/x", PANO_CFG_CLI, err,
                              sizeof err) == 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pano_config_dump(c, f);
    fclose(f);
    ck_assert_msg(!strstr(buf, "s3cret"), "%s", buf);
    ck_assert(strstr(buf, "amqp://u:***@h/v/x"));
    free(buf);
    pano_config_free(c);
}
END_TEST

/* A repeatable list option: the first on the command line replaces the
 * environment's value, the next ones are added after a comma. */
START_TEST(repeated_list_option)
{
    setenv("PANO_STORE", "/from/env", 1);
    pano_config *cfg = pano_config_new();
    char err[256];
    ck_assert_int_eq(pano_config_load_env(cfg, err, sizeof err), 0);
    ck_assert_str_eq(pano_config_str(cfg, "pano.store"), "/from/env");
    char a[] = "/a", b[] = "/b";
    ck_assert_int_eq(pano_cli_add(cfg, "pano.store", a), 0);
    ck_assert_str_eq(pano_config_str(cfg, "pano.store"), "/a");
    ck_assert_int_eq(pano_cli_add(cfg, "pano.store", b), 0);
    ck_assert_str_eq(pano_config_str(cfg, "pano.store"), "/a,/b");
    pano_config_free(cfg);
    unsetenv("PANO_STORE");
}
END_TEST

START_TEST(find_config_argument)
{
    char *a1[] = {"prog", "-i", "1", "--config", "f.properties", "--", "--config", "x", NULL};
    ck_assert_str_eq(pano_config_find_arg(8, a1), "f.properties");
    char *a2[] = {"prog", "--config=g.properties", NULL};
    ck_assert_str_eq(pano_config_find_arg(2, a2), "g.properties");
    char *a3[] = {"prog", "--", "--config", "x", NULL};
    ck_assert_ptr_null(pano_config_find_arg(4, a3));
}
END_TEST

START_TEST(secret_file_first_line)
{
    char err[512];
    write_file("s3cret\r\nsecond line\n");
    char *pw = pano_secret_read("pano.x.password_file", path, err, sizeof err);
    ck_assert_ptr_nonnull(pw);
    ck_assert_str_eq(pw, "s3cret");
    free(pw);
    cleanup();
    write_file("no newline");
    pw = pano_secret_read("pano.x.password_file", path, err, sizeof err);
    ck_assert_str_eq(pw, "no newline");
    free(pw);
    cleanup();
    write_file("\nsecond line\n");
    ck_assert_ptr_null(pano_secret_read("pano.x.password_file", path, err, sizeof err));
    ck_assert_msg(strstr(err, "pano.x.password_file: cannot read") && strstr(err, path) &&
                      strstr(err, "its first line is empty"),
                  "%s", err);
    cleanup();
    write_file("");
    ck_assert_ptr_null(pano_secret_read("pano.x.password_file", path, err, sizeof err));
    ck_assert_msg(strstr(err, "its first line is empty"), "%s", err);
    cleanup();
    ck_assert_ptr_null(pano_secret_read("pano.x.password_file", "/nonexistent/pw", err, sizeof err));
    ck_assert_msg(strstr(err, "/nonexistent/pw: No such file"), "%s", err);
}
END_TEST

/* pano_cli_catch_stop_signals (each Check test runs in a process of its own,
 * so the dispositions set here do not leak into the others). */
static volatile sig_atomic_t caught;
static void record_signal(int sig) { caught = sig; }

typedef void (*signal_handler)(int);
static signal_handler disposition(int sig)
{
    struct sigaction now;
    ck_assert_int_eq(sigaction(sig, NULL, &now), 0);
    return now.sa_handler;
}

START_TEST(stop_signals_reach_the_handler)
{
    /* what the test was started with (nohup ignores SIGHUP, a shell may
     * ignore SIGPIPE): the call must leave both as they were */
    signal_handler hangup = disposition(SIGHUP), sigpipe = disposition(SIGPIPE);
    ck_assert_int_eq(pano_cli_catch_stop_signals(record_signal, 0), 0);
    ck_assert_int_eq(raise(SIGTERM), 0);
    ck_assert_int_eq(caught, SIGTERM);
    ck_assert_int_eq(raise(SIGINT), 0);
    ck_assert_int_eq(caught, SIGINT);
    /* nothing else asked for, nothing else changed */
    ck_assert(disposition(SIGHUP) == hangup);
    ck_assert(disposition(SIGPIPE) == sigpipe);
}
END_TEST

START_TEST(hangup_and_sigpipe_when_asked)
{
    ck_assert_int_eq(
        pano_cli_catch_stop_signals(record_signal, PANO_STOP_ON_HANGUP | PANO_IGNORE_SIGPIPE), 0);
    ck_assert_int_eq(raise(SIGHUP), 0);
    ck_assert_int_eq(caught, SIGHUP);
    ck_assert(disposition(SIGPIPE) == SIG_IGN);
    caught = 0;
    ck_assert_int_eq(raise(SIGPIPE), 0); /* ignored: still here, handler not called */
    ck_assert_int_eq(caught, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("layers");
    tcase_add_test(tc, properties_syntax);
    tcase_add_test(tc, precedence_file_env_cli);
    tcase_add_test(tc, pegasus_environment_aliases);
    tcase_add_test(tc, bad_values_name_the_key_and_origin);
    tcase_add_test(tc, kafka_property_lists);
    tcase_add_test(tc, missing_file_is_an_error);
    tcase_add_test(tc, secret_values_are_redacted_in_dumps);
    tcase_add_test(tc, find_config_argument);
    tcase_add_test(tc, repeated_list_option);
    tcase_add_test(tc, secret_file_first_line);
    suite_add_tcase(s, tc);
    TCase *signals = tcase_create("stop signals");
    tcase_add_test(signals, stop_signals_reach_the_handler);
    tcase_add_test(signals, hangup_and_sigpipe_when_asked);
    suite_add_tcase(s, signals);
    return pano_test_run(s);
}
