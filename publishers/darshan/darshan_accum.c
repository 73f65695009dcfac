/*
 * darshan_accum.c - the --total aggregate record and the --perf/--file
 * metrics (see darshan_accum.h).
 */
#include "darshan_accum.h"

#include "mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- an index from 64-bit keys to entry numbers --------------------------- */

/* Open addressing with linear probing; slots hold entry number + 1. */
typedef struct {
    uint32_t *slots;
    size_t mask;
} key_index;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

/* Find key among keys[] through the index, or insert it as entry `count`
 * (growing the index as needed). Returns the entry number. */
static size_t index_find_or_add(key_index *ix, uint64_t **keys, size_t *count, size_t *cap,
                                uint64_t key, bool *added)
{
    if (2 * (*count + 1) > ix->mask + 1) {
        size_t n = ix->mask ? 2 * (ix->mask + 1) : 64;
        uint32_t *slots = pano_calloc(n, sizeof *slots);
        for (size_t e = 0; e < *count; e++) {
            size_t s = mix((*keys)[e]) & (n - 1);
            while (slots[s])
                s = (s + 1) & (n - 1);
            slots[s] = (uint32_t)(e + 1);
        }
        free(ix->slots);
        ix->slots = slots;
        ix->mask = n - 1;
    }
    size_t s = mix(key) & ix->mask;
    while (ix->slots[s]) {
        size_t e = ix->slots[s] - 1;
        if ((*keys)[e] == key) {
            *added = false;
            return e;
        }
        s = (s + 1) & ix->mask;
    }
    if (*count == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *keys = pano_reallocarray(*keys, *cap, sizeof **keys);
    }
    size_t e = (*count)++;
    (*keys)[e] = key;
    ix->slots[s] = (uint32_t)(e + 1);
    *added = true;
    return e;
}

/* Counters come from the file: sums of absurd values must wrap (as they do
 * in darshan-util) rather than overflow, which C leaves undefined. */
static int64_t add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* ---- state ---------------------------------------------------------------- */

typedef struct {
    int64_t read, written, max_offset, nprocs;
} file_metrics;

typedef struct {
    double io, rw, md;
} rank_times;

struct pano_darshan_accum {
    const pano_darshan_module_def *def;
    int64_t nprocs;
    size_t records;
    pano_darshan_record agg; /* the --total record */

    int64_t total_bytes;
    double shared_time_by_slowest;

    /* per record id */
    key_index file_index;
    uint64_t *file_ids;
    file_metrics *files;
    size_t n_files, files_cap, metrics_cap;

    /* per rank, for records of one rank */
    key_index rank_index;
    uint64_t *ranks;
    rank_times *rank_times;
    size_t n_ranks, ranks_cap, rank_times_cap;
};

pano_darshan_accum *pano_darshan_accum_new(const pano_darshan_module_def *def, int64_t nprocs)
{
    pano_darshan_accum *acc = pano_calloc(1, sizeof *acc);
    acc->def = def;
    acc->nprocs = nprocs;
    return acc;
}

void pano_darshan_accum_free(pano_darshan_accum *acc)
{
    if (!acc)
        return;
    free(acc->file_index.slots);
    free(acc->file_ids);
    free(acc->files);
    free(acc->rank_index.slots);
    free(acc->ranks);
    free(acc->rank_times);
    free(acc);
}

/* ---- the aggregate record ------------------------------------------------- */

/* Merge the "most common values" group starting at ints[at] (4 values, then
 * their 4 counts) of rec into agg, keeping darshan-util's exact behaviour:
 * values already present add their counts; each new value is inserted in
 * order of count (larger value first on a tie) and the fifth drops out. */
