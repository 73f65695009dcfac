/*
 * copy.h - the transfer engine: every transfer of a list, N at a time, with
 * retries, backoff, timeouts, resume and checksums.
 *
 * Transfers with a remote side run on one libcurl multi handle (connections
 * are reused across files). Local -> local copies take the fast path of
 * local.h on up to `jobs` worker threads, which take them from a queue
 * one after the other (on the calling thread when jobs == 1), or libcurl's
 * file:// when curl_for_local is set; the results look the same either
 * way.
 *
 *   download (remote -> local): into a new file next to DST (local.h's
 *       pano_local_create) that becomes DST when complete; a retry resumes from the bytes already there
 *       (CURLOPT_RESUME_FROM_LARGE) where the protocol has ranges (http(s),
 *       ftp(s), sftp, file), and starts over when the server refuses the
 *       range. With resume (--continue) DST itself is written and continued,
 *       so that a later run can pick up what an earlier one left.
 *   upload (local -> remote): http(s) PUT, ftp(s)/sftp/scp upload (missing
 *       remote directories are created); a retry starts over.
 *   third party (remote -> remote): relayed: received into an unnamed file
 *       in TMPDIR (resumed like a download), then sent on like an upload
 *       (a failure there retries only the sending).
 *
 * A stalled transfer (no byte for stall_timeout seconds) is aborted and
 * retried. Failures that cannot go away (404, permission denied, missing
 * source) are not retried.
 */
#ifndef PANO_TRANSFER_COPY_H
#define PANO_TRANSFER_COPY_H

#include "transfer_list.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int jobs;               /* transfers at once (>= 1) */
    int retries;            /* further attempts after a failure that may go away */
    double retry_delay;     /* seconds before the first retry, doubled each time */
    double retry_max_delay; /* cap of the backoff */
    double connect_timeout; /* seconds */
    double stall_timeout;   /* seconds without a byte before an attempt is aborted (0: never) */
    double timeout;         /* seconds per attempt (0: no limit) */
    bool checksum;          /* SHA-256 of the data; verify local copies */
    bool resume;            /* continue a partial DST left by an earlier run */
    bool curl_for_local;    /* local -> local through libcurl instead of local.h */
    bool tls_verify;
    const char *cacert;          /* may be NULL */
    const char *ssh_key;         /* may be NULL: libcurl's default (~/.ssh/id_rsa) */
    const char *ssh_known_hosts; /* may be NULL */
} pano_copy_options;

/* Defaults matching the pano.transfer.* keys. */
void pano_copy_options_init(pano_copy_options *o);

typedef struct {
    const pano_transfer_spec *spec;
    size_t index;       /* position in the list */
    int status;         /* 0 ok, 1 failed */
    uint64_t bytes;     /* bytes actually moved, over all attempts */
    int64_t size;       /* size of the destination when known, else -1 */
    double start, end;  /* epoch seconds: first attempt started, last ended */
    int retries;        /* attempts after the first */
    char sha256[65];    /* with checksum: digest of the data, else "" */
    char error[512];    /* on failure: why (the last attempt's error) */
    bool relayed;       /* third party: bytes counts what was sent to DST, */
    uint64_t received;  /* and this what was received from SRC */
} pano_copy_result;

typedef struct {
    size_t total, done, failed, active;
    uint64_t bytes; /* moved so far, including transfers in progress */
} pano_copy_stats;

typedef struct {
    /* Called on the calling thread once per transfer, when it is final. */
    void (*done)(void *ctx, const pano_copy_result *result);
    /* Called about 5 times a second while transfers run (may be NULL). */
    void (*tick)(void *ctx, const pano_copy_stats *stats);
    /* Called on the calling thread after each round of done calls, before
     * the engine waits, and at the end (may be NULL): what done buffered
     * can be written out now. */
    void (*flush)(void *ctx);
    void *ctx;
} pano_copy_callbacks;

/* Run every transfer in the list. Returns the number that failed, or -1
 * with a message in err when the engine cannot start at all. */
long pano_copy_run(const pano_copy_options *o, const pano_transfer_list *list,
                   const pano_copy_callbacks *cb, char *err, size_t errlen);

/* Stop soon: called from a signal handler (async-signal-safe). The run
 * ends within a fraction of a second, once local copies in progress are
 * done: transfers in flight fail with "interrupted", the ones not started
 * with "interrupted before it started"; every one is still reported. */
void pano_copy_interrupt(void);

#endif
