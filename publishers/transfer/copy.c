#include "copy.h"

#include "event.h"
#include "local.h"
#include "log.h"
#include "mem.h"
#include "url.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TICK_MS 200
#define CURL_BUFFER (512L * 1024)

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

    /* libcurl */
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
    bool resumable;   /* protocol has ranges */
    double stall_limit;   /* seconds without progress before aborting */
    double last_activity; /* when bytes last moved (or the attempt started) */
    curl_off_t last_now;  /* dlnow + ulnow seen then */
    bool stalled;

    /* local.h, on a worker or inline */
    pano_local_result lres;
    int lrc;
    size_t slot; /* index in engine.running while there */
    job *next;   /* in the workers' queue or their done list */
};

typedef struct {
    const pano_copy_options *o;
    const pano_copy_callbacks *cb;
    size_t limit; /* -j */
    job *jobs;
    size_t njobs, next, done, failed;
    size_t active;         /* in running: libcurl transfers, local copies handed to workers */
    size_t local_inflight; /* of those, local copies handed to the workers */
    uint64_t bytes_done;   /* moved by finished attempts */
    job **running;
    size_t nrunning;
    job **waiting;
    size_t nwaiting;
    CURLM *multi;

    /* Worker pool for local copies (with -j > 1; with -j 1 they run on the
     * calling thread). Under lock: */
    pthread_t *threads;
    int nthreads;
    pthread_mutex_t lock;
    pthread_cond_t work_cv;
    job *work_head, *work_tail; /* handed over, not taken by a worker yet */
    size_t queued;
    job *batch_head, *batch_tail; /* main thread: to hand over together */
    size_t nbatch;
    job *done_head, *done_tail; /* copied, not collected by the main thread yet */
    size_t ndone;
    bool wake_pending; /* the main thread was woken and has not collected since */
    bool stopping;
} engine;

/* While no libcurl transfer runs, local copies are handed to the workers
 * up to QUEUE_AHEAD beyond -j (still only one per worker runs at a time,
 * and at most -j workers exist), so that a worker goes straight from one
 * copy to the next instead of waiting for the main thread to hand it the
 * next one. Workers wake the main thread when DONE_BATCH copies wait to be
 * reported or the queue runs low; otherwise it collects finished copies
 * every COLLECT_MS. */
#define QUEUE_AHEAD 256
#define DONE_BATCH 64
#define COLLECT_MS 10

void pano_copy_options_init(pano_copy_options *o)
{
    memset(o, 0, sizeof *o);
    o->jobs = 4;
    o->retries = 3;
    o->retry_delay = 1;
    o->retry_max_delay = 60;
    o->connect_timeout = 30;
    o->stall_timeout = 60;
    o->timeout = 0;
    o->tls_verify = true;
}

/* ---- helpers ------------------------------------------------------------ */

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

/* Lock-free, so a signal handler may set it; read by every thread. */
static _Atomic int interrupted;

void pano_copy_interrupt(void) { atomic_store(&interrupted, 1); }

/* Is the job's current libcurl attempt a download? */
static bool receiving(const job *j)
{
    return j->kind == KIND_DOWNLOAD || (j->kind == KIND_THIRD_PARTY && j->phase == 0);
}

/* A digest is computed with --checksum, and always when the list gives one. */
static bool wants_digest(const engine *e, const job *j)
{
    return e->o->checksum || j->spec->sha256;
}

static void add_running(engine *e, job *j)
{
    j->slot = e->nrunning;
    e->running[e->nrunning++] = j;
    e->active++;
}

static void remove_running(engine *e, job *j)
{
    job *last = e->running[--e->nrunning];
    e->running[j->slot] = last;
    last->slot = j->slot;
    e->active--;
    if (j->kind == KIND_LOCAL && e->nthreads > 0)
        e->local_inflight--;
}

/* How many transfers may be in hand (running, handed to the workers,
 * waiting to retry) for j to start: -j, or more for local copies queued
 * ahead for the workers while no libcurl transfer runs (then only the
 * workers run, and there are at most -j of them). */
