#include "curl_transport.h"

#include "clock.h"
#include "log.h"
#include "mem.h"
#include "url.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CURL_BUFFER (512L * 1024)

/* How the request that ended leaves its attempt. */
typedef enum { ATTEMPT_GOES_ON, ATTEMPT_SUCCEEDED, ATTEMPT_FAILED } attempt_outcome;

int curl_transport_open(curl_transport *t, const pano_copy_options *o, uint64_t *bytes_done)
{
    *t = (curl_transport){.o = o, .bytes_done = bytes_done, .multi = curl_multi_init()};
    return t->multi ? 0 : -1;
}

void curl_transport_close(curl_transport *t)
{
    curl_multi_cleanup(t->multi);
    t->multi = NULL;
}

static bool scheme_is(const char *url, const char *const *names)
{
    char scheme[16];
    if (!pano_transfer_scheme(url, scheme, sizeof scheme))
        return false;
    for (; *names; names++)
        if (strcmp(scheme, *names) == 0)
            return true;
    return false;
}

static bool has_ranges(const char *url)
{
    static const char *const ranged[] = {"http", "https", "ftp", "ftps", "sftp", "file", NULL};
    return scheme_is(url, ranged);
}

/* Uploads that can continue a partial file on the server: FTP appends
 * (APPE), sftp writes at an offset. HTTP PUT and scp always send it all. */
static bool appends(const char *url)
{
    static const char *const appendable[] = {"ftp", "ftps", "sftp", NULL};
    return scheme_is(url, appendable);
}

/* Is the job's current libcurl attempt a download? */
static bool receiving(const job *j)
{
    return j->kind == KIND_DOWNLOAD || (j->kind == KIND_THIRD_PARTY && j->phase == 0);
}
static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
    job *j = ud;
    size_t len = size * n;
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(j->fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            j->write_errno = errno;
            return 0;
        }
        p += w;
        left -= (size_t)w;
    }
    if (j->md && EVP_DigestUpdate(j->md, data, len) != 1) {
        j->write_errno = EIO;
        return 0;
    }
    j->written += len;
    atomic_fetch_add_explicit(&j->live, len, memory_order_relaxed);
    return len;
}

static size_t on_read(char *data, size_t size, size_t n, void *ud)
{
    job *j = ud;
    for (;;) {
        ssize_t r = read(j->fd, data, size * n);
        if (r > 0)
            j->read_some = true;
        if (r >= 0) {
            atomic_fetch_add_explicit(&j->live, (uint64_t)r, memory_order_relaxed);
            return (size_t)r;
        }
        if (errno != EINTR) {
            j->write_errno = errno;
            return CURL_READFUNC_ABORT;
        }
    }
}

static int on_seek(void *ud, curl_off_t offset, int origin)
{
    job *j = ud;
    if (lseek(j->fd, (off_t)offset, origin) < 0)
        return CURL_SEEKFUNC_CANTSEEK;
    if (origin == SEEK_SET && offset == 0)
        atomic_store(&j->live, 0); /* a rewind: count the bytes again */
    return CURL_SEEKFUNC_OK;
}

/* Stall detection: abort an attempt that moves no byte for stall_limit
 * seconds (libcurl's low-speed check averages over several seconds). */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    job *j = ud;
    double now = pano_now();
    if (dlnow + ulnow != j->last_now) {
        j->last_now = dlnow + ulnow;
        j->last_activity = now;
        return 0;
    }
    if (j->stall_limit > 0 && now - j->last_activity >= j->stall_limit) {
        j->stalled = true;
        return 1;
    }
    return 0;
}

/* Hash the first n bytes of fd (the part a resumed download keeps). */
static int hash_prefix(job *j, uint64_t n)
{
    unsigned char *buf = pano_malloc(1 << 20);
    uint64_t off = 0;
    int rc = 0;
    while (off < n) {
        size_t want = n - off < (1u << 20) ? (size_t)(n - off) : (1u << 20);
        ssize_t r = pread(j->fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || EVP_DigestUpdate(j->md, buf, (size_t)r) != 1) {
            rc = -1;
            break;
        }
        off += (uint64_t)r;
    }
    free(buf);
    return rc;
}

