/*
 * relay.h - pass a task's stdout or stderr through, byte for byte, while
 * watching it for MONITORING_PAYLOAD blocks.
 *
 * The task writes into a pipe; the monitor's main loop reads it when poll()
 * says so and writes the bytes to the monitor's own stdout/stderr, the file
 * description the task would otherwise have written to. A destination that
 * is a pipe or socket is written only when poll() says it has room, at most
 * PIPE_BUF bytes at a time, so the loop never blocks on a slow reader (the
 * task, as without the monitor, waits on its full pipe). When the
 * destination is closed (EPIPE), the pipe is closed too, so the task gets
 * the EPIPE/SIGPIPE it would have got.
 */
#ifndef PANO_MONITOR_RELAY_H
#define PANO_MONITOR_RELAY_H

#include "payload.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PANO_RELAY_BUF 65536

typedef struct {
    const char *name; /* "stdout", "stderr" or "stdout+stderr" */
    int in_fd;        /* read end of the task's pipe, -1 once closed */
    int out_fd;       /* where the bytes go */
    bool out_limited; /* pipe or socket: write at most PIPE_BUF after POLLOUT */
    char *buf;       /* PANO_RELAY_BUF bytes, touched only as output comes */
    size_t off, len; /* pending output */
    uint64_t bytes;  /* passed through so far */
    pano_payload_scanner *scanner; /* may be NULL */
} pano_relay;

/* Set up a relay from a pipe's read end to out_fd. */
void pano_relay_init(pano_relay *r, const char *name, int in_fd, int out_fd,
                     pano_payload_scanner *scanner);
/* Whether there is anything left to do (input open or output pending). */
bool pano_relay_active(const pano_relay *r);
/* Fill in the pollfd this relay waits on now (fd -1 when none). */
void pano_relay_poll_fd(const pano_relay *r, struct pollfd *pfd);
/* Act on the revents of that pollfd. */
void pano_relay_handle(pano_relay *r, short revents);
/* Stop reading (the linger time is over): close the pipe after writing
 * out, blocking, what was already read, and release the buffer. */
void pano_relay_close(pano_relay *r);

/* Descendants of the task still hold its output open after the linger
 * time: hand the open pipes to a small child process that keeps copying
 * them (without scanning) until they close, so the monitor can exit and
 * late output is neither lost nor answered with EPIPE. The child closes
 * every other descriptor (the broker connection above all). Returns the
 * child's pid, or -1 (the pipes are then closed). */
pid_t pano_relay_detach(pano_relay *relays, size_t n);

#endif
