/* pano-query's cell formats (query/table.c): times with the digits of the
 * second a series' step needs. */
#include "table.h"
#include "testutil.h"

#include <stdlib.h>
#include <time.h>

START_TEST(decimals_follow_the_step)
{
    ck_assert_int_eq(time_decimals(10), 0);
    ck_assert_int_eq(time_decimals(1), 0);
    ck_assert_int_eq(time_decimals(0.5), 1);
    ck_assert_int_eq(time_decimals(0.2), 1);
    ck_assert_int_eq(time_decimals(0.05), 2);
    ck_assert_int_eq(time_decimals(0.001), 3);
    ck_assert_int_eq(time_decimals(0.0001), 3);
}
END_TEST

START_TEST(times_with_fractions)
{
    char buf[64];
    /* 1700000000 is 2023-11-14 22:13:20 UTC */
    ck_assert_str_eq(fmt_time_fraction(buf, sizeof buf, 1700000000.2, false, 1),
                     "2023-11-14 22:13:20.2");
    ck_assert_str_eq(fmt_time_fraction(buf, sizeof buf, 1700000000.05, false, 2),
                     "2023-11-14 22:13:20.05");
    ck_assert_str_eq(fmt_time_fraction(buf, sizeof buf, 1700000000.9996, false, 3),
                     "2023-11-14 22:13:20.999");
    ck_assert_str_eq(fmt_time_fraction(buf, sizeof buf, 1700000000.001, false, 3),
                     "2023-11-14 22:13:20.001");
    ck_assert_str_eq(fmt_time_fraction(buf, sizeof buf, 1700000000.7, false, 0),
                     "2023-11-14 22:13:20");
    ck_assert_str_eq(fmt_time(buf, sizeof buf, 1700000000.7, false), "2023-11-14 22:13:20");
    ck_assert_str_eq(fmt_time_fraction(buf, sizeof buf, 1700000000.25, true, 1), "1700000000.250");
    ck_assert_str_eq(fmt_time_fraction(buf, sizeof buf, 0, false, 1), "-");
}
END_TEST

int main(void)
{
    /* local time is what the table prints: make it UTC, whatever the machine's */
    setenv("TZ", "UTC", 1);
    tzset();
    Suite *s = suite_create("query_table");
    TCase *tc = tcase_create("formats");
    tcase_add_test(tc, decimals_follow_the_step);
    tcase_add_test(tc, times_with_fractions);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
