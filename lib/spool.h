/*
 * spool.h - a bounded on-disk queue for events the broker could not take.
 *
 * The sink (sink.h) puts an event here when publishing fails (broker down,
 * connection lost, confirm timeout) and replays the spool, oldest first,
 * before it publishes anything new, so a source's events keep their order.
 * Events are stored exactly as they were serialized: a replayed event keeps
 * its event_id and seq.
 *
 * Layout. Under the spool root (pano.spool.dir, mode 0700, owned by the
 * user) each destination has a subdirectory named after a hash of the
 * broker's host, port, vhost, exchange and user, so events are only ever
 * replayed to the broker they were meant for. It holds one file per event:
 *
 *     <ns since epoch, 20 digits>-<pid, 10 digits>-<counter, 8 digits>.ev
 *
 * so that names sort in the order the events were spooled. An entry is
 * written to a hidden temporary file, fsync'ed, renamed into place and the
 * directory fsync'ed: a crash leaves either the whole entry or none, and
 * replay checks each entry's header and length before sending it.
 *
 * Bounds. When the entries of a destination exceed max_bytes, the oldest are
 * deleted, each one logged as an error, and counted (pano_spool_dropped(),
 * and a persistent counter in the directory reported on the next replay).
 *
 * Events the broker refuses are not replayed: they are put aside, with the
 * reason, in <dir>/rejected (pano_spool_reject).
 *
 * Concurrency. Several processes on a node (monitors, pano-emit) share a
 * spool. Writers need no lock (names are unique). Replay and trimming hold an
 * exclusive flock on <dir>/.lock, so no entry is replayed twice at once.
 */
#ifndef PANO_SPOOL_H
#define PANO_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pano_spool pano_spool;

/* The default root: /var/tmp/pano-spool-<uid>. Free with free(). */
char *pano_spool_default_root(void);

/* Open (creating it if needed) the spool of one destination under root.
 * destination is any text naming the broker without secrets (it is hashed
 * for the directory name and written, as is, to a "destination" file for
 * people). Returns NULL with a message in err when the directory cannot be
 * made or is not safe (not ours, or writable by others). */
pano_spool *pano_spool_open(const char *root, const char *destination, uint64_t max_bytes,
                            char *err, size_t errlen);
void pano_spool_close(pano_spool *sp);

/* The destination's directory. */
const char *pano_spool_path(const pano_spool *sp);

/* Store one event. Returns 0, or -1 with a message in err (disk full, ...).
 * May drop the oldest entries to stay under max_bytes. */
int pano_spool_put(pano_spool *sp, const char *routing_key, const char *event_id,
                   const char *json, size_t len, char *err, size_t errlen);

/* The subdirectory of a destination's directory for refused events. */
#define PANO_SPOOL_REJECTED_DIR "rejected"

/* Put aside an event the broker refused (unroutable, nacked), with the reason,
 * in the destination's "rejected" subdirectory: an entry like the others, plus
 * a "why=" header line, that replay does not touch. Moving it back into the
 * destination's directory queues it again. The subdirectory holds at most
 * max_bytes too. Returns 0, or -1 with a message in err (full, disk error). */
int pano_spool_reject(pano_spool *sp, const char *routing_key, const char *event_id,
                      const char *json, size_t len, const char *why, char *err, size_t errlen);

/* Whether any entry waits in the directory (by any process). */
bool pano_spool_pending(pano_spool *sp);

/* What a replay callback reports for one entry. */
typedef enum {
    PANO_SPOOL_SENT = 0,     /* delivered: the entry is removed */
    PANO_SPOOL_REJECTED = 1, /* the broker refused it: put aside (pano_spool_reject) */
    PANO_SPOOL_FAILED = -1,  /* not delivered: replay stops, the entry stays */
} pano_spool_result;

typedef pano_spool_result (*pano_spool_send_fn)(void *user, const char *routing_key,
                                                const char *event_id, const char *json,
                                                size_t len, char *err, size_t errlen);

/* Replay every entry, oldest first, through send, under the spool's lock.
 * lock_wait is how long to wait for another process that holds the lock
 * (0: do not wait). Returns the number of entries delivered (>= 0) when the
 * spool was emptied, -1 when send failed (err says why; the rest stays), or
 * -2 when the lock could not be had (another process is replaying). */
int pano_spool_replay(pano_spool *sp, pano_spool_send_fn send, void *user, double lock_wait,
                      char *err, size_t errlen);

/* Entries this process dropped because the spool was full. */
uint64_t pano_spool_dropped(const pano_spool *sp);

#endif
