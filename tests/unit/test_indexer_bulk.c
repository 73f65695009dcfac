/* pano-indexer's bulk documents: UUID checks, partitioned index names,
 * routing, retention, @timestamp, escaping and the reading of bulk
 * responses. */
#include "bulk.h"
#include "json.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* every stream by month, kept forever; samples by day, kept 30 days */
static pano_stream_policy policies[PANO_N_STREAMS];
static const pano_bulk_layout shared = {
    .prefix = "pano-", .fallback_index = "pano-unassigned", .policies = policies};
#define NOW 1790000000.0 /* 2026-09-21 */

static void setup(void)
{
    for (int i = 0; i < PANO_N_STREAMS; i++)
        policies[i] = (pano_stream_policy){PANO_PERIOD_MONTH, 0};
    policies[pano_stream_index("samples")] = (pano_stream_policy){PANO_PERIOD_DAY, 30 * 86400.0};
}

START_TEST(uuid_validation)
{
    char out[PANO_WF_UUID_LEN + 1];
    ck_assert(pano_wf_uuid_normalize("0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20", out));
    ck_assert_str_eq(out, "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20");
    ck_assert(pano_wf_uuid_normalize("0B2FB1C4-3B1E-4D4B-9A57-6D9D6E3C1A20", out));
    ck_assert_str_eq(out, "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20");
    static const char *bad[] = {
        "../_all", "*", "a,b", "", "ABC", "_all",
        "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a2",   /* short */
        "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a200", /* long */
        "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a2g",  /* not hex */
        "0b2fb1c4_3b1e-4d4b-9a57-6d9d6e3c1a20",  /* separator */
        "0b2fb1c43b1e-4d4b-9a57-6d9d6e3c1a20-",  /* dash misplaced */
        "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a2*",
        "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a,b",
        "../_all/../../0b2fb1c4-3b1e-4d4b-9a57",
        NULL,
    };
    for (size_t i = 0; bad[i]; i++) {
        strcpy(out, "untouched");
        ck_assert_msg(!pano_wf_uuid_normalize(bad[i], out), "accepted %s", bad[i]);
        ck_assert_msg(out[0] == '\0', "%s left '%s' behind", bad[i], out);
    }
    ck_assert(!pano_wf_uuid_normalize(NULL, out));
}
END_TEST

static pano_bulk_doc prepare_ok(const char *json, const pano_bulk_layout *layout)
{
    pano_bulk_doc d;
    char reason[256] = "";
    ck_assert_msg(pano_bulk_doc_prepare(json, strlen(json), layout, NOW, &d, reason,
                                        sizeof reason) == PANO_BULK_DOC_OK,
                  "%s: %s", json, reason);
    return d;
}

static void prepare_fails(const char *json, const char *fragment)
{
    pano_bulk_doc d;
    char reason[256] = "";
    ck_assert_msg(pano_bulk_doc_prepare(json, strlen(json), &shared, NOW, &d, reason,
                                        sizeof reason) == PANO_BULK_DOC_INVALID,
                  "accepted %s", json);
    ck_assert_msg(strstr(reason, fragment), "%s -> '%s' lacks '%s'", json, reason, fragment);
}

