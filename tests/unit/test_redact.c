/* Redaction for a shared file (query/redact.c): every string replaced by a
 * keyed pseudonym, the same value by the same one, but what tells events,
 * workflows and numbers apart; transformation names kept unless asked. */
#include "redact.h"
#include "testutil.h"

#include <string.h>

static pano_json *event(void)
{
    pano_json *ev = pano_json_object();
    pano_json_set_str(ev, "event", "kickstart.inv.start");
    pano_json_set_str(ev, "event_id", "node-07.example.org-1234-1");
    pano_json_set_str(ev, "wf_uuid", "0b5c8a6e-1111-2222-3333-444455556666");
    pano_json_set_str(ev, "hostname", "node-07.example.org");
    pano_json_set_str(ev, "submit_hostname", "node-07.example.org");
    pano_json_set_str(ev, "dag_job_id", "preprocess_ID01");
    pano_json_set_str(ev, "xformation", "preprocess");
    pano_json_set_str(ev, "exitcode", "512");
    pano_json_set_int(ev, "pid", 4242);
    pano_json_set_double(ev, "ts", 1790000000.5, 1);
    pano_json *argv = pano_json_set_array(ev, "argv");
    pano_json_append(argv, pano_json_string("/home/alice/bin/pre"));
    pano_json_append(argv, pano_json_string("--in=/home/alice/data"));
    pano_json *env = pano_json_set_object(ev, "env");
    pano_json_set_str(env, "HOME", "/home/alice");
    return ev;
}

START_TEST(names_paths_and_text_replaced_structure_kept)
{
    pano_redactor *r = pano_redactor_new(false);
    ck_assert_ptr_nonnull(r);
    pano_json *ev = event();
    pano_redact_event(r, ev);
    char *text = pano_json_serialize(ev, NULL);
    ck_assert_msg(!strstr(text, "alice") && !strstr(text, "example.org") && !strstr(text, "/home"),
                  "%s", text);
    /* kept */
    ck_assert_str_eq(pano_json_get_str(ev, "event"), "kickstart.inv.start");
    ck_assert_str_eq(pano_json_get_str(ev, "wf_uuid"), "0b5c8a6e-1111-2222-3333-444455556666");
    ck_assert_str_eq(pano_json_get_str(ev, "xformation"), "preprocess");
    ck_assert_str_eq(pano_json_get_str(ev, "exitcode"), "512");
    int64_t pid;
    ck_assert(pano_json_get_int(ev, "pid", &pid) && pid == 4242);
    /* replaced, the same value by the same pseudonym */
    const char *host = pano_json_get_str(ev, "hostname");
    ck_assert_int_eq((int)strlen(host), 17);
    ck_assert_int_eq(host[0], 'r');
    ck_assert_str_eq(host, pano_json_get_str(ev, "submit_hostname"));
    ck_assert_str_ne(pano_json_get_str(ev, "dag_job_id"), "preprocess_ID01");
    ck_assert_str_ne(pano_json_get_str(ev, "event_id"), "node-07.example.org-1234-1");
    const char *home = pano_json_get_str(pano_json_get(ev, "env"), "HOME");
    ck_assert(home && home[0] == 'r' && strlen(home) == 17);
    const pano_json *arg0 = pano_json_at(pano_json_get(ev, "argv"), 0);
    ck_assert(arg0->type == PANO_JSON_STRING && arg0->u.string.text[0] == 'r');
    free(text);
    pano_json_free(ev);

    /* the same key: the same pseudonyms again; another key: others */
    pano_json *a = event(), *b = event();
    pano_redact_event(r, a);
    pano_redactor *other = pano_redactor_new(false);
    pano_redact_event(other, b);
    pano_json *c = event();
    pano_redact_event(r, c);
    ck_assert_str_eq(pano_json_get_str(a, "hostname"), pano_json_get_str(c, "hostname"));
    ck_assert_str_ne(pano_json_get_str(a, "hostname"), pano_json_get_str(b, "hostname"));
    pano_json_free(a);
    pano_json_free(b);
    pano_json_free(c);
    pano_redactor_free(other);
    pano_redactor_free(r);
}
END_TEST

START_TEST(transformations_when_asked_and_metric_names_kept)
{
    pano_redactor *r = pano_redactor_new(true);
    pano_json *ev = event();
    pano_redact_event(r, ev);
    ck_assert_str_ne(pano_json_get_str(ev, "xformation"), "preprocess");
    pano_json_free(ev);

    pano_json *m = pano_json_object();
    pano_json_set_str(m, "event", "custom.metric");
    pano_json_set_str(m, "name", "loss");
    pano_json_set_str(pano_json_set_object(m, "tags"), "model", "alice-resnet");
    pano_redact_event(r, m);
    ck_assert_str_eq(pano_json_get_str(m, "name"), "loss");
    const char *tag = pano_json_get_str(pano_json_get(m, "tags"), "model");
    ck_assert_ptr_nonnull(tag); /* the tag's name kept, its value replaced */
    ck_assert_str_ne(tag, "alice-resnet");
    pano_json_free(m);
    pano_redactor_free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("redact");
    TCase *tc = tcase_create("redact");
    tcase_add_test(tc, names_paths_and_text_replaced_structure_kept);
    tcase_add_test(tc, transformations_when_asked_and_metric_names_kept);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
