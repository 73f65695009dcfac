/* pano-bridge's check and normalization of incoming messages
 * (broker-bridge/normalize.h), over pano's schemas and the Pegasus samples
 * in tests/data/events. */
#include "event.h"
#include "json.h"
#include "mem.h"
#include "normalize.h"
#include "schema.h"
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pano_schema_set *schemas;
static pano_normalize_options opts;
static pano_normalizer *nz;

static void setup(void)
{
    char err[512] = "";
    const char *dir = getenv("PANO_SCHEMAS");
    ck_assert_msg(dir != NULL, "PANO_SCHEMAS is not set");
    schemas = pano_schema_set_load(dir, err, sizeof err);
    ck_assert_msg(schemas != NULL, "%s", err);
    opts = (pano_normalize_options){.schemas = schemas, .max_size = 1024 * 1024};
    nz = pano_normalizer_new(&opts);
}

static void teardown(void)
{
    pano_normalizer_free(nz);
    pano_schema_set_free(schemas);
}

static char *read_fixture(const char *name, size_t *len)
{
    const char *dir = getenv("PANO_FIXTURES");
    ck_assert_msg(dir != NULL, "PANO_FIXTURES is not set");
    char path[1024];
    snprintf(path, sizeof path, "%s/events/%s", dir, name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = pano_malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

/* Normalize text; on success returns the parsed output (free it), on
 * failure NULL with the reason in reason. */
static pano_json *run(const char *key, const char *body, size_t len, char *reason, size_t size,
                      pano_normalized *keep)
{
    pano_normalized n;
    bool ok = pano_normalize(nz, key, body, len, &n);
    snprintf(reason, size, "%s", ok ? "" : n.reason);
    pano_json *out = NULL;
    if (ok) {
        char err[200];
        ck_assert_ptr_nonnull(n.family);
        out = pano_json_parse(n.body, n.len, 64, err, sizeof err);
        ck_assert_msg(out != NULL, "output is not JSON: %s", err);
        ck_assert_str_eq(pano_json_get_str(out, "wf_uuid"), n.wf_uuid);
    }
    if (keep)
        *keep = n;
    else
        pano_normalized_free(&n);
    return out;
}

static const char *reason_of(const char *key, const char *text)
{
    static char reason[256];
    pano_json *out = run(key, text, strlen(text), reason, sizeof reason, NULL);
    pano_json_free(out);
    return reason;
}

START_TEST(pano_events_pass_untouched)
{
    const char *text = "{\"event\":\"kickstart.test.sample\",\"ts\":1764000000.5,\"event_id\":\"e1\","
                       "\"seq\":1,\"wf_uuid\":\"wf-1\",\"hostname\":\"h\",\"utime\":1.25}";
    pano_normalized n;
    ck_assert(pano_normalize(nz, "kickstart.test.sample", text, strlen(text), &n));
    ck_assert_ptr_eq(n.body, text); /* no copy, no re-serialization */
    ck_assert_uint_eq(n.len, strlen(text));
    ck_assert(!n.changed);
    ck_assert_str_eq(n.family, "kickstart");
    ck_assert_str_eq(n.wf_uuid, "wf-1");
    pano_normalized_free(&n);
}
END_TEST

START_TEST(families)
{
    /* names no schema in schemas/events/ claims */
    static const char *const names[][2] = {
        {"kickstart.test.sample", "kickstart"}, {"darshan.test.sample", "darshan"},
        {"transfer.test.sample", "transfer"},   {"stampede.test.sample", "stampede"},
        {"custom.test.sample", "custom"},       {"my.thing", "other"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"event\":\"%s\",\"ts\":1764000000,\"event_id\":\"x\",\"wf_uuid\":\"w\"}", names[i][0]);
        pano_normalized n;
        bool ok = pano_normalize(nz, names[i][0], text, strlen(text), &n);
        ck_assert_msg(ok, "%s: %s", names[i][0], n.reason);
        ck_assert_str_eq(n.family, names[i][1]);
        pano_normalized_free(&n);
    }
}
END_TEST

START_TEST(stampede_fixtures)
{
    const char *dir = getenv("PANO_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/events", dir);
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int passed = 0, rejected = 0;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "stampede.", 9) != 0)
            continue;
        size_t len;
        char *body = read_fixture(e->d_name, &len);
        char reason[256];
        /* monitord publishes with the event name as routing key */
        char err[200];
        pano_json *in = pano_json_parse(body, len, 64, err, sizeof err);
        ck_assert_ptr_nonnull(in);
        const char *key = pano_json_get_str(in, "event");
        pano_json *out = run(key, body, len, reason, sizeof reason, NULL);
        bool has_id = pano_json_get(in, "xwf_id") || pano_json_get(in, "xwf__id") ||
                      pano_json_get(in, "root_xwf_id");
        if (!has_id) {
            /* static.start/end of the 2012 sample carry no workflow id
             * (monitord >= 4.9.2 adds xwf_id to every event) */
            ck_assert_msg(out == NULL, "%s passed without a workflow id", e->d_name);
            ck_assert_str_eq(reason, "missing required field 'wf_uuid'");
            rejected++;
        } else {
            ck_assert_msg(out != NULL, "%s: %s", e->d_name, reason);
            const char *xwf = pano_json_get_str(out, "xwf_id");
            if (!xwf)
                xwf = pano_json_get_str(out, "root_xwf_id");
            ck_assert_str_eq(pano_json_get_str(out, "wf_uuid"), xwf);
            ck_assert_uint_eq(strlen(pano_json_get_str(out, "event_id")), 32);
            /* every original field is still there, with its value */
            for (size_t i = 0; i < pano_json_len(in); i++) {
                const char *k = pano_json_key_at(in, i);
                if (!strstr(k, "__"))
                    ck_assert_msg(pano_json_get(out, k) != NULL, "%s lost %s", e->d_name, k);
            }
            ck_assert_int_eq(pano_json_get(out, "ts")->type, PANO_JSON_INT);
            passed++;
        }
        pano_json_free(in);
        pano_json_free(out);
        free(body);
    }
    closedir(d);
    ck_assert_int_eq(passed, 24);
    ck_assert_int_eq(rejected, 2);
}
END_TEST

