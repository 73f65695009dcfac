/*
 * darshan_log.c - header, regions, decompression, job record and module
 * records of a .darshan log (see darshan_log.h).
 */
#include "darshan_log.h"

#include "mem.h"

#include <bzlib.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define LOG_MAGIC UINT64_C(6567223)

/* Header sizes: the 3.41 struct has 64 module slots, older ones 16. */
#define HEADER_SIZE_3_41 1328
#define HEADER_SIZE_OLD 360
#define OLD_MAX_MODS 16

/* The job record region holds at most this much (DARSHAN_JOB_RECORD_SIZE);
 * allow more before calling it damaged. */
#define JOB_REGION_MAX (64 * 1024)
/* Decompressed size limit of a region, relative to its compressed size. The
 * regions pano-darshan inflates expand at most about 40:1 in real logs (the
 * public fixtures); zlib could reach 1032:1 and bzip2 far more, which only
 * a crafted log does. Output buffers grow with the data that actually comes
 * out, so memory follows the real size, up to this bound. */
#define INFLATE_RATIO 512
#define INFLATE_MIN_LIMIT (1 << 20)
#define INFLATE_MAX_LIMIT ((size_t)1 << 32)

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- byte order ----------------------------------------------------------- */

static uint64_t get_u64(const uint8_t *p, bool swap)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return swap ? __builtin_bswap64(v) : v;
}

static uint32_t get_u32(const uint8_t *p, bool swap)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return swap ? __builtin_bswap32(v) : v;
}

static double get_double(const uint8_t *p, bool swap)
{
    uint64_t bits = get_u64(p, swap);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* ---- header --------------------------------------------------------------- */

const char *pano_darshan_compression_name(pano_darshan_compression comp)
{
    switch (comp) {
    case PANO_DARSHAN_COMP_ZLIB:
        return "ZLIB";
    case PANO_DARSHAN_COMP_BZIP2:
        return "BZIP2";
    case PANO_DARSHAN_COMP_NONE:
        return "NONE";
    }
    return "UNKNOWN";
}

/* The version string: 8 bytes, NUL-padded. */
static int parse_version(pano_darshan_log *log, char *err, size_t errlen)
{
    static const struct {
        const char *text;
        int minor;
    } known[] = {{"3.00", 0}, {"3.10", 10}, {"3.20", 20}, {"3.21", 21}, {"3.41", 41}};

    size_t n = 0;
    while (n < 8 && log->data[n] != '\0')
        n++;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = log->data[i];
        if (c < 0x20 || c > 0x7e)
            return fail(err, errlen, "not a Darshan log (no version string at offset 0)");
    }
    memcpy(log->version, log->data, n);
    log->version[n] = '\0';
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(log->version, known[i].text) == 0) {
            log->format_minor = known[i].minor;
            return 0;
        }
    }
    if (n == 0)
        return fail(err, errlen, "not a Darshan log (empty version string)");
    fail(err, errlen,
         "unsupported log format version '%s' (this reader knows 3.00-3.41; use --parser)",
         log->version);
    return PANO_DARSHAN_ERR_VERSION;
}

static int check_region(const pano_darshan_log *log, pano_darshan_region r, const char *what,
                        char *err, size_t errlen)
{
    if (r.len == 0)
        return 0;
    if (r.off < log->header_size || r.off > log->size || r.len > log->size - r.off)
        return fail(err, errlen,
                    "%s at offset %" PRIu64 " with length %" PRIu64
                    " lies outside the file (%zu bytes)",
                    what, r.off, r.len, log->size);
    return 0;
}

