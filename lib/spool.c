#include "spool.h"

#include "clock.h"
#include "event.h"
#include "log.h"
#include "mem.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_MAGIC "PANO-SPOOL 1\n"
/* Entries larger than this are not spooled (and not read back). */
#define ENTRY_MAX (256u * 1024 * 1024)
/* Temporary files left by a crashed writer are removed after this long. */
#define STALE_TMP_SECONDS 3600

struct pano_spool {
    char *path;
    int dirfd;
    int lockfd;
    uint64_t max_bytes;
    uint64_t cached_bytes; /* our estimate of the entries' total size */
    uint64_t dropped;
    /* The directory's mtime when it was last found empty, if that mtime
     * was old enough to tell every later change apart (see pano_spool_pending) */
    struct timespec empty_mtime;
    bool empty_known;
};

typedef struct {
    char name[64];
    uint64_t size;
} entry;

char *pano_spool_default_root(void)
{
    return pano_asprintf("/var/tmp/pano-spool-%lu", (unsigned long)geteuid());
}

/* A directory we can trust: ours, a real directory, not writable by others. */
static int check_dir(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        snprintf(err, errlen, "spool directory %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "spool directory %s is not a directory", path);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "spool directory %s belongs to uid %lu, not to us", path,
                 (unsigned long)st.st_uid);
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, errlen, "spool directory %s is writable by others (mode %o)", path,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* mkdir -p with mode 0700 for the directories we create. */
static int make_dirs(const char *path, char *err, size_t errlen)
{
    char *copy = pano_strdup(path);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0700) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", copy, strerror(errno));
            free(copy);
            return -1;
        }
        *p = '/';
    }
    int rc = 0;
    if (mkdir(copy, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", copy, strerror(errno));
        rc = -1;
    }
    free(copy);
    return rc;
}

static bool is_entry_name(const char *name)
{
    /* 20 digits '-' 10 digits '-' 8 digits ".ev" */
    static const char pattern[] = "DDDDDDDDDDDDDDDDDDDD-DDDDDDDDDD-DDDDDDDD.ev";
    if (strlen(name) != sizeof pattern - 1)
        return false;
    for (size_t i = 0; pattern[i]; i++) {
        if (pattern[i] == 'D' ? (name[i] < '0' || name[i] > '9') : name[i] != pattern[i])
            return false;
    }
    return true;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* The entries in name (= spool) order; removes stale temporary files. */
static entry *list_entries(int dirfd, size_t *count, uint64_t *total)
{
    *count = 0;
    *total = 0;
    int fd = dup(dirfd);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return NULL;
    }
    rewinddir(d);
    entry *list = NULL;
    size_t cap = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (strncmp(de->d_name, ".tmp-", 5) == 0) {
            if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                now - st.st_mtime > STALE_TMP_SECONDS)
                unlinkat(dirfd, de->d_name, 0);
            continue;
        }
        if (!is_entry_name(de->d_name))
            continue;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (*count == cap) {
            cap = cap ? 2 * cap : 64;
            list = pano_reallocarray(list, cap, sizeof *list);
        }
        snprintf(list[*count].name, sizeof list[*count].name, "%.63s", de->d_name);
        list[*count].size = (uint64_t)st.st_size;
        *total += (uint64_t)st.st_size;
        (*count)++;
    }
    closedir(d);
    if (*count > 1)
        qsort(list, *count, sizeof *list, cmp_entry);
    return list;
}

/* The name of a destination's directory: 64-bit FNV-1a of the destination.
 * A hash for naming, not for security (the directory is the user's own);
 * SHA-256 from libcrypto would cost every publisher about 1 ms of CPU at
 * start, initialising OpenSSL. */
static uint64_t name_hash(const char *destination)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const unsigned char *p = (const unsigned char *)destination; *p; p++)
        h = (h ^ *p) * 0x100000001b3u;
    return h;
}

