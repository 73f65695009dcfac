#include "proctree.h"

#include "netbytes.h"

#include "log.h"
#include "mem.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Descriptors of /proc files kept open between samples (pread at offset 0
 * regenerates them): one open() per process instead of one per sample.
 * Past this many, files are opened and closed on every read. */
#define MAX_KEPT_FDS 600

/* At most this many new pids are looked at instead of a full walk (see
 * no_new_member). */
#define MAX_LOOKS 16

typedef struct {
    pid_t pid;
    int stat_fd, io_fd, children_fd, status_fd;
    unsigned seen;        /* sample number it was last found in the tree */
    pano_proc_stat stat;  /* last reading */
    pano_proc_io io;
    bool has_io;
    uint64_t vcsw, ivcsw; /* its threads' context switches, last reading */
    uint64_t gone_vcsw, gone_ivcsw; /* its descendants' that are gone */
    uint64_t pss, uss;    /* kB, when read this sample */
    bool has_pss;
    uint64_t netns;       /* its network namespace (pano_netns_of) */
} proc;

struct pano_proctree {
    pid_t root;
    bool children_files;
    long ticks;    /* sysconf(_SC_CLK_TCK) */
    long page_kb;  /* page size in kB */
    unsigned round;
    proc *procs;
    size_t count, cap;
    int *index; /* open addressing on pid: index into procs + 1, 0 = empty */
    size_t index_cap;
    int kept_fds;
    /* children of root that exited and were reaped by the monitor */
    double reaped_utime, reaped_stime;
    pano_proc_io reaped_io;
    pano_proc_io zombie_io; /* read by pano_proctree_zombie() */
    pid_t zombie_pid;
    bool zombie_ok;
    uint64_t gone_iowait_ticks; /* last readings of processes gone */
    uint64_t gone_vcsw, gone_ivcsw; /* of processes gone whose parent is not known */
    uint64_t reaped_vcsw, reaped_ivcsw; /* wait4's, of the children of root */
    unsigned pss_every, ctxt_every, net_every, samples;
    bool pss_now, ctxt_now, net_now; /* read them in the sample under way */
    bool full_next; /* read everything in the next sample */
    pano_tree_totals last;      /* what was reported, to keep totals monotonic */
    int root_children_fd;
    /* Skipping the children files (see pano_proctree_sample): the last pid
     * the kernel allocated when the previous walk started (-1: unknown),
     * whether the walk under way saw no process or thread go, and whether
     * the tree is settled: the previous walk was clean and no pid went to
     * the tree since the one before it started. */
    int last_pid_fd;
    bool no_last_pid; /* the kernel does not say (no CONFIG_CHECKPOINT_RESTORE) */
    long walk_last_pid;
    bool clean, settled;
    /* Pids allocated since the previous sample that had no /proc entry
     * when looked at (see no_new_member) */
    pid_t pending[MAX_LOOKS];
    size_t npending;
    uint64_t stable_walks;
    pid_t ignored;
    pano_netbytes *net;
    pid_t *live; /* the live processes of the sample under way */
    uint64_t *live_netns; /* and their network namespaces */
    size_t nlive;
    pid_t *queue;
    size_t queue_cap;
    char *buf;
    size_t buf_cap;
};

/* ---- parsing -------------------------------------------------------------- */

/* The decimal number at p (before stop), in *v. Returns the first byte after
 * it, or NULL when there is no digit. Parsed in place: this runs for every
 * process of the tree at every sample. */
static const char *parse_decimal(const char *p, const char *stop, uint64_t *v)
{
    const char *digits = p;
    uint64_t value = 0;
    while (p < stop && *p >= '0' && *p <= '9')
        value = value * 10 + (uint64_t)(*p++ - '0');
    *v = value;
    return p == digits ? NULL : p;
}

/* The fields of /proc/PID/stat kept (numbered from 1 as in proc(5)); the
 * others are stepped over without being converted. */
#define STAT_FIELD(n) (UINT64_C(1) << (n))
static const uint64_t stat_fields_kept = STAT_FIELD(4) | STAT_FIELD(14) | STAT_FIELD(15) |
                                         STAT_FIELD(16) | STAT_FIELD(17) | STAT_FIELD(20) |
                                         STAT_FIELD(22) | STAT_FIELD(23) | STAT_FIELD(24) |
                                         STAT_FIELD(42);