static size_t limit_for(const engine *e, const job *j)
{
    if (j->kind == KIND_LOCAL && e->nthreads > 0 && e->active == e->local_inflight)
        return e->limit + QUEUE_AHEAD;
    return e->limit;
}

/* ---- finishing ------------------------------------------------------------ */

static double backoff(const engine *e, int retry)
{
    double d = e->o->retry_delay * pow(2.0, retry - 1);
    if (d > e->o->retry_max_delay)
        d = e->o->retry_max_delay;
    /* up to 10% jitter, so parallel transfers do not retry in lockstep */
    return d * (1.0 + 0.1 * ((double)rand() / RAND_MAX));
}

static void release_download(job *j, bool success)
{
    if (j->fd >= 0)
        close(j->fd);
    j->fd = -1;
    if (j->tmp && !success)
        unlink(j->tmp);
    free(j->tmp);
    j->tmp = NULL;
    EVP_MD_CTX_free(j->md);
    j->md = NULL;
}

static void report(engine *e, job *j, int status)
{
    pano_copy_result r = {
        .spec = j->spec,
        .index = j->index,
        .status = status,
        .bytes = j->bytes,
        .size = j->size,
        .start = j->start,
        .end = pano_now(),
        .retries = j->attempts > 0 ? j->attempts - 1 : 0,
        .received = j->received,
        .relayed = j->kind == KIND_THIRD_PARTY,
    };
    memcpy(r.sha256, j->sha256, sizeof r.sha256);
    if (status)
        snprintf(r.error, sizeof r.error, "%s", j->error);
    j->state = J_DONE;
    e->done++;
    if (status)
        e->failed++;
    if (e->cb && e->cb->done)
        e->cb->done(e->cb->ctx, &r);
}

/* An attempt ended: ok, retry later, or give up. */
static void attempt_ended(engine *e, job *j, bool ok)
{
    uint64_t live = atomic_load(&j->live);
    if (j->kind == KIND_THIRD_PARTY && j->phase == 0)
        j->received += live;
    else
        j->bytes += live;
    e->bytes_done += live;
    atomic_store(&j->live, 0);
    remove_running(e, j);
    if (ok) {
        if (j->kind == KIND_DOWNLOAD || j->kind == KIND_THIRD_PARTY)
            release_download(j, true);
        report(e, j, 0);
        return;
    }
    int retries_done = j->attempts - 1;
    if (j->retryable && retries_done < e->o->retries && !atomic_load(&interrupted)) {
        double d = backoff(e, retries_done + 1);
        pano_info("%s: %s; %llu bytes moved in this attempt; retry %d of %d in %.1f s",
                  j->spec->dst_shown, j->error, (unsigned long long)live, retries_done + 1,
                  e->o->retries, d);
        j->state = J_WAITING;
        j->due = pano_now() + d;
        e->waiting[e->nwaiting++] = j;
        return;
    }
    if (j->kind == KIND_DOWNLOAD || j->kind == KIND_THIRD_PARTY)
        release_download(j, false); /* with resume, DST stays as it is */
    else if (j->fd >= 0) {
        close(j->fd);
        j->fd = -1;
    }
    report(e, j, 1);
}

/* ---- local copies ------------------------------------------------------- */

/* An attempt begins (on the main thread, or on a worker for a local copy). */
static void begin_attempt(job *j)
{
    if (j->attempts == 0)
        j->start = pano_now();
    j->attempts++;
    j->error[0] = '\0';
    j->retryable = false;
    pano_debug("%s -> %s (attempt %d)", j->spec->src_shown, j->spec->dst_shown, j->attempts);
}

static void run_local(const engine *e, job *j)
{
    /* An expected digest is always checked. */
    pano_local_options lo = {.checksum = wants_digest(e, j),
                             .expect_sha256 = j->spec->sha256,
                             .progress = &j->live};
    j->lrc = pano_local_copy(j->spec->src_path, j->spec->dst_path, &lo, &j->lres);
}

