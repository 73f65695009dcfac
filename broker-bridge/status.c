#include "status.h"

#include "event.h"
#include "mem.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- rendering --------------------------------------------------------- */

static void metric(pano_buf *out, const char *type, const char *name, const char *help,
                   uint64_t value)
{
    pano_buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", name, help, name, type,
                     name, value);
}

void pano_status_render(const pano_bridge_metrics *m, const char *const *families,
                        pano_buf *out)
{
    metric(out, "counter", "pano_bridge_messages_received_total",
           "AMQP messages received from RabbitMQ.", m->received);
    metric(out, "counter", "pano_bridge_received_bytes_total",
           "Bytes of AMQP message bodies received.", m->received_bytes);
    metric(out, "counter", "pano_bridge_messages_redelivered_total",
           "Messages RabbitMQ marked as redelivered.", m->redelivered);
    pano_buf_appendf(out, "# HELP pano_bridge_events_produced_total Events Kafka persisted, "
                          "by family.\n# TYPE pano_bridge_events_produced_total counter\n");
    for (size_t i = 0; i < PANO_STATUS_FAMILIES && families[i]; i++)
        pano_buf_appendf(out, "pano_bridge_events_produced_total{family=\"%s\"} %" PRIu64 "\n",
                         families[i], m->produced[i]);
    metric(out, "counter", "pano_bridge_messages_dead_lettered_total",
           "Invalid messages Kafka persisted in the dead-letter topic.", m->dead_lettered);
    metric(out, "counter", "pano_bridge_messages_rejected_to_dlx_total",
           "Messages rejected to the queue's dead-letter exchange (Kafka refused even "
           "their dead-letter record).",
           m->rejected_to_dlx);
    metric(out, "counter", "pano_bridge_messages_acked_total",
           "Messages acknowledged to RabbitMQ.", m->acked);
    metric(out, "counter", "pano_bridge_kafka_delivery_errors_total",
           "Kafka delivery reports that did not say persisted.", m->delivery_errors);
    metric(out, "counter", "pano_bridge_produce_retries_total",
           "Messages produced again after a failure.", m->produce_retries);
    metric(out, "counter", "pano_bridge_amqp_connections_total",
           "Successful connections to RabbitMQ.", m->amqp_connections);
    metric(out, "counter", "pano_bridge_amqp_disconnects_total",
           "Lost or closed RabbitMQ connections.", m->amqp_disconnects);
    metric(out, "counter", "pano_bridge_producer_restarts_total",
           "Kafka producers replaced after a fatal error.", m->producer_restarts);
    metric(out, "counter", "pano_bridge_hold_timeouts_total",
           "Times unconfirmed messages were handed back to RabbitMQ because Kafka "
           "confirmed nothing for too long.",
           m->hold_timeouts);
    metric(out, "counter", "pano_bridge_duplicates_skipped_total",
           "Messages acknowledged without producing them: copies of an event whose "
           "Kafka delivery was confirmed (same event_id).",
           m->duplicates_skipped);
    metric(out, "gauge", "pano_bridge_messages_in_flight",
           "Messages received and not yet acknowledged.", m->in_flight);
    metric(out, "gauge", "pano_bridge_kafka_queue_messages",
           "Messages in librdkafka's queues, waiting for a delivery report.", m->kafka_queue);
    metric(out, "gauge", "pano_bridge_retry_queue_messages",
           "Messages waiting to be produced again.", m->retry_queue);
    metric(out, "gauge", "pano_bridge_dedup_window_ids",
           "Event ids of confirmed events remembered to skip copies of them.", m->dedup_ids);
    metric(out, "gauge", "pano_bridge_dedup_window_bytes",
           "Memory of the window of remembered event ids.", m->dedup_bytes);
    metric(out, "gauge", "pano_bridge_amqp_connected", "1 while connected to RabbitMQ.",
           m->amqp_connected);
    metric(out, "gauge", "pano_bridge_consuming", "1 while consuming the queue.", m->consuming);
    metric(out, "gauge", "pano_bridge_kafka_stalled",
           "1 while Kafka confirms nothing although messages wait.", m->kafka_stalled);
    pano_buf_appendf(out,
                     "# HELP pano_bridge_start_time_seconds Start time of the process, "
                     "seconds since the epoch.\n"
                     "# TYPE pano_bridge_start_time_seconds gauge\n"
                     "pano_bridge_start_time_seconds %.3f\n",
                     m->start_time);
}

