/*
 * pano-monitor - run a task and publish what it does.
 *
 *   pano-monitor [options] -- CMD [ARGS...]
 *
 * Publishes kickstart.inv.start, kickstart.inv.online samples of the task's
 * whole process tree (at start, every interval, and at exit), the events of
 * MONITORING_PAYLOAD blocks the task prints, and kickstart.inv.end, and exits
 * with CMD's status (128+N when CMD died of signal N). Monitoring never
 * changes the task: stdin is CMD's own, its output passes through byte for
 * byte, and a broker that is down or a bad configuration only produce
 * warnings. See docs/monitor.md.
 *
 * One thread runs the loop below: one poll() over a signalfd (SIGCHLD and
 * the forwarded signals), a timerfd for the interval, and the pipes of the
 * task's stdout/stderr. Events leave through a publisher thread
 * (publisher.h), so the loop never waits for the broker.
 */
#include "cli.h"
#include "clock.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "payload.h"
#include "proctree.h"
#include "publisher.h"
#include "relay.h"
#include "sink.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Signals passed on to the task when someone sends them to the monitor. */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define FORWARDED_COUNT (sizeof forwarded_signals / sizeof forwarded_signals[0])

enum {
    OPT_ON_CHANGE = 0x2000,
    OPT_LEVEL,
    OPT_NO_CAPTURE,
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-monitor [options] -- CMD [ARGS...]\n"
            "Run CMD and publish what it does: kickstart.inv.start, kickstart.inv.online\n"
            "samples of its whole process tree (at start, every interval and at exit),\n"
            "the events of MONITORING_PAYLOAD blocks in its output, and kickstart.inv.end.\n"
            "Exits with CMD's status (128+N if it died of signal N).\n"
            "\n"
            "  -i, --interval SECONDS sampling interval, 0.05 to 3600 (default 1;\n"
            "                         also KICKSTART_MON_INTERVAL)\n"
            "      --on-change        send a periodic sample only when a value moved by\n"
            "                         more than pano.monitor.on_change_threshold\n"
            "      --level N          metrics level: custom metrics above N are not sent;\n"
            "                         0 also stops the online samples (default 1)\n"
            "      --no-capture       do not read the task's output for payloads\n"
            "  -o, --output FILE      append events to FILE as JSON lines (- for stdout);\n"
            "                         with a broker URL they are published too (default:\n"
            "                         the broker, else stderr)\n"
            "\n"
            "Events go to the broker in pano.amqp.url (PANO_AMQP_URL, PEGASUS_AMQP_URL,\n"
            "KICKSTART_MON_URL) when it is set, through the spool when it is down.\n"
            "Workflow context comes from PEGASUS_WF_UUID, PEGASUS_DAG_JOB_ID, CONDOR_JOBID,\n"
            "... or their PANO_* equivalents; the MPI rank from OMPI_COMM_WORLD_RANK,\n"
            "PMI_RANK, PMI_ID, SLURM_PROCID, ALPS_APP_PE or MPIRUN_RANK.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

/* ---- host facts for the start event ----------------------------------- */

/* The value after "<key>:" in a /proc text file such as cpuinfo. */
static bool proc_field(const char *path, const char *key, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[512];
    size_t klen = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0)
            continue;
        char *p = line + klen;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ':')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        p[strcspn(p, "\n")] = '\0';
        snprintf(out, size, "%s", p);
        found = true;
    }
    fclose(f);
    return found;
}

static void add_host_facts(pano_json *ev)
{
    char buf[256];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0)
        pano_json_set_int(ev, "cpu_count", cpus);
    if (proc_field("/proc/cpuinfo", "model name", buf, sizeof buf))
        pano_json_set_str(ev, "cpu_model", buf);
    if (proc_field("/proc/meminfo", "MemTotal", buf, sizeof buf))
        pano_json_set_int(ev, "mem_total", strtoll(buf, NULL, 10)); /* kB */
}