static void local_finished(engine *e, job *j)
{
    pano_local_result *r = &j->lres;
    bool ok = j->lrc == 0;
    /* The bytes moved are the ones written (progress counted them too). */
    atomic_store(&j->live, r->bytes);
    if (ok) {
        j->size = (int64_t)r->bytes;
        memcpy(j->sha256, r->sha256, sizeof j->sha256);
    } else {
        snprintf(j->error, sizeof j->error, "%s", r->error);
        j->retryable = r->retryable;
    }
    attempt_ended(e, j, ok);
}

/* Takes queued local copies one after the other, and puts them on the
 * done list for the main thread. */
static void *worker(void *arg)
{
    engine *e = arg;
    job *finished = NULL;
    for (;;) {
        pthread_mutex_lock(&e->lock);
        if (finished) {
            finished->next = NULL;
            if (e->done_tail)
                e->done_tail->next = finished;
            else
                e->done_head = finished;
            e->done_tail = finished;
            e->ndone++;
            if (!e->wake_pending &&
                (e->ndone >= DONE_BATCH || e->queued <= (size_t)e->nthreads)) {
                e->wake_pending = true;
                pthread_mutex_unlock(&e->lock);
                /* (if this fails, the main thread still collects within COLLECT_MS) */
                if (curl_multi_wakeup(e->multi) != CURLM_OK)
                    pano_debug("could not wake the main thread");
                pthread_mutex_lock(&e->lock);
            }
        }
        /* After an interrupt the queue is the main thread's to report. */
        while ((!e->work_head || atomic_load(&interrupted)) && !e->stopping)
            pthread_cond_wait(&e->work_cv, &e->lock);
        job *j = e->stopping ? NULL : e->work_head;
        if (j) {
            e->work_head = j->next;
            if (!e->work_head)
                e->work_tail = NULL;
            e->queued--;
        }
        pthread_mutex_unlock(&e->lock);
        if (!j)
            return NULL;
        begin_attempt(j);
        run_local(e, j);
        finished = j;
    }
}

static int start_workers(engine *e, int n, char *err, size_t errlen)
{
    /* Stop signals go to the main thread, whose wait they cut short. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    int rc = pthread_sigmask(SIG_BLOCK, &block, &old);
    if (rc != 0) {
        snprintf(err, errlen, "cannot block signals: %s", strerror(rc));
        return -1;
    }
    e->threads = pano_calloc((size_t)n, sizeof *e->threads);
    for (int i = 0; i < n; i++) {
        rc = pthread_create(&e->threads[i], NULL, worker, e);
        if (rc != 0)
            break; /* fewer workers will do */
        e->nthreads++;
    }
    int mrc = pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (mrc != 0)
        pano_warn("cannot restore the signal mask: %s", strerror(mrc));
    if (e->nthreads == 0) {
        free(e->threads);
        snprintf(err, errlen, "cannot start a thread: %s", strerror(rc));
        return -1;
    }
    return 0;
}

static void stop_workers(engine *e)
{
    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    pthread_cond_broadcast(&e->work_cv);
    pthread_mutex_unlock(&e->lock);
    for (int i = 0; i < e->nthreads; i++)
        pthread_join(e->threads[i], NULL);
    free(e->threads);
}

static void collect_local(engine *e)
{
    if (!e->nthreads)
        return;
    pthread_mutex_lock(&e->lock);
    job *list = e->done_head;
    e->done_head = e->done_tail = NULL;
    e->ndone = 0;
    e->wake_pending = false;
    pthread_mutex_unlock(&e->lock);
    while (list) {
        job *j = list;
        list = j->next;
        local_finished(e, j);
    }
}

/* ---- libcurl transfers ---------------------------------------------------- */

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

/* Open (first attempt) or rewind/position (retry) the download's file.
 * Returns the offset to resume from, or -1 with j->error set. */
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

