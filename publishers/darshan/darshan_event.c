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

double pano_darshan_summary_end_time(const pano_darshan_summary *s)
{
    return (double)s->end_time + (double)s->end_nsec / 1e9;
}

/* ctime()'s layout, in UTC (darshan-parser's *_asci depend on TZ). */
static void write_asci_time(pano_json_writer *w, const char *key, int64_t seconds)
{
    time_t t = (time_t)seconds;
    struct tm tm;
    char buf[64];
    if (gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm) > 0) {
        pano_json_write_key(w, key);
        pano_json_write_str(w, buf);
    }
}

static void write_int(pano_json_writer *w, const char *key, int64_t value)
{
    pano_json_write_key(w, key);
    pano_json_write_int(w, value);
}

static void write_double(pano_json_writer *w, const char *key, double value, int decimals)
{
    pano_json_write_key(w, key);
    pano_json_write_double(w, value, decimals);
}

static void write_str(pano_json_writer *w, const char *key, const char *text)
{
    pano_json_write_key(w, key);
    pano_json_write_str(w, text);
}

static void write_total(pano_json_writer *w, const pano_darshan_total *t)
{
    pano_json_write_key(w, t->name);
    switch (t->type) {
    case PANO_DARSHAN_VALUE_INT:
        pano_json_write_int(w, t->v.i);
        break;
    case PANO_DARSHAN_VALUE_UINT:
        /* A record id: a string when it does not fit a JSON-safe int64. */
        if (t->v.u <= INT64_MAX)
            pano_json_write_int(w, (int64_t)t->v.u);
        else {
            char buf[32];
            snprintf(buf, sizeof buf, "%" PRIu64, t->v.u);
            pano_json_write_str(w, buf);
        }
        break;
    case PANO_DARSHAN_VALUE_FLOAT:
        pano_json_write_double(w, t->v.f, DECIMALS);
        break;
    }
}

static void write_perf(pano_json_writer *w, const pano_darshan_perf *p)
{
    write_int(w, "total_bytes", p->total_bytes);
    pano_json_write_key(w, "unique_files");
    pano_json_write_object_open(w);
    write_double(w, "slowest_rank_io_time", p->slowest_rank_io_time, DECIMALS);
    write_double(w, "slowest_rank_meta_only_time", p->slowest_rank_meta_only_time, DECIMALS);
    if (p->has_rw_only_time)
        write_double(w, "slowest_rank_rw_only_time", p->slowest_rank_rw_only_time, DECIMALS);
    write_int(w, "slowest_rank", p->slowest_rank);
    pano_json_write_object_close(w);
    pano_json_write_key(w, "shared_files");
    pano_json_write_object_open(w);
    write_double(w, "time_by_slowest", p->time_by_slowest, DECIMALS);
    for (size_t i = 0; i < p->n_legacy; i++)
        if (p->legacy[i].shared_files)
            write_double(w, p->legacy[i].name, p->legacy[i].value, DECIMALS);
    pano_json_write_object_close(w);
    if (p->has_agg_time)
        write_double(w, "agg_time_by_slowest", p->agg_time_by_slowest, DECIMALS);
    write_double(w, "agg_perf_by_slowest", p->agg_perf_by_slowest, DECIMALS);
    for (size_t i = 0; i < p->n_legacy; i++)
        if (!p->legacy[i].shared_files)
            write_double(w, p->legacy[i].name, p->legacy[i].value, DECIMALS);
}

static void write_module(pano_json_writer *w, const pano_darshan_module_summary *m)
{
    char key[128];
    snprintf(key, sizeof key, "%s_module_data", m->name);
    pano_json_write_key(w, key);
    pano_json_write_object_open(w);
    if (m->version)
        write_int(w, "module_version", m->version);
    if (m->compressed_bytes >= 0)
        write_int(w, "compressed_bytes", m->compressed_bytes);
    if (m->records >= 0)
        write_int(w, "records", m->records);
    if (m->partial) {
        pano_json_write_key(w, "partial");
        pano_json_write_bool(w, true);
    }
    if (m->note)
        write_str(w, "note", m->note);
    if (m->has_perf)
        write_perf(w, &m->perf);
    if (m->has_files) {
        pano_json_write_key(w, "files");
        pano_json_write_object_open(w);
        for (int c = 0; c < PANO_DARSHAN_FILES_CATEGORIES; c++) {
            pano_json_write_key(w, pano_darshan_file_category_names[c]);
            pano_json_write_object_open(w);
            write_int(w, "count", m->files[c].count);
            write_int(w, "bytes", m->files[c].bytes);
            write_int(w, "max_byte_offset", m->files[c].max_offset);
            pano_json_write_object_close(w);
        }
        pano_json_write_object_close(w);
    }
    if (m->n_totals) {
        pano_json_write_key(w, "totals");
        pano_json_write_object_open(w);
        for (size_t i = 0; i < m->n_totals; i++)
            write_total(w, &m->totals[i]);
        pano_json_write_object_close(w);
    }
    pano_json_write_object_close(w);
}

void pano_darshan_event_write(pano_buf *out, pano_json *envelope, const pano_darshan_summary *s,
                              const char *log_file)
{
    pano_json_set_double(envelope, "ts", pano_darshan_summary_end_time(s), 6);
    pano_json_writer *w = pano_json_writer_new(out);
    pano_json_write_object_open(w);
    pano_json_write_members(w, envelope);
    if (log_file)
        write_str(w, "log_file", log_file);
    write_str(w, "darshan_log_version", s->version ? s->version : "");
    if (s->compression)
        write_str(w, "compression_method", s->compression);
    if (s->exe)
        write_str(w, "exe", s->exe);
    write_int(w, "uid", s->uid);
    write_int(w, "jobid", s->jobid);
    write_int(w, "nprocs", s->nprocs);
    write_int(w, "start_time", s->start_time);
    write_asci_time(w, "start_time_asci", s->start_time);
    write_int(w, "end_time", s->end_time);
    write_asci_time(w, "end_time_asci", s->end_time);
    write_double(w, "run_time", s->run_time, 4);
    pano_json_write_key(w, "metadata");
    pano_json_write_object_open(w);
    for (size_t i = 0; i < s->n_metadata; i++)
        write_str(w, s->metadata[i].key, s->metadata[i].value);
    pano_json_write_object_close(w);
    for (size_t i = 0; i < s->n_modules; i++)
        write_module(w, &s->modules[i]);
    pano_json_write_object_close(w);
    pano_json_writer_free(w);
}