START_TEST(partition_of_its_time_routed_by_workflow)
{
    pano_bulk_doc d = prepare_ok(
        "{\"event\":\"kickstart.inv.end\",\"ts\":1790000000.5,\"event_id\":\"e1\","
        "\"wf_uuid\":\"0B2FB1C4-3B1E-4D4B-9A57-6D9D6E3C1A20\",\"exitcode\":0}",
        &shared);
    ck_assert_str_eq(d.index, "pano-kickstart-2026.09");
    ck_assert_str_eq(d.routing, "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20");
    ck_assert_str_eq(d.wf_uuid, "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20");
    ck_assert_str_eq(d.stream, "kickstart");
    ck_assert_str_eq(d.id, "e1");
    /* @timestamp from ts, in front of the event as it was sent */
    ck_assert_str_eq(d.doc, "{\"@timestamp\":\"2026-09-21T14:13:20.500000Z\",\"event\":\"kickstart."
                            "inv.end\",\"ts\":1790000000.5,\"event_id\":\"e1\",\"wf_uuid\":"
                            "\"0B2FB1C4-3B1E-4D4B-9A57-6D9D6E3C1A20\",\"exitcode\":0}");
    pano_buf b = {0};
    pano_bulk_append(&b, &d);
    ck_assert_str_eq(b.data, "{\"create\":{\"_index\":\"pano-kickstart-2026.09\",\"_id\":\"e1\",\"routing\":"
                             "\"0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20\"}}\n"
                             "{\"@timestamp\":\"2026-09-21T14:13:20.500000Z\",\"event\":\"kickstart."
                             "inv.end\",\"ts\":1790000000.5,\"event_id\":\"e1\",\"wf_uuid\":"
                             "\"0B2FB1C4-3B1E-4D4B-9A57-6D9D6E3C1A20\",\"exitcode\":0}\n");
    pano_buf_free(&b);
    pano_bulk_doc_free(&d);
}
END_TEST

START_TEST(streams_and_periods)
{
    const char *wf = "\"wf_uuid\":\"0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20\"";
    char json[300];
    /* 2026-08-31T23:59:59.9 UTC: still August, and that day */
    snprintf(json, sizeof json, "{\"event\":\"kickstart.inv.online\",\"ts\":1788220799.9,"
                                "\"event_id\":\"s\",%s}", wf);
    pano_bulk_doc d = prepare_ok(json, &shared);
    ck_assert_str_eq(d.index, "pano-samples-2026.08.31");
    ck_assert_str_eq(d.stream, "samples");
    pano_bulk_doc_free(&d);
    snprintf(json, sizeof json, "{\"event\":\"stampede.xwf.start\",\"ts\":1788220800,"
                                "\"event_id\":\"x\",%s}", wf);
    d = prepare_ok(json, &shared);
    ck_assert_str_eq(d.index, "pano-stampede-2026.09");
    pano_bulk_doc_free(&d);
    snprintf(json, sizeof json, "{\"event\":\"myapp.step\",\"ts\":1,\"event_id\":\"y\",%s}", wf);
    d = prepare_ok(json, &shared);
    ck_assert_str_eq(d.index, "pano-other-1970.01");
    pano_bulk_doc_free(&d);
    char index[64];
    pano_bulk_partition("pano-darshan", PANO_PERIOD_YEAR, 1790000000, index, sizeof index);
    ck_assert_str_eq(index, "pano-darshan-2026");
}
END_TEST

START_TEST(past_retention_is_refused_with_the_reason)
{
    const char *wf = "\"wf_uuid\":\"0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20\"";
    char json[300], reason[256];
    pano_bulk_doc d;
    /* a sample of 31 days ago: its day ended more than 30 days ago */
    snprintf(json, sizeof json, "{\"event\":\"kickstart.inv.online\",\"ts\":%.0f,"
                                "\"event_id\":\"old\",%s}", NOW - 31 * 86400, wf);
    ck_assert_int_eq(pano_bulk_doc_prepare(json, strlen(json), &shared, NOW, &d, reason,
                                           sizeof reason), PANO_BULK_DOC_EXPIRED);
    ck_assert_msg(strstr(reason, "retention of stream samples (30 days"), "%s", reason);
    /* for the dead letter */
    ck_assert_str_eq(d.wf_uuid, "0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20");
    ck_assert_str_eq(d.id, "old");
    /* 29 days ago: kept; and the end event of the same time too (kept forever) */
    snprintf(json, sizeof json, "{\"event\":\"kickstart.inv.online\",\"ts\":%.0f,"
                                "\"event_id\":\"new\",%s}", NOW - 29 * 86400, wf);
    d = prepare_ok(json, &shared);
    pano_bulk_doc_free(&d);
    snprintf(json, sizeof json, "{\"event\":\"kickstart.inv.end\",\"ts\":%.0f,"
                                "\"event_id\":\"end\",%s}", NOW - 31 * 86400, wf);
    d = prepare_ok(json, &shared);
    ck_assert_str_eq(d.index, "pano-kickstart-2026.08");
    pano_bulk_doc_free(&d);
}
END_TEST

