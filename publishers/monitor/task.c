#include "task.h"

#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Signals passed on to the task when someone sends them to the monitor. */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define FORWARDED_COUNT (sizeof forwarded_signals / sizeof forwarded_signals[0])

/* Start argv with the original signal mask, its stdout/stderr on the
 * capture pipes. vfork: the child borrows the monitor's memory until it
 * calls exec, so no page tables are copied and the monitor resumes once
 * exec is done; a failure in the child is reported in *exec_errno (memory
 * the two share), the child then exits 127. */
pid_t pano_task_start(char **argv, const sigset_t *original_mask, const pano_task_capture *caps,
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
size_t pano_task_setup_capture(pano_task_capture caps[2], bool *merged)
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

void pano_task_reap(pano_proctree *tree, pid_t task, pid_t keep, bool *task_done, int *status)
{
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
            return;
        pid_t pid = si.si_pid;
        if (pid == keep)
            return; /* ours, and still needed: not reaped here */
        /* Its last counters, while it is still a zombie. */
        pano_proctree_zombie(tree, pid);
        struct rusage ru;
        int st;
        pid_t r;
        do
            r = wait4(pid, &st, WNOHANG, &ru);
        while (r < 0 && errno == EINTR);
        if (r != pid)
            return;
        pano_proctree_reaped(tree, pid, &ru);
        if (pid == task) {
            *task_done = true;
            *status = st;
        } else
            pano_debug("reaped descendant %d", (int)pid);
    }
}

/* The tools are pano-emit, the metric API, a nested monitor. */
void pano_task_export_settings(const pano_config *cfg, int argc, char **argv)
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

int pano_task_exec_unmonitored(char **argv, const sigset_t *original_mask)
{
    sigprocmask(SIG_SETMASK, original_mask, NULL);
    execvp(argv[0], argv);
    return errno == ENOENT ? 127 : 126;
}

int pano_task_block_signals(sigset_t *original)
{
    sigset_t handled, blocked;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaddset(&handled, forwarded_signals[i]);
    blocked = handled;
    sigaddset(&blocked, SIGPIPE);
    sigprocmask(SIG_BLOCK, &blocked, original);
    return signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
}

bool pano_task_forward_signals(int sigfd, pid_t task, bool task_done)
{
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
        if (kill(task, (int)si.ssi_signo) < 0 && errno != ESRCH)
            pano_warn("cannot pass signal %u to the task: %s", si.ssi_signo, strerror(errno));
    }
    return chld;
}
