#include "gpu.h"

#include "log.h"
#include "mem.h"
#include "proctree.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few NVML types used, as nvml.h declares them (no header needed). */
typedef int nvml_return;
typedef void *nvml_device;
enum { NVML_SUCCESS = 0, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7 };
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

typedef struct {
    unsigned long long total, free, used;
} nvml_memory;

typedef struct {
    unsigned gpu, memory;
} nvml_utilization;

/* nvmlProcessInfo_v1_t, and nvmlProcessInfo_t of the _v2 and _v3 calls:
 * their sizes differ, so each call gets its own. */
typedef struct {
    unsigned pid;
    unsigned long long used_memory;
} nvml_process_v1;

typedef struct {
    unsigned pid;
    unsigned long long used_memory;
    unsigned gpu_instance, compute_instance;
} nvml_process_v2;

typedef struct {
    unsigned pid;
    unsigned long long timestamp; /* us */
    unsigned sm, mem, enc, dec;
} nvml_process_sample;

typedef struct {
    nvml_device handle;
    char name[96], uuid[96];      /* read once */
    unsigned long long last_seen; /* newest utilization sample read */
    bool used;                    /* a process of the task was seen on it */
    pano_gpu_device peak;         /* its largest figures, when used */
} device;

/* One process of the tree and its pids in the PID namespaces below the
 * monitor's (NSpid past the first), read once. */
typedef struct {
    pid_t pid;
    pid_t inner[4];
    size_t ninner;
} ns_pids;

struct pano_gpu {
    void *lib;
    nvml_return (*shutdown)(void);
    nvml_return (*get_memory)(nvml_device, nvml_memory *);
    nvml_return (*get_utilization)(nvml_device, nvml_utilization *);
    nvml_return (*get_power)(nvml_device, unsigned *);
    nvml_return (*get_processes)(nvml_device, unsigned *, void *);
    size_t process_size; /* of the struct get_processes fills */
    nvml_return (*get_process_utilization)(nvml_device, nvml_process_sample *, unsigned *,
                                           unsigned long long);
    char driver[80];
    unsigned count;
    device devices[PANO_GPU_MAX_DEVICES];
    ns_pids *ns; /* by pid */
    size_t nns;
    pano_gpu_task peak;
};

static void *symbol(void *lib, const char *name)
{
    void *f = dlsym(lib, name);
    if (!f)
        pano_debug("GPU: %s is not in the NVML library: not read", name);
    return f;
}

