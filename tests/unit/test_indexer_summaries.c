/* pano-indexer's side of the summaries (indexer/summaries.h): a batch's
 * contributions merged per document, counting only created events, under
 * the token of the newest; the bulk body (create for a document thought
 * new, index if nobody wrote since for one written before) and what each
 * status does; the documents read when not known, and the token that
 * makes an update applied twice a no-op. */
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
static summary_layout layout = {.prefix = "p-", .policies = policies};

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
    ck_assert_str_eq(t.items[0].summary->part.wf, WF);
    ck_assert_str_eq(t.items[6].summary->index, "p-summary-darshan-2026.09");

    summary_round r = {0};
    summaries_gather(&r, &t.b);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_uint_eq(summaries_unsettled(&r), 2);
    /* ordered by _id: the run's (r-...), then the side events' (s-...) */
    const summary_doc *run = &r.docs[0], *side = &r.docs[1];
    ck_assert_str_eq(side->op, "2:16");
    ck_assert_str_eq(run->op, "2:15"); /* the newest of a, b, f */
    ck_assert_double_eq(run->update.v[PANO_SF_N], 2); /* a and f; b was there */
    ck_assert_double_eq(run->update.v[PANO_SF_SN], 1);
    ck_assert_double_eq(run->update.v[PANO_SF_SLAST], 1790000003); /* b's, counted or not */
    ck_assert_double_eq(run->update.v[PANO_SF_FIRST], 1790000000);

    /* neither known: both thought new, nothing to read */
    ck_assert_uint_eq(summaries_to_read(&r), 0);
    ck_assert(!run->found && !side->found);
    pano_buf body = {0};
    size_t order[2];
    ck_assert_uint_eq(summaries_write_body(&r, &body, order), 2);
    char want[256];
    snprintf(want, sizeof want,
             "{\"create\":{\"_index\":\"p-summary-kickstart-2026.09\",\"_id\":\"%s\",\"routing\":\"" WF
             "\"}}\n{\"set\":{\"k\":\"run\"",
             run->update.id);
    ck_assert_msg(strncmp(body.data, want, strlen(want)) == 0, "%s", body.data);
    pano_buf_free(&body);
    summaries_free(&r);
    release(&t);
}
END_TEST

/* Two documents of a batch: a run's and the side events'. */
static void two_documents(summary_round *r, test_batch *t, int64_t offset)
{
    init(t);
    add(t, SAMPLE(1790000001, "a"), offset, 201);
    add(t, "{\"event\":\"darshan.perf\",\"ts\":1790000000,\"event_id\":\"g\",\"dag_job_id\":\"j\"}",
        offset + 1, 201);
    summaries_gather(r, &t->b);
    ck_assert_uint_eq(r->n, 2);
}

static size_t write_round(summary_round *r, pano_buf *body, size_t *order, size_t want)
{
    pano_buf_clear(body);
    size_t n = summaries_write_body(r, body, order);
    ck_assert_uint_eq(n, want);
    return n;
}