START_TEST(stampede_old_key_spelling)
{
    size_t len;
    char *body = read_fixture("stampede.job_inst.composite.4.9.0dev.json", &len);
    char reason[256];
    pano_json *out = run("stampede.job_inst.composite", body, len, reason, sizeof reason, NULL);
    ck_assert_msg(out != NULL, "%s", reason);
    ck_assert_str_eq(pano_json_get_str(out, "xwf_id"), "d8939648-74cd-4809-a6ee-f640b69ba155");
    ck_assert_str_eq(pano_json_get_str(out, "wf_uuid"), "d8939648-74cd-4809-a6ee-f640b69ba155");
    ck_assert_ptr_nonnull(pano_json_get(out, "job_inst_id"));
    ck_assert_ptr_null(pano_json_get(out, "job_inst__id"));
    ck_assert_ptr_nonnull(pano_json_get(out, "root_xwf_id"));
    pano_json_free(out);
    free(body);
}
END_TEST

START_TEST(management_api_form)
{
    size_t len;
    char *body = read_fixture("kickstart.inv.online.rabbitmq-http-publish-body.synthetic.json", &len);
    char reason[256];
    /* the routing key the management API used is inside the body too */
    pano_json *out = run("kickstart.inv.online", body, len, reason, sizeof reason, NULL);
    ck_assert_msg(out != NULL, "%s", reason);
    ck_assert_str_eq(pano_json_get_str(out, "event"), "kickstart.inv.online");
    ck_assert_str_eq(pano_json_get_str(out, "wf_uuid"), "f7fbd521-1567-43c9-b3d7-41ff2c308650");
    ck_assert_ptr_null(pano_json_get(out, "payload"));
    int64_t pid;
    ck_assert(pano_json_get_int(out, "pid", &pid));
    ck_assert_int_eq(pid, 4242);
    pano_json_free(out);
    free(body);

    ck_assert_str_eq(reason_of("k", "{\"routing_key\":\"kickstart.inv.online\",\"payload\":"
                                    "\"{\\\"ts\\\":1764000000,\\\"wf_uuid\\\":\\\"w\\\"}\","
                                    "\"payload_encoding\":\"string\"}"),
                     "");
    ck_assert_str_eq(reason_of("k", "{\"payload\":\"@@@\",\"payload_encoding\":\"base64\"}"),
                     "management-API message whose payload is not base64");
    ck_assert_str_eq(reason_of("k", "{\"payload\":\"x\",\"payload_encoding\":\"gzip\"}"),
                     "management-API message with unknown payload_encoding 'gzip'");
    /* base64 of "{bad" */
    ck_assert_str_eq(reason_of("k", "{\"payload\":\"e2JhZA==\",\"payload_encoding\":\"base64\"}"),
                     "in the payload of a management-API message: invalid JSON: lexical error: "
                     "invalid char in json text.");
}
END_TEST

