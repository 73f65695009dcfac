/* Index templates generated from JSON Schemas: types, clashes between
 * families, dynamic rules, and the schemas embedded in the program. */
#include "event.h"
#include "json.h"
#include "partition.h"
#include "store.h"
#include "template.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static const pano_template_options opt = {
    .prefix = "p-",
    .fallback_index = "p-unassigned",
    .dead_letter_index = "p-dead-letter",
    .shards = 2,
    .replicas = 0,
    .refresh_interval = "1s",
    .total_fields_limit = 1500,
};

static const pano_schema_file schemas[] = {
    {"envelope.schema.json",
     "{\"type\":\"object\",\"properties\":{\"event\":{\"type\":\"string\"},"
     "\"ts\":{\"type\":\"number\"},\"event_id\":{\"type\":\"string\"},"
     "\"seq\":{\"type\":\"integer\"},\"wf_uuid\":{\"type\":\"string\"}}}"},
    {"stampede.job.info.schema.json",
     "{\"allOf\":[{\"$ref\":\"../envelope.schema.json\"}],\"properties\":{"
     "\"type\":{\"type\":\"integer\"},\"exitcode\":{\"type\":[\"integer\",\"null\"]},"
     "\"when\":{\"type\":\"string\",\"format\":\"date-time\"},"
     "\"msg\":{\"type\":\"string\",\"x-es-type\":\"text\"},"
     "\"nested\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}},"
     "\"clash\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}}},"
     "\"ok\":{\"type\":\"boolean\"},\"state\":{\"enum\":[\"a\",\"b\"]}}}"},
    {"stampede.job_inst.main.end.schema.json",
     "{\"properties\":{\"exitcode\":{\"type\":\"string\"}}}"},
    {"transfer.inv.go.schema.json",
     "{\"properties\":{\"type\":{\"type\":\"string\"},\"rate\":{\"type\":\"number\"},"
     "\"nested\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
     "\"b\":{\"type\":\"string\"}}},\"msg\":{\"type\":\"string\"},"
     "\"clash\":{\"type\":\"string\"},\"files\":{\"type\":\"array\",\"items\":"
     "{\"type\":\"integer\"}}}}"},
    {"kickstart.inv.online.schema.json",
     "{\"properties\":{\"rate\":{\"type\":\"integer\"},\"when\":{\"type\":\"string\"}}}"},
    {NULL, NULL},
};

static pano_json *templates;

/* The n templates t, parsed, by name. */
static pano_json *templates_json(const pano_template *t, size_t n)
{
    char err[256];
    pano_json *all = pano_json_object();
    for (size_t i = 0; i < n; i++) {
        pano_json *body = pano_json_parse(t[i].body, strlen(t[i].body), 64, err, sizeof err);
        ck_assert_msg(body, "%s: %s", t[i].name, err);
        pano_json_set(all, t[i].name, body);
    }
    return all;
}