START_TEST(invalid_workflow_goes_to_the_fallback)
{
    static const char *bad[] = {"\"../_all\"", "\"*\"", "\"a,b\"", "12", "null",
                                "\"0b2fb1c4-3b1e-4d4b-9a57-6d9d6e3c1a20,x\"", NULL};
    for (size_t i = 0; bad[i]; i++) {
        char json[300];
        snprintf(json, sizeof json,
                 "{\"event\":\"kickstart.inv.end\",\"ts\":1,\"event_id\":\"e\",\"wf_uuid\":%s}",
                 bad[i]);
        pano_bulk_doc d = prepare_ok(json, &shared);
        ck_assert_str_eq(d.index, "pano-unassigned-1970.01");
        ck_assert_str_eq(d.routing, "");
        ck_assert_str_eq(d.wf_uuid, "");
        pano_bulk_doc_free(&d);
    }
    pano_bulk_doc d = prepare_ok("{\"event\":\"kickstart.inv.end\",\"ts\":1,\"event_id\":\"e\"}",
                                 &shared);
    ck_assert_str_eq(d.index, "pano-unassigned-1970.01");
    pano_bulk_doc_free(&d);
}
END_TEST

START_TEST(unusable_events_have_reasons)
{
    prepare_fails("not json", "invalid JSON");
    prepare_fails("[1,2]", "event name");
    prepare_fails("{\"ts\":1,\"event_id\":\"e\"}", "event name");
    prepare_fails("{\"event\":\"a b\",\"ts\":1,\"event_id\":\"e\"}", "event name");
    prepare_fails("{\"event\":\"x.y\",\"ts\":1}", "event_id");
    prepare_fails("{\"event\":\"x.y\",\"ts\":1,\"event_id\":\"\"}", "event_id");
    prepare_fails("{\"event\":\"x.y\",\"ts\":1,\"event_id\":\"a\\u0000b\"}", "event_id");
    prepare_fails("{\"event\":\"x.y\",\"event_id\":\"e\"}", "ts");
    prepare_fails("{\"event\":\"x.y\",\"ts\":\"now\",\"event_id\":\"e\"}", "ts");
    prepare_fails("{\"event\":\"x.y\",\"ts\":-5,\"event_id\":\"e\"}", "ts");
    prepare_fails("{\"event\":\"x.y\",\"ts\":1e300,\"event_id\":\"e\"}", "ts");
}
END_TEST

START_TEST(multiline_and_own_timestamp_are_rewritten)
{
    pano_bulk_doc d = prepare_ok("{\n  \"event\": \"transfer.inv.go\",\n  \"ts\": 0,\n"
                                 "  \"event_id\": \"g\",\n  \"@timestamp\": \"yesterday\"\n}\n",
                                 &shared);
    ck_assert_ptr_null(strchr(d.doc, '\n'));
    ck_assert_ptr_null(strstr(d.doc, "yesterday"));
    ck_assert_str_eq(d.doc, "{\"@timestamp\":\"1970-01-01T00:00:00.000000Z\",\"event\":\"transfer."
                            "inv.go\",\"ts\":0,\"event_id\":\"g\"}");
    pano_bulk_doc_free(&d);
}
END_TEST

/* Parsed into an arena (as pano-indexer parses), an event is prepared
 * exactly as on the heap, and handed over readable until the arena is
 * reset. */