START_TEST(other_fixtures)
{
    static const char *const files[] = {"kickstart.inv.online.synthetic.json",
                                        "transfer.inv.local.synthetic.json",
                                        "transfer.inv.local.single.synthetic.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        size_t len;
        char *body = read_fixture(files[i], &len);
        char reason[256];
        pano_json *out = run("x", body, len, reason, sizeof reason, NULL);
        ck_assert_msg(out != NULL, "%s: %s", files[i], reason);
        pano_json_free(out);
        free(body);
    }
}
END_TEST

START_TEST(event_name_from_routing_key)
{
    char reason[256];
    const char *text = "{\"ts\":1764000000,\"wf_uuid\":\"w\",\"event_id\":\"i\"}";
    pano_json *out = run("custom.thing", text, strlen(text), reason, sizeof reason, NULL);
    ck_assert_msg(out != NULL, "%s", reason);
    ck_assert_str_eq(pano_json_get_str(out, "event"), "custom.thing");
    pano_json_free(out);
    ck_assert_str_eq(reason_of("bad key!", text), "missing required field 'event'");
}
END_TEST

START_TEST(deterministic_event_id)
{
    const char *text = "{\"event\":\"a.b\",\"ts\":1764000000,\"wf_uuid\":\"w\"}";
    char reason[256];
    pano_json *a = run("a.b", text, strlen(text), reason, sizeof reason, NULL);
    pano_json *b = run("a.b", text, strlen(text), reason, sizeof reason, NULL);
    pano_json *c = run("a.c", text, strlen(text), reason, sizeof reason, NULL);
    ck_assert_str_eq(pano_json_get_str(a, "event_id"), pano_json_get_str(b, "event_id"));
    ck_assert_str_ne(pano_json_get_str(a, "event_id"), pano_json_get_str(c, "event_id"));
    pano_json_free(a);
    pano_json_free(b);
    pano_json_free(c);
}
END_TEST

/* What real pegasus-monitord sends (5.x): static.start/end and rc.pfn
 * without ts, the planner's static events with ts ~3,200,000, and wf_ts,
 * the workflow's own time stamp, on every event. */
