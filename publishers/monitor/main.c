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
#include "metrics_socket.h"
#include "monitor_events.h"
#include "payload.h"
#include "proctree.h"
#include "publisher.h"
#include "relay.h"
#include "sink.h"
#include "task.h"

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
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
            "the events of MONITORING_PAYLOAD blocks in its output, the metrics its\n"
            "processes send as DogStatsD lines to the socket in PANO_METRICS_SOCKET, and\n"
            "kickstart.inv.end. Exits with CMD's status (128+N if it died of signal N).\n"
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
            "                         the broker, else the embedded store, pano.store)\n"
            "\n"
            "Events go to the broker in pano.amqp.url (PANO_AMQP_URL, PEGASUS_AMQP_URL,\n"
            "KICKSTART_MON_URL) when it is set, through the spool when it is down.\n"
            "Workflow context comes from PEGASUS_WF_UUID, PEGASUS_DAG_JOB_ID, CONDOR_JOBID,\n"
            "... or their PANO_* equivalents; the MPI rank from OMPI_COMM_WORLD_RANK,\n"
            "PMI_RANK, PMI_ID, SLURM_PROCID, ALPS_APP_PE or MPIRUN_RANK.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

/* ---- the monitor -------------------------------------------------------- */

/* Without pano.monitor.pss, pss and uss are read in one sample of this
 * many (for the end event's peaks): a walk of every page table costs. */
#define PSS_EVERY 10
/* Context switches are read at most this often (s): a status file per
 * thread costs twice a stat file, which 64 busy processes at 1 s made
 * half the monitor's CPU. */
#define CTXT_PERIOD 2.5

typedef struct {
    pano_config *cfg;
    pano_source *source;
    pano_sink *sink;
    pano_publisher *pub;
    pano_proctree *tree;
    char **argv; /* the task's */
    pid_t task;
    int exec_errno; /* the task could not be run: why */
    char exe[PATH_MAX];
    double interval;
    int level;
    bool on_change;
    bool pss;          /* pss and uss in every sample */
    double net_period; /* s between two readings of the network bytes */
    pano_gpu *gpu;     /* NULL: no GPU figures */
    double threshold;
    double linger;
    double start_mono;
    /* the task's end */
    bool task_done;
    int status;
    double end_mono, linger_until;
    /* the loop's descriptors and the mask to restore for the task */
    int sigfd, timerfd;
    sigset_t original;
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
    pano_metrics_socket *metrics; /* NULL: not open */
} monitor;

static void emit(monitor *m, pano_json *ev) { pano_publisher_send(m->pub, ev); }

/* ---- the events ----------------------------------------------------------- */

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

static void emit_start(monitor *m)
{
    char cwd[PATH_MAX], model[256], mem[256];
    struct passwd *pw = getpwuid(getuid());
    pano_monitor_start f = {
        .argv = m->argv,
        .exe = m->exe,
        .cwd = getcwd(cwd, sizeof cwd),
        .pid = m->task,
        .monitor_pid = getpid(),
        .user = pw ? pw->pw_name : NULL,
        .cpu_count = sysconf(_SC_NPROCESSORS_ONLN),
        .cpu_model = proc_field("/proc/cpuinfo", "model name", model, sizeof model) ? model : NULL,
        .mem_total = proc_field("/proc/meminfo", "MemTotal", mem, sizeof mem)
                         ? strtoll(mem, NULL, 10)
                         : -1,
        .interval = m->interval,
    };
    pano_json *ev = pano_event_new(m->source, PANO_MONITOR_START_EVENT);
    pano_monitor_start_fields(ev, &f);
    emit(m, ev);
}

static double tv_seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* What monitoring has cost so far: the monitor's own CPU time (all its
 * threads). */
static pano_monitor_cpu monitor_cpu(void)
{
    struct rusage self;
    if (getrusage(RUSAGE_SELF, &self) < 0) {
        pano_warn("getrusage: %s", strerror(errno));
        return (pano_monitor_cpu){.known = false};
    }
    return (pano_monitor_cpu){
        .known = true, .utime = tv_seconds(self.ru_utime), .stime = tv_seconds(self.ru_stime)};
}

/* Read the devices the task's processes use into devs (*n of them), and
 * return the task's figures. */