int pano_darshan_log_open(pano_darshan_log *log, const uint8_t *data, size_t size, char *err,
                          size_t errlen)
{
    memset(log, 0, sizeof *log);
    log->data = data;
    log->size = size;
    if (size < 16)
        return fail(err, errlen, "truncated header: the file has %zu bytes", size);
    /* The magic number first: it says whether this is a Darshan log at all
     * (and its byte order); the version then says whether it is one we know. */
    uint64_t magic = get_u64(data + 8, false);
    if (magic == LOG_MAGIC)
        log->swap = false;
    else if (__builtin_bswap64(magic) == LOG_MAGIC)
        log->swap = true;
    else
        return fail(err, errlen, "not a Darshan log (bad magic number 0x%" PRIx64 " at offset 8)",
                    magic);
    int rc = parse_version(log, err, errlen);
    if (rc < 0)
        return rc;

    bool current = log->format_minor >= 41;
    log->header_size = current ? HEADER_SIZE_3_41 : HEADER_SIZE_OLD;
    if (size < log->header_size)
        return fail(err, errlen, "truncated header: %zu of %zu bytes", size, log->header_size);

    uint8_t comp = data[16];
    if (comp > PANO_DARSHAN_COMP_NONE)
        return fail(err, errlen, "unknown compression type %u at offset 16", comp);
    log->compression = (pano_darshan_compression)comp;

    uint64_t partial_slots;
    size_t maps, versions, slots;
    if (current) {
        partial_slots = get_u64(data + 24, log->swap);
        log->names.off = get_u64(data + 32, log->swap);
        log->names.len = get_u64(data + 40, log->swap);
        maps = 48;
        versions = 48 + 16 * PANO_DARSHAN_MAX_MODS;
        slots = PANO_DARSHAN_MAX_MODS;
    } else {
        partial_slots = get_u32(data + 20, log->swap);
        log->names.off = get_u64(data + 24, log->swap);
        log->names.len = get_u64(data + 32, log->swap);
        maps = 40;
        versions = 40 + 16 * OLD_MAX_MODS;
        slots = OLD_MAX_MODS;
    }
    if (check_region(log, log->names, "name-record region", err, errlen) < 0)
        return -1;

    uint64_t first_module = 0;
    for (size_t slot = 0; slot < slots; slot++) {
        int id = pano_darshan_module_id_of_slot(log->format_minor, (int)slot);
        pano_darshan_region r = {get_u64(data + maps + 16 * slot, log->swap),
                            get_u64(data + maps + 16 * slot + 8, log->swap)};
        uint32_t version = get_u32(data + versions + 4 * slot, log->swap);
        bool partial = (partial_slots >> slot) & 1;
        if (id >= PANO_DARSHAN_MAX_MODS) {
            if (r.len || partial)
                return fail(err, errlen, "module slot %zu has data but no module id", slot);
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "module %d region", id);
        if (check_region(log, r, what, err, errlen) < 0)
            return -1;
        log->modules[id] = r;
        log->module_versions[id] = version;
        if (partial)
            log->partial |= UINT64_C(1) << id;
        if (r.len && (first_module == 0 || r.off < first_module))
            first_module = r.off;
    }

    /* The job region has no map entry: it runs from the header to the name
     * records (or the first module, or the end of the file). */
    uint64_t job_end = log->names.off ? log->names.off : first_module ? first_module : size;
    if (job_end < log->header_size || job_end > size)
        return fail(err, errlen, "job region ends at offset %" PRIu64 ", outside the file",
                    job_end);
    log->job.off = log->header_size;
    log->job.len = job_end - log->header_size;
    if (log->job.len == 0)
        return fail(err, errlen, "truncated log: no job region after the header");
    return 0;
}

/* ---- decompression -------------------------------------------------------- */