int pano_status_write_file(const char *path, const char *text, size_t len, char *err,
                           size_t errlen)
{
    char *tmp = pano_asprintf("%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", tmp, n < 0 ? strerror(errno) : "short write");
            close(fd);
            unlink(tmp);
            free(tmp);
            return -1;
        }
        off += (size_t)n;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        snprintf(err, errlen, "cannot replace %s: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

/* ---- HTTP -------------------------------------------------------------- */

#define MAX_CLIENTS 16
#define CLIENT_TIMEOUT 5.0

typedef struct {
    int fd;
    char in[2048];
    size_t in_len;
    pano_buf out;
    size_t out_off;
    bool responding;
    double since;
} client;

struct pano_status_server {
    int fd;
    int port;
    client clients[MAX_CLIENTS];
};

pano_status_server *pano_status_listen(int port, char *err, size_t errlen)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "status endpoint: socket: %s", strerror(errno));
        return NULL;
    }
    int one = 1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof addr;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &alen) < 0) {
        snprintf(err, errlen, "status endpoint on 127.0.0.1:%d: %s", port, strerror(errno));
        close(fd);
        return NULL;
    }
    pano_status_server *s = pano_calloc(1, sizeof *s);
    s->fd = fd;
    s->port = ntohs(addr.sin_port);
    for (size_t i = 0; i < MAX_CLIENTS; i++)
        s->clients[i].fd = -1;
    return s;
}

int pano_status_port(const pano_status_server *s) { return s->port; }

static void drop(client *c)
{
    close(c->fd);
    c->fd = -1;
    pano_buf_free(&c->out);
    c->out_off = 0;
    c->in_len = 0;
    c->responding = false;
}

void pano_status_close(pano_status_server *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < MAX_CLIENTS; i++)
        if (s->clients[i].fd >= 0)
            drop(&s->clients[i]);
    close(s->fd);
    free(s);
}

size_t pano_status_pollfds(pano_status_server *s, struct pollfd *fds, size_t max)
{
    size_t n = 0;
    if (n < max)
        fds[n++] = (struct pollfd){.fd = s->fd, .events = POLLIN};
    for (size_t i = 0; i < MAX_CLIENTS && n < max; i++)
        if (s->clients[i].fd >= 0)
            fds[n++] = (struct pollfd){.fd = s->clients[i].fd,
                                       .events = s->clients[i].responding ? POLLOUT : POLLIN};
    return n;
}

static void respond(client *c, const char *status, const char *type, const char *body,
                    size_t len)
{
    pano_buf_clear(&c->out);
    pano_buf_appendf(&c->out,
                     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, type, len);
    pano_buf_append(&c->out, body, len);
    c->out_off = 0;
    c->responding = true;
}

static void handle_request(client *c, pano_status_render_fn render, void *user)
{
    c->in[c->in_len < sizeof c->in ? c->in_len : sizeof c->in - 1] = '\0';
    char method[16] = "", path[256] = "";
    if (sscanf(c->in, "%15s %255s", method, path) != 2) {
        respond(c, "400 Bad Request", "text/plain", "bad request\n", 12);
        return;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        respond(c, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
        return;
    }
    if (strcmp(path, "/metrics") != 0 && strncmp(path, "/metrics?", 9) != 0) {
        static const char text[] = "pano-bridge: metrics are at /metrics\n";
        respond(c, "404 Not Found", "text/plain", text, sizeof text - 1);
        return;
    }
    pano_buf body = {0};
    render(user, &body);
    respond(c, "200 OK", "text/plain; version=0.0.4; charset=utf-8",
            strcmp(method, "HEAD") == 0 ? "" : (body.data ? body.data : ""),
            strcmp(method, "HEAD") == 0 ? 0 : body.len);
    pano_buf_free(&body);
}

void pano_status_handle(pano_status_server *s, const struct pollfd *fds, size_t n,
                        pano_status_render_fn render, void *user)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    for (size_t k = 0; k < n; k++) {
        if (!fds[k].revents)
            continue;
        if (fds[k].fd == s->fd) {
            for (;;) {
                int cfd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0)
                    break; /* EAGAIN, or an error that the next poll reports again */
                client *c = NULL;
                for (size_t i = 0; i < MAX_CLIENTS && !c; i++)
                    if (s->clients[i].fd < 0)
                        c = &s->clients[i];
                if (!c) {
                    close(cfd); /* too many at once */
                    continue;
                }
                *c = (client){.fd = cfd, .since = now};
            }
            continue;
        }
        client *c = NULL;
        for (size_t i = 0; i < MAX_CLIENTS && !c; i++)
            if (s->clients[i].fd == fds[k].fd)
                c = &s->clients[i];
        if (!c)
            continue;
        if (c->responding) {
            ssize_t w = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0)
                c->out_off += (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || c->out_off >= c->out.len)
                drop(c);
            continue;
        }
        ssize_t r = recv(c->fd, c->in + c->in_len, sizeof c->in - 1 - c->in_len, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            drop(c);
            continue;
        }
        if (r > 0)
            c->in_len += (size_t)r;
        c->in[c->in_len] = '\0';
        if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n") || c->in_len >= sizeof c->in - 1)
            handle_request(c, render, user);
    }
    for (size_t i = 0; i < MAX_CLIENTS; i++)
        if (s->clients[i].fd >= 0 && now - s->clients[i].since > CLIENT_TIMEOUT)
            drop(&s->clients[i]);
}
