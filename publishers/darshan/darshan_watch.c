/*
 * darshan_watch.c - the --watch loop (see darshan_watch.h).
 */
#include "darshan_watch.h"

#include "event.h"
#include "log.h"
#include "mem.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 16
#define LOG_SUFFIX ".darshan"

/* ---- the set of handled logs ---------------------------------------------- */

/* Keys are "size<TAB>mtime<TAB>path", the line format of the state file. */
typedef struct {
    char **slots;
    size_t mask, count;
    int fd; /* state file, opened for appending */
} seen_set;

static uint64_t hash_str(const char *s)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h;
}

static bool seen_has(const seen_set *set, const char *key)
{
    if (!set->slots)
        return false;
    for (size_t s = hash_str(key) & set->mask; set->slots[s]; s = (s + 1) & set->mask)
        if (strcmp(set->slots[s], key) == 0)
            return true;
    return false;
}

static void seen_insert(seen_set *set, char *key)
{
    if (2 * (set->count + 1) > set->mask + 1) {
        size_t n = set->slots ? 2 * (set->mask + 1) : 256;
        char **slots = pano_calloc(n, sizeof *slots);
        for (size_t i = 0; set->slots && i <= set->mask; i++) {
            if (!set->slots[i])
                continue;
            size_t s = hash_str(set->slots[i]) & (n - 1);
            while (slots[s])
                s = (s + 1) & (n - 1);
            slots[s] = set->slots[i];
        }
        free(set->slots);
        set->slots = slots;
        set->mask = n - 1;
    }
    size_t s = hash_str(key) & set->mask;
    while (set->slots[s])
        s = (s + 1) & set->mask;
    set->slots[s] = key;
    set->count++;
}

/* Record a key, in memory and in the state file. */
static void seen_add(seen_set *set, const char *key)
{
    if (seen_has(set, key))
        return;
    seen_insert(set, pano_strdup(key));
    char *line = pano_asprintf("%s\n", key);
    size_t len = strlen(line);
    ssize_t n = write(set->fd, line, len);
    if (n != (ssize_t)len)
        pano_warn("cannot record %s in the state file: %s", key,
                  n < 0 ? strerror(errno) : "short write");
    free(line);
}

static void seen_free(seen_set *set)
{
    for (size_t i = 0; set->slots && i <= set->mask; i++)
        free(set->slots[i]);
    free(set->slots);
    if (set->fd >= 0)
        close(set->fd);
}