static int64_t prepare_download(const engine *e, job *j)
{
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
        } else if (e->o->resume) {
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
        j->restart = j->written > 0 && !j->resumable;
        if (wants_digest(e, j) && new_digest(j) < 0)
            return -1;
        if (j->md && !j->restart && j->written && hash_prefix(j, j->written) < 0) {
            snprintf(j->error, sizeof j->error, "cannot read %s: %s", dst, strerror(errno));
            return -1;
        }
    }
    if (j->restart || !j->resumable) {
        if (j->written && ftruncate(j->fd, 0) < 0) {
            snprintf(j->error, sizeof j->error, "cannot truncate %s: %s", dst, strerror(errno));
            return -1;
        }
        j->written = 0;
        j->restart = false;
        if (wants_digest(e, j) && new_digest(j) < 0)
            return -1;
    }
    if (lseek(j->fd, (off_t)j->written, SEEK_SET) < 0) {
        snprintf(j->error, sizeof j->error, "cannot seek in %s: %s", dst, strerror(errno));
        return -1;
    }
    return (int64_t)j->written;
}

static int prepare_upload(const engine *e, job *j, curl_off_t *size)
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
        if (wants_digest(e, j)) {
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

static CURL *new_easy(const engine *e, job *j, const char *url)
{
    const pano_copy_options *o = e->o;
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

/* Start one libcurl attempt. -1 with j->error set when it cannot start. */
/* Run c for j on the multi handle (c == NULL: libcurl could not make it). */
static int add_easy(engine *e, job *j, CURL *c)
{
    if (!c) {
        snprintf(j->error, sizeof j->error, "libcurl could not create a transfer");
        return -1;
    }
    j->write_errno = 0;
    CURLMcode mc = curl_multi_add_handle(e->multi, c);
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
static int start_send(engine *e, job *j, curl_off_t from)
{
    j->resumed_at = from;
    j->read_some = false;
    CURL *c = new_easy(e, j, j->spec->dst_url);
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
    return add_easy(e, j, c);
}

static size_t discard(char *data, size_t size, size_t n, void *ud)
{
    (void)data;
    (void)ud;
    return size * n;
}

/* Ask the server how much of DST it has (FTP SIZE, sftp stat): see
 * upload_probed and upload_checked. */
static int start_probe(engine *e, job *j, probe_kind kind)
{
    CURL *c = new_easy(e, j, j->spec->dst_url);
    if (c) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard); /* FTP's header lines */
    }
    j->probe = kind;
    return add_easy(e, j, c);
}

/* An upload attempt succeeded: the data is on the server. */
static void upload_done(engine *e, job *j)
{
    if (j->fd >= 0 && j->kind != KIND_THIRD_PARTY) {
        close(j->fd); /* a relay file is kept until the job is final */
        j->fd = -1;
    }
    attempt_ended(e, j, true);
}

/* After a resumed send the server's file must be exactly the data: what
 * the first probe saw may have grown since (the failed attempt's server
 * side still writing what it had received), and appending to that would
 * leave a wrong file. Then the next attempt sends it all. */
static void upload_checked(engine *e, job *j, curl_off_t have)
{
    if (have == j->size) {
        upload_done(e, j);
        return;
    }
    snprintf(j->error, sizeof j->error,
             "resumed at byte %lld, but the server's file then had %lld bytes instead of %lld",
             (long long)j->resumed_at, (long long)have, (long long)j->size);
    j->retryable = true;
    j->no_resume = true;
    attempt_ended(e, j, false);
}

/* The server has `have` bytes of DST (-1: no such file). It is asked only
 * when DST holds a prefix of the data: an earlier send of this run wrote
 * it (libcurl read data only once it had opened DST, truncating it), or
 * --continue says it is what an earlier run left. A file larger than the
 * data is no such prefix, and is replaced. */
static void upload_probed(engine *e, job *j, curl_off_t have)
{
    if (j->sent_end >= 0 && have > j->sent_end && have <= j->size) {
        /* libcurl counts what the server acknowledged (sftp): when the
         * connection broke, the server had received more */
        uint64_t unseen = (uint64_t)(have - j->sent_end);
        j->bytes += unseen;
        e->bytes_done += unseen;
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
    if (start_send(e, j, from) < 0)
        attempt_ended(e, j, false);
}

static int start_curl(engine *e, job *j)
{
    j->fresh = j->attempts > 1;
    if (!receiving(j)) {
        curl_off_t size;
        if (prepare_upload(e, j, &size) < 0)
            return -1;
        j->size = size;
        if (appends(j->spec->dst_url) && !j->no_resume && (j->dst_ours || e->o->resume))
            return start_probe(e, j, PROBE_BEFORE);
        return start_send(e, j, 0);
    }
    int64_t offset = prepare_download(e, j);
    if (offset < 0)
        return -1;
    CURL *c = new_easy(e, j, j->spec->src_url);
    if (c) {
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, j);
        if (offset > 0)
            curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)offset);
    }
    return add_easy(e, j, c);
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

