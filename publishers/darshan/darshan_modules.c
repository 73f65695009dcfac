/*
 * darshan_modules.c - module names, slot numbering, record layouts and
 * aggregation rules (see darshan_modules.h).
 *
 * Counter names and their order are those of include/darshan-*-log-format.h
 * as darshan-parser 3.5.0 prints them; the rules follow the
 * darshan_log_agg_*_files functions of darshan-util 3.5.0.
 */
#include "darshan_modules.h"

#include <string.h>

static const char *const module_names[PANO_DARSHAN_KNOWN_MODULES] = {
    "NULL",  "POSIX",     "MPI-IO",    "H5F",   "H5D",   "PNETCDF_FILE",
    "PNETCDF_VAR", "BG/Q", "LUSTRE", "STDIO", "DXT_POSIX", "DXT_MPIIO",
    "MDHIM", "APXC",      "APMPI",     "HEATMAP", "DFS", "DAOS",
};

const char *pano_darshan_module_name(int id)
{
    return id >= 0 && id < PANO_DARSHAN_KNOWN_MODULES ? module_names[id] : NULL;
}

int pano_darshan_module_id_of_slot(int format_minor, int slot)
{
    int id = slot;
    if (format_minor < 20 && id >= PANO_DARSHAN_MOD_H5D) /* H5D came with 3.20 */
        id++;
    if (format_minor < 41 && id >= PANO_DARSHAN_MOD_PNETCDF_VAR) /* and PNETCDF_VAR with 3.41 */
        id++;
    return id;
}

/* Shorthands for the tables. */
#define SUM(n) {n, PANO_DARSHAN_AGG_SUM, -1}
#define SUMC(n) {n, PANO_DARSHAN_AGG_SUM_CLAMPED, -1}
#define LAST(n) {n, PANO_DARSHAN_AGG_LAST, -1}
#define MAX(n) {n, PANO_DARSHAN_AGG_MAX, -1}
#define MINNZ(n) {n, PANO_DARSHAN_AGG_MIN_NONZERO, -1}
#define MAXTIME(n, pair) {n, PANO_DARSHAN_AGG_MAX_TIME, pair}
#define COMMON(n) {n, PANO_DARSHAN_AGG_COMMON, -1}
#define FASTEST(n) {n, PANO_DARSHAN_AGG_FASTEST_TIME, -1}
#define SLOWEST(n) {n, PANO_DARSHAN_AGG_SLOWEST_TIME, -1}
#define ZERO(n) {n, PANO_DARSHAN_AGG_ZERO, -1}
#define OTHER(n) {n, PANO_DARSHAN_AGG_BY_OTHER, -1}

/* ---- POSIX (version 4) ---------------------------------------------------- */

enum { POSIX_MAX_READ_TIME_SIZE = 27, POSIX_MAX_WRITE_TIME_SIZE = 28 };

