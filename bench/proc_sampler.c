/*
 * proc_sampler - the monitor benchmark's baseline: what a bare sampler of a
 * process tree costs on this machine, the part of pano-monitor's cost that
 * any /proc-based monitor pays.
 *
 *   proc_sampler INTERVAL OUTFILE COMMAND [ARGS...]
 *
 * Runs COMMAND and, at start, every INTERVAL seconds and when it exits,
 * walks its process tree through the children files, reads every process's
 * stat and io (descriptors kept open between samples, as pano-monitor
 * does) and appends one line of totals to OUTFILE, with the time since
 * start ("elapsed", s) and its own CPU time so far ("cpu_ms", getrusage, as
 * pano-monitor reports it in every sample). Nothing else: no events, no
 * publisher thread, no relay of the task's output, no spool, no threads'
 * own children, no processes that leave the tree. Ends OUTFILE with
 * "end samples=N cpu_ms=X". Exits with the command's status.
 *
 * With PROC_SAMPLER_STATUS=1 it also reads every process's status file
 * (its context switches, as pano-monitor reads them for a process of one
 * thread): what counting them costs any such sampler.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_PROCS 4096

typedef struct {
    pid_t pid;
    int stat_fd, io_fd, children_fd, status_fd;
    unsigned seen;
} proc;

static proc procs[MAX_PROCS];
static size_t nprocs;
static unsigned round_no;
static char buf[8192];
static double started; /* CLOCK_MONOTONIC, s */
static bool with_status; /* PROC_SAMPLER_STATUS=1 */

static void die(const char *what)
{
    fprintf(stderr, "proc_sampler: %s: %s\n", what, strerror(errno));
    exit(2);
}

static double mono_seconds(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) < 0)
        die("clock_gettime");
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* This process's CPU time so far (all threads), in ms. */
static double self_cpu_ms(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) < 0)
        die("getrusage");
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* pread /proc/PID/WHAT (the main thread's, for children) at offset 0 into
 * buf; -1 when gone. */
static ssize_t slurp(int *fd, pid_t pid, const char *what)
{
    if (*fd < 0) {
        char path[96];
        if (strcmp(what, "children") == 0)
            snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
        else
            snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
        *fd = open(path, O_RDONLY | O_CLOEXEC);
        if (*fd < 0)
            return -1;
    }
    ssize_t n = pread(*fd, buf, sizeof buf - 1, 0);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

static proc *lookup(pid_t pid)
{
    for (size_t i = 0; i < nprocs; i++)
        if (procs[i].pid == pid)
            return &procs[i];
    if (nprocs == MAX_PROCS)
        return NULL;
    proc *p = &procs[nprocs++];
    *p = (proc){.pid = pid, .stat_fd = -1, .io_fd = -1, .children_fd = -1, .status_fd = -1};
    return p;
}

static void forget_unseen(void)
{
    size_t kept = 0;
    for (size_t i = 0; i < nprocs; i++) {
        proc *p = &procs[i];
        if (p->seen == round_no) {
            procs[kept++] = *p;
            continue;
        }
        int fds[] = {p->stat_fd, p->io_fd, p->children_fd, p->status_fd};
        for (size_t k = 0; k < 4; k++)
            if (fds[k] >= 0)
                close(fds[k]);
    }
    nprocs = kept;
}

/* utime + stime (fields 14 and 15 of stat, counted after comm's last ')') */
static unsigned long long cpu_ticks(void)
{
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    unsigned long long u = 0, s = 0;
    p += 2; /* field 3 */
    for (int field = 3; field < 14 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    if (p && sscanf(p, "%llu %llu", &u, &s) != 2)
        return 0;
    return u + s;
}

static void sample(pid_t root, FILE *out)
{
    static pid_t queue[MAX_PROCS];
    size_t head = 0, n = 0;
    unsigned long long ticks = 0, rchar = 0, wchar = 0, switches = 0;
    round_no++;
    queue[n++] = root;
    while (head < n) {
        proc *p = lookup(queue[head++]);
        if (!p || p->seen == round_no || slurp(&p->stat_fd, p->pid, "stat") < 0)
            continue;
        p->seen = round_no;
        ticks += cpu_ticks();
        if (slurp(&p->io_fd, p->pid, "io") >= 0) {
            unsigned long long r = 0, w = 0;
            if (sscanf(buf, "rchar: %llu wchar: %llu", &r, &w) == 2) {
                rchar += r;
                wchar += w;
            }
        }
        const char *line;
        if (with_status && slurp(&p->status_fd, p->pid, "status") >= 0 &&
            (line = strstr(buf, "\nvoluntary_ctxt_switches:")))
            switches += strtoull(line + 25, NULL, 10);
        if (slurp(&p->children_fd, p->pid, "children") < 0)
            continue;
        for (char *s = buf, *end; n < MAX_PROCS; s = end) {
            long child = strtol(s, &end, 10);
            if (end == s)
                break;
            queue[n++] = (pid_t)child;
        }
    }
    forget_unseen();
    fprintf(out,
            "{\"seq\":%u,\"procs\":%zu,\"cpu_ticks\":%llu,\"rchar\":%llu,\"wchar\":%llu,"
            "\"vol_ctxt\":%llu,\"elapsed\":%.6f,\"cpu_ms\":%.3f}\n",
            round_no, nprocs, ticks, rchar, wchar, switches, mono_seconds() - started,
            self_cpu_ms());
    if (fflush(out) != 0)
        die("write");
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: proc_sampler INTERVAL OUTFILE COMMAND [ARGS...]\n");
        return 2;
    }
    const char *want_status = getenv("PROC_SAMPLER_STATUS");
    with_status = want_status && strcmp(want_status, "1") == 0;
    double interval = atof(argv[1]);
    if (interval < 0.01) {
        fprintf(stderr, "proc_sampler: bad interval %s\n", argv[1]);
        return 2;
    }
    FILE *out = fopen(argv[2], "w");
    if (!out)
        die(argv[2]);
    started = mono_seconds();
    pid_t child;
    int err = posix_spawnp(&child, argv[3], NULL, NULL, argv + 3, environ);
    if (err) {
        errno = err;
        die(argv[3]);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    if (pidfd < 0)
        die("pidfd_open");
    /* A periodic timer, as pano-monitor waits for its samples. */
    int timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    struct timespec every = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
    if (timerfd < 0 || timerfd_settime(timerfd, 0, &(struct itimerspec){every, every}, NULL) < 0)
        die("timerfd");
    sample(child, out);
    for (;;) {
        struct pollfd pfd[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = timerfd, .events = POLLIN}};
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        sample(child, out); /* at exit, the task is a zombie: its last reading */
        if (pfd[0].revents)
            break;
        uint64_t expirations;
        if (read(timerfd, &expirations, sizeof expirations) < 0)
            die("timerfd");
    }
    int status;
    if (waitpid(child, &status, 0) < 0)
        die("waitpid");
    fprintf(out, "end samples=%u cpu_ms=%.3f\n", round_no, self_cpu_ms());
    if (fclose(out) != 0)
        die("write");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