bool pano_proc_stat_parse(const char *buf, size_t len, pano_proc_stat *out)
{
    memset(out, 0, sizeof *out);
    const char *stop = buf + len;
    const char *open = memchr(buf, '(', len);
    const char *close = memrchr(buf, ')', len);
    if (!open || !close || close < open || open - buf > 24)
        return false;
    uint64_t pid;
    const char *end = parse_decimal(buf, stop, &pid);
    if (!end || *end != ' ' || pid == 0 || pid > INT32_MAX)
        return false;
    out->pid = (int)pid;
    size_t clen = (size_t)(close - open - 1);
    if (clen >= sizeof out->comm)
        clen = sizeof out->comm - 1;
    memcpy(out->comm, open + 1, clen);
    out->comm[clen] = '\0';

    /* Fields 3.. after ") ", one space apart. */
    uint64_t field[43];
    const char *p = close + 1;
    int n = 3;
    for (; n <= 42; n++) {
        if (p >= stop || *p != ' ' || ++p >= stop || *p == '\n')
            break;
        if (n == 3) {
            out->state = *p;
            while (p < stop && *p != ' ')
                p++;
        } else if (stat_fields_kept & STAT_FIELD(n)) {
            bool negative = *p == '-';
            if (!(p = parse_decimal(p + negative, stop, &field[n])) ||
                (p < stop && *p != ' ' && *p != '\n'))
                return false;
            if (negative)
                field[n] = (uint64_t)(-(int64_t)field[n]);
        } else
            while (p < stop && *p != ' ' && *p != '\n')
                p++;
    }
    if (n <= 24) /* everything up to rss is required */
        return false;
    out->ppid = (int)field[4];
    out->utime = field[14];
    out->stime = field[15];
    out->cutime = field[16];
    out->cstime = field[17];
    out->num_threads = (int64_t)field[20];
    out->starttime = field[22];
    out->vsize = field[23];
    out->rss = (int64_t)field[24];
    out->blkio_ticks = n > 42 ? field[42] : 0;
    return true;
}

bool pano_proc_io_parse(const char *buf, size_t len, pano_proc_io *out)
{
    memset(out, 0, sizeof *out);
#define KEY(name) {#name, sizeof #name - 1, offsetof(pano_proc_io, name)}
    static const struct {
        const char *name;
        size_t len, offset;
    } keys[] = {KEY(rchar), KEY(wchar), KEY(syscr), KEY(syscw), KEY(read_bytes), KEY(write_bytes)};
#undef KEY
    const size_t nkeys = sizeof keys / sizeof keys[0];
    int found = 0;
    size_t next = 0; /* the kernel writes them in this order: tried first */
    const char *p = buf, *stop = buf + len;
    while (p < stop) {
        const char *eol = memchr(p, '\n', (size_t)(stop - p));
        if (!eol)
            eol = stop;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        for (size_t tries = 0, k = next; colon && tries < nkeys; tries++, k = (k + 1) % nkeys) {
            if ((size_t)(colon - p) != keys[k].len || memcmp(p, keys[k].name, keys[k].len) != 0)
                continue;
            const char *d = colon + 1;
            while (d < eol && *d == ' ')
                d++;
            uint64_t v;
            if (parse_decimal(d, eol, &v)) {
                *(uint64_t *)((char *)out + keys[k].offset) = v;
                found++;
            }
            next = (k + 1) % nkeys;
            break;
        }
        p = eol + 1;
    }
    return found > 0;
}

/* What follows `key` (a line's start, "Pss:") and its blanks in buf, up to
 * the line's end (*eol), or NULL when no line starts with it. */
static const char *line_value(const char *buf, size_t len, const char *key, const char **eol)
{
    size_t klen = strlen(key);
    const char *stop = buf + len;
    for (const char *p = buf; p && p + klen < stop; p = memchr(p, '\n', (size_t)(stop - p))) {
        if (*p == '\n')
            p++;
        if ((size_t)(stop - p) > klen && memcmp(p, key, klen) == 0) {
            p += klen;
            while (p < stop && (*p == ' ' || *p == '\t'))
                p++;
            *eol = memchr(p, '\n', (size_t)(stop - p));
            if (!*eol)
                *eol = stop;
            return p;
        }
    }
    return NULL;
}

/* The number after `key` in buf, in *v. */
static bool line_number(const char *buf, size_t len, const char *key, uint64_t *v)
{
    const char *eol, *p = line_value(buf, len, key, &eol);
    return p && parse_decimal(p, eol, v) != NULL;
}

bool pano_proc_ctxt_parse(const char *buf, size_t len, uint64_t *vol, uint64_t *inv)
{
    return line_number(buf, len, "voluntary_ctxt_switches:", vol) &&
           line_number(buf, len, "nonvoluntary_ctxt_switches:", inv);
}

