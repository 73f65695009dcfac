/* pano-indexer's side of the summaries (indexer/summaries.h): a batch's
 * contributions merged per document, counting only created events, under
 * the token of the newest; the _mget body and what its answer does; the
 * bulk body (create, or index if nobody wrote since) and what each status
 * does to a document. */
#include "batch.h"
#include "json.h"
#include "summaries.h"
#include "testutil.h"

#include <librdkafka/rdkafka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WF "0f2c8d4e-1b3a-4c5d-8e6f-7a8b9c0d1e2f"

static rd_kafka_t *rk;
static rd_kafka_topic_t *topic;
static pano_stream_policy policies[PANO_N_STREAMS];
static const summary_layout layout = {.prefix = "p-", .policies = policies};

static void setup(void)
{
    char err[256];
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof err);
    ck_assert_msg(rk, "%s", err);
    topic = rd_kafka_topic_new(rk, "p.kickstart", NULL);
    for (int i = 0; i < PANO_N_STREAMS; i++)
        policies[i] = (pano_stream_policy){PANO_PERIOD_MONTH, 0};
}

static void teardown(void)
{
    rd_kafka_topic_destroy(topic);
    rd_kafka_destroy(rk);
}

enum { CAP = 8 };

typedef struct {
    batch b;
    batch_item items[CAP];
    rd_kafka_message_t msgs[CAP];
} test_batch;

/* An item of event text at offset, settled with an HTTP status (0: not). */
static void add(test_batch *t, const char *event, int64_t offset, int status)
{
    rd_kafka_message_t *m = &t->msgs[t->b.count];
    *m = (rd_kafka_message_t){.rkt = topic, .partition = 2, .offset = offset};
    batch_item *it = batch_add(&t->b, m, 0);
    char why[128];
    pano_bulk_doc doc = {.wf_uuid = WF};
    doc.event = pano_json_parse(event, strlen(event), 16, why, sizeof why);
    ck_assert_msg(doc.event, "%s", why);
    ck_assert(pano_json_get_number(doc.event, "ts", &doc.ts));
    it->summary = summaries_note(&layout, &doc, offset, 1790000000);
    pano_json_free(doc.event);
    it->settled = status != 0;
    it->status = status;
}

static void init(test_batch *t)
{
    memset(t, 0, sizeof *t);
    t->b.items = t->items;
}

static void release(test_batch *t)
{
    for (size_t i = 0; i < t->b.count; i++)
        summaries_free_note(t->items[i].summary);
}

#define RUN "\"dag_job_id\":\"j\",\"hostname\":\"h\",\"pid\":1"
#define SAMPLE(ts, id) \
    "{\"event\":\"kickstart.inv.online\",\"ts\":" #ts ",\"event_id\":\"" id "\"," RUN ",\"rss\":" #ts "}"

static double num(const pano_json *j, const char *group, const char *key)
{
    double v;
    return pano_json_get_number(pano_json_get(j, group), key, &v) ? v : NAN;
}