START_TEST(an_arena_prepares_as_the_heap_does)
{
    const char *events[] = {
        "{\"event\":\"kickstart.inv.online\",\"ts\":1789999000.123456,\"event_id\":\"s1\","
        "\"wf_uuid\":\"0B2FB1C4-3B1E-4D4B-9A57-6D9D6E3C1A20\",\"rss\":1024,\"x\":[1,{\"y\":null}]}",
        "{\n  \"event\": \"transfer.inv.go\",\n  \"ts\": 0,\n  \"event_id\": \"g\",\n"
        "  \"@timestamp\": \"yesterday\"\n}\n",
        "{\"event\":\"x.y\",\"ts\":1789999000,\"event_id\":\"a\",\"@timestamp\":1,\"k\":\"\\udc00\"}",
        "{\"event\":\"x.y\",\"ts\":1789999000,\"event_id\":\"d\",\"k\":1,\"k\":2}",
        "{\"event\":\"x.y\",\n\"ts\":1789999000,\"event_id\":\"n\"}",
        "{\"event\":\"x.y\",\"ts\":1,\"event_id\":\"old\",\"wf_uuid\":\"not-a-uuid\"}",
        "{\"event\":\"x.y\",\"ts\":\"now\",\"event_id\":\"e\"}",
        "not json",
    };
    pano_arena arena;
    pano_arena_init(&arena, 256); /* small chunks: a big event gets one of its own */
    pano_bulk_layout heap = shared, in_arena = shared;
    heap.keep_event = in_arena.keep_event = true;
    in_arena.arena = &arena;
    for (size_t i = 0; i < sizeof events / sizeof *events; i++) {
        pano_bulk_doc h, a;
        char hr[256] = "", ar[256] = "";
        size_t len = strlen(events[i]);
        pano_bulk_doc_status hs = pano_bulk_doc_prepare(events[i], len, &heap, NOW, &h, hr, sizeof hr);
        pano_bulk_doc_status as = pano_bulk_doc_prepare(events[i], len, &in_arena, NOW, &a, ar, sizeof ar);
        ck_assert_int_eq(as, hs);
        ck_assert_str_eq(ar, hr);
        ck_assert_str_eq(a.index, h.index);
        ck_assert_str_eq(a.id, h.id);
        ck_assert_str_eq(a.routing, h.routing);
        ck_assert_str_eq(a.wf_uuid, h.wf_uuid);
        ck_assert(a.ts == h.ts);
        ck_assert_str_eq(a.doc ? a.doc : "", h.doc ? h.doc : "");
        ck_assert_int_eq(a.event != NULL, h.event != NULL);
        /* (one rewritten, its @timestamp gone or its lines joined, is a copy on the heap) */
        ck_assert_int_eq(a.event_in_arena, a.event != NULL && !strstr(events[i], "@timestamp") &&
                                               !strchr(events[i], '\n'));
        if (a.event) {
            char *at = pano_json_serialize(a.event, NULL), *ht = pano_json_serialize(h.event, NULL);
            ck_assert_str_eq(at, ht);
            free(at);
            free(ht);
        }
        pano_bulk_doc_free(&a);
        pano_bulk_doc_free(&h);
        ck_assert_ptr_null(a.event);
        pano_arena_reset(&arena);
    }
    pano_arena_free(&arena);
}
END_TEST

START_TEST(ids_are_escaped)
{
    pano_bulk_doc d = prepare_ok(
        "{\"event\":\"x.y\",\"ts\":1,\"event_id\":\"a\\\"b\\\\c\\nd\"}", &shared);
    pano_buf b = {0};
    pano_bulk_append(&b, &d);
    const char *nl = strchr(b.data, '\n');
    char *action = strndup(b.data, (size_t)(nl - b.data));
    char err[128];
    pano_json *a = pano_json_parse(action, strlen(action), 8, err, sizeof err);
    ck_assert_msg(a, "%s: %s", action, err);
    ck_assert_str_eq(pano_json_get_str(pano_json_get(a, "create"), "_id"), "a\"b\\c\nd");
    pano_json_free(a);
    free(action);
    pano_buf_free(&b);
    pano_bulk_doc_free(&d);
}
END_TEST

