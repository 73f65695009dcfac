/*
 * proctree.h - cumulative resource usage of a task's whole process tree.
 *
 * The tree is every descendant of the monitor, found through parent links
 * (/proc/PID/task/TID/children, or a scan of every /proc/PID/stat when the
 * kernel lacks that file), so processes that call setsid() or setpgid()
 * still count. With PR_SET_CHILD_SUBREAPER on the monitor, orphans (daemons,
 * double forks) are re-parented to the monitor and stay in the tree.
 *
 * Totals are cumulative since the task started, and include processes that
 * have exited:
 *   - a live process contributes its own usage plus that of the children it
 *     reaped (stat fields 14-17, /proc/PID/io: the kernel adds a reaped
 *     child's usage to its parent's);
 *   - a child of the monitor that exited contributes what the kernel hands
 *     back when the monitor reaps it (wait4 rusage for CPU time, and its
 *     /proc/PID/io read while it is a zombie);
 *   - iowait (delay accounting, not inherited by parents) is summed over
 *     every process ever seen, with the last reading of those gone.
 * Processes are read parents first, so a child reaped while a sample is
 * being taken can only be missed for that sample, never counted twice; the
 * cumulative totals reported never decrease. When no pid was allocated
 * since the last walk (a quiet node), the tree cannot have grown and the
 * children files are not read.
 *
 * vm, rss, procs and threads describe the live processes at sampling time.
 */
#ifndef PANO_PROCTREE_H
#define PANO_PROCTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

typedef struct {
    double utime, stime, iowait; /* s, cumulative */
    uint64_t vm, rss;            /* kB, live processes now */
    uint64_t vm_peak, rss_peak;  /* kB, largest vm / rss seen in a sample */
    uint64_t procs, threads;     /* live processes, their threads */
    uint64_t bread, bwrite;      /* bytes, cumulative (storage layer) */
    uint64_t rchar, wchar;       /* bytes, cumulative (every read/write call) */
    uint64_t syscr, syscw;       /* count, cumulative */
} pano_tree_totals;

/* One /proc/PID/stat line. Times in clock ticks, vsize in bytes, rss in
 * pages, as the kernel prints them. */
typedef struct {
    int pid;
    char comm[64]; /* truncated copy of the name */
    char state;
    int ppid;
    uint64_t utime, stime, cutime, cstime;
    int64_t num_threads;
    uint64_t starttime;
    uint64_t vsize;
    int64_t rss;
    uint64_t blkio_ticks; /* field 42, 0 when absent */
} pano_proc_stat;

typedef struct {
    uint64_t rchar, wchar, syscr, syscw, read_bytes, write_bytes;
} pano_proc_io;

/* Parse /proc/PID/stat. The name runs to the LAST ')' so names holding
 * spaces or parentheses ("a b) c") do not shift the fields. */
bool pano_proc_stat_parse(const char *buf, size_t len, pano_proc_stat *out);
/* Parse /proc/PID/io (missing lines stay 0). */
bool pano_proc_io_parse(const char *buf, size_t len, pano_proc_io *out);

typedef struct pano_proctree pano_proctree;

/* Track the descendants of root (the monitor itself: getpid()). */
pano_proctree *pano_proctree_new(pid_t root);
void pano_proctree_free(pano_proctree *t);

/* Take a sample. Returns 0, or -1 when /proc cannot be read at all. */
int pano_proctree_sample(pano_proctree *t, pano_tree_totals *out);

/* A child of root has exited and is about to be reaped: read its final
 * counters while it is a zombie (waitid(..., WNOWAIT) found it). */
void pano_proctree_zombie(pano_proctree *t, pid_t pid);
/* That child was reaped with this rusage (wait4). */
void pano_proctree_reaped(pano_proctree *t, pid_t pid, const struct rusage *ru);

/* Leave this child of root out of the tree (the monitor's own helper). */
void pano_proctree_ignore(pano_proctree *t, pid_t pid);

/* How many samples read the known processes only, without the children
 * files, because no pid had been allocated since the walk before (see
 * pano_proctree_sample in proctree.c). */
uint64_t pano_proctree_stable_walks(const pano_proctree *t);

#endif
