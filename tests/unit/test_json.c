/* JSON model: build, serialize, parse, limits. */
#include "json.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
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

START_TEST(utf8_valid_prefix)
{
    ck_assert_uint_eq(pano_utf8_valid_prefix("abc", 3), 3);
    ck_assert_uint_eq(pano_utf8_valid_prefix("a\xC3\xA9", 3), 3);
    ck_assert_uint_eq(pano_utf8_valid_prefix("a\xC3", 2), 1);            /* truncated */
    ck_assert_uint_eq(pano_utf8_valid_prefix("a\xC0\xAF", 3), 1);        /* overlong */
    ck_assert_uint_eq(pano_utf8_valid_prefix("\xED\xA0\x80", 3), 0);     /* surrogate */
    ck_assert_uint_eq(pano_utf8_valid_prefix("\xF4\x90\x80\x80", 4), 0); /* > U+10FFFF */
    ck_assert_uint_eq(pano_utf8_valid_prefix("\xF0\x9F\x98\x80!", 5), 5);
    ck_assert_uint_eq(pano_utf8_valid_prefix("ab\xFF", 3), 2);
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
    /* a number no double can hold, in either parser */
    const char *huge[] = {"1e400", "{\"ts\":-1e400}", "[1.5e999]"};
    for (size_t i = 0; i < sizeof huge / sizeof *huge; i++) {
        ck_assert_ptr_null(pano_json_parse(huge[i], strlen(huge[i]), 0, err, sizeof err));
        ck_assert_msg(strstr(err, "out of range"), "%s: %s", huge[i], err);
        pano_arena arena;
        pano_arena_init(&arena, 0);
        pano_json_parse_options o = {.arena = &arena};
        ck_assert_ptr_null(pano_json_parse_with(huge[i], strlen(huge[i]), &o, err, sizeof err));
        pano_arena_free(&arena);
    }
    pano_json *small = pano_json_parse("1e-400", 6, 0, err, sizeof err); /* underflows to 0 */
    ck_assert_ptr_nonnull(small);
    pano_json_free(small);
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
        uint64_t r = pano_test_random(&state);
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

START_TEST(parse_duplicate_keys_last_wins)
{
    pano_json *v = parse("{\"a\":1,\"b\":{\"x\":[1]},\"a\":{\"c\":2},\"b\":3}");
    ck_assert_ptr_nonnull(v);
    char *s = pano_json_serialize(v, NULL);
    ck_assert_str_eq(s, "{\"a\":{\"c\":2},\"b\":3}"); /* in the first key's place */
    free(s);
    pano_json_free(v);
}
END_TEST

/* yajl decodes a lone low surrogate escape to bytes that are not UTF-8. */
START_TEST(parse_repairs_strings_unless_raw)
{
    const char *text = "[\"\\udc00x\"]";
    char err[256];
    pano_json *v = parse(text);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(pano_json_at(v, 0)->u.string.text, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx");
    pano_json_free(v);
    pano_json_parse_options raw = {.raw_strings = true};
    v = pano_json_parse_with(text, strlen(text), &raw, err, sizeof err);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(pano_json_at(v, 0)->u.string.text, "\xED\xB0\x80x");
    ck_assert_uint_eq(pano_json_at(v, 0)->u.string.len, 4);
    pano_json_free(v);
}
END_TEST

/* An object with n keys k0..k(n-1), then key `again` once more. */
static char *many_keys(int n, int again)
{
    pano_buf b = {0};
    pano_buf_append(&b, "{", 1);
    for (int i = 0; i < n; i++)
        pano_buf_appendf(&b, "\"k%d\":%d,", i, i);
    pano_buf_appendf(&b, "\"k%d\":-1}", again);
    return b.data;
}

START_TEST(arena_parse_rejects_duplicate_keys)
{
    pano_arena a;
    pano_arena_init(&a, 0);
    pano_json_parse_options o = {.arena = &a, .reject_duplicates = true};
    char err[256];
    static const char *const ok[] = {
        "{\"a\":{\"x\":1},\"b\":{\"x\":2}}",       /* the same key in sibling objects */
        "{\"a\":{\"x\":1,\"y\":2},\"b\":{\"y\":3,\"x\":4}}", /* ... at a reused depth */
        "{\"x\":{\"x\":{\"x\":1}}}",                 /* ... nested */
        "{\"ab\":1,\"a\":2,\"abc\":3}",              /* prefixes are other keys */
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        pano_arena_reset(&a);
        ck_assert_msg(pano_json_parse_with(ok[i], strlen(ok[i]), &o, err, sizeof err) != NULL,
                      "%s: %s", ok[i], err);
    }
    pano_arena_reset(&a);
    const char *dup = "{\"a\":{\"x\":1,\"y\":2},\"b\":{\"y\":3,\"y\":4}}";
    ck_assert_ptr_null(pano_json_parse_with(dup, strlen(dup), &o, err, sizeof err));
    ck_assert_str_eq(err, "duplicate field 'y'");
    /* Hundreds of keys fill the key filter: every repeat is still found, and
     * no distinct key is taken for one. */
    for (int again = 0; again < 300; again += 37) {
        char *text = many_keys(300, again);
        pano_arena_reset(&a);
        ck_assert_ptr_null(pano_json_parse_with(text, strlen(text), &o, err, sizeof err));
        char expected[64];
        snprintf(expected, sizeof expected, "duplicate field 'k%d'", again);
        ck_assert_str_eq(err, expected);
        free(text);
    }
    char *text = many_keys(300, 300);
    pano_arena_reset(&a);
    pano_json *v = pano_json_parse_with(text, strlen(text), &o, err, sizeof err);
    ck_assert_msg(v != NULL, "%s", err);
    ck_assert_uint_eq(pano_json_len(v), 301);
    free(text);
    /* On the heap without the option, the last value wins. */
    text = many_keys(300, 150);
    v = parse(text);
    ck_assert_uint_eq(pano_json_len(v), 300);
    int64_t k150;
    ck_assert(pano_json_get_int(v, "k150", &k150) && k150 == -1);
    pano_json_free(v);
    free(text);
    pano_arena_free(&a);
}
END_TEST

START_TEST(arena_parse_limits_depth)
{
    pano_arena a;
    pano_arena_init(&a, 0);
    char err[256];
    size_t depth = 10000;
    char *deep = malloc(depth * 2);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    pano_json_parse_options o = {.arena = &a, .max_depth = 64};
    ck_assert_ptr_null(pano_json_parse_with(deep, depth * 2, &o, err, sizeof err));
    ck_assert_str_eq(err, "nesting too deep");
    pano_arena_reset(&a);
    pano_json *v = pano_json_parse_with(deep + depth - 64, 128, &o, err, sizeof err);
    ck_assert_msg(v != NULL, "%s", err);
    ck_assert_int_eq(v->type, PANO_JSON_ARRAY);
    o.max_depth = 1;
    pano_arena_reset(&a);
    ck_assert_ptr_null(pano_json_parse_with("{\"a\":[1]}", 9, &o, err, sizeof err));
    ck_assert_str_eq(err, "nesting too deep");
    free(deep);
    pano_arena_free(&a);
}
END_TEST

/* After a reset the arena hands out the same memory again: a parse of the
 * same document lands at the same addresses. A document larger than a chunk
 * takes more chunks, which the next reset frees. */
START_TEST(arena_reset_reuses_memory)
{
    pano_arena a;
    pano_arena_init(&a, 0);
    pano_json_parse_options o = {.arena = &a, .reject_duplicates = true};
    const char *doc = "{\"event\":\"a.b\",\"ts\":1.5,\"tags\":[\"x\",\"y\"],\"n\":null}";
    char err[256];
    pano_json *first = pano_json_parse_with(doc, strlen(doc), &o, err, sizeof err);
    ck_assert_ptr_nonnull(first);
    char *expected = pano_json_serialize(first, NULL);
    char *big = many_keys(2000, 2000);
    for (int round = 0; round < 3; round++) {
        pano_arena_reset(&a);
        pano_json *v = pano_json_parse_with(big, strlen(big), &o, err, sizeof err);
        ck_assert_msg(v != NULL, "%s", err);
        ck_assert_uint_eq(pano_json_len(v), 2001);
        pano_arena_reset(&a);
        v = pano_json_parse_with(doc, strlen(doc), &o, err, sizeof err);
        ck_assert_ptr_eq(v, first);
        char *again = pano_json_serialize(v, NULL);
        ck_assert_str_eq(again, expected);
        free(again);
    }
    free(big);
    free(expected);
    pano_arena_free(&a);
}
END_TEST

/* The arena builds the same trees as the heap. */
START_TEST(arena_and_heap_trees_match)
{
    static const char *const docs[] = {
        "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"\\u00e9\\n\"},\"e\":1.250,\"f\":-3e5}",
        "[]", "{}", "\"x\"", "12345678901234567890", "[[[[1]]]]",
        "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,"
        "\"k9\":9,\"k10\":10,\"k11\":11,\"k12\":12,\"k13\":13,\"k14\":14,\"k15\":15,"
        "\"k16\":16,\"k17\":17,\"k18\":18}",
    };
    pano_arena a;
    pano_arena_init(&a, 1024); /* small chunks: growth is exercised */
    pano_json_parse_options o = {.arena = &a};
    char err[200];
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        pano_arena_reset(&a);
        pano_json *in_arena = pano_json_parse_with(docs[i], strlen(docs[i]), &o, err, sizeof err);
        ck_assert_msg(in_arena != NULL, "%s: %s", docs[i], err);
        pano_json *on_heap = parse(docs[i]);
        ck_assert_ptr_nonnull(on_heap);
        char *x = pano_json_serialize(in_arena, NULL), *y = pano_json_serialize(on_heap, NULL);
        ck_assert_str_eq(x, y);
        free(x);
        free(y);
        pano_json_free(on_heap);
    }
    pano_arena_free(&a);
}
END_TEST

/* Numbers are read exactly as strtoll (when in range) and strtod read them,
 * fast paths included. */
START_TEST(walks_arrays_and_objects_in_order)
{
    pano_json *empty = pano_json_array();
    ck_assert_uint_eq(pano_json_len(empty), 0);
    pano_json_free(empty);
    pano_json *o = parse("{\"b\":1,\"a\":[true,\"x\"],\"c\":null}");
    ck_assert_uint_eq(pano_json_len(o), 3);
    ck_assert_str_eq(pano_json_key_at(o, 0), "b");
    ck_assert_str_eq(pano_json_key_at(o, 1), "a");
    ck_assert_str_eq(pano_json_key_at(o, 2), "c");
    ck_assert_int_eq(pano_json_at(o, 0)->u.integer, 1);
    ck_assert_int_eq(pano_json_at(o, 2)->type, PANO_JSON_NULL);
    const pano_json *a = pano_json_at(o, 1);
    ck_assert_uint_eq(pano_json_len(a), 2);
    ck_assert_int_eq(pano_json_at(a, 0)->type, PANO_JSON_BOOL);
    ck_assert_str_eq(pano_json_at(a, 1)->u.string.text, "x");
    /* neither an array nor an object: nothing to walk */
    ck_assert_uint_eq(pano_json_len(pano_json_at(o, 0)), 0);
    ck_assert_uint_eq(pano_json_len(pano_json_at(a, 1)), 0);
    ck_assert_uint_eq(pano_json_len(NULL), 0);
    pano_json_free(o);
}
END_TEST

START_TEST(get_array_only_finds_arrays)
{
    pano_json *o = parse("{\"list\":[1],\"object\":{\"k\":[2]},\"text\":\"[]\"}");
    const pano_json *list = pano_json_get_array(o, "list");
    ck_assert_ptr_nonnull(list);
    ck_assert_int_eq(pano_json_at(list, 0)->u.integer, 1);
    ck_assert_ptr_null(pano_json_get_array(o, "object"));
    ck_assert_ptr_null(pano_json_get_array(o, "text"));
    ck_assert_ptr_null(pano_json_get_array(o, "missing"));
    ck_assert_ptr_null(pano_json_get_array(NULL, "list"));
    ck_assert_ptr_null(pano_json_get_array(list, "list")); /* not an object */
    pano_json_free(o);
}
END_TEST

START_TEST(truncate_frees_the_tail)
{
    pano_json *a = parse("[\"a\",{\"b\":[1,2]},3]");
    pano_json_truncate(a, 5);
    ck_assert_uint_eq(pano_json_len(a), 3);
    pano_json_truncate(a, 1); /* the sanitizer build sees a leak or a double free */
    ck_assert_uint_eq(pano_json_len(a), 1);
    ck_assert_str_eq(pano_json_at(a, 0)->u.string.text, "a");
    pano_json_append(a, pano_json_int(4));
    char *text = pano_json_serialize(a, NULL);
    ck_assert_str_eq(text, "[\"a\",4]");
    free(text);
    pano_json_truncate(a, 0);
    ck_assert_uint_eq(pano_json_len(a), 0);
    pano_json_free(a);
}
END_TEST

static int by_n(const pano_json *a, const pano_json *b)
{
    int64_t x = 0, y = 0;
    pano_json_get_int(a, "n", &x);
    pano_json_get_int(b, "n", &y);
    return (x > y) - (x < y);
}

START_TEST(sort_is_stable)
{
    pano_json *a = parse("[{\"n\":3,\"id\":\"a\"},{\"n\":1,\"id\":\"b\"},{\"n\":3,\"id\":\"c\"},"
                         "{\"n\":2,\"id\":\"d\"},{\"n\":1,\"id\":\"e\"}]");
    pano_json_sort(a, by_n);
    const char *order[] = {"b", "e", "d", "a", "c"};
    ck_assert_uint_eq(pano_json_len(a), 5);
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(pano_json_get_str(pano_json_at(a, i), "id"), order[i]);
    pano_json_free(a);
    pano_json *empty = pano_json_array();
    pano_json_sort(empty, by_n);
    ck_assert_uint_eq(pano_json_len(empty), 0);
    pano_json_free(empty);
}
END_TEST

START_TEST(parse_reads_numbers_exactly)
{
    pano_arena a;
    pano_arena_init(&a, 0);
    pano_json_parse_options o = {.arena = &a};
    uint64_t state = 4242;
    char text[64], err[200];
    static const char *const fixed[] = {"0.1", "-0.0", "0.000000000000000000001", "1e5",
                                        "123456789012345.6", "1234567890123456.7", "9007199254740993.0",
                                        "-9223372036854775808", "9223372036854775807",
                                        "9223372036854775808", "-9223372036854775809",
                                        "1700000000.123456", "3.0", "-12.25", "0.30000000000000004"};
    for (int i = 0; i < 200000; i++) {
        if (i < (int)(sizeof fixed / sizeof fixed[0]))
            snprintf(text, sizeof text, "%s", fixed[i]);
        else {
            uint64_t r = pano_test_random(&state);
            int digits = 1 + (int)(r % 18), point = (int)((r >> 8) % (uint64_t)(digits + 1));
            int n = 0;
            if (r & (1 << 20))
                text[n++] = '-';
            for (int d = 0; d < digits; d++) {
                uint64_t x = pano_test_random(&state);
                if (d == point && d > 0)
                    text[n++] = '.';
                /* No leading zero before more digits: that is not JSON. */
                bool leading = d == 0 && digits > 1 && point != 1;
                text[n++] = (char)('0' + (leading ? 1 + x % 9 : x % 10));
            }
            text[n] = '\0';
        }
        pano_arena_reset(&a);
        pano_json *v = pano_json_parse_with(text, strlen(text), &o, err, sizeof err);
        ck_assert_msg(v != NULL, "%s: %s", text, err);
        errno = 0;
        long long ll = strtoll(text, NULL, 10);
        if (!strpbrk(text, ".eE") && errno == 0) {
            ck_assert_int_eq(v->type, PANO_JSON_INT);
            ck_assert_msg(v->u.integer == ll, "%s", text);
            continue;
        }
        ck_assert_int_eq(v->type, PANO_JSON_DOUBLE);
        double d = strtod(text, NULL);
        ck_assert_msg(memcmp(&v->u.real.value, &d, sizeof d) == 0, "%s: %.17g != %.17g", text,
                      v->u.real.value, d);
        const char *dot = strchr(text, '.');
        int decimals = dot && !strpbrk(text, "eE") ? (int)strlen(dot + 1) : -1;
        ck_assert_int_eq(v->u.real.decimals, decimals);
    }
    pano_arena_free(&a);
}
END_TEST

/* Peek at "event" and "event_id" of a line. */
static bool peek(const char *json, char *name, char *id)
{
    pano_json_peek want[] = {{"event", name, 16}, {"event_id", id, 16}};
    return pano_json_peek_strings(json, strlen(json), want, 2);
}

START_TEST(peek_reads_only_as_far_as_the_members_wanted)
{
    char name[16], id[16];
    /* both found: what follows is not read */
    ck_assert(peek("{\"event\":\"a.b\",\"x\":[1,{\"event\":\"no\"}],\"event_id\":\"i\\u00e9\", oops", name, id));
    ck_assert_str_eq(name, "a.b");
    ck_assert_str_eq(id, "i\xc3\xa9");
    /* one missing: the whole object read; a nested member is not the top's */
    ck_assert(peek("{\"x\":{\"event_id\":\"nested\"},\"event\":\"a\"}", name, id));
    ck_assert_str_eq(name, "a");
    ck_assert_str_eq(id, "");
    /* not a string, or too long: "" */
    ck_assert(peek("{\"event\":7,\"event_id\":\"0123456789abcdefXYZ\"}", name, id));
    ck_assert_str_eq(name, "");
    ck_assert_str_eq(id, "");
    /* not an object, or not JSON before both were found */
    ck_assert(!peek("[\"event\",\"a\"]", name, id));
    ck_assert(!peek("\"event\"", name, id));
    ck_assert(!peek("{\"event\":\"a\", oops", name, id));
    ck_assert(!peek("", name, id));
}
END_TEST

/* Events written down as text, to compare a stream with a tree's walk. */
typedef struct {
    char log[1024];
    int stop_after; /* stop at this event (0: never) */
    int n;
} event_log;

static bool log_event(event_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool log_event(event_log *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t used = strlen(l->log);
    vsnprintf(l->log + used, sizeof l->log - used, fmt, ap);
    va_end(ap);
    return ++l->n != l->stop_after;
}

static bool ev_open(void *u, bool array) { return log_event(u, array ? "[" : "{"); }
static bool ev_close(void *u) { return log_event(u, ")"); }
static bool ev_key(void *u, const char *k, size_t n) { return log_event(u, "k:%.*s ", (int)n, k); }
static bool ev_number(void *u, double v) { return log_event(u, "n:%.17g ", v); }
static bool ev_string(void *u, const char *s, size_t n) { return log_event(u, "s:%.*s ", (int)n, s); }
static bool ev_literal(void *u, int v) { return log_event(u, "l:%d ", v); }
static const pano_json_events logged = {ev_open, ev_close, ev_key, ev_number, ev_string, ev_literal};

START_TEST(a_stream_gives_the_events_a_tree_walk_gives)
{
    const char *text = "{\"a\":[1,-2.50,3e2,9223372036854775807,18446744073709551616,0.1],"
                       "\"b\":{\"c\":\"x\\u00e9\",\"d\":null,\"e\":true,\"f\":false},\"g\":[]}";
    event_log streamed = {0}, walked = {0};
    char err[128];
    ck_assert_int_eq(pano_json_stream(text, strlen(text), &logged, &streamed, err, sizeof err), 0);
    pano_json *j = pano_json_parse(text, strlen(text), 0, err, sizeof err);
    ck_assert(pano_json_walk(j, &logged, &walked));
    ck_assert_str_eq(streamed.log, walked.log);
    ck_assert_str_eq(streamed.log, "{k:a [n:1 n:-2.5 n:300 n:9.2233720368547758e+18 "
                                   "n:1.8446744073709552e+19 n:0.10000000000000001 )"
                                   "k:b {k:c s:x\xc3\xa9 k:d l:-1 k:e l:1 k:f l:0 )k:g [))");
    /* a callback stops it, on either side */
    event_log stopped = {.stop_after = 3}, stopped_walk = {.stop_after = 3};
    ck_assert_int_eq(pano_json_stream(text, strlen(text), &logged, &stopped, err, sizeof err), -1);
    ck_assert_str_eq(err, "stopped by its reader");
    ck_assert(!pano_json_walk(j, &logged, &stopped_walk));
    ck_assert_str_eq(stopped.log, "{k:a [");
    ck_assert_str_eq(stopped_walk.log, stopped.log);
    pano_json_free(j);
    /* what the tree refuses, the stream refuses */
    const char *bad[] = {"{\"a\":1e400}", "{\"a\":", "[1] 2", "{\"a\":\"\xff\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        event_log l = {0};
        ck_assert_msg(pano_json_stream(bad[i], strlen(bad[i]), &logged, &l, err, sizeof err) == -1,
                      "%s", bad[i]);
        ck_assert(err[0]);
    }
}
END_TEST

/* One number streamed, as a double. */
static bool got_number(void *u, double v)
{
    *(double *)u = v;
    return true;
}
static bool no_open(void *u, bool a) { (void)u, (void)a; return false; }
static bool no_close(void *u) { (void)u; return false; }
static bool no_key(void *u, const char *k, size_t n) { (void)u, (void)k, (void)n; return false; }
static bool no_string(void *u, const char *t, size_t n) { (void)u, (void)t, (void)n; return false; }
static bool no_literal(void *u, int v) { (void)u, (void)v; return false; }
static const pano_json_events one_number = {no_open, no_close, no_key, got_number, no_string,
                                            no_literal};

START_TEST(a_streamed_number_is_the_double_strtod_reads)
{
    /* decimals of every length around the exact case (16 digits, below
     * 2^53) and past it, whole numbers, exponents, signs, zeros */
    const char *fixed[] = {"0", "-0", "0.0", "-0.0", "0.1", "-2.50", "1796617707.787942",
                           "9007199254740991.5", "9007199254740.9925", "8999999999999999.9",
                           "0.0000000000000001", "0.30000000000000004", "123456789012345",
                           "1234567890123456", "12345678901234567", "1e2", "-1.5E-3",
                           "4503599627370497.5", "1.7976931348623157e308", "5e-324"};
    char text[64], err[128];
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        double v = NAN;
        ck_assert_int_eq(pano_json_stream(fixed[i], strlen(fixed[i]), &one_number, &v, err, sizeof err), 0);
        double want = strcmp(fixed[i], "-0") == 0 ? 0.0 : strtod(fixed[i], NULL);
        ck_assert_msg(memcmp(&v, &want, sizeof v) == 0, "%s: %.17g, not %.17g", fixed[i], v, want);
    }
    unsigned seed = 7;
    for (int i = 0; i < 200000; i++) {
        int digits = 1 + (int)(rand_r(&seed) % 18), point = (int)(rand_r(&seed) % digits);
        size_t at = 0;
        if (rand_r(&seed) % 4 == 0)
            text[at++] = '-';
        for (int d = 0; d < digits; d++) {
            if (d == point && d > 0)
                text[at++] = '.';
            text[at++] = (char)('0' + (d == 0 && point != 1 && digits > 1 ? 1 + rand_r(&seed) % 9
                                                                           : rand_r(&seed) % 10));
        }
        text[at] = '\0';
        double v = NAN, want = strtod(text, NULL);
        ck_assert_int_eq(pano_json_stream(text, at, &one_number, &v, err, sizeof err), 0);
        if (want == 0)
            want = 0; /* -0 read as 0 */
        if (v == 0)
            v = 0;
        ck_assert_msg(memcmp(&v, &want, sizeof v) == 0, "%s: %.17g, not %.17g", text, v, want);
    }
}
END_TEST

START_TEST(a_stream_fed_in_pieces_gives_the_same_events)
{
    const char *text = "{\"a\":[1,-2.50,3e2,0.1,1796617707.787942],\"long key\":\"x\\u00e9y\","
                       "\"d\":null,\"e\":true}";
    size_t len = strlen(text);
    char err[128];
    event_log whole = {0};
    ck_assert_int_eq(pano_json_stream(text, len, &logged, &whole, err, sizeof err), 0);
    for (size_t piece = 1; piece <= len; piece++) {
        event_log l = {0};
        pano_json_stream_reader *r = pano_json_stream_begin(&logged, &l);
        ck_assert_ptr_nonnull(r);
        for (size_t at = 0; at < len; at += piece)
            ck_assert_int_eq(pano_json_stream_feed(r, text + at, at + piece <= len ? piece : len - at,
                                                   err, sizeof err), 0);
        ck_assert_int_eq(pano_json_stream_end(r, err, sizeof err), 0);
        ck_assert_str_eq(l.log, whole.log);
    }
    /* incomplete: the end says so; invalid: the feed says so, and the end keeps its message */
    event_log l = {0};
    pano_json_stream_reader *r = pano_json_stream_begin(&logged, &l);
    ck_assert_int_eq(pano_json_stream_feed(r, text, len / 2, err, sizeof err), 0);
    ck_assert_int_eq(pano_json_stream_end(r, err, sizeof err), -1);
    ck_assert(err[0]);
    r = pano_json_stream_begin(&logged, &l);
    ck_assert_int_eq(pano_json_stream_feed(r, "[1,]", 4, err, sizeof err), -1);
    char first[128];
    snprintf(first, sizeof first, "%s", err);
    ck_assert_int_eq(pano_json_stream_feed(r, "[1]", 3, err, sizeof err), -1);
    snprintf(err, sizeof err, "%s", first);
    ck_assert_int_eq(pano_json_stream_end(r, err, sizeof err), -1);
    ck_assert_str_eq(err, first);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, build_and_serialize_keeps_order_and_formats);
    tcase_add_test(tc, round_trip_preserves_values);
    tcase_add_test(tc, invalid_utf8_is_repaired_on_construction);
    tcase_add_test(tc, utf8_valid_prefix);
    tcase_add_test(tc, parse_rejects_bad_input_with_reason);
    tcase_add_test(tc, parse_limits_nesting_depth);
    tcase_add_test(tc, parse_uses_length_not_nul);
    tcase_add_test(tc, remove_and_clone);
    tcase_add_test(tc, non_finite_doubles_become_null);
    tcase_add_test(tc, add_appends_in_order);
    tcase_add_test(tc, numbers_are_written_as_printf_writes_them);
    tcase_add_test(tc, writer_extends_a_tree_and_repairs_text);
    tcase_add_test(tc, parse_duplicate_keys_last_wins);
    tcase_add_test(tc, parse_repairs_strings_unless_raw);
    tcase_add_test(tc, arena_parse_rejects_duplicate_keys);
    tcase_add_test(tc, arena_parse_limits_depth);
    tcase_add_test(tc, arena_reset_reuses_memory);
    tcase_add_test(tc, arena_and_heap_trees_match);
    tcase_add_test(tc, parse_reads_numbers_exactly);
    tcase_add_test(tc, walks_arrays_and_objects_in_order);
    tcase_add_test(tc, get_array_only_finds_arrays);
    tcase_add_test(tc, truncate_frees_the_tail);
    tcase_add_test(tc, sort_is_stable);
    tcase_add_test(tc, peek_reads_only_as_far_as_the_members_wanted);
    tcase_add_test(tc, a_stream_gives_the_events_a_tree_walk_gives);
    tcase_add_test(tc, a_streamed_number_is_the_double_strtod_reads);
    tcase_add_test(tc, a_stream_fed_in_pieces_gives_the_same_events);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
