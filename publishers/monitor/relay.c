#include "relay.h"

#include "log.h"
#include "mem.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void pano_relay_init(pano_relay *r, const char *name, int in_fd, int out_fd,
                     pano_payload_scanner *scanner)
{
    memset(r, 0, sizeof *r);
    /* Not zeroed: its pages are mapped only when the task writes that much. */
    r->buf = pano_malloc(PANO_RELAY_BUF);
    r->name = name;
    r->in_fd = in_fd;
    r->out_fd = out_fd;
    r->scanner = scanner;
    struct stat st;
    r->out_limited = fstat(out_fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

bool pano_relay_active(const pano_relay *r) { return r->in_fd >= 0 || r->len > r->off; }

void pano_relay_poll_fd(const pano_relay *r, struct pollfd *pfd)
{
    pfd->revents = 0;
    if (r->len > r->off) { /* write out what was read before reading more */
        pfd->fd = r->out_fd;
        pfd->events = POLLOUT;
    } else if (r->in_fd >= 0) {
        pfd->fd = r->in_fd;
        pfd->events = POLLIN;
    } else
        pfd->fd = -1;
}

static void close_input(pano_relay *r)
{
    if (r->in_fd >= 0) {
        close(r->in_fd);
        r->in_fd = -1;
    }
    if (r->scanner)
        pano_payload_finish(r->scanner);
}

/* Write pending bytes. limited: one chunk that cannot block. */
static void write_out(pano_relay *r, bool limited)
{
    while (r->len > r->off) {
        size_t n = r->len - r->off;
        if (limited && n > PIPE_BUF)
            n = PIPE_BUF;
        ssize_t w = write(r->out_fd, r->buf + r->off, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w < 0) {
            /* The reader went away: so does the pipe, as if the task had
             * written there itself. */
            pano_debug("%s: %s; closing the task's %s", r->name, strerror(errno), r->name);
            r->off = r->len = 0;
            close_input(r);
            return;
        }
        r->off += (size_t)w;
        if (limited)
            break;
    }
    if (r->off == r->len)
        r->off = r->len = 0;
}

void pano_relay_handle(pano_relay *r, short revents)
{
    if (!revents)
        return;
    if (r->len > r->off) {
        write_out(r, r->out_limited);
        return;
    }
    if (r->in_fd < 0)
        return;
    ssize_t n = read(r->in_fd, r->buf, PANO_RELAY_BUF);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n <= 0) {
        if (n < 0)
            pano_warn("reading the task's %s: %s", r->name, strerror(errno));
        close_input(r);
        return;
    }
    r->bytes += (uint64_t)n;
    r->off = 0;
    r->len = (size_t)n;
    if (r->scanner)
        pano_payload_feed(r->scanner, r->buf, r->len);
    /* A file takes the bytes at once; a pipe only when poll() says it has
     * room (a write could block otherwise). */
    if (!r->out_limited)
        write_out(r, false);
}

void pano_relay_close(pano_relay *r)
{
    write_out(r, false);
    close_input(r);
    free(r->buf);
    r->buf = NULL;
}

pid_t pano_relay_detach(pano_relay *relays, size_t n)
{
    for (size_t i = 0; i < n; i++)
        write_out(&relays[i], false);
    pid_t pid = fork();
    if (pid < 0)
        pano_warn("cannot fork an output relay: %s", strerror(errno));
    if (pid != 0) {
        /* The parent lets go of the pipes; the child (if any) has them. */
        for (size_t i = 0; i < n; i++)
            if (relays[i].in_fd >= 0) {
                close(relays[i].in_fd);
                relays[i].in_fd = -1;
            }
        return pid;
    }
    /* The child of a multithreaded process: no logging (another thread may
     * have held stdio's lock at fork time), no allocation. Only the pipes
     * (moved to 3, 4) and stdin/stdout/stderr stay open. */
    pano_log_set_level((pano_log_level)-1);
    int fds[2] = {-1, -1};
    for (size_t i = 0; i < n && i < 2; i++) {
        relays[i].scanner = NULL;
        if (relays[i].in_fd < 0)
            continue;
        fds[i] = fcntl(relays[i].in_fd, F_DUPFD_CLOEXEC, 10);
        if (fds[i] < 0)
            _exit(1);
    }
    for (size_t i = 0; i < n && i < 2; i++)
        if (fds[i] >= 0) {
            if (dup2(fds[i], (int)(3 + i)) < 0)
                _exit(1);
            relays[i].in_fd = (int)(3 + i);
        }
    closefrom(5);
    for (;;) {
        struct pollfd pfd[2];
        bool any = false;
        for (size_t i = 0; i < n && i < 2; i++) {
            pano_relay_poll_fd(&relays[i], &pfd[i]);
            any |= pfd[i].fd >= 0;
        }
        if (!any)
            _exit(0);
        if (poll(pfd, (nfds_t)(n < 2 ? n : 2), -1) < 0 && errno != EINTR)
            _exit(1);
        for (size_t i = 0; i < n && i < 2; i++)
            pano_relay_handle(&relays[i], pfd[i].revents);
    }
}
