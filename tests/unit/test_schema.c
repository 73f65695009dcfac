/* The JSON Schema subset checker (lib/schema.h), on pano's own schemas and
 * on small schemas written for each keyword. */
#include "json.h"
#include "mem.h"
#include "schema.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pano_schema_set *repo_schemas(void)
{
    const char *dir = getenv("PANO_SCHEMAS");
    ck_assert_msg(dir != NULL, "PANO_SCHEMAS is not set");
    char err[512] = "";
    pano_schema_set *set = pano_schema_set_load(dir, err, sizeof err);
    ck_assert_msg(set != NULL, "loading %s: %s", dir, err);
    return set;
}

/* Validate text against the schema for its event; returns the reason ("" if
 * valid) in a static buffer. */
static const char *check_event(const pano_schema_set *set, const char *text)
{
    static char reason[512];
    char err[200];
    pano_json *doc = pano_json_parse(text, strlen(text), 64, err, sizeof err);
    ck_assert_msg(doc != NULL, "test input is not JSON: %s", err);
    const char *name = doc->type == PANO_JSON_OBJECT ? pano_json_get_str(doc, "event") : NULL;
    const pano_schema *s = name ? pano_schema_for_event(set, name) : pano_schema_envelope(set);
    reason[0] = 'x';
    if (pano_schema_validate(s, doc, reason, sizeof reason))
        reason[0] = '\0';
    else
        ck_assert_msg(reason[0] != '\0', "failure without a reason");
    pano_json_free(doc);
    return reason;
}

/* Compile a one-file schema and check a value; "" if valid. */
static const char *check_text(const char *schema, const char *value)
{
    static char reason[512];
    char err[512] = "";
    pano_schema_set *set = pano_schema_set_from_text(schema, err, sizeof err);
    ck_assert_msg(set != NULL, "schema %s: %s", schema, err);
    pano_json *doc = pano_json_parse(value, strlen(value), 64, err, sizeof err);
    ck_assert_msg(doc != NULL, "value %s: %s", value, err);
    if (pano_schema_validate(pano_schema_envelope(set), doc, reason, sizeof reason))
        reason[0] = '\0';
    pano_json_free(doc);
    pano_schema_set_free(set);
    return reason;
}

static const char *compile_error(const char *schema)
{
    static char err[512];
    err[0] = '\0';
    pano_schema_set *set = pano_schema_set_from_text(schema, err, sizeof err);
    ck_assert_msg(set == NULL, "schema %s compiled", schema);
    return err;
}

/* A name no schema in schemas/events/ claims: the envelope applies. */
#define GOOD "\"event\":\"test.envelope.only\",\"ts\":1569980400.123456,\"event_id\":\"a-1\"," \
             "\"wf_uuid\":\"f7fbd521-1567-43c9-b3d7-41ff2c308650\""

START_TEST(envelope_accepts_an_event)
{
    pano_schema_set *set = repo_schemas();
    ck_assert_str_eq(check_event(set, "{" GOOD ",\"seq\":1,\"hostname\":\"h\",\"rank\":0}"), "");
    /* ts may be an integer (stampede), extra fields are allowed */
    ck_assert_str_eq(check_event(set, "{\"event\":\"stampede.xwf.start\",\"ts\":1331642138,"
                                      "\"event_id\":\"x\",\"wf_uuid\":\"w\",\"restart_count\":0}"),
                     "");
    pano_schema_set_free(set);
}
END_TEST