static void curl_finished(engine *e, job *j, CURLcode code)
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
    curl_multi_remove_handle(e->multi, c);
    curl_easy_cleanup(c);
    j->easy = NULL;
    if (j->probe != PROBE_NONE) {
        probe_kind kind = j->probe;
        j->probe = PROBE_NONE;
        if (code == CURLE_OK || code == CURLE_REMOTE_FILE_NOT_FOUND) {
            if (code != CURLE_OK)
                have = -1;
            if (kind == PROBE_BEFORE)
                upload_probed(e, j, have);
            else
                upload_checked(e, j, have);
            return;
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
            if (!ok && wants_digest(e, j) && new_digest(j) < 0)
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
            e->bytes_done += got;
            j->phase = 1;
            pano_debug("%s: received %llu bytes, sending them to %s", j->spec->src_shown,
                       (unsigned long long)j->written, j->spec->dst_shown);
            if (start_curl(e, j) < 0)
                attempt_ended(e, j, false);
            return;
        }
        if (ok && !j->in_place) {
            if (pano_local_commit(j->fd, j->tmp, j->spec->dst_path) < 0) {
                snprintf(j->error, sizeof j->error, "cannot complete %s: %s",
                         j->spec->dst_path, strerror(errno));
                j->retryable = false;
                attempt_ended(e, j, false);
                return;
            }
            free(j->tmp); /* it is DST now */
            j->tmp = NULL;
        }
    } else if (j->resumed_at > 0 && j->resumed_at < j->size) {
        /* sent the rest: check the whole (what was sent stays counted) */
        uint64_t sent = atomic_exchange(&j->live, 0);
        j->bytes += sent;
        e->bytes_done += sent;
        if (start_probe(e, j, PROBE_AFTER) < 0)
            attempt_ended(e, j, false);
        return;
    } else {
        upload_done(e, j);
        return;
    }
    attempt_ended(e, j, ok);
}

/* ---- scheduling ----------------------------------------------------------- */

static void start_job(engine *e, job *j)
{
    j->state = J_RUNNING;
    add_running(e, j);
    if (j->kind == KIND_LOCAL && e->nthreads > 0) {
        /* for the workers (hand_over): the one that takes it begins the attempt */
        e->local_inflight++;
        j->next = NULL;
        if (e->batch_tail)
            e->batch_tail->next = j;
        else
            e->batch_head = j;
        e->batch_tail = j;
        e->nbatch++;
        return;
    }
    begin_attempt(j);
    switch (j->kind) {
    case KIND_LOCAL:
        run_local(e, j);
        local_finished(e, j);
        return;
    case KIND_DOWNLOAD:
    case KIND_UPLOAD:
    case KIND_THIRD_PARTY:
        if (start_curl(e, j) < 0)
            attempt_ended(e, j, false);
        return;
    }
}

/* Queue the local copies start_job set aside, all at once. */
static void hand_over(engine *e)
{
    if (!e->batch_head)
        return;
    pthread_mutex_lock(&e->lock);
    if (e->work_tail)
        e->work_tail->next = e->batch_head;
    else
        e->work_head = e->batch_head;
    e->work_tail = e->batch_tail;
    e->queued += e->nbatch;
    if (e->nbatch > 1)
        pthread_cond_broadcast(&e->work_cv);
    else
        pthread_cond_signal(&e->work_cv);
    pthread_mutex_unlock(&e->lock);
    e->batch_head = e->batch_tail = NULL;
    e->nbatch = 0;
}

