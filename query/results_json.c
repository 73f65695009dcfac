/*
 * results_json.c - the JSON forms of the query results, for pano-query --json and
 * pano-explorer's API. Times are epoch seconds, durations seconds, memory
 * kB, I/O bytes; a value that is not known is null. Statistics carry
 * pegasus-statistics' names where pano computes the same figure.
 */
#include "query.h"

#include <math.h>

static void set_num(pano_json *o, const char *key, double v, int decimals)
{
    if (isfinite(v))
        pano_json_set_double(o, key, v, decimals);
    else
        pano_json_set(o, key, pano_json_null());
}

static void set_known(pano_json *o, const char *key, int64_t v)
{
    if (v >= 0)
        pano_json_set_int(o, key, v);
    else
        pano_json_set(o, key, pano_json_null());
}

pano_json *pano_job_to_json(const pano_job *j)
{
    pano_json *o = pano_json_object();
    pano_json_set_str(o, "id", j->id);
    pano_json_set_str(o, "dag_job_id", j->dag_job_id);
    pano_json_set_int(o, "attempt", j->attempt);
    pano_json_set_str(o, "transformation", j->transformation);
    pano_json_set_str(o, "site", j->site);
    pano_json_set_str(o, "host", j->host);
    pano_json_set_str(o, "exe", j->exe);
    set_known(o, "pid", j->pid);
    pano_json_set_str(o, "state", pano_job_state_name(j->state));
    bool ended = pano_job_state_ended(j->state);
    set_known(o, "exitcode", ended ? j->exitcode : -1);
    if (j->state == PANO_JOB_KILLED)
        pano_json_set_int(o, "signal", j->signal);
    set_num(o, "start", j->start > 0 ? j->start : NAN, 6);
    set_num(o, "end", ended && j->end > 0 ? j->end : NAN, 6);
    set_num(o, "duration", j->duration, 3);
    set_num(o, "last_seen", j->last_seen > 0 ? j->last_seen : NAN, 6);
    set_num(o, "interval", j->interval > 0 ? j->interval : NAN, 3);
    set_num(o, "cpu_time", j->cpu_time, 3);
    set_known(o, "maxrss", j->maxrss);
    set_known(o, "bytes_read", j->bytes_read);
    set_known(o, "bytes_written", j->bytes_written);
    pano_json_set_int(o, "samples", j->samples);
    if (!ended && j->from_monitor) {
        pano_json *now = pano_json_set_object(o, "now");
        pano_json_set_int(now, "rss", j->rss);
        pano_json_set_int(now, "vm", j->vm);
        pano_json_set_int(now, "procs", j->procs);
        pano_json_set_int(now, "threads", j->threads);
    }
    pano_json_set_int(o, "darshan_events", j->darshan_events);
    pano_json_set_int(o, "transfer_events", j->transfer_events);
    pano_json *seen = pano_json_set_array(o, "seen_by");
    if (j->from_monitor)
        pano_json_append(seen, pano_json_string("pano-monitor"));
    if (j->from_stampede)
        pano_json_append(seen, pano_json_string("pegasus-monitord"));
    return o;
}

static void put_workflow(pano_json *o, const pano_jobs *jobs)
{
    pano_json_set_str(o, "wf_uuid", jobs->wf_uuid);
    pano_json_set_str(o, "wf_label", jobs->wf_label ? jobs->wf_label : "");
    set_num(o, "now", jobs->now, 3);
    set_num(o, "first_event", jobs->first_event > 0 ? jobs->first_event : NAN, 6);
    set_num(o, "last_event", jobs->last_event > 0 ? jobs->last_event : NAN, 6);
    if (jobs->wf_ended)
        pano_json_set_int(o, "wf_status", jobs->wf_status);
}

pano_json *pano_jobs_to_json(const pano_jobs *jobs)
{
    pano_json *o = pano_json_object();
    put_workflow(o, jobs);
    pano_json *rows = pano_json_set_array(o, "jobs");
    for (size_t i = 0; i < jobs->n; i++)
        pano_json_append(rows, pano_job_to_json(&jobs->jobs[i]));
    return o;
}

pano_json *pano_workflow_to_json(const pano_jobs *jobs)
{
    pano_json *o = pano_json_object();
    put_workflow(o, jobs);
    pano_json_set_int(o, "runs", (int64_t)jobs->n);
    return o;
}

pano_json *pano_overview_to_json(const pano_overview *o)
{
    pano_json *out = pano_json_object();
    set_num(out, "from", o->from, 3);
    set_num(out, "to", o->to, 3);
    pano_json_set_int(out, "bins", (int64_t)o->bins);
    pano_json_set_int(out, "runs", (int64_t)o->runs);
    pano_json_set_int(out, "peak", (int64_t)o->peak);
    pano_json *alive = pano_json_set_object(out, "alive");
    for (size_t s = 0; s < PANO_JOB_STATES; s++) {
        size_t any = 0;
        for (size_t b = 0; b < o->bins && !any; b++)
            any = o->alive[b * PANO_JOB_STATES + s];
        if (!any)
            continue;
        pano_json *counts = pano_json_array();
        for (size_t b = 0; b < o->bins; b++)
            pano_json_append(counts, pano_json_int((int64_t)o->alive[b * PANO_JOB_STATES + s]));
        pano_json_set(alive, pano_job_state_name((pano_job_state)s), counts);
    }
    return out;
}