bool pano_proc_nspid_parse(const char *buf, size_t len, pid_t *pids, size_t max, size_t *n)
{
    *n = 0;
    const char *eol, *p = line_value(buf, len, "NSpid:", &eol);
    while (p && p < eol && *n < max) {
        uint64_t v;
        if (!(p = parse_decimal(p, eol, &v)) || v == 0 || v > INT32_MAX)
            return false;
        pids[(*n)++] = (pid_t)v;
        while (p < eol && (*p == ' ' || *p == '\t'))
            p++;
    }
    return *n > 0;
}

bool pano_proc_pss_parse(const char *buf, size_t len, uint64_t *pss, uint64_t *uss)
{
    uint64_t clean, dirty;
    if (!line_number(buf, len, "Pss:", pss) || !line_number(buf, len, "Private_Clean:", &clean) ||
        !line_number(buf, len, "Private_Dirty:", &dirty))
        return false;
    *uss = clean + dirty;
    return true;
}

/* ---- reading /proc ---------------------------------------------------------- */

/* Read /proc/<pid>/<what>, or /proc/<pid>/task/<tid>/<what> when tid > 0,
 * into t->buf, NUL-terminated. *fd caches an open descriptor (-1: none yet).
 * Returns the length, or -1 (the file or the process is gone). */
static ssize_t read_proc(pano_proctree *t, int *fd, pid_t pid, const char *what, pid_t tid)
{
    bool fresh = false;
    if (*fd < 0) {
        char path[96];
        if (tid > 0)
            snprintf(path, sizeof path, "/proc/%d/task/%d/%s", (int)pid, (int)tid, what);
        else
            snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
        *fd = open(path, O_RDONLY | O_CLOEXEC);
        if (*fd < 0)
            return -1;
        fresh = true;
    }
    size_t len = 0;
    for (;;) {
        if (t->buf_cap - len < 4096) {
            t->buf_cap = t->buf_cap ? 2 * t->buf_cap : 8192;
            t->buf = pano_realloc(t->buf, t->buf_cap);
        }
        size_t want = t->buf_cap - len - 1;
        ssize_t n = pread(*fd, t->buf + len, want, (off_t)len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(*fd);
            if (!fresh)
                t->kept_fds--;
            *fd = -1;
            return -1;
        }
        len += (size_t)n;
        /* These are seq_files: a read fills the buffer unless the text
         * ended, so a short read is the end (and saves a read per file). */
        if (n == 0 || (size_t)n < want)
            break;
    }
    t->buf[len] = '\0';
    if (fresh) {
        if (t->kept_fds < MAX_KEPT_FDS)
            t->kept_fds++;
        else {
            close(*fd);
            *fd = -1;
        }
    }
    return (ssize_t)len;
}

static void close_fd(pano_proctree *t, int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        t->kept_fds--;
        *fd = -1;
    }
}

/* read_proc() for a file read once: its descriptor is not kept. */
static ssize_t read_proc_once(pano_proctree *t, pid_t pid, const char *what, pid_t tid)
{
    int fd = -1;
    ssize_t len = read_proc(t, &fd, pid, what, tid);
    close_fd(t, &fd);
    return len;
}

/* ---- the process table ------------------------------------------------------ */

static void rebuild_index(pano_proctree *t)
{
    size_t want = 64;
    while (want < 2 * t->count + 2)
        want *= 2;
    if (want != t->index_cap) {
        free(t->index);
        t->index = pano_calloc(want, sizeof *t->index);
        t->index_cap = want;
    } else
        memset(t->index, 0, want * sizeof *t->index);
    for (size_t i = 0; i < t->count; i++) {
        size_t h = (size_t)t->procs[i].pid & (t->index_cap - 1);
        while (t->index[h])
            h = (h + 1) & (t->index_cap - 1);
        t->index[h] = (int)i + 1;
    }
}

static proc *find(pano_proctree *t, pid_t pid)
{
    if (!t->index_cap)
        return NULL;
    size_t h = (size_t)pid & (t->index_cap - 1);
    while (t->index[h]) {
        proc *p = &t->procs[t->index[h] - 1];
        if (p->pid == pid)
            return p;
        h = (h + 1) & (t->index_cap - 1);
    }
    return NULL;
}

