/*
 * libnvidia-ml.so.1 for the tests: a stand-in for NVIDIA's NVML, built by
 * the test suite, so that pano-monitor's GPU figures are tested on
 * machines with no GPU (the monitor loads it with dlopen when
 * LD_LIBRARY_PATH points at the build's tests/integration/). It implements
 * the calls pano-monitor makes, with the struct layouts of nvml.h, and
 * answers from a text file named by PANO_NVML_STUB, read again at every
 * call (so a test can change it while the task runs):
 *
 *   driver VERSION
 *   device UUID TOTAL USED GPU% MEM% POWER_MW NAME...
 *   proc DEVICE COMM MEMORY SM% MEM% [inner]
 *   pid DEVICE PID MEMORY SM% MEM%
 *
 * Devices are numbered from 0 in the order of their lines. A `proc` line
 * stands for every process whose name (comm) is COMM, found in /proc, with
 * its pid as this process sees it, or with `inner` its pid in its
 * innermost PID namespace (the last of NSpid); a `pid` line for that pid.
 * Each is a compute process with MEMORY bytes, and one utilization sample
 * (SM%, MEM%) per call. Without PANO_NVML_STUB, nvmlInit_v2 fails as it
 * does without a driver.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
};
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    unsigned pid;
    unsigned long long timeStamp;
    unsigned smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

#define MAX_DEVICES 8
#define MAX_PROCS 64

typedef struct {
    char uuid[96], name[96];
    unsigned long long total, used;
    unsigned gpu, mem, power;
} device;

typedef struct {
    unsigned device, pid, sm, mem;
    unsigned long long memory;
} proc;

typedef struct {
    char driver[80];
    device devices[MAX_DEVICES];
    unsigned ndevices;
    proc procs[MAX_PROCS];
    unsigned nprocs;
} spec;

/* The pid of a process in its innermost PID namespace. */
static unsigned inner_pid(const char *pid)
{
    char path[300], line[256];
    snprintf(path, sizeof path, "/proc/%s/status", pid);
    FILE *f = fopen(path, "r");
    unsigned last = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "NSpid:", 6) == 0)
            for (char *tok = strtok(line + 6, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
                last = (unsigned)strtoul(tok, NULL, 10);
    fclose(f);
    return last;
}

static void add_named(spec *s, const proc *p, const char *comm, int inner)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && s->nprocs < MAX_PROCS) {
            char path[300], name[64] = "";
            snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
            FILE *f = fopen(path, "r");
            if (!f)
                continue;
            if (fgets(name, sizeof name, f))
                name[strcspn(name, "\n")] = '\0';
            fclose(f);
            if (strcmp(name, comm) != 0)
                continue;
            proc *q = &s->procs[s->nprocs++];
            *q = *p;
            q->pid = inner ? inner_pid(e->d_name) : (unsigned)strtoul(e->d_name, NULL, 10);
        }
    if (d)
        closedir(d);
}

static int load(spec *s)
{
    memset(s, 0, sizeof *s);
    const char *path = getenv("PANO_NVML_STUB");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        device d = {0};
        proc p = {0};
        char word[64], extra[16] = "";
        int at = 0;
        if (sscanf(line, "driver %79s", s->driver) == 1)
            continue;
        if (s->ndevices < MAX_DEVICES &&
            sscanf(line, "device %95s %llu %llu %u %u %u %n", d.uuid, &d.total, &d.used, &d.gpu,
                   &d.mem, &d.power, &at) == 6) {
            snprintf(d.name, sizeof d.name, "%s", line + at);
            s->devices[s->ndevices++] = d;
        } else if (sscanf(line, "proc %u %63s %llu %u %u %15s", &p.device, word, &p.memory, &p.sm,
                          &p.mem, extra) >= 5)
            add_named(s, &p, word, strcmp(extra, "inner") == 0);
        else if (s->nprocs < MAX_PROCS && sscanf(line, "pid %u %u %llu %u %u", &p.device, &p.pid,
                                                 &p.memory, &p.sm, &p.mem) == 5)
            s->procs[s->nprocs++] = p;
    }
    fclose(f);
    return 0;
}

static const device *find(const spec *s, nvmlDevice_t h)
{
    uintptr_t i = (uintptr_t)h;
    return i >= 1 && i <= s->ndevices ? &s->devices[i - 1] : NULL;
}

nvmlReturn_t nvmlInit_v2(void)
{
    spec s;
    return load(&s) == 0 ? NVML_SUCCESS : NVML_ERROR_DRIVER_NOT_LOADED;
}

nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length)
{
    spec s;
    load(&s);
    snprintf(version, length, "%s", s.driver);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
    spec s;
    load(&s);
    *count = s.ndevices;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *handle)
{
    spec s;
    load(&s);
    if (index >= s.ndevices)
        return NVML_ERROR_INVALID_ARGUMENT;
    *handle = (nvmlDevice_t)(uintptr_t)(index + 1);
    return NVML_SUCCESS;
}

#define DEVICE_OR_FAIL                                                                         \
    spec s;                                                                                    \
    load(&s);                                                                                  \
    const device *d = find(&s, h);                                                             \
    if (!d)                                                                                    \
        return NVML_ERROR_INVALID_ARGUMENT;

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *name, unsigned length)
{
    DEVICE_OR_FAIL
    snprintf(name, length, "%s", d->name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *uuid, unsigned length)
{
    DEVICE_OR_FAIL
    snprintf(uuid, length, "%s", d->uuid);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
    DEVICE_OR_FAIL
    *m = (nvmlMemory_t){.total = d->total, .used = d->used, .free = d->total - d->used};
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
    DEVICE_OR_FAIL
    *u = (nvmlUtilization_t){.gpu = d->gpu, .memory = d->mem};
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned *power)
{
    DEVICE_OR_FAIL
    *power = d->power;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned *count,
                                                     nvmlProcessInfo_t *infos)
{
    DEVICE_OR_FAIL
    unsigned index = (unsigned)(d - s.devices), n = 0;
    for (unsigned i = 0; i < s.nprocs; i++)
        if (s.procs[i].device == index) {
            if (infos && n < *count)
                infos[n] = (nvmlProcessInfo_t){.pid = s.procs[i].pid,
                                               .usedGpuMemory = s.procs[i].memory};
            n++;
        }
    if (!infos || n > *count) {
        *count = n;
        return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t h,
                                             nvmlProcessUtilizationSample_t *samples,
                                             unsigned *count, unsigned long long last_seen)
{
    DEVICE_OR_FAIL
    unsigned index = (unsigned)(d - s.devices), n = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long now = (unsigned long long)ts.tv_sec * 1000000 + (unsigned long long)ts.tv_nsec / 1000;
    for (unsigned i = 0; i < s.nprocs; i++)
        if (s.procs[i].device == index && now > last_seen) {
            if (samples && n < *count)
                samples[n] = (nvmlProcessUtilizationSample_t){
                    .pid = s.procs[i].pid, .timeStamp = now, .smUtil = s.procs[i].sm,
                    .memUtil = s.procs[i].mem};
            n++;
        }
    if (n == 0)
        return NVML_ERROR_NOT_FOUND;
    if (!samples || n > *count) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = n;
    return NVML_SUCCESS;
}
