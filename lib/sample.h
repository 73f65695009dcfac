/*
 * sample.h - the values of a kickstart.inv.online sample that move, and how
 * a sample's `delta` carries their change.
 *
 * A sample holds cumulative counters (CPU seconds, bytes, system calls) and
 * gauges (memory, processes, threads) of a task's process tree
 * (schemas/events/kickstart.inv.online.schema.json). `delta` holds, for each
 * of these values, its change since the previous sample of the same run:
 * CPU seconds as the difference of the values as printed (milliseconds), so
 * that no rounding error adds up over a run; the others as integers. Summed
 * over a run's samples the deltas give its latest values. pano-monitor
 * writes `delta` into its samples; pano-indexer writes it into samples that
 * come without one.
 */
#ifndef PANO_SAMPLE_H
#define PANO_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *name;
    bool gauge;   /* a level (vm, rss, procs, threads), else a cumulative counter */
    bool seconds; /* CPU seconds, printed with 3 decimals; else an integer */
} pano_sample_value;

#define PANO_SAMPLE_NVALUES 13
/* utime stime iowait vm rss procs threads bread bwrite rchar wchar syscr
 * syscw: pano-monitor's order. */
extern const pano_sample_value pano_sample_values[PANO_SAMPLE_NVALUES];

/* The change of value i from `then` to `now` as `delta` carries it. */
double pano_sample_delta(size_t i, double now, double then);

#endif