START_TEST(envelope_reasons)
{
    pano_schema_set *set = repo_schemas();
    ck_assert_str_eq(check_event(set, "{\"event\":\"a.b\",\"ts\":1,\"event_id\":\"x\"}"),
                     "missing required field 'wf_uuid'");
    ck_assert_str_eq(check_event(set, "{" GOOD ",\"seq\":\"seven\"}"), "'seq' must be an integer");
    ck_assert_str_eq(check_event(set, "{" GOOD ",\"seq\":2.5}"), "'seq' must be an integer");
    ck_assert_str_eq(check_event(set, "{" GOOD ",\"seq\":3.0}"), "");
    ck_assert_str_eq(check_event(set, "{" GOOD ",\"seq\":0}"), "'seq' must be at least 1");
    ck_assert_str_eq(check_event(set, "{" GOOD ",\"rank\":-1}"), "'rank' must be at least 0");
    ck_assert_str_eq(check_event(set, "{" GOOD ",\"hostname\":7}"), "'hostname' must be a string");
    ck_assert_str_eq(check_event(set, "{\"event\":\"a.b\",\"ts\":\"now\",\"event_id\":\"x\","
                                      "\"wf_uuid\":\"w\"}"),
                     "'ts' must be a number");
    ck_assert_str_eq(check_event(set, "{\"event\":\"a..b\",\"ts\":1,\"event_id\":\"x\","
                                      "\"wf_uuid\":\"w\"}"),
                     "'event' does not match the pattern ^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$");
    ck_assert_str_eq(check_event(set, "[1,2]"), "the event must be an object");
    /* maxLength counts characters */
    char big[400];
    snprintf(big, sizeof big, "{\"event\":\"a\",\"ts\":1,\"wf_uuid\":\"w\",\"event_id\":\"%0191d\"}", 0);
    ck_assert_str_eq(check_event(set, big), "");
    snprintf(big, sizeof big, "{\"event\":\"a\",\"ts\":1,\"wf_uuid\":\"w\",\"event_id\":\"%0192d\"}", 0);
    ck_assert_str_eq(check_event(set, big), "'event_id' is longer than 191 characters");
    pano_schema_set_free(set);
}
END_TEST

static void write_file(const char *path, const char *text);

/* Per-event schemas, next to pano's real envelope (copied into a temporary
 * directory, so that the test does not depend on how the event schemas in
 * schemas/events/ evolve). */