START_TEST(pegasus_time_stamps)
{
    char reason[256];
    const char *wf = "\"xwf_id\":\"f84f05fc-a8d0-42b5-bac5-52d6f41a77e3\",\"wf_ts\":1677913774";
    char text[512];
    /* no ts: the workflow's own */
    snprintf(text, sizeof text, "{%s,\"event\":\"stampede.static.start\"}", wf);
    pano_json *out = run("stampede.static.start", text, strlen(text), reason, sizeof reason, NULL);
    ck_assert_msg(out != NULL, "%s", reason);
    double ts = 0;
    ck_assert(pano_json_get_number(out, "ts", &ts));
    ck_assert_double_eq(ts, 1677913774);
    ck_assert_str_eq(pano_json_get_str(out, "ts_source"), "wf_ts");
    ck_assert_ptr_null(pano_json_get(out, "ts_sent"));
    pano_json_free(out);
    /* a bogus ts: the workflow's own, the original kept */
    snprintf(text, sizeof text, "{\"ts\":3195930,%s,\"event\":\"stampede.task.info\"}", wf);
    out = run("stampede.task.info", text, strlen(text), reason, sizeof reason, NULL);
    ck_assert_msg(out != NULL, "%s", reason);
    ck_assert(pano_json_get_number(out, "ts", &ts));
    ck_assert_double_eq(ts, 1677913774);
    ck_assert_str_eq(pano_json_get_str(out, "ts_sent"), "3195930");
    pano_json_free(out);
    /* nothing to go by: the time the bridge took it */
    const char *bare = "{\"ts\":3195930,\"xwf_id\":\"w\",\"event\":\"stampede.job.info\"}";
    double before = pano_now();
    out = run("stampede.job.info", bare, strlen(bare), reason, sizeof reason, NULL);
    double after = pano_now();
    ck_assert_msg(out != NULL, "%s", reason);
    ck_assert(pano_json_get_number(out, "ts", &ts));
    ck_assert(ts >= before - 1e-6 && ts <= after + 1e-6);
    ck_assert_str_eq(pano_json_get_str(out, "ts_source"), "received");
    ck_assert_str_eq(pano_json_get_str(out, "ts_sent"), "3195930");
    /* delivered again, stamped again, but with the same event_id */
    pano_json *again = run("stampede.job.info", bare, strlen(bare), reason, sizeof reason, NULL);
    ck_assert_str_eq(pano_json_get_str(again, "event_id"), pano_json_get_str(out, "event_id"));
    pano_json_free(again);
    pano_json_free(out);
    /* a pano event from a node whose clock was never set, and a ts in the future */
    const char *clockless = "{\"event\":\"custom.x\",\"ts\":12,\"event_id\":\"e\",\"wf_uuid\":\"w\"}";
    out = run("custom.x", clockless, strlen(clockless), reason, sizeof reason, NULL);
    ck_assert_msg(out != NULL, "%s", reason);
    ck_assert_str_eq(pano_json_get_str(out, "ts_source"), "received");
    ck_assert_str_eq(pano_json_get_str(out, "event_id"), "e");
    pano_json_free(out);
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":99999999999,\"wf_uuid\":\"w\"}"), "");
    /* a plausible ts is left alone (and the message produced untouched) */
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":\"soon\",\"wf_uuid\":\"w\"}"),
                     "'ts' must be a number");
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":1e400,\"wf_uuid\":\"w\"}"),
                     "invalid JSON: number out of range (larger than a double can hold)");
}
END_TEST

START_TEST(reasons)
{
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":1764000000,"),
                     "invalid JSON: parse error: premature EOF");
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"x\":\"caf\xC3\x28\"}"),
                     "invalid UTF-8 at byte 23");
    ck_assert_str_eq(reason_of("k", "[1]"), "the event must be an object");
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":1764000000.5,\"seq\":3}"),
                     "missing required field 'wf_uuid'");
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":1764000000.5,\"wf_uuid\":\"w\",\"seq\":\"seven\"}"),
                     "'seq' must be an integer");
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":\"now\",\"wf_uuid\":\"w\"}"),
                     "'ts' must be a number");
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":1764000000,\"wf_uuid\":7}"),
                     "'wf_uuid' must be a string");
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":1764000000,\"wf_uuid\":\"\"}"),
                     "'wf_uuid' must not be empty");
    ck_assert_str_eq(reason_of("k", "{\"event\":5,\"ts\":1764000000,\"wf_uuid\":\"w\"}"),
                     "'event' must be a string");

    /* nested 10,000 deep: refused by the parser, not by the stack */
    size_t depth = 10000;
    char *deep = pano_malloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    ck_assert_str_eq(reason_of("k", deep), "invalid JSON: nested deeper than 64 levels");
    free(deep);

    /* over the size limit: not even parsed */
    size_t big = opts.max_size + 1;
    char *huge = pano_malloc(big + 1);
    memset(huge, ' ', big);
    huge[0] = '{';
    huge[big - 1] = '}';
    huge[big] = '\0';
    char expected[128];
    snprintf(expected, sizeof expected, "message too large (%zu bytes, limit %zu)", big,
             opts.max_size);
    ck_assert_str_eq(reason_of("k", huge), expected);
    free(huge);
}
END_TEST

