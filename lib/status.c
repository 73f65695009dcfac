#include "status.h"

#include "http.h"
#include "mem.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pano_status {
    pano_http *http;
    pthread_mutex_t lock; /* the snapshot is replaced by the daemon, read by the server */
    char *text;
    size_t len;
};

static void serve(void *user, const pano_http_request *req, pano_http_reply *reply)
{
    pano_status *s = user;
    if (strcmp(pano_http_path(req), "/metrics") != 0) {
        reply->status = 404;
        pano_buf_append_str(&reply->body, "not found: the metrics are at /metrics\n");
        return;
    }
    reply->content_type = "text/plain; version=0.0.4; charset=utf-8";
    pthread_mutex_lock(&s->lock);
    pano_buf_append(&reply->body, s->text ? s->text : "", s->len);
    pthread_mutex_unlock(&s->lock);
}

pano_status *pano_status_new(const char *address, int port, char *err, size_t errlen)
{
    pano_status *s = pano_calloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pano_http_options o = {.address = address, .port = port < 0 ? 0 : port, .threads = 1};
    s->http = pano_http_start(&o, serve, s, err, errlen);
    if (!s->http) {
        pano_status_free(s);
        return NULL;
    }
    return s;
}

int pano_status_port(const pano_status *s) { return pano_http_port(s->http); }

void pano_status_publish(pano_status *s, const char *text, size_t len)
{
    char *copy = pano_malloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    pthread_mutex_lock(&s->lock);
    char *old = s->text;
    s->text = copy;
    s->len = len;
    pthread_mutex_unlock(&s->lock);
    free(old);
}

void pano_status_free(pano_status *s)
{
    if (!s)
        return;
    pano_http_stop(s->http); /* no request in progress after this */
    pthread_mutex_destroy(&s->lock);
    free(s->text);
    free(s);
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
            snprintf(err, errlen, "cannot write %s: %s", tmp,
                     n < 0 ? strerror(errno) : "short write");
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

const double pano_histogram_bounds[PANO_HISTOGRAM_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2.5, 5, 10,
};

void pano_histogram_observe(pano_histogram *h, double seconds)
{
    if (seconds < 0)
        seconds = 0;
    size_t i = 0;
    while (i < PANO_HISTOGRAM_BUCKETS && seconds > pano_histogram_bounds[i])
        i++;
    h->bucket[i]++;
    h->count++;
    h->sum += seconds;
}

void pano_histogram_format(pano_buf *out, const char *name, const char *help, const char *label,
                           const char *const *values, const pano_histogram *h, size_t n)
{
    pano_buf_appendf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (size_t k = 0; k < n; k++) {
        uint64_t below = 0;
        for (size_t i = 0; i <= PANO_HISTOGRAM_BUCKETS; i++) {
            below += h[k].bucket[i];
            if (i < PANO_HISTOGRAM_BUCKETS)
                pano_buf_appendf(out, "%s_bucket{%s=\"%s\",le=\"%g\"} %llu\n", name, label,
                                 values[k], pano_histogram_bounds[i], (unsigned long long)below);
            else
                pano_buf_appendf(out, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %llu\n", name, label,
                                 values[k], (unsigned long long)below);
        }
        pano_buf_appendf(out, "%s_sum{%s=\"%s\"} %.6f\n%s_count{%s=\"%s\"} %llu\n", name, label,
                         values[k], h[k].sum, name, label, values[k],
                         (unsigned long long)h[k].count);
    }
}