/* ---- the monitor -------------------------------------------------------- */

typedef struct {
    pano_config *cfg;
    pano_source *source;
    pano_publisher *pub;
    pano_proctree *tree;
    pid_t task;
    char exe[PATH_MAX];
    double interval;
    int level;
    bool on_change;
    double threshold;
    double start_wall, start_mono;
    /* samples */
    pano_tree_totals prev; /* the previous sample taken */
    double prev_mono;
    bool have_prev;
    pano_tree_totals sent; /* the last sample sent */
    bool have_sent;
    uint64_t samples_taken, samples_sent;
    /* output capture */
    pano_relay relays[2];
    size_t nrelays;
    uint64_t payload_events, payload_errors;
    pid_t relay_pid; /* the output relay left behind, not the task's */
} monitor;

static void emit(monitor *m, pano_json *ev) { pano_publisher_send(m->pub, ev); }

static void emit_start(monitor *m, char **argv)
{
    pano_json *ev = pano_event_new(m->source, "kickstart.inv.start");
    pano_json *args = pano_json_set_array(ev, "argv");
    for (char **a = argv; *a; a++)
        pano_json_append(args, pano_json_string(*a));
    pano_json_set_str(ev, "executable", argv[0]);
    if (m->exe[0])
        pano_json_set_str(ev, "exe", m->exe);
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd))
        pano_json_set_str(ev, "cwd", cwd);
    pano_json_set_int(ev, "pid", m->task);
    pano_json_set_int(ev, "monitor_pid", getpid());
    struct passwd *pw = getpwuid(getuid());
    if (pw)
        pano_json_set_str(ev, "user", pw->pw_name);
    add_host_facts(ev);
    pano_json_set_double(ev, "interval", m->interval, 3);
    pano_json_set_str(ev, "monitor_version", PANO_VERSION);
    emit(m, ev);
}

static double tv_seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* What monitoring has cost so far: the monitor's own CPU time (all its
 * threads), in every sample and in the end event, so the overhead can be
 * watched while the task runs. */
static void put_monitor_cpu(pano_json *ev)
{
    struct rusage self;
    if (getrusage(RUSAGE_SELF, &self) < 0) {
        pano_warn("getrusage: %s", strerror(errno));
        return;
    }
    pano_json_set_double(ev, "monitor_utime", tv_seconds(self.ru_utime), 6);
    pano_json_set_double(ev, "monitor_stime", tv_seconds(self.ru_stime), 6);
}

/* The fields of a sample, in Panorama's order and units. */
static void put_totals(pano_json *o, const pano_tree_totals *t)
{
    pano_json_set_double(o, "utime", t->utime, 3);
    pano_json_set_double(o, "stime", t->stime, 3);
    pano_json_set_double(o, "iowait", t->iowait, 3);
    pano_json_set_int(o, "vm", (int64_t)t->vm);
    pano_json_set_int(o, "rss", (int64_t)t->rss);
    pano_json_set_int(o, "procs", (int64_t)t->procs);
    pano_json_set_int(o, "threads", (int64_t)t->threads);
    pano_json_set_int(o, "bread", (int64_t)t->bread);
    pano_json_set_int(o, "bwrite", (int64_t)t->bwrite);
    pano_json_set_int(o, "rchar", (int64_t)t->rchar);
    pano_json_set_int(o, "wchar", (int64_t)t->wchar);
    pano_json_set_int(o, "syscr", (int64_t)t->syscr);
    pano_json_set_int(o, "syscw", (int64_t)t->syscw);
    pano_json_set_int(o, "vm_peak", (int64_t)t->vm_peak);
    pano_json_set_int(o, "rss_peak", (int64_t)t->rss_peak);
}

/* The values a sample is compared on (--on-change) and carries the change
 * of (delta), in this order; the first three are CPU seconds. */
static const char *const moving_fields[] = {"utime", "stime", "iowait", "vm",     "rss",
                                            "procs", "threads", "bread", "bwrite", "rchar",
                                            "wchar", "syscr", "syscw"};