static const pano_darshan_counter posix_ints[] = {
    SUMC("POSIX_OPENS"), SUMC("POSIX_FILENOS"), SUMC("POSIX_DUPS"), SUMC("POSIX_READS"),
    SUMC("POSIX_WRITES"), SUMC("POSIX_SEEKS"), SUMC("POSIX_STATS"), SUMC("POSIX_MMAPS"),
    SUMC("POSIX_FSYNCS"), SUMC("POSIX_FDSYNCS"), SUMC("POSIX_RENAME_SOURCES"),
    SUMC("POSIX_RENAME_TARGETS"), LAST("POSIX_RENAMED_FROM"), LAST("POSIX_MODE"),
    SUMC("POSIX_BYTES_READ"), SUMC("POSIX_BYTES_WRITTEN"), MAX("POSIX_MAX_BYTE_READ"),
    MAX("POSIX_MAX_BYTE_WRITTEN"), SUMC("POSIX_CONSEC_READS"), SUMC("POSIX_CONSEC_WRITES"),
    SUMC("POSIX_SEQ_READS"), SUMC("POSIX_SEQ_WRITES"), SUMC("POSIX_RW_SWITCHES"),
    SUMC("POSIX_MEM_NOT_ALIGNED"), LAST("POSIX_MEM_ALIGNMENT"), SUMC("POSIX_FILE_NOT_ALIGNED"),
    LAST("POSIX_FILE_ALIGNMENT"), OTHER("POSIX_MAX_READ_TIME_SIZE"),
    OTHER("POSIX_MAX_WRITE_TIME_SIZE"), SUMC("POSIX_SIZE_READ_0_100"),
    SUMC("POSIX_SIZE_READ_100_1K"), SUMC("POSIX_SIZE_READ_1K_10K"),
    SUMC("POSIX_SIZE_READ_10K_100K"), SUMC("POSIX_SIZE_READ_100K_1M"),
    SUMC("POSIX_SIZE_READ_1M_4M"), SUMC("POSIX_SIZE_READ_4M_10M"),
    SUMC("POSIX_SIZE_READ_10M_100M"), SUMC("POSIX_SIZE_READ_100M_1G"),
    SUMC("POSIX_SIZE_READ_1G_PLUS"), SUMC("POSIX_SIZE_WRITE_0_100"),
    SUMC("POSIX_SIZE_WRITE_100_1K"), SUMC("POSIX_SIZE_WRITE_1K_10K"),
    SUMC("POSIX_SIZE_WRITE_10K_100K"), SUMC("POSIX_SIZE_WRITE_100K_1M"),
    SUMC("POSIX_SIZE_WRITE_1M_4M"), SUMC("POSIX_SIZE_WRITE_4M_10M"),
    SUMC("POSIX_SIZE_WRITE_10M_100M"), SUMC("POSIX_SIZE_WRITE_100M_1G"),
    SUMC("POSIX_SIZE_WRITE_1G_PLUS"), COMMON("POSIX_STRIDE1_STRIDE"),
    OTHER("POSIX_STRIDE2_STRIDE"), OTHER("POSIX_STRIDE3_STRIDE"), OTHER("POSIX_STRIDE4_STRIDE"),
    OTHER("POSIX_STRIDE1_COUNT"), OTHER("POSIX_STRIDE2_COUNT"), OTHER("POSIX_STRIDE3_COUNT"),
    OTHER("POSIX_STRIDE4_COUNT"), COMMON("POSIX_ACCESS1_ACCESS"), OTHER("POSIX_ACCESS2_ACCESS"),
    OTHER("POSIX_ACCESS3_ACCESS"), OTHER("POSIX_ACCESS4_ACCESS"), OTHER("POSIX_ACCESS1_COUNT"),
    OTHER("POSIX_ACCESS2_COUNT"), OTHER("POSIX_ACCESS3_COUNT"), OTHER("POSIX_ACCESS4_COUNT"),
    OTHER("POSIX_FASTEST_RANK"), OTHER("POSIX_FASTEST_RANK_BYTES"), OTHER("POSIX_SLOWEST_RANK"),
    OTHER("POSIX_SLOWEST_RANK_BYTES"),
};

static const pano_darshan_counter posix_floats[] = {
    MINNZ("POSIX_F_OPEN_START_TIMESTAMP"), MINNZ("POSIX_F_READ_START_TIMESTAMP"),
    MINNZ("POSIX_F_WRITE_START_TIMESTAMP"), MINNZ("POSIX_F_CLOSE_START_TIMESTAMP"),
    MAX("POSIX_F_OPEN_END_TIMESTAMP"), MAX("POSIX_F_READ_END_TIMESTAMP"),
    MAX("POSIX_F_WRITE_END_TIMESTAMP"), MAX("POSIX_F_CLOSE_END_TIMESTAMP"),
    SUM("POSIX_F_READ_TIME"), SUM("POSIX_F_WRITE_TIME"), SUM("POSIX_F_META_TIME"),
    MAXTIME("POSIX_F_MAX_READ_TIME", POSIX_MAX_READ_TIME_SIZE),
    MAXTIME("POSIX_F_MAX_WRITE_TIME", POSIX_MAX_WRITE_TIME_SIZE),
    FASTEST("POSIX_F_FASTEST_RANK_TIME"), SLOWEST("POSIX_F_SLOWEST_RANK_TIME"),
    ZERO("POSIX_F_VARIANCE_RANK_TIME"), ZERO("POSIX_F_VARIANCE_RANK_BYTES"),
};

/* v1 had 4 stdio counters (FOPENS ...) after MMAPS; v2 -> v3 added the
 * CLOSE_START and OPEN_END timestamps; v3 -> v4 added FILENOS and DUPS after
 * OPENS, and the three rename counters after FDSYNCS. */
static const pano_darshan_record_version posix_versions[] = {
    {1, 68, 15}, {2, 64, 15}, {3, 64, 17}, {4, 69, 17},
};

/* Insert n values at index `at` of an array of `len` elements. */
static void insert_ints(int64_t *a, size_t len, size_t at, const int64_t *values, size_t n)
{
    memmove(a + at + n, a + at, (len - at) * sizeof *a);
    memcpy(a + at, values, n * sizeof *a);
}

