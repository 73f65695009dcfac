/* Event envelope: build -> serialize -> parse round trip, ids, names. */
#include "event.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

START_TEST(event_round_trip)
{
    setenv("PEGASUS_WF_UUID", "0f6a3f29-5a2e-4d3c-9a4b-2b8f0c1d2e3f", 1);
    setenv("PEGASUS_DAG_JOB_ID", "preprocess_ID0000001", 1);
    setenv("CONDOR_JOBID", "42.0", 1);
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    pano_config *cfg = pano_config_new();
    char err[256];
    ck_assert(pano_config_load_env(cfg, err, sizeof err) == 0);
    pano_source *src = pano_source_new(cfg);

    double before = pano_now();
    pano_json *ev = pano_event_new(src, "kickstart.inv.online");
    pano_json_set_double(ev, "utime", 1.25, 3);
    pano_json_set_int(ev, "rss", 2048);
    pano_json *args = pano_json_set_array(ev, "argv");
    pano_json_append(args, pano_json_string("a b"));
    size_t len;
    char *text = pano_json_serialize(ev, &len);

    pano_json *back = pano_json_parse(text, len, 0, err, sizeof err);
    ck_assert_msg(back != NULL, "%s", err);
    ck_assert_str_eq(pano_json_get_str(back, "event"), "kickstart.inv.online");
    ck_assert_str_eq(pano_json_get_str(back, "wf_uuid"), "0f6a3f29-5a2e-4d3c-9a4b-2b8f0c1d2e3f");
    ck_assert_str_eq(pano_json_get_str(back, "dag_job_id"), "preprocess_ID0000001");
    ck_assert_str_eq(pano_json_get_str(back, "condor_job_id"), "42.0");
    ck_assert_ptr_null(pano_json_get(back, "site")); /* unset context is left out */
    int64_t i;
    ck_assert(pano_json_get_int(back, "seq", &i) && i == 1);
    ck_assert(pano_json_get_int(back, "rank", &i) && i == 2);
    ck_assert(pano_json_get_int(back, "rss", &i) && i == 2048);
    double ts, utime;
    ck_assert(pano_json_get_number(back, "ts", &ts));
    ck_assert(ts >= before - 1e-6 && ts <= pano_now() + 1e-6);
    ck_assert(pano_json_get_number(back, "utime", &utime) && utime == 1.25);
    ck_assert_str_eq(pano_json_get_str(back, "event_id"), pano_json_get_str(ev, "event_id"));
    ck_assert_ptr_nonnull(pano_json_get_str(back, "hostname"));

    /* Serializing the parsed event gives the same bytes. */
    char *again = pano_json_serialize(back, NULL);
    ck_assert_str_eq(text, again);

    free(text);
    free(again);
    pano_json_free(ev);
    pano_json_free(back);
    pano_source_free(src);
    pano_config_free(cfg);
    unsetenv("PEGASUS_WF_UUID");
    unsetenv("PEGASUS_DAG_JOB_ID");
    unsetenv("CONDOR_JOBID");
    unsetenv("OMPI_COMM_WORLD_RANK");
}
END_TEST

START_TEST(ids_are_unique_and_seq_counts)
{
    pano_config *cfg = pano_config_new();
    pano_source *a = pano_source_new(cfg), *b = pano_source_new(cfg);
    pano_json *a1 = pano_event_new(a, "x.y"), *a2 = pano_event_new(a, "x.y"),
              *b1 = pano_event_new(b, "x.y");
    ck_assert_str_ne(pano_json_get_str(a1, "event_id"), pano_json_get_str(a2, "event_id"));
    ck_assert_str_ne(pano_json_get_str(a1, "event_id"), pano_json_get_str(b1, "event_id"));
    int64_t s1, s2;
    ck_assert(pano_json_get_int(a1, "seq", &s1) && pano_json_get_int(a2, "seq", &s2));
    ck_assert_int_eq(s2, s1 + 1);
    ck_assert_ptr_null(pano_json_get(a1, "rank"));
    /* No workflow configured: each source makes up a UUID of its own. */
    const char *w = pano_json_get_str(a1, "wf_uuid");
    ck_assert_ptr_nonnull(w);
    ck_assert_uint_eq(strlen(w), 36);
    ck_assert_int_eq(w[14], '4');
    ck_assert_str_ne(w, pano_json_get_str(b1, "wf_uuid"));
    ck_assert_str_eq(w, pano_json_get_str(a2, "wf_uuid"));
    pano_json_free(a1);
    pano_json_free(a2);
    pano_json_free(b1);
    pano_source_free(a);
    pano_source_free(b);
    pano_config_free(cfg);
}
END_TEST

START_TEST(deterministic_ids_for_content)
{
    char x[33], y[33], z[33];
    pano_event_id_of("abc", 3, x);
    pano_event_id_of("abc", 3, y);
    pano_event_id_of("abd", 3, z);
    ck_assert_str_eq(x, y);
    ck_assert_str_ne(x, z);
    ck_assert_uint_eq(strlen(x), 32);
    /* First 128 bits of SHA-256("abc"). */
    ck_assert_str_eq(x, "ba7816bf8f01cfea414140de5dae2223");
}
END_TEST

START_TEST(event_names)
{
    ck_assert(pano_event_name_valid("kickstart.inv.start"));
    ck_assert(pano_event_name_valid("custom.metric"));
    ck_assert(pano_event_name_valid("stampede.job_inst.main.end"));
    ck_assert(!pano_event_name_valid(""));
    ck_assert(!pano_event_name_valid("a..b"));
    ck_assert(!pano_event_name_valid(".a"));
    ck_assert(!pano_event_name_valid("a."));
    ck_assert(!pano_event_name_valid("a b"));
    ck_assert(!pano_event_name_valid("a.#"));
    ck_assert(!pano_event_name_valid("a/../b"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("event");
    TCase *tc = tcase_create("envelope");
    tcase_add_test(tc, event_round_trip);
    tcase_add_test(tc, ids_are_unique_and_seq_counts);
    tcase_add_test(tc, deterministic_ids_for_content);
    tcase_add_test(tc, event_names);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