/* Per-event schemas hold pano's own events (they carry an event_id); an
 * event from another tool is held to the envelope. */
START_TEST(own_and_foreign_events)
{
    char dir[] = "/tmp/pano-norm-XXXXXX", cmd[600], path[256], err[512] = "";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "cp '%s/envelope.schema.json' '%s/' && mkdir '%s/events'",
             getenv("PANO_SCHEMAS"), dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/events/kickstart.inv.online.schema.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"allOf\":[{\"$ref\":\"../envelope.schema.json\"}],\"required\":[\"elapsed\"]}", f);
    ck_assert_int_eq(fclose(f), 0);
    pano_schema_set *set = pano_schema_set_load(dir, err, sizeof err);
    ck_assert_msg(set != NULL, "%s", err);
    pano_normalize_options o = {.schemas = set, .max_size = 1 << 20};
    pano_normalizer *own = pano_normalizer_new(&o);
    pano_normalized n;
    const char *pano_event = "{\"event\":\"kickstart.inv.online\",\"ts\":1764000000,\"event_id\":\"e\","
                             "\"wf_uuid\":\"w\"}";
    ck_assert(!pano_normalize(own, "kickstart.inv.online", pano_event, strlen(pano_event), &n));
    ck_assert_str_eq(n.reason, "missing required field 'elapsed'");
    pano_normalized_free(&n);
    /* Panorama's kickstart: no event_id, sent through the management API */
    size_t len;
    char *body = read_fixture("kickstart.inv.online.rabbitmq-http-publish-body.synthetic.json", &len);
    ck_assert_msg(pano_normalize(own, "kickstart.inv.online", body, len, &n), "%s", n.reason);
    pano_normalized_free(&n);
    free(body);
    body = read_fixture("kickstart.inv.online.synthetic.json", &len);
    ck_assert_msg(pano_normalize(own, "kickstart.inv.online", body, len, &n), "%s", n.reason);
    pano_normalized_free(&n);
    free(body);
    pano_normalizer_free(own);
    pano_schema_set_free(set);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(duplicate_fields)
{
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":1764000000,\"event_id\":\"i\","
                                    "\"wf_uuid\":\"w1\",\"wf_uuid\":\"w2\"}"),
                     "invalid JSON: duplicate field 'wf_uuid'");
    /* the same key in different objects is fine */
    ck_assert_str_eq(reason_of("k", "{\"event\":\"a.b\",\"ts\":1764000000,\"event_id\":\"i\","
                                    "\"wf_uuid\":\"w\",\"a\":{\"x\":1},\"b\":{\"x\":2}}"),
                     "");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("normalize");
    TCase *tc = tcase_create("normalize");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, pano_events_pass_untouched);
    tcase_add_test(tc, families);
    tcase_add_test(tc, stampede_fixtures);
    tcase_add_test(tc, stampede_old_key_spelling);
    tcase_add_test(tc, management_api_form);
    tcase_add_test(tc, other_fixtures);
    tcase_add_test(tc, event_name_from_routing_key);
    tcase_add_test(tc, deterministic_event_id);
    tcase_add_test(tc, pegasus_time_stamps);
    tcase_add_test(tc, reasons);
    tcase_add_test(tc, duplicate_fields);
    tcase_add_test(tc, own_and_foreign_events);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
