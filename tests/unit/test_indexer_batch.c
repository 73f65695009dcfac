/* pano-indexer's delivery decisions: when a batch is due, what a bulk
 * response does to an item, which offsets a batch allows to store, the
 * dead-letter document of a refused message, the backoff and the drain
 * deadline. */
#include "backoff.h"
#include "batch.h"
#include "json.h"
#include "testutil.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Topics for hand-made messages: rd_kafka_topic_name() needs real handles,
 * which a producer without brokers gives. */
static rd_kafka_t *rk;
static rd_kafka_topic_t *kickstart, *stampede;

static void setup(void)
{
    char err[256];
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof err);
    ck_assert_msg(rk, "%s", err);
    kickstart = rd_kafka_topic_new(rk, "pano-kickstart", NULL);
    stampede = rd_kafka_topic_new(rk, "pano-stampede", NULL);
    ck_assert(kickstart && stampede);
}

static void teardown(void)
{
    rd_kafka_topic_destroy(kickstart);
    rd_kafka_topic_destroy(stampede);
    rd_kafka_destroy(rk);
}

enum { CAP = 16 };

/* A batch of hand-made messages (never destroyed: batch_release and
 * batch_drop are not for them). */
typedef struct {
    batch b;
    batch_item items[CAP];
    rd_kafka_message_t msgs[CAP];
} test_batch;

static batch_item *add(test_batch *t, rd_kafka_topic_t *topic, int partition, int64_t offset,
                       size_t len, double now, bool settled)
{
    rd_kafka_message_t *m = &t->msgs[t->b.count];
    *m = (rd_kafka_message_t){.rkt = topic, .partition = partition, .offset = offset, .len = len};
    batch_item *it = batch_add(&t->b, m, now);
    it->settled = settled;
    return it;
}

static void init(test_batch *t)
{
    memset(t, 0, sizeof *t);
    t->b.items = t->items;
}

static int64_t offset_of(const rd_kafka_topic_partition_list_t *l, const char *topic, int p)
{
    const rd_kafka_topic_partition_t *e = rd_kafka_topic_partition_list_find(l, topic, p);
    return e ? e->offset : -1;
}

START_TEST(adding_and_due)
{
    test_batch t;
    init(&t);
    batch_limits lim = {.max_docs = 3, .max_bytes = 1000, .linger = 0.02};
    /* empty: never due by linger, the wait given */
    ck_assert(!batch_full(&t.b, &lim));
    ck_assert_double_eq(batch_left(&t.b, &lim, 50.0, 0.5), 0.5);
    add(&t, kickstart, 0, 1, 100, 50.0, false);
    ck_assert_uint_eq(t.b.count, 1);
    ck_assert_uint_eq(t.b.bytes, 100);
    ck_assert_double_eq(t.b.first, 50.0);
    /* the linger runs from the first message, not the last */
    add(&t, kickstart, 0, 2, 100, 50.015, false);
    ck_assert_double_eq(t.b.first, 50.0);
    ck_assert_double_eq_tol(batch_left(&t.b, &lim, 50.015, 0.5), 0.005, 1e-9);
    ck_assert(batch_left(&t.b, &lim, 50.02, 0.5) <= 0);
    ck_assert(!batch_full(&t.b, &lim));
    /* full by documents */
    add(&t, kickstart, 0, 3, 100, 50.016, false);
    ck_assert(batch_full(&t.b, &lim));
    /* full by bytes */
    init(&t);
    add(&t, kickstart, 0, 1, 999, 1.0, false);
    ck_assert(!batch_full(&t.b, &lim));
    add(&t, kickstart, 0, 2, 1, 1.0, false);
    ck_assert(batch_full(&t.b, &lim));
    ck_assert_uint_eq(batch_unsettled(&t.b), 2);
    t.b.items[0].settled = true;
    ck_assert_uint_eq(batch_unsettled(&t.b), 1);
    batch_reset(&t.b);
    ck_assert_uint_eq(t.b.count, 0);
    ck_assert_uint_eq(t.b.bytes, 0);
    ck_assert(!batch_full(&t.b, &lim));
}
END_TEST

static batch_verdict verdict(bool rejected, const char *wf_uuid, pano_bulk_outcome o, int status)
{
    batch_item it = {.rejected = rejected};
    snprintf(it.doc.wf_uuid, sizeof it.doc.wf_uuid, "%s", wf_uuid);
    pano_bulk_result r = {.outcome = o, .status = status};
    return batch_verdict_of(&it, &r);
}

