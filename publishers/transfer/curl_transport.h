/*
 * curl_transport.h - the attempts of transfers with a remote side (job.h)
 * on one libcurl multi handle: libcurl handles and their options, the
 * callbacks that write, read, seek and watch for stalls, resume, checksums
 * of received data, and which failures may go away.
 *
 *   download: into a new file next to DST (pano_local_create), or DST
 *       itself with resume; a retry continues with a range request where
 *       the protocol has ranges, and starts over when the server refuses.
 *   upload: sent whole, or (ftp(s), sftp) appended to what the server has
 *       of DST when it holds a prefix of the data, checked afterwards.
 *   third party: received into an unnamed file in TMPDIR, then sent on.
 *
 * An attempt may take several requests (probe, send, check; receive,
 * send); curl_transport_next_ended returns a job once its attempt ended,
 * with j->error and j->retryable set on failure. Bytes moved by a request
 * that ended within an attempt go to j->bytes or j->received and to
 * *bytes_done; the running request's count is j->live.
 * Main thread only.
 */
#ifndef PANO_TRANSFER_CURL_TRANSPORT_H
#define PANO_TRANSFER_CURL_TRANSPORT_H

#include "job.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const pano_copy_options *o;
    uint64_t *bytes_done; /* the engine's count of bytes moved by ended requests */
    CURLM *multi;
} curl_transport;

/* 0, or -1 when libcurl cannot start. */
int curl_transport_open(curl_transport *t, const pano_copy_options *o, uint64_t *bytes_done);
void curl_transport_close(curl_transport *t);

/* Begin the attempt's first request (j->attempts > 1: on a new
 * connection). -1 with j->error set when it cannot start. */
int curl_transport_start(curl_transport *t, job *j);

/* Move what can move now, without waiting. */
void curl_transport_perform(curl_transport *t);

/* A job whose attempt ended since the last call, and whether it succeeded
 * (NULL: none). On success a download is DST, or the data is on the
 * server; the files of a job that may retry stay open for resuming. */
job *curl_transport_next_ended(curl_transport *t, bool *ok);

/* Stop j's running request, counting what it moved in j->live: its
 * attempt failed ("interrupted", not retryable). False when j has no
 * request running. */
bool curl_transport_abort(curl_transport *t, job *j);

/* Wait up to `seconds` for libcurl's sockets or curl_transport_wakeup. */
void curl_transport_wait(curl_transport *t, double seconds);

/* Cut curl_transport_wait short, from any thread (t: a curl_transport).
 * 0, or -1 when it could not. */
int curl_transport_wakeup(void *t);

#endif