static void merge_common(const pano_darshan_module_def *def, int64_t *agg, const int64_t *in,
                         int at)
{
    if (def->common_needs_first_value && in[at] == 0)
        return;
    bool duplicate[4] = {false, false, false, false};
    for (int j = 0; j < 4; j++)
        for (int k = 0; k < 4; k++)
            if (agg[at + k] == in[at + j]) {
                agg[at + k + 4] = add(agg[at + k + 4], in[at + j + 4]);
                duplicate[j] = true;
            }

    for (int j = 0; j < 4; j++) {
        if (duplicate[j])
            continue;
        int64_t value = in[at + j], count = in[at + j + 4];
        if (value == 0)
            break;
        /* darshan-util keeps this total in an int */
        int total = (int)count;
        int k;
        for (k = 0; k < 4; k++)
            if (agg[at + k] == value) {
                total = (int)add(agg[at + k + 4], count);
                break;
            }

        int64_t values[4] = {0}, counts[4] = {0};
        int n = 0;
        for (k = 0; k < 4; k++) {
            if (agg[at + k + 4] > total || (agg[at + k + 4] == total && agg[at + k] > value)) {
                values[n] = agg[at + k];
                counts[n] = agg[at + k + 4];
                n++;
            } else
                break;
        }
        if (n == 4)
            break;
        values[n] = value;
        counts[n] = count;
        n++;
        /* k never passes the 4 values here unless the incoming record
         * repeats a value; darshan-util then reads on into the counts, and
         * so do we, within the record. */
        while (n != 4 && at + k + 4 < def->n_ints) {
            if (agg[at + k] != value) {
                values[n] = agg[at + k];
                counts[n] = agg[at + k + 4];
                n++;
            }
            k++;
        }
        memcpy(agg + at, values, sizeof values);
        memcpy(agg + at + 4, counts, sizeof counts);
    }
}

static void aggregate(pano_darshan_accum *acc, const pano_darshan_record *rec)
{
    const pano_darshan_module_def *def = acc->def;
    pano_darshan_record *agg = &acc->agg;
    bool first = acc->records == 0;

    /* What the record says about its fastest and slowest rank: a shared
     * record carries the values found when ranks were reduced, a rank's
     * own record stands for itself. */
    int64_t fast_rank, slow_rank, fast_bytes, slow_bytes;
    double fast_time, slow_time;
    if (rec->rank == -1) {
        fast_rank = rec->ints[def->fastest_rank];
        slow_rank = rec->ints[def->slowest_rank];
        fast_bytes = rec->ints[def->fastest_rank_bytes];
        slow_bytes = rec->ints[def->slowest_rank_bytes];
        fast_time = rec->floats[def->fastest_time];
        slow_time = rec->floats[def->slowest_time];
    } else {
        fast_rank = slow_rank = rec->rank;
        fast_bytes = slow_bytes = add(rec->ints[def->bytes_read], rec->ints[def->bytes_written]);
        fast_time = slow_time = rec->floats[def->read_time] + rec->floats[def->write_time] +
                                rec->floats[def->meta_time];
    }

    if (first) {
        agg->id = rec->id;
        agg->rank = rec->rank;
    }
    /* Fastest/slowest only mean something while all records are of one file. */
    bool one_file = agg->id == rec->id;
    if (!one_file)
        agg->id = 0;
    if (agg->rank != rec->rank)
        agg->rank = -1;

    for (int i = 0; i < def->n_ints; i++) {
        int64_t *a = &agg->ints[i], v = rec->ints[i];
        switch (def->ints[i].rule) {
        case PANO_DARSHAN_AGG_SUM:
            *a = add(*a, v);
            break;
        case PANO_DARSHAN_AGG_SUM_CLAMPED:
            *a = add(*a, v);
            if (*a < 0)
                *a = -1;
            break;
        case PANO_DARSHAN_AGG_LAST:
            *a = v;
            break;
        case PANO_DARSHAN_AGG_MAX:
            if (v > *a)
                *a = v;
            break;
        case PANO_DARSHAN_AGG_COMMON:
            merge_common(def, agg->ints, rec->ints, i);
            break;
        default:
            break;
        }
    }

    for (int i = 0; i < def->n_floats; i++) {
        double *a = &agg->floats[i], v = rec->floats[i];
        switch (def->floats[i].rule) {
        case PANO_DARSHAN_AGG_SUM:
            *a += v;
            break;
        case PANO_DARSHAN_AGG_MIN_NONZERO:
            if (v > 0 && (*a == 0 || v < *a))
                *a = v;
            break;
        case PANO_DARSHAN_AGG_MAX:
            if (v > *a)
                *a = v;
            break;
        case PANO_DARSHAN_AGG_MAX_TIME:
            if (v > *a) {
                *a = v;
                agg->ints[def->floats[i].pair] = rec->ints[def->floats[i].pair];
            }
            break;
        case PANO_DARSHAN_AGG_FASTEST_TIME:
            if (!one_file) {
                agg->ints[def->fastest_rank] = -1;
                agg->ints[def->fastest_rank_bytes] = -1;
                *a = 0.0;
            } else if (first || fast_time < *a) {
                agg->ints[def->fastest_rank] = fast_rank;
                agg->ints[def->fastest_rank_bytes] = fast_bytes;
                *a = fast_time;
            }
            break;
        case PANO_DARSHAN_AGG_SLOWEST_TIME:
            if (!one_file) {
                agg->ints[def->slowest_rank] = -1;
                agg->ints[def->slowest_rank_bytes] = -1;
                *a = 0.0;
            } else if (first || slow_time > *a) {
                agg->ints[def->slowest_rank] = slow_rank;
                agg->ints[def->slowest_rank_bytes] = slow_bytes;
                *a = slow_time;
            }
            break;
        case PANO_DARSHAN_AGG_ZERO:
            *a = 0;
            break;
        default:
            break;
        }
    }
}

