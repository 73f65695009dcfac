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
 *     every process ever seen, with the last reading of those gone;
 *   - context switches (vol_ctxt, inv_ctxt) as the kernel counts them per
 *     thread (/proc/PID/task/TID/status, read when a process is first seen
 *     and then in the samples pano_proctree_set_ctxt asks for): a live
 *     process contributes its threads' counts as last read; one gone
 *     (reaped by a process of the tree) its last reading, kept by its
 *     parent; a child of the monitor what wait4 hands
 *     back (its threads' and its reaped descendants', which replaces their
 *     readings). Switches made after a process's last reading (between the
 *     last sample and its exit) and by threads that exited before a sample
 *     read them are counted only when the monitor reaps the process whose
 *     they were or whose descendants they were.
 * Processes are read parents first, so a child reaped while a sample is
 * being taken can only be missed for that sample, never counted twice; the
 * cumulative totals reported never decrease. When no pid was allocated
 * since the last walk (a quiet node), the tree cannot have grown and the
 * children files are not read.
 *
 * bsend and brecv are the live processes' network bytes, with those of
 * their sockets and namespaces gone, as netbytes.h counts them, read in
 * the samples pano_proctree_set_net asks for. A process's network
 * namespace is looked at when it is first seen and when its name changes
 * (it ran another program).
 *
 * vm, rss, procs and threads describe the live processes at sampling time;
 * pss and uss too (/proc/PID/smaps_rollup: the proportional set size, a
 * shared page counted as a share of it in each process mapping it, and the
 * unique set size, pages no other process maps), read only in the samples
 * pano_proctree_set_pss asks for, as they cost a walk of each process's
 * page tables.
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
    uint64_t vol_ctxt, inv_ctxt; /* context switches, cumulative */
    bool has_pss;                /* pss and uss were read in this sample */
    uint64_t pss, uss;           /* kB, live processes now (when has_pss) */
    uint64_t pss_peak, uss_peak; /* kB, largest read so far (0: none read) */
    uint64_t bsend, brecv;       /* network bytes, cumulative (netbytes.h) */
    const char *net_method;      /* how they were counted (netbytes.h) */
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
/* The context switches of /proc/PID/status (false when its lines are
 * missing). */
bool pano_proc_ctxt_parse(const char *buf, size_t len, uint64_t *vol, uint64_t *inv);
/* Pss and the unique set size (Private_Clean + Private_Dirty), in kB, of
 * /proc/PID/smaps_rollup (false when its lines are missing). */
bool pano_proc_pss_parse(const char *buf, size_t len, uint64_t *pss, uint64_t *uss);
/* The pids of /proc/PID/status's NSpid line, outermost first, at most max
 * (false when there is none). */
bool pano_proc_nspid_parse(const char *buf, size_t len, pid_t *pids, size_t max, size_t *n);

typedef struct pano_proctree pano_proctree;

/* Track the descendants of root (the monitor itself: getpid()). */
pano_proctree *pano_proctree_new(pid_t root);
void pano_proctree_free(pano_proctree *t);

/* Read pss and uss in every sample (every = 1), in one of every `every`
 * samples (the first included), or never (0, the default). */
void pano_proctree_set_pss(pano_proctree *t, unsigned every);
/* Read the context switches of the known processes in one of every `every`
 * samples (the first included; default 1, every sample). */
void pano_proctree_set_ctxt(pano_proctree *t, unsigned every);

/* Read the network bytes in one of every `every` samples (the first
 * included; default 1, every sample); the samples between carry the last
 * figures. */
void pano_proctree_set_net(pano_proctree *t, unsigned every);
/* Read everything in the next sample, whatever the periods above (the
 * last sample of a task). */
void pano_proctree_full_next(pano_proctree *t);

/* Take a sample. Returns 0, or -1 when /proc cannot be read at all. */
int pano_proctree_sample(pano_proctree *t, pano_tree_totals *out);

/* The live processes of the last sample (*pids, valid until the next). */
size_t pano_proctree_live(const pano_proctree *t, const pid_t **pids);

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
