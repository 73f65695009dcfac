/*
 * timeline.c - a workflow's runs on a timeline at a screen's resolution:
 * how many of each state were alive in each bin, counted without looking
 * at a run once per bin (a count per bin where it starts to be alive and
 * where it stops, summed along the bins).
 */
#include "mem.h"
#include "query.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double pano_job_timeline_end(const pano_jobs *jobs, const pano_job *j)
{
    if (j->end > 0)
        return j->end;
    if (j->state == PANO_JOB_RUNNING)
        return jobs->now;
    return j->start + (j->duration > 0 ? j->duration : 0);
}

bool pano_job_alive_in(const pano_jobs *jobs, const pano_job *j, double from, double to,
                       bool closed)
{
    if (!(j->start > 0))
        return false;
    double end = pano_job_timeline_end(jobs, j);
    bool before_to = j->start < to || (closed && j->start == to);
    if (end > j->start)
        return before_to && end > from;
    return j->start >= from && before_to;
}

/* Where t is in [from, to], counted in bins (the product first: exact for
 * whole numbers). */
static double position(double t, double from, double to, size_t bins)
{
    return (t - from) * (double)bins / (to - from);
}

/* The bin of time t in [from, to] (to in the last one). */
static size_t bin_of(double t, double from, double to, size_t bins)
{
    double b = floor(position(t, from, to, bins));
    return b <= 0 ? 0 : b >= (double)bins ? bins - 1 : (size_t)b;
}

/* The span of the started runs; false when none started. */
static bool runs_span(const pano_jobs *jobs, double *from, double *to)
{
    *from = INFINITY;
    *to = -INFINITY;
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        if (!(j->start > 0))
            continue;
        double end = pano_job_timeline_end(jobs, j);
        *from = fmin(*from, j->start);
        *to = fmax(*to, fmax(end, j->start));
    }
    return isfinite(*from);
}

void pano_jobs_overview(const pano_jobs *jobs, double from, double to, size_t bins,
                        pano_overview *out)
{
    memset(out, 0, sizeof *out);
    if (bins == 0)
        bins = 1;
    if (!(from < to) && !runs_span(jobs, &from, &to))
        from = to = jobs->now;
    if (!(from < to))
        to = from + 1; /* one instant: a window of a second around it */
    out->from = from;
    out->to = to;
    out->bins = bins;
    out->alive = pano_calloc(bins * PANO_JOB_STATES, sizeof *out->alive);
    /* change[b][s]: runs of state s that start to count at bin b, minus
     * those that stop counting after bin b - 1 */
    long *change = pano_calloc((bins + 1) * PANO_JOB_STATES, sizeof *change);
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        if (!pano_job_alive_in(jobs, j, from, to, true))
            continue;
        double end = pano_job_timeline_end(jobs, j);
        size_t first = j->start <= from ? 0 : bin_of(j->start, from, to, bins);
        size_t last = first;
        if (end > j->start && end > to)
            last = bins - 1;
        else if (end > j->start) {
            /* the last bin that starts before the end */
            double b = ceil(position(end, from, to, bins)) - 1;
            last = b <= 0 ? 0 : b >= (double)bins ? bins - 1 : (size_t)b;
            if (last < first)
                last = first;
        }
        change[first * PANO_JOB_STATES + j->state]++;
        change[(last + 1) * PANO_JOB_STATES + j->state]--;
        out->runs++;
    }
    long running[PANO_JOB_STATES] = {0};
    for (size_t b = 0; b < bins; b++) {
        size_t all = 0;
        for (size_t s = 0; s < PANO_JOB_STATES; s++) {
            running[s] += change[b * PANO_JOB_STATES + s];
            out->alive[b * PANO_JOB_STATES + s] = (size_t)running[s];
            all += (size_t)running[s];
        }
        if (all > out->peak)
            out->peak = all;
    }
    free(change);
}

void pano_overview_free(pano_overview *o)
{
    free(o->alive);
    memset(o, 0, sizeof *o);
}
