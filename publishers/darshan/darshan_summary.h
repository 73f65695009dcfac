/*
 * darshan_summary.h - what a darshan.perf event says about one log.
 *
 * The structures and the operations that fill and free them; nothing here
 * reads a log. Both ways of reading a log produce a summary: the native
 * reader (darshan_summarize.h) and the converter of darshan-parser's text
 * (darshan_text.h). The event is built from it (darshan_event.h), and the
 * tests compare it, through the event, with darshan-parser's output.
 */
#ifndef PANO_DARSHAN_SUMMARY_H
#define PANO_DARSHAN_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    PANO_DARSHAN_VALUE_INT,
    PANO_DARSHAN_VALUE_UINT, /* POSIX_RENAMED_FROM: a record id */
    PANO_DARSHAN_VALUE_FLOAT,
} pano_darshan_value_type;

/* One counter of a module's --total record. */
typedef struct {
    const char *name; /* static (a counter table) or owned (text input) */
    bool owned;
    pano_darshan_value_type type;
    union {
        int64_t i;
        uint64_t u;
        double f;
    } v;
} pano_darshan_total;

/* One line of the --file table. */
typedef struct {
    int64_t count, bytes, max_offset;
} pano_darshan_file_category;

enum {
    PANO_DARSHAN_FILES_TOTAL,
    PANO_DARSHAN_FILES_READ_ONLY,
    PANO_DARSHAN_FILES_WRITE_ONLY,
    PANO_DARSHAN_FILES_READ_WRITE,
    PANO_DARSHAN_FILES_UNIQUE,
    PANO_DARSHAN_FILES_SHARED,
    PANO_DARSHAN_FILES_CATEGORIES,
};

extern const char *const pano_darshan_file_category_names[PANO_DARSHAN_FILES_CATEGORIES];

/* A value that only darshan-parser <= 3.3 printed (text input only):
 * shared_files.time_by_cumul_io_only, agg_perf_by_open, ... */
typedef struct {
    char *name;
    bool shared_files; /* belongs under shared_files */
    double value;
} pano_darshan_legacy_perf;

/* The --perf values. */
typedef struct {
    int64_t total_bytes;
    int64_t slowest_rank;
    double slowest_rank_io_time, slowest_rank_meta_only_time, slowest_rank_rw_only_time;
    double time_by_slowest, agg_time_by_slowest, agg_perf_by_slowest;
    bool has_rw_only_time, has_agg_time; /* not printed before darshan 3.4 */
    pano_darshan_legacy_perf *legacy;
    size_t n_legacy;
} pano_darshan_perf;

typedef struct {
    char *name;       /* as darshan-parser prints it: "MPI-IO" */
    uint32_t version; /* module record version, 0 if unknown */
    bool partial;     /* the module ran out of memory: data incomplete */
    int64_t compressed_bytes; /* -1 if unknown */
    int64_t records;          /* -1 if not counted */
    char *note;               /* why the module was skipped, or NULL */
    pano_darshan_total *totals;
    size_t n_totals, totals_cap;
    bool has_perf, has_files;
    pano_darshan_perf perf;
    pano_darshan_file_category files[PANO_DARSHAN_FILES_CATEGORIES];
} pano_darshan_module_summary;

typedef struct {
    char *key, *value;
} pano_darshan_metadata;

typedef struct {
    char *version;     /* "3.41" */
    char *compression; /* "ZLIB" */
    char *exe;
    int64_t uid, jobid, nprocs;
    int64_t start_time, end_time;       /* seconds */
    int64_t start_nsec, end_nsec;       /* 3.41 logs only, else 0 */
    double run_time;
    pano_darshan_metadata *metadata;
    size_t n_metadata;
    pano_darshan_module_summary *modules;
    size_t n_modules;
} pano_darshan_summary;

/* Append a module with this name and return it (zeroed, records = -1,
 * compressed_bytes = -1). */
pano_darshan_module_summary *pano_darshan_summary_add_module(pano_darshan_summary *s,
                                                             const char *name);
pano_darshan_module_summary *pano_darshan_summary_find_module(const pano_darshan_summary *s,
                                                              const char *name);
void pano_darshan_summary_add_metadata(pano_darshan_summary *s, const char *key, const char *value);
/* Split darshan's "key=value\n..." metadata text at each line's first '='
 * (values may contain '='), skipping lines without one. */
void pano_darshan_summary_parse_metadata(pano_darshan_summary *s, const char *text);
/* Add a total named `name`: a string that outlives the summary (a counter
 * table's), or one that is copied when copy is set. */
pano_darshan_total *pano_darshan_module_add_total(pano_darshan_module_summary *m, const char *name,
                                                  bool copy);
void pano_darshan_perf_add_legacy(pano_darshan_perf *perf, const char *name, bool shared_files,
                                  double value);
void pano_darshan_summary_free(pano_darshan_summary *s);

#endif