START_TEST(classification)
{
    ck_assert_int_eq(pano_bulk_classify(201), PANO_BULK_DONE);
    ck_assert_int_eq(pano_bulk_classify(200), PANO_BULK_DONE);
    ck_assert_int_eq(pano_bulk_classify(409), PANO_BULK_DONE);
    ck_assert_int_eq(pano_bulk_classify(429), PANO_BULK_RETRY);
    ck_assert_int_eq(pano_bulk_classify(500), PANO_BULK_RETRY);
    ck_assert_int_eq(pano_bulk_classify(503), PANO_BULK_RETRY);
    ck_assert_int_eq(pano_bulk_classify(0), PANO_BULK_RETRY);
    ck_assert_int_eq(pano_bulk_classify(400), PANO_BULK_REJECTED);
    ck_assert_int_eq(pano_bulk_classify(404), PANO_BULK_REJECTED);
}
END_TEST

START_TEST(responses)
{
    const char *body =
        "{\"took\":3,\"errors\":true,\"items\":["
        "{\"create\":{\"_index\":\"i\",\"_id\":\"1\",\"status\":201}},"
        "{\"create\":{\"_index\":\"i\",\"_id\":\"2\",\"status\":409,\"error\":{\"type\":"
        "\"version_conflict_engine_exception\",\"reason\":\"exists\"}}},"
        "{\"create\":{\"_index\":\"i\",\"_id\":\"3\",\"status\":429,\"error\":{\"type\":"
        "\"es_rejected_execution_exception\",\"reason\":\"queue full\"}}},"
        "{\"create\":{\"_index\":\"i\",\"_id\":\"4\",\"status\":400,\"error\":{\"type\":"
        "\"document_parsing_exception\",\"reason\":\"failed to parse field [exitcode]\"}}}]}";
    pano_bulk_result r[4];
    char err[256];
    ck_assert_int_eq(pano_bulk_read_response(body, strlen(body), 4, r, err, sizeof err), 0);
    ck_assert_int_eq(r[0].outcome, PANO_BULK_DONE);
    ck_assert_int_eq(r[1].outcome, PANO_BULK_DONE);
    ck_assert_int_eq(r[1].status, 409);
    ck_assert_int_eq(r[2].outcome, PANO_BULK_RETRY);
    ck_assert_int_eq(r[3].outcome, PANO_BULK_REJECTED);
    ck_assert_str_eq(r[3].reason, "document_parsing_exception: failed to parse field [exitcode]");
    ck_assert(!pano_bulk_all_created(body, strlen(body)));
    const char *fine = "{\"errors\":false,\"items\":[{\"create\":{\"status\":201}}]}";
    ck_assert(pano_bulk_all_created(fine, strlen(fine)));
    const char *took = "{\"took\":12,\"errors\":false,\"items\":[]}";
    ck_assert(pano_bulk_all_created(took, strlen(took)));
    const char *tricky = "{\"items\":[{\"create\":{\"error\":{\"reason\":\"\\\"errors\\\":false\"}}}]}";
    ck_assert(!pano_bulk_all_created(tricky, strlen(tricky)));
    /* a count mismatch or garbage means: retry everything */
    ck_assert_int_eq(pano_bulk_read_response(body, strlen(body), 5, r, err, sizeof err), -1);
    ck_assert_int_eq(pano_bulk_read_response("<html>", 6, 1, r, err, sizeof err), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("indexer_bulk");
    TCase *tc = tcase_create("bulk");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, uuid_validation);
    tcase_add_test(tc, partition_of_its_time_routed_by_workflow);
    tcase_add_test(tc, streams_and_periods);
    tcase_add_test(tc, past_retention_is_refused_with_the_reason);
    tcase_add_test(tc, invalid_workflow_goes_to_the_fallback);
    tcase_add_test(tc, unusable_events_have_reasons);
    tcase_add_test(tc, multiline_and_own_timestamp_are_rewritten);
    tcase_add_test(tc, ids_are_escaped);
    tcase_add_test(tc, an_arena_prepares_as_the_heap_does);
    tcase_add_test(tc, classification);
    tcase_add_test(tc, responses);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
