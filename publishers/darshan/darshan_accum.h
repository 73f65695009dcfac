/*
 * darshan_accum.h - darshan-parser's --total, --perf and --file, computed
 * as darshan-util 3.5.0 does: --perf and --file as in
 * darshan-util/darshan-logutils-accumulator.c, --total as the modules'
 * log_agg_records functions (darshan_log_agg_posix_files and the like in
 * darshan-util/darshan-<module>-logutils.c) of the darshan-hpc/darshan
 * repository.
 *
 * --total is one aggregate record folded from all records by each counter's
 * rule (darshan_modules.h). --perf sums each rank's I/O time over its own
 * records and adds the slowest rank's to the shared records' slowest-rank
 * times. --file sums bytes and tracks the largest offset per record id,
 * then counts files by access (read, write, both) and by sharing.
 *
 * Records are added in file order: the order matters for the aggregate
 * record (last values, common-value merging) and for the floating-point
 * sums, which are added in the same order as darshan-util adds them.
 */
#ifndef PANO_DARSHAN_ACCUM_H
#define PANO_DARSHAN_ACCUM_H

#include "darshan_modules.h"
#include "darshan_summary.h"

#include <stddef.h>

typedef struct pano_darshan_accum pano_darshan_accum;

pano_darshan_accum *pano_darshan_accum_new(const pano_darshan_module_def *def, int64_t nprocs);
void pano_darshan_accum_free(pano_darshan_accum *acc);

/* Add one record. Fails (-1, message in err) when its rank is not one of
 * the job's processes. */
int pano_darshan_accum_add(pano_darshan_accum *acc, const pano_darshan_record *rec, char *err,
                           size_t errlen);

/* Fill m's totals, perf and files from what was added. */
void pano_darshan_accum_finish(pano_darshan_accum *acc, pano_darshan_module_summary *m);

#endif
