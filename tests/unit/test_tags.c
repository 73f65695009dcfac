/* pano-bridge's delivery-tag bookkeeping (broker-bridge/tags.h), checked
 * against a model of what RabbitMQ accepts: an ack must name a tag the
 * broker still holds, multiple=true forgets every held tag up to it. */
#include "mem.h"
#include "tags.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

START_TEST(in_order)
{
    pano_tags t;
    pano_tags_init(&t, 16);
    pano_tags_reset(&t, 0);
    uint64_t n;
    for (uint64_t tag = 1; tag <= 5; tag++)
        ck_assert(pano_tags_receive(&t, tag, 0));
    ck_assert_uint_eq(pano_tags_take_ack(&t, 0, &n), 0);
    ck_assert(pano_tags_done(&t, 1));
    ck_assert(pano_tags_done(&t, 2));
    ck_assert(pano_tags_done(&t, 4));
    ck_assert_uint_eq(pano_tags_take_ack(&t, 0, &n), 2);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(pano_tags_outstanding(&t), 3);
    ck_assert_uint_eq(pano_tags_pending(&t), 2);
    ck_assert(pano_tags_done(&t, 3));
    ck_assert_uint_eq(pano_tags_take_ack(&t, 0, &n), 4);
    ck_assert_uint_eq(n, 2);
    ck_assert(!pano_tags_done(&t, 3)); /* already acked */
    ck_assert(!pano_tags_done(&t, 9)); /* never received */
    pano_tags_free(&t);
}
END_TEST

START_TEST(settled_tags_are_never_named)
{
    pano_tags t;
    pano_tags_init(&t, 16);
    pano_tags_reset(&t, 0);
    uint64_t n;
    for (uint64_t tag = 1; tag <= 4; tag++)
        ck_assert(pano_tags_receive(&t, tag, 0));
    ck_assert(pano_tags_done(&t, 1));
    ck_assert(pano_tags_done(&t, 2));
    ck_assert(pano_tags_settled(&t, 3)); /* nacked: the broker forgot it */
    /* the ack must name 2, not 3 */
    ck_assert_uint_eq(pano_tags_take_ack(&t, 0, &n), 2);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(pano_tags_outstanding(&t), 1);
    /* a run of settled tags only: forgotten without an ack */
    ck_assert(pano_tags_settled(&t, 4));
    ck_assert_uint_eq(pano_tags_take_ack(&t, 0, &n), 0);
    ck_assert_uint_eq(pano_tags_outstanding(&t), 0);
    ck_assert(pano_tags_receive(&t, 5, 0));
    pano_tags_free(&t);
}
END_TEST

START_TEST(reset_and_bounds)
{
    pano_tags t;
    pano_tags_init(&t, 4);
    pano_tags_reset(&t, 0);
    ck_assert(!pano_tags_receive(&t, 2, 0)); /* not the next tag */
    for (uint64_t tag = 1; tag <= 4; tag++)
        ck_assert(pano_tags_receive(&t, tag, 0));
    ck_assert_uint_eq(pano_tags_room(&t), 0);
    ck_assert(!pano_tags_receive(&t, 5, 0)); /* the ring is full */
    ck_assert(pano_tags_done(&t, 1));
    uint64_t n;
    ck_assert_uint_eq(pano_tags_take_ack(&t, 0, &n), 1);
    ck_assert(pano_tags_receive(&t, 5, 0));
    /* a new channel: the old tags mean nothing any more */
    pano_tags_reset(&t, 0);
    ck_assert(!pano_tags_done(&t, 2));
    ck_assert_uint_eq(pano_tags_outstanding(&t), 0);
    ck_assert(pano_tags_receive(&t, 1, 0));
    pano_tags_free(&t);
}
END_TEST

START_TEST(stuck_head)
{
    pano_tags t;
    pano_tags_init(&t, 16);
    pano_tags_reset(&t, 0);
    for (uint64_t tag = 1; tag <= 6; tag++)
        ck_assert(pano_tags_receive(&t, tag, 0));
    for (uint64_t tag = 2; tag <= 6; tag++)
        ck_assert(pano_tags_done(&t, tag));
    uint64_t n, out[3];
    ck_assert_uint_eq(pano_tags_take_ack(&t, 0, &n), 0);
    ck_assert_uint_eq(pano_tags_head(&t), 1);
    ck_assert_uint_eq(pano_tags_take_single(&t, out, 3), 3);
    ck_assert_uint_eq(out[0], 2);
    ck_assert_uint_eq(out[2], 4);
    ck_assert_uint_eq(pano_tags_take_single(&t, out, 3), 2);
    ck_assert_uint_eq(pano_tags_take_single(&t, out, 3), 0);
    ck_assert_uint_eq(pano_tags_outstanding(&t), 1);
    ck_assert(pano_tags_done(&t, 1));
    /* 2..6 are gone from the broker: the ack names 1 only */
    ck_assert_uint_eq(pano_tags_take_ack(&t, 0, &n), 1);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(pano_tags_outstanding(&t), 0);
    ck_assert_uint_eq(pano_tags_head(&t), 0);
    pano_tags_free(&t);
}
END_TEST