START_TEST(a_batch_merged_per_document)
{
    test_batch t;
    init(&t);
    add(&t, SAMPLE(1790000001, "a"), 10, 201);
    add(&t, "{\"event\":\"custom.metric\",\"ts\":1790000001,\"event_id\":\"c\"}", 11, 201);
    add(&t, SAMPLE(1790000003, "b"), 12, 409);   /* stored before: no count */
    add(&t, SAMPLE(1790000002, "d"), 13, 400);   /* refused: not stored */
    add(&t, SAMPLE(1790000004, "e"), 14, 0);     /* not settled */
    add(&t, "{\"event\":\"kickstart.inv.start\",\"ts\":1790000000,\"event_id\":\"f\"," RUN "}", 15, 201);
    add(&t, "{\"event\":\"darshan.perf\",\"ts\":1790000000,\"event_id\":\"g\",\"dag_job_id\":\"j\"}", 16,
        201);
    t.items[3].rejected = true; /* its dead letter */
    ck_assert_ptr_null(t.items[1].summary);
    ck_assert_str_eq(t.items[0].summary->index, "p-summary-kickstart-2026.09");
    ck_assert_str_eq(t.items[0].summary->routing, WF);
    ck_assert_str_eq(t.items[6].summary->index, "p-summary-darshan-2026.09");

    summary_round r = {0};
    summaries_gather(&r, &t.b);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_uint_eq(summaries_unsettled(&r), 2);
    /* ordered by index: darshan's, then kickstart's */
    const summary_doc *side = &r.docs[0], *run = &r.docs[1];
    ck_assert_str_eq(side->op, "2:16");
    ck_assert_str_eq(run->op, "2:15"); /* the newest of a, b, f */
    ck_assert_double_eq(num(run->update, "add", "n"), 2); /* a and f; b was there */
    ck_assert_double_eq(num(run->update, "add", "sn"), 1);
    ck_assert_double_eq(num(run->update, "max", "slast"), 1790000003); /* b's, counted or not */
    ck_assert_double_eq(num(run->update, "min", "first"), 1790000000);

    pano_buf body = {0};
    summaries_read_body(&r, &body);
    char want[512];
    snprintf(want, sizeof want,
             "{\"docs\":[{\"_index\":\"p-summary-darshan-2026.09\",\"_id\":\"%s\",\"routing\":\"" WF
             "\"},{\"_index\":\"p-summary-kickstart-2026.09\",\"_id\":\"%s\",\"routing\":\"" WF "\"}]}",
             side->id, run->id);
    ck_assert_str_eq(body.data, want);
    pano_buf_free(&body);
    summaries_clear(&r);
    free(r.docs);
    release(&t);
}
END_TEST

/* A round over two documents: one new, one stored. */
static void two_documents(summary_round *r, test_batch *t)
{
    init(t);
    add(t, SAMPLE(1790000001, "a"), 20, 201);
    add(t, "{\"event\":\"darshan.perf\",\"ts\":1790000000,\"event_id\":\"g\",\"dag_job_id\":\"j\"}", 21,
        201);
    memset(r, 0, sizeof *r);
    summaries_gather(r, &t->b);
    ck_assert_uint_eq(r->n, 2);
}

START_TEST(read_apply_write)
{
    test_batch t;
    summary_round r;
    two_documents(&r, &t);
    char answer[1024], err[256];
    /* the darshan document is new; the run's holds n 5 */
    snprintf(answer, sizeof answer,
             "{\"docs\":[{\"_id\":\"%s\",\"found\":false},{\"_id\":\"%s\",\"found\":true,"
             "\"_seq_no\":7,\"_primary_term\":1,\"_source\":{\"add\":{\"n\":5},\"ops\":[\"2:3\"]}}]}",
             r.docs[0].id, r.docs[1].id);
    ck_assert_int_eq(summaries_apply_read(&r, answer, strlen(answer), err, sizeof err), 0);
    ck_assert_double_eq(num(r.docs[1].doc, "add", "n"), 6);
    pano_buf body = {0};
    size_t order[2];
    ck_assert_uint_eq(summaries_write_body(&r, &body, order), 2);
    ck_assert_ptr_nonnull(strstr(body.data, "{\"create\":{\"_index\":\"p-summary-darshan-2026.09\""));
    ck_assert_ptr_nonnull(strstr(body.data, "{\"index\":{\"_index\":\"p-summary-kickstart-2026.09\""));
    ck_assert_ptr_nonnull(strstr(body.data, "\"if_seq_no\":7,\"if_primary_term\":1}}"));
    ck_assert_ptr_nonnull(strstr(body.data, "\"ops\":[\"2:3\",\"2:20\"]"));
    pano_buf_free(&body);
    /* created; written meanwhile by another: read again */
    pano_bulk_result res[2] = {{.status = 201}, {.status = 409}};
    summaries_apply_write(&r, order, 2, res);
    ck_assert(r.docs[0].settled && !r.docs[1].settled);
    ck_assert_uint_eq(r.written, 1);
    ck_assert_uint_eq(r.conflicts, 1);
    /* read again: the other writer's answer was this very update (lost
     * answer, retried): nothing to write */
    snprintf(answer, sizeof answer,
             "{\"docs\":[{\"_id\":\"%s\",\"found\":true,\"_seq_no\":8,\"_primary_term\":1,"
             "\"_source\":{\"add\":{\"n\":6},\"ops\":[\"2:3\",\"2:20\"]}}]}",
             r.docs[1].id);
    ck_assert_int_eq(summaries_apply_read(&r, answer, strlen(answer), err, sizeof err), 0);
    ck_assert(r.docs[1].settled);
    ck_assert_uint_eq(r.unchanged, 1);
    ck_assert_uint_eq(summaries_unsettled(&r), 0);
    body = (pano_buf){0};
    ck_assert_uint_eq(summaries_write_body(&r, &body, order), 0);
    pano_buf_free(&body);
    summaries_clear(&r);
    free(r.docs);
    release(&t);
}
END_TEST