static pano_json *summary_json(const pano_summary *s, int decimals)
{
    pano_json *o = pano_json_object();
    pano_json_set_int(o, "count", (int64_t)s->n);
    set_num(o, "min", s->min, decimals);
    set_num(o, "median", s->median, decimals);
    set_num(o, "mean", s->mean, decimals);
    set_num(o, "p95", s->p95, decimals);
    set_num(o, "max", s->max, decimals);
    set_num(o, "total", s->n ? s->total : NAN, decimals);
    return o;
}

static pano_json *groups_json(const pano_group_stats *g, size_t n, const char *key)
{
    pano_json *list = pano_json_array();
    for (size_t i = 0; i < n; i++) {
        pano_json *o = pano_json_object();
        pano_json_set_str(o, key, g[i].name);
        pano_json_set_int(o, "count", (int64_t)g[i].runs);
        pano_json_set_int(o, "succeeded", (int64_t)g[i].succeeded);
        pano_json_set_int(o, "failed", (int64_t)g[i].failed);
        pano_json_set_int(o, "running", (int64_t)g[i].running);
        pano_json_set(o, "duration", summary_json(&g[i].duration, 3));
        pano_json_set(o, "cpu_time", summary_json(&g[i].cpu_time, 3));
        pano_json_set(o, "maxrss", summary_json(&g[i].maxrss, 0));
        pano_json_set(o, "bytes_read", summary_json(&g[i].bytes_read, 0));
        pano_json_set(o, "bytes_written", summary_json(&g[i].bytes_written, 0));
        pano_json_append(list, o);
    }
    return list;
}

static pano_json *counts_json(const pano_pegasus_counts *c)
{
    pano_json *o = pano_json_object();
    pano_json_set_int(o, "total", (int64_t)c->total);
    pano_json_set_int(o, "succeeded", (int64_t)c->succeeded);
    pano_json_set_int(o, "failed", (int64_t)c->failed);
    pano_json_set_int(o, "incomplete", (int64_t)c->incomplete);
    pano_json_set_int(o, "retries", (int64_t)c->retries);
    pano_json_set_int(o, "total_with_retries", (int64_t)c->total_with_retries);
    return o;
}

pano_json *pano_stats_to_json(const pano_jobs *jobs, const pano_stats *s, const pano_pegasus *p)
{
    pano_json *o = pano_json_object();
    put_workflow(o, jobs);
    bool pegasus = p && p->present;
    /* pegasus-statistics' rows when monitord reported the workflow; else
     * the same rows over the runs pano-monitor saw */
    size_t succeeded = s->jobs_by_state[PANO_JOB_SUCCEEDED];
    size_t failed = s->jobs_by_state[PANO_JOB_FAILED] + s->jobs_by_state[PANO_JOB_KILLED];
    pano_pegasus_counts runs = {.total = s->jobs, .succeeded = succeeded, .failed = failed,
                                .incomplete = s->jobs - succeeded - failed, .retries = s->retries,
                                .total_with_retries = s->runs};
    pano_json *jo = counts_json(pegasus ? &p->jobs : &runs);
    pano_json_set(o, "jobs", jo);
    /* what pano adds: the state of every run it knows */
    pano_json *by = pano_json_set_object(jo, "by_state");
    for (int i = 0; i < PANO_JOB_STATES; i++)
        pano_json_set_int(by, pano_job_state_name((pano_job_state)i), (int64_t)s->jobs_by_state[i]);
    if (pegasus) {
        pano_json_set(o, "tasks", counts_json(&p->tasks));
        pano_json_set(o, "sub_workflows", counts_json(&p->sub_workflows));
        set_num(o, "workflow_wall_time", p->workflow_wall_time, 3);
        set_num(o, "workflow_cumulative_job_wall_time", p->cumulative_job_wall_time, 3);
        set_num(o, "cumulative_job_walltime_from_submit_side",
                p->cumulative_job_walltime_from_submit_side, 3);
        set_num(o, "workflow_cumulative_badput_time", p->cumulative_badput_time, 3);
        set_num(o, "cumulative_job_badput_walltime_from_submit_side",
                p->cumulative_badput_walltime_from_submit_side, 3);
        pano_json_set_int(o, "workflow_retries", (int64_t)p->workflow_retries);
        pano_json *st = pano_json_set_object(o, "status");
        const pano_pegasus_status *ps = &p->status;
        size_t v[] = {ps->unready, ps->ready, ps->pre, ps->queued, ps->post, ps->succeeded,
                      ps->failed, ps->total};
        const char *k[] = {"unready", "ready", "pre", "queued", "post", "succeeded", "failed",
                           "total"};
        for (size_t i = 0; i < 8; i++)
            pano_json_set_int(st, k[i], (int64_t)v[i]);
        set_num(st, "percent_done", ps->percent_done, 2);
        pano_json_set_str(st, "state", ps->state);
        pano_json *rows = pano_json_set_array(o, "breakdown");
        for (size_t i = 0; i < p->n_breakdown; i++) {
            const pano_pegasus_breakdown *b = &p->breakdown[i];
            pano_json *r = pano_json_object();
            pano_json_set_str(r, "transformation", b->transformation);
            pano_json_set_str(r, "type", b->succeeded ? "successful" : "failed");
            pano_json_set_int(r, "count", (int64_t)b->count);
            pano_json_set(r, "runtime", summary_json(&b->runtime, 3));
            pano_json_set(r, "memory_mib", summary_json(&b->memory, 3));
            pano_json_set(r, "avg_cpu_percent", summary_json(&b->avg_cpu, 2));
            pano_json_append(rows, r);
        }
    } else {
        set_num(o, "workflow_wall_time", s->wall_time, 3);
        set_num(o, "workflow_cumulative_job_wall_time", s->cumulative_job_wall_time, 3);
        set_num(o, "workflow_cumulative_badput_time", s->cumulative_badput, 3);
    }
    set_num(o, "wall_time_so_far", s->wall_time, 3);
    set_num(o, "running_job_wall_time_so_far", s->cumulative_job_wall_time_running, 3);
    pano_json_set(o, "transformations", groups_json(s->transformations, s->n_transformations,
                                                    "transformation"));
    pano_json_set(o, "hosts", groups_json(s->hosts, s->n_hosts, "host"));
    return o;
}