static int new_digest(job *j)
{
    EVP_MD_CTX_free(j->md);
    j->md = EVP_MD_CTX_new();
    if (!j->md || EVP_DigestInit_ex(j->md, EVP_sha256(), NULL) != 1) {
        snprintf(j->error, sizeof j->error, "SHA-256 is not available");
        return -1;
    }
    return 0;
}

/* The relay file of a third-party transfer: unnamed, in TMPDIR. */
static int open_relay(void)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    char *name = pano_asprintf("%s/pano-relay-XXXXXX", dir);
    fd = mkostemp(name, O_CLOEXEC);
    if (fd >= 0)
        unlink(name); /* anonymous from now on */
    int e = errno;
    free(name);
    errno = e;
    return fd;
}

/* Open (first attempt) or rewind/position (retry) the download's file.
 * Returns the offset to resume from, or -1 with j->error set. */
static int64_t prepare_download(const curl_transport *t, job *j)
{
    bool resumable = has_ranges(j->spec->src_url);
    const char *dst = j->spec->dst_path ? j->spec->dst_path : "the relay file";
    struct stat sst;
    /* libcurl reads a file:// directory as an empty file */
    if (j->spec->src_path && stat(j->spec->src_path, &sst) == 0 && S_ISDIR(sst.st_mode)) {
        snprintf(j->error, sizeof j->error, "source %s: %s", j->spec->src_path, strerror(EISDIR));
        return -1;
    }
    if (j->fd < 0) {
        if (j->kind == KIND_THIRD_PARTY) {
            if ((j->fd = open_relay()) < 0) {
                snprintf(j->error, sizeof j->error, "cannot create a relay file: %s",
                         strerror(errno));
                return -1;
            }
            j->written = 0;
        } else if (t->o->resume) {
            if (pano_local_mkparents(dst) < 0 ||
                (j->fd = open(dst, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0) {
                snprintf(j->error, sizeof j->error, "cannot open %s: %s", dst, strerror(errno));
                return -1;
            }
            struct stat st;
            if (fstat(j->fd, &st) < 0) {
                snprintf(j->error, sizeof j->error, "cannot stat %s: %s", dst, strerror(errno));
                return -1;
            }
            j->written = (uint64_t)st.st_size;
            j->in_place = true;
            if (j->written)
                pano_info("%s: continuing after %llu bytes", dst,
                          (unsigned long long)j->written);
        } else {
            j->fd = pano_local_create(dst, 0666, &j->tmp);
            if (j->fd < 0) {
                snprintf(j->error, sizeof j->error, "cannot create a file next to %s: %s", dst,
                         strerror(errno));
                return -1;
            }
            j->written = 0;
        }
        j->restart = j->written > 0 && !resumable;
        if (job_wants_digest(t->o, j) && new_digest(j) < 0)
            return -1;
        if (j->md && !j->restart && j->written && hash_prefix(j, j->written) < 0) {
            snprintf(j->error, sizeof j->error, "cannot read %s: %s", dst, strerror(errno));
            return -1;
        }
    }
    if (j->restart || !resumable) {
        if (j->written && ftruncate(j->fd, 0) < 0) {
            snprintf(j->error, sizeof j->error, "cannot truncate %s: %s", dst, strerror(errno));
            return -1;
        }
        j->written = 0;
        j->restart = false;
        if (job_wants_digest(t->o, j) && new_digest(j) < 0)
            return -1;
    }
    if (lseek(j->fd, (off_t)j->written, SEEK_SET) < 0) {
        snprintf(j->error, sizeof j->error, "cannot seek in %s: %s", dst, strerror(errno));
        return -1;
    }
    return (int64_t)j->written;
}

static int prepare_upload(const curl_transport *t, job *j, curl_off_t *size)
{
    if (j->kind == KIND_THIRD_PARTY) { /* send what the relay file holds */
        if (lseek(j->fd, 0, SEEK_SET) < 0) {
            snprintf(j->error, sizeof j->error, "cannot read the relay file: %s",
                     strerror(errno));
            return -1;
        }
        *size = (curl_off_t)j->written;
        return 0;
    }
    const char *src = j->spec->src_path;
    if (j->fd < 0) {
        if ((j->fd = open(src, O_RDONLY | O_CLOEXEC)) < 0) {
            snprintf(j->error, sizeof j->error, "cannot open source %s: %s", src,
                     strerror(errno));
            return -1;
        }
        if (job_wants_digest(t->o, j)) {
            char why[400];
            if (pano_local_sha256_file(src, j->sha256, why, sizeof why) < 0) {
                snprintf(j->error, sizeof j->error, "%s", why);
                return -1;
            }
            if (j->spec->sha256 && strcmp(j->spec->sha256, j->sha256) != 0) {
                snprintf(j->error, sizeof j->error,
                         "checksum mismatch: expected sha256 %s, source has %s", j->spec->sha256,
                         j->sha256);
                return -1;
            }
        }
    }
    struct stat st;
    if (fstat(j->fd, &st) < 0 || lseek(j->fd, 0, SEEK_SET) < 0) {
        snprintf(j->error, sizeof j->error, "cannot read %s: %s", src, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(j->error, sizeof j->error, "source %s is a directory", src);
        return -1;
    }
    *size = (curl_off_t)st.st_size;
    return 0;
}

static CURL *new_easy(const curl_transport *t, job *j, const char *url)
{
    const pano_copy_options *o = t->o;
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    j->errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PRIVATE, j);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, j->errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "file,http,https,ftp,ftps,scp,sftp");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https,ftp,ftps");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "pano-transfer/" PANO_VERSION);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, CURL_BUFFER);
    curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, CURL_BUFFER);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->connect_timeout * 1000));
    if (o->timeout > 0)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(o->timeout * 1000));
    j->stall_limit = o->stall_timeout;
    j->last_activity = pano_now();
    j->last_now = 0;
    j->stalled = false;
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, j);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, o->tls_verify ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, o->tls_verify ? 2L : 0L);
    if (o->cacert)
        curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert);
    if (o->ssh_key)
        curl_easy_setopt(c, CURLOPT_SSH_PRIVATE_KEYFILE, o->ssh_key);
    if (o->ssh_known_hosts)
        curl_easy_setopt(c, CURLOPT_SSH_KNOWNHOSTS, o->ssh_known_hosts);
    curl_easy_setopt(c, CURLOPT_FTP_CREATE_MISSING_DIRS, (long)CURLFTP_CREATE_DIR_RETRY);
    if (j->fresh) {
        /* The failed attempt's connection may be in any state (an FTP
         * control connection after an aborted upload answers out of step). */
        curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        j->fresh = false;
    }
    return c;
}

