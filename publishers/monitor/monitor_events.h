/*
 * monitor_events.h - the fields pano-monitor puts into its events, a
 * contract with Panorama and Pegasus (docs/events.md, schemas/events/):
 * kickstart.inv.start, kickstart.inv.online samples and kickstart.inv.end.
 *
 * Each function adds one event's fields, in their documented order, names,
 * units and types, to an object (the event made by pano_event_new, which
 * holds the envelope) from a plain struct of values the caller measured;
 * nothing here reads the system. Times are in seconds, memory in kB, I/O in
 * bytes. pano_monitor_changed is the --on-change test over the same values
 * a sample's delta carries.
 */
#ifndef PANO_MONITOR_EVENTS_H
#define PANO_MONITOR_EVENTS_H

#include "gpu.h"
#include "json.h"
#include "proctree.h"

#include <stdbool.h>
#include <stdint.h>

#define PANO_MONITOR_START_EVENT "kickstart.inv.start"
#define PANO_MONITOR_SAMPLE_EVENT "kickstart.inv.online"
#define PANO_MONITOR_END_EVENT "kickstart.inv.end"
/* pegasus-kickstart's NVML events: a device the task uses, per sample, and
 * the largest figures of each such device, at the end */
#define PANO_MONITOR_GPU_EVENT "kickstart.inv.gpu.stats"
#define PANO_MONITOR_GPU_MAX_EVENT "kickstart.inv.gpu.stats.max"

/* pano-monitor's own CPU time so far (getrusage(RUSAGE_SELF)): the cost of
 * monitoring, in every sample and in the end event. */
typedef struct {
    bool known; /* false: not measured, the fields are left out */
    double utime, stime;
} pano_monitor_cpu;

/* The task's GPU figures (gpu.h), summed over the devices it uses. */
typedef struct {
    bool known;      /* NVML was loaded and sees a device: else left out */
    uint64_t memory; /* bytes now; in the end event, the largest */
    int util;        /* % of SM, now; in the end event, the largest; < 0: unknown */
} pano_monitor_gpu;

typedef struct {
    char *const *argv;   /* the task's command line, NULL-terminated */
    const char *exe;     /* readlink /proc/PID/exe ("": unknown) */
    const char *cwd;     /* NULL: unknown */
    int64_t pid;         /* the task */
    int64_t monitor_pid;
    const char *user;    /* NULL: unknown */
    long cpu_count;      /* <= 0: unknown */
    const char *cpu_model; /* NULL: unknown */
    int64_t mem_total;   /* kB; < 0: unknown */
    double interval;     /* s */
} pano_monitor_start;

typedef struct {
    int64_t pid;              /* the task */
    const char *exe;          /* "": unknown */
    pano_tree_totals totals;  /* this sample */
    pano_tree_totals sent;    /* the last sample sent (all zero before the first) */
    double cpu_util;          /* CPUs over the last interval; < 0: none (first sample) */
    double elapsed;           /* s since the task started */
    double interval;          /* s */
    const char *kind;         /* "start", "periodic" or "end" */
    bool pss;                 /* with pss and uss (pano.monitor.pss) */
    pano_monitor_gpu gpu;
    int64_t monitor_pid;
    pano_monitor_cpu self;
} pano_monitor_sample;

typedef struct {
    int64_t pid;              /* the task */
    const char *exe;          /* "": unknown */
    int wait_status;          /* as wait(2) gives it */
    double duration;          /* s, start of the task to its exit */
    double utime, stime;      /* s, getrusage(RUSAGE_CHILDREN) */
    int64_t maxrss;           /* kB, getrusage(RUSAGE_CHILDREN) */
    pano_tree_totals final;   /* the end sample's totals (its peaks of pss and uss) */
    uint64_t samples;         /* samples sent */
    pano_monitor_gpu gpu;     /* the peaks */
    pano_monitor_cpu self;
    uint64_t payload_events, payload_errors;
    /* the metrics socket's (metrics_socket.h), when it was open */
    bool metrics_socket;
    uint64_t metrics, metrics_above_level, metrics_bad_lines, metrics_refused;
    const char *error;        /* NULL: none */
} pano_monitor_end;

void pano_monitor_start_fields(pano_json *ev, const pano_monitor_start *s);
void pano_monitor_sample_fields(pano_json *ev, const pano_monitor_sample *s);
void pano_monitor_end_fields(pano_json *ev, const pano_monitor_end *e);
/* A device the task uses, as a sample read it (driver: NVML's version). */
void pano_monitor_gpu_fields(pano_json *ev, const pano_gpu_device *d, const char *driver);
/* The largest figures of the devices the task used: in each of max[], the
 * memory, utilizations, power and the task's figures hold their peaks. */
void pano_monitor_gpu_max_fields(pano_json *ev, const pano_gpu_device *max, size_t n);

/* Did any value of a sample's delta move by more than threshold (a
 * fraction of the value sent; any move from 0) since the sample sent? */
bool pano_monitor_changed(const pano_tree_totals *now, const pano_tree_totals *sent,
                          double threshold);

#endif
