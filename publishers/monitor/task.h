/*
 * task.h - the task pano-monitor runs, apart from watching it: the pipes
 * that capture its output, starting it (vfork + exec, with the signal mask
 * the monitor started with), the signals passed on to it, reaping it and
 * the orphaned descendants re-parented to the monitor, and the settings it
 * inherits through its environment.
 */
#ifndef PANO_MONITOR_TASK_H
#define PANO_MONITOR_TASK_H

#include "config.h"
#include "proctree.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
    int fd;      /* 1 or 2 (or both, see merged) */
    int pipe[2]; /* -1 when not captured */
} pano_task_capture;

/* Make the pipes for the task's stdout and stderr (terminals are left
 * alone). Returns how many; *merged when fds 1 and 2 share one open file
 * description (2>&1), which one pipe then carries. */
size_t pano_task_setup_capture(pano_task_capture caps[2], bool *merged);

/* Start argv with original_mask, its output on the capture pipes. A
 * failure to exec is reported in *exec_errno (the child exits 127). Returns
 * the pid, or -1 with errno set. */
pid_t pano_task_start(char **argv, const sigset_t *original_mask, const pano_task_capture *caps,
                      size_t ncaps, bool merged, int *exec_errno);

/* Run argv in place of the monitor, with original_mask; returns only when
 * it cannot, with the exit status for that (127 not found, else 126). */
int pano_task_exec_unmonitored(char **argv, const sigset_t *original_mask);

/* Block SIGCHLD and the signals passed on to the task, so that they queue
 * on the returned signalfd (-1 with errno set on failure), and SIGPIPE, so
 * that a closed output gives EPIPE. *original gets the mask before. */
int pano_task_block_signals(sigset_t *original);

/* Read the signals queued on sigfd and pass them on to the task, except
 * when it is done or when the kernel sent them to the whole process group
 * (Ctrl-C on a terminal: the task has it already). Returns whether SIGCHLD
 * was among them. */
bool pano_task_forward_signals(int sigfd, pid_t task, bool task_done);

/* Reap every child that exited, except keep (the output relay, still
 * needed: reaping stops there), recording each in tree. The task's wait
 * status goes to *status and sets *task_done. */
void pano_task_reap(pano_proctree *tree, pid_t task, pid_t keep, bool *task_done, int *status);

/* Export to the task what was set on the monitor's command line (and the
 * configuration file's absolute path), so that pano tools it runs share it. */
void pano_task_export_settings(const pano_config *cfg, int argc, char **argv);

#endif