void pano_darshan_buf_free(pano_darshan_buf *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

/* Make room for more output, up to limit. False when the limit is reached. */
static bool buf_grow(pano_darshan_buf *buf, size_t limit, size_t hint)
{
    if (buf->cap >= limit)
        return false;
    size_t cap = buf->cap ? buf->cap * 2 : hint;
    if (cap < 4096)
        cap = 4096;
    if (cap > limit)
        cap = limit;
    buf->data = pano_realloc(buf->data, cap);
    buf->cap = cap;
    return true;
}

static size_t inflate_limit(uint64_t compressed)
{
    if (compressed > INFLATE_MAX_LIMIT / INFLATE_RATIO)
        return INFLATE_MAX_LIMIT;
    size_t limit = (size_t)compressed * INFLATE_RATIO;
    return limit < INFLATE_MIN_LIMIT ? INFLATE_MIN_LIMIT : limit;
}

/* zlib and bzip2 behind one decompression loop. */
typedef union {
    z_stream z;
    bz_stream bz;
} codec_state;

typedef enum { CODEC_MORE, CODEC_STREAM_END, CODEC_CORRUPT } codec_status;

typedef struct {
    const char *name;
    bool (*init)(codec_state *s);
    void (*end)(codec_state *s);
    /* Decompress from in[0..*in_len) into out[0..*out_len); the two lengths
     * come back as what was consumed and produced. A corrupt stream gets a
     * reason in detail. */
    codec_status (*step)(codec_state *s, const uint8_t *in, unsigned *in_len, uint8_t *out,
                         unsigned *out_len, char *detail, size_t detail_len);
} codec;

static bool zlib_init(codec_state *s)
{
    memset(&s->z, 0, sizeof s->z);
    return inflateInit(&s->z) == Z_OK;
}

static void zlib_end(codec_state *s) { inflateEnd(&s->z); }

static codec_status zlib_step(codec_state *s, const uint8_t *in, unsigned *in_len, uint8_t *out,
                              unsigned *out_len, char *detail, size_t detail_len)
{
    s->z.next_in = (Bytef *)in;
    s->z.avail_in = *in_len;
    s->z.next_out = out;
    s->z.avail_out = *out_len;
    int z = inflate(&s->z, Z_NO_FLUSH);
    *in_len -= s->z.avail_in;
    *out_len -= s->z.avail_out;
    if (z == Z_STREAM_END)
        return CODEC_STREAM_END;
    if (z == Z_OK || z == Z_BUF_ERROR) /* Z_BUF_ERROR: no progress possible, not fatal */
        return CODEC_MORE;
    snprintf(detail, detail_len, "%s", s->z.msg ? s->z.msg : "error");
    return CODEC_CORRUPT;
}

static bool bzip2_init(codec_state *s)
{
    memset(&s->bz, 0, sizeof s->bz);
    return BZ2_bzDecompressInit(&s->bz, 0, 0) == BZ_OK;
}

static void bzip2_end(codec_state *s) { BZ2_bzDecompressEnd(&s->bz); }

static codec_status bzip2_step(codec_state *s, const uint8_t *in, unsigned *in_len, uint8_t *out,
                               unsigned *out_len, char *detail, size_t detail_len)
{
    s->bz.next_in = (char *)in;
    s->bz.avail_in = *in_len;
    s->bz.next_out = (char *)out;
    s->bz.avail_out = *out_len;
    int b = BZ2_bzDecompress(&s->bz);
    *in_len -= s->bz.avail_in;
    *out_len -= s->bz.avail_out;
    if (b == BZ_STREAM_END)
        return CODEC_STREAM_END;
    if (b == BZ_OK)
        return CODEC_MORE;
    snprintf(detail, detail_len, "error %d", b);
    return CODEC_CORRUPT;
}

static const codec zlib_codec = {"zlib", zlib_init, zlib_end, zlib_step};
static const codec bzip2_codec = {"bzip2", bzip2_init, bzip2_end, bzip2_step};

/* Compressed streams, several of them back to back (one per rank, for
 * example), into out, at most limit bytes. */
static int inflate_streams(const codec *c, const uint8_t *in, size_t in_len, pano_darshan_buf *out,
                           size_t limit, const char *what, uint64_t off, char *err,
                           size_t errlen)
{
    codec_state s;
    if (!c->init(&s))
        return fail(err, errlen, "cannot initialise %s", c->name);
    size_t hint = in_len * 4;
    int rc = 0;
    for (;;) {
        if (out->len == out->cap && !buf_grow(out, limit, hint)) {
            rc = fail(err, errlen, "%s at offset %" PRIu64 " inflates to more than %zu bytes",
                      what, off, limit);
            break;
        }
        unsigned used = in_len < UINT_MAX ? (unsigned)in_len : UINT_MAX;
        size_t room = out->cap - out->len;
        unsigned made = room < UINT_MAX ? (unsigned)room : UINT_MAX;
        char detail[128] = "";
        codec_status st = c->step(&s, in, &used, out->data + out->len, &made, detail, sizeof detail);
        in += used;
        in_len -= used;
        out->len += made;
        if (st == CODEC_CORRUPT) {
            rc = fail(err, errlen, "corrupt %s data in the %s at offset %" PRIu64 " (%s)",
                      c->name, what, off, detail);
            break;
        }
        if (st == CODEC_STREAM_END) {
            if (in_len == 0)
                break;
            c->end(&s); /* another stream follows: start over */
            if (!c->init(&s))
                return fail(err, errlen, "cannot initialise %s", c->name);
            continue;
        }
        /* Stuck with room to write: the input ended inside a stream. */
        if (used == 0 && made == 0 && out->len < out->cap) {
            rc = fail(err, errlen, "truncated compressed data in the %s at offset %" PRIu64, what,
                      off);
            break;
        }
    }
    c->end(&s);
    return rc;
}

int pano_darshan_log_inflate(const pano_darshan_log *log, pano_darshan_region region,
                             const char *what, pano_darshan_buf *out, char *err, size_t errlen)
{
    out->len = 0;
    if (region.len == 0)
        return 0;
    const uint8_t *in = log->data + region.off;
    size_t in_len = (size_t)region.len;
    switch (log->compression) {
    case PANO_DARSHAN_COMP_ZLIB:
        return inflate_streams(&zlib_codec, in, in_len, out, inflate_limit(region.len), what,
                               region.off, err, errlen);
    case PANO_DARSHAN_COMP_BZIP2:
        return inflate_streams(&bzip2_codec, in, in_len, out, inflate_limit(region.len), what,
                               region.off, err, errlen);
    case PANO_DARSHAN_COMP_NONE:
        while (out->cap < in_len)
            buf_grow(out, in_len, in_len);
        memcpy(out->data, in, in_len);
        out->len = in_len;
        return 0;
    }
    return fail(err, errlen, "unknown compression");
}

/* ---- job region ----------------------------------------------------------- */

int pano_darshan_log_read_job(const pano_darshan_log *log, pano_darshan_buf *scratch,
                              pano_darshan_job *job, char *err, size_t errlen)
{
    memset(job, 0, sizeof *job);
    if (pano_darshan_log_inflate(log, log->job, "job region", scratch, err, errlen) < 0)
        return -1;
    if (scratch->len > JOB_REGION_MAX)
        return fail(err, errlen, "job region inflates to %zu bytes (at most %d expected)",
                    scratch->len, JOB_REGION_MAX);

    const bool current = log->format_minor >= 41;
    const size_t fields = current ? 7 : 5, metadata_len = 1024;
    const size_t record = fields * 8 + metadata_len;
    if (scratch->len < record)
        return fail(err, errlen, "truncated job region at offset %" PRIu64
                    ": %zu bytes, the job record needs %zu",
                    log->job.off, scratch->len, record);
    const uint8_t *p = scratch->data;
    bool swap = log->swap;
    job->uid = (int64_t)get_u64(p, swap);
    if (current) {
        job->start_sec = (int64_t)get_u64(p + 8, swap);
        job->start_nsec = (int64_t)get_u64(p + 16, swap);
        job->end_sec = (int64_t)get_u64(p + 24, swap);
        job->end_nsec = (int64_t)get_u64(p + 32, swap);
        job->nprocs = (int64_t)get_u64(p + 40, swap);
        job->jobid = (int64_t)get_u64(p + 48, swap);
    } else {
        job->start_sec = (int64_t)get_u64(p + 8, swap);
        job->end_sec = (int64_t)get_u64(p + 16, swap);
        job->nprocs = (int64_t)get_u64(p + 24, swap);
        job->jobid = (int64_t)get_u64(p + 32, swap);
    }
    memcpy(job->metadata, p + fields * 8, metadata_len);
    job->metadata[metadata_len] = '\0';

    /* The command line follows, up to the first newline (then the mounts). */
    const char *text = (const char *)p + record;
    size_t left = scratch->len - record, n = 0;
    while (n < left && text[n] != '\0' && text[n] != '\n')
        n++;
    job->exe = pano_strndup(text, n);
    return 0;
}

double pano_darshan_job_run_time(const pano_darshan_log *log, const pano_darshan_job *job)
{
    if (log->format_minor >= 41)
        return ((double)job->end_sec + (double)job->end_nsec / 1e9) -
               ((double)job->start_sec + (double)job->start_nsec / 1e9);
    /* in int64 like darshan-util, wrapping on absurd values */
    return (double)(int64_t)((uint64_t)job->end_sec - (uint64_t)job->start_sec + 1);
}

/* ---- module records ------------------------------------------------------- */

bool pano_darshan_decode_record(const pano_darshan_log *log, const pano_darshan_module_def *def,
                                const pano_darshan_record_version *v, const uint8_t *p,
                                pano_darshan_record *rec)
{
    bool swap = log->swap;
    rec->id = get_u64(p, swap);
    rec->rank = (int64_t)get_u64(p + 8, swap);
    p += PANO_DARSHAN_BASE_RECORD_SIZE;
    for (unsigned i = 0; i < v->n_ints; i++, p += 8)
        rec->ints[i] = (int64_t)get_u64(p, swap);
    for (unsigned i = 0; i < v->n_floats; i++, p += 8)
        rec->floats[i] = get_double(p, swap);
    /* Swapping happens before up-conversion, so the values that conversion
     * fills in are never swapped (darshan-util swaps after converting and
     * has to skip them, not always correctly). */
    if (v->version != def->versions[def->n_versions - 1].version)
        return def->upconvert(v->version, rec);
    return true;
}

/* ---- files ---------------------------------------------------------------- */

/* Read rather than map: a log truncated while it is read must give an
 * error, not SIGBUS. The buffer is as large as the file, no larger. */
int pano_darshan_file_load(const char *path, pano_darshan_file *file, char *err, size_t errlen)
{
    file->data = NULL;
    file->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return fail(err, errlen, "cannot stat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "not a regular file");
    }
    if (st.st_size == 0) {
        close(fd);
        return fail(err, errlen, "empty file");
    }
    size_t size = (size_t)st.st_size, got = 0;
    uint8_t *data = pano_malloc(size);
    while (got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : 0;
            close(fd);
            free(data);
            return e ? fail(err, errlen, "read error: %s", strerror(e))
                     : fail(err, errlen, "file shrank while it was read");
        }
        got += (size_t)n;
    }
    close(fd);
    file->data = data;
    file->size = size;
    return 0;
}

void pano_darshan_file_free(pano_darshan_file *file)
{
    free((void *)file->data);
    file->data = NULL;
    file->size = 0;
}
