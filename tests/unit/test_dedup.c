/* pano-bridge's window of confirmed event_ids (broker-bridge/dedup.h): the
 * hash against SipHash's reference vectors, and the window against a model
 * that keeps ids by index. */
#include "dedup.h"
#include "testutil.h"

#include <stdio.h>
#include <string.h>

static const unsigned char reference_key[16] = {0, 1, 2, 3, 4, 5, 6, 7,
                                                8, 9, 10, 11, 12, 13, 14, 15};

static pano_dedup_id id_of(const pano_dedup *d, const char *text)
{
    return pano_dedup_id_of(d, text, strlen(text));
}

/* vectors_sip128 of the SipHash reference implementation: key 00..0f,
 * message 00 01 .. (len - 1). */
START_TEST(siphash_reference_vectors)
{
    static const struct {
        size_t len;
        unsigned char out[16];
    } vectors[] = {
        {0, {0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55,
             0x02, 0x93}},
        {1, {0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44, 0x34, 0x76, 0x59, 0x11, 0x9b, 0x22,
             0xfc, 0x45}},
        {7, {0xa1, 0xf1, 0xeb, 0xbe, 0xd8, 0xdb, 0xc1, 0x53, 0xc0, 0xb8, 0x4a, 0xa6, 0x1f, 0xf0,
             0x82, 0x39}},
        {8, {0x3b, 0x62, 0xa9, 0xba, 0x62, 0x58, 0xf5, 0x61, 0x0f, 0x83, 0xe2, 0x64, 0xf3, 0x14,
             0x97, 0xb4}},
        {9, {0x26, 0x44, 0x99, 0x06, 0x0a, 0xd9, 0xba, 0xab, 0xc4, 0x7f, 0x8b, 0x02, 0xbb, 0x6d,
             0x71, 0xed}},
    };
    pano_dedup *d = pano_dedup_new(1, reference_key);
    unsigned char message[16];
    for (size_t i = 0; i < sizeof message; i++)
        message[i] = (unsigned char)i;
    for (size_t v = 0; v < sizeof vectors / sizeof *vectors; v++) {
        pano_dedup_id id = pano_dedup_id_of(d, message, vectors[v].len);
        unsigned char out[16];
        for (int b = 0; b < 8; b++) {
            out[b] = (unsigned char)(id.lo >> (8 * b));
            out[8 + b] = (unsigned char)(id.hi >> (8 * b));
        }
        ck_assert_msg(memcmp(out, vectors[v].out, 16) == 0, "length %zu", vectors[v].len);
    }
    /* Another key, other values. */
    unsigned char other[16] = {1};
    pano_dedup *e = pano_dedup_new(1, other);
    pano_dedup_id a = id_of(d, "event-1"), b = id_of(e, "event-1");
    ck_assert(a.lo != b.lo && a.hi != b.hi);
    pano_dedup_free(e);
    pano_dedup_free(d);
}
END_TEST

START_TEST(remembers_the_last_n)
{
    pano_dedup *d = pano_dedup_new(3, reference_key);
    ck_assert(!pano_dedup_seen(d, id_of(d, "a")));
    pano_dedup_remember(d, id_of(d, "a"));
    pano_dedup_remember(d, id_of(d, "b"));
    pano_dedup_remember(d, id_of(d, "c"));
    pano_dedup_remember(d, id_of(d, "a")); /* already there: keeps its place */
    ck_assert_uint_eq(pano_dedup_count(d), 3);
    ck_assert(pano_dedup_seen(d, id_of(d, "a")) && pano_dedup_seen(d, id_of(d, "c")));
    ck_assert(!pano_dedup_seen(d, id_of(d, "d")));
    pano_dedup_remember(d, id_of(d, "d")); /* the oldest, a, goes */
    ck_assert(!pano_dedup_seen(d, id_of(d, "a")));
    ck_assert(pano_dedup_seen(d, id_of(d, "b")) && pano_dedup_seen(d, id_of(d, "d")));
    pano_dedup_remember(d, id_of(d, "e")); /* then b */
    ck_assert(!pano_dedup_seen(d, id_of(d, "b")));
    ck_assert(pano_dedup_seen(d, id_of(d, "c")) && pano_dedup_seen(d, id_of(d, "e")));
    ck_assert_uint_eq(pano_dedup_count(d), 3);
    pano_dedup_free(d);
}
END_TEST

/* Random remembers and lookups against a model: every removal from the
 * index (oldest forgotten) must leave the other ids findable. Small windows
 * wrap the index often. */
START_TEST(matches_a_model)
{
    enum { IDS = 5000 };
    static const size_t capacities[] = {1, 2, 7, 64, 1000, 4096};
    uint64_t state = 0x2545F4914F6CDD1DULL;
    for (size_t c = 0; c < sizeof capacities / sizeof *capacities; c++) {
        size_t capacity = capacities[c];
        pano_dedup *d = pano_dedup_new(capacity, reference_key);
        static bool in[IDS];
        static int ring[4096];
        memset(in, 0, sizeof in);
        size_t count = 0, oldest = 0;
        char text[32];
        for (int op = 0; op < 100000; op++) {
            int i = (int)(pano_test_random(&state) % IDS);
            snprintf(text, sizeof text, "wf-%d-event", i);
            pano_dedup_id id = id_of(d, text);
            ck_assert_msg(pano_dedup_seen(d, id) == in[i], "capacity %zu op %d id %d", capacity,
                          op, i);
            if (pano_test_random(&state) % 3 == 0)
                continue; /* a lookup only */
            pano_dedup_remember(d, id);
            if (in[i])
                continue;
            if (count < capacity)
                ring[count++] = i;
            else {
                in[ring[oldest]] = false;
                ring[oldest] = i;
                oldest = (oldest + 1) % capacity;
            }
            in[i] = true;
        }
        ck_assert_uint_eq(pano_dedup_count(d), count);
        for (int i = 0; i < IDS; i++) {
            snprintf(text, sizeof text, "wf-%d-event", i);
            ck_assert(pano_dedup_seen(d, id_of(d, text)) == in[i]);
        }
        pano_dedup_free(d);
    }
}
END_TEST

START_TEST(memory_is_fixed_and_reported)
{
    pano_dedup *d = pano_dedup_new(100000, reference_key);
    size_t bytes = pano_dedup_bytes(d);
    ck_assert_uint_ge(bytes, 100000 * 24);
    ck_assert_uint_le(bytes, 100000 * 32);
    char text[32];
    for (int i = 0; i < 250000; i++) {
        snprintf(text, sizeof text, "%d", i);
        pano_dedup_remember(d, id_of(d, text));
    }
    ck_assert_uint_eq(pano_dedup_count(d), 100000);
    ck_assert_uint_eq(pano_dedup_bytes(d), bytes);
    ck_assert(pano_dedup_seen(d, id_of(d, "249999")) && pano_dedup_seen(d, id_of(d, "150000")));
    ck_assert(!pano_dedup_seen(d, id_of(d, "149999")));
    pano_dedup_free(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bridge_dedup");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, siphash_reference_vectors);
    tcase_add_test(tc, remembers_the_last_n);
    tcase_add_test(tc, matches_a_model);
    tcase_add_test(tc, memory_is_fixed_and_reported);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