pano_json *pano_anomalies_to_json(const pano_anomaly *a, size_t n)
{
    pano_json *list = pano_json_array();
    for (size_t i = 0; i < n; i++) {
        pano_json *o = pano_json_object();
        pano_json_set_str(o, "kind", pano_anomaly_kind_name(a[i].kind));
        pano_json_set_str(o, "job", a[i].job->id);
        pano_json_set_str(o, "transformation", a[i].job->transformation);
        pano_json_set_str(o, "host", a[i].job->host);
        pano_json_set_str(o, "state", pano_job_state_name(a[i].job->state));
        pano_json_set_str(o, "metric", a[i].metric);
        set_num(o, "value", a[i].value, 3);
        if (a[i].kind == PANO_ANOMALY_FAILED) {
            if (a[i].job->state == PANO_JOB_KILLED)
                pano_json_set_int(o, "signal", a[i].job->signal);
            set_num(o, "duration", a[i].job->duration, 3);
            set_num(o, "cpu_time", a[i].job->cpu_time, 3);
            set_known(o, "maxrss", a[i].job->maxrss);
            set_num(o, "last_seen", a[i].job->last_seen, 6);
        } else {
            set_num(o, "median", a[i].median, 3);
            if (a[i].kind == PANO_ANOMALY_OUTLIER)
                set_num(o, "mad", a[i].mad, 3);
            set_num(o, "score", a[i].score, 3);
            set_num(o, "threshold", a[i].threshold, 3);
            pano_json_set_int(o, "peers", (int64_t)a[i].peers);
        }
        pano_json_append(list, o);
    }
    return list;
}

pano_json *pano_series_to_json(const pano_series *s)
{
    pano_json *o = pano_json_object();
    if (s->metric) {
        pano_json_set_str(o, "metric", s->metric->name);
        pano_json_set_str(o, "unit", s->metric->unit);
        pano_json_set_str(o, "kind", s->metric->rate ? "rate" : "gauge");
    }
    set_num(o, "step", s->step, 3);
    pano_json_set_int(o, "samples", s->samples);
    pano_json *pts = pano_json_set_array(o, "points");
    for (size_t i = 0; i < s->n; i++) {
        pano_json *p = pano_json_object();
        pano_json_set(p, "t", pano_json_double(s->points[i].t, 3));
        pano_json_set(p, "value", pano_json_double(s->points[i].value, 6));
        if (s->metric && !s->metric->rate)
            pano_json_set(p, "peak", pano_json_double(s->points[i].peak, 6));
        pano_json_append(pts, p);
    }
    return o;
}

pano_json *pano_workflows_to_json(const pano_workflow *w, size_t n)
{
    pano_json *list = pano_json_array();
    for (size_t i = 0; i < n; i++) {
        pano_json *o = pano_json_object();
        pano_json_set_str(o, "wf_uuid", w[i].wf_uuid);
        pano_json_set_str(o, "wf_label", w[i].wf_label);
        pano_json_set_str(o, "state", w[i].state);
        set_num(o, "first_event", w[i].first_event, 6);
        set_num(o, "last_event", w[i].last_event, 6);
        const char *names[] = {"runs", "running", "succeeded", "failed"};
        size_t counts[] = {w[i].runs, w[i].running, w[i].succeeded, w[i].failed};
        for (size_t c = 0; c < 4; c++)
            if (w[i].runs_known)
                pano_json_set_int(o, names[c], (int64_t)counts[c]);
            else
                pano_json_set(o, names[c], pano_json_null());
        pano_json_append(list, o);
    }
    return list;
}
