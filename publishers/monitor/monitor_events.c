#include "monitor_events.h"

#include "sample.h"

#include <math.h>
#include <string.h>
#include <sys/wait.h>

void pano_monitor_start_fields(pano_json *ev, const pano_monitor_start *s)
{
    pano_json *args = pano_json_set_array(ev, "argv");
    for (char *const *a = s->argv; *a; a++)
        pano_json_append(args, pano_json_string(*a));
    pano_json_set_str(ev, "executable", s->argv[0]);
    if (s->exe[0])
        pano_json_set_str(ev, "exe", s->exe);
    if (s->cwd)
        pano_json_set_str(ev, "cwd", s->cwd);
    pano_json_set_int(ev, "pid", s->pid);
    pano_json_set_int(ev, "monitor_pid", s->monitor_pid);
    if (s->user)
        pano_json_set_str(ev, "user", s->user);
    if (s->cpu_count > 0)
        pano_json_set_int(ev, "cpu_count", s->cpu_count);
    if (s->cpu_model)
        pano_json_set_str(ev, "cpu_model", s->cpu_model);
    if (s->mem_total >= 0)
        pano_json_set_int(ev, "mem_total", s->mem_total);
    pano_json_set_double(ev, "interval", s->interval, 3);
    pano_json_set_str(ev, "monitor_version", PANO_VERSION);
}

static void put_monitor_cpu(pano_json *ev, const pano_monitor_cpu *self)
{
    if (!self->known)
        return;
    pano_json_set_double(ev, "monitor_utime", self->utime, 6);
    pano_json_set_double(ev, "monitor_stime", self->stime, 6);
}

/* The fields of a sample, in Panorama's order and units, then the
 * context switches; with pss, the proportional and unique set sizes when
 * read, and their peaks when any was. */
static void put_totals(pano_json *o, const pano_tree_totals *t, bool pss)
{
    pano_json_set_double(o, "utime", t->utime, 3);
    pano_json_set_double(o, "stime", t->stime, 3);
    pano_json_set_double(o, "iowait", t->iowait, 3);
    pano_json_set_int(o, "vm", (int64_t)t->vm);
    pano_json_set_int(o, "rss", (int64_t)t->rss);
    pano_json_set_int(o, "procs", (int64_t)t->procs);
    pano_json_set_int(o, "threads", (int64_t)t->threads);
    pano_json_set_int(o, "bread", (int64_t)t->bread);
    pano_json_set_int(o, "bwrite", (int64_t)t->bwrite);
    pano_json_set_int(o, "rchar", (int64_t)t->rchar);
    pano_json_set_int(o, "wchar", (int64_t)t->wchar);
    pano_json_set_int(o, "syscr", (int64_t)t->syscr);
    pano_json_set_int(o, "syscw", (int64_t)t->syscw);
    pano_json_set_int(o, "vm_peak", (int64_t)t->vm_peak);
    pano_json_set_int(o, "rss_peak", (int64_t)t->rss_peak);
    pano_json_set_int(o, "vol_ctxt", (int64_t)t->vol_ctxt);
    pano_json_set_int(o, "inv_ctxt", (int64_t)t->inv_ctxt);
    pano_json_set_int(o, "bsend", (int64_t)t->bsend);
    pano_json_set_int(o, "brecv", (int64_t)t->brecv);
    if (t->net_method)
        pano_json_set_str(o, "net_method", t->net_method);
    if (pss && t->has_pss) {
        pano_json_set_int(o, "pss", (int64_t)t->pss);
        pano_json_set_int(o, "uss", (int64_t)t->uss);
    }
    if (pss && (t->pss_peak || t->uss_peak)) {
        pano_json_set_int(o, "pss_peak", (int64_t)t->pss_peak);
        pano_json_set_int(o, "uss_peak", (int64_t)t->uss_peak);
    }
}

/* The values a sample is compared on (--on-change) and carries the change
 * of (delta), in sample.h's order. */
