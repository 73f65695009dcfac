/*
 * retention.h - which of pano's indices are past their stream's retention
 * (partition.h), and how many shards a configuration keeps.
 *
 * Only names of the form <base>-<period>, base being one of the streams'
 * (pano-kickstart, ..., the fallback and dead-letter indices; or of the
 * summary streams, pano-summary-kickstart, ..., kept as the stream they
 * summarize) and period
 * one of the three forms (2026, 2026.11, 2026.11.25), are ever considered:
 * other indices, the old unpartitioned ones included, are never expired.
 */
#ifndef PANO_RETENTION_H
#define PANO_RETENTION_H

#include "partition.h"

#include <stdbool.h>

#include <stddef.h>

/* The stream of an index name (its position in pano_streams) and the end of
 * its period, or -1 when the name is not one of a stream's partitions.
 * bases: each stream's base name. */
int pano_retention_stream_of(const char *index, const char *const bases[PANO_N_STREAMS],
                             double *period_end);

/* True when index is a partition whose stream keeps data for a limited time
 * and whose period ended longer ago than that. */
bool pano_retention_expired(const char *index, const char *const bases[PANO_N_STREAMS],
                            const pano_stream_policy policies[PANO_N_STREAMS], double now);

/* Shards (primaries and replicas) the streams keep at most: within their
 * retention, and in a year for those kept forever (*forever_per_year);
 * with summaries, the partitions of the summary streams too (summary.h),
 * each kept as its stream. */
long pano_retention_shards(const pano_stream_policy policies[PANO_N_STREAMS], int shards,
                           int replicas, bool summaries, long *forever_per_year);

#endif
