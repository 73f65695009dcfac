/* The Elasticsearch client's requests whose answers are read as they
 * arrive (pano_es_request_to), against the project's own HTTP server
 * standing in for Elasticsearch. */
#include "buf.h"
#include "config.h"
#include "es.h"
#include "http.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (3 << 20) /* more than one piece of an answer */

static void answer(void *user, const pano_http_request *req, pano_http_reply *reply)
{
    (void)user;
    reply->content_type = "application/json";
    if (strcmp(pano_http_path(req), "/big") == 0) {
        static char big[BIG + 2];
        big[0] = big[BIG + 1] = '"';
        for (size_t i = 0; i < BIG; i++)
            big[i + 1] = "abcdefghij"[i % 10];
        pano_buf_append(&reply->body, big, sizeof big);
        return;
    }
    reply->status = 400;
    pano_buf_appendf(&reply->body, "{\"error\":{\"reason\":\"no such index\"},\"status\":400}");
}

typedef struct {
    pano_buf got;
    size_t pieces, stop_after;
} sink_state;

static bool take(void *user, const char *data, size_t len)
{
    sink_state *s = user;
    pano_buf_append(&s->got, data, len);
    return ++s->pieces != s->stop_after;
}

static pano_http *server;
static pano_es *es;

static void setup(void)
{
    char err[256];
    pano_http_options o = {0};
    server = pano_http_start(&o, answer, NULL, err, sizeof err);
    ck_assert_msg(server, "%s", err);
    pano_config *cfg = pano_config_new();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", pano_http_port(server));
    ck_assert_int_eq(pano_config_set(cfg, "pano.es.url", url, PANO_CFG_CLI, err, sizeof err), 0);
    es = pano_es_new(cfg, err, sizeof err);
    ck_assert_msg(es, "%s", err);
    pano_config_free(cfg);
}

static void teardown(void)
{
    pano_es_free(es);
    pano_http_stop(server);
}

/* GET path, its successful answer to s: pano_es_request_to's return. */
static int ask(const char *path, sink_state *s, pano_es_response *r, char *err, size_t errlen)
{
    return pano_es_request_to(es, "GET", path, NULL, 0, take, s, r, err, errlen);
}

START_TEST(a_success_goes_to_the_sink_as_it_arrives)
{
    sink_state s = {0};
    pano_es_response r;
    char err[256];
    ck_assert_int_eq(ask("/big", &s, &r, err, sizeof err), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, 0); /* nothing held */
    ck_assert_uint_eq(s.got.len, BIG + 2);
    ck_assert(s.pieces > 1);
    size_t wrong = 0;
    for (size_t i = 0; i < BIG; i++)
        wrong += s.got.data[i + 1] != "abcdefghij"[i % 10];
    ck_assert_uint_eq(wrong, 0);
    pano_es_response_free(&r);
    pano_buf_free(&s.got);
}
END_TEST

START_TEST(a_refusal_is_collected_for_its_reason)
{
    sink_state s = {0};
    pano_es_response r;
    char err[256];
    ck_assert_int_eq(ask("/missing", &s, &r, err, sizeof err), 0);
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(r.body, "{\"error\":{\"reason\":\"no such index\"},\"status\":400}");
    ck_assert_uint_eq(s.pieces, 0);
    pano_es_response_free(&r);
    /* the handle is reused: a plain request after it collects as before */
    ck_assert_int_eq(pano_es_request(es, "GET", "/big", NULL, 0, &r, err, sizeof err), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, BIG + 2);
    pano_es_response_free(&r);
}
END_TEST

START_TEST(a_sink_that_refuses_stops_the_request)
{
    sink_state s = {.stop_after = 1};
    pano_es_response r;
    char err[256];
    ck_assert_int_eq(ask("/big", &s, &r, err, sizeof err), -1);
    ck_assert_uint_eq(s.pieces, 1);
    ck_assert_msg(strstr(err, "stopped by its reader"), "%s", err);
    pano_buf_free(&s.got);
    /* and the client goes on */
    s = (sink_state){0};
    ck_assert_int_eq(ask("/big", &s, &r, err, sizeof err), 0);
    ck_assert_uint_eq(s.got.len, BIG + 2);
    pano_es_response_free(&r);
    pano_buf_free(&s.got);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("es");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_success_goes_to_the_sink_as_it_arrives);
    tcase_add_test(tc, a_refusal_is_collected_for_its_reason);
    tcase_add_test(tc, a_sink_that_refuses_stops_the_request);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