static void moving_values(const pano_tree_totals *t, double v[PANO_SAMPLE_NVALUES])
{
    const double all[PANO_SAMPLE_NVALUES] = {
        t->utime,          t->stime,          t->iowait,         (double)t->vm,
        (double)t->rss,    (double)t->procs,  (double)t->threads, (double)t->bread,
        (double)t->bwrite, (double)t->rchar,  (double)t->wchar,  (double)t->syscr,
        (double)t->syscw};
    memcpy(v, all, sizeof all);
}

bool pano_monitor_changed(const pano_tree_totals *now_t, const pano_tree_totals *sent,
                          double threshold)
{
    double now[PANO_SAMPLE_NVALUES], then[PANO_SAMPLE_NVALUES];
    moving_values(now_t, now);
    moving_values(sent, then);
    for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++) {
        double diff = fabs(now[i] - then[i]);
        if (then[i] == 0 ? diff > 0 : diff > threshold * fabs(then[i]))
            return true;
    }
    return false;
}

/* "delta": how much each value moved since the last sample sent (since zero
 * for the first), as sample.h says. Summed over a workflow's samples per
 * time bucket they give exact rates (counters) and, accumulated, the sum of
 * the jobs' last values (gauges), with no per-job work at query time; summed
 * over a job's samples they give its final totals. */
static void put_delta(pano_json *ev, const pano_tree_totals *t, const pano_tree_totals *sent)
{
    double now[PANO_SAMPLE_NVALUES], then[PANO_SAMPLE_NVALUES];
    moving_values(t, now);
    moving_values(sent, then);
    pano_json *d = pano_json_set_object(ev, "delta");
    for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++) {
        double change = pano_sample_delta(i, now[i], then[i]);
        if (pano_sample_values[i].seconds)
            pano_json_set_double(d, pano_sample_values[i].name, change, 3);
        else
            pano_json_set_int(d, pano_sample_values[i].name, (int64_t)change);
    }
}

void pano_monitor_sample_fields(pano_json *ev, const pano_monitor_sample *s)
{
    pano_json_set_int(ev, "pid", s->pid);
    if (s->exe[0])
        pano_json_set_str(ev, "exe", s->exe);
    put_totals(ev, &s->totals, s->pss);
    put_delta(ev, &s->totals, &s->sent);
    if (s->cpu_util >= 0)
        pano_json_set_double(ev, "cpu_util", s->cpu_util, 4);
    pano_json_set_double(ev, "elapsed", s->elapsed, 6);
    pano_json_set_double(ev, "interval", s->interval, 3);
    pano_json_set_str(ev, "sample", s->kind);
    if (s->gpu.known) {
        pano_json_set_int(ev, "gpu_mem", (int64_t)s->gpu.memory);
        if (s->gpu.util >= 0)
            pano_json_set_int(ev, "gpu_util", s->gpu.util);
    }
    pano_json_set_int(ev, "monitor_pid", s->monitor_pid);
    put_monitor_cpu(ev, &s->self);
}

void pano_monitor_end_fields(pano_json *ev, const pano_monitor_end *e)
{
    int code = 0, sig = 0;
    if (WIFEXITED(e->wait_status))
        code = WEXITSTATUS(e->wait_status);
    else if (WIFSIGNALED(e->wait_status)) {
        sig = WTERMSIG(e->wait_status);
        code = 128 + sig;
    }
    pano_json_set_int(ev, "pid", e->pid);
    if (e->exe[0])
        pano_json_set_str(ev, "exe", e->exe);
    pano_json_set_int(ev, "exitcode", code);
    pano_json_set_int(ev, "signal", sig);
    if (sig)
        pano_json_set_bool(ev, "core_dumped", WCOREDUMP(e->wait_status));
    pano_json_set_int(ev, "status", code == 0 ? 0 : 1);
    pano_json_set_double(ev, "duration", e->duration, 6);
    pano_json_set_double(ev, "utime", e->utime, 3);
    pano_json_set_double(ev, "stime", e->stime, 3);
    pano_json_set_double(ev, "remote_cpu_time", e->utime + e->stime, 3);
    if (e->duration > 0)
        pano_json_set_double(ev, "avg_cpu", (e->utime + e->stime) / e->duration, 4);
    pano_json_set_int(ev, "maxrss", e->maxrss);
    pano_tree_totals final = e->final;
    final.has_pss = false; /* what was left at the end is nothing: its peaks */
    put_totals(pano_json_set_object(ev, "final"), &final, true);
    pano_json_set_int(ev, "samples", (int64_t)e->samples);
    if (e->gpu.known) {
        pano_json_set_int(ev, "gpu_mem_peak", (int64_t)e->gpu.memory);
        if (e->gpu.util >= 0)
            pano_json_set_int(ev, "gpu_util_peak", e->gpu.util);
    }
    put_monitor_cpu(ev, &e->self);
    pano_json_set_int(ev, "payload_events", (int64_t)e->payload_events);
    pano_json_set_int(ev, "payload_errors", (int64_t)e->payload_errors);
    if (e->metrics_socket) {
        pano_json *m = pano_json_set_object(ev, "metrics_socket");
        pano_json_set_int(m, "sent", (int64_t)e->metrics);
        pano_json_set_int(m, "above_level", (int64_t)e->metrics_above_level);
        pano_json_set_int(m, "bad_lines", (int64_t)e->metrics_bad_lines);
        pano_json_set_int(m, "refused", (int64_t)e->metrics_refused);
    }
    if (e->error)
        pano_json_set_str(ev, "error", e->error);
}