START_TEST(event_schemas_apply_by_name)
{
    pano_schema_set *repo = repo_schemas();
    ck_assert_uint_ge(pano_schema_set_event_count(repo), 1);
    ck_assert_ptr_eq(pano_schema_for_event(repo, "no.such.event"), pano_schema_envelope(repo));
    pano_schema_set_free(repo);

    char dir[] = "/tmp/pano-schema-XXXXXX", path[256], err[512] = "";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cp '%s/envelope.schema.json' '%s/' && mkdir '%s/events'",
             getenv("PANO_SCHEMAS"), dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/events/k.end.schema.json", dir);
    write_file(path, "{\"allOf\":[{\"$ref\":\"../envelope.schema.json\"}],\"type\":\"object\","
                     "\"required\":[\"pid\",\"exitcode\"],\"properties\":{"
                     "\"pid\":{\"type\":\"integer\"},\"status\":{\"type\":\"integer\",\"enum\":[0,1]},"
                     "\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}");
    pano_schema_set *set = pano_schema_set_load(dir, err, sizeof err);
    ck_assert_msg(set != NULL, "%s", err);
    ck_assert_ptr_ne(pano_schema_for_event(set, "k.end"), pano_schema_envelope(set));
    const char *env = "\"event\":\"k.end\",\"ts\":1,\"event_id\":\"x\",\"wf_uuid\":\"w\"";
    char text[512];
    snprintf(text, sizeof text, "{%s,\"pid\":4,\"exitcode\":0,\"status\":0,\"argv\":[\"ls\"]}", env);
    ck_assert_str_eq(check_event(set, text), "");
    /* the envelope applies through allOf/$ref */
    ck_assert_str_eq(check_event(set, "{\"event\":\"k.end\",\"ts\":1,\"event_id\":\"x\","
                                      "\"pid\":4,\"exitcode\":0}"),
                     "missing required field 'wf_uuid'");
    snprintf(text, sizeof text, "{%s,\"pid\":4,\"exitcode\":0,\"status\":2}", env);
    ck_assert_str_eq(check_event(set, text), "'status' must be one of 0, 1");
    snprintf(text, sizeof text, "{%s,\"exitcode\":0}", env);
    ck_assert_str_eq(check_event(set, text), "missing required field 'pid'");
    snprintf(text, sizeof text, "{%s,\"pid\":4,\"exitcode\":0,\"argv\":[\"ls\",3]}", env);
    ck_assert_str_eq(check_event(set, text), "'argv[1]' must be a string");
    pano_schema_set_free(set);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The schemas built into the programs are schemas/ as it was at build time:
 * the same files, the same per-event schemas, the same verdicts. */
START_TEST(builtin_schemas_are_the_directory)
{
    char err[512] = "";
    pano_schema_set *builtin = pano_schema_set_from_files(pano_builtin_schemas, err, sizeof err);
    ck_assert_msg(builtin != NULL, "built-in schemas: %s", err);
    pano_schema_set *repo = repo_schemas();
    ck_assert_uint_eq(pano_schema_set_event_count(builtin), pano_schema_set_event_count(repo));
    size_t files = 0;
    for (; pano_builtin_schemas[files].path; files++) {
        const char *path = pano_builtin_schemas[files].path;
        char full[512];
        snprintf(full, sizeof full, "%s/%s", getenv("PANO_SCHEMAS"), path);
        ck_assert_msg(access(full, R_OK) == 0, "built-in %s is not in schemas/", path);
        if (strncmp(path, "events/", 7) == 0) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(strlen(path) - 7 - strlen(".schema.json")),
                     path + 7);
            ck_assert_msg(pano_schema_for_event(builtin, name) != pano_schema_envelope(builtin),
                          "no built-in schema for %s", name);
        }
    }
    /* and every file of the directory is built in */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "find '%s' -name '*.schema.json' | wc -l", getenv("PANO_SCHEMAS"));
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t in_dir = 0;
    ck_assert_int_eq(fscanf(p, "%zu", &in_dir), 1);
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_uint_eq(files, in_dir);
    const char *bad_end = "{\"event\":\"kickstart.inv.end\",\"ts\":1,\"event_id\":\"e\","
                          "\"wf_uuid\":\"2fe0d1b0-8916-4d5a-b4f7-bc975b17c87b\"}";
    char verdict[512];
    snprintf(verdict, sizeof verdict, "%s", check_event(repo, bad_end));
    ck_assert_str_ne(verdict, "");
    ck_assert_str_eq(check_event(builtin, bad_end), verdict);
    pano_schema_set_free(repo);
    pano_schema_set_free(builtin);
}
END_TEST

START_TEST(types)
{
    const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":[\"string\",\"null\"]},"
                    "\"n\":{\"type\":\"number\"},\"b\":{\"type\":\"boolean\"},"
                    "\"o\":{\"type\":\"object\"},\"l\":{\"type\":\"array\"}}}";
    ck_assert_str_eq(check_text(s, "{\"a\":\"x\",\"n\":1,\"b\":true,\"o\":{},\"l\":[]}"), "");
    ck_assert_str_eq(check_text(s, "{\"a\":null,\"n\":1.5}"), "");
    ck_assert_str_eq(check_text(s, "{\"a\":1}"), "'a' must be a string or null");
    ck_assert_str_eq(check_text(s, "{\"n\":\"1\"}"), "'n' must be a number");
    ck_assert_str_eq(check_text(s, "{\"b\":0}"), "'b' must be a boolean");
    ck_assert_str_eq(check_text(s, "{\"o\":[]}"), "'o' must be an object");
    ck_assert_str_eq(check_text(s, "{\"l\":{}}"), "'l' must be an array");
    ck_assert_str_eq(check_text(s, "\"x\""), "the event must be an object");
    ck_assert_str_eq(check_text("{\"type\":[\"integer\",\"number\"]}", "true"),
                     "the event must be a number");
    ck_assert_str_eq(check_text("true", "{\"anything\":1}"), "");
    ck_assert_str_eq(check_text("false", "{}"), "the event is not allowed");
}
END_TEST