static pano_monitor_gpu read_gpus(monitor *m, pano_gpu_device *devs, size_t *n)
{
    *n = 0;
    if (!m->gpu)
        return (pano_monitor_gpu){.util = -1};
    const pid_t *live;
    size_t nlive = pano_proctree_live(m->tree, &live);
    pano_gpu_task now;
    *n = pano_gpu_sample(m->gpu, live, nlive, devs, &now);
    return (pano_monitor_gpu){.known = true, .memory = now.memory, .util = now.util};
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
    pano_gpu_device devs[PANO_GPU_MAX_DEVICES];
    size_t ndevs;
    pano_monitor_gpu gpu = read_gpus(m, devs, &ndevs);
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
    if (m->on_change && !always && m->have_sent &&
        !pano_monitor_changed(&t, &m->sent, m->threshold))
        return;
    pano_monitor_sample f = {
        .pid = m->task,
        .exe = m->exe,
        .totals = t,
        .sent = m->sent, /* all zero before the first */
        .cpu_util = cpu_util,
        .elapsed = now - m->start_mono,
        .interval = m->interval,
        .kind = kind,
        .pss = m->pss,
        .gpu = gpu,
        .monitor_pid = getpid(),
        .self = monitor_cpu(),
    };
    pano_json *ev = pano_event_new(m->source, PANO_MONITOR_SAMPLE_EVENT);
    pano_monitor_sample_fields(ev, &f);
    emit(m, ev);
    for (size_t i = 0; i < ndevs; i++) {
        ev = pano_event_new(m->source, PANO_MONITOR_GPU_EVENT);
        pano_monitor_gpu_fields(ev, &devs[i], pano_gpu_driver(m->gpu));
        emit(m, ev);
    }
    m->sent = t;
    m->have_sent = true;
    m->samples_sent++;
}

static void emit_end(monitor *m, double duration, const pano_tree_totals *final,
                     const char *error)
{
    /* Everything the monitor reaped: the task (with the descendants it
     * reaped) and the orphans re-parented to the monitor. */
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
        pano_warn("getrusage: %s", strerror(errno));
    pano_monitor_end f = {
        .pid = m->task,
        .exe = m->exe,
        .wait_status = m->status,
        .duration = duration,
        .utime = tv_seconds(ru.ru_utime),
        .stime = tv_seconds(ru.ru_stime),
        .maxrss = ru.ru_maxrss, /* kB */
        .final = *final,
        .samples = m->samples_sent,
        .gpu = {.util = -1},
        .self = monitor_cpu(),
        .payload_events = m->payload_events,
        .payload_errors = m->payload_errors,
        .error = error,
    };
    if (m->metrics) {
        const pano_metrics_socket_counts *n = pano_metrics_socket_counts_of(m->metrics);
        f.metrics_socket = true;
        f.metrics = n->metrics;
        f.metrics_above_level = n->above_level;
        f.metrics_bad_lines = n->bad_lines;
        f.metrics_refused = n->refused;
    }
    pano_gpu_device used[PANO_GPU_MAX_DEVICES];
    size_t nused = 0;
    if (m->gpu) {
        pano_gpu_task peak;
        nused = pano_gpu_peaks(m->gpu, used, &peak);
        f.gpu = (pano_monitor_gpu){.known = true, .memory = peak.memory, .util = peak.util};
    }
    if (nused && m->level >= 1) {
        pano_json *max = pano_event_new(m->source, PANO_MONITOR_GPU_MAX_EVENT);
        pano_monitor_gpu_max_fields(max, used, nused);
        emit(m, max);
    }
    pano_json *ev = pano_event_new(m->source, PANO_MONITOR_END_EVENT);
    pano_monitor_end_fields(ev, &f);
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

/* ---- metrics from the task ---------------------------------------------- */

static void metric_emit(pano_json *ev, void *user) { emit(user, ev); }

/* The metrics socket, its path in the task's environment. */
static void open_metrics_socket(monitor *m)
{
    unsetenv(PANO_METRICS_SOCKET_ENV); /* not an outer monitor's */
    if (!pano_config_bool(m->cfg, "pano.monitor.metrics_socket"))
        return;
    char err[256];
    m->metrics = pano_metrics_socket_open(m->source, m->level, metric_emit, m, err, sizeof err);
    if (!m->metrics)
        pano_warn("%s; the task's metrics socket is off", err);
    else if (setenv(PANO_METRICS_SOCKET_ENV, pano_metrics_socket_path(m->metrics), 1) < 0) {
        pano_warn("cannot set %s: %s", PANO_METRICS_SOCKET_ENV, strerror(errno));
        pano_metrics_socket_close(m->metrics);
        m->metrics = NULL;
    }
}

/* ---- the steps of main ---------------------------------------------------- */

/* The options before CMD go into cfg. Returns the index of CMD in argv, or
 * -1 with the exit status in *exit_code (--help, no command). */
static int parse_options(pano_config *cfg, int argc, char **argv, int *exit_code)
{
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
        case 'h':
            usage(stdout);
            *exit_code = 0;
            return -1;
        default: pano_warn("ignoring an unknown option (see --help)"); break;
        }
    }
    if (optind >= argc) {
        pano_error("no command given");
        usage(stderr);
        *exit_code = 2;
        return -1;
    }
    return optind;
}

