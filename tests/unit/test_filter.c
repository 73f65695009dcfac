/* The event filter (pano.events, pegasus.catalog.workflow.amqp.events) and
 * the per-publisher toggles (pano.<publisher>.enabled). */
#include "config.h"
#include "filter.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pano_filter *parse(const char *patterns)
{
    char err[512] = "";
    pano_filter *f = pano_filter_parse(patterns, err, sizeof err);
    ck_assert_msg(f != NULL, "%s: %s", patterns, err);
    return f;
}

static bool pass(const char *patterns, const char *event)
{
    pano_filter *f = parse(patterns);
    bool r = pano_filter_pass(f, event);
    pano_filter_free(f);
    return r;
}

START_TEST(everything_by_default)
{
    const char *all[] = {NULL, "", "*", " * ", ",", " , ,"};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        pano_filter *f = parse(all[i]);
        ck_assert(pano_filter_pass(f, "kickstart.inv.online"));
        ck_assert(pano_filter_pass(f, "stampede.xwf.start"));
        ck_assert(pano_filter_pass(f, "x"));
        pano_filter_free(f);
    }
    /* No filter at all is "send everything" too. */
    ck_assert(pano_filter_pass(NULL, "kickstart.inv.end"));
}
END_TEST

/* Pegasus's semantics: regular expressions searched anywhere in the name. */
START_TEST(regex_search_like_pegasus)
{
    ck_assert(pass("stampede.*", "stampede.job_inst.main.end"));
    ck_assert(!pass("stampede.*", "kickstart.inv.end"));
    ck_assert(pass("inv.end", "kickstart.inv.end"));
    ck_assert(pass("inv.end", "stampede.inv.end")); /* search, not match */
    ck_assert(!pass("^inv.end", "stampede.inv.end"));
    ck_assert(pass("^kickstart\\.inv\\.end$", "kickstart.inv.end"));
    ck_assert(!pass("^kickstart\\.inv\\.end$", "kickstart.inv.end.extra"));
    ck_assert(pass("kickstart\\.inv\\.(start|end)$", "kickstart.inv.start"));
    ck_assert(!pass("kickstart\\.inv\\.(start|end)$", "kickstart.inv.online"));
    /* monitord's default list, written as its users do */
    const char *dflt = "stampede.job_inst.tag, stampede.job_inst.composite, stampede.inv.end, "
                       "stampede.wf.plan";
    ck_assert(pass(dflt, "stampede.inv.end"));
    ck_assert(pass(dflt, "stampede.wf.plan"));
    ck_assert(!pass(dflt, "stampede.xwf.start"));
    ck_assert(!pass(dflt, "kickstart.inv.online"));
}
END_TEST

/* Pegasus raises on "*.inv.*"; pano reads it as the glob it was meant to be. */
START_TEST(globs_where_regexes_cannot_be)
{
    pano_filter *f = parse("*.inv.*, ?arshan.perf, transfer.inv.local.singl[e]");
    ck_assert_int_eq(pano_filter_kind(f, 0), 'g');
    ck_assert_int_eq(pano_filter_kind(f, 1), 'g');
    ck_assert_int_eq(pano_filter_kind(f, 2), 'r'); /* a valid regex stays one */
    ck_assert_int_eq(pano_filter_kind(f, 3), 0);
    ck_assert(pano_filter_pass(f, "kickstart.inv.online"));
    ck_assert(pano_filter_pass(f, "stampede.inv.end"));
    ck_assert(pano_filter_pass(f, "darshan.perf"));
    ck_assert(pano_filter_pass(f, "transfer.inv.local.single"));
    ck_assert(!pano_filter_pass(f, "custom.metric"));
    ck_assert(!pano_filter_pass(f, "inv")); /* globs match the whole name */
    pano_filter_free(f);

    f = parse("*.end");
    ck_assert(pano_filter_pass(f, "kickstart.inv.end"));
    ck_assert(!pano_filter_pass(f, "kickstart.inv.end.x"));
    pano_filter_free(f);

    /* An invalid regex that is a plausible glob: "[" left open. */
    f = parse("kickstart.inv.[se");
    ck_assert_int_eq(pano_filter_kind(f, 0), 'g');
    pano_filter_free(f);
    f = parse("*");
    ck_assert_int_eq(pano_filter_kind(f, 0), 'a');
    pano_filter_free(f);
}
END_TEST

/* The examples of docs/deploy.md, "The event filter". */
START_TEST(documented_examples)
{
    ck_assert(pass("stampede.*", "stampede.xwf.start"));
    ck_assert(!pass("stampede.*", "kickstart.inv.end"));
    ck_assert(pass("inv.end", "kickstart.inv.end") && pass("inv.end", "stampede.inv.end"));
    ck_assert(!pass("inv.end", "kickstart.inv.online"));
    ck_assert(pass("^kickstart\\.inv\\.(start|end)$", "kickstart.inv.start"));
    ck_assert(!pass("^kickstart\\.inv\\.(start|end)$", "kickstart.inv.online"));
    ck_assert(pass("*.inv.*", "kickstart.inv.online") && pass("*.inv.*", "stampede.inv.end"));
    ck_assert(!pass("*.inv.*", "transfer.inv"));
    ck_assert(pass("*.end", "kickstart.inv.end") && !pass("*.end", "kickstart.inv.end.x"));
    ck_assert(pass("transfer.inv.local$", "transfer.inv.local"));
    ck_assert(!pass("transfer.inv.local$", "transfer.inv.local.single"));
}
END_TEST