START_TEST(bulk_item_verdicts)
{
    const char *uuid = "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20";
    ck_assert_int_eq(verdict(false, uuid, PANO_BULK_DONE, 201), BATCH_INDEXED);
    ck_assert_int_eq(verdict(false, "", PANO_BULK_DONE, 201), BATCH_UNASSIGNED);
    ck_assert_int_eq(verdict(false, uuid, PANO_BULK_DONE, 409), BATCH_DUPLICATE);
    ck_assert_int_eq(verdict(false, "", PANO_BULK_DONE, 409), BATCH_DUPLICATE);
    /* a dead letter written (a 409 of one too: a replay) */
    ck_assert_int_eq(verdict(true, uuid, PANO_BULK_DONE, 201), BATCH_DEAD);
    ck_assert_int_eq(verdict(true, "", PANO_BULK_DONE, 409), BATCH_DEAD);
    ck_assert_int_eq(verdict(false, uuid, PANO_BULK_RETRY, 429), BATCH_RETRY);
    ck_assert_int_eq(verdict(true, uuid, PANO_BULK_RETRY, 503), BATCH_RETRY);
    ck_assert_int_eq(verdict(false, uuid, PANO_BULK_REJECTED, 400), BATCH_DEAD_LETTER);
    /* the dead-letter index refusing: never dropped */
    ck_assert_int_eq(verdict(true, uuid, PANO_BULK_REJECTED, 400), BATCH_REFUSED);
}
END_TEST

START_TEST(offsets_stop_at_the_first_unsettled)
{
    test_batch t;
    init(&t);
    /* kickstart 0: 10, 11 settled, 12 not, 13 settled -> up to 12 */
    add(&t, kickstart, 0, 10, 1, 0, true);
    add(&t, stampede, 0, 7, 1, 0, true);
    add(&t, kickstart, 0, 11, 1, 0, true);
    add(&t, kickstart, 1, 5, 1, 0, false); /* kickstart 1: first unsettled: nothing */
    add(&t, kickstart, 0, 12, 1, 0, false);
    add(&t, kickstart, 1, 6, 1, 0, true);
    add(&t, kickstart, 0, 13, 1, 0, true);
    add(&t, stampede, 0, 8, 1, 0, true); /* stampede 0: all settled -> 9 */
    rd_kafka_topic_partition_list_t *l = batch_offsets(&t.b);
    ck_assert_int_eq(l->cnt, 2);
    ck_assert_int_eq(offset_of(l, "pano-kickstart", 0), 12);
    ck_assert_int_eq(offset_of(l, "pano-stampede", 0), 9);
    ck_assert_int_eq(offset_of(l, "pano-kickstart", 1), -1);
    rd_kafka_topic_partition_list_destroy(l);

    /* once everything is settled, each partition up to its last */
    for (size_t i = 0; i < t.b.count; i++)
        t.b.items[i].settled = true;
    l = batch_offsets(&t.b);
    ck_assert_int_eq(l->cnt, 3);
    ck_assert_int_eq(offset_of(l, "pano-kickstart", 0), 14);
    ck_assert_int_eq(offset_of(l, "pano-kickstart", 1), 7);
    rd_kafka_topic_partition_list_destroy(l);

    /* an empty batch stores nothing */
    init(&t);
    l = batch_offsets(&t.b);
    ck_assert_int_eq(l->cnt, 0);
    rd_kafka_topic_partition_list_destroy(l);
}
END_TEST

/* Closing samples go right after their end's item, with its message: an
 * unsettled one holds its partition's offset back at its end. */
START_TEST(closing_samples_in_place)
{
    test_batch t;
    init(&t);
    for (int64_t o = 0; o < 5; o++)
        add(&t, kickstart, 0, 20 + o, 1, 0, true);
    pano_bulk_doc docs[2] = {0};
    snprintf(docs[0].id, sizeof docs[0].id, "c1");
    snprintf(docs[1].id, sizeof docs[1].id, "c3");
    const size_t after[] = {1, 3};
    batch_insert_closings(&t.b, after, docs, 2);
    ck_assert_uint_eq(t.b.count, 7);
    const int64_t offsets[] = {20, 21, 21, 22, 23, 23, 24};
    const bool closing[] = {false, false, true, false, false, true, false};
    for (size_t i = 0; i < 7; i++) {
        ck_assert_int_eq(t.b.items[i].msg->offset, offsets[i]);
        ck_assert(t.b.items[i].closing == closing[i]);
        ck_assert(t.b.items[i].settled == !closing[i]);
    }
    ck_assert_str_eq(t.b.items[2].doc.id, "c1");
    ck_assert_str_eq(t.b.items[5].doc.id, "c3");
    ck_assert_uint_eq(t.b.bytes, 5); /* closing samples are not messages */
    /* c1 not settled: the end at 21 is not committed */
    rd_kafka_topic_partition_list_t *l = batch_offsets(&t.b);
    ck_assert_int_eq(offset_of(l, "pano-kickstart", 0), 21);
    rd_kafka_topic_partition_list_destroy(l);
    t.b.items[2].settled = t.b.items[5].settled = true;
    l = batch_offsets(&t.b);
    ck_assert_int_eq(offset_of(l, "pano-kickstart", 0), 25);
    rd_kafka_topic_partition_list_destroy(l);
}
END_TEST

