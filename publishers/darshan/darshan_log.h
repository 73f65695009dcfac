/*
 * darshan_log.h - reading the .darshan binary format from memory.
 *
 * A log is an uncompressed header followed by compressed regions: the job
 * record (with the exe line and mount table), the name records and one
 * region per module. The header holds the format version, the magic number
 * (which also gives the byte order), the compression type, the partial-data
 * flags and the offset and length of the name and module regions; the job
 * region runs from the header to the first of them. This is the layout of
 * include/darshan-log-format.h and darshan-util/darshan-logutils.c in the
 * darshan-hpc/darshan repository (darshan-util 3.5.0). This reader works on
 * a buffer and its length, so the same code serves files (read with
 * pano_darshan_file_load) and the fuzzer. Every offset and length read from
 * the buffer is checked against its size before use, and decompression
 * grows its output only as data actually comes out, up to a bound derived
 * from the compressed size, so a damaged log costs no more memory than a
 * sound one.
 *
 * Formats 3.00, 3.10, 3.20, 3.21 and 3.41 are known, in either byte order,
 * with zlib, bzip2 or uncompressed regions. Module slots are renumbered to
 * the current module ids (darshan_modules.h) while the header is read.
 */
#ifndef PANO_DARSHAN_LOG_H
#define PANO_DARSHAN_LOG_H

#include "darshan_modules.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    PANO_DARSHAN_COMP_ZLIB = 0,
    PANO_DARSHAN_COMP_BZIP2 = 1,
    PANO_DARSHAN_COMP_NONE = 2,
} pano_darshan_compression;

/* A compressed region: offset and length in the file. */
typedef struct {
    uint64_t off, len;
} pano_darshan_region;

typedef struct {
    const uint8_t *data;
    size_t size;
    char version[9];  /* "3.21" */
    int format_minor; /* 0, 10, 20, 21 or 41 (the major is always 3) */
    bool swap;        /* written in the other byte order */
    pano_darshan_compression compression;
    size_t header_size;
    uint64_t partial;  /* bit i: module id i is incomplete */
    pano_darshan_region job, names;
    pano_darshan_region modules[PANO_DARSHAN_MAX_MODS]; /* by current module id */
    uint32_t module_versions[PANO_DARSHAN_MAX_MODS];
} pano_darshan_log;

/* A growable byte buffer, reused across regions. */
typedef struct {
    uint8_t *data;
    size_t len, cap;
} pano_darshan_buf;

void pano_darshan_buf_free(pano_darshan_buf *buf);

/* The job record and the text that follows it. */
typedef struct {
    int64_t uid, nprocs, jobid;
    int64_t start_sec, start_nsec, end_sec, end_nsec; /* nsec: 0 before 3.41 */
    char metadata[1025]; /* "key=value" lines, NUL-terminated */
    char *exe;           /* command line (owned) */
} pano_darshan_job;

/* Returned for a well-formed log of a format version this reader does not
 * know (a newer Darshan): darshan-parser may still read it. */
#define PANO_DARSHAN_ERR_VERSION (-2)

/* Parse and check the header of data[0..size). Returns 0, or -1 with a
 * message in err ("bad magic number", "truncated header", ...), or
 * PANO_DARSHAN_ERR_VERSION. data must stay valid while log is used. */
int pano_darshan_log_open(pano_darshan_log *log, const uint8_t *data, size_t size, char *err,
                          size_t errlen);

const char *pano_darshan_compression_name(pano_darshan_compression comp);

/* Decompress a region into out (replacing its contents). `what` names the
 * region in error messages ("POSIX region"). */
int pano_darshan_log_inflate(const pano_darshan_log *log, pano_darshan_region region,
                             const char *what, pano_darshan_buf *out, char *err, size_t errlen);

/* Read the job region. The caller frees job->exe. */
int pano_darshan_log_read_job(const pano_darshan_log *log, pano_darshan_buf *scratch,
                              pano_darshan_job *job, char *err, size_t errlen);

/* Run time as darshan-parser computes it: seconds with nanoseconds for 3.41
 * and later, end - start + 1 before. */
double pano_darshan_job_run_time(const pano_darshan_log *log, const pano_darshan_job *job);

/* Decode the record at p (pano_darshan_record_size(v) bytes) of module def,
 * version v, and up-convert it. Returns false when the record is one that
 * darshan-util drops (see darshan_modules.h). */
bool pano_darshan_decode_record(const pano_darshan_log *log, const pano_darshan_module_def *def,
                                const pano_darshan_record_version *v, const uint8_t *p,
                                pano_darshan_record *rec);

/* A whole file in memory. */
typedef struct {
    const uint8_t *data;
    size_t size;
} pano_darshan_file;

int pano_darshan_file_load(const char *path, pano_darshan_file *file, char *err, size_t errlen);
void pano_darshan_file_free(pano_darshan_file *file);

#endif
