/* ECMA-262 patterns to POSIX EREs (regex_ecma.h): exact translations, the
 * translations matching what the pattern means, and the refusals with
 * their reasons. */
#include "regex_ecma.h"
#include "testutil.h"

#include <regex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void assert_ere(const char *ecma, const char *ere)
{
    char why[200] = "";
    char *got = pano_regex_ecma_to_ere(ecma, why, sizeof why);
    ck_assert_msg(got != NULL, "%s: %s", ecma, why);
    ck_assert_str_eq(got, ere);
    free(got);
}

static void assert_refused(const char *ecma, const char *reason)
{
    char why[200] = "";
    char *got = pano_regex_ecma_to_ere(ecma, why, sizeof why);
    ck_assert_msg(got == NULL, "%s became %s", ecma, got ? got : "");
    ck_assert_str_eq(why, reason);
}

/* Does the translated pattern match text? */
static bool matches(const char *ecma, const char *text)
{
    char why[200];
    char *ere = pano_regex_ecma_to_ere(ecma, why, sizeof why);
    ck_assert_msg(ere != NULL, "%s: %s", ecma, why);
    regex_t re;
    ck_assert_int_eq(regcomp(&re, ere, REG_EXTENDED | REG_NOSUB), 0);
    bool m = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    free(ere);
    return m;
}

START_TEST(translations)
{
    assert_ere("", "");
    assert_ere("^\\d{3}-\\w+$", "^[0-9]{3}-[A-Za-z0-9_]+$");
    assert_ere("\\D\\W\\S\\s", "[^0-9][^A-Za-z0-9_][^[:space:]][[:space:]]");
    assert_ere("\\t\\n\\r", "\t\n\r");
    assert_ere("a\\/b\\.c\\-", "a/b\\.c-");
    assert_ere("(?:ab)+", "(ab)+");
    assert_ere("a*?b+?c??d{2}?", "a*b+c?d{2}");
    /* bracket expressions: classes inside, ']' first, '-' last */
    assert_ere("[\\d.-]", "[0-9.-]");
    assert_ere("[^\\s\\w]", "[^[:space:]A-Za-z0-9_]");
    assert_ere("[]a]", "[]a]");
    assert_ere("[a\\]]", "[]a]");
    assert_ere("[-a]", "[a-]");
    assert_ere("[a\\-z]", "[az-]");
    assert_ere("[[:alpha:]\\t]", "[[:alpha:]\t]");
    assert_ere("[\\\\\\[]", "[\\[]");
}
END_TEST

START_TEST(translations_match)
{
    ck_assert(matches("^\\d{3}-\\w+$", "123-ab_9"));
    ck_assert(!matches("^\\d{3}-\\w+$", "12-ab"));
    ck_assert(matches("b+", "abbc")); /* unanchored: anywhere */
    ck_assert(matches("^[a\\-z]+$", "a-z"));
    ck_assert(!matches("^[a\\-z]+$", "b"));
    ck_assert(matches("^[^\\s]+$", "ab"));
    ck_assert(!matches("^[^\\s]+$", "a b"));
    ck_assert(matches("^a.*?z$", "abcz"));
}
END_TEST

START_TEST(refusals)
{
    assert_refused("^(?=a)", "lookaround and named groups are not supported");
    assert_refused("(?<n>a)", "lookaround and named groups are not supported");
    assert_refused("(a)\\1", "\\1 is not supported");
    assert_refused("\\bword", "\\b is not supported");
    assert_refused("\\u00e9", "\\u is not supported");
    assert_refused("[\\D]", "\\D inside [...] has no POSIX equivalent");
    assert_refused("[ab", "unterminated bracket expression");
    assert_refused("[[:alpha]", "unterminated [: :] class");
    assert_refused("a\\", "trailing backslash");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("regex_ecma");
    TCase *tc = tcase_create("regex_ecma");
    tcase_add_test(tc, translations);
    tcase_add_test(tc, translations_match);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
