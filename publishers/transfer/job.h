/*
 * job.h - one transfer of the engine (copy.h): the state its scheduler
 * (copy.c), the worker pool (workers.h) and the libcurl transport
 * (curl_transport.h) share, and the steps of an attempt that do not depend
 * on which of them runs it.
 *
 * A job belongs to one thread at a time: the main thread, or the worker
 * running its local copy (handed over and back under the pool's lock). Only
 * `live` is read by the main thread while a worker writes it.
 */
#ifndef PANO_TRANSFER_JOB_H
#define PANO_TRANSFER_JOB_H

#include "copy.h"
#include "local.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum { KIND_LOCAL, KIND_DOWNLOAD, KIND_UPLOAD, KIND_THIRD_PARTY } job_kind;
typedef enum { J_PENDING, J_RUNNING, J_WAITING, J_DONE } job_state;
/* An upload asks the server what it has of DST before it resumes, and
 * after a resumed send, to be sure the file is whole. */
typedef enum { PROBE_NONE, PROBE_BEFORE, PROBE_AFTER } probe_kind;

typedef struct job job;
struct job {
    const pano_transfer_spec *spec;
    size_t index;
    job_kind kind;
    job_state state;
    int attempts;      /* attempts started */
    double start, due; /* first start; when a waiting retry may start */
    uint64_t bytes;    /* moved by finished attempts */
    _Atomic uint64_t live; /* moved by the running attempt */
    int64_t size;
    char error[512];
    bool retryable;
    bool restart; /* the next attempt must start from byte 0 */
    char sha256[65];

    /* libcurl (curl_transport.h) */
    CURL *easy;
    char errbuf[CURL_ERROR_SIZE];
    int fd;     /* download: the file written; upload: the source */
    char *tmp;  /* download: the temporary file's name (NULL: unnamed, or in place) */
    bool in_place;    /* download: writing DST itself (resume) */
    int phase;        /* relay (third party): 0 receiving into fd, 1 sending it */
    bool fresh;       /* the next request opens a new connection (a retry's first) */
    probe_kind probe;   /* upload: the running request asks what DST holds */
    bool dst_ours;      /* upload: a send wrote to DST, which holds a prefix of the data */
    bool read_some;     /* upload: the running send took data (so DST was opened) */
    bool no_resume;     /* upload: a resumed send went wrong, send it all from now on */
    int64_t resumed_at; /* upload: where the running send started (0: at the beginning) */
    int64_t sent_end;   /* upload: where the last send that wrote stopped, by libcurl's
                           count (-1: none yet) */
    uint64_t received; /* relay: bytes received from the source */
    uint64_t written; /* download: bytes in the file */
    EVP_MD_CTX *md;
    int write_errno;
    double stall_limit;   /* seconds without progress before aborting */
    double last_activity; /* when bytes last moved (or the attempt started) */
    curl_off_t last_now;  /* dlnow + ulnow seen then */
    bool stalled;

    /* local.h, on a worker or inline */
    pano_local_result lres;
    int lrc;
    size_t slot; /* index in the scheduler's running list while there */
    job *next;   /* in the workers' queue or their done list */
};

/* A digest is computed with --checksum, and always when the list gives one. */
bool job_wants_digest(const pano_copy_options *o, const job *j);

/* An attempt begins (on the main thread, or on a worker for a local copy):
 * counts it, clears the last error. */
void job_begin_attempt(job *j);

/* The attempt of a local copy (local.h): the outcome stays in lres/lrc. */
void job_run_local(const pano_copy_options *o, job *j);

/* Takes the outcome of job_run_local into the job (bytes, size, digest or
 * error). Returns whether the copy succeeded. */
bool job_local_outcome(job *j);

/* The job is final: its file is closed, a download's or a relay's digest
 * freed, and a download's temporary file removed unless it succeeded. */
void job_release(job *j, bool success);

#endif