START_TEST(nested_paths)
{
    const char *s = "{\"properties\":{\"a\":{\"properties\":{\"b\":{\"type\":\"array\","
                    "\"items\":{\"required\":[\"c\"],\"properties\":{\"c\":{\"type\":\"integer\"}}}}}}}}";
    ck_assert_str_eq(check_text(s, "{\"a\":{\"b\":[{\"c\":1},{\"c\":2}]}}"), "");
    ck_assert_str_eq(check_text(s, "{\"a\":{\"b\":[{\"c\":1},{\"c\":\"2\"}]}}"),
                     "'a.b[1].c' must be an integer");
    ck_assert_str_eq(check_text(s, "{\"a\":{\"b\":[{\"c\":1},{}]}}"),
                     "missing required field 'c' in 'a.b[1]'");
}
END_TEST

START_TEST(numbers_strings_arrays)
{
    const char *s = "{\"properties\":{\"x\":{\"minimum\":1,\"maximum\":10},"
                    "\"y\":{\"exclusiveMinimum\":0,\"exclusiveMaximum\":1},"
                    "\"s\":{\"minLength\":2,\"maxLength\":3},"
                    "\"l\":{\"minItems\":1,\"maxItems\":2}}}";
    ck_assert_str_eq(check_text(s, "{\"x\":1,\"y\":0.5,\"s\":\"ab\",\"l\":[1]}"), "");
    ck_assert_str_eq(check_text(s, "{\"x\":0}"), "'x' must be at least 1");
    ck_assert_str_eq(check_text(s, "{\"x\":10.5}"), "'x' must be at most 10");
    ck_assert_str_eq(check_text(s, "{\"y\":0}"), "'y' must be greater than 0");
    ck_assert_str_eq(check_text(s, "{\"y\":1}"), "'y' must be less than 1");
    ck_assert_str_eq(check_text(s, "{\"s\":\"a\"}"), "'s' must be at least 2 characters long");
    ck_assert_str_eq(check_text(s, "{\"s\":\"abcd\"}"), "'s' is longer than 3 characters");
    /* three characters, six bytes */
    ck_assert_str_eq(check_text(s, "{\"s\":\"\xC3\xA9\xC3\xA9\xC3\xA9\"}"), "");
    ck_assert_str_eq(check_text(s, "{\"l\":[]}"), "'l' must have at least 1 items");
    ck_assert_str_eq(check_text(s, "{\"l\":[1,2,3]}"), "'l' must have at most 2 items");
}
END_TEST

START_TEST(enum_and_const)
{
    const char *s = "{\"properties\":{\"e\":{\"enum\":[\"a\",\"b\",null]},\"c\":{\"const\":1}}}";
    ck_assert_str_eq(check_text(s, "{\"e\":\"a\",\"c\":1.0}"), "");
    ck_assert_str_eq(check_text(s, "{\"e\":null}"), "");
    ck_assert_str_eq(check_text(s, "{\"e\":\"c\"}"), "'e' must be one of \"a\", \"b\", null");
    ck_assert_str_eq(check_text(s, "{\"c\":2}"), "'c' must be 1");
    ck_assert_str_eq(check_text("{\"enum\":[{\"a\":[1,2]}]}", "{\"a\":[1,2]}"), "");
    ck_assert_str_ne(check_text("{\"enum\":[{\"a\":[1,2]}]}", "{\"a\":[2,1]}"), "");
}
END_TEST

