/*
 * pano-monitor - run a task and publish what it does.
 *
 *   pano-monitor [options] -- CMD [ARGS...]
 *
 * Publishes kickstart.inv.start before CMD runs and kickstart.inv.end after
 * it exits, and exits with CMD's status (128+N when CMD died of signal N).
 * Monitoring never changes the task: stdin, stdout and stderr are CMD's own,
 * and a broker that is down or a bad configuration only produce warnings.
 */
#include "cli.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* Signals passed on to the task when someone sends them to the monitor. */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define FORWARDED_COUNT (sizeof forwarded_signals / sizeof forwarded_signals[0])

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-monitor [options] -- CMD [ARGS...]\n"
            "Run CMD, publish its start and end (kickstart.inv.start, kickstart.inv.end)\n"
            "and exit with its status (128+N if it died of signal N).\n"
            "\n"
            "  -o, --output FILE      without a broker URL, append events to FILE as JSON\n"
            "                         lines (- for stdout; default: stderr)\n"
            "\n"
            "Events go to the broker in pano.amqp.url (PANO_AMQP_URL, PEGASUS_AMQP_URL)\n"
            "when it is set. Workflow context comes from PEGASUS_WF_UUID,\n"
            "PEGASUS_DAG_JOB_ID, CONDOR_JOBID, ... or their PANO_* equivalents.\n"
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

/* ---- events ------------------------------------------------------------ */

typedef struct {
    pano_config *cfg;
    pano_source *source;
    pano_sink *sink;
} monitor;

/* Sending never fails the task. Until it can be stored for later, an event
 * that cannot be delivered is written to the log in full, so it is not lost
 * without a trace. */
static void emit(monitor *m, pano_json *ev)
{
    char err[512];
    if (m->sink && pano_sink_send(m->sink, ev, err, sizeof err) == 0) {
        pano_json_free(ev);
        return;
    }
    char *json = pano_json_serialize(ev, NULL);
    pano_error("event not delivered (%s): %s", m->sink ? err : "no output",
               json ? json : "?");
    free(json);
    pano_json_free(ev);
}

static void emit_start(monitor *m, char **argv, pid_t task)
{
    pano_json *ev = pano_event_new(m->source, "kickstart.inv.start");
    pano_json *args = pano_json_set_array(ev, "argv");
    for (char **a = argv; *a; a++)
        pano_json_append(args, pano_json_string(*a));
    pano_json_set_str(ev, "executable", argv[0]);
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd))
        pano_json_set_str(ev, "cwd", cwd);
    pano_json_set_int(ev, "pid", task);
    pano_json_set_int(ev, "monitor_pid", getpid());
    struct passwd *pw = getpwuid(getuid());
    if (pw)
        pano_json_set_str(ev, "user", pw->pw_name);
    add_host_facts(ev);
    emit(m, ev);
}

static double tv_seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

static void emit_end(monitor *m, pid_t task, int status, const struct rusage *ru,
                     double started, const char *error)
{
    pano_json *ev = pano_event_new(m->source, "kickstart.inv.end");
    double duration = pano_now() - started;
    int code = 0, sig = 0;
    if (WIFEXITED(status))
        code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) {
        sig = WTERMSIG(status);
        code = 128 + sig;
    }
    double utime = tv_seconds(ru->ru_utime), stime = tv_seconds(ru->ru_stime);
    pano_json_set_int(ev, "pid", task);
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
    pano_json_set_int(ev, "maxrss", ru->ru_maxrss); /* kB */
    if (error)
        pano_json_set_str(ev, "error", error);
    emit(m, ev);
}

/* ---- running the task --------------------------------------------------- */

/* Fork and exec argv with the original signal mask. If exec fails, the
 * child reports errno through a close-on-exec pipe; *exec_errno is then set. */