static proc *add(pano_proctree *t, pid_t pid)
{
    if (t->count == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->procs = pano_reallocarray(t->procs, t->cap, sizeof *t->procs);
    }
    proc *p = &t->procs[t->count++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->stat_fd = p->io_fd = p->children_fd = p->status_fd = -1;
    if (2 * t->count + 2 > t->index_cap)
        rebuild_index(t);
    else {
        size_t h = (size_t)pid & (t->index_cap - 1);
        while (t->index[h])
            h = (h + 1) & (t->index_cap - 1);
        t->index[h] = (int)t->count;
    }
    return p;
}

/* Forget a process that is gone; keep what only we remember: its iowait,
 * and, unless the monitor reaped it (wait4 counted them), its context
 * switches and those of its descendants gone before it, with its parent
 * (which reaped it: the kernel adds them to the parent's children's
 * counts, which /proc does not show). */
static void retire(pano_proctree *t, proc *p, bool reaped)
{
    t->gone_iowait_ticks += p->stat.blkio_ticks;
    if (!reaped) {
        proc *parent = p->stat.ppid > 0 ? find(t, p->stat.ppid) : NULL;
        uint64_t *vol = parent ? &parent->gone_vcsw : &t->gone_vcsw;
        uint64_t *inv = parent ? &parent->gone_ivcsw : &t->gone_ivcsw;
        *vol += p->vcsw + p->gone_vcsw;
        *inv += p->ivcsw + p->gone_ivcsw;
    }
    close_fd(t, &p->stat_fd);
    close_fd(t, &p->io_fd);
    close_fd(t, &p->children_fd);
    close_fd(t, &p->status_fd);
    p->pid = 0; /* removed by compact() */
}

static void compact(pano_proctree *t)
{
    size_t o = 0;
    for (size_t i = 0; i < t->count; i++)
        if (t->procs[i].pid)
            t->procs[o++] = t->procs[i];
    if (o != t->count) {
        t->count = o;
        rebuild_index(t);
    }
}

/* ---- sampling --------------------------------------------------------------- */

pano_proctree *pano_proctree_new(pid_t root)
{
    pano_proctree *t = pano_calloc(1, sizeof *t);
    t->root = root;
    t->root_children_fd = -1;
    t->last_pid_fd = -1;
    t->walk_last_pid = -1;
    t->ctxt_every = 1;
    t->net_every = 1;
    t->ticks = sysconf(_SC_CLK_TCK);
    if (t->ticks <= 0)
        t->ticks = 100;
    long page = sysconf(_SC_PAGESIZE);
    t->page_kb = page > 0 ? page / 1024 : 4;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)root, (int)root);
    t->children_files = access(path, R_OK) == 0;
    if (!t->children_files)
        pano_info("%s is missing (kernel without CONFIG_PROC_CHILDREN): scanning /proc", path);
    t->net = pano_netbytes_new();
    return t;
}

void pano_proctree_free(pano_proctree *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->count; i++) {
        close_fd(t, &t->procs[i].stat_fd);
        close_fd(t, &t->procs[i].io_fd);
        close_fd(t, &t->procs[i].children_fd);
        close_fd(t, &t->procs[i].status_fd);
    }
    close_fd(t, &t->root_children_fd);
    if (t->last_pid_fd >= 0)
        close(t->last_pid_fd);
    pano_netbytes_free(t->net);
    free(t->procs);
    free(t->index);
    free(t->live);
    free(t->live_netns);
    free(t->queue);
    free(t->buf);
    free(t);
}

uint64_t pano_proctree_stable_walks(const pano_proctree *t) { return t->stable_walks; }

void pano_proctree_set_pss(pano_proctree *t, unsigned every) { t->pss_every = every; }

void pano_proctree_set_ctxt(pano_proctree *t, unsigned every) { t->ctxt_every = every ? every : 1; }

void pano_proctree_set_net(pano_proctree *t, unsigned every) { t->net_every = every ? every : 1; }

void pano_proctree_full_next(pano_proctree *t) { t->full_next = true; }

size_t pano_proctree_live(const pano_proctree *t, const pid_t **pids)
{
    *pids = t->live;
    return t->nlive;
}

void pano_proctree_ignore(pano_proctree *t, pid_t pid) { t->ignored = pid; }

static void push(pano_proctree *t, size_t *n, pid_t pid)
{
    if (*n == t->queue_cap) {
        t->queue_cap = t->queue_cap ? 2 * t->queue_cap : 256;
        t->queue = pano_reallocarray(t->queue, t->queue_cap, sizeof *t->queue);
    }
    t->queue[(*n)++] = pid;
}

/* Append the pids listed in t->buf (a children file) to the queue. */
static void push_list(pano_proctree *t, size_t *n)
{
    char *p = t->buf;
    while (*p) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 0)
            push(t, n, (pid_t)pid);
        p = end;
    }
}

/* each(t, pid, tid, user) for every thread of pid (/proc/PID/task), the
 * main one included. False when the list cannot be read (pid is gone). */
static bool each_thread(pano_proctree *t, pid_t pid,
                        void (*each)(pano_proctree *t, pid_t pid, pid_t tid, void *user),
                        void *user)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *de;
    while ((de = readdir(d))) {
        long tid = strtol(de->d_name, NULL, 10);
        if (tid > 0)
            each(t, pid, (pid_t)tid, user);
    }
    closedir(d);
    return true;
}

