/* A daemon's metrics endpoint and status file (lib/status.h). */
#include "buf.h"
#include "status.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

START_TEST(status_file)
{
    char dir[] = "/tmp/pano-status-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/bridge.prom", dir);
    ck_assert_int_eq(pano_status_write_file(path, "a 1\n", 4, err, sizeof err), 0);
    ck_assert_int_eq(pano_status_write_file(path, "b 2\n", 4, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[64] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    ck_assert_str_eq(line, "b 2\n");
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(dir), 0); /* no temporary file left behind */
    ck_assert_int_eq(pano_status_write_file("/nonexistent/dir/x.prom", "a", 1, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/dir"));
}
END_TEST

/* One request on a fresh connection; the whole reply (the server closes). */
static char *fetch(const pano_status *s, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)pano_status_port(s))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    ck_assert_int_eq(send(fd, request, strlen(request), 0), (ssize_t)strlen(request));
    pano_buf reply = {0};
    char buf[4096];
    ssize_t r;
    while ((r = recv(fd, buf, sizeof buf, 0)) > 0)
        pano_buf_append(&reply, buf, (size_t)r);
    ck_assert_int_eq(r, 0);
    close(fd);
    return reply.data ? reply.data : strdup("");
}

START_TEST(http_endpoint)
{
    char err[256];
    pano_status *s = pano_status_new("127.0.0.1", -1, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    ck_assert_int_gt(pano_status_port(s), 0);

    /* before the first snapshot: an empty document, not an error */
    char *reply = fetch(s, "GET /metrics HTTP/1.0\r\n\r\n");
    ck_assert_msg(strncmp(reply, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", reply);
    ck_assert_ptr_nonnull(strstr(reply, "\r\n\r\n"));
    ck_assert_str_eq(strstr(reply, "\r\n\r\n"), "\r\n\r\n");
    free(reply);

    const char *text = "# TYPE pano_x_total counter\npano_x_total 10\n";
    pano_status_publish(s, text, strlen(text));
    pano_status_publish(s, text, strlen(text) - 3); /* the latest one is served */
    reply = fetch(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    ck_assert_msg(strncmp(reply, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", reply);
    ck_assert_ptr_nonnull(strstr(reply, "Content-Type: text/plain; version=0.0.4"));
    ck_assert_str_eq(strstr(reply, "\r\n\r\n") + 4, "# TYPE pano_x_total counter\npano_x_total ");
    free(reply);

    reply = fetch(s, "GET / HTTP/1.0\r\n\r\n");
    ck_assert_msg(strncmp(reply, "HTTP/1.1 404", 12) == 0, "%s", reply);
    free(reply);
    reply = fetch(s, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
    ck_assert_msg(strncmp(reply, "HTTP/1.1 405", 12) == 0, "%s", reply);
    ck_assert_ptr_nonnull(strstr(reply, "Allow: GET, HEAD"));
    free(reply);

    /* the port is taken now */
    ck_assert_ptr_null(pano_status_new("127.0.0.1", pano_status_port(s), err, sizeof err));
    ck_assert_msg(err[0] != '\0', "no reason given");
    pano_status_free(s);
}
END_TEST

START_TEST(histogram)
{
    pano_histogram h[2] = {0};
    pano_histogram_observe(&h[0], 0.004);  /* first bucket */
    pano_histogram_observe(&h[0], 0.005);  /* a bound belongs to its bucket */
    pano_histogram_observe(&h[0], 0.8);    /* 1 s */
    pano_histogram_observe(&h[0], 99);     /* +Inf */
    pano_histogram_observe(&h[1], -0.001); /* clock skew counts as 0 */
    pano_buf out = {0};
    const char *names[] = {"a", "b"};
    pano_histogram_format(&out, "pano_x_seconds", "Test.", "stage", names, h, 2);
    pano_buf_append(&out, "", 1);
    const char *t = out.data;
    ck_assert_ptr_nonnull(strstr(t, "# TYPE pano_x_seconds histogram\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_bucket{stage=\"a\",le=\"0.005\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_bucket{stage=\"a\",le=\"0.75\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_bucket{stage=\"a\",le=\"1\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_bucket{stage=\"a\",le=\"10\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_bucket{stage=\"a\",le=\"+Inf\"} 4\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_sum{stage=\"a\"} 99.809000\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_count{stage=\"a\"} 4\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_bucket{stage=\"b\",le=\"0.005\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(t, "pano_x_seconds_count{stage=\"b\"} 1\n"));
    pano_buf_free(&out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("status");
    tcase_add_test(tc, status_file);
    tcase_add_test(tc, http_endpoint);
    tcase_add_test(tc, histogram);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
