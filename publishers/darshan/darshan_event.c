/*
 * darshan_event.c - summary to darshan.perf event (see darshan_event.h).
 */
#include "darshan_event.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

/* Counters and --perf values are written with darshan-parser's precision
 * (%lf: 6 decimals), which is also the cheapest exact-enough form. */
#define DECIMALS 6

double darshan_summary_end_time(const darshan_summary *s)
{
    return (double)s->end_time + (double)s->end_nsec / 1e9;
}

/* ctime()'s layout, in UTC (darshan-parser's *_asci depend on TZ). */
static void set_asci_time(pano_json *ev, const char *key, int64_t seconds)
{
    time_t t = (time_t)seconds;
    struct tm tm;
    char buf[64];
    if (gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm) > 0)
        pano_json_set_str(ev, key, buf);
}

/* Totals have unique names (a module's counters), so they are appended
 * without pano_json_set's search: a module has up to 86 of them. */
static void add_total(pano_json *totals, const darshan_total *t)
{
    pano_json *value = NULL;
    switch (t->type) {
    case DARSHAN_VALUE_INT:
        value = pano_json_int(t->v.i);
        break;
    case DARSHAN_VALUE_UINT:
        /* A record id: a string when it does not fit a JSON-safe int64. */
        if (t->v.u <= INT64_MAX)
            value = pano_json_int((int64_t)t->v.u);
        else {
            char buf[32];
            snprintf(buf, sizeof buf, "%" PRIu64, t->v.u);
            value = pano_json_string(buf);
        }
        break;
    case DARSHAN_VALUE_FLOAT:
        value = pano_json_double(t->v.f, DECIMALS);
        break;
    }
    pano_json_add(totals, t->name, value);
}

static void set_perf(pano_json *md, const darshan_perf *p)
{
    pano_json_set_int(md, "total_bytes", p->total_bytes);
    pano_json *unique = pano_json_set_object(md, "unique_files");
    pano_json_set_double(unique, "slowest_rank_io_time", p->slowest_rank_io_time, DECIMALS);
    pano_json_set_double(unique, "slowest_rank_meta_only_time", p->slowest_rank_meta_only_time,
                         DECIMALS);
    if (p->has_rw_only_time)
        pano_json_set_double(unique, "slowest_rank_rw_only_time", p->slowest_rank_rw_only_time,
                             DECIMALS);
    pano_json_set_int(unique, "slowest_rank", p->slowest_rank);
    pano_json *shared = pano_json_set_object(md, "shared_files");
    pano_json_set_double(shared, "time_by_slowest", p->time_by_slowest, DECIMALS);
    for (size_t i = 0; i < p->n_legacy; i++)
        if (p->legacy[i].shared_files)
            pano_json_set_double(shared, p->legacy[i].name, p->legacy[i].value, DECIMALS);
    if (p->has_agg_time)
        pano_json_set_double(md, "agg_time_by_slowest", p->agg_time_by_slowest, DECIMALS);
    pano_json_set_double(md, "agg_perf_by_slowest", p->agg_perf_by_slowest, DECIMALS);
    for (size_t i = 0; i < p->n_legacy; i++)
        if (!p->legacy[i].shared_files)
            pano_json_set_double(md, p->legacy[i].name, p->legacy[i].value, DECIMALS);
}

static void set_module(pano_json *ev, const darshan_module_summary *m)
{
    char key[128];
    snprintf(key, sizeof key, "%s_module_data", m->name);
    pano_json *md = pano_json_set_object(ev, key);
    if (m->version)
        pano_json_set_int(md, "module_version", m->version);
    if (m->compressed_bytes >= 0)
        pano_json_set_int(md, "compressed_bytes", m->compressed_bytes);
    if (m->records >= 0)
        pano_json_set_int(md, "records", m->records);
    if (m->partial)
        pano_json_set_bool(md, "partial", true);
    if (m->note)
        pano_json_set_str(md, "note", m->note);
    if (m->has_perf)
        set_perf(md, &m->perf);
    if (m->has_files) {
        pano_json *files = pano_json_set_object(md, "files");
        for (int c = 0; c < DARSHAN_FILES_CATEGORIES; c++) {
            pano_json *cat = pano_json_set_object(files, darshan_file_category_names[c]);
            pano_json_set_int(cat, "count", m->files[c].count);
            pano_json_set_int(cat, "bytes", m->files[c].bytes);
            pano_json_set_int(cat, "max_byte_offset", m->files[c].max_offset);
        }
    }
    if (m->n_totals) {
        pano_json *totals = pano_json_set_object(md, "totals");
        for (size_t i = 0; i < m->n_totals; i++)
            add_total(totals, &m->totals[i]);
    }
}

void darshan_event_fill(pano_json *ev, const darshan_summary *s, const char *log_file)
{
    pano_json_set_double(ev, "ts", darshan_summary_end_time(s), 6);
    if (log_file)
        pano_json_set_str(ev, "log_file", log_file);
    pano_json_set_str(ev, "darshan_log_version", s->version ? s->version : "");
    if (s->compression)
        pano_json_set_str(ev, "compression_method", s->compression);
    if (s->exe)
        pano_json_set_str(ev, "exe", s->exe);
    pano_json_set_int(ev, "uid", s->uid);
    pano_json_set_int(ev, "jobid", s->jobid);
    pano_json_set_int(ev, "nprocs", s->nprocs);
    pano_json_set_int(ev, "start_time", s->start_time);
    set_asci_time(ev, "start_time_asci", s->start_time);
    pano_json_set_int(ev, "end_time", s->end_time);
    set_asci_time(ev, "end_time_asci", s->end_time);
    pano_json_set_double(ev, "run_time", s->run_time, 4);
    pano_json *metadata = pano_json_set_object(ev, "metadata");
    for (size_t i = 0; i < s->n_metadata; i++)
        pano_json_set_str(metadata, s->metadata[i].key, s->metadata[i].value);
    for (size_t i = 0; i < s->n_modules; i++)
        set_module(ev, &s->modules[i]);
}