/* A thread's children, but the main thread's (read by push_children). */
static void push_thread_children(pano_proctree *t, pid_t pid, pid_t tid, void *n)
{
    if (tid == pid)
        return;
    if (read_proc_once(t, pid, "children", tid) >= 0)
        push_list(t, n);
    else
        t->clean = false; /* the thread is gone: its children moved */
}

/* Children of every thread of pid (threads other than the main one can
 * fork too). The main thread's file is kept open when known. */
static void push_children(pano_proctree *t, size_t *n, pid_t pid, int *main_fd, int64_t threads)
{
    if (read_proc(t, main_fd, pid, "children", pid) >= 0)
        push_list(t, n);
    if (threads > 1)
        each_thread(t, pid, push_thread_children, n);
}

/* Without children files: every process's parent from /proc/PID/stat. The
 * tree is then walked from the root as with the children files. */
typedef struct {
    pid_t pid, ppid;
} proc_link;

static proc_link *scan_links(pano_proctree *t, size_t *count)
{
    *count = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return NULL;
    proc_link *links = NULL;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        ssize_t len = read_proc_once(t, (pid_t)atoi(de->d_name), "stat", 0);
        pano_proc_stat st;
        if (len < 0 || !pano_proc_stat_parse(t->buf, (size_t)len, &st))
            continue;
        if (*count == cap) {
            cap = cap ? 2 * cap : 512;
            links = pano_reallocarray(links, cap, sizeof *links);
        }
        links[*count].pid = st.pid;
        links[*count].ppid = st.ppid;
        (*count)++;
    }
    closedir(d);
    return links;
}

/* A thread's context switches, added to sums[0] and sums[1]. */
static void add_thread_ctxt(pano_proctree *t, pid_t pid, pid_t tid, void *sums)
{
    uint64_t *s = sums, vol, inv;
    ssize_t len = read_proc_once(t, pid, "status", tid);
    if (len >= 0 && pano_proc_ctxt_parse(t->buf, (size_t)len, &vol, &inv)) {
        s[0] += vol;
        s[1] += inv;
    }
}

/* The context switches of p's threads: its own status file (kept open)
 * when it has one thread, else each thread's. Left as last read when they
 * cannot be read. */
static void read_ctxt(pano_proctree *t, proc *p)
{
    uint64_t sums[2] = {0, 0};
    if (p->stat.num_threads <= 1) {
        ssize_t len = read_proc(t, &p->status_fd, p->pid, "status", 0);
        if (len < 0 || !pano_proc_ctxt_parse(t->buf, (size_t)len, &sums[0], &sums[1]))
            return;
    } else if (!each_thread(t, p->pid, add_thread_ctxt, sums))
        return;
    p->vcsw = sums[0];
    p->ivcsw = sums[1];
}

/* Read one process of the tree. False when it is gone. */
static bool read_process(pano_proctree *t, proc *p)
{
    ssize_t len = read_proc(t, &p->stat_fd, p->pid, "stat", 0);
    pano_proc_stat st;
    if (len < 0 || !pano_proc_stat_parse(t->buf, (size_t)len, &st) || st.pid != p->pid)
        return false;
    if (p->seen && st.starttime != p->stat.starttime)
        return false; /* the pid was reused */
    /* a process enters a network namespace of its own before it runs the
     * program meant to live there (unshare -n, containers): its namespace
     * is looked at when it is first seen and when its name changes */
    if (st.state != 'Z' && (!p->seen || strcmp(st.comm, p->stat.comm) != 0))
        p->netns = pano_netns_of(p->pid);
    p->stat = st;
    len = read_proc(t, &p->io_fd, p->pid, "io", 0);
    if (len >= 0)
        p->has_io = pano_proc_io_parse(t->buf, (size_t)len, &p->io);
    /* a zombie's threads are gone: its last reading stays */
    if (st.state != 'Z' && (t->ctxt_now || !p->seen))
        read_ctxt(t, p);
    p->has_pss = false;
    if (t->pss_now && st.state != 'Z') {
        len = read_proc_once(t, p->pid, "smaps_rollup", 0);
        p->has_pss = len >= 0 && pano_proc_pss_parse(t->buf, (size_t)len, &p->pss, &p->uss);
    }
    return true;
}

/* The last pid the kernel allocated in our pid namespace, or -1. This is
 * also the last field of /proc/loadavg, but container file systems (LXCFS)
 * replace that file with one whose last field is the highest pid of the
 * container, refreshed every few seconds; nothing replaces the sysctl. A
 * small read: the kernel allocates and clears a buffer of the size asked. */