pano_spool *pano_spool_open(const char *root, const char *destination, uint64_t max_bytes,
                            char *err, size_t errlen)
{
    if (make_dirs(root, err, errlen) < 0 || check_dir(root, err, errlen) < 0)
        return NULL;
    pano_spool *sp = pano_calloc(1, sizeof *sp);
    sp->dirfd = sp->lockfd = -1;
    sp->max_bytes = max_bytes;
    sp->path = pano_asprintf("%s/%016" PRIx64, root, name_hash(destination));
    if (mkdir(sp->path, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", sp->path, strerror(errno));
        goto fail;
    }
    if (check_dir(sp->path, err, errlen) < 0)
        goto fail;
    sp->dirfd = open(sp->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sp->dirfd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", sp->path, strerror(errno));
        goto fail;
    }
    sp->lockfd = openat(sp->dirfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (sp->lockfd < 0) {
        snprintf(err, errlen, "cannot open %s/.lock: %s", sp->path, strerror(errno));
        goto fail;
    }
    /* For people looking at the spool: which broker this directory is for. */
    if (faccessat(sp->dirfd, "destination", F_OK, 0) < 0) {
        int fd = openat(sp->dirfd, "destination", O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                        0600);
        if (fd >= 0) {
            size_t n = strlen(destination);
            if (write(fd, destination, n) != (ssize_t)n || write(fd, "\n", 1) != 1)
                pano_debug("cannot write %s/destination", sp->path);
            close(fd);
        }
    }
    size_t count;
    free(list_entries(sp->dirfd, &count, &sp->cached_bytes));
    if (count)
        pano_info("spool %s holds %zu undelivered event(s)", sp->path, count);
    return sp;

fail:
    pano_spool_close(sp);
    return NULL;
}

void pano_spool_close(pano_spool *sp)
{
    if (!sp)
        return;
    if (sp->dirfd >= 0)
        close(sp->dirfd);
    if (sp->lockfd >= 0)
        close(sp->lockfd);
    free(sp->path);
    free(sp);
}

const char *pano_spool_path(const pano_spool *sp) { return sp->path; }

uint64_t pano_spool_dropped(const pano_spool *sp) { return sp->dropped; }

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static bool lock_spool(pano_spool *sp, double wait)
{
    double deadline = pano_monotonic() + wait;
    for (;;) {
        if (flock(sp->lockfd, LOCK_EX | LOCK_NB) == 0)
            return true;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            pano_warn("cannot lock spool %s: %s", sp->path, strerror(errno));
            return false;
        }
        if (pano_monotonic() >= deadline)
            return false;
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

static void unlock_spool(pano_spool *sp)
{
    if (flock(sp->lockfd, LOCK_UN) < 0)
        pano_warn("cannot unlock spool %s: %s", sp->path, strerror(errno));
}

/* The persistent count of dropped entries, in <dir>/.dropped. */
static uint64_t read_dropped_file(pano_spool *sp)
{
    int fd = openat(sp->dirfd, ".dropped", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    char buf[32] = "";
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtoull(buf, NULL, 10);
}

static void write_dropped_file(pano_spool *sp, uint64_t count)
{
    if (count == 0) {
        unlinkat(sp->dirfd, ".dropped", 0);
        return;
    }
    int fd = openat(sp->dirfd, ".dropped", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                    0600);
    if (fd < 0)
        return;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%" PRIu64 "\n", count);
    if (write_all(fd, buf, (size_t)n) < 0)
        pano_warn("cannot record dropped spool entries in %s: %s", sp->path, strerror(errno));
    close(fd);
}

/* Delete the oldest entries until the spool fits in max_bytes. Skipped when
 * another process holds the lock: it is replaying, which empties the spool. */
static void trim(pano_spool *sp)
{
    if (!lock_spool(sp, 0))
        return;
    size_t count;
    uint64_t total;
    entry *list = list_entries(sp->dirfd, &count, &total);
    uint64_t dropped_now = 0;
    for (size_t i = 0; i < count && total > sp->max_bytes; i++) {
        if (unlinkat(sp->dirfd, list[i].name, 0) < 0)
            continue;
        total -= list[i].size;
        dropped_now++;
    }
    free(list);
    sp->cached_bytes = total;
    if (dropped_now) {
        sp->dropped += dropped_now;
        uint64_t persistent = read_dropped_file(sp) + dropped_now;
        write_dropped_file(sp, persistent);
        pano_error("spool %s is full (limit %" PRIu64 " bytes): dropped the %" PRIu64
                   " oldest undelivered event(s); %" PRIu64 " dropped so far",
                   sp->path, sp->max_bytes, dropped_now, persistent);
    }
    unlock_spool(sp);
}

/* A name that sorts after every name this process made before. */
static void new_entry_name(char *out, size_t size)
{
    static uint64_t last_ns, counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t prev = __atomic_load_n(&last_ns, __ATOMIC_SEQ_CST), next;
    do
        next = now > prev ? now : prev + 1;
    while (!__atomic_compare_exchange_n(&last_ns, &prev, next, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST));
    uint64_t c = __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST) % 100000000u;
    snprintf(out, size, "%020" PRIu64 "-%010lu-%08" PRIu64 ".ev", next,
             (unsigned long)getpid(), c);
}

/* Write one entry into the directory dirfd (path for messages), atomically:
 * a hidden temporary file, fsync'ed, renamed into place, the directory
 * fsync'ed. why, if not NULL, is recorded in the header. Returns the entry's
 * size, or 0 with a message in err. */
static uint64_t write_entry(int dirfd, const char *path, const char *routing_key,
                            const char *event_id, const char *why, const char *json, size_t len,
                            char *err, size_t errlen)
{
    if (!event_id)
        event_id = "";
    if (strchr(routing_key, '\n') || strchr(event_id, '\n')) {
        snprintf(err, errlen, "routing key or event id holds a line break");
        return 0;
    }
    if (len > ENTRY_MAX) {
        snprintf(err, errlen, "event of %zu bytes is too large for the spool", len);
        return 0;
    }
    char name[64], tmp[80];
    new_entry_name(name, sizeof name);
    snprintf(tmp, sizeof tmp, ".tmp-%s", name);
    /* The reason is one line, for people: line breaks in it become spaces. */
    char *reason = why ? pano_asprintf("why=%.1000s\n", why) : NULL;
    for (char *c = reason; c && c[1]; c++)
        if (*c == '\n')
            *c = ' ';
    char *header = pano_asprintf(ENTRY_MAGIC "key=%s\nid=%s\nlen=%zu\n%s\n", routing_key,
                                 event_id, len, reason ? reason : "");
    free(reason);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a spool entry in %s: %s", path, strerror(errno));
        free(header);
        return 0;
    }
    size_t hlen = strlen(header);
    bool ok = write_all(fd, header, hlen) == 0 && write_all(fd, json, len) == 0 && fsync(fd) == 0;
    free(header);
    ok = close(fd) == 0 && ok;
    if (!ok)
        snprintf(err, errlen, "cannot write a spool entry in %s: %s", path, strerror(errno));
    if (ok && renameat(dirfd, tmp, dirfd, name) < 0) {
        snprintf(err, errlen, "cannot store a spool entry in %s: %s", path, strerror(errno));
        ok = false;
    }
    if (!ok) {
        unlinkat(dirfd, tmp, 0);
        return 0;
    }
    if (fsync(dirfd) < 0)
        pano_warn("fsync of spool %s: %s", path, strerror(errno));
    return hlen + len;
}

int pano_spool_put(pano_spool *sp, const char *routing_key, const char *event_id,
                   const char *json, size_t len, char *err, size_t errlen)
{
    uint64_t size = write_entry(sp->dirfd, sp->path, routing_key, event_id, NULL, json, len,
                                err, errlen);
    if (size == 0)
        return -1;
    sp->cached_bytes += size;
    if (sp->cached_bytes > sp->max_bytes)
        trim(sp);
    return 0;
}

bool pano_spool_pending(pano_spool *sp)
{
    /* Entries come and go by name in this directory, which changes its
     * mtime: the same mtime as when it was found empty means it still is,
     * for the cost of an fstat instead of a directory read. Timestamps are
     * as coarse as the kernel's clock tick: a change within the same tick
     * as the one before could keep the mtime, so an mtime is trusted only
     * when it was a second old already when the directory was read. */
    struct stat st;
    bool have_mtime = fstat(sp->dirfd, &st) == 0;
    if (have_mtime && sp->empty_known && st.st_mtim.tv_sec == sp->empty_mtime.tv_sec &&
        st.st_mtim.tv_nsec == sp->empty_mtime.tv_nsec)
        return false;
    sp->empty_known = false;
    int fd = dup(sp->dirfd);
    if (fd < 0)
        return false;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return false;
    }
    rewinddir(d);
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d)))
        found = is_entry_name(de->d_name);
    closedir(d);
    if (!found && have_mtime &&
        pano_now() - ((double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9) > 1.0) {
        sp->empty_mtime = st.st_mtim;
        sp->empty_known = true;
    }
    return found;
}