START_TEST(bad_patterns_are_errors)
{
    char err[512] = "";
    ck_assert_ptr_null(pano_filter_parse("kickstart.*, a|*b", err, sizeof err));
    ck_assert_msg(strstr(err, "pano.events") && strstr(err, "a|*b"), "%s", err);
    ck_assert_ptr_null(pano_filter_parse("*{x}", err, sizeof err));
    char many[2048] = "";
    for (int i = 0; i < 300; i++)
        strcat(many, "a,");
    ck_assert_ptr_null(pano_filter_parse(many, err, sizeof err));
}
END_TEST

START_TEST(toggle_keys)
{
    ck_assert_str_eq(pano_filter_toggle_key("pano-monitor"), "pano.monitor.enabled");
    ck_assert_str_eq(pano_filter_toggle_key("/usr/bin/pano-transfer"), "pano.transfer.enabled");
    ck_assert_str_eq(pano_filter_toggle_key("pano-darshan"), "pano.darshan.enabled");
    ck_assert_str_eq(pano_filter_toggle_key("pano-emit"), "pano.emit.enabled");
    ck_assert_ptr_null(pano_filter_toggle_key("pano-bridge"));
    ck_assert_ptr_null(pano_filter_toggle_key("pano-spool")); /* pano.spool.enabled is no publisher */
    ck_assert_ptr_null(pano_filter_toggle_key("pano-"));
    ck_assert_ptr_null(pano_filter_toggle_key("test_filter"));
    ck_assert_ptr_null(pano_filter_toggle_key(NULL));
}
END_TEST

static char path[] = "/tmp/pano-test-filter-XXXXXX";

static pano_config *load(const char *text)
{
    strcpy(path, "/tmp/pano-test-filter-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    pano_config *c = pano_config_new();
    char err[512];
    ck_assert_msg(pano_config_load_file(c, path, err, sizeof err) == 0, "%s", err);
    unlink(path);
    return c;
}

/* A Pegasus user's properties file works unchanged. */
START_TEST(pegasus_properties)
{
    pano_config *c = load("pegasus.monitord.encoding = json\n"
                          "pegasus.catalog.workflow.amqp.url = amqp://u:p@h/v/monitoring\n"
                          "pegasus.catalog.workflow.amqp.events = stampede.*, kickstart.inv.end\n");
    ck_assert_str_eq(pano_config_str(c, "pano.events"), "stampede.*, kickstart.inv.end");
    ck_assert_str_eq(pano_config_str(c, "pano.encoding"), "json");
    char err[512];
    pano_filter *f = pano_filter_new(c, "pano-monitor", err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    ck_assert(pano_filter_enabled(f));
    ck_assert(pano_filter_pass(f, "kickstart.inv.end"));
    ck_assert(!pano_filter_pass(f, "kickstart.inv.online"));
    pano_filter_free(f);
    pano_config_free(c);

    /* bp is accepted (and warned about), not an error */
    c = load("pegasus.monitord.encoding = bp\npano.amqp.url = amqp://h/v/x\n");
    f = pano_filter_new(c, "pano-monitor", err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    pano_filter_free(f);
    pano_config_free(c);
}
END_TEST

START_TEST(publisher_toggles)
{
    setenv("PANO_MONITOR_ENABLED", "false", 1);
    pano_config *c = pano_config_new();
    char err[512];
    ck_assert_msg(pano_config_load_env(c, err, sizeof err) == 0, "%s", err);
    unsetenv("PANO_MONITOR_ENABLED");
    pano_filter *f = pano_filter_new(c, "pano-monitor", err, sizeof err);
    ck_assert(!pano_filter_enabled(f));
    ck_assert(!pano_filter_pass(f, "kickstart.inv.end"));
    pano_filter_free(f);
    /* the other publishers are not affected */
    f = pano_filter_new(c, "pano-emit", err, sizeof err);
    ck_assert(pano_filter_enabled(f));
    ck_assert(pano_filter_pass(f, "custom.metric"));
    pano_filter_free(f);
    pano_config_free(c);

    c = load("pano.transfer.enabled = no\npano.events = transfer.*\n");
    f = pano_filter_new(c, "/opt/pano/bin/pano-transfer", err, sizeof err);
    ck_assert(!pano_filter_pass(f, "transfer.inv.local.single"));
    pano_filter_free(f);
    f = pano_filter_new(c, "pano-darshan", err, sizeof err);
    ck_assert(!pano_filter_pass(f, "darshan.perf")); /* the event filter still applies */
    pano_filter_free(f);
    pano_config_free(c);

    /* a bad pattern in the configuration is an error that names the key */
    c = load("pano.events = a|*b\n");
    ck_assert_ptr_null(pano_filter_new(c, "pano-monitor", err, sizeof err));
    ck_assert_msg(strstr(err, "pano.events"), "%s", err);
    pano_config_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("filter");
    TCase *tc = tcase_create("filter");
    tcase_add_test(tc, everything_by_default);
    tcase_add_test(tc, regex_search_like_pegasus);
    tcase_add_test(tc, globs_where_regexes_cannot_be);
    tcase_add_test(tc, documented_examples);
    tcase_add_test(tc, bad_patterns_are_errors);
    tcase_add_test(tc, toggle_keys);
    tcase_add_test(tc, pegasus_properties);
    tcase_add_test(tc, publisher_toggles);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