/* Run c for j on the multi handle (c == NULL: libcurl could not make it). */
static int add_easy(curl_transport *t, job *j, CURL *c)
{
    if (!c) {
        snprintf(j->error, sizeof j->error, "libcurl could not create a transfer");
        return -1;
    }
    j->write_errno = 0;
    CURLMcode mc = curl_multi_add_handle(t->multi, c);
    if (mc != CURLM_OK) {
        curl_easy_cleanup(c);
        snprintf(j->error, sizeof j->error, "libcurl: %s", curl_multi_strerror(mc));
        return -1;
    }
    j->easy = c;
    return 0;
}

/* Send the upload's data (prepare_upload done, j->size set), from byte
 * `from` on: what the server has before it is kept (appended to). */
static int start_send(curl_transport *t, job *j, curl_off_t from)
{
    j->resumed_at = from;
    j->read_some = false;
    CURL *c = new_easy(t, j, j->spec->dst_url);
    if (c) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)j->size);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, j);
        curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(c, CURLOPT_SEEKDATA, j);
        if (from > 0)
            curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, from);
    }
    return add_easy(t, j, c);
}

static size_t discard(char *data, size_t size, size_t n, void *ud)
{
    (void)data;
    (void)ud;
    return size * n;
}

/* Ask the server how much of DST it has (FTP SIZE, sftp stat): see
 * upload_probed and upload_checked. */