/* The monitor's settings, the task's environment, the event source and
 * where events go. */
static void configure(monitor *m, int argc, char **argv)
{
    pano_config *cfg = m->cfg;
    m->interval = pano_config_double(cfg, "pano.monitor.interval");
    m->level = (int)pano_config_int(cfg, "pano.monitor.level");
    m->on_change = pano_config_bool(cfg, "pano.monitor.on_change");
    m->threshold = pano_config_double(cfg, "pano.monitor.on_change_threshold");
    m->linger = pano_config_double(cfg, "pano.monitor.linger");
    m->pss = pano_config_bool(cfg, "pano.monitor.pss");
    m->net_period = pano_config_double(cfg, "pano.monitor.net_period");
    if (pano_config_bool(cfg, "pano.monitor.gpu"))
        m->gpu = pano_gpu_open(NULL);
    /* Panorama's KICKSTART_MON_URL=file:///path: JSON lines to that file. */
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    if (url && strncmp(url, "file://", 7) == 0) {
        char *path = pano_strdup(url + 7);
        pano_cli_set(cfg, "pano.output", path);
        pano_cli_set(cfg, "pano.amqp.url", (char[]){""});
        free(path);
    }
    pano_task_export_settings(cfg, argc, argv);
    m->source = pano_source_new(cfg);
    /* A workflow UUID made up for this run (none configured) is the task's
     * too: pano-emit and payloads inside it belong to the same run. */
    if (pano_config_source_of(cfg, "pano.wf_uuid") == PANO_CFG_DEFAULT &&
        setenv("PANO_WF_UUID", pano_source_wf_uuid(m->source), 1) < 0)
        pano_warn("cannot export PANO_WF_UUID: %s", strerror(errno));
    char err[512];
    m->sink = pano_sink_open(cfg, err, sizeof err);
    if (!m->sink)
        pano_warn("events cannot be sent: %s", err);
    else
        pano_debug("events go to %s", pano_sink_describe(m->sink));

    /* Orphans of the tree (daemons, double forks) are re-parented to us, so
     * they stay in the tree and we reap them. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        pano_warn("cannot become a child subreaper (%s): orphaned descendants will not "
                  "be followed",
                  strerror(errno));
}

/* Start the task with its output on relays that scan it for payloads.
 * -1 when it could not be started. */
static int start(monitor *m, payload_ctx pctx[2])
{
    pano_task_capture caps[2];
    size_t ncaps = 0;
    bool merged = false;
    if (pano_config_bool(m->cfg, "pano.monitor.capture"))
        ncaps = pano_task_setup_capture(caps, &merged);

    m->tree = pano_proctree_new(getpid());
    pano_proctree_set_pss(m->tree, m->pss ? 1 : PSS_EVERY);
    pano_proctree_set_ctxt(m->tree, (unsigned)ceil(CTXT_PERIOD / m->interval));
    pano_proctree_set_net(m->tree, (unsigned)ceil(m->net_period / m->interval));
    open_metrics_socket(m);
    m->start_mono = pano_monotonic();
    m->task = pano_task_start(m->argv, &m->original, caps, ncaps, merged, &m->exec_errno);
    if (m->task < 0)
        return -1;
    size_t payload_max = (size_t)pano_config_size(m->cfg, "pano.monitor.payload_max");
    for (size_t i = 0; i < ncaps; i++) {
        close(caps[i].pipe[1]);
        if (fcntl(caps[i].pipe[0], F_SETFL, O_NONBLOCK) < 0)
            pano_warn("cannot make the output pipe non-blocking: %s", strerror(errno));
        const char *name = merged ? "stdout+stderr" : caps[i].fd == 1 ? "stdout" : "stderr";
        pctx[i].m = m;
        pctx[i].stream = name;
        pano_relay_init(&m->relays[i], name, caps[i].pipe[0], caps[i].fd,
                        pano_payload_scanner_new(payload_max, payload_found, &pctx[i]));
    }
    m->nrelays = ncaps;

    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)m->task);
    ssize_t n = m->exec_errno ? -1 : readlink(path, m->exe, sizeof m->exe - 1);
    m->exe[n > 0 ? n : 0] = '\0';
    return 0;
}