/* Interrupted before its next attempt began. */
static void report_unstarted(engine *e, job *j)
{
    if (j->attempts == 0) {
        j->start = pano_now();
        snprintf(j->error, sizeof j->error, "interrupted before it started");
    } else {
        char last[sizeof j->error];
        snprintf(last, sizeof last, "%s", j->error);
        snprintf(j->error, sizeof j->error, "interrupted while waiting to retry (%.400s)", last);
    }
    if (j->kind == KIND_DOWNLOAD || j->kind == KIND_THIRD_PARTY)
        release_download(j, false);
    else if (j->fd >= 0) {
        close(j->fd);
        j->fd = -1;
    }
    report(e, j, 1);
}

/* After pano_copy_interrupt(): every transfer that is not final becomes a
 * failure now, except local copies on workers, which finish first. */
static void stop_everything(engine *e)
{
    pthread_mutex_lock(&e->lock);
    job *queued = e->work_head;
    e->work_head = e->work_tail = NULL;
    e->queued = 0;
    pthread_mutex_unlock(&e->lock);
    while (queued) {
        job *j = queued;
        queued = j->next;
        remove_running(e, j);
        report_unstarted(e, j);
    }
    for (size_t i = 0; i < e->nrunning;) {
        job *j = e->running[i];
        if (!j->easy) {
            i++;
            continue;
        }
        curl_off_t moved = 0;
        curl_easy_getinfo(j->easy, receiving(j) ? CURLINFO_SIZE_DOWNLOAD_T
                                                 : CURLINFO_SIZE_UPLOAD_T,
                          &moved);
        atomic_store(&j->live, (uint64_t)(moved > 0 ? moved : 0));
        curl_multi_remove_handle(e->multi, j->easy);
        curl_easy_cleanup(j->easy);
        j->easy = NULL;
        snprintf(j->error, sizeof j->error, "interrupted");
        j->retryable = false;
        attempt_ended(e, j, false); /* removes it from running */
    }
    while (e->nwaiting > 0)
        report_unstarted(e, e->waiting[--e->nwaiting]);
    while (e->next < e->njobs)
        report_unstarted(e, &e->jobs[e->next++]);
}

static void tick(engine *e)
{
    if (!e->cb || !e->cb->tick)
        return;
    pano_copy_stats s = {.total = e->njobs, .done = e->done, .failed = e->failed,
                         .active = e->active, .bytes = e->bytes_done};
    if (e->nthreads) {
        pthread_mutex_lock(&e->lock);
        s.active -= e->queued; /* handed over, not started yet */
        pthread_mutex_unlock(&e->lock);
    }
    for (size_t i = 0; i < e->nrunning; i++)
        s.bytes += atomic_load_explicit(&e->running[i]->live, memory_order_relaxed);
    e->cb->tick(e->cb->ctx, &s);
}

static void engine_free(engine *e)
{
    curl_multi_cleanup(e->multi);
    free(e->jobs);
    free(e->running);
    free(e->waiting);
}

