#include "status.h"

#include "log.h"
#include "mem.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct pano_status {
    char *file;
    int listen_fd, port;
    int wake[2]; /* a pipe: writing to it stops the thread */
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    char *text;
    size_t len;
};

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void serve(pano_status *s, int fd)
{
    /* Read the request head (bounded, with a short timeout); whatever was
     * asked, answer with the metrics. */
    char req[2048];
    size_t got = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (got < sizeof req - 1 && poll(&p, 1, 1000) > 0) {
        ssize_t r = recv(fd, req + got, sizeof req - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
            break;
    }
    pthread_mutex_lock(&s->lock);
    char head[200];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      s->len);
    write_all(fd, head, (size_t)hl);
    if (strncmp(req, "HEAD ", 5) != 0)
        write_all(fd, s->text ? s->text : "", s->len);
    pthread_mutex_unlock(&s->lock);
}

static void *http_thread(void *arg)
{
    pano_status *s = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = s->listen_fd, .events = POLLIN},
                              {.fd = s->wake[0], .events = POLLIN}};
        int n = poll(p, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || p[1].revents)
            break;
        if (p[0].revents & POLLIN) {
            int fd = accept(s->listen_fd, NULL, NULL);
            if (fd >= 0) {
                serve(s, fd);
                close(fd);
            }
        }
    }
    return NULL;
}

pano_status *pano_status_new(const char *file, const char *address, int port, char *err,
                             size_t errlen)
{
    pano_status *s = pano_calloc(1, sizeof *s);
    s->listen_fd = s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    if (file && *file)
        s->file = pano_strdup(file);
    if (port == 0)
        return s;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port > 0 ? port : 0)};
    if (inet_pton(AF_INET, address, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "status address %s is not an IPv4 address", address);
        goto fail;
    }
    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (s->listen_fd < 0 ||
        setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(s->listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s->listen_fd, 16) < 0) {
        snprintf(err, errlen, "status port %s:%d: %s", address, port, strerror(errno));
        goto fail;
    }
    socklen_t sl = sizeof sa;
    if (getsockname(s->listen_fd, (struct sockaddr *)&sa, &sl) < 0) {
        snprintf(err, errlen, "status port: %s", strerror(errno));
        goto fail;
    }
    s->port = ntohs(sa.sin_port);
    if (pipe2(s->wake, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "status: pipe: %s", strerror(errno));
        goto fail;
    }
    /* The thread must not take the daemon's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int e = pthread_create(&s->thread, NULL, http_thread, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        snprintf(err, errlen, "status: cannot start a thread: %s", strerror(e));
        goto fail;
    }
    s->running = true;
    return s;
fail:
    pano_status_free(s);
    return NULL;
}

int pano_status_port(const pano_status *s) { return s->port; }

int pano_status_publish(pano_status *s, const char *text, size_t len)
{
    pthread_mutex_lock(&s->lock);
    free(s->text);
    s->text = pano_strndup(text, len);
    s->len = len;
    pthread_mutex_unlock(&s->lock);
    if (!s->file)
        return 0;
    char *tmp = pano_asprintf("%s.tmp.%d", s->file, (int)getpid());
    FILE *f = fopen(tmp, "w");
    int rc = 0;
    if (!f || fwrite(text, 1, len, f) != len) {
        rc = -1;
        if (f)
            fclose(f);
    } else if (fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, s->file) < 0)
        rc = -1;
    if (rc < 0) {
        pano_warn("cannot write the status file %s: %s", s->file, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

void pano_status_free(pano_status *s)
{
    if (!s)
        return;
    if (s->running) {
        ssize_t w;
        do
            w = write(s->wake[1], "x", 1);
        while (w < 0 && errno == EINTR);
        pthread_join(s->thread, NULL);
    }
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->wake[0] >= 0)
        close(s->wake[0]);
    if (s->wake[1] >= 0)
        close(s->wake[1]);
    pthread_mutex_destroy(&s->lock);
    free(s->text);
    free(s->file);
    free(s);
}