/* ---- the --perf and --file metrics ---------------------------------------- */

int pano_darshan_accum_add(pano_darshan_accum *acc, const pano_darshan_record *rec, char *err,
                           size_t errlen)
{
    const pano_darshan_module_def *def = acc->def;
    if (rec->rank >= acc->nprocs) {
        snprintf(err, errlen, "%s record of rank %" PRId64 " in a job of %" PRId64 " processes",
                 def->name, rec->rank, acc->nprocs);
        return -1;
    }
    aggregate(acc, rec);
    acc->records++;

    int64_t r = rec->ints[def->bytes_read], w = rec->ints[def->bytes_written];
    int64_t max_offset = -1;
    if (def->max_byte_read >= 0) {
        int64_t mr = rec->ints[def->max_byte_read], mw = rec->ints[def->max_byte_written];
        max_offset = mr > mw ? mr : mw;
    }
    acc->total_bytes = add(acc->total_bytes, add(r, w));

    if (rec->rank < 0) {
        /* a shared record: its slowest rank's time */
        acc->shared_time_by_slowest += rec->floats[def->slowest_time];
    } else {
        bool added;
        size_t e = index_find_or_add(&acc->rank_index, &acc->ranks, &acc->n_ranks,
                                     &acc->ranks_cap, (uint64_t)rec->rank, &added);
        if (added) {
            if (acc->rank_times_cap < acc->ranks_cap) {
                acc->rank_times_cap = acc->ranks_cap;
                acc->rank_times = pano_reallocarray(acc->rank_times, acc->rank_times_cap,
                                                    sizeof *acc->rank_times);
            }
            acc->rank_times[e] = (rank_times){0, 0, 0};
        }
        double meta = rec->floats[def->meta_time], read = rec->floats[def->read_time],
               write = rec->floats[def->write_time];
        acc->rank_times[e].io += meta + read + write;
        acc->rank_times[e].rw += read + write;
        acc->rank_times[e].md += meta;
    }

    bool added;
    size_t e = index_find_or_add(&acc->file_index, &acc->file_ids, &acc->n_files,
                                 &acc->files_cap, rec->id, &added);
    if (added) {
        if (acc->metrics_cap < acc->files_cap) {
            acc->metrics_cap = acc->files_cap;
            acc->files = pano_reallocarray(acc->files, acc->metrics_cap, sizeof *acc->files);
        }
        acc->files[e] = (file_metrics){0, 0, 0, 0};
    }
    file_metrics *f = &acc->files[e];
    f->read = add(f->read, r);
    f->written = add(f->written, w);
    if (max_offset == -1)
        f->max_offset = -1; /* not tracked by this module */
    else if (max_offset > f->max_offset)
        f->max_offset = max_offset;
    if (rec->rank < 0)
        f->nprocs = -1; /* shared by all */
    else
        f->nprocs += 1; /* a later rank record turns -1 into 0, as in darshan */
    return 0;
}

/* Category totals, kept like darshan-util's CATEGORY_INC. */
typedef struct {
    int64_t count, bytes, max_offset;
} category;

