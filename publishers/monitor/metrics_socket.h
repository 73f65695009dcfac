/*
 * metrics_socket.h - the socket through which the task's own processes send
 * pano-monitor metrics, from any language, without a connection of their
 * own: a Unix datagram socket, metrics.sock in a directory only the
 * monitor's user can enter (0700, under $XDG_RUNTIME_DIR, else $TMPDIR,
 * else /tmp), its path given to the task as PANO_METRICS_SOCKET.
 *
 * A datagram holds DogStatsD lines (statsd.h); each good line becomes a
 * custom.metric event with the job's envelope, the sender's pid and its
 * kind, sent on the monitor's own connection (or into the embedded store),
 * when its level is at or below the monitor's. The kernel gives every
 * datagram's sender credentials (SO_PASSCRED): a datagram from a process
 * outside the task's tree is refused whole. Bad lines and refused
 * datagrams are counted and the first of each logged; nothing is fatal.
 * The monitor never blocks on it, and a sender need not either: with a
 * non-blocking send, a socket whose queue is full answers EAGAIN, which the
 * sender counts as a drop (metric.h, the Python package).
 *
 * A process of the tree is one whose parents lead to the monitor (orphans
 * are re-parented to it). Accepted pids are remembered until the monitor
 * next reaps a process; a pid reused meanwhile by a process outside the
 * tree (the kernel's pid space would have to wrap) would be taken for it.
 */
#ifndef PANO_MONITOR_METRICS_SOCKET_H
#define PANO_MONITOR_METRICS_SOCKET_H

#include "event.h"
#include "json.h"
#include "metric.h"

#include <stdint.h>
#include <sys/types.h>

typedef struct pano_metrics_socket pano_metrics_socket;

typedef struct {
    uint64_t datagrams;   /* read */
    uint64_t metrics;     /* lines made events */
    uint64_t above_level; /* good lines above the monitor's level: not sent */
    uint64_t bad_lines;   /* lines refused (statsd.h, metric.h) */
    uint64_t refused;     /* datagrams from outside the task's tree */
} pano_metrics_socket_counts;

/* Make the directory and bind the socket, for metrics up to level; the
 * events are made with src and handed to emit(event, user), which takes
 * them. NULL with a message in err. */
pano_metrics_socket *pano_metrics_socket_open(pano_source *src, int level,
                                              void (*emit)(pano_json *ev, void *user),
                                              void *user, char *err, size_t errlen);

const char *pano_metrics_socket_path(const pano_metrics_socket *s);
int pano_metrics_socket_fd(const pano_metrics_socket *s);

/* Read every datagram queued. */
void pano_metrics_socket_read(pano_metrics_socket *s);

/* Forget the pids accepted (the monitor reaped a process). */
void pano_metrics_socket_forget_pids(pano_metrics_socket *s);

const pano_metrics_socket_counts *pano_metrics_socket_counts_of(const pano_metrics_socket *s);

/* Close the socket, remove it and its directory. */
void pano_metrics_socket_close(pano_metrics_socket *s);

#endif
