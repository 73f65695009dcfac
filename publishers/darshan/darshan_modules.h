/*
 * darshan_modules.h - what pano-darshan knows about Darshan's modules.
 *
 * Module ids are the current ones (darshan-log-format.h, format 3.41):
 * older formats number their slots differently and are renumbered while the
 * header is read (pano_darshan_module_id_of_slot).
 *
 * Three modules get darshan-parser's --total/--perf/--file treatment: POSIX,
 * MPI-IO and STDIO. For them this file holds the record layout of every
 * module version, the counter names in darshan-parser's order, the rule by
 * which darshan-util 3.5.0 aggregates each counter into the --total record,
 * and the up-conversion of old record versions. Other modules are only
 * counted (when their record size is fixed and known) or skipped.
 */
#ifndef PANO_DARSHAN_MODULES_H
#define PANO_DARSHAN_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    PANO_DARSHAN_MOD_NULL = 0,
    PANO_DARSHAN_MOD_POSIX = 1,
    PANO_DARSHAN_MOD_MPIIO = 2,
    PANO_DARSHAN_MOD_H5F = 3,
    PANO_DARSHAN_MOD_H5D = 4,
    PANO_DARSHAN_MOD_PNETCDF_FILE = 5,
    PANO_DARSHAN_MOD_PNETCDF_VAR = 6,
    PANO_DARSHAN_MOD_BGQ = 7,
    PANO_DARSHAN_MOD_LUSTRE = 8,
    PANO_DARSHAN_MOD_STDIO = 9,
    PANO_DARSHAN_MOD_DXT_POSIX = 10,
    PANO_DARSHAN_MOD_DXT_MPIIO = 11,
    PANO_DARSHAN_MOD_MDHIM = 12,
    PANO_DARSHAN_MOD_APXC = 13,
    PANO_DARSHAN_MOD_APMPI = 14,
    PANO_DARSHAN_MOD_HEATMAP = 15,
    PANO_DARSHAN_MOD_DFS = 16,
    PANO_DARSHAN_MOD_DAOS = 17,
    PANO_DARSHAN_KNOWN_MODULES = 18,
    PANO_DARSHAN_MAX_MODS = 64,
};

/* How darshan-util 3.5.0 folds one counter of a record into the aggregate
 * record that --total prints. */
typedef enum {
    PANO_DARSHAN_AGG_SUM,          /* summed */
    PANO_DARSHAN_AGG_SUM_CLAMPED,  /* summed; a negative sum becomes exactly -1 */
    PANO_DARSHAN_AGG_LAST,         /* the last record's value */
    PANO_DARSHAN_AGG_MAX,          /* the largest value */
    PANO_DARSHAN_AGG_MIN_NONZERO,  /* the smallest value above 0 */
    PANO_DARSHAN_AGG_MAX_TIME,     /* largest; its size counter (pair) follows it */
    PANO_DARSHAN_AGG_COMMON,       /* 4 values then 4 counts: the most common values */
    PANO_DARSHAN_AGG_FASTEST_TIME, /* fastest rank: time, with rank and bytes */
    PANO_DARSHAN_AGG_SLOWEST_TIME, /* slowest rank: time, with rank and bytes */
    PANO_DARSHAN_AGG_ZERO,         /* always 0 (variances) */
    PANO_DARSHAN_AGG_BY_OTHER,     /* set together with another counter */
} pano_darshan_agg_rule;

typedef struct {
    const char *name;
    pano_darshan_agg_rule rule;
    int8_t pair; /* PANO_DARSHAN_AGG_MAX_TIME: index of the matching size counter */
} pano_darshan_counter;

/* Record layout of one module version on disk: a base record (id, rank),
 * then n_ints int64 counters and n_floats double counters. */
typedef struct {
    uint32_t version;
    uint16_t n_ints, n_floats;
} pano_darshan_record_version;

#define PANO_DARSHAN_MAX_INTS 72
#define PANO_DARSHAN_MAX_FLOATS 20
#define PANO_DARSHAN_BASE_RECORD_SIZE 16

/* A decoded record, up-converted to the module's current version. */
typedef struct {
    uint64_t id;
    int64_t rank;
    int64_t ints[PANO_DARSHAN_MAX_INTS];
    double floats[PANO_DARSHAN_MAX_FLOATS];
} pano_darshan_record;

/* A module whose records darshan-parser accumulates. The role indices name
 * the counters the --perf/--file metrics are computed from. */
typedef struct {
    int id;
    const char *name; /* as darshan-parser prints it: "MPI-IO" */
    const pano_darshan_counter *ints, *floats;
    uint16_t n_ints, n_floats; /* the current version's */
    const pano_darshan_record_version *versions; /* oldest first, current last */
    size_t n_versions;
    /* Up-convert a record of an older version in place; false when the
     * record must be dropped (POSIX v1 records holding stdio counters). */
    bool (*upconvert)(uint32_t version, pano_darshan_record *rec);
    bool common_needs_first_value; /* MPI-IO: skip the merge if value 1 is 0 */
    int unsigned_int;              /* index printed as unsigned, or -1 */
    int bytes_read, bytes_written, max_byte_read, max_byte_written; /* -1: none */
    int read_time, write_time, meta_time;
    int fastest_rank, fastest_rank_bytes, slowest_rank, slowest_rank_bytes;
    int fastest_time, slowest_time;
} pano_darshan_module_def;

/* Name of a module id as darshan-parser prints it, or NULL if unknown. */
const char *pano_darshan_module_name(int id);

/* The current module id of header slot `slot` in a log of format
 * major.minor (3.00 ... 3.41): older formats lack the H5D and PNETCDF_VAR
 * slots. */
int pano_darshan_module_id_of_slot(int format_minor, int slot);

/* The accumulated module with this id, or NULL. */
const pano_darshan_module_def *pano_darshan_module_def_of(int id);

/* The on-disk layout of version `version` of an accumulated module, or
 * NULL when the version is unknown. */
const pano_darshan_record_version *pano_darshan_module_version(const pano_darshan_module_def *def,
                                                               uint32_t version);

/* Size of one record of a fixed-size, non-accumulated module version
 * (H5F, H5D, PNETCDF_*), or 0 when unknown or variable (LUSTRE, HEATMAP,
 * DXT, ...). */
size_t pano_darshan_fixed_record_size(int id, uint32_t version);

/* Record size on disk of an accumulated module version. */
size_t pano_darshan_record_size(const pano_darshan_record_version *v);

#endif