START_TEST(expired)
{
    pano_tags t;
    pano_tags_init(&t, 16);
    pano_tags_reset(&t, 0);
    for (uint64_t tag = 1; tag <= 6; tag++)
        ck_assert(pano_tags_receive(&t, tag, (double)tag)); /* received at 1 s, 2 s, ... */
    ck_assert(pano_tags_done(&t, 2));
    uint64_t out[8], n;
    /* older than 4.5 s and still pending: 1, 3, 4 (2 is done) */
    ck_assert_uint_eq(pano_tags_take_expired(&t, 4.5, out, 8), 3);
    ck_assert_uint_eq(out[0], 1);
    ck_assert_uint_eq(out[1], 3);
    ck_assert_uint_eq(out[2], 4);
    ck_assert_uint_eq(pano_tags_take_expired(&t, 4.5, out, 8), 0);
    /* the ack names 2; 1, 3, 4 were nacked */
    ck_assert_uint_eq(pano_tags_take_ack(&t, 10, &n), 2);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(pano_tags_outstanding(&t), 2);
    ck_assert_uint_eq(pano_tags_head(&t), 5);
    pano_tags_free(&t);
}
END_TEST

/* Random orders of confirmations, nacks and acks, against the broker model. */
START_TEST(random_orders)
{
    enum { N = 20000, WINDOW = 64 };
    srand(12345);
    unsigned char *held = pano_calloc(N + 2, 1);     /* the broker's view */
    unsigned char *finished = pano_calloc(N + 2, 1); /* ours: done or nacked */
    pano_tags t;
    pano_tags_init(&t, WINDOW);
    pano_tags_reset(&t, 0);
    uint64_t next = 1, acked = 0, nacked = 0;
    uint64_t low = 1; /* lowest tag the broker may still hold */
    while (acked + nacked < N) {
        int action = rand() % 10;
        if (action < 3 && next <= N && pano_tags_room(&t) > 0) {
            ck_assert(pano_tags_receive(&t, next, 0));
            held[next++] = 1;
        } else if (action < 7 && next > low) {
            uint64_t tag = low + (uint64_t)rand() % (next - low);
            if (held[tag] && !finished[tag]) {
                if (rand() % 20 == 0) { /* nack */
                    ck_assert(pano_tags_settled(&t, tag));
                    held[tag] = 0;
                    nacked++;
                } else
                    ck_assert(pano_tags_done(&t, tag));
                finished[tag] = 1;
            }
        } else if (action < 9) {
            uint64_t n, upto = pano_tags_take_ack(&t, 0, &n);
            if (upto) {
                ck_assert_msg(held[upto], "ack names tag %llu the broker no longer holds",
                              (unsigned long long)upto);
                uint64_t covered = 0;
                for (uint64_t tag = low; tag <= upto; tag++)
                    if (held[tag]) {
                        ck_assert_msg(finished[tag], "tag %llu acked before Kafka confirmed it",
                                      (unsigned long long)tag);
                        held[tag] = 0;
                        covered++;
                    }
                ck_assert_uint_eq(covered, n);
                acked += n;
            }
            while (low < next && !held[low])
                low++;
        } else {
            uint64_t out[8];
            size_t k = pano_tags_take_single(&t, out, 8);
            for (size_t i = 0; i < k; i++) {
                ck_assert(held[out[i]] && finished[out[i]]);
                held[out[i]] = 0;
                acked++;
            }
        }
    }
    ck_assert_uint_eq(pano_tags_outstanding(&t), 0);
    for (uint64_t tag = 1; tag <= N; tag++)
        ck_assert(!held[tag]);
    pano_tags_free(&t);
    free(held);
    free(finished);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tags");
    TCase *tc = tcase_create("tags");
    tcase_add_test(tc, in_order);
    tcase_add_test(tc, settled_tags_are_never_named);
    tcase_add_test(tc, reset_and_bounds);
    tcase_add_test(tc, stuck_head);
    tcase_add_test(tc, expired);
    tcase_add_test(tc, random_orders);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