enum { N_MOVING = sizeof moving_fields / sizeof moving_fields[0], N_SECONDS = 3 };

static void moving_values(const pano_tree_totals *t, double v[N_MOVING])
{
    const double all[N_MOVING] = {t->utime, t->stime, t->iowait, (double)t->vm,
                                  (double)t->rss, (double)t->procs, (double)t->threads,
                                  (double)t->bread, (double)t->bwrite, (double)t->rchar,
                                  (double)t->wchar, (double)t->syscr, (double)t->syscw};
    memcpy(v, all, sizeof all);
}

/* Did any value move by more than the threshold since the last sample sent? */
static bool changed(const monitor *m, const pano_tree_totals *t)
{
    double now[N_MOVING], then[N_MOVING];
    moving_values(t, now);
    moving_values(&m->sent, then);
    for (size_t i = 0; i < N_MOVING; i++) {
        double diff = fabs(now[i] - then[i]);
        if (then[i] == 0 ? diff > 0 : diff > m->threshold * fabs(then[i]))
            return true;
    }
    return false;
}

/* "delta": how much each value moved since the last sample sent (since zero
 * for the first). Summed over a workflow's samples per time bucket they give
 * exact rates (counters) and, accumulated, the sum of the jobs' last values
 * (gauges), with no per-job work at query time; summed over a job's samples
 * they give its final totals. CPU seconds are differences of the values as
 * printed (milliseconds), so that no rounding error adds up. */
static void put_delta(pano_json *ev, const pano_tree_totals *t, const pano_tree_totals *sent)
{
    double now[N_MOVING], then[N_MOVING];
    moving_values(t, now);
    moving_values(sent, then);
    pano_json *d = pano_json_set_object(ev, "delta");
    for (size_t i = 0; i < N_MOVING; i++) {
        if (i < N_SECONDS)
            pano_json_set_double(d, moving_fields[i],
                                 (double)(llround(now[i] * 1000) - llround(then[i] * 1000)) /
                                     1000,
                                 3);
        else
            pano_json_set_int(d, moving_fields[i], (int64_t)now[i] - (int64_t)then[i]);
    }
}

/* Take a sample; send it unless --on-change finds nothing new. kind is
 * "start", "periodic" or "end". Returns the totals in *out. */
static void sample(monitor *m, const char *kind, pano_tree_totals *out)
{
    pano_tree_totals t;
    memset(&t, 0, sizeof t);
    double now = pano_monotonic();
    if (pano_proctree_sample(m->tree, &t) < 0) {
        pano_warn("cannot read /proc: no sample");
        if (m->have_prev)
            t = m->prev;
    }
    m->samples_taken++;
    double cpu_util = -1;
    if (m->have_prev && now - m->prev_mono > 1e-3)
        cpu_util = ((t.utime + t.stime) - (m->prev.utime + m->prev.stime)) / (now - m->prev_mono);
    if (cpu_util < 0 && m->have_prev)
        cpu_util = 0;
    m->prev = t;
    m->prev_mono = now;
    m->have_prev = true;
    if (out)
        *out = t;

    if (m->level < 1)
        return;
    bool always = strcmp(kind, "periodic") != 0;
    if (m->on_change && !always && m->have_sent && !changed(m, &t))
        return;
    pano_json *ev = pano_event_new(m->source, "kickstart.inv.online");
    pano_json_set_int(ev, "pid", m->task);
    if (m->exe[0])
        pano_json_set_str(ev, "exe", m->exe);
    put_totals(ev, &t);
    put_delta(ev, &t, &m->sent); /* m->sent is all zero before the first */
    if (cpu_util >= 0)
        pano_json_set_double(ev, "cpu_util", cpu_util, 4);
    pano_json_set_double(ev, "elapsed", now - m->start_mono, 6);
    pano_json_set_double(ev, "interval", m->interval, 3);
    pano_json_set_str(ev, "sample", kind);
    pano_json_set_int(ev, "monitor_pid", getpid());
    put_monitor_cpu(ev);
    emit(m, ev);
    m->sent = t;
    m->have_sent = true;
    m->samples_sent++;
}