START_TEST(statuses_and_bad_answers)
{
    test_batch t;
    summary_round r;
    two_documents(&r, &t);
    char err[256];
    /* an answer for fewer documents than asked, or in another order */
    const char *short_answer = "{\"docs\":[{\"_id\":\"x\",\"found\":false}]}";
    ck_assert_int_eq(summaries_apply_read(&r, short_answer, strlen(short_answer), err, sizeof err),
                     -1);
    char answer[512];
    snprintf(answer, sizeof answer, "{\"docs\":[{\"_id\":\"%s\",\"found\":false},{\"_id\":\"%s\","
             "\"found\":false}]}", r.docs[1].id, r.docs[0].id);
    ck_assert_int_eq(summaries_apply_read(&r, answer, strlen(answer), err, sizeof err), -1);
    ck_assert_uint_eq(summaries_unsettled(&r), 2);
    /* both new (an index not made yet reads as an error: new too) */
    snprintf(answer, sizeof answer, "{\"docs\":[{\"_id\":\"%s\",\"found\":false},{\"_id\":\"%s\","
             "\"error\":{\"type\":\"index_not_found_exception\"}}]}", r.docs[0].id, r.docs[1].id);
    ck_assert_int_eq(summaries_apply_read(&r, answer, strlen(answer), err, sizeof err), 0);
    pano_buf body = {0};
    size_t order[2];
    ck_assert_uint_eq(summaries_write_body(&r, &body, order), 2);
    pano_buf_free(&body);
    /* overloaded: again later; refused: left out, settled */
    pano_bulk_result res[2] = {{.status = 429}, {.status = 400, .reason = "mapper_parsing_exception: x"}};
    summaries_apply_write(&r, order, 2, res);
    ck_assert(!r.docs[0].settled && r.docs[1].settled);
    ck_assert_uint_eq(r.retries, 1);
    ck_assert_uint_eq(r.refused, 1);
    ck_assert_uint_eq(summaries_unsettled(&r), 1);
    summaries_clear(&r);
    ck_assert_uint_eq(r.n, 0);
    free(r.docs);
    release(&t);
}
END_TEST

START_TEST(past_retention_no_summary)
{
    policies[pano_stream_index("kickstart")].retention = 86400; /* a day after its month */
    test_batch t;
    init(&t);
    add(&t, SAMPLE(1780000000, "old"), 1, 201); /* May 2026, long past at the September now */
    ck_assert_ptr_null(t.items[0].summary);
    add(&t, SAMPLE(1790000000, "new"), 2, 201);
    ck_assert_ptr_nonnull(t.items[1].summary);
    release(&t);
    policies[pano_stream_index("kickstart")].retention = 0;
}
END_TEST

int main(void)
{
    Suite *s = suite_create("indexer_summaries");
    TCase *tc = tcase_create("summaries");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_batch_merged_per_document);
    tcase_add_test(tc, read_apply_write);
    tcase_add_test(tc, statuses_and_bad_answers);
    tcase_add_test(tc, past_retention_no_summary);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