static pid_t start_task(char **argv, const sigset_t *original_mask, int *exec_errno)
{
    int pipefd[2];
    *exec_errno = 0;
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        close(pipefd[0]);
        sigprocmask(SIG_SETMASK, original_mask, NULL);
        execvp(argv[0], argv);
        int e = errno;
        /* Nothing more can be done if even this write fails. */
        if (write(pipefd[1], &e, sizeof e) != (ssize_t)sizeof e)
            _exit(127);
        _exit(127);
    }
    close(pipefd[1]);
    ssize_t n;
    do
        n = read(pipefd[0], exec_errno, sizeof *exec_errno);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof *exec_errno)
        *exec_errno = 0;
    close(pipefd[0]);
    return pid;
}

/* Wait for the task, passing on the signals others send to the monitor.
 * A signal the kernel sends to the whole foreground process group (Ctrl-C on
 * a terminal) already reached the task and is not sent twice. */
static int wait_task(pid_t task, int sigfd, struct rusage *ru)
{
    for (;;) {
        int status;
        pid_t r = wait4(task, &status, WNOHANG, ru);
        if (r == task)
            return status;
        if (r < 0 && errno != EINTR) {
            pano_error("waiting for the task: %s", strerror(errno));
            return -1;
        }
        struct pollfd pfd = {.fd = sigfd, .events = POLLIN};
        if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
            pano_error("poll: %s", strerror(errno));
            return -1;
        }
        struct signalfd_siginfo si;
        while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (si.ssi_signo == SIGCHLD || si.ssi_code == SI_KERNEL)
                continue;
            pano_debug("passing signal %u to the task", si.ssi_signo);
            if (kill(task, (int)si.ssi_signo) < 0 && errno != ESRCH)
                pano_warn("cannot pass signal %u to the task: %s", si.ssi_signo,
                          strerror(errno));
        }
    }
}

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-monitor", argc, argv, true);

    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int opt;
    /* '+': stop at the first non-option, so CMD's own options stay CMD's. */
    while ((opt = getopt_long(argc, argv, "+o:h", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled)
            continue; /* a bad value was reported; the task runs regardless */
        switch (opt) {
        case 'o':
            pano_cli_set(cfg, "pano.output", optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        pano_error("no command given");
        usage(stderr);
        return 2;
    }
    char **task_argv = argv + optind;

    monitor m = {.cfg = cfg};
    m.source = pano_source_new(cfg);
    char err[512];
    m.sink = pano_sink_open(cfg, "/dev/stderr", err, sizeof err);
    if (!m.sink)
        pano_warn("events cannot be sent: %s", err);
    else
        pano_debug("events go to %s", pano_sink_describe(m.sink));

    /* Block the signals we handle, so that they queue on a signalfd. */
    sigset_t handled, original;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaddset(&handled, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &handled, &original);
    int sigfd = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd < 0) {
        pano_error("signalfd: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &original, NULL);
        execvp(task_argv[0], task_argv); /* run the task unmonitored */
        pano_error("cannot run %s: %s", task_argv[0], strerror(errno));
        return 127;
    }

    double started = pano_now();
    int exec_errno;
    pid_t task = start_task(task_argv, &original, &exec_errno);
    if (task < 0) {
        pano_error("cannot start %s: %s", task_argv[0], strerror(errno));
        return 127;
    }
    emit_start(&m, task_argv, task);

    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    int status = wait_task(task, sigfd, &ru);
    int exit_code;
    char error[512] = "";
    if (exec_errno) {
        exit_code = exec_errno == ENOENT ? 127 : 126;
        snprintf(error, sizeof error, "cannot run %s: %s", task_argv[0], strerror(exec_errno));
        pano_error("%s", error);
        status = exit_code << 8;
    } else if (status < 0) {
        exit_code = 1;
        status = exit_code << 8;
        snprintf(error, sizeof error, "lost track of the task");
    } else
        exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    emit_end(&m, task, status, &ru, started, error[0] ? error : NULL);

    close(sigfd);
    pano_sink_close(m.sink);
    pano_source_free(m.source);
    pano_config_free(cfg);
    return exit_code;
}