static void emit_end(monitor *m, int status, double duration, const pano_tree_totals *final,
                     const char *error)
{
    pano_json *ev = pano_event_new(m->source, "kickstart.inv.end");
    int code = 0, sig = 0;
    if (WIFEXITED(status))
        code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) {
        sig = WTERMSIG(status);
        code = 128 + sig;
    }
    /* Everything the monitor reaped: the task (with the descendants it
     * reaped) and the orphans re-parented to the monitor. */
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
        pano_warn("getrusage: %s", strerror(errno));
    double utime = tv_seconds(ru.ru_utime), stime = tv_seconds(ru.ru_stime);
    pano_json_set_int(ev, "pid", m->task);
    if (m->exe[0])
        pano_json_set_str(ev, "exe", m->exe);
    pano_json_set_int(ev, "exitcode", code);
    pano_json_set_int(ev, "signal", sig);
    if (sig)
        pano_json_set_bool(ev, "core_dumped", WCOREDUMP(status));
    pano_json_set_int(ev, "status", code == 0 ? 0 : 1);
    pano_json_set_double(ev, "duration", duration, 6);
    pano_json_set_double(ev, "utime", utime, 3);
    pano_json_set_double(ev, "stime", stime, 3);
    pano_json_set_double(ev, "remote_cpu_time", utime + stime, 3);
    if (duration > 0)
        pano_json_set_double(ev, "avg_cpu", (utime + stime) / duration, 4);
    pano_json_set_int(ev, "maxrss", ru.ru_maxrss); /* kB */
    put_totals(pano_json_set_object(ev, "final"), final);
    pano_json_set_int(ev, "samples", (int64_t)m->samples_sent);
    put_monitor_cpu(ev);
    pano_json_set_int(ev, "payload_events", (int64_t)m->payload_events);
    pano_json_set_int(ev, "payload_errors", (int64_t)m->payload_errors);
    if (error)
        pano_json_set_str(ev, "error", error);
    emit(m, ev);
}

/* ---- payloads ------------------------------------------------------------ */

typedef struct {
    monitor *m;
    const char *stream;
} payload_ctx;

static void payload_emit(void *user, pano_json *ev)
{
    payload_ctx *c = user;
    const char *name = pano_json_get_str(ev, "event");
    if (name && strcmp(name, "kickstart.payload.error") == 0)
        c->m->payload_errors++;
    else
        c->m->payload_events++;
    emit(c->m, ev);
}

static void payload_found(void *user, pano_payload_status status, const char *block, size_t size)
{
    payload_ctx *c = user;
    pano_payload_events(c->m->source, c->stream, status, block, size, payload_emit, c);
}

/* ---- the task ------------------------------------------------------------ */

typedef struct {
    int fd;      /* 1 or 2 (or both, see merged) */
    int pipe[2]; /* -1 when not captured */
} capture;

/* Start argv with the original signal mask, its stdout/stderr on the
 * capture pipes. vfork: the child borrows the monitor's memory until it
 * calls exec, so no page tables are copied and the monitor resumes once
 * exec is done; a failure in the child is reported in *exec_errno (memory
 * the two share), the child then exits 127. */
static pid_t start_task(char **argv, const sigset_t *original_mask, const capture *caps,
                        size_t ncaps, bool merged, int *exec_errno)
{
    volatile int *shared_errno = exec_errno;
    *shared_errno = 0;
    pid_t pid = vfork();
    if (pid == 0) {
        bool ok = true;
        for (size_t i = 0; ok && i < ncaps; i++) {
            if (caps[i].pipe[1] < 0)
                continue;
            /* dup2 clears close-on-exec on the new descriptor. */
            ok = dup2(caps[i].pipe[1], caps[i].fd) >= 0 &&
                 (!merged || dup2(caps[i].pipe[1], 2) >= 0);
        }
        if (ok && sigprocmask(SIG_SETMASK, original_mask, NULL) == 0)
            execvp(argv[0], argv);
        *shared_errno = errno;
        _exit(127);
    }
    return pid;
}

