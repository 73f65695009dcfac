/*
 * gauge.h - the time-weighted mean and the peak of a summed gauge (rss, vm,
 * procs, threads) in each bucket of a series, from the changes of its level
 * (internal to the query library: series.c feeds it).
 *
 * The summed gauge G(t) is a step function of time: it moves only at the
 * instants where something changes it (a sample's delta, a run without
 * delta that moved, ended or was lost), by that change. Times are whole
 * milliseconds since the epoch, as Elasticsearch files a sample's
 * @timestamp. Bucket k is [a, a + step), a = first + k·step; G(a) is the
 * level it opens with (every change before a, none at a or after).
 *
 *   mean = G(a) + sum of d·(a + step − t) / step over the changes d at t in
 *          the bucket: G averaged over the bucket, each level weighted by
 *          the time it held there.
 *   peak = the highest of the levels G held just before the instants of a
 *          grid: every multiple of `grid` ms inside (a, a + step), and
 *          a + step; or the mean when that is higher. Every level held for
 *          `grid` ms or longer in the bucket is at least that high; a
 *          shorter one may not be seen, and with grid = 1 ms (times are
 *          whole milliseconds) none is missed.
 *
 * The grid splits a bucket into cells, [a, first multiple of grid after
 * a), then grid ms each, the last one ending at a + step; the level just
 * before a cell's end is G(a) plus every change in that cell and the cells
 * before it.
 *
 * Changes come two ways. Elasticsearch sums the samples with delta per
 * bucket (gauge_add_stored): their sum, the sum of d·t, and the highest
 * running sum over the grid's cells. Others are known one by one in the
 * client (gauge_add): runs without delta, the end of lost runs. A bucket
 * with such a change keeps its cells, and the stored samples of its cells
 * are then given cell by cell (gauge_add_cell), so that its peak comes from
 * every change, stored or not, in time order.
 */
#ifndef PANO_QUERY_GAUGE_H
#define PANO_QUERY_GAUGE_H

#include "query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t first, step, grid; /* ms: the first bucket's start, the bucket length, the grid */
    size_t n;
    double *change;  /* per bucket: the changes summed */
    double *held;    /* per bucket: d·(a + step − t) summed (value·ms) */
    double *rise;    /* per bucket: the stored samples' highest level above G(a) on the grid */
    double **cells;  /* per bucket: NULL, or its changes per cell (see above) */
} gauge;

/* n buckets of step ms from first, read on a grid of grid ms (1 ≤ grid ≤ step). */
void gauge_init(gauge *g, int64_t first, int64_t step, int64_t grid, size_t n);
void gauge_free(gauge *g);

/* The bucket that holds t; false when t is at or after the last one's end.
 * A time before the first bucket counts at its start. */
bool gauge_bucket_of(const gauge *g, int64_t t, size_t *k);

/* What Elasticsearch answers for the samples with delta of bucket k:
 * change = the sum of their d, by_time = the sum of their d·t, top = the
 * highest running sum of d over the cells it had samples in (cumulative_sum
 * and max_bucket over a date_histogram of grid ms; NAN when none), first =
 * the time of the first of them. */
void gauge_add_stored(gauge *g, size_t k, double change, double by_time, double top,
                      int64_t first);
/* A change d at t known in the client (none when d is 0). */
void gauge_add(gauge *g, int64_t t, double d);
/* Whether bucket k has changes known in the client, and so needs its stored
 * samples cell by cell. */
bool gauge_has_cells(const gauge *g, size_t k);
/* The stored samples' changes summed over the cell that starts at cell_start
 * (a multiple of grid; Elasticsearch's key) in bucket k. Nothing when the
 * bucket has no changes known in the client. */
void gauge_add_cell(gauge *g, size_t k, int64_t cell_start, double d);

/* The buckets' mean and peak into points[0..n) (t: the bucket's start in
 * epoch seconds), never below zero. */
void gauge_points(const gauge *g, pano_point *points);

#endif