START_TEST(dead_letter_document)
{
    test_batch t;
    init(&t);
    static char big[300 * 1024];
    memset(big, 'x', sizeof big);
    batch_item *it = add(&t, kickstart, 3, 42, sizeof big, 0, false);
    t.msgs[0].payload = big;
    snprintf(it->reason, sizeof it->reason, "no valid event name");
    it->status = 400;
    snprintf(it->doc.wf_uuid, sizeof it->doc.wf_uuid, "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20");
    batch_dead_letters dl = {.index = "pano-dead-letter",
                             .period = PANO_PERIOD_MONTH,
                             .bridge_topic = "pano-dead-letters"};
    batch_make_dead_letter(it, &dl, 1790000000.0); /* 2026-09-21 */
    ck_assert(it->rejected);
    ck_assert_str_eq(it->doc.index, "pano-dead-letter-2026.09");
    ck_assert_str_eq(it->doc.routing, "");
    ck_assert_msg(strncmp(it->doc.id, "pano-kickstart-3-42-", 20) == 0, "%s", it->doc.id);
    char err[200];
    pano_json *d = pano_json_parse(it->doc.doc, it->doc.doc_len, 0, err, sizeof err);
    ck_assert_msg(d, "%s", err);
    ck_assert_str_eq(pano_json_get_str(d, "source"), "pano-indexer");
    ck_assert_str_eq(pano_json_get_str(d, "reason"), "no valid event name");
    ck_assert_str_eq(pano_json_get_str(d, "@timestamp"), "2026-09-21T14:13:20.000000Z");
    ck_assert_str_eq(pano_json_get_str(d, "wf_uuid"), "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20");
    int64_t v;
    ck_assert(pano_json_get_int(d, "status", &v) && v == 400);
    ck_assert(pano_json_get_int(d, "offset", &v) && v == 42);
    ck_assert(pano_json_get_int(d, "original_size", &v) && v == (int64_t)sizeof big);
    pano_json *trunc = pano_json_get(d, "truncated");
    ck_assert(trunc && trunc->type == PANO_JSON_BOOL && trunc->u.boolean);
    ck_assert_uint_eq(pano_json_get(d, "original")->u.string.len, 256 * 1024);
    pano_json_free(d);
    pano_bulk_doc_free(&it->doc);
}
END_TEST

START_TEST(backoff_doubles_to_its_cap)
{
    double b = BACKOFF_FIRST;
    const double want[] = {0.2, 0.4, 0.8, 1.6, 3.2, 5, 5};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        b = backoff_next(b, 5);
        ck_assert_double_eq_tol(b, want[i], 1e-12);
    }
    for (int i = 0; i < 1000; i++) {
        double j = backoff_jitter();
        ck_assert(j >= 0.5 && j < 1.5);
    }
}
END_TEST

START_TEST(drain_deadline)
{
    /* not stopping: no deadline, never expired */
    ck_assert_double_eq(backoff_deadline(0, false, 100, 10), 0);
    ck_assert(!backoff_expired(0, 1e12));
    /* stopping: drain_timeout from the first time it is asked, then kept */
    double d = backoff_deadline(0, true, 100, 10);
    ck_assert_double_eq(d, 110);
    ck_assert_double_eq(backoff_deadline(d, true, 105, 10), 110);
    ck_assert(!backoff_expired(d, 109.9));
    ck_assert(backoff_expired(d, 110));
    ck_assert(backoff_expired(d, 111));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("indexer_batch");
    TCase *tc = tcase_create("batch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, adding_and_due);
    tcase_add_test(tc, bulk_item_verdicts);
    tcase_add_test(tc, offsets_stop_at_the_first_unsettled);
    tcase_add_test(tc, closing_samples_in_place);
    tcase_add_test(tc, dead_letter_document);
    tcase_add_test(tc, backoff_doubles_to_its_cap);
    tcase_add_test(tc, drain_deadline);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