static long last_pid(pano_proctree *t)
{
    if (t->no_last_pid)
        return -1;
    if (t->last_pid_fd < 0) {
        t->last_pid_fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
        if (t->last_pid_fd < 0) {
            t->no_last_pid = true;
            pano_debug("no /proc/sys/kernel/ns_last_pid (%s): every sample reads the "
                       "children files",
                       strerror(errno));
            return -1;
        }
    }
    char text[24];
    ssize_t len = pread(t->last_pid_fd, text, sizeof text - 1, 0);
    if (len <= 0)
        return -1;
    text[len] = '\0';
    char *end;
    long pid = strtol(text, &end, 10);
    return pid > 0 && (*end == '\n' || *end == '\0') ? pid : -1;
}

typedef struct {
    uint64_t cpu_u, cpu_s, vm, rss, procs, threads, vcsw, ivcsw, pss, uss;
    pano_proc_io io;
} walk_sums;

/* Add the process just read to the sums. */
static void count(pano_proctree *t, const proc *p, walk_sums *w)
{
    const pano_proc_stat *st = &p->stat;
    w->cpu_u += st->utime + st->cutime;
    w->cpu_s += st->stime + st->cstime;
    if (st->state != 'Z') {
        w->vm += st->vsize / 1024;
        w->rss += (uint64_t)(st->rss > 0 ? st->rss : 0) * (uint64_t)t->page_kb;
        w->procs++;
        w->threads += (uint64_t)(st->num_threads > 0 ? st->num_threads : 0);
    }
    w->vcsw += p->vcsw + p->gone_vcsw;
    w->ivcsw += p->ivcsw + p->gone_ivcsw;
    if (p->has_pss) {
        w->pss += p->pss;
        w->uss += p->uss;
    }
    if (p->has_io) {
        w->io.rchar += p->io.rchar;
        w->io.wchar += p->io.wchar;
        w->io.syscr += p->io.syscr;
        w->io.syscw += p->io.syscw;
        w->io.read_bytes += p->io.read_bytes;
        w->io.write_bytes += p->io.write_bytes;
    }
}

/* Walk the tree from the root through the children files (or the parent
 * links of a /proc scan), breadth first: parents are read before their
 * children. Returns -1 when /proc cannot be read. t->clean tells whether
 * no process was seen to go. */
static int full_walk(pano_proctree *t, walk_sums *w)
{
    size_t n = 0, head = 0;
    proc_link *links = NULL;
    size_t nlinks = 0;
    t->clean = true;
    if (t->children_files) {
        push_children(t, &n, t->root, &t->root_children_fd, 1);
    } else {
        links = scan_links(t, &nlinks);
        if (!links)
            return -1;
        for (size_t i = 0; i < nlinks; i++)
            if (links[i].ppid == t->root)
                push(t, &n, links[i].pid);
    }
    while (head < n) {
        pid_t pid = t->queue[head++];
        if (pid == t->ignored)
            continue;
        proc *p = find(t, pid);
        if (p && p->seen == t->round)
            continue; /* listed twice (re-parented during the walk) */
        if (!p)
            p = add(t, pid);
        if (!read_process(t, p)) {
            t->clean = false;
            if (p->seen) { /* an old entry: that process is gone, try afresh */
                retire(t, p, false);
                compact(t);
                p = add(t, pid);
                if (!read_process(t, p)) {
                    p->pid = 0;
                    compact(t);
                    continue;
                }
            } else {
                close_fd(t, &p->stat_fd);
                close_fd(t, &p->io_fd);
                p->pid = 0;
                compact(t);
                continue;
            }
        }
        p->seen = t->round;
        if (p->stat.state == 'Z')
            t->clean = false;
        count(t, p, w);
        if (t->children_files)
            push_children(t, &n, pid, &p->children_fd, p->stat.num_threads);
        else
            for (size_t i = 0; i < nlinks; i++)
                if (links[i].ppid == pid)
                    push(t, &n, links[i].pid);
    }
    free(links);
    /* Processes not found this time have exited (their usage now belongs
     * to whoever reaped them), unless they were missed in a race: then
     * they are simply read again next time. */
    for (size_t i = 0; i < t->count; i++)
        if (t->procs[i].seen && t->procs[i].seen != t->round)
            t->clean = false;
    return 0;
}

/* Read the processes already known, in table order (a parent always comes
 * before its children: it was found first), without the children files.
 * Valid only when no process appeared since the last walk, which found
 * them all. False, with nothing retired, as soon as one of them is gone or
 * a zombie: its children may have moved where the last walk had already
 * looked, so a full walk must follow. */
static bool stable_walk(pano_proctree *t, walk_sums *w)
{
    for (size_t i = 0; i < t->count; i++) {
        proc *p = &t->procs[i];
        if (!read_process(t, p) || p->stat.state == 'Z')
            return false;
        p->seen = t->round;
        count(t, p, w);
    }
    return true;
}

