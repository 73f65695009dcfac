/*
 * gpu.h - the GPU use of a task's processes, through NVIDIA's management
 * library (NVML) loaded at run time: dlopen("libnvidia-ml.so.1"), so the
 * monitor runs unchanged where there is no GPU, driver or library, and
 * needs no privilege.
 *
 * A sample reads every device: its memory used and total, its utilization
 * (the share of the last sample period in which a kernel ran, and in which
 * its memory was read or written), its power draw; the compute processes
 * on it with their memory (nvmlDeviceGetComputeRunningProcesses), and the
 * SM and memory utilization of each process since the previous sample
 * (nvmlDeviceGetProcessUtilization). A device is reported when one of the
 * task's processes is on it, with that process's figures alone in the
 * task's totals.
 *
 * A process of the driver's list belongs to the task when its pid is the
 * pid of one of the task's processes in any of its PID namespaces
 * (/proc/PID/status NSpid): as the monitor sees it (the driver gives pids
 * as the host sees them), or inside a PID namespace of the task's own (a
 * driver or library that gives them as the container sees them).
 */
#ifndef PANO_GPU_H
#define PANO_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* At most this many devices, and of the task's processes on one device. */
#define PANO_GPU_MAX_DEVICES 16
#define PANO_GPU_MAX_PROCS 16

typedef struct {
    pid_t pid;       /* as the monitor sees it */
    uint64_t memory; /* bytes */
    int sm, mem;     /* %, -1 when the driver gave none */
} pano_gpu_proc;

typedef struct {
    unsigned id; /* NVML's index */
    char name[96], uuid[96];
    uint64_t total_memory, mem_usage; /* bytes, the whole device */
    int gpu_utilization, mem_utilization; /* %, -1 when unknown */
    int64_t power_usage;                  /* mW, -1 when unknown */
    uint64_t task_memory;                 /* bytes, the task's processes */
    int task_sm;                          /* %, theirs summed, -1 when unknown */
    size_t nprocs;                        /* the task's processes on it */
    pano_gpu_proc procs[PANO_GPU_MAX_PROCS];
} pano_gpu_device;

/* The task's figures, summed over the devices it uses. */
typedef struct {
    uint64_t memory; /* bytes */
    int util;        /* % of SM, -1 when the driver gave none */
} pano_gpu_task;

typedef struct pano_gpu pano_gpu;

/* Load `library` (NULL: libnvidia-ml.so.1) and initialise it. NULL, with
 * the reason at debug level, when there is no library, no driver or no
 * device. */
pano_gpu *pano_gpu_open(const char *library);
void pano_gpu_close(pano_gpu *g);

/* The driver's version ("" when unknown), and how many devices there are. */
const char *pano_gpu_driver(const pano_gpu *g);
unsigned pano_gpu_count(const pano_gpu *g);

/* Read every device; write those where one of these live processes (the
 * task's tree) runs to out, and the task's figures to *task; return how
 * many devices. */
size_t pano_gpu_sample(pano_gpu *g, const pid_t *pids, size_t npids,
                       pano_gpu_device out[PANO_GPU_MAX_DEVICES], pano_gpu_task *task);

/* The largest figures the samples read: of each device the task used (in
 * out, each field holding its largest value; returns how many), and of the
 * task (*task). */
size_t pano_gpu_peaks(const pano_gpu *g, pano_gpu_device out[PANO_GPU_MAX_DEVICES],
                      pano_gpu_task *task);

#endif
