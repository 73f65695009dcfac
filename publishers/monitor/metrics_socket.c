/*
 * metrics_socket.c - metrics from the task's processes over a datagram
 * socket (metrics_socket.h).
 */
#include "metrics_socket.h"

#include "log.h"
#include "mem.h"
#include "metric.h"
#include "proctree.h"
#include "statsd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DATAGRAM_MAX 65536
#define ACCEPTED_MAX 64

struct pano_metrics_socket {
    int fd;
    char dir[88]; /* with "/metrics.sock", within sun_path */
    struct sockaddr_un addr;
    pano_source *src;
    int level;
    void (*emit)(pano_json *ev, void *user);
    void *user;
    pid_t accepted[ACCEPTED_MAX]; /* pids found in the tree, since the last reaping */
    size_t naccepted, next_accepted; /* how many; where the next one goes (the oldest) */
    pano_metrics_socket_counts n;
    char buf[DATAGRAM_MAX + 1];
    pano_statsd_metric metric;
};

pano_metrics_socket *pano_metrics_socket_open(pano_source *src, int level,
                                              void (*emit)(pano_json *ev, void *user),
                                              void *user, char *err, size_t errlen)
{
    pano_metrics_socket *s = pano_calloc(1, sizeof *s);
    s->fd = -1;
    s->src = src;
    s->level = level;
    s->emit = emit;
    s->user = user;
    const char *base = getenv("XDG_RUNTIME_DIR");
    if (!base || base[0] != '/' || access(base, W_OK | X_OK) < 0)
        base = getenv("TMPDIR");
    if (!base || base[0] != '/' || access(base, W_OK | X_OK) < 0)
        base = "/tmp";
    int n = snprintf(s->dir, sizeof s->dir, "%s/pano-monitor-XXXXXX", base);
    s->addr.sun_family = AF_UNIX;
    if (n < 0 || (size_t)n >= sizeof s->dir) {
        snprintf(err, errlen, "the metrics socket's directory %s is too long a path", base);
        free(s);
        return NULL;
    }
    if (!mkdtemp(s->dir)) { /* 0700 */
        snprintf(err, errlen, "cannot make %s: %s", s->dir, strerror(errno));
        free(s);
        return NULL;
    }
    snprintf(s->addr.sun_path, sizeof s->addr.sun_path, "%s/metrics.sock", s->dir);
    int on = 1;
    s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&s->addr, sizeof s->addr) < 0 ||
        setsockopt(s->fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0) {
        snprintf(err, errlen, "metrics socket %s: %s", s->addr.sun_path, strerror(errno));
        pano_metrics_socket_close(s);
        return NULL;
    }
    return s;
}

const char *pano_metrics_socket_path(const pano_metrics_socket *s)
{
    return s->addr.sun_path;
}

int pano_metrics_socket_fd(const pano_metrics_socket *s)
{
    return s->fd;
}

const pano_metrics_socket_counts *pano_metrics_socket_counts_of(const pano_metrics_socket *s)
{
    return &s->n;
}

void pano_metrics_socket_forget_pids(pano_metrics_socket *s)
{
    s->naccepted = s->next_accepted = 0;
}

/* Whether pid's parents lead to the monitor; a process already gone
 * (whose datagram was still queued) counts as in it: only the monitor's
 * user can reach the socket. */
static bool in_tree(pano_metrics_socket *s, pid_t pid)
{
    for (size_t i = 0; i < s->naccepted; i++)
        if (s->accepted[i] == pid)
            return true;
    pid_t self = getpid(), p = pid;
    bool found = false;
    for (int depth = 0; depth < 256 && p > 1; depth++) {
        if (p == self) {
            found = depth > 0;
            break;
        }
        char path[64], line[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            found = p == pid && errno == ENOENT;
            break;
        }
        ssize_t len = read(fd, line, sizeof line - 1);
        close(fd);
        pano_proc_stat st;
        if (len <= 0 || !pano_proc_stat_parse(line, (size_t)len, &st))
            break;
        p = st.ppid;
    }
    if (found) {
        s->accepted[s->next_accepted] = pid;
        s->next_accepted = (s->next_accepted + 1) % ACCEPTED_MAX;
        if (s->naccepted < ACCEPTED_MAX)
            s->naccepted++;
    }
    return found;
}

/* One line of a datagram from pid. */
static void read_line(pano_metrics_socket *s, const char *line, size_t len, pid_t pid)
{
    char err[256];
    pano_statsd_metric *m = &s->metric;
    pano_json *ev = NULL;
    if (pano_statsd_parse(line, len, m, err, sizeof err) == 0) {
        if (m->level > s->level) {
            s->n.above_level++;
            return;
        }
        ev = pano_metric_event(s->src, m->name, m->value, m->level, m->tags, err, sizeof err);
    }
    if (!ev) {
        if (s->n.bad_lines++ == 0)
            pano_warn("metrics socket: a line from pid %d refused (%s): %.*s; the lines "
                      "refused are counted in the end event",
                      (int)pid, err, (int)(len > 200 ? 200 : len), line);
        return;
    }
    pano_json_set_int(ev, "pid", pid);
    pano_json_set_str(ev, "kind", m->kind);
    s->n.metrics++;
    s->emit(ev, s->user);
}

void pano_metrics_socket_read(pano_metrics_socket *s)
{
    for (;;) {
        union {
            struct cmsghdr h;
            char space[CMSG_SPACE(sizeof(struct ucred))];
        } control;
        struct iovec iov = {.iov_base = s->buf, .iov_len = DATAGRAM_MAX};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = &control,
                             .msg_controllen = sizeof control};
        ssize_t len = recvmsg(s->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (len < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                pano_warn("metrics socket: %s", strerror(errno));
            if (errno != EINTR)
                return;
            continue;
        }
        s->n.datagrams++;
        pid_t pid = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                struct ucred cred;
                memcpy(&cred, CMSG_DATA(c), sizeof cred);
                pid = cred.pid;
            }
        if (pid <= 0 || !in_tree(s, pid)) {
            if (s->n.refused++ == 0)
                pano_warn("metrics socket: a datagram from pid %d, not a process of the task, "
                          "refused; those refused are counted in the end event",
                          (int)pid);
            continue;
        }
        if (msg.msg_flags & MSG_TRUNC) {
            if (s->n.bad_lines++ == 0)
                pano_warn("metrics socket: a datagram from pid %d longer than %d bytes refused",
                          (int)pid, DATAGRAM_MAX);
            continue;
        }
        for (char *line = s->buf, *end = s->buf + len; line < end;) {
            char *nl = memchr(line, '\n', (size_t)(end - line));
            size_t n = (size_t)((nl ? nl : end) - line);
            if (n > 0 && line[n - 1] == '\r')
                n--;
            if (n > 0)
                read_line(s, line, n, pid);
            line = nl ? nl + 1 : end;
        }
    }
}

void pano_metrics_socket_close(pano_metrics_socket *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->addr.sun_path[0] && unlink(s->addr.sun_path) < 0 && errno != ENOENT)
        pano_warn("cannot remove %s: %s", s->addr.sun_path, strerror(errno));
    if (rmdir(s->dir) < 0)
        pano_warn("cannot remove %s: %s", s->dir, strerror(errno));
    free(s);
}