pano_gpu *pano_gpu_open(const char *library)
{
    if (!library)
        library = "libnvidia-ml.so.1";
    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        pano_debug("GPU: no NVML (%s): no GPU figures", dlerror());
        return NULL;
    }
    nvml_return (*init)(void) = (nvml_return(*)(void))dlsym(lib, "nvmlInit_v2");
    nvml_return (*count)(unsigned *) = (nvml_return(*)(unsigned *))dlsym(lib, "nvmlDeviceGetCount_v2");
    nvml_return (*handle)(unsigned, nvml_device *) =
        (nvml_return(*)(unsigned, nvml_device *))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    nvml_return rc;
    if (!init || !count || !handle) {
        pano_debug("GPU: %s lacks nvmlInit_v2 or the device calls: no GPU figures", library);
        dlclose(lib);
        return NULL;
    }
    if ((rc = init()) != NVML_SUCCESS) {
        pano_debug("GPU: nvmlInit_v2 returned %d (no driver?): no GPU figures", rc);
        dlclose(lib);
        return NULL;
    }
    pano_gpu *g = pano_calloc(1, sizeof *g);
    g->lib = lib;
    g->shutdown = (nvml_return(*)(void))symbol(lib, "nvmlShutdown");
    if (count(&g->count) != NVML_SUCCESS || g->count == 0) {
        pano_debug("GPU: NVML sees no device: no GPU figures");
        pano_gpu_close(g);
        return NULL;
    }
    if (g->count > PANO_GPU_MAX_DEVICES) {
        pano_warn("GPU: %u devices; the first %d are read", g->count, PANO_GPU_MAX_DEVICES);
        g->count = PANO_GPU_MAX_DEVICES;
    }
    g->peak.util = -1;
    nvml_return (*driver)(char *, unsigned) =
        (nvml_return(*)(char *, unsigned))symbol(lib, "nvmlSystemGetDriverVersion");
    if (!driver || driver(g->driver, sizeof g->driver) != NVML_SUCCESS)
        g->driver[0] = '\0';
    g->driver[sizeof g->driver - 1] = '\0';
    nvml_return (*get_name)(nvml_device, char *, unsigned) =
        (nvml_return(*)(nvml_device, char *, unsigned))symbol(lib, "nvmlDeviceGetName");
    nvml_return (*get_uuid)(nvml_device, char *, unsigned) =
        (nvml_return(*)(nvml_device, char *, unsigned))symbol(lib, "nvmlDeviceGetUUID");
    for (unsigned i = 0; i < g->count; i++) {
        device *d = &g->devices[i];
        if (handle(i, &d->handle) != NVML_SUCCESS) {
            d->handle = NULL;
            continue;
        }
        if (!get_name || get_name(d->handle, d->name, sizeof d->name) != NVML_SUCCESS)
            d->name[0] = '\0';
        if (!get_uuid || get_uuid(d->handle, d->uuid, sizeof d->uuid) != NVML_SUCCESS)
            d->uuid[0] = '\0';
        d->name[sizeof d->name - 1] = d->uuid[sizeof d->uuid - 1] = '\0';
    }
    g->get_memory = (nvml_return(*)(nvml_device, nvml_memory *))symbol(lib, "nvmlDeviceGetMemoryInfo");
    g->get_utilization = (nvml_return(*)(nvml_device, nvml_utilization *))symbol(
        lib, "nvmlDeviceGetUtilizationRates");
    g->get_power = (nvml_return(*)(nvml_device, unsigned *))symbol(lib, "nvmlDeviceGetPowerUsage");
    /* the newest process call present, with the struct it fills */
    static const struct {
        const char *name;
        size_t size;
    } calls[] = {{"nvmlDeviceGetComputeRunningProcesses_v3", sizeof(nvml_process_v2)},
                 {"nvmlDeviceGetComputeRunningProcesses_v2", sizeof(nvml_process_v2)},
                 {"nvmlDeviceGetComputeRunningProcesses", sizeof(nvml_process_v1)}};
    for (size_t i = 0; i < sizeof calls / sizeof *calls && !g->get_processes; i++) {
        g->get_processes = (nvml_return(*)(nvml_device, unsigned *, void *))dlsym(lib, calls[i].name);
        g->process_size = calls[i].size;
    }
    g->get_process_utilization =
        (nvml_return(*)(nvml_device, nvml_process_sample *, unsigned *, unsigned long long))symbol(
            lib, "nvmlDeviceGetProcessUtilization");
    pano_debug("GPU: %u device(s), driver %s", g->count, g->driver[0] ? g->driver : "unknown");
    return g;
}

void pano_gpu_close(pano_gpu *g)
{
    if (!g)
        return;
    if (g->shutdown)
        g->shutdown();
    dlclose(g->lib);
    free(g->ns);
    free(g);
}

const char *pano_gpu_driver(const pano_gpu *g) { return g->driver; }

unsigned pano_gpu_count(const pano_gpu *g) { return g->count; }

static int by_pid(const void *a, const void *b)
{
    pid_t x = ((const ns_pids *)a)->pid, y = ((const ns_pids *)b)->pid;
    return (x > y) - (x < y);
}

/* Keep the namespaces' pids of exactly these processes, reading those of
 * the processes new since the last time. */