static int start_probe(curl_transport *t, job *j, probe_kind kind)
{
    CURL *c = new_easy(t, j, j->spec->dst_url);
    if (c) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard); /* FTP's header lines */
    }
    j->probe = kind;
    return add_easy(t, j, c);
}

/* An upload attempt succeeded: the data is on the server. */
static attempt_outcome upload_done(job *j)
{
    if (j->fd >= 0 && j->kind != KIND_THIRD_PARTY) {
        close(j->fd); /* a relay file is kept until the job is final */
        j->fd = -1;
    }
    return ATTEMPT_SUCCEEDED;
}

/* After a resumed send the server's file must be exactly the data: what
 * the first probe saw may have grown since (the failed attempt's server
 * side still writing what it had received), and appending to that would
 * leave a wrong file. Then the next attempt sends it all. */
static attempt_outcome upload_checked(curl_transport *t, job *j, curl_off_t have)
{
    if (have == j->size) {
        return upload_done(j);
    }
    snprintf(j->error, sizeof j->error,
             "resumed at byte %lld, but the server's file then had %lld bytes instead of %lld",
             (long long)j->resumed_at, (long long)have, (long long)j->size);
    j->retryable = true;
    j->no_resume = true;
    return ATTEMPT_FAILED;
}

/* The server has `have` bytes of DST (-1: no such file). It is asked only
 * when DST holds a prefix of the data: an earlier send of this run wrote
 * it (libcurl read data only once it had opened DST, truncating it), or
 * --continue says it is what an earlier run left. A file larger than the
 * data is no such prefix, and is replaced. */
static attempt_outcome upload_probed(curl_transport *t, job *j, curl_off_t have)
{
    if (j->sent_end >= 0 && have > j->sent_end && have <= j->size) {
        /* libcurl counts what the server acknowledged (sftp): when the
         * connection broke, the server had received more */
        uint64_t unseen = (uint64_t)(have - j->sent_end);
        j->bytes += unseen;
        *t->bytes_done += unseen;
        j->sent_end = have;
    }
    curl_off_t from = 0;
    if (have > 0 && have < j->size) {
        from = have;
        pano_info("%s: the server has %lld of %lld bytes, sending the rest", j->spec->dst_shown,
                  (long long)have, (long long)j->size);
    } else if (have > 0 && have == j->size) {
        from = have; /* libcurl sends nothing and succeeds */
        pano_info("%s: the server has all %lld bytes already", j->spec->dst_shown,
                  (long long)have);
    } else if (have > j->size)
        pano_info("%s: the server's file is larger (%lld bytes) than the data (%lld): sending "
                  "all of it", j->spec->dst_shown, (long long)have, (long long)j->size);
    if (start_send(t, j, from) < 0)
        return ATTEMPT_FAILED;
    return ATTEMPT_GOES_ON;
}

int curl_transport_start(curl_transport *t, job *j)
{
    j->fresh = j->attempts > 1;
    if (!receiving(j)) {
        curl_off_t size;
        if (prepare_upload(t, j, &size) < 0)
            return -1;
        j->size = size;
        if (appends(j->spec->dst_url) && !j->no_resume && (j->dst_ours || t->o->resume))
            return start_probe(t, j, PROBE_BEFORE);
        return start_send(t, j, 0);
    }
    int64_t offset = prepare_download(t, j);
    if (offset < 0)
        return -1;
    CURL *c = new_easy(t, j, j->spec->src_url);
    if (c) {
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, j);
        if (offset > 0)
            curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)offset);
    }
    return add_easy(t, j, c);
}

