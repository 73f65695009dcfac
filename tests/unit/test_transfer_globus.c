/* pano-transfer globus: task documents into transfer.inv.go bodies. */
#include "globus.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *name, size_t *len)
{
    const char *dir = getenv("PANO_TRANSFER_DATA");
    ck_assert_msg(dir != NULL, "PANO_TRANSFER_DATA is not set");
    char path[4096];
    snprintf(path, sizeof path, "%s/globus/%s", dir, name);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* Parse a test document; returns the bodies array. */
static pano_json *load(const char *name, long expect)
{
    size_t len;
    char *text = slurp(name, &len);
    pano_json *bodies = pano_json_array();
    char err[512];
    long n = pano_globus_parse(text, len, bodies, err, sizeof err);
    ck_assert_msg(n == expect, "%s: %ld tasks (%s)", name, n, n < 0 ? err : "");
    free(text);
    return bodies;
}

static double num(const pano_json *o, const char *key)
{
    double v;
    ck_assert_msg(pano_json_get_number(o, key, &v), "no number %s", key);
    return v;
}

START_TEST(succeeded_task)
{
    pano_json *bodies = load("task-succeeded.json", 1);
    pano_json *b = pano_json_at(bodies, 0);
    ck_assert_str_eq(pano_json_get_str(b, "task_id"), "0f6a3f29-5a2e-4d3c-9a4b-2b8f0c1d2e3f");
    ck_assert_str_eq(pano_json_get_str(b, "type"), "TRANSFER");
    ck_assert_str_eq(pano_json_get_str(b, "globus_status"), "SUCCEEDED");
    int64_t i;
    ck_assert(pano_json_get_int(b, "status", &i) && i == 0);
    ck_assert(pano_json_get_int(b, "bytes_transferred", &i) && i == 10485760);
    ck_assert(pano_json_get_int(b, "subtasks_succeeded", &i) && i == 3);
    ck_assert_str_eq(pano_json_get_str(b, "source_endpoint_display_name"),
                     "Globus Tutorial Endpoint 1");
    /* event_link and DATA_TYPE are dropped, nulls are kept as Globus sent them. */
    ck_assert_ptr_null(pano_json_get(b, "event_link"));
    ck_assert_ptr_null(pano_json_get(b, "DATA_TYPE"));
    ck_assert_int_eq(pano_json_get(b, "fatal_error")->type, PANO_JSON_NULL);
    ck_assert(num(b, "transfer_start_time") == 1569968025.0); /* 2019-10-01T22:13:45Z */
    ck_assert(num(b, "transfer_completion_time") == 1569968045.0);
    ck_assert(num(b, "transfer_duration") == 20.0);
    ck_assert_ptr_null(pano_json_get(b, "transfer_events"));
    pano_json_free(bodies);
}
END_TEST

START_TEST(failed_task_with_events)
{
    pano_json *bodies = load("task-failed-events.json", 1);
    pano_json *b = pano_json_at(bodies, 0);
    int64_t i;
    ck_assert(pano_json_get_int(b, "status", &i) && i == 1);
    ck_assert_str_eq(pano_json_get_str(b, "globus_status"), "FAILED");
    ck_assert_str_eq(pano_json_get_str(pano_json_get(b, "fatal_error"), "code"),
                     "PERMISSION_DENIED");
    ck_assert_ptr_null(pano_json_get(b, "task_event_list"));
    pano_json *ev = pano_json_get(b, "transfer_events");
    ck_assert_ptr_nonnull(ev);
    ck_assert_uint_eq(pano_json_len(ev), 3);
    /* oldest first */
    ck_assert_str_eq(pano_json_get_str(pano_json_at(ev, 0), "code"), "STARTED");
    ck_assert_str_eq(pano_json_get_str(pano_json_at(ev, 1), "code"), "PROGRESS");
    ck_assert_str_eq(pano_json_get_str(pano_json_at(ev, 2), "code"), "FAULT");
    pano_json *progress = pano_json_at(ev, 1);
    ck_assert(pano_json_get_int(progress, "bytes_transferred", &i) && i == 1048576);
    ck_assert(num(progress, "duration") == 68.0);
    ck_assert(fabs(num(progress, "mbps") - 0.12) < 1e-9);
    /* the details string stays as Globus sent it */
    ck_assert_ptr_nonnull(strstr(pano_json_get_str(progress, "details"), "\"mbps\""));
    ck_assert(num(progress, "ts") == 1569970808.0);
    /* Only PROGRESS details are parsed into numbers. */
    ck_assert_ptr_null(pano_json_get(pano_json_at(ev, 0), "duration"));
    pano_json *fault = pano_json_at(ev, 2);
    ck_assert_int_eq(pano_json_get(fault, "is_error")->type, PANO_JSON_BOOL);
    ck_assert(pano_json_get(fault, "is_error")->u.boolean);
    pano_json_free(bodies);
}
END_TEST

START_TEST(task_then_event_list)
{
    pano_json *bodies = load("task-show-then-events.json", 1);
    pano_json *b = pano_json_at(bodies, 0);
    pano_json *ev = pano_json_get(b, "transfer_events");
    ck_assert_uint_eq(pano_json_len(ev), 4);
    int64_t i;
    /* sorted: the three PROGRESS events in time order, SUCCEEDED last */
    ck_assert(pano_json_get_int(pano_json_at(ev, 0), "bytes_transferred", &i) && i == 0);
    ck_assert(pano_json_get_int(pano_json_at(ev, 1), "bytes_transferred", &i) &&
              i == 1073741824);
    ck_assert(pano_json_get_int(pano_json_at(ev, 2), "bytes_transferred", &i) &&
              i == 2147483648LL);
    ck_assert(num(pano_json_at(ev, 2), "duration") == 200.5);
    ck_assert_str_eq(pano_json_get_str(pano_json_at(ev, 3), "code"), "SUCCEEDED");
    ck_assert(fabs(num(b, "transfer_duration") - 300.25) < 1e-6);
    pano_json_free(bodies);
}
END_TEST

START_TEST(task_list)
{
    pano_json *bodies = load("task-list.json", 2);
    pano_json *active = pano_json_at(bodies, 0);
    ck_assert_str_eq(pano_json_get_str(active, "globus_status"), "ACTIVE");
    ck_assert_ptr_null(pano_json_get(active, "status")); /* not over yet */
    ck_assert_ptr_null(pano_json_get(active, "transfer_completion_time"));
    ck_assert_str_eq(pano_json_get_str(pano_json_at(bodies, 1), "type"), "DELETE");
    pano_json_free(bodies);
}
END_TEST

static void expect_error(const char *text, const char *expect)
{
    pano_json *bodies = pano_json_array();
    char err[512] = "";
    ck_assert_int_eq(pano_globus_parse(text, strlen(text), bodies, err, sizeof err), -1);
    ck_assert_msg(strstr(err, expect), "'%s' lacks '%s'", err, expect);
    ck_assert_uint_eq(pano_json_len(bodies), 0);
    pano_json_free(bodies);
}

START_TEST(malformed_documents)
{
    size_t len;
    char *text = slurp("malformed.json", &len);
    pano_json *bodies = pano_json_array();
    char err[512] = "";
    ck_assert_int_eq(pano_globus_parse(text, len, bodies, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "malformed JSON at line 5"), "%s", err);
    pano_json_free(bodies);
    free(text);

    expect_error("{\"task_id\": \"x\",\n \"status\": \"SUCC", "unexpected end of input at line 2");
    expect_error("", "no JSON document");
    expect_error("  \n ", "no JSON document");
    expect_error("{\"task_id\": \"x\"} [1, 2", "unexpected end of input");
    expect_error("{\"task_id\": \"x\"}\n{\"DATA_TYPE\": \"endpoint\"}",
                 "document at line 2, column 1: not a Globus task");
    expect_error("{\"DATA_TYPE\": \"event_list\", \"DATA\": []}", "no task document before it");
    expect_error("42", "expected a Globus task document");
    expect_error("{\"task_id\": \"x\", \"events\": [1]}", "task event 1 is not an object");
    expect_error("{\"task_id\": \"x\", \"v\": \"\xff\"}", "malformed JSON");
}
END_TEST

START_TEST(times_and_details)
{
    double t;
    ck_assert(pano_globus_time("2019-10-01 22:13:45+00:00", &t) && t == 1569968025.0);
    ck_assert(pano_globus_time("2019-10-01T22:13:45Z", &t) && t == 1569968025.0);
    ck_assert(pano_globus_time("2019-10-01T22:13:45.5+00:00", &t) && t == 1569968025.5);
    ck_assert(pano_globus_time("2019-10-02T00:13:45+02:00", &t) && t == 1569968025.0);
    ck_assert(pano_globus_time("2019-10-01T17:13:45-0500", &t) && t == 1569968025.0);
    ck_assert(pano_globus_time("2019-10-01T22:13:45", &t) && t == 1569968025.0);
    ck_assert(!pano_globus_time("yesterday", &t));
    ck_assert(!pano_globus_time("2019-13-01T22:13:45Z", &t));
    ck_assert(!pano_globus_time("2019-10-01T22:13:45 junk", &t));
    ck_assert(!pano_globus_time(NULL, &t));

    pano_json *ev = pano_json_object();
    ck_assert(pano_globus_progress("bytes_transferred=1024 duration=2.5 mbps=0.003", ev));
    int64_t i;
    ck_assert(pano_json_get_int(ev, "bytes_transferred", &i) && i == 1024);
    ck_assert(num(ev, "duration") == 2.5);
    pano_json_free(ev);
    ev = pano_json_object();
    ck_assert(pano_globus_progress("{\"bytes_transferred\": \"77\", \"mbps\": 1}", ev));
    ck_assert(pano_json_get_int(ev, "bytes_transferred", &i) && i == 77);
    ck_assert_ptr_null(pano_json_get(ev, "duration"));
    ck_assert(!pano_globus_progress("nothing useful", ev));
    ck_assert(!pano_globus_progress(NULL, ev));
    pano_json_free(ev);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("transfer_globus");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, succeeded_task);
    tcase_add_test(tc, failed_task_with_events);
    tcase_add_test(tc, task_then_event_list);
    tcase_add_test(tc, task_list);
    tcase_add_test(tc, malformed_documents);
    tcase_add_test(tc, times_and_details);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