START_TEST(patterns)
{
    ck_assert_str_eq(check_text("{\"pattern\":\"^\\\\d{3}-\\\\w+$\"}", "\"123-ab_9\""), "");
    ck_assert_str_ne(check_text("{\"pattern\":\"^\\\\d{3}-\\\\w+$\"}", "\"12-ab\""), "");
    /* unanchored: a search, as JSON Schema says */
    ck_assert_str_eq(check_text("{\"pattern\":\"b+\"}", "\"abbc\""), "");
    ck_assert_str_eq(check_text("{\"pattern\":\"^(?:ab)+$\"}", "\"abab\""), "");
    ck_assert_str_eq(check_text("{\"pattern\":\"^a.*?z$\"}", "\"abcz\""), "");
    ck_assert_str_eq(check_text("{\"pattern\":\"^[\\\\d.-]+$\"}", "\"1.2-3\""), "");
    ck_assert_str_ne(check_text("{\"pattern\":\"^[\\\\d.-]+$\"}", "\"1.2a\""), "");
    ck_assert_str_eq(check_text("{\"pattern\":\"^[^\\\\s]+$\"}", "\"ab\""), "");
    ck_assert_str_ne(check_text("{\"pattern\":\"^[^\\\\s]+$\"}", "\"a b\""), "");
    ck_assert_str_eq(check_text("{\"pattern\":\"^a\\\\/b$\"}", "\"a/b\""), "");
    /* a NUL inside the string does not end it early */
    ck_assert_str_ne(check_text("{\"pattern\":\"^[a-z]+$\"}", "\"ab\\u0000cd\""), "");
    ck_assert_str_eq(check_text("{\"properties\":{\"p\":{\"pattern\":\"^x\"}}}", "{\"p\":1}"), "");
    /* refused when loading */
    ck_assert_ptr_nonnull(strstr(compile_error("{\"pattern\":\"^(?=a)\"}"), "lookaround"));
    ck_assert_ptr_nonnull(strstr(compile_error("{\"pattern\":\"(a)\\\\1\"}"), "\\1"));
    ck_assert_ptr_nonnull(strstr(compile_error("{\"pattern\":\"[ab\"}"), "pattern"));
    ck_assert_ptr_nonnull(strstr(compile_error("{\"pattern\":5}"), "must be a string"));
}
END_TEST

START_TEST(combinators_and_additional)
{
    const char *any = "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}";
    ck_assert_str_eq(check_text(any, "3"), "");
    ck_assert_str_eq(check_text(any, "true"), "the event matches none of the allowed forms");
    const char *one = "{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}";
    ck_assert_str_eq(check_text(one, "-1"), "");
    ck_assert_str_eq(check_text(one, "1"),
                     "the event must match exactly one of the allowed forms (it matches 2)");
    ck_assert_str_eq(check_text("{\"not\":{\"type\":\"null\"}}", "null"),
                     "the event matches a form that is not allowed");
    const char *all = "{\"allOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}";
    ck_assert_str_eq(check_text(all, "{\"a\":1,\"b\":2}"), "");
    ck_assert_str_eq(check_text(all, "{\"a\":1}"), "missing required field 'b'");
    const char *closed = "{\"properties\":{\"a\":{}},\"additionalProperties\":false}";
    ck_assert_str_eq(check_text(closed, "{\"a\":1}"), "");
    ck_assert_str_eq(check_text(closed, "{\"a\":1,\"zz\":2}"), "unexpected field 'zz'");
    const char *typed = "{\"additionalProperties\":{\"type\":\"string\"}}";
    ck_assert_str_eq(check_text(typed, "{\"q\":2}"), "'q' must be a string");
}
END_TEST

START_TEST(local_refs)
{
    const char *s = "{\"$defs\":{\"id\":{\"type\":\"string\",\"minLength\":1},"
                    "\"node\":{\"type\":\"object\",\"properties\":{\"id\":{\"$ref\":\"#/$defs/id\"},"
                    "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}}}},"
                    "\"$ref\":\"#/$defs/node\"}";
    ck_assert_str_eq(check_text(s, "{\"id\":\"a\",\"kids\":[{\"id\":\"b\",\"kids\":[]}]}"), "");
    ck_assert_str_eq(check_text(s, "{\"id\":\"a\",\"kids\":[{\"id\":\"\"}]}"),
                     "'kids[0].id' must be at least 1 characters long");
    ck_assert_ptr_nonnull(strstr(compile_error("{\"$ref\":\"#/$defs/none\"}"), "no such location"));
    ck_assert_ptr_nonnull(strstr(compile_error("{\"$ref\":\"other.json\"}"), "no such schema file"));
    /* a schema that refers to itself without consuming anything ends */
    ck_assert_str_eq(check_text("{\"$ref\":\"#\"}", "1"), "schema nesting deeper than 200 levels");
}
END_TEST