static void insert_floats(double *a, size_t len, size_t at, const double *values, size_t n)
{
    memmove(a + at + n, a + at, (len - at) * sizeof *a);
    memcpy(a + at, values, n * sizeof *a);
}

static const double unknown_timestamps[2] = {-1, -1};

static bool posix_upconvert(uint32_t version, pano_darshan_record *rec)
{
    if (version == 1) {
        enum { V1_FOPENS = 6, V1_STDIO_COUNTERS = 4 };
        /* Darshan < 3.1 mixed partial stdio data into POSIX records; such
         * records cannot be converted and are dropped, as darshan-util does. */
        if (rec->ints[V1_FOPENS] > 0)
            return false;
        memmove(rec->ints + V1_FOPENS, rec->ints + V1_FOPENS + V1_STDIO_COUNTERS,
                (68 - V1_FOPENS - V1_STDIO_COUNTERS) * sizeof rec->ints[0]);
    }
    if (version <= 2)
        insert_floats(rec->floats, 15, 3, unknown_timestamps, 2);
    if (version <= 3) {
        static const int64_t filenos_dups[2] = {-1, -1};
        static const int64_t renames[3] = {-1, -1, 0}; /* RENAMED_FROM is unsigned */
        insert_ints(rec->ints, 64, 1, filenos_dups, 2);
        insert_ints(rec->ints, 66, 10, renames, 3);
    }
    return true;
}

/* ---- MPI-IO (version 3) --------------------------------------------------- */

enum { MPIIO_MAX_READ_TIME_SIZE = 17, MPIIO_MAX_WRITE_TIME_SIZE = 18 };

static const pano_darshan_counter mpiio_ints[] = {
    SUM("MPIIO_INDEP_OPENS"), SUM("MPIIO_COLL_OPENS"), SUM("MPIIO_INDEP_READS"),
    SUM("MPIIO_INDEP_WRITES"), SUM("MPIIO_COLL_READS"), SUM("MPIIO_COLL_WRITES"),
    SUM("MPIIO_SPLIT_READS"), SUM("MPIIO_SPLIT_WRITES"), SUM("MPIIO_NB_READS"),
    SUM("MPIIO_NB_WRITES"), SUM("MPIIO_SYNCS"), SUM("MPIIO_HINTS"), SUM("MPIIO_VIEWS"),
    LAST("MPIIO_MODE"), SUM("MPIIO_BYTES_READ"), SUM("MPIIO_BYTES_WRITTEN"),
    SUM("MPIIO_RW_SWITCHES"), OTHER("MPIIO_MAX_READ_TIME_SIZE"),
    OTHER("MPIIO_MAX_WRITE_TIME_SIZE"), SUM("MPIIO_SIZE_READ_AGG_0_100"),
    SUM("MPIIO_SIZE_READ_AGG_100_1K"), SUM("MPIIO_SIZE_READ_AGG_1K_10K"),
    SUM("MPIIO_SIZE_READ_AGG_10K_100K"), SUM("MPIIO_SIZE_READ_AGG_100K_1M"),
    SUM("MPIIO_SIZE_READ_AGG_1M_4M"), SUM("MPIIO_SIZE_READ_AGG_4M_10M"),
    SUM("MPIIO_SIZE_READ_AGG_10M_100M"), SUM("MPIIO_SIZE_READ_AGG_100M_1G"),
    SUM("MPIIO_SIZE_READ_AGG_1G_PLUS"), SUM("MPIIO_SIZE_WRITE_AGG_0_100"),
    SUM("MPIIO_SIZE_WRITE_AGG_100_1K"), SUM("MPIIO_SIZE_WRITE_AGG_1K_10K"),
    SUM("MPIIO_SIZE_WRITE_AGG_10K_100K"), SUM("MPIIO_SIZE_WRITE_AGG_100K_1M"),
    SUM("MPIIO_SIZE_WRITE_AGG_1M_4M"), SUM("MPIIO_SIZE_WRITE_AGG_4M_10M"),
    SUM("MPIIO_SIZE_WRITE_AGG_10M_100M"), SUM("MPIIO_SIZE_WRITE_AGG_100M_1G"),
    SUM("MPIIO_SIZE_WRITE_AGG_1G_PLUS"), COMMON("MPIIO_ACCESS1_ACCESS"),
    OTHER("MPIIO_ACCESS2_ACCESS"), OTHER("MPIIO_ACCESS3_ACCESS"), OTHER("MPIIO_ACCESS4_ACCESS"),
    OTHER("MPIIO_ACCESS1_COUNT"), OTHER("MPIIO_ACCESS2_COUNT"), OTHER("MPIIO_ACCESS3_COUNT"),
    OTHER("MPIIO_ACCESS4_COUNT"), OTHER("MPIIO_FASTEST_RANK"), OTHER("MPIIO_FASTEST_RANK_BYTES"),
    OTHER("MPIIO_SLOWEST_RANK"), OTHER("MPIIO_SLOWEST_RANK_BYTES"),
};

