/* JSON model: build, serialize, parse, limits. */
#include "json.h"
#include "testutil.h"

#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pano_json *parse(const char *text)
{
    char err[256];
    return pano_json_parse(text, strlen(text), 0, err, sizeof err);
}

START_TEST(build_and_serialize_keeps_order_and_formats)
{
    pano_json *o = pano_json_object();
    pano_json_set_str(o, "event", "kickstart.inv.online");
    pano_json_set_double(o, "ts", 1700000000.123456, 6);
    pano_json_set_double(o, "utime", 1.5, 3);
    pano_json_set_int(o, "rss", 123456789012LL);
    pano_json_set_bool(o, "ok", true);
    pano_json_set(o, "none", pano_json_null());
    pano_json *argv = pano_json_set_array(o, "argv");
    pano_json_append(argv, pano_json_string("a \"quoted\" \\ arg"));
    pano_json_set_int(o, "rss", 7); /* replace keeps the position */
    size_t len;
    char *s = pano_json_serialize(o, &len);
    ck_assert_str_eq(s, "{\"event\":\"kickstart.inv.online\",\"ts\":1700000000.123456,"
                        "\"utime\":1.500,\"rss\":7,\"ok\":true,\"none\":null,"
                        "\"argv\":[\"a \\\"quoted\\\" \\\\ arg\"]}");
    ck_assert_uint_eq(len, strlen(s));
    free(s);
    pano_json_free(o);
}
END_TEST

START_TEST(round_trip_preserves_values)
{
    const char *text = "{\"a\":1,\"b\":-2.5,\"c\":\"x\\u00e9y\",\"d\":[true,false,null],"
                       "\"e\":{\"f\":9223372036854775807},\"g\":1e300,\"h\":0.1}";
    pano_json *v = parse(text);
    ck_assert_ptr_nonnull(v);
    int64_t i;
    double d;
    ck_assert(pano_json_get_int(v, "a", &i) && i == 1);
    ck_assert(pano_json_get_number(v, "b", &d) && d == -2.5);
    ck_assert_str_eq(pano_json_get_str(v, "c"), "x\xc3\xa9y");
    ck_assert(pano_json_get_int(pano_json_get(v, "e"), "f", &i) && i == INT64_MAX);
    char *s = pano_json_serialize(v, NULL);
    pano_json *again = parse(s);
    ck_assert_ptr_nonnull(again);
    char *s2 = pano_json_serialize(again, NULL);
    ck_assert_str_eq(s, s2); /* stable after one round */
    ck_assert(pano_json_get_number(again, "h", &d) && d == 0.1);
    ck_assert(pano_json_get_number(again, "g", &d) && d == 1e300);
    free(s);
    free(s2);
    pano_json_free(v);
    pano_json_free(again);
}
END_TEST

START_TEST(invalid_utf8_is_repaired_on_construction)
{
    pano_json *s = pano_json_string_len("ok\xff\xc3(end", 8);
    ck_assert_str_eq(s->u.string.text, "ok\xef\xbf\xbd\xef\xbf\xbd(end");
    pano_json_free(s);
}
END_TEST

START_TEST(parse_rejects_bad_input_with_reason)
{
    char err[256];
    const char *bad[] = {"{\"a\":", "{\"a\" 1}", "[1,2", "{} {}", "\"\xff\"", "", "nul"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        pano_json *v = pano_json_parse(bad[i], strlen(bad[i]), 0, err, sizeof err);
        ck_assert_msg(v == NULL, "accepted: %s", bad[i]);
        ck_assert_msg(err[0] != '\0', "no reason for: %s", bad[i]);
    }
}
END_TEST

