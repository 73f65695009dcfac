/* pano-bridge's metrics: Prometheus text, the status file and the HTTP
 * endpoint (broker-bridge/status.h). */
#include "buf.h"
#include "event.h"
#include "status.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static pano_bridge_metrics sample(void)
{
    pano_bridge_metrics m = {.received = 10, .received_bytes = 4000, .dead_lettered = 2,
                             .acked = 9, .in_flight = 1, .amqp_connected = true,
                             .consuming = true, .start_time = 1700000000.5,
                             .duplicates_skipped = 3, .dedup_ids = 6, .dedup_bytes = 2621536};
    m.produced[0] = 7; /* kickstart */
    m.produced[5] = 1; /* other */
    return m;
}

START_TEST(render)
{
    pano_bridge_metrics m = sample();
    pano_buf out = {0};
    pano_status_render(&m, pano_event_families, &out);
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE pano_bridge_messages_received_total counter\n"
                                           "pano_bridge_messages_received_total 10\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_events_produced_total{family=\"kickstart\"} 7\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_events_produced_total{family=\"other\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_messages_dead_lettered_total 2\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE pano_bridge_messages_in_flight gauge\n"
                                           "pano_bridge_messages_in_flight 1\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE pano_bridge_duplicates_skipped_total counter\n"
                                           "pano_bridge_duplicates_skipped_total 3\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_dedup_window_ids 6\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE pano_bridge_dedup_window_bytes gauge\n"
                                           "pano_bridge_dedup_window_bytes 2621536\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "pano_bridge_start_time_seconds 1700000000.500\n"));
    /* every sample line is "name[{labels}] value" */
    char *save, *copy = strdup(out.data);
    int samples = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        ck_assert_msg(strncmp(line, "pano_bridge_", 12) == 0, "bad line: %s", line);
        const char *space = strrchr(line, ' ');
        ck_assert_ptr_nonnull(space);
        char *end;
        strtod(space + 1, &end);
        ck_assert_msg(*end == '\0', "bad value: %s", line);
        samples++;
    }
    ck_assert_int_ge(samples, 20);
    free(copy);
    pano_buf_free(&out);
}
END_TEST

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

static void render_sample(void *user, pano_buf *out)
{
    pano_status_render(user, pano_event_families, out);
}

/* Send a request to the server, serving it until the reply is complete. */
static char *fetch(pano_status_server *s, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)pano_status_port(s))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    ck_assert_int_eq(send(fd, request, strlen(request), 0), (ssize_t)strlen(request));
    pano_bridge_metrics m = sample();
    pano_buf reply = {0};
    for (int round = 0; round < 500; round++) {
        struct pollfd fds[20];
        size_t n = pano_status_pollfds(s, fds, 19);
        ck_assert_int_ge(poll(fds, n, 10), 0);
        pano_status_handle(s, fds, n, render_sample, &m);
        char buf[4096];
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0)
            break;
        if (r > 0)
            pano_buf_append(&reply, buf, (size_t)r);
    }
    close(fd);
    return reply.data ? reply.data : strdup("");
}

START_TEST(http_endpoint)
{
    char err[256];
    pano_status_server *s = pano_status_listen(0, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    ck_assert_int_gt(pano_status_port(s), 0);

    char *reply = fetch(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    ck_assert_msg(strncmp(reply, "HTTP/1.0 200 OK\r\n", 17) == 0, "%s", reply);
    ck_assert_ptr_nonnull(strstr(reply, "Content-Type: text/plain; version=0.0.4"));
    ck_assert_ptr_nonnull(strstr(reply, "\r\n\r\n# HELP pano_bridge_messages_received_total"));
    ck_assert_ptr_nonnull(strstr(reply, "pano_bridge_messages_received_total 10\n"));
    free(reply);

    reply = fetch(s, "GET / HTTP/1.0\r\n\r\n");
    ck_assert_msg(strncmp(reply, "HTTP/1.0 404", 12) == 0, "%s", reply);
    free(reply);
    reply = fetch(s, "POST /metrics HTTP/1.0\r\n\r\n");
    ck_assert_msg(strncmp(reply, "HTTP/1.0 405", 12) == 0, "%s", reply);
    free(reply);

    /* the port is taken now */
    ck_assert_ptr_null(pano_status_listen(pano_status_port(s), err, sizeof err));
    pano_status_close(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("status");
    tcase_add_test(tc, render);
    tcase_add_test(tc, status_file);
    tcase_add_test(tc, http_endpoint);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