static const pano_darshan_counter mpiio_floats[] = {
    MINNZ("MPIIO_F_OPEN_START_TIMESTAMP"), MINNZ("MPIIO_F_READ_START_TIMESTAMP"),
    MINNZ("MPIIO_F_WRITE_START_TIMESTAMP"), MINNZ("MPIIO_F_CLOSE_START_TIMESTAMP"),
    MAX("MPIIO_F_OPEN_END_TIMESTAMP"), MAX("MPIIO_F_READ_END_TIMESTAMP"),
    MAX("MPIIO_F_WRITE_END_TIMESTAMP"), MAX("MPIIO_F_CLOSE_END_TIMESTAMP"),
    SUM("MPIIO_F_READ_TIME"), SUM("MPIIO_F_WRITE_TIME"), SUM("MPIIO_F_META_TIME"),
    MAXTIME("MPIIO_F_MAX_READ_TIME", MPIIO_MAX_READ_TIME_SIZE),
    MAXTIME("MPIIO_F_MAX_WRITE_TIME", MPIIO_MAX_WRITE_TIME_SIZE),
    FASTEST("MPIIO_F_FASTEST_RANK_TIME"), SLOWEST("MPIIO_F_SLOWEST_RANK_TIME"),
    ZERO("MPIIO_F_VARIANCE_RANK_TIME"), ZERO("MPIIO_F_VARIANCE_RANK_BYTES"),
};

/* v1 and v2 lack the CLOSE_START and OPEN_END timestamps. */
static const pano_darshan_record_version mpiio_versions[] = {{1, 51, 15}, {2, 51, 15}, {3, 51, 17}};

static bool mpiio_upconvert(uint32_t version, pano_darshan_record *rec)
{
    if (version <= 2)
        insert_floats(rec->floats, 15, 3, unknown_timestamps, 2);
    return true;
}

/* ---- STDIO (version 2) ---------------------------------------------------- */

static const pano_darshan_counter stdio_ints[] = {
    SUM("STDIO_OPENS"), SUM("STDIO_FDOPENS"), SUM("STDIO_READS"), SUM("STDIO_WRITES"),
    SUM("STDIO_SEEKS"), SUM("STDIO_FLUSHES"), SUM("STDIO_BYTES_WRITTEN"),
    SUM("STDIO_BYTES_READ"), MAX("STDIO_MAX_BYTE_READ"), MAX("STDIO_MAX_BYTE_WRITTEN"),
    OTHER("STDIO_FASTEST_RANK"), OTHER("STDIO_FASTEST_RANK_BYTES"), OTHER("STDIO_SLOWEST_RANK"),
    OTHER("STDIO_SLOWEST_RANK_BYTES"),
};

static const pano_darshan_counter stdio_floats[] = {
    SUM("STDIO_F_META_TIME"), SUM("STDIO_F_WRITE_TIME"), SUM("STDIO_F_READ_TIME"),
    MINNZ("STDIO_F_OPEN_START_TIMESTAMP"), MINNZ("STDIO_F_CLOSE_START_TIMESTAMP"),
    MINNZ("STDIO_F_WRITE_START_TIMESTAMP"), MINNZ("STDIO_F_READ_START_TIMESTAMP"),
    MAX("STDIO_F_OPEN_END_TIMESTAMP"), MAX("STDIO_F_CLOSE_END_TIMESTAMP"),
    MAX("STDIO_F_WRITE_END_TIMESTAMP"), MAX("STDIO_F_READ_END_TIMESTAMP"),
    FASTEST("STDIO_F_FASTEST_RANK_TIME"), SLOWEST("STDIO_F_SLOWEST_RANK_TIME"),
    ZERO("STDIO_F_VARIANCE_RANK_TIME"), ZERO("STDIO_F_VARIANCE_RANK_BYTES"),
};