/* The periodic samples' timer. */
static void arm_timer(monitor *m)
{
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = its.it_interval.tv_sec = (time_t)m->interval;
    its.it_value.tv_nsec = its.it_interval.tv_nsec =
        (long)((m->interval - floor(m->interval)) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
        its.it_value.tv_nsec = its.it_interval.tv_nsec = 1000000;
    if (timerfd_settime(m->timerfd, 0, &its, NULL) < 0)
        pano_warn("timerfd: %s; only start and end samples", strerror(errno));
}

/* Signals, samples and the task's output until the task has exited and its
 * output is closed, or has lingered for pano.monitor.linger seconds. */
static void watch(monitor *m)
{
    for (;;) {
        bool relays_active = false;
        for (size_t i = 0; i < m->nrelays; i++)
            relays_active |= pano_relay_active(&m->relays[i]);
        if (m->task_done && (!relays_active || pano_monotonic() >= m->linger_until))
            break;
        struct pollfd pfd[5];
        pfd[0] = (struct pollfd){.fd = m->sigfd, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = m->task_done ? -1 : m->timerfd, .events = POLLIN};
        pfd[2] = (struct pollfd){.fd = m->metrics ? pano_metrics_socket_fd(m->metrics) : -1,
                                 .events = POLLIN};
        for (size_t i = 0; i < m->nrelays; i++)
            pano_relay_poll_fd(&m->relays[i], &pfd[3 + i]);
        int timeout = -1;
        if (m->task_done)
            timeout = (int)ceil((m->linger_until - pano_monotonic()) * 1000);
        if (timeout < -1)
            timeout = 0;
        int rc = poll(pfd, 3 + m->nrelays, timeout);
        if (rc < 0 && errno != EINTR) {
            pano_error("poll: %s", strerror(errno));
            break;
        }
        if (rc <= 0)
            continue;
        if (pfd[0].revents && pano_task_forward_signals(m->sigfd, m->task, m->task_done)) {
            bool was_done = m->task_done;
            pano_task_reap(m->tree, m->task, m->relay_pid, &m->task_done, &m->status);
            if (m->metrics)
                pano_metrics_socket_forget_pids(m->metrics);
            if (!was_done && m->task_done) {
                m->end_mono = pano_monotonic();
                m->linger_until = m->end_mono + m->linger;
            }
        }
        if (pfd[1].revents) {
            uint64_t expirations;
            if (read(m->timerfd, &expirations, sizeof expirations) == (ssize_t)sizeof expirations)
                sample(m, "periodic", NULL);
        }
        if (pfd[2].revents)
            pano_metrics_socket_read(m->metrics);
        for (size_t i = 0; i < m->nrelays; i++)
            pano_relay_handle(&m->relays[i], pfd[3 + i].revents);
    }
}

/* Stop reading the task's output: what descendants still hold open is
 * passed on by a relay process left behind. Then reap what exited
 * meanwhile, so that it counts in the final sample. */
static void release_output(monitor *m)
{
    bool left_open = false;
    for (size_t i = 0; i < m->nrelays; i++)
        left_open |= m->relays[i].in_fd >= 0;
    if (left_open) {
        pano_info("descendants of the task still hold its output open %.1f s after it "
                  "exited: a relay process keeps passing it on (payloads are no longer "
                  "read)",
                  m->linger);
        pid_t relay = pano_relay_detach(m->relays, m->nrelays);
        if (relay > 0) {
            m->relay_pid = relay;
            pano_proctree_ignore(m->tree, relay);
        }
    }
    for (size_t i = 0; i < m->nrelays; i++)
        pano_relay_close(&m->relays[i]);
    bool dummy_done = m->task_done;
    int dummy_status = m->status;
    pano_task_reap(m->tree, m->task, m->relay_pid, &dummy_done, &dummy_status);
}

/* The final sample and the end event. Returns the monitor's exit status:
 * the task's. */
static int finish(monitor *m)
{
    int exit_code;
    char error[512] = "";
    if (m->exec_errno) {
        exit_code = m->exec_errno == ENOENT ? 127 : 126;
        snprintf(error, sizeof error, "cannot run %s: %s", m->argv[0], strerror(m->exec_errno));
        pano_error("%s", error);
        m->status = exit_code << 8;
    } else if (!m->task_done) {
        exit_code = 1;
        m->status = exit_code << 8;
        snprintf(error, sizeof error, "lost track of the task");
    } else
        exit_code = WIFEXITED(m->status) ? WEXITSTATUS(m->status) : 128 + WTERMSIG(m->status);

    if (m->metrics)
        pano_metrics_socket_read(m->metrics); /* what is still queued */
    pano_tree_totals final;
    pano_proctree_full_next(m->tree);
    sample(m, "end", &final);
    pano_debug("%llu samples taken, %llu of them without reading the children files",
               (unsigned long long)m->samples_taken,
               (unsigned long long)pano_proctree_stable_walks(m->tree));
    emit_end(m, (m->end_mono > 0 ? m->end_mono : pano_monotonic()) - m->start_mono, &final,
             error[0] ? error : NULL);
    return exit_code;
}

/* Send what is queued and free everything. */
static void stop(monitor *m)
{
    pano_sink_stats stats;
    pano_publisher_stop(m->pub, &stats);
    if (stats.spooled || stats.rejected || stats.failed || stats.dropped)
        pano_info("events: %llu sent, %llu replayed, %llu spooled, %llu dropped from the "
                  "spool, %llu refused by the broker (kept aside), %llu lost",
                  (unsigned long long)stats.sent, (unsigned long long)stats.replayed,
                  (unsigned long long)stats.spooled, (unsigned long long)stats.dropped,
                  (unsigned long long)stats.rejected, (unsigned long long)stats.failed);
    for (size_t i = 0; i < m->nrelays; i++)
        pano_payload_scanner_free(m->relays[i].scanner);
    pano_proctree_free(m->tree);
    pano_gpu_close(m->gpu);
    pano_metrics_socket_close(m->metrics);
    close(m->sigfd);
    close(m->timerfd);
    pano_source_free(m->source);
    pano_config_free(m->cfg);
}

int main(int argc, char **argv)
{
    monitor m = {.cfg = pano_cli_init("pano-monitor", argc, argv, true)};
    int exit_code = 0;
    int cmd = parse_options(m.cfg, argc, argv, &exit_code);
    if (cmd < 0)
        return exit_code;
    m.argv = argv + cmd;
    configure(&m, argc, argv);

    m.sigfd = pano_task_block_signals(&m.original);
    m.timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (m.sigfd < 0 || m.timerfd < 0) {
        pano_error("signalfd/timerfd: %s; running the task unmonitored", strerror(errno));
        exit_code = pano_task_exec_unmonitored(m.argv, &m.original);
        pano_error("cannot run %s: %s", m.argv[0], strerror(errno));
        return exit_code;
    }
    payload_ctx pctx[2];
    if (start(&m, pctx) < 0) {
        pano_error("cannot start %s: %s; running it unmonitored", m.argv[0], strerror(errno));
        return pano_task_exec_unmonitored(m.argv, &m.original);
    }

    m.pub = pano_publisher_start(m.sink);
    emit_start(&m);
    sample(&m, "start", NULL);
    arm_timer(&m);
    watch(&m);
    release_output(&m);
    exit_code = finish(&m);
    stop(&m);
    return exit_code;
}