static bool curl_retryable(CURLcode code, long http, int write_errno)
{
    switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_RANGE_ERROR:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_FTP_ACCEPT_TIMEOUT:
    case CURLE_FTP_ACCEPT_FAILED:
    case CURLE_FTP_WEIRD_PASV_REPLY:
    case CURLE_FTP_WEIRD_227_FORMAT:
    case CURLE_FTP_CANT_GET_HOST:
    case CURLE_SSH:
        return true;
    case CURLE_HTTP_RETURNED_ERROR:
        return http == 408 || http == 416 || http == 429 || http >= 500;
    case CURLE_WRITE_ERROR:
        return write_errno == EIO || write_errno == EAGAIN || write_errno == EINTR;
    default:
        return false;
    }
}

static attempt_outcome curl_finished(curl_transport *t, job *j, CURLcode code)
{
    CURL *c = j->easy;
    long http = 0;
    curl_off_t moved = 0, have = -1;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
    if (receiving(j))
        curl_easy_getinfo(c, CURLINFO_SIZE_DOWNLOAD_T, &moved);
    else
        curl_easy_getinfo(c, CURLINFO_SIZE_UPLOAD_T, &moved);
    if (j->probe != PROBE_NONE)
        curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &have);
    /* libcurl's count of the bytes moved is the truth. */
    if (moved >= 0)
        atomic_store(&j->live, (uint64_t)moved);
    if (j->probe == PROBE_NONE && !receiving(j) && j->read_some) {
        /* libcurl took data, so it had DST open: DST is a prefix of the data */
        j->dst_ours = true;
        j->sent_end = j->resumed_at + (moved > 0 ? moved : 0);
    }
    curl_multi_remove_handle(t->multi, c);
    curl_easy_cleanup(c);
    j->easy = NULL;
    if (j->probe != PROBE_NONE) {
        probe_kind kind = j->probe;
        j->probe = PROBE_NONE;
        if (code == CURLE_OK || code == CURLE_REMOTE_FILE_NOT_FOUND) {
            if (code != CURLE_OK)
                have = -1;
            if (kind == PROBE_BEFORE)
                return upload_probed(t, j, have);
            return upload_checked(t, j, have);
        }
        /* the server could not be asked: a failed attempt like any other */
    }

    bool ok = code == CURLE_OK;
    if (!ok) {
        const char *text = j->errbuf[0] ? j->errbuf : curl_easy_strerror(code);
        if (code == CURLE_ABORTED_BY_CALLBACK && j->stalled) {
            snprintf(j->error, sizeof j->error, "stalled: no data for %g s", j->stall_limit);
            code = CURLE_OPERATION_TIMEDOUT; /* retry it like a timeout */
        } else if (code == CURLE_HTTP_RETURNED_ERROR)
            snprintf(j->error, sizeof j->error, "HTTP %ld: %s", http, text);
        else if (code == CURLE_WRITE_ERROR && j->write_errno)
            snprintf(j->error, sizeof j->error, "cannot write %s: %s",
                     j->spec->dst_path ? j->spec->dst_path : "the relay file",
                     strerror(j->write_errno));
        else if (code == CURLE_ABORTED_BY_CALLBACK && j->write_errno)
            snprintf(j->error, sizeof j->error, "cannot read %s: %s",
                     j->spec->src_path ? j->spec->src_path : "the relay file",
                     strerror(j->write_errno));
        else
            snprintf(j->error, sizeof j->error, "%s", text);
        j->retryable = curl_retryable(code, http, j->write_errno);
        /* A server that will not resume: start over next time. */
        if (code == CURLE_RANGE_ERROR || http == 416)
            j->restart = true;
    } else if (receiving(j)) {
        j->size = (int64_t)j->written;
        if (j->md) {
            unsigned char digest[EVP_MAX_MD_SIZE];
            unsigned int dlen = 0;
            if (EVP_DigestFinal_ex(j->md, digest, &dlen) != 1) {
                snprintf(j->error, sizeof j->error, "SHA-256 failed");
                ok = false;
            } else {
                pano_local_hex(digest, dlen, j->sha256);
                char again[65], why[300];
                if (pano_local_sha256_fd(j->fd, again, why, sizeof why) < 0) {
                    snprintf(j->error, sizeof j->error, "verifying the copy: %s", why);
                    ok = false;
                } else if (strcmp(again, j->sha256) != 0) {
                    snprintf(j->error, sizeof j->error,
                             "checksum mismatch: received sha256 %s, file has %s", j->sha256,
                             again);
                    j->restart = true;
                    j->retryable = true;
                    ok = false;
                }
            }
            EVP_MD_CTX_free(j->md);
            j->md = NULL;
            if (!ok && job_wants_digest(t->o, j) && new_digest(j) < 0)
                j->retryable = false;
        }
        if (ok && j->spec->sha256 && strcmp(j->spec->sha256, j->sha256) != 0) {
            snprintf(j->error, sizeof j->error, "checksum mismatch: expected sha256 %s, got %s",
                     j->spec->sha256, j->sha256);
            j->restart = true;
            j->retryable = true;
            ok = false;
        }
        if (ok && j->kind == KIND_THIRD_PARTY) {
            /* Received: now send it on, in the same attempt. */
            uint64_t got = atomic_exchange(&j->live, 0);
            j->received += got;
            *t->bytes_done += got;
            j->phase = 1;
            pano_debug("%s: received %llu bytes, sending them to %s", j->spec->src_shown,
                       (unsigned long long)j->written, j->spec->dst_shown);
            if (curl_transport_start(t, j) < 0)
                return ATTEMPT_FAILED;
            return ATTEMPT_GOES_ON;
        }
        if (ok && !j->in_place) {
            if (pano_local_commit(j->fd, j->tmp, j->spec->dst_path) < 0) {
                snprintf(j->error, sizeof j->error, "cannot complete %s: %s",
                         j->spec->dst_path, strerror(errno));
                j->retryable = false;
                return ATTEMPT_FAILED;
            }
            free(j->tmp); /* it is DST now */
            j->tmp = NULL;
        }
    } else if (j->resumed_at > 0 && j->resumed_at < j->size) {
        /* sent the rest: check the whole (what was sent stays counted) */
        uint64_t sent = atomic_exchange(&j->live, 0);
        j->bytes += sent;
        *t->bytes_done += sent;
        if (start_probe(t, j, PROBE_AFTER) < 0)
            return ATTEMPT_FAILED;
        return ATTEMPT_GOES_ON;
    } else {
        return upload_done(j);
    }
    return ok ? ATTEMPT_SUCCEEDED : ATTEMPT_FAILED;
}