/* v1 lacks FDOPENS (after OPENS). */
static const pano_darshan_record_version stdio_versions[] = {{1, 13, 15}, {2, 14, 15}};

static bool stdio_upconvert(uint32_t version, pano_darshan_record *rec)
{
    if (version == 1) {
        static const int64_t fdopens = -1;
        insert_ints(rec->ints, 13, 1, &fdopens, 1);
    }
    return true;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const pano_darshan_module_def module_defs[] = {
    {
        .id = PANO_DARSHAN_MOD_POSIX, .name = "POSIX",
        .ints = posix_ints, .floats = posix_floats,
        .n_ints = COUNT(posix_ints), .n_floats = COUNT(posix_floats),
        .versions = posix_versions, .n_versions = COUNT(posix_versions),
        .upconvert = posix_upconvert, .common_needs_first_value = false,
        .unsigned_int = 12,
        .bytes_read = 14, .bytes_written = 15, .max_byte_read = 16, .max_byte_written = 17,
        .read_time = 8, .write_time = 9, .meta_time = 10,
        .fastest_rank = 65, .fastest_rank_bytes = 66, .slowest_rank = 67,
        .slowest_rank_bytes = 68, .fastest_time = 13, .slowest_time = 14,
    },
    {
        .id = PANO_DARSHAN_MOD_MPIIO, .name = "MPI-IO",
        .ints = mpiio_ints, .floats = mpiio_floats,
        .n_ints = COUNT(mpiio_ints), .n_floats = COUNT(mpiio_floats),
        .versions = mpiio_versions, .n_versions = COUNT(mpiio_versions),
        .upconvert = mpiio_upconvert, .common_needs_first_value = true,
        .unsigned_int = -1,
        .bytes_read = 14, .bytes_written = 15, .max_byte_read = -1, .max_byte_written = -1,
        .read_time = 8, .write_time = 9, .meta_time = 10,
        .fastest_rank = 47, .fastest_rank_bytes = 48, .slowest_rank = 49,
        .slowest_rank_bytes = 50, .fastest_time = 13, .slowest_time = 14,
    },
    {
        .id = PANO_DARSHAN_MOD_STDIO, .name = "STDIO",
        .ints = stdio_ints, .floats = stdio_floats,
        .n_ints = COUNT(stdio_ints), .n_floats = COUNT(stdio_floats),
        .versions = stdio_versions, .n_versions = COUNT(stdio_versions),
        .upconvert = stdio_upconvert, .common_needs_first_value = false,
        .unsigned_int = -1,
        .bytes_read = 7, .bytes_written = 6, .max_byte_read = 8, .max_byte_written = 9,
        .read_time = 2, .write_time = 1, .meta_time = 0,
        .fastest_rank = 10, .fastest_rank_bytes = 11, .slowest_rank = 12,
        .slowest_rank_bytes = 13, .fastest_time = 11, .slowest_time = 12,
    },
};

const pano_darshan_module_def *pano_darshan_module_def_of(int id)
{
    for (size_t i = 0; i < COUNT(module_defs); i++)
        if (module_defs[i].id == id)
            return &module_defs[i];
    return NULL;
}

const pano_darshan_record_version *pano_darshan_module_version(const pano_darshan_module_def *def,
                                                               uint32_t version)
{
    for (size_t i = 0; i < def->n_versions; i++)
        if (def->versions[i].version == version)
            return &def->versions[i];
    return NULL;
}

size_t pano_darshan_record_size(const pano_darshan_record_version *v)
{
    return PANO_DARSHAN_BASE_RECORD_SIZE + 8 * (size_t)(v->n_ints + v->n_floats);
}

size_t pano_darshan_fixed_record_size(int id, uint32_t version)
{
    /* Current versions only: base record (+ the parent file id for H5D and
     * PNETCDF_VAR), int64 counters, double counters. */
    static const struct {
        int id;
        uint32_t version;
        size_t size;
    } sizes[] = {
        {PANO_DARSHAN_MOD_H5F, 3, 16 + 8 * (3 + 5)},
        {PANO_DARSHAN_MOD_H5D, 2, 16 + 8 + 8 * (94 + 17)},
        {PANO_DARSHAN_MOD_PNETCDF_FILE, 3, 16 + 8 * (9 + 8)},
        {PANO_DARSHAN_MOD_PNETCDF_VAR, 1, 16 + 8 + 8 * (120 + 17)},
    };
    for (size_t i = 0; i < COUNT(sizes); i++)
        if (sizes[i].id == id && sizes[i].version == version)
            return sizes[i].size;
    return 0;
}