/* A device's identity, in pegasus-kickstart's names. */
static void put_device(pano_json *o, const pano_gpu_device *d)
{
    pano_json_set_int(o, "id", d->id);
    if (d->name[0])
        pano_json_set_str(o, "name", d->name);
    if (d->uuid[0])
        pano_json_set_str(o, "uuid", d->uuid);
}

void pano_monitor_gpu_fields(pano_json *ev, const pano_gpu_device *d, const char *driver)
{
    put_device(ev, d);
    if (driver && driver[0])
        pano_json_set_str(ev, "nvidia_driver_version", driver);
    pano_json_set_int(ev, "total_memory", (int64_t)d->total_memory);
    pano_json_set_int(ev, "mem_usage", (int64_t)d->mem_usage);
    if (d->gpu_utilization >= 0) {
        pano_json_set_int(ev, "gpu_utilization", d->gpu_utilization);
        pano_json_set_int(ev, "mem_utilization", d->mem_utilization);
    }
    if (d->power_usage >= 0)
        pano_json_set_int(ev, "power_usage", d->power_usage);
    pano_json *procs = pano_json_set_array(ev, "compute_procs");
    pano_json *samples = pano_json_set_array(ev, "proc_samples");
    for (size_t i = 0; i < d->nprocs; i++) {
        const pano_gpu_proc *p = &d->procs[i];
        pano_json *o = pano_json_object();
        pano_json_set_int(o, "pid", p->pid);
        pano_json_set_int(o, "mem_usage", (int64_t)p->memory);
        pano_json_append(procs, o);
        if (p->sm < 0)
            continue;
        o = pano_json_object();
        pano_json_set_int(o, "pid", p->pid);
        pano_json_set_int(o, "sm_util", p->sm);
        pano_json_set_int(o, "mem_util", p->mem);
        pano_json_append(samples, o);
    }
    pano_json_set_int(ev, "task_mem_usage", (int64_t)d->task_memory);
    if (d->task_sm >= 0)
        pano_json_set_int(ev, "task_sm_utilization", d->task_sm);
}

void pano_monitor_gpu_max_fields(pano_json *ev, const pano_gpu_device *max, size_t n)
{
    pano_json *devices = pano_json_set_array(ev, "devices");
    for (size_t i = 0; i < n; i++) {
        const pano_gpu_device *d = &max[i];
        pano_json *o = pano_json_object();
        put_device(o, d);
        pano_json_set_int(o, "max_mem_usage", (int64_t)d->mem_usage);
        if (d->gpu_utilization >= 0)
            pano_json_set_int(o, "max_gpu_utilization", d->gpu_utilization);
        if (d->power_usage >= 0)
            pano_json_set_int(o, "max_power_usage", d->power_usage);
        pano_json_set_int(o, "max_task_mem_usage", (int64_t)d->task_memory);
        if (d->task_sm >= 0)
            pano_json_set_int(o, "max_task_sm_utilization", d->task_sm);
        pano_json_append(devices, o);
    }
}