START_TEST(written_known_read)
{
    test_batch t;
    summary_round r = {0};
    char answer[1024], err[256];
    pano_buf body = {0};
    size_t order[2];
    two_documents(&r, &t, 20);
    write_round(&r, &body, order, 2);
    /* the run's document existed (409: not new); the side one is created */
    pano_bulk_result res[2] = {{.status = 409, .seq_no = -1}, {.status = 201, .seq_no = 3, .primary_term = 1}};
    summaries_apply_write(&r, &body, order, 2, res);
    ck_assert(!r.docs[0].settled && r.docs[1].settled);
    ck_assert_uint_eq(r.conflicts, 1);
    ck_assert_uint_eq(summaries_to_read(&r), 1);
    pano_buf_clear(&body);
    summaries_read_body(&r, &body);
    ck_assert_ptr_nonnull(strstr(body.data, r.docs[0].update.id));
    ck_assert_ptr_null(strstr(body.data, r.docs[1].update.id));
    /* it holds n 5: applied, and written if still at that version */
    snprintf(answer, sizeof answer,
             "{\"docs\":[{\"_id\":\"%s\",\"found\":true,\"_seq_no\":7,\"_primary_term\":1,"
             "\"_source\":{\"set\":{\"k\":\"run\",\"id\":\"%s\",\"wf\":\"" WF "\"},"
             "\"add\":{\"n\":5},\"ops\":[\"2:3\"]}}]}",
             r.docs[0].update.id, r.docs[0].update.id);
    ck_assert_int_eq(summaries_apply_read(&r, answer, strlen(answer), err, sizeof err), 0);
    ck_assert_double_eq(r.docs[0].doc.v[PANO_SF_N], 6);
    write_round(&r, &body, order, 1);
    ck_assert_ptr_nonnull(strstr(body.data, "{\"index\":{\"_index\":\"p-summary-kickstart-2026.09\""));
    ck_assert_ptr_nonnull(strstr(body.data, "\"if_seq_no\":7,\"if_primary_term\":1}}"));
    ck_assert_ptr_nonnull(strstr(body.data, "\"ops\":[\"2:3\",\"2:20\"]"));
    pano_bulk_result ok = {.status = 200, .seq_no = 8, .primary_term = 1};
    summaries_apply_write(&r, &body, order, 1, &ok);
    ck_assert_uint_eq(summaries_unsettled(&r), 0);
    ck_assert_uint_eq(r.written, 2);
    summaries_clear(&r);
    release(&t);

    /* the next batch: both as last written, nothing read */
    two_documents(&r, &t, 30);
    ck_assert_uint_eq(summaries_to_read(&r), 0);
    ck_assert(r.docs[0].found && r.docs[1].found);
    ck_assert_double_eq(r.docs[0].doc.v[PANO_SF_N], 7);
    write_round(&r, &body, order, 2);
    ck_assert_ptr_nonnull(strstr(body.data, "\"if_seq_no\":8,\"if_primary_term\":1}}"));
    ck_assert_ptr_nonnull(strstr(body.data, "\"if_seq_no\":3,\"if_primary_term\":1}}"));
    /* no answer for the run's: read again; it holds this very update (its
     * write was applied, the answer lost): nothing more to write */
    pano_bulk_result lost[2] = {{.status = 0}, {.status = 200, .seq_no = 4, .primary_term = 1}};
    summaries_apply_write(&r, &body, order, 2, lost);
    ck_assert_uint_eq(r.retries, 1);
    ck_assert_uint_eq(summaries_to_read(&r), 1);
    snprintf(answer, sizeof answer,
             "{\"docs\":[{\"_id\":\"%s\",\"found\":true,\"_seq_no\":9,\"_primary_term\":1,"
             "\"_source\":{\"set\":{\"k\":\"run\",\"id\":\"%s\",\"wf\":\"" WF "\"},"
             "\"add\":{\"n\":7},\"ops\":[\"2:3\",\"2:20\",\"2:30\"]}}]}",
             r.docs[0].update.id, r.docs[0].update.id);
    ck_assert_int_eq(summaries_apply_read(&r, answer, strlen(answer), err, sizeof err), 0);
    ck_assert(r.docs[0].settled);
    ck_assert_uint_eq(r.unchanged, 1);
    ck_assert_uint_eq(summaries_unsettled(&r), 0);
    write_round(&r, &body, order, 0);
    pano_buf_free(&body);
    summaries_free(&r);
    release(&t);
}
END_TEST

START_TEST(statuses_and_bad_answers)
{
    test_batch t;
    summary_round r = {0};
    char err[256];
    pano_buf body = {0};
    size_t order[2];
    two_documents(&r, &t, 20);
    write_round(&r, &body, order, 2);
    pano_bulk_result both[2] = {{.status = 409}, {.status = 409}};
    summaries_apply_write(&r, &body, order, 2, both);
    ck_assert_uint_eq(summaries_to_read(&r), 2);
    /* an answer for fewer documents than asked, or in another order */
    const char *short_answer = "{\"docs\":[{\"_id\":\"x\",\"found\":false}]}";
    ck_assert_int_eq(summaries_apply_read(&r, short_answer, strlen(short_answer), err, sizeof err),
                     -1);
    char answer[512];
    snprintf(answer, sizeof answer, "{\"docs\":[{\"_id\":\"%s\",\"found\":false},{\"_id\":\"%s\","
             "\"found\":false}]}", r.docs[1].update.id, r.docs[0].update.id);
    ck_assert_int_eq(summaries_apply_read(&r, answer, strlen(answer), err, sizeof err), -1);
    ck_assert_uint_eq(summaries_to_read(&r), 2);
    /* both gone meanwhile (an index not made reads as an error: new too) */
    snprintf(answer, sizeof answer, "{\"docs\":[{\"_id\":\"%s\",\"found\":false},{\"_id\":\"%s\","
             "\"error\":{\"type\":\"index_not_found_exception\"}}]}", r.docs[0].update.id,
             r.docs[1].update.id);
    ck_assert_int_eq(summaries_apply_read(&r, answer, strlen(answer), err, sizeof err), 0);
    write_round(&r, &body, order, 2);
    ck_assert_ptr_null(strstr(body.data, "\"index\""));
    /* overloaded: again later; refused: left out, settled */
    pano_bulk_result res[2] = {{.status = 429}, {.status = 400, .reason = "mapper_parsing_exception: x"}};
    summaries_apply_write(&r, &body, order, 2, res);
    ck_assert(!r.docs[0].settled && r.docs[1].settled);
    ck_assert_uint_eq(r.retries, 1);
    ck_assert_uint_eq(r.refused, 1);
    ck_assert_uint_eq(summaries_unsettled(&r), 1);
    ck_assert_uint_eq(summaries_to_read(&r), 1);
    pano_buf_free(&body);
    summaries_free(&r);
    ck_assert_uint_eq(r.n, 0);
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
    tcase_add_test(tc, written_known_read);
    tcase_add_test(tc, statuses_and_bad_answers);
    tcase_add_test(tc, past_retention_no_summary);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
