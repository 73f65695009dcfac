/*
 * darshan_summarize.c - a .darshan log read into a summary (see
 * darshan_summarize.h).
 */
#include "darshan_summarize.h"

#include "darshan_accum.h"
#include "darshan_log.h"
#include "mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Records of POSIX, MPI-IO or STDIO: decode, up-convert, accumulate. */
static int summarize_records(const pano_darshan_log *log, const pano_darshan_module_def *def,
                             const pano_darshan_record_version *v, const pano_darshan_buf *buf,
                             int64_t nprocs, pano_darshan_module_summary *m, char *err,
                             size_t errlen)
{
    size_t size = pano_darshan_record_size(v);
    pano_darshan_accum *acc = pano_darshan_accum_new(def, nprocs);
    pano_darshan_record rec;
    size_t off = 0;
    for (; off + size <= buf->len; off += size) {
        if (!pano_darshan_decode_record(log, def, v, buf->data + off, &rec))
            continue; /* dropped, as darshan-util drops it */
        if (pano_darshan_accum_add(acc, &rec, err, errlen) < 0) {
            pano_darshan_accum_free(acc);
            return -1;
        }
    }
    pano_darshan_accum_finish(acc, m);
    pano_darshan_accum_free(acc);
    if (off < buf->len)
        m->note = pano_asprintf("%zu trailing bytes after the last whole record ignored",
                                buf->len - off);
    return 0;
}

static int summarize_module(const pano_darshan_log *log, int id, int64_t nprocs,
                            pano_darshan_buf *buf, pano_darshan_summary *s, char *err,
                            size_t errlen)
{
    const char *known = pano_darshan_module_name(id);
    char unknown[32];
    snprintf(unknown, sizeof unknown, "MODULE_%d", id);
    pano_darshan_module_summary *m = pano_darshan_summary_add_module(s, known ? known : unknown);
    pano_darshan_region region = log->modules[id];
    m->version = log->module_versions[id];
    m->partial = (log->partial >> id) & 1;
    m->compressed_bytes = (int64_t)region.len;
    if (region.len == 0) {
        m->records = 0;
        return 0;
    }
    if (!known) {
        m->note = pano_strdup("unknown module id: region skipped");
        return 0;
    }
    if (id == PANO_DARSHAN_MOD_DXT_POSIX || id == PANO_DARSHAN_MOD_DXT_MPIIO) {
        m->note = pano_strdup("DXT trace region skipped (darshan-dxt-parser reads it)");
        return 0;
    }
    if (id == PANO_DARSHAN_MOD_HEATMAP) {
        m->note = pano_strdup("heatmap region skipped");
        return 0;
    }

    const pano_darshan_module_def *def = pano_darshan_module_def_of(id);
    const pano_darshan_record_version *v =
        def ? pano_darshan_module_version(def, m->version) : NULL;
    size_t fixed = def ? 0 : pano_darshan_fixed_record_size(id, m->version);
    if (def && !v) {
        m->note = pano_asprintf("unsupported %s module version %" PRIu32
                                " (this reader knows 1-%" PRIu32 "): region skipped",
                                m->name, m->version, def->versions[def->n_versions - 1].version);
        return 0;
    }
    if (!def && fixed == 0) {
        m->note = pano_strdup("records of this module are not summarized");
        return 0;
    }

    char what[64];
    snprintf(what, sizeof what, "%s region", m->name);
    if (pano_darshan_log_inflate(log, region, what, buf, err, errlen) < 0)
        return -1;
    if (def)
        return summarize_records(log, def, v, buf, nprocs, m, err, errlen);
    m->records = (int64_t)(buf->len / fixed);
    if (buf->len % fixed)
        m->note = pano_asprintf("%zu trailing bytes after the last whole record ignored",
                                buf->len % fixed);
    return 0;
}

int pano_darshan_summarize_log(const uint8_t *data, size_t size, pano_darshan_summary *s, char *err,
                               size_t errlen)
{
    memset(s, 0, sizeof *s);
    pano_darshan_log log;
    int rc = pano_darshan_log_open(&log, data, size, err, errlen);
    if (rc < 0)
        return rc;

    pano_darshan_buf buf = {0};
    pano_darshan_job job;
    if (pano_darshan_log_read_job(&log, &buf, &job, err, errlen) < 0) {
        pano_darshan_buf_free(&buf);
        return -1;
    }
    s->version = pano_strdup(log.version);
    s->compression = pano_strdup(pano_darshan_compression_name(log.compression));
    s->exe = job.exe;
    job.exe = NULL;
    s->uid = job.uid;
    s->jobid = job.jobid;
    s->nprocs = job.nprocs;
    s->start_time = job.start_sec;
    s->start_nsec = job.start_nsec;
    s->end_time = job.end_sec;
    s->end_nsec = job.end_nsec;
    s->run_time = pano_darshan_job_run_time(&log, &job);
    pano_darshan_summary_parse_metadata(s, job.metadata);

    for (int id = 0; id < PANO_DARSHAN_MAX_MODS && rc == 0; id++)
        if (log.modules[id].len || ((log.partial >> id) & 1))
            rc = summarize_module(&log, id, job.nprocs, &buf, s, err, errlen);
    pano_darshan_buf_free(&buf);
    if (rc < 0)
        pano_darshan_summary_free(s);
    return rc;
}