long pano_copy_run(const pano_copy_options *o, const pano_transfer_list *list,
                   const pano_copy_callbacks *cb, char *err, size_t errlen)
{
    engine e = {.o = o, .cb = cb, .njobs = list->len, .limit = o->jobs > 0 ? (size_t)o->jobs : 1};
    size_t nlocal = 0;
    e.jobs = pano_calloc(list->len ? list->len : 1, sizeof *e.jobs);
    for (size_t i = 0; i < list->len; i++) {
        job *j = &e.jobs[i];
        j->spec = &list->items[i];
        j->index = i;
        j->fd = -1;
        j->size = -1;
        j->sent_end = -1;
        atomic_init(&j->live, 0);
        bool sl = j->spec->src_path != NULL, dl = j->spec->dst_path != NULL;
        if (sl && dl && !o->curl_for_local) {
            j->kind = KIND_LOCAL;
            nlocal++;
        } else if (dl)
            j->kind = KIND_DOWNLOAD;
        else if (sl)
            j->kind = KIND_UPLOAD;
        else
            j->kind = KIND_THIRD_PARTY;
        j->resumable = (j->kind == KIND_DOWNLOAD || j->kind == KIND_THIRD_PARTY) &&
                       has_ranges(j->spec->src_url);
    }
    /* in hand at once: -j, plus local copies queued ahead */
    size_t capacity = e.limit + (e.limit > 1 && nlocal > 0 ? QUEUE_AHEAD : 0);
    e.running = pano_calloc(capacity, sizeof *e.running);
    e.waiting = pano_calloc(capacity, sizeof *e.waiting);
    e.multi = curl_multi_init();
    if (!e.multi) {
        snprintf(err, errlen, "libcurl could not start");
        engine_free(&e);
        return -1;
    }
    int rc = pthread_mutex_init(&e.lock, NULL);
    if (rc == 0 && (rc = pthread_cond_init(&e.work_cv, NULL)) != 0)
        pthread_mutex_destroy(&e.lock);
    if (rc != 0) {
        snprintf(err, errlen, "cannot set up threads: %s", strerror(rc));
        engine_free(&e);
        return -1;
    }
    if (e.limit > 1 && nlocal > 0 &&
        start_workers(&e, (int)(e.limit < nlocal ? e.limit : nlocal), err, errlen) < 0) {
        pthread_mutex_destroy(&e.lock);
        pthread_cond_destroy(&e.work_cv);
        engine_free(&e);
        return -1;
    }

    double next_tick = pano_now() + TICK_MS / 1000.0;
    bool stopped = false;
    while (e.done < e.njobs) {
        if (atomic_load(&interrupted) && !stopped) {
            stop_everything(&e);
            stopped = true;
            if (e.done >= e.njobs)
                break;
        }
        /* Start what may start: due retries first, then new transfers. */
        double now = pano_now();
        for (size_t i = 0; i < e.nwaiting;) {
            job *j = e.waiting[i];
            if (j->due <= now && e.active < limit_for(&e, j)) {
                e.waiting[i] = e.waiting[--e.nwaiting];
                start_job(&e, j);
            } else
                i++;
        }
        /* (Local copies may run inline here: come back to libcurl and the
         * progress line at least every 50 ms.) */
        while (e.next < e.njobs && e.active + e.nwaiting < limit_for(&e, &e.jobs[e.next]) &&
               !atomic_load(&interrupted) && pano_now() - now < 0.05)
            start_job(&e, &e.jobs[e.next++]);
        hand_over(&e);
        if (e.done >= e.njobs)
            break;

        int running = 0;
        CURLMcode mc = curl_multi_perform(e.multi, &running);
        if (mc != CURLM_OK)
            pano_warn("libcurl: %s", curl_multi_strerror(mc));
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(e.multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            job *j = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
            curl_finished(&e, j, msg->data.result);
        }
        collect_local(&e);

        now = pano_now();
        if (now >= next_tick) {
            tick(&e);
            next_tick = now + TICK_MS / 1000.0;
        }
        if (e.cb && e.cb->flush)
            e.cb->flush(e.cb->ctx);
        if (e.done >= e.njobs)
            break;
        /* May something start right away? */
        if (e.next < e.njobs && e.active + e.nwaiting < limit_for(&e, &e.jobs[e.next]) &&
            !atomic_load(&interrupted))
            continue;
        double wait = next_tick - now;
        if (e.local_inflight > 0 && wait > COLLECT_MS / 1000.0)
            wait = COLLECT_MS / 1000.0;
        for (size_t i = 0; i < e.nwaiting; i++)
            if (e.waiting[i]->due - now < wait)
                wait = e.waiting[i]->due - now;
        if (wait > 0) {
            mc = curl_multi_poll(e.multi, NULL, 0, (int)(wait * 1000) + 1, NULL);
            if (mc != CURLM_OK)
                pano_warn("libcurl: %s", curl_multi_strerror(mc));
        }
    }
    tick(&e);
    if (e.cb && e.cb->flush)
        e.cb->flush(e.cb->ctx);

    if (e.nthreads)
        stop_workers(&e);
    pthread_mutex_destroy(&e.lock);
    pthread_cond_destroy(&e.work_cv);
    long failed = (long)e.failed;
    engine_free(&e);
    return failed;
}