START_TEST(parse_limits_nesting_depth)
{
    size_t depth = 10000;
    char *deep = malloc(depth * 2 + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[depth * 2] = '\0';
    char err[256];
    ck_assert_ptr_null(pano_json_parse(deep, depth * 2, 64, err, sizeof err));
    ck_assert_str_eq(err, "nesting too deep");
    /* 64 levels are fine. */
    pano_json *ok = pano_json_parse(deep + depth - 64, 128, 64, err, sizeof err);
    ck_assert_ptr_nonnull(ok);
    pano_json_free(ok);
    free(deep);
}
END_TEST

START_TEST(parse_uses_length_not_nul)
{
    const char buf[] = "{\"a\":1}GARBAGE";
    char err[256];
    pano_json *v = pano_json_parse(buf, 7, 0, err, sizeof err);
    ck_assert_ptr_nonnull(v);
    pano_json_free(v);
    ck_assert_ptr_null(pano_json_parse(buf, sizeof buf - 1, 0, err, sizeof err));
}
END_TEST

START_TEST(remove_and_clone)
{
    pano_json *v = parse("{\"a\":1,\"b\":{\"c\":[1,2]},\"d\":3}");
    pano_json *c = pano_json_clone(v);
    ck_assert(pano_json_remove(v, "b"));
    ck_assert(!pano_json_remove(v, "b"));
    char *s = pano_json_serialize(v, NULL);
    ck_assert_str_eq(s, "{\"a\":1,\"d\":3}");
    free(s);
    s = pano_json_serialize(c, NULL);
    ck_assert_str_eq(s, "{\"a\":1,\"b\":{\"c\":[1,2]},\"d\":3}");
    free(s);
    pano_json_free(v);
    pano_json_free(c);
}
END_TEST

START_TEST(non_finite_doubles_become_null)
{
    pano_json *o = pano_json_object();
    pano_json_set_double(o, "x", 1.0 / 0.0, -1);
    char *s = pano_json_serialize(o, NULL);
    ck_assert_str_eq(s, "{\"x\":null}");
    free(s);
    pano_json_free(o);
}
END_TEST

START_TEST(add_appends_in_order)
{
    pano_json *o = pano_json_object();
    pano_json_add(o, "a", pano_json_int(1));
    pano_json_add(o, "b", pano_json_double(0.5, 6));
    pano_json_set_int(o, "a", 2); /* set still finds added keys */
    char *text = pano_json_serialize(o, NULL);
    ck_assert_str_eq(text, "{\"a\":2,\"b\":0.500000}");
    free(text);
    pano_json_free(o);
}
END_TEST

/* The serializer formats numbers itself; it must write what printf writes. */
static void assert_number_text(pano_json *number, const char *expected)
{
    char *text = pano_json_serialize(number, NULL);
    ck_assert_msg(strcmp(text, expected) == 0, "wrote %s, printf writes %s", text, expected);
    free(text);
    pano_json_free(number);
}

static uint64_t next_random(uint64_t *state) /* xorshift64: reproducible */
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

START_TEST(numbers_are_written_as_printf_writes_them)
{
    char expected[512];
    const int64_t ints[] = {0, 1, -1, 9, 10, INT64_MAX, INT64_MIN, 1234567890123LL};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        snprintf(expected, sizeof expected, "%" PRId64, ints[i]);
        assert_number_text(pano_json_int(ints[i]), expected);
    }
    /* Ties, values just beside them, signs, zeros and large magnitudes. */
    const double edges[] = {0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.0000005, 0.0000015, 1e-7,
                            -1e-9, 0.9999995, 0.9999996, 123456.1234565, 1125899906842623.5,
                            1125899906842624.0, 1e20, -1e30, 4503599627370497.0, 2.675,
                            1795240767.1234565, 1795240767.9999996, 9007199254740991.0,
                            9007199254740992.0, 0x1p53 - 0.5, 4503599627370495.5};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
        for (int decimals = 0; decimals <= 12; decimals++) {
            snprintf(expected, sizeof expected, "%.*f", decimals, edges[i]);
            assert_number_text(pano_json_double(edges[i], decimals), expected);
        }
    uint64_t state = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 200000; i++) {
        uint64_t r = next_random(&state);
        int decimals = (int)(r % 10);
        double d;
        if (i % 4 == 0) /* decimal-looking values with many digits: near ties */
            d = (double)(int64_t)(r >> 20) / 1e7 + 5e-7;
        else if (i % 4 == 1) /* any magnitude */
            d = ldexp((double)(r >> 11), (int)((r >> 3) % 120) - 90);
        else if (i % 4 == 2) /* epoch times with microseconds, as events carry them */
            d = 1.7e9 + (double)(r >> 20) / 1e7;
        else
            d = (double)(int64_t)r / 1e9;
        if (r & 1)
            d = -d;
        snprintf(expected, sizeof expected, "%.*f", decimals, d);
        assert_number_text(pano_json_double(d, decimals), expected);
        snprintf(expected, sizeof expected, "%" PRId64, (int64_t)r);
        assert_number_text(pano_json_int((int64_t)r), expected);
    }
}
END_TEST

START_TEST(writer_extends_a_tree_and_repairs_text)
{
    pano_json *envelope = pano_json_object();
    pano_json_set_str(envelope, "event", "darshan.perf");
    pano_json_set_int(envelope, "seq", 3);
    pano_buf out = {0};
    pano_json_writer *w = pano_json_writer_new(&out);
    pano_json_write_object_open(w);
    pano_json_write_members(w, envelope);
    pano_json_write_key(w, "bad\xff key");
    pano_json_write_str(w, "caf\xc3"); /* truncated sequence */
    pano_json_write_key(w, "list");
    pano_json_write_array_open(w);
    pano_json_write_double(w, 0.1, 3);
    pano_json_write_double(w, 1.0 / 0.0, 3);
    pano_json_write_bool(w, false);
    pano_json_write_null(w);
    pano_json_write_value(w, envelope);
    pano_json_write_array_close(w);
    pano_json_write_object_close(w);
    pano_json_writer_free(w);
    ck_assert_str_eq(out.data, "{\"event\":\"darshan.perf\",\"seq\":3,"
                               "\"bad\xef\xbf\xbd key\":\"caf\xef\xbf\xbd\","
                               "\"list\":[0.100,null,false,null,"
                               "{\"event\":\"darshan.perf\",\"seq\":3}]}");
    pano_json *back = parse(out.data); /* and it is valid JSON */
    ck_assert_ptr_nonnull(back);
    pano_json_free(back);
    pano_buf_free(&out);

    /* A tree key from the outside (a log's metadata) is repaired on output. */
    pano_json_set_int(envelope, "k\x80", 1);
    char *text = pano_json_serialize(envelope, NULL);
    ck_assert_ptr_nonnull(strstr(text, "\"k\xef\xbf\xbd\":1"));
    free(text);
    pano_json_free(envelope);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, build_and_serialize_keeps_order_and_formats);
    tcase_add_test(tc, round_trip_preserves_values);
    tcase_add_test(tc, invalid_utf8_is_repaired_on_construction);
    tcase_add_test(tc, parse_rejects_bad_input_with_reason);
    tcase_add_test(tc, parse_limits_nesting_depth);
    tcase_add_test(tc, parse_uses_length_not_nul);
    tcase_add_test(tc, remove_and_clone);
    tcase_add_test(tc, non_finite_doubles_become_null);
    tcase_add_test(tc, add_appends_in_order);
    tcase_add_test(tc, numbers_are_written_as_printf_writes_them);
    tcase_add_test(tc, writer_extends_a_tree_and_repairs_text);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