#define KEEP_MAX(field)                                                                        \
    do {                                                                                       \
        if (out->field < t->last.field)                                                        \
            out->field = t->last.field;                                                        \
    } while (0)

/* Whether the pids allocated since the previous sample (from
 * t->walk_last_pid to pid_now), and those still pending from it, went to
 * processes and threads outside the tree: then the tree has no new member
 * and may be read without the children files, as when no pid was
 * allocated. A process of the tree or a thread of one has a parent in the
 * tree (the root's orphans have the root). A pid without a /proc entry
 * belongs to a process that has exited, or to one being created and not
 * yet linked to its parent, which a full walk would miss as well: those
 * of this round are looked at again at the next sample. Looking at a pid
 * costs an open and a read, a full walk one read per process: past
 * MAX_LOOKS, or one look per 6 known processes, this gives up. */
static bool no_new_member(pano_proctree *t, long pid_now)
{
    pid_t look[MAX_LOOKS];
    size_t n = 0;
    if (pid_now < 0 || t->walk_last_pid < 0 || pid_now < t->walk_last_pid)
        goto changed; /* unknown, or the pids wrapped around */
    size_t fresh = (size_t)(pid_now - t->walk_last_pid);
    if (fresh + t->npending > MAX_LOOKS || 6 * (fresh + t->npending) > t->count)
        goto changed;
    for (size_t i = 0; i < t->npending; i++)
        look[n++] = t->pending[i];
    for (long pid = t->walk_last_pid + 1; pid <= pid_now; pid++)
        look[n++] = (pid_t)pid;
    t->npending = 0;
    for (size_t i = 0; i < n; i++) {
        ssize_t len = read_proc_once(t, look[i], "stat", 0);
        pano_proc_stat st;
        if (len < 0) {
            if (look[i] > t->walk_last_pid) /* new this round: maybe not linked yet */
                t->pending[t->npending++] = look[i];
            continue;
        }
        if (!pano_proc_stat_parse(t->buf, (size_t)len, &st) || st.ppid == t->root ||
            find(t, st.ppid))
            goto changed;
    }
    return true;

changed:
    t->npending = 0;
    return false;
}