static void category_add(category *c, const file_metrics *f)
{
    c->count++;
    c->bytes = add(c->bytes, add(f->read, f->written));
    if (f->max_offset == -1)
        c->max_offset = -1;
    else if (f->max_offset > c->max_offset)
        c->max_offset = f->max_offset;
}

static void add_totals(const pano_darshan_accum *acc, pano_darshan_module_summary *m)
{
    const pano_darshan_module_def *def = acc->def;
    for (int i = 0; i < def->n_ints; i++) {
        pano_darshan_total *t = pano_darshan_module_add_total(m, def->ints[i].name, false);
        if (i == def->unsigned_int) {
            t->type = PANO_DARSHAN_VALUE_UINT;
            t->v.u = (uint64_t)acc->agg.ints[i];
        } else {
            t->type = PANO_DARSHAN_VALUE_INT;
            t->v.i = acc->agg.ints[i];
        }
    }
    for (int i = 0; i < def->n_floats; i++) {
        pano_darshan_total *t = pano_darshan_module_add_total(m, def->floats[i].name, false);
        t->type = PANO_DARSHAN_VALUE_FLOAT;
        t->v.f = acc->agg.floats[i];
    }
}

void pano_darshan_accum_finish(pano_darshan_accum *acc, pano_darshan_module_summary *m)
{
    add_totals(acc, m);

    enum { ALL, RO, WO, RW, UNIQUE, SHARED, PARTIAL, N };
    category cats[N];
    memset(cats, 0, sizeof cats);
    for (size_t i = 0; i < acc->n_files; i++) {
        const file_metrics *f = &acc->files[i];
        category_add(&cats[ALL], f);
        if (f->read > 0 && f->written == 0)
            category_add(&cats[RO], f);
        else if (f->written > 0 && f->read == 0)
            category_add(&cats[WO], f);
        else if (f->written > 0 && f->read > 0)
            category_add(&cats[RW], f);
        if (f->nprocs == 1)
            category_add(&cats[UNIQUE], f);
        else if (f->nprocs == -1)
            category_add(&cats[SHARED], f);
        else
            category_add(&cats[PARTIAL], f);
    }
    m->has_files = true;
    const int printed[PANO_DARSHAN_FILES_CATEGORIES] = {ALL, RO, WO, RW, UNIQUE, SHARED};
    for (int c = 0; c < PANO_DARSHAN_FILES_CATEGORIES; c++)
        m->files[c] = (pano_darshan_file_category){cats[printed[c]].count, cats[printed[c]].bytes,
                                              cats[printed[c]].max_offset};
    /* darshan-parser's "shared" line adds the partially shared files to the
     * shared ones, in all three columns (so the offsets are summed). */
    pano_darshan_file_category *shared = &m->files[PANO_DARSHAN_FILES_SHARED];
    shared->count += cats[PARTIAL].count;
    shared->bytes = add(shared->bytes, cats[PARTIAL].bytes);
    shared->max_offset = add(shared->max_offset, cats[PARTIAL].max_offset);

    /* The slowest rank: the largest per-rank time, the lowest rank on a tie. */
    pano_darshan_perf *p = &m->perf;
    m->has_perf = true;
    p->has_rw_only_time = p->has_agg_time = true;
    p->total_bytes = acc->total_bytes;
    p->time_by_slowest = acc->shared_time_by_slowest;
    for (size_t i = 0; i < acc->n_ranks; i++) {
        const rank_times *t = &acc->rank_times[i];
        int64_t rank = (int64_t)acc->ranks[i];
        if (t->io > p->slowest_rank_io_time ||
            (t->io == p->slowest_rank_io_time && t->io > 0 && rank < p->slowest_rank)) {
            p->slowest_rank_io_time = t->io;
            p->slowest_rank_rw_only_time = t->rw;
            p->slowest_rank_meta_only_time = t->md;
            p->slowest_rank = rank;
        }
    }
    p->agg_time_by_slowest = p->slowest_rank_io_time + p->time_by_slowest;
    if (p->agg_time_by_slowest != 0)
        p->agg_perf_by_slowest = ((double)p->total_bytes / 1048576.0) / p->agg_time_by_slowest;
    m->records = (int64_t)acc->records;
}