void curl_transport_perform(curl_transport *t)
{
    int running = 0;
    CURLMcode mc = curl_multi_perform(t->multi, &running);
    if (mc != CURLM_OK)
        pano_warn("libcurl: %s", curl_multi_strerror(mc));
}

job *curl_transport_next_ended(curl_transport *t, bool *ok)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(t->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        job *j = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
        attempt_outcome out = curl_finished(t, j, msg->data.result);
        if (out != ATTEMPT_GOES_ON) {
            *ok = out == ATTEMPT_SUCCEEDED;
            return j;
        }
    }
    return NULL;
}

bool curl_transport_abort(curl_transport *t, job *j)
{
    if (!j->easy)
        return false;
    curl_off_t moved = 0;
    curl_easy_getinfo(j->easy, receiving(j) ? CURLINFO_SIZE_DOWNLOAD_T : CURLINFO_SIZE_UPLOAD_T,
                      &moved);
    atomic_store(&j->live, (uint64_t)(moved > 0 ? moved : 0));
    curl_multi_remove_handle(t->multi, j->easy);
    curl_easy_cleanup(j->easy);
    j->easy = NULL;
    snprintf(j->error, sizeof j->error, "interrupted");
    j->retryable = false;
    return true;
}

void curl_transport_wait(curl_transport *t, double seconds)
{
    CURLMcode mc = curl_multi_poll(t->multi, NULL, 0, (int)(seconds * 1000) + 1, NULL);
    if (mc != CURLM_OK)
        pano_warn("libcurl: %s", curl_multi_strerror(mc));
}

int curl_transport_wakeup(void *t)
{
    return curl_multi_wakeup(((curl_transport *)t)->multi) == CURLM_OK ? 0 : -1;
}