START_TEST(compile_errors)
{
    ck_assert_ptr_nonnull(strstr(compile_error("{\"type\":\"text\"}"), "unknown 'type'"));
    ck_assert_ptr_nonnull(strstr(compile_error("{\"required\":\"a\"}"), "'required'"));
    ck_assert_ptr_nonnull(strstr(compile_error("{\"maxLength\":-1}"), "'maxLength'"));
    ck_assert_ptr_nonnull(strstr(compile_error("{\"properties\":{\"a\":3}}"), "properties.a"));
    ck_assert_ptr_nonnull(strstr(compile_error("{\"allOf\":[]}"), "'allOf'"));
    ck_assert_ptr_nonnull(strstr(compile_error("{"), "invalid JSON"));
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(directory_layout)
{
    char dir[] = "/tmp/pano-schema-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256], err[512] = "";
    snprintf(path, sizeof path, "%s/envelope.schema.json", dir);
    write_file(path, "{\"type\":\"object\",\"required\":[\"event\"],"
                     "\"properties\":{\"event\":{\"$ref\":\"common/defs.schema.json#/$defs/name\"}}}");
    snprintf(path, sizeof path, "%s/common", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/common/defs.schema.json", dir);
    write_file(path, "{\"$defs\":{\"name\":{\"type\":\"string\",\"pattern\":\"^[a-z.]+$\"}}}");
    snprintf(path, sizeof path, "%s/events", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/events/a.b.schema.json", dir);
    write_file(path, "{\"allOf\":[{\"$ref\":\"../envelope.schema.json\"}],\"required\":[\"n\"]}");

    pano_schema_set *set = pano_schema_set_load(dir, err, sizeof err);
    ck_assert_msg(set != NULL, "%s", err);
    ck_assert_uint_eq(pano_schema_set_event_count(set), 1);
    ck_assert_str_eq(check_event(set, "{\"event\":\"a.b\",\"n\":1}"), "");
    ck_assert_str_eq(check_event(set, "{\"event\":\"a.b\"}"), "missing required field 'n'");
    ck_assert_str_eq(check_event(set, "{\"event\":\"A.B\"}"),
                     "'event' does not match the pattern ^[a-z.]+$");
    ck_assert_str_eq(check_event(set, "{\"event\":\"c.d\"}"), "");
    pano_schema_set_free(set);

    /* a broken file is named */
    snprintf(path, sizeof path, "%s/events/bad.schema.json", dir);
    write_file(path, "{\"type\":");
    ck_assert_ptr_null(pano_schema_set_load(dir, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "bad.schema.json"));
    ck_assert_int_eq(unlink(path), 0);

    /* no envelope */
    snprintf(path, sizeof path, "%s/envelope.schema.json", dir);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_ptr_null(pano_schema_set_load(dir, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "envelope"));

    ck_assert_ptr_null(pano_schema_set_load("/nonexistent/schemas", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/schemas"));

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("schema");
    TCase *tc = tcase_create("schema");
    tcase_add_test(tc, envelope_accepts_an_event);
    tcase_add_test(tc, envelope_reasons);
    tcase_add_test(tc, event_schemas_apply_by_name);
    tcase_add_test(tc, builtin_schemas_are_the_directory);
    tcase_add_test(tc, types);
    tcase_add_test(tc, nested_paths);
    tcase_add_test(tc, numbers_strings_arrays);
    tcase_add_test(tc, enum_and_const);
    tcase_add_test(tc, patterns);
    tcase_add_test(tc, combinators_and_additional);
    tcase_add_test(tc, local_refs);
    tcase_add_test(tc, compile_errors);
    tcase_add_test(tc, directory_layout);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