/* Load the state file; *existed tells whether there was one. */
static int seen_load(seen_set *set, const char *path, bool *existed, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    *existed = f != NULL;
    if (f) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getline(&line, &cap, f)) > 0) {
            if (line[n - 1] == '\n')
                line[--n] = '\0';
            if (n > 0 && !seen_has(set, line))
                seen_insert(set, pano_strdup(line));
        }
        free(line);
        fclose(f);
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "cannot read the state file %s: %s", path, strerror(errno));
        return -1;
    }
    set->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (set->fd < 0) {
        snprintf(err, errlen, "cannot write the state file %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the loop --------------------------------------------------------------- */

typedef struct {
    const pano_darshan_watch_options *opt;
    seen_set seen;
    bool baseline; /* first start: record what is there, handle nothing */
    int inotify_fd;
    char **watch_dirs; /* by watch descriptor */
    size_t n_watch_dirs;
} watcher;

static bool is_log_name(const char *name)
{
    size_t n = strlen(name), s = strlen(LOG_SUFFIX);
    return n > s && strcmp(name + n - s, LOG_SUFFIX) == 0;
}

static void consider(watcher *w, const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return;
    if (strchr(path, '\n')) {
        pano_warn("%s: a newline in the path; not handled", path);
        return;
    }
    char *key = pano_asprintf("%jd\t%jd.%09ld\t%s", (intmax_t)st.st_size,
                              (intmax_t)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, path);
    if (!seen_has(&w->seen, key)) {
        if (w->baseline || w->opt->handler(path, w->opt->ctx) == PANO_DARSHAN_WATCH_DONE)
            seen_add(&w->seen, key);
    }
    free(key);
}

static void add_watch(watcher *w, const char *dir)
{
    if (w->inotify_fd < 0)
        return;
    int wd = inotify_add_watch(w->inotify_fd, dir,
                               IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR);
    if (wd < 0) {
        pano_warn("cannot watch %s (%s); the periodic rescan still covers it", dir,
                  strerror(errno));
        return;
    }
    if ((size_t)wd >= w->n_watch_dirs) {
        size_t n = (size_t)wd + 16;
        w->watch_dirs = pano_reallocarray(w->watch_dirs, n, sizeof *w->watch_dirs);
        memset(w->watch_dirs + w->n_watch_dirs, 0, (n - w->n_watch_dirs) * sizeof *w->watch_dirs);
        w->n_watch_dirs = n;
    }
    if (!w->watch_dirs[wd] || strcmp(w->watch_dirs[wd], dir) != 0) {
        free(w->watch_dirs[wd]);
        w->watch_dirs[wd] = pano_strdup(dir);
    }
}

/* Watch dir and its subfolders, and consider every log in them. */
static void scan(watcher *w, const char *dir, int depth)
{
    add_watch(w, dir);
    DIR *d = opendir(dir);
    if (!d) {
        pano_warn("cannot read %s: %s", dir, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *path = pano_asprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH)
                scan(w, path, depth + 1);
            else if (S_ISREG(st.st_mode) && is_log_name(e->d_name))
                consider(w, path);
        }
        free(path);
    }
    closedir(d);
}

static void read_events(watcher *w)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(w->inotify_fd, buf, sizeof buf);
        if (n <= 0)
            return;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                scan(w, w->opt->dir, 0);
                continue;
            }
            if (ev->wd < 0 || (size_t)ev->wd >= w->n_watch_dirs || !w->watch_dirs[ev->wd])
                continue;
            if (ev->mask & IN_IGNORED) {
                free(w->watch_dirs[ev->wd]);
                w->watch_dirs[ev->wd] = NULL;
                continue;
            }
            if (!ev->len)
                continue;
            char *path = pano_asprintf("%s/%s", w->watch_dirs[ev->wd], ev->name);
            if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
                scan(w, path, 1); /* a new dated folder: logs may be in it already */
            else if (!(ev->mask & IN_ISDIR) && (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) &&
                     is_log_name(ev->name))
                consider(w, path);
            free(path);
        }
    }
}

int pano_darshan_watch_run(const pano_darshan_watch_options *opt, char *err, size_t errlen)
{
    struct stat st;
    if (stat(opt->dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory", opt->dir);
        return -1;
    }
    watcher w = {.opt = opt, .seen = {.fd = -1}};
    bool existed;
    if (seen_load(&w.seen, opt->state_path, &existed, err, errlen) < 0) {
        seen_free(&w.seen);
        return -1;
    }
    w.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w.inotify_fd < 0)
        pano_warn("inotify unavailable (%s): rescanning every %g s only", strerror(errno),
                  opt->rescan_interval);

    w.baseline = !existed && !opt->publish_existing;
    scan(&w, opt->dir, 0);
    pano_info("watching %s: %zu logs handled so far%s", opt->dir, w.seen.count,
              w.baseline ? " (first start: the logs already there are recorded, not published)"
                         : "");
    w.baseline = false;

    double start = pano_now(), next_scan = start + opt->rescan_interval;
    for (;;) {
        double now = pano_now();
        if (opt->run_for > 0 && now - start >= opt->run_for)
            break;
        if (now >= next_scan) {
            scan(&w, opt->dir, 0);
            next_scan = now + opt->rescan_interval;
        }
        double until = next_scan;
        if (opt->run_for > 0 && start + opt->run_for < until)
            until = start + opt->run_for;
        int timeout = (int)((until - now) * 1000) + 1;
        struct pollfd fds[2] = {{.fd = w.inotify_fd, .events = POLLIN},
                                {.fd = opt->stop_fd, .events = POLLIN}};
        int r = poll(fds, 2, timeout);
        if (r < 0 && errno != EINTR) {
            pano_error("poll: %s", strerror(errno));
            break;
        }
        if (r > 0 && (fds[1].revents & POLLIN))
            break;
        if (r > 0 && (fds[0].revents & POLLIN))
            read_events(&w);
    }

    for (size_t i = 0; i < w.n_watch_dirs; i++)
        free(w.watch_dirs[i]);
    free(w.watch_dirs);
    if (w.inotify_fd >= 0)
        close(w.inotify_fd);
    seen_free(&w.seen);
    return 0;
}