static void build(void)
{
    pano_template *t;
    size_t n;
    char err[256], *warnings;
    ck_assert_msg(pano_templates_build(schemas, &opt, &t, &n, &warnings, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_msg(strstr(warnings, "clash"), "no warning for the object/value clash: %s",
                  warnings);
    free(warnings);
    templates = templates_json(t, n);
    pano_templates_free(t, n);
}

static void teardown(void) { pano_json_free(templates); }

/* The mapping of a dotted field in a template. */
static pano_json *field(const char *tmpl, const char *path)
{
    pano_json *t = pano_json_get(templates, tmpl);
    ck_assert_msg(t, "no template %s", tmpl);
    pano_json *props =
        pano_json_get(pano_json_get(pano_json_get(t, "template"), "mappings"), "properties");
    char *copy = strdup(path), *save = NULL;
    pano_json *m = NULL;
    for (char *part = strtok_r(copy, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
        m = pano_json_get(props, part);
        if (!m)
            break;
        props = pano_json_get(m, "properties");
    }
    free(copy);
    return m;
}

static const char *type_of(const char *tmpl, const char *path)
{
    pano_json *m = field(tmpl, path);
    return m ? pano_json_get_str(m, "type") : NULL;
}

START_TEST(one_template_per_stream_for_its_partitions)
{
    /* every stream (partition.h), the fallback and dead-letter indices
     * under the names the options give them */
    for (size_t i = 0; pano_streams[i]; i++) {
        char name[64], pattern[70];
        snprintf(name, sizeof name, "p-%s", pano_streams[i]);
        snprintf(pattern, sizeof pattern, "%s-*", name);
        pano_json *t = pano_json_get(templates, name);
        ck_assert_msg(t, "no template for %s", name);
        pano_json *pat = pano_json_get(t, "index_patterns");
        ck_assert_int_eq(pano_json_len(pat), 1);
        ck_assert_str_eq(pano_json_at(pat, 0)->u.string.text, pattern);
    }
    /* the samples have kickstart's fields */
    char *samples = pano_json_serialize(field("p-samples", "event"), NULL);
    char *kickstart = pano_json_serialize(field("p-kickstart", "event"), NULL);
    ck_assert_str_eq(samples, kickstart);
    free(samples);
    free(kickstart);
    pano_json *props[2];
    for (int i = 0; i < 2; i++)
        props[i] = pano_json_get(pano_json_get(pano_json_get(pano_json_get(templates,
                   i ? "p-samples" : "p-kickstart"), "template"), "mappings"), "properties");
    ck_assert_int_eq(pano_json_len(props[0]), pano_json_len(props[1]));
    pano_json *settings =
        pano_json_get(pano_json_get(pano_json_get(templates, "p-kickstart"), "template"), "settings");
    int64_t v;
    ck_assert(pano_json_get_int(settings, "number_of_shards", &v) && v == 2);
    ck_assert(pano_json_get_int(settings, "number_of_replicas", &v) && v == 0);
    ck_assert_str_eq(pano_json_get_str(settings, "refresh_interval"), "1s");
    /* one for the partitions of every summary stream: what readers ask by
     * mapped (the workflow, the kind, the DAG job, whether open or failed,
     * the _id, the earliest event's time and the count), nothing else (no
     * dynamic fields), refreshed as the events */
    pano_json *sum = pano_json_get(templates, "p-summary");
    ck_assert_msg(sum, "no template for the summaries");
    ck_assert_str_eq(pano_json_at(pano_json_get(sum, "index_patterns"), 0)->u.string.text,
                     "p-summary-*");
    pano_json *m = pano_json_get(pano_json_get(sum, "template"), "mappings");
    ck_assert(pano_json_get(m, "dynamic")->type == PANO_JSON_BOOL &&
              !pano_json_get(m, "dynamic")->u.boolean);
    static const char *const searched[][2] = {
        {"set.id", "keyword"}, {"set.k", "keyword"},     {"set.job", "keyword"},
        {"set.open", "boolean"}, {"set.failed", "boolean"}};
    for (size_t i = 0; i < sizeof searched / sizeof *searched; i++) {
        ck_assert_str_eq(type_of("p-summary", searched[i][0]), searched[i][1]);
        ck_assert_ptr_null(pano_json_get(field("p-summary", searched[i][0]), "index"));
    }
    ck_assert_str_eq(pano_json_get_str(field("p-summary", "set.wf"), "normalizer"), "pano_lowercase");
    ck_assert_ptr_null(field("p-summary", "set.host"));
    /* the count of events, summed by pano_query_changes, and the earliest
     * event's time, its minimum taken per kind: not searched */
    ck_assert_str_eq(type_of("p-summary", "add.n"), "long");
    ck_assert(!pano_json_get(field("p-summary", "add.n"), "index")->u.boolean);
    ck_assert_str_eq(type_of("p-summary", "min.t0"), "double");
    ck_assert(!pano_json_get(field("p-summary", "min.t0"), "index")->u.boolean);
    ck_assert_ptr_null(field("p-summary", "min.first"));
    ck_assert_ptr_null(field("p-summary", "latest"));
    settings = pano_json_get(pano_json_get(sum, "template"), "settings");
    ck_assert_str_eq(pano_json_get_str(settings, "refresh_interval"), "1s");
}
END_TEST

START_TEST(schema_types_become_es_types)
{
    ck_assert_str_eq(type_of("p-stampede", "@timestamp"), "date");
    ck_assert_str_eq(type_of("p-stampede", "ts"), "double");
    ck_assert_str_eq(type_of("p-stampede", "seq"), "long");
    ck_assert_str_eq(type_of("p-stampede", "event_id"), "keyword");
    ck_assert_str_eq(type_of("p-stampede", "ok"), "boolean");
    ck_assert_str_eq(type_of("p-stampede", "state"), "keyword");
    ck_assert_str_eq(type_of("p-transfer", "files"), "long");
    ck_assert_str_eq(pano_json_get_str(field("p-stampede", "wf_uuid"), "normalizer"),
                     "pano_lowercase");
    /* the envelope is in every family, also those without a schema */
    ck_assert_str_eq(type_of("p-darshan", "seq"), "long");
    ck_assert_str_eq(type_of("p-custom", "@timestamp"), "date");
}
END_TEST

START_TEST(same_field_same_type_across_families)
{
    /* stampede's integer type and transfer's string type: keyword in both */
    ck_assert_str_eq(type_of("p-stampede", "type"), "keyword");
    ck_assert_str_eq(type_of("p-transfer", "type"), "keyword");
    /* integer and string within one family too */
    ck_assert_str_eq(type_of("p-stampede", "exitcode"), "keyword");
    /* integer and number: double */
    ck_assert_str_eq(type_of("p-transfer", "rate"), "double");
    ck_assert_str_eq(type_of("p-kickstart", "rate"), "double");
    ck_assert_str_eq(type_of("p-stampede", "nested.a"), "double");
    ck_assert_str_eq(type_of("p-transfer", "nested.b"), "keyword");
    /* date and string: keyword */
    ck_assert_str_eq(type_of("p-stampede", "when"), "keyword");
    /* text and keyword: text with a keyword sub-field */
    ck_assert_str_eq(type_of("p-transfer", "msg"), "text");
    ck_assert(pano_json_get(pano_json_get(field("p-stampede", "msg"), "fields"), "keyword"));
    /* object vs value cannot be unified: each keeps its own */
    ck_assert_ptr_nonnull(field("p-stampede", "clash.x"));
    ck_assert_str_eq(type_of("p-transfer", "clash"), "keyword");
    /* a family only has its own fields */
    ck_assert_ptr_null(field("p-kickstart", "files"));
    /* the fallback index has everything */
    ck_assert_str_eq(type_of("p-unassigned", "files"), "long");
    ck_assert_str_eq(type_of("p-unassigned", "type"), "keyword");
}
END_TEST

START_TEST(dynamic_rules_are_safe)
{
    pano_json *m =
        pano_json_get(pano_json_get(pano_json_get(templates, "p-custom"), "template"), "mappings");
    pano_json *dt = pano_json_get(m, "dynamic_templates");
    ck_assert_int_eq(pano_json_len(dt), 3);
    pano_json *strings = pano_json_get(pano_json_at(dt, 0), "pano_strings");
    ck_assert_str_eq(pano_json_get_str(pano_json_get(strings, "mapping"), "type"), "keyword");
    pano_json *d = pano_json_get(m, "date_detection");
    ck_assert(d && d->type == PANO_JSON_BOOL && !d->u.boolean);
    /* the fallback index mixes families: unknown numbers are keywords */
    pano_json *fb = pano_json_get(
        pano_json_get(pano_json_get(pano_json_get(templates, "p-unassigned"), "template"),
                      "mappings"),
        "dynamic_templates");
    pano_json *longs = pano_json_get(pano_json_at(fb, 1), "pano_longs");
    ck_assert_str_eq(pano_json_get_str(pano_json_get(longs, "mapping"), "type"), "keyword");
    pano_json *dl = pano_json_get(
        pano_json_get(pano_json_get(templates, "p-dead-letter"), "template"), "mappings");
    pano_json *dyn = pano_json_get(dl, "dynamic");
    ck_assert(dyn && dyn->type == PANO_JSON_BOOL && !dyn->u.boolean);
}
END_TEST

START_TEST(embedded_schemas_build)
{
    size_t n = 0;
    bool envelope = false;
    for (; pano_builtin_schemas[n].path; n++)
        envelope |= strcmp(pano_builtin_schemas[n].path, "envelope.schema.json") == 0;
    ck_assert(envelope);
    ck_assert_uint_ge(n, 2);
    pano_template *t;
    size_t nt;
    char err[256], *warnings;
    ck_assert_msg(pano_templates_build(pano_builtin_schemas, &opt, &t, &nt, &warnings, err,
                                       sizeof err) == 0,
                  "%s", err);
    /* the project's own schemas agree on every field's type */
    ck_assert_msg(!warnings || !warnings[0], "the schemas clash: %s", warnings);
    free(warnings);
    bool found = false, alert = false, part_alone = false, stampede = false;
    for (size_t i = 0; i < nt; i++) {
        if (strcmp(t[i].name, "p-kickstart") == 0)
            found = strstr(t[i].body, "\"exitcode\":{\"type\":\"long\"}") != NULL;
        /* pano.alert.* take their fields from the shared alert.schema.json */
        if (strcmp(t[i].name, "p-other") == 0)
            alert = strstr(t[i].body, "\"score\":{\"type\":\"double\"}") != NULL;
        /* pegasus-monitord's fields, declared in families/stampede.schema.json */
        if (strcmp(t[i].name, "p-stampede") == 0)
            stampede = strstr(t[i].body, "\"dur\":{\"type\":\"double\"}") &&
                       strstr(t[i].body, "\"local_dur\":{\"type\":\"double\"}") &&
                       strstr(t[i].body, "\"multiplier_factor\":{\"type\":\"long\"}");
        /* and the shared part is no event of its own: nothing of it elsewhere */
        if (strcmp(t[i].name, "p-kickstart") == 0)
            part_alone = strstr(t[i].body, "\"score\"") != NULL;
    }
    ck_assert_msg(found, "kickstart.inv.end's exitcode is not a long");
    ck_assert_msg(alert, "pano.alert.*'s score (alert.schema.json) is not a double in p-other");
    ck_assert_msg(!part_alone, "alert.schema.json's fields leaked into p-kickstart");
    ck_assert_msg(stampede, "families/stampede.schema.json's types are not in p-stampede");
    pano_templates_free(t, nt);
}
END_TEST

/* The embedded store's columns have the affinity of the fields' mappings:
 * TEXT where the schemas make a keyword, NUMERIC elsewhere (store.h). */
START_TEST(store_keyword_columns_are_the_mappings_keywords)
{
    pano_template *t;
    size_t nt, checked = 0;
    char err[256], *warnings;
    ck_assert_msg(pano_templates_build(pano_builtin_schemas, &opt, &t, &nt, &warnings, err,
                                       sizeof err) == 0,
                  "%s", err);
    free(warnings);
    templates = templates_json(t, nt);
    for (size_t i = 0; i < nt; i++)
        for (size_t f = 0; pano_store_fields[f]; f++) {
            const char *name = pano_store_fields[f], *type = type_of(t[i].name, name);
            if (!type)
                continue;
            bool keyword = pano_store_is_keyword(name);
            ck_assert_msg(keyword == (strcmp(type, "keyword") == 0),
                          "%s is a %s in %s, its store column %s", name, type, t[i].name,
                          keyword ? "TEXT" : "NUMERIC");
            checked++;
        }
    ck_assert_uint_ge(checked, 50);
    pano_templates_free(t, nt);
    pano_json_free(templates);
    templates = NULL;
}
END_TEST

START_TEST(replicas_auto_or_a_number)
{
    ck_assert_int_eq(pano_replicas_parse("auto"), PANO_REPLICAS_AUTO);
    ck_assert_int_eq(pano_replicas_parse("0"), 0);
    ck_assert_int_eq(pano_replicas_parse("2"), 2);
    const char *bad[] = {"", "-1", "17", "1x", "Auto", " 1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(pano_replicas_parse(bad[i]) < PANO_REPLICAS_AUTO, "'%s' accepted", bad[i]);

    pano_template_options o = opt;
    o.replicas = PANO_REPLICAS_AUTO;
    pano_template *t;
    size_t nt;
    char err[256], *warnings;
    ck_assert_msg(pano_templates_build(schemas, &o, &t, &nt, &warnings, err, sizeof err) == 0,
                  "%s", err);
    free(warnings);
    for (size_t i = 0; i < nt; i++) {
        ck_assert_msg(strstr(t[i].body, "\"auto_expand_replicas\":\"0-1\""), "%s", t[i].body);
        ck_assert_ptr_null(strstr(t[i].body, "number_of_replicas"));
    }
    pano_templates_free(t, nt);
}
END_TEST

START_TEST(bad_schema_is_an_error)
{
    static const pano_schema_file bad[] = {{"x.schema.json", "{not json"}, {NULL, NULL}};
    pano_template *t;
    size_t n;
    char err[256] = "", *warnings = NULL;
    ck_assert_int_eq(pano_templates_build(bad, &opt, &t, &n, &warnings, err, sizeof err), -1);
    ck_assert(strstr(err, "x.schema.json"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("indexer_template");
    TCase *tc = tcase_create("template");
    tcase_add_checked_fixture(tc, build, teardown);
    tcase_add_test(tc, one_template_per_stream_for_its_partitions);
    tcase_add_test(tc, schema_types_become_es_types);
    tcase_add_test(tc, same_field_same_type_across_families);
    tcase_add_test(tc, dynamic_rules_are_safe);
    suite_add_tcase(s, tc);
    TCase *tc2 = tcase_create("schemas");
    tcase_add_test(tc2, embedded_schemas_build);
    tcase_add_test(tc2, store_keyword_columns_are_the_mappings_keywords);
    tcase_add_test(tc2, bad_schema_is_an_error);
    tcase_add_test(tc2, replicas_auto_or_a_number);
    suite_add_tcase(s, tc2);
    return pano_test_run(s);
}