/* Do fds 1 and 2 share one open file description (2>&1)? Then one pipe
 * carries both, and their interleaving is kept exactly. */
static bool same_description(int a, int b)
{
#ifdef SYS_kcmp
    long r = syscall(SYS_kcmp, (long)getpid(), (long)getpid(), 0 /* KCMP_FILE */, (long)a,
                     (long)b);
    if (r >= 0)
        return r == 0;
#endif
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino && fcntl(a, F_GETFL) == fcntl(b, F_GETFL);
}

/* Make the pipes for the task's stdout and stderr. Terminals are left
 * alone (the task keeps its tty: isatty(), line buffering, colors). */
static size_t setup_capture(capture caps[2], bool *merged)
{
    size_t n = 0;
    *merged = false;
    bool use[3] = {false, false, false};
    for (int fd = 1; fd <= 2; fd++)
        use[fd] = fcntl(fd, F_GETFD) >= 0 && !isatty(fd);
    if (use[1] && use[2] && same_description(1, 2)) {
        *merged = true;
        use[2] = false;
    }
    for (int fd = 1; fd <= 2; fd++) {
        if (!use[fd])
            continue;
        caps[n].fd = fd;
        if (pipe2(caps[n].pipe, O_CLOEXEC) < 0) {
            pano_warn("cannot capture the task's output (pipe: %s)", strerror(errno));
            caps[n].pipe[0] = caps[n].pipe[1] = -1;
            if (fd == 1)
                *merged = false;
            continue;
        }
        n++;
    }
    return n;
}

/* Reap every child that exited. The task's status goes to *status. */
static void reap_children(monitor *m, bool *task_done, int *status)
{
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
            return;
        pid_t pid = si.si_pid;
        if (pid == m->relay_pid)
            return; /* ours, and still needed: not reaped here */
        /* Its last counters, while it is still a zombie. */
        pano_proctree_zombie(m->tree, pid);
        struct rusage ru;
        int st;
        pid_t r;
        do
            r = wait4(pid, &st, WNOHANG, &ru);
        while (r < 0 && errno == EINTR);
        if (r != pid)
            return;
        pano_proctree_reaped(m->tree, pid, &ru);
        if (pid == m->task) {
            *task_done = true;
            *status = st;
        } else
            pano_debug("reaped descendant %d", (int)pid);
    }
}

/* Export to the task what was set on our command line, so that pano tools
 * it runs (pano-emit, the metric API, a nested monitor) share it. */
static void export_cli_settings(const pano_config *cfg, int argc, char **argv)
{
    for (const pano_config_key *k = pano_config_keys; k->name; k++) {
        if (pano_config_source_of(cfg, k->name) != PANO_CFG_CLI)
            continue;
        char env[128], value[64];
        size_t i = 0;
        for (; k->name[i] && i + 1 < sizeof env; i++)
            env[i] = k->name[i] == '.' ? '_' : (char)toupper((unsigned char)k->name[i]);
        env[i] = '\0';
        const char *v = value;
        switch (k->type) {
        case PANO_CFG_STR: v = pano_config_str(cfg, k->name); break;
        case PANO_CFG_INT:
            snprintf(value, sizeof value, "%lld", (long long)pano_config_int(cfg, k->name));
            break;
        case PANO_CFG_DOUBLE:
            snprintf(value, sizeof value, "%.17g", pano_config_double(cfg, k->name));
            break;
        case PANO_CFG_BOOL: v = pano_config_bool(cfg, k->name) ? "true" : "false"; break;
        case PANO_CFG_SIZE:
            snprintf(value, sizeof value, "%llu",
                     (unsigned long long)pano_config_size(cfg, k->name));
            break;
        }
        if (v && setenv(env, v, 1) < 0)
            pano_warn("cannot export %s to the task: %s", env, strerror(errno));
    }
    const char *file = pano_config_find_arg(argc, argv);
    char abs[PATH_MAX];
    if (file && realpath(file, abs) && setenv("PANO_CONFIG", abs, 1) < 0)
        pano_warn("cannot export PANO_CONFIG: %s", strerror(errno));
}

