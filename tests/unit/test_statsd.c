/* DogStatsD lines read into custom metrics (lib/statsd.c): each type, rates,
 * tags and levels, and the lines refused with their reason. */
#include "statsd.h"
#include "testutil.h"

#include <string.h>

static pano_statsd_metric m;
static char err[256];

static int parse(const char *line)
{
    err[0] = '\0';
    return pano_statsd_parse(line, strlen(line), &m, err, sizeof err);
}

START_TEST(types_values_and_rates)
{
    ck_assert_int_eq(parse("loss:0.25|g"), 0);
    ck_assert_str_eq(m.name, "loss");
    ck_assert_double_eq(m.value, 0.25);
    ck_assert_str_eq(m.kind, "gauge");
    ck_assert_int_eq(m.level, 1);
    ck_assert_ptr_null(m.tags[0]);
    ck_assert_int_eq(parse("files.done:3|c|@0.5"), 0); /* 3 seen at half the rate: 6 */
    ck_assert_str_eq(m.kind, "count");
    ck_assert_double_eq(m.value, 6);
    ck_assert_int_eq(parse("step:12.5|ms|@0.1"), 0); /* the rate scales counts only */
    ck_assert_str_eq(m.kind, "timing");
    ck_assert_double_eq(m.value, 12.5);
    ck_assert_int_eq(parse("a:-1e3|h"), 0);
    ck_assert_str_eq(m.kind, "histogram");
    ck_assert_double_eq(m.value, -1000);
    ck_assert_int_eq(parse("a:7|d|c:abc123|T1764000000"), 0); /* DogStatsD's own fields */
    ck_assert_str_eq(m.kind, "distribution");
}
END_TEST

START_TEST(tags_and_levels)
{
    ck_assert_int_eq(parse("error:0.01|g|#model:cnn,level:3,final,epoch:7"), 0);
    ck_assert_int_eq(m.level, 3);
    ck_assert_str_eq(m.tags[0], "model=cnn");
    ck_assert_str_eq(m.tags[1], "final=");
    ck_assert_str_eq(m.tags[2], "epoch=7");
    ck_assert_ptr_null(m.tags[3]);
    /* a value holding ':' keeps it */
    ck_assert_int_eq(parse("x:1|g|#url:http://h:80/"), 0);
    ck_assert_str_eq(m.tags[0], "url=http://h:80/");
    /* tags then a rate, in either order */
    ck_assert_int_eq(parse("n:2|c|#k:v|@0.5"), 0);
    ck_assert_double_eq(m.value, 4);
    ck_assert_str_eq(m.tags[0], "k=v");
}
END_TEST

START_TEST(refused_with_a_reason)
{
    static const struct {
        const char *line, *why;
    } bad[] = {
        {"", "1 to"},
        {"novalue", "not name:value|type"},
        {"x:1", "not name:value|type"},
        {":1|g", "metric name"},
        {"x:abc|g", "not a finite number"},
        {"x:nan|g", "not a finite number"},
        {"x:1:2|d", "several values"},
        {"x:1|s", "type 's'"},
        {"x:1|q", "type 'q'"},
        {"x:1|c|@2", "sample rate"},
        {"x:1|c|@0", "sample rate"},
        {"x:1|g|#level:0", "level"},
        {"x:1|g|#level:10", "level"},
        {"x:1|g|#level:1.5", "level"},
        {"x:1|g|oops", "unknown field"},
        {"_e{5,4}:title|text", "not a metric"},
        {"_sc|disk|0", "not a metric"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(parse(bad[i].line) == -1, "%s was read", bad[i].line);
        ck_assert_msg(strstr(err, bad[i].why), "%s: '%s' does not say '%s'", bad[i].line, err,
                      bad[i].why);
    }
    char name[300];
    memset(name, 'n', 256);
    strcpy(name + 256, ":1|g");
    ck_assert_int_eq(parse(name), -1);
    ck_assert_ptr_nonnull(strstr(err, "metric name"));
    ck_assert_int_eq(pano_statsd_parse("x:1|g", 6, &m, err, sizeof err), -1); /* its NUL */
    static char longline[PANO_STATSD_LINE_MAX + 10];
    memset(longline, 'a', sizeof longline - 1);
    ck_assert_int_eq(parse(longline), -1);
    ck_assert_ptr_nonnull(strstr(err, "1 to"));
    /* 33 tags */
    char many[512] = "x:1|g|#";
    for (int i = 0; i < 33; i++)
        sprintf(many + strlen(many), "%st%d:1", i ? "," : "", i);
    ck_assert_int_eq(parse(many), -1);
    ck_assert_ptr_nonnull(strstr(err, "more than 32 tags"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("statsd");
    TCase *tc = tcase_create("statsd");
    tcase_add_test(tc, types_values_and_rates);
    tcase_add_test(tc, tags_and_levels);
    tcase_add_test(tc, refused_with_a_reason);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