int pano_proctree_sample(pano_proctree *t, pano_tree_totals *out)
{
    /* Processes join the tree only by fork, which allocates a pid. When no
     * pid was allocated in our pid namespace (no fork, no new thread, by
     * anyone) since the previous walk began, and that walk was settled,
     * the tree has no new member: the known processes are read and the
     * children files are not. A walk is settled when it saw no process or
     * thread go (one that goes mid-walk can hide its children from it) and
     * no pid was allocated between its start and the start of the walk
     * before it (so nothing it missed can be newer than that walk). Pids
     * allocated to processes outside the tree (other jobs, daemons on the
     * node) count as none allocated, when they are few (no_new_member). */
    long pid_now = t->children_files ? last_pid(t) : -1;
    /* no pid went to the tree since the previous walk began */
    bool quiet = pid_now >= 0 && pid_now == t->walk_last_pid && t->npending == 0;
    if (!quiet)
        quiet = no_new_member(t, pid_now);
    t->walk_last_pid = pid_now;
    t->pss_now = t->pss_every > 0 && t->samples % t->pss_every == 0;
    t->ctxt_now = t->full_next || t->samples % t->ctxt_every == 0;
    t->net_now = t->full_next || t->samples % t->net_every == 0;
    t->full_next = false;
    t->samples++;
    walk_sums w;
    memset(&w, 0, sizeof w);
    t->round++;
    if (quiet && t->settled && stable_walk(t, &w))
        t->stable_walks++;
    else {
        memset(&w, 0, sizeof w);
        t->round++;
        if (full_walk(t, &w) < 0)
            return -1;
        t->settled = quiet && t->clean;
    }

    uint64_t blkio = 0;
    bool removed = false;
    size_t nlive = 0;
    t->live = pano_realloc(t->live, (t->count ? t->count : 1) * sizeof *t->live);
    t->live_netns =
        pano_realloc(t->live_netns, (t->count ? t->count : 1) * sizeof *t->live_netns);
    /* last first: a child (found after its parent) hands its context
     * switches to its parent before the parent, if gone too, is retired */
    for (size_t i = t->count; i-- > 0;) {
        proc *p = &t->procs[i];
        if (p->seen == t->round) {
            blkio += p->stat.blkio_ticks;
            if (p->stat.state != 'Z') {
                t->live[nlive] = p->pid;
                t->live_netns[nlive++] = p->netns;
            }
        } else if (p->seen) {
            retire(t, p, false);
            removed = true;
        }
    }
    if (removed)
        compact(t);
    blkio += t->gone_iowait_ticks;

    double tick = (double)t->ticks;
    out->utime = (double)w.cpu_u / tick + t->reaped_utime;
    out->stime = (double)w.cpu_s / tick + t->reaped_stime;
    out->iowait = (double)blkio / tick;
    out->vm = w.vm;
    out->rss = w.rss;
    out->procs = w.procs;
    out->threads = w.threads;
    out->rchar = w.io.rchar + t->reaped_io.rchar;
    out->wchar = w.io.wchar + t->reaped_io.wchar;
    out->syscr = w.io.syscr + t->reaped_io.syscr;
    out->syscw = w.io.syscw + t->reaped_io.syscw;
    out->bread = w.io.read_bytes + t->reaped_io.read_bytes;
    out->bwrite = w.io.write_bytes + t->reaped_io.write_bytes;
    /* the live processes' (with what their descendants gone left them),
     * those gone with no known parent, and wait4's */
    out->vol_ctxt = w.vcsw + t->gone_vcsw + t->reaped_vcsw;
    out->inv_ctxt = w.ivcsw + t->gone_ivcsw + t->reaped_ivcsw;
    out->has_pss = t->pss_now;
    out->pss = t->pss_now ? w.pss : 0;
    out->uss = t->pss_now ? w.uss : 0;
    t->nlive = nlive;
    if (t->net_now)
        out->net_method = pano_net_method_name(pano_netbytes_sample(
            t->net, t->live, t->live_netns, nlive, &out->bsend, &out->brecv));
    else {
        out->bsend = t->last.bsend;
        out->brecv = t->last.brecv;
        out->net_method = t->last.net_method;
    }
    KEEP_MAX(vol_ctxt);
    KEEP_MAX(inv_ctxt);
    out->pss_peak = out->pss > t->last.pss_peak ? out->pss : t->last.pss_peak;
    out->uss_peak = out->uss > t->last.uss_peak ? out->uss : t->last.uss_peak;
    KEEP_MAX(utime);
    KEEP_MAX(stime);
    KEEP_MAX(iowait);
    KEEP_MAX(rchar);
    KEEP_MAX(wchar);
    KEEP_MAX(syscr);
    KEEP_MAX(syscw);
    KEEP_MAX(bread);
    KEEP_MAX(bwrite);
    out->vm_peak = w.vm > t->last.vm_peak ? w.vm : t->last.vm_peak;
    out->rss_peak = w.rss > t->last.rss_peak ? w.rss : t->last.rss_peak;
    t->last = *out;
    return 0;
}

void pano_proctree_zombie(pano_proctree *t, pid_t pid)
{
    t->zombie_pid = pid;
    t->zombie_ok = false;
    proc *p = find(t, pid);
    int fd = -1;
    int *fdp = p ? &p->io_fd : &fd;
    ssize_t len = read_proc(t, fdp, pid, "io", 0);
    if (len >= 0)
        t->zombie_ok = pano_proc_io_parse(t->buf, (size_t)len, &t->zombie_io);
    close_fd(t, &fd);
    /* Its last iowait reading, for the record. */
    if (p) {
        len = read_proc(t, &p->stat_fd, pid, "stat", 0);
        pano_proc_stat st;
        if (len >= 0 && pano_proc_stat_parse(t->buf, (size_t)len, &st) && st.pid == pid)
            p->stat.blkio_ticks = st.blkio_ticks;
    }
}

void pano_proctree_reaped(pano_proctree *t, pid_t pid, const struct rusage *ru)
{
    t->reaped_utime += (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6;
    t->reaped_stime += (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
    t->reaped_vcsw += (uint64_t)(ru->ru_nvcsw > 0 ? ru->ru_nvcsw : 0);
    t->reaped_ivcsw += (uint64_t)(ru->ru_nivcsw > 0 ? ru->ru_nivcsw : 0);
    proc *p = find(t, pid);
    const pano_proc_io *io = NULL;
    if (t->zombie_ok && t->zombie_pid == pid)
        io = &t->zombie_io;
    else if (p && p->has_io)
        io = &p->io; /* its last reading: the best there is */
    if (io) {
        t->reaped_io.rchar += io->rchar;
        t->reaped_io.wchar += io->wchar;
        t->reaped_io.syscr += io->syscr;
        t->reaped_io.syscw += io->syscw;
        t->reaped_io.read_bytes += io->read_bytes;
        t->reaped_io.write_bytes += io->write_bytes;
    }
    t->zombie_ok = false;
    t->settled = false; /* its children moved to the monitor */
    if (p) {
        retire(t, p, true);
        compact(t);
    }
}
