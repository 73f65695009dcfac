/*
 * io.c - a workflow's (or a job's) Darshan and transfer events, summed by
 * Elasticsearch: how many logs and transfers, the bytes they moved, how
 * fast.
 */
#include "query.h"
#include "store_es.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The sums kept of each Darshan module: bytes read and written, as the
 * module's own counters name them. */
static const char *const darshan_modules[][3] = {
    {"POSIX", "POSIX_module_data.totals.POSIX_BYTES_READ",
     "POSIX_module_data.totals.POSIX_BYTES_WRITTEN"},
    {"MPI-IO", "MPI-IO_module_data.totals.MPIIO_BYTES_READ",
     "MPI-IO_module_data.totals.MPIIO_BYTES_WRITTEN"},
    {"STDIO", "STDIO_module_data.totals.STDIO_BYTES_READ",
     "STDIO_module_data.totals.STDIO_BYTES_WRITTEN"},
};

static void set_value(pano_json *o, const char *key, const pano_json *aggs, const char *name)
{
    /* over no event at all (no log, no transfer) a sum is unknown, not 0 */
    int64_t events = 0;
    pano_json_get_int(aggs, "doc_count", &events);
    double v = events > 0 ? store_value(aggs, name, NAN) : NAN;
    if (isfinite(v))
        pano_json_set_double(o, key, v, -1);
    else
        pano_json_set(o, key, pano_json_null());
}

/* A field of a stats aggregation ({"count", "min", "max", "avg", "sum"}). */
static void set_stat(pano_json *o, const char *key, const pano_json *stats, const char *field)
{
    double v;
    if (stats && pano_json_get_number(stats, field, &v) && isfinite(v))
        pano_json_set_double(o, key, v, -1);
    else
        pano_json_set(o, key, pano_json_null());
}

static int64_t count_of(const pano_json *aggs, const char *name)
{
    int64_t n = 0;
    const pano_json *a = store_agg(aggs, name);
    return a && pano_json_get_int(a, "doc_count", &n) ? n : 0;
}

pano_json *pano_query_io(pano_query *q, const pano_jobs *jobs, const pano_job *job, char *err,
                         size_t errlen)
{
    static const char *const fam[] = {"darshan", "transfer", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    if (job)
        store_add_published_by(filter, jobs, job);
    pano_json *aggs = pano_json_set_object(body, "aggs"), *d, *t, *f;
    pano_json_set(aggs, "darshan", store_filter_agg(store_term("event", "darshan.perf"), &d));
    for (size_t m = 0; m < sizeof darshan_modules / sizeof darshan_modules[0]; m++) {
        char name[64];
        snprintf(name, sizeof name, "%s_read", darshan_modules[m][0]);
        pano_json_set(d, name, store_metric("sum", darshan_modules[m][1]));
        snprintf(name, sizeof name, "%s_written", darshan_modules[m][0]);
        pano_json_set(d, name, store_metric("sum", darshan_modules[m][2]));
    }
    pano_json_set(d, "perf", store_metric("stats", "POSIX_module_data.agg_perf_by_slowest"));
    pano_json_set(d, "nprocs", store_metric("sum", "nprocs"));
    pano_json_set(d, "run_time", store_metric("sum", "run_time"));
    pano_json_set(aggs, "transfer",
                  store_filter_agg(store_term("event", "transfer.inv.local.single"), &t));
    pano_json_set(t, "bytes", store_metric("sum", "bytes_transferred"));
    pano_json_set(t, "time", store_metric("sum", "transfer_duration"));
    pano_json_set(t, "rate", store_metric("stats", "effective_bytes_per_second"));
    pano_json_set(t, "retries", store_metric("sum", "retries"));
    pano_json_set(t, "failed", store_filter_agg(store_term("status", "1"), &f));
    pano_json_set(aggs, "globus", store_filter_agg(store_term("event", "transfer.inv.go"), &f));
    pano_json_set(f, "bytes", store_metric("sum", "bytes_transferred"));
    pano_json_set(f, "files", store_metric("sum", "files_transferred"));

    pano_json *answer = store_search(q, jobs, fam, body, err, errlen);
    if (!answer)
        return NULL;
    const pano_json *a = pano_json_get(answer, "aggregations");
    pano_json *out = pano_json_object();
    const pano_json *da = store_agg(a, "darshan");
    pano_json *dj = pano_json_set_object(out, "darshan");
    pano_json_set_int(dj, "logs", count_of(a, "darshan"));
    pano_json *mods = pano_json_set_object(dj, "modules");
    for (size_t m = 0; m < sizeof darshan_modules / sizeof darshan_modules[0]; m++) {
        char name[64];
        pano_json *mo = pano_json_set_object(mods, darshan_modules[m][0]);
        snprintf(name, sizeof name, "%s_read", darshan_modules[m][0]);
        set_value(mo, "bytes_read", da, name);
        snprintf(name, sizeof name, "%s_written", darshan_modules[m][0]);
        set_value(mo, "bytes_written", da, name);
    }
    const pano_json *perf = store_agg(da, "perf");
    pano_json *pj = pano_json_set_object(dj, "posix_agg_perf_by_slowest"); /* MiB/s */
    set_stat(pj, "min", perf, "min");
    set_stat(pj, "mean", perf, "avg");
    set_stat(pj, "max", perf, "max");
    set_value(dj, "processes", da, "nprocs");
    set_value(dj, "run_time", da, "run_time");
    const pano_json *ta = store_agg(a, "transfer");
    pano_json *tj = pano_json_set_object(out, "transfers");
    pano_json_set_int(tj, "files", count_of(a, "transfer"));
    pano_json_set_int(tj, "failed", count_of(ta, "failed"));
    set_value(tj, "bytes", ta, "bytes");
    set_value(tj, "time", ta, "time");
    set_value(tj, "retries", ta, "retries");
    set_stat(tj, "mean_rate", store_agg(ta, "rate"), "avg");
    const pano_json *ga = store_agg(a, "globus");
    pano_json *gj = pano_json_set_object(out, "globus");
    pano_json_set_int(gj, "tasks", count_of(a, "globus"));
    set_value(gj, "bytes", ga, "bytes");
    set_value(gj, "files", ga, "files");
    pano_json_free(answer);
    return out;
}