/* ---- main ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-monitor", argc, argv, true);

    static const struct option options[] = {
        {"interval", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},
        {"on-change", no_argument, NULL, OPT_ON_CHANGE},
        {"level", required_argument, NULL, OPT_LEVEL},
        {"no-capture", no_argument, NULL, OPT_NO_CAPTURE},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int opt;
    /* '+': stop at the first non-option, so CMD's own options stay CMD's.
     * A bad option or value is reported and the task runs regardless. */
    while ((opt = getopt_long(argc, argv, "+i:o:h", options, NULL)) != -1) {
        if (pano_cli_option(cfg, opt, optarg))
            continue;
        switch (opt) {
        case 'i': pano_cli_set(cfg, "pano.monitor.interval", optarg); break;
        case 'o': pano_cli_set(cfg, "pano.output", optarg); break;
        case OPT_ON_CHANGE: pano_cli_set(cfg, "pano.monitor.on_change", "true"); break;
        case OPT_LEVEL: pano_cli_set(cfg, "pano.monitor.level", optarg); break;
        case OPT_NO_CAPTURE: pano_cli_set(cfg, "pano.monitor.capture", "false"); break;
        case 'h': usage(stdout); return 0;
        default: pano_warn("ignoring an unknown option (see --help)"); break;
        }
    }
    if (optind >= argc) {
        pano_error("no command given");
        usage(stderr);
        return 2;
    }
    char **task_argv = argv + optind;

    monitor m = {.cfg = cfg};
    m.interval = pano_config_double(cfg, "pano.monitor.interval");
    m.level = (int)pano_config_int(cfg, "pano.monitor.level");
    m.on_change = pano_config_bool(cfg, "pano.monitor.on_change");
    m.threshold = pano_config_double(cfg, "pano.monitor.on_change_threshold");
    double linger = pano_config_double(cfg, "pano.monitor.linger");
    /* Panorama's KICKSTART_MON_URL=file:///path: JSON lines to that file. */
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    if (url && strncmp(url, "file://", 7) == 0) {
        char *path = pano_strdup(url + 7);
        pano_cli_set(cfg, "pano.output", path);
        pano_cli_set(cfg, "pano.amqp.url", (char[]){""});
        free(path);
    }
    export_cli_settings(cfg, argc, argv);
    m.source = pano_source_new(cfg);
    /* A workflow UUID made up for this run (none configured) is the task's
     * too: pano-emit and payloads inside it belong to the same run. */
    if (pano_config_source_of(cfg, "pano.wf_uuid") == PANO_CFG_DEFAULT &&
        setenv("PANO_WF_UUID", pano_source_wf_uuid(m.source), 1) < 0)
        pano_warn("cannot export PANO_WF_UUID: %s", strerror(errno));
    char err[512];
    pano_sink *sink = pano_sink_open(cfg, "/dev/stderr", err, sizeof err);
    if (!sink)
        pano_warn("events cannot be sent: %s", err);
    else
        pano_debug("events go to %s", pano_sink_describe(sink));

    /* Orphans of the tree (daemons, double forks) are re-parented to us, so
     * they stay in the tree and we reap them. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        pano_warn("cannot become a child subreaper (%s): orphaned descendants will not "
                  "be followed",
                  strerror(errno));

    /* Block the signals we handle, so that they queue on a signalfd; SIGPIPE
     * is blocked so that a closed output gives EPIPE. */
    sigset_t handled, blocked, original;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaddset(&handled, forwarded_signals[i]);
    blocked = handled;
    sigaddset(&blocked, SIGPIPE);
    sigprocmask(SIG_BLOCK, &blocked, &original);
    int sigfd = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
    int timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (sigfd < 0 || timerfd < 0) {
        pano_error("signalfd/timerfd: %s; running the task unmonitored", strerror(errno));
        sigprocmask(SIG_SETMASK, &original, NULL);
        execvp(task_argv[0], task_argv);
        pano_error("cannot run %s: %s", task_argv[0], strerror(errno));
        return errno == ENOENT ? 127 : 126;
    }

    capture caps[2];
    size_t ncaps = 0;
    bool merged = false;
    if (pano_config_bool(cfg, "pano.monitor.capture"))
        ncaps = setup_capture(caps, &merged);

    m.tree = pano_proctree_new(getpid());
    m.start_wall = pano_now();
    m.start_mono = pano_monotonic();
    int exec_errno;
    m.task = start_task(task_argv, &original, caps, ncaps, merged, &exec_errno);
    if (m.task < 0) {
        pano_error("cannot start %s: %s; running it unmonitored", task_argv[0],
                   strerror(errno));
        sigprocmask(SIG_SETMASK, &original, NULL);
        execvp(task_argv[0], task_argv);
        return errno == ENOENT ? 127 : 126;
    }
    payload_ctx pctx[2];
    size_t payload_max = (size_t)pano_config_size(cfg, "pano.monitor.payload_max");
    for (size_t i = 0; i < ncaps; i++) {
        close(caps[i].pipe[1]);
        if (fcntl(caps[i].pipe[0], F_SETFL, O_NONBLOCK) < 0)
            pano_warn("cannot make the output pipe non-blocking: %s", strerror(errno));
        const char *name = merged ? "stdout+stderr" : caps[i].fd == 1 ? "stdout" : "stderr";
        pctx[i].m = &m;
        pctx[i].stream = name;
        pano_relay_init(&m.relays[i], name, caps[i].pipe[0], caps[i].fd,
                        pano_payload_scanner_new(payload_max, payload_found, &pctx[i]));
    }
    m.nrelays = ncaps;

    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)m.task);
    ssize_t n = exec_errno ? -1 : readlink(path, m.exe, sizeof m.exe - 1);
    m.exe[n > 0 ? n : 0] = '\0';

    m.pub = pano_publisher_start(sink);
    emit_start(&m, task_argv);
    sample(&m, "start", NULL);

    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = its.it_interval.tv_sec = (time_t)m.interval;
    its.it_value.tv_nsec = its.it_interval.tv_nsec =
        (long)((m.interval - floor(m.interval)) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
        its.it_value.tv_nsec = its.it_interval.tv_nsec = 1000000;
    if (timerfd_settime(timerfd, 0, &its, NULL) < 0)
        pano_warn("timerfd: %s; only start and end samples", strerror(errno));

    bool task_done = false;
    int status = 0;
    double end_mono = 0, linger_until = 0;
    for (;;) {
        bool relays_active = false;
        for (size_t i = 0; i < m.nrelays; i++)
            relays_active |= pano_relay_active(&m.relays[i]);
        if (task_done && (!relays_active || pano_monotonic() >= linger_until))
            break;
        struct pollfd pfd[4];
        pfd[0] = (struct pollfd){.fd = sigfd, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = task_done ? -1 : timerfd, .events = POLLIN};
        for (size_t i = 0; i < m.nrelays; i++)
            pano_relay_poll_fd(&m.relays[i], &pfd[2 + i]);
        int timeout = -1;
        if (task_done)
            timeout = (int)ceil((linger_until - pano_monotonic()) * 1000);
        if (timeout < -1)
            timeout = 0;
        int rc = poll(pfd, 2 + m.nrelays, timeout);
        if (rc < 0 && errno != EINTR) {
            pano_error("poll: %s", strerror(errno));
            break;
        }
        if (rc <= 0)
            continue;
        if (pfd[0].revents) {
            struct signalfd_siginfo si;
            bool chld = false;
            while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGCHLD) {
                    chld = true;
                    continue;
                }
                /* A signal the kernel sent the whole foreground process group
                 * (Ctrl-C on a terminal) already reached the task. */
                if (si.ssi_code == SI_KERNEL || task_done)
                    continue;
                pano_debug("passing signal %u to the task", si.ssi_signo);
                if (kill(m.task, (int)si.ssi_signo) < 0 && errno != ESRCH)
                    pano_warn("cannot pass signal %u to the task: %s", si.ssi_signo,
                              strerror(errno));
            }
            if (chld && !task_done) {
                reap_children(&m, &task_done, &status);
                if (task_done) {
                    end_mono = pano_monotonic();
                    linger_until = end_mono + linger;
                }
            } else if (chld)
                reap_children(&m, &task_done, &status);
        }
        if (pfd[1].revents) {
            uint64_t expirations;
            if (read(timerfd, &expirations, sizeof expirations) == (ssize_t)sizeof expirations)
                sample(&m, "periodic", NULL);
        }
        for (size_t i = 0; i < m.nrelays; i++)
            pano_relay_handle(&m.relays[i], pfd[2 + i].revents);
    }
    bool left_open = false;
    for (size_t i = 0; i < m.nrelays; i++)
        left_open |= m.relays[i].in_fd >= 0;
    if (left_open) {
        pano_info("descendants of the task still hold its output open %.1f s after it "
                  "exited: a relay process keeps passing it on (payloads are no longer "
                  "read)",
                  linger);
        pid_t relay = pano_relay_detach(m.relays, m.nrelays);
        if (relay > 0) {
            m.relay_pid = relay;
            pano_proctree_ignore(m.tree, relay);
        }
    }
    for (size_t i = 0; i < m.nrelays; i++)
        pano_relay_close(&m.relays[i]);
    /* Children that exited meanwhile count in the final sample. */
    bool dummy_done = task_done;
    int dummy_status = status;
    reap_children(&m, &dummy_done, &dummy_status);

    int exit_code;
    char error[512] = "";
    if (exec_errno) {
        exit_code = exec_errno == ENOENT ? 127 : 126;
        snprintf(error, sizeof error, "cannot run %s: %s", task_argv[0], strerror(exec_errno));
        pano_error("%s", error);
        status = exit_code << 8;
    } else if (!task_done) {
        exit_code = 1;
        status = exit_code << 8;
        snprintf(error, sizeof error, "lost track of the task");
    } else
        exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    pano_tree_totals final;
    sample(&m, "end", &final);
    pano_debug("%llu samples taken, %llu of them without reading the children files",
               (unsigned long long)m.samples_taken,
               (unsigned long long)pano_proctree_stable_walks(m.tree));
    emit_end(&m, status, (end_mono > 0 ? end_mono : pano_monotonic()) - m.start_mono, &final,
             error[0] ? error : NULL);

    pano_sink_stats stats;
    pano_publisher_stop(m.pub, &stats);
    if (stats.spooled || stats.rejected || stats.failed || stats.dropped)
        pano_info("events: %llu sent, %llu replayed, %llu spooled, %llu dropped from the "
                  "spool, %llu refused by the broker (kept aside), %llu lost",
                  (unsigned long long)stats.sent, (unsigned long long)stats.replayed,
                  (unsigned long long)stats.spooled, (unsigned long long)stats.dropped,
                  (unsigned long long)stats.rejected, (unsigned long long)stats.failed);
    for (size_t i = 0; i < m.nrelays; i++)
        pano_payload_scanner_free(m.relays[i].scanner);
    pano_proctree_free(m.tree);
    close(sigfd);
    close(timerfd);
    pano_source_free(m.source);
    pano_config_free(cfg);
    return exit_code;
}