static void update_ns(pano_gpu *g, const pid_t *pids, size_t npids)
{
    ns_pids *next = pano_calloc(npids ? npids : 1, sizeof *next);
    for (size_t i = 0; i < npids; i++) {
        ns_pids key = {.pid = pids[i]};
        ns_pids *was = g->nns ? bsearch(&key, g->ns, g->nns, sizeof *g->ns, by_pid) : NULL;
        if (was) {
            next[i] = *was;
            continue;
        }
        next[i].pid = pids[i];
        char path[40], buf[4096];
        snprintf(path, sizeof path, "/proc/%d/status", (int)pids[i]);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        pid_t all[5];
        size_t n;
        if (pano_proc_nspid_parse(buf, len, all, 5, &n))
            for (size_t k = 1; k < n; k++)
                next[i].inner[next[i].ninner++] = all[k];
    }
    qsort(next, npids, sizeof *next, by_pid);
    free(g->ns);
    g->ns = next;
    g->nns = npids;
}

/* The task's process whose pid (in some namespace) the driver gave, or 0. */
static pid_t owner(pano_gpu *g, unsigned pid, const pid_t *pids, size_t npids, bool *ns_read)
{
    for (size_t i = 0; i < npids; i++)
        if ((unsigned)pids[i] == pid)
            return pids[i];
    if (!*ns_read) {
        update_ns(g, pids, npids);
        *ns_read = true;
    }
    for (size_t i = 0; i < g->nns; i++)
        for (size_t k = 0; k < g->ns[i].ninner; k++)
            if ((unsigned)g->ns[i].inner[k] == pid)
                return g->ns[i].pid;
    return 0;
}

static pano_gpu_proc *task_proc(pano_gpu_device *d, pid_t pid)
{
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].pid == pid)
            return &d->procs[i];
    if (d->nprocs == PANO_GPU_MAX_PROCS)
        return NULL;
    pano_gpu_proc *p = &d->procs[d->nprocs++];
    *p = (pano_gpu_proc){.pid = pid, .sm = -1, .mem = -1};
    return p;
}

/* The task's processes on this device and their memory. */
static void read_processes(pano_gpu *g, nvml_device h, pano_gpu_device *d, const pid_t *pids,
                           size_t npids, bool *ns_read)
{
    if (!g->get_processes)
        return;
    unsigned n = 0;
    nvml_return rc = g->get_processes(h, &n, NULL);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE || n == 0)
        return; /* NVML_SUCCESS: no process */
    n += 8; /* room for processes starting meanwhile */
    unsigned char *buf = pano_malloc((size_t)n * g->process_size);
    if (g->get_processes(h, &n, buf) == NVML_SUCCESS)
        for (unsigned i = 0; i < n; i++) {
            const unsigned char *e = buf + (size_t)i * g->process_size;
            unsigned pid;
            unsigned long long used;
            memcpy(&pid, e, sizeof pid);
            memcpy(&used, e + offsetof(nvml_process_v1, used_memory), sizeof used);
            pid_t mine = owner(g, pid, pids, npids, ns_read);
            pano_gpu_proc *p = mine ? task_proc(d, mine) : NULL;
            if (p && used != NVML_VALUE_NOT_AVAILABLE)
                p->memory += used;
        }
    free(buf);
}

/* The task's processes' SM and memory utilization since the last read:
 * each process's mean over the driver's samples. */
static void read_utilization(pano_gpu *g, device *dev, pano_gpu_device *d, const pid_t *pids,
                             size_t npids, bool *ns_read)
{
    if (!g->get_process_utilization)
        return;
    unsigned n = 0;
    nvml_return rc = g->get_process_utilization(dev->handle, NULL, &n, dev->last_seen);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE || n == 0)
        return; /* NVML_ERROR_NOT_FOUND: no process ran a kernel since */
    n += 8;
    nvml_process_sample *s = pano_calloc(n, sizeof *s);
    if (g->get_process_utilization(dev->handle, s, &n, dev->last_seen) == NVML_SUCCESS) {
        unsigned sum_sm[PANO_GPU_MAX_PROCS] = {0}, sum_mem[PANO_GPU_MAX_PROCS] = {0},
                 count[PANO_GPU_MAX_PROCS] = {0};
        for (unsigned i = 0; i < n; i++) {
            if (s[i].timestamp > dev->last_seen)
                dev->last_seen = s[i].timestamp;
            pid_t mine = owner(g, s[i].pid, pids, npids, ns_read);
            pano_gpu_proc *p = mine ? task_proc(d, mine) : NULL;
            if (!p)
                continue;
            size_t k = (size_t)(p - d->procs);
            sum_sm[k] += s[i].sm;
            sum_mem[k] += s[i].mem;
            count[k]++;
        }
        for (size_t k = 0; k < d->nprocs; k++)
            if (count[k]) {
                d->procs[k].sm = (int)(sum_sm[k] / count[k]);
                d->procs[k].mem = (int)(sum_mem[k] / count[k]);
            }
    }
    free(s);
}