/* Read and check one entry. Returns the whole file (free it) with the parts
 * pointing into it, or NULL when it is unreadable or malformed (why in err). */
static char *read_entry(pano_spool *sp, const char *name, const char **key, const char **id,
                        const char **body, size_t *len, char *err, size_t errlen)
{
    int fd = openat(sp->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size > (off_t)ENTRY_MAX + 4096) {
        snprintf(err, errlen, "unusable size");
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    char *data = pano_malloc(size + 1);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    data[got] = '\0';
    size_t mlen = strlen(ENTRY_MAGIC);
    char *k, *i, *l, *end;
    if (got != size || got < mlen || memcmp(data, ENTRY_MAGIC, mlen) != 0 ||
        strncmp(k = data + mlen, "key=", 4) != 0 || !(i = strchr(k, '\n')) ||
        strncmp(++i, "id=", 3) != 0 || !(l = strchr(i, '\n')) || strncmp(++l, "len=", 4) != 0 ||
        !(end = strstr(l, "\n\n"))) {
        snprintf(err, errlen, "bad header");
        free(data);
        return NULL;
    }
    i[-1] = '\0';
    l[-1] = '\0';
    *end = '\0';
    char *reason = strstr(l, "\nwhy="); /* in entries put aside by pano_spool_reject */
    if (reason)
        *reason = '\0';
    char *stop;
    unsigned long long n = strtoull(l + 4, &stop, 10);
    char *payload = end + 2;
    if (*stop != '\0' || n != (unsigned long long)(got - (size_t)(payload - data))) {
        snprintf(err, errlen, "length does not match (incomplete entry)");
        free(data);
        return NULL;
    }
    *key = k + 4;
    *id = i + 3;
    *body = payload;
    *len = (size_t)n;
    return data;
}

int pano_spool_reject(pano_spool *sp, const char *routing_key, const char *event_id,
                      const char *json, size_t len, const char *why, char *err, size_t errlen)
{
    char *path = pano_asprintf("%s/" PANO_SPOOL_REJECTED_DIR, sp->path);
    int dirfd = -1, rc = -1;
    if (mkdirat(sp->dirfd, PANO_SPOOL_REJECTED_DIR, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        goto out;
    }
    dirfd = openat(sp->dirfd, PANO_SPOOL_REJECTED_DIR,
                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    size_t count;
    uint64_t total;
    free(list_entries(dirfd, &count, &total));
    if (total + len > sp->max_bytes)
        snprintf(err, errlen, "%s is full (%" PRIu64 " bytes, pano.spool.max_size)", path,
                 total);
    else if (write_entry(dirfd, path, routing_key, event_id, why, json, len, err, errlen) > 0)
        rc = 0;
out:
    if (dirfd >= 0)
        close(dirfd);
    free(path);
    return rc;
}

/* A spooled event the broker refused: kept aside, or at least logged. */
static void put_aside(pano_spool *sp, const char *key, const char *id, const char *body,
                      size_t len, const char *why)
{
    char err[512];
    if (pano_spool_reject(sp, key, id, body, len, why, err, sizeof err) == 0)
        pano_error("spooled event refused by the broker (%s); kept in %s/" PANO_SPOOL_REJECTED_DIR,
                   why, sp->path);
    else
        pano_error("spooled event refused by the broker (%s), and %s; removed: %.*s", why, err,
                   (int)len, body);
}

int pano_spool_replay(pano_spool *sp, pano_spool_send_fn send, void *user, double lock_wait,
                      char *err, size_t errlen)
{
    if (!lock_spool(sp, lock_wait)) {
        snprintf(err, errlen, "spool %s is being replayed by another process", sp->path);
        return -2;
    }
    uint64_t dropped = read_dropped_file(sp);
    if (dropped) {
        pano_error("spool %s: %" PRIu64 " undelivered event(s) had been dropped because "
                   "the spool was full (pano.spool.max_size)",
                   sp->path, dropped);
        write_dropped_file(sp, 0);
    }
    size_t count;
    uint64_t total;
    entry *list = list_entries(sp->dirfd, &count, &total);
    int sent = 0, rc = 0;
    for (size_t e = 0; e < count; e++) {
        const char *key, *id, *body;
        size_t len;
        char why[256];
        char *data = read_entry(sp, list[e].name, &key, &id, &body, &len, why, sizeof why);
        if (!data) {
            pano_error("spool entry %s/%s is unusable (%s); removed", sp->path, list[e].name,
                       why);
            unlinkat(sp->dirfd, list[e].name, 0);
            total -= list[e].size;
            continue;
        }
        pano_spool_result r = send(user, key, *id ? id : NULL, body, len, err, errlen);
        if (r == PANO_SPOOL_FAILED) {
            free(data);
            rc = -1;
            break;
        }
        if (r == PANO_SPOOL_REJECTED)
            put_aside(sp, key, id, body, len, err);
        else
            sent++;
        if (unlinkat(sp->dirfd, list[e].name, 0) < 0)
            pano_warn("cannot remove spool entry %s/%s: %s", sp->path, list[e].name,
                      strerror(errno));
        total -= list[e].size;
        free(data);
    }
    free(list);
    sp->cached_bytes = total;
    unlock_spool(sp);
    if (sent)
        pano_info("replayed %d spooled event(s) from %s", sent, sp->path);
    return rc < 0 ? -1 : sent;
}