/* Raise a device's peaks to what a sample read. */
static void raise_peaks(device *dev, const pano_gpu_device *d)
{
    pano_gpu_device *max = &dev->peak;
    if (!dev->used) {
        *max = *d;
        dev->used = true;
        return;
    }
#define RAISE(field)                                                                           \
    if (d->field > max->field)                                                                 \
    max->field = d->field
    RAISE(mem_usage);
    RAISE(gpu_utilization);
    RAISE(power_usage);
    RAISE(task_memory);
    RAISE(task_sm);
#undef RAISE
}

size_t pano_gpu_sample(pano_gpu *g, const pid_t *pids, size_t npids,
                       pano_gpu_device out[PANO_GPU_MAX_DEVICES], pano_gpu_task *task)
{
    size_t used = 0;
    *task = (pano_gpu_task){.util = -1};
    bool ns_read = false;
    for (unsigned i = 0; i < g->count; i++) {
        device *dev = &g->devices[i];
        if (!dev->handle)
            continue;
        pano_gpu_device *d = &out[used];
        memset(d, 0, sizeof *d);
        d->id = i;
        read_processes(g, dev->handle, d, pids, npids, &ns_read);
        read_utilization(g, dev, d, pids, npids, &ns_read);
        if (d->nprocs == 0)
            continue; /* none of the task's processes is on it */
        d->task_sm = -1;
        for (size_t k = 0; k < d->nprocs; k++) {
            d->task_memory += d->procs[k].memory;
            if (d->procs[k].sm >= 0)
                d->task_sm = (d->task_sm < 0 ? 0 : d->task_sm) + d->procs[k].sm;
        }
        memcpy(d->name, dev->name, sizeof d->name);
        memcpy(d->uuid, dev->uuid, sizeof d->uuid);
        nvml_memory m;
        if (g->get_memory && g->get_memory(dev->handle, &m) == NVML_SUCCESS) {
            d->total_memory = m.total;
            d->mem_usage = m.used;
        }
        nvml_utilization u;
        d->gpu_utilization = d->mem_utilization = -1;
        if (g->get_utilization && g->get_utilization(dev->handle, &u) == NVML_SUCCESS) {
            d->gpu_utilization = (int)u.gpu;
            d->mem_utilization = (int)u.memory;
        }
        unsigned mw;
        d->power_usage = -1;
        if (g->get_power && g->get_power(dev->handle, &mw) == NVML_SUCCESS)
            d->power_usage = mw;
        raise_peaks(dev, d);
        task->memory += d->task_memory;
        if (d->task_sm >= 0)
            task->util = (task->util < 0 ? 0 : task->util) + d->task_sm;
        used++;
    }
    if (task->memory > g->peak.memory)
        g->peak.memory = task->memory;
    if (task->util > g->peak.util)
        g->peak.util = task->util;
    return used;
}

size_t pano_gpu_peaks(const pano_gpu *g, pano_gpu_device out[PANO_GPU_MAX_DEVICES],
                      pano_gpu_task *task)
{
    size_t n = 0;
    for (unsigned i = 0; i < g->count; i++)
        if (g->devices[i].used)
            out[n++] = g->devices[i].peak;
    *task = g->peak;
    return n;
}
