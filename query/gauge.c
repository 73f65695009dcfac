/*
 * gauge.c - the time-weighted mean and the peak of a summed gauge per
 * bucket, from the changes of its level (see gauge.h).
 */
#include "gauge.h"

#include "mem.h"

#include <math.h>
#include <stdlib.h>

void gauge_init(gauge *g, int64_t first, int64_t step, int64_t grid, size_t n)
{
    *g = (gauge){.first = first, .step = step, .grid = grid, .n = n,
                 .change = pano_calloc(n, sizeof(double)),
                 .held = pano_calloc(n, sizeof(double)),
                 .rise = pano_calloc(n, sizeof(double)),
                 .cells = pano_calloc(n, sizeof(double *))};
}

void gauge_free(gauge *g)
{
    for (size_t k = 0; k < g->n; k++)
        free(g->cells[k]);
    free(g->cells);
    free(g->change);
    free(g->held);
    free(g->rise);
    *g = (gauge){0};
}

static int64_t start_of(const gauge *g, size_t k)
{
    return g->first + (int64_t)k * g->step;
}

/* The cells of bucket k, and the cell of time t in it. */
static size_t cells_in(const gauge *g, size_t k)
{
    int64_t a = start_of(g, k);
    return (size_t)((a + g->step - 1) / g->grid - a / g->grid + 1);
}

static size_t cell_of(const gauge *g, size_t k, int64_t t)
{
    return (size_t)(t / g->grid - start_of(g, k) / g->grid);
}

bool gauge_bucket_of(const gauge *g, int64_t t, size_t *k)
{
    if (t < g->first) {
        *k = 0;
        return g->n > 0;
    }
    int64_t i = (t - g->first) / g->step;
    if (i >= (int64_t)g->n)
        return false;
    *k = (size_t)i;
    return true;
}

void gauge_add_stored(gauge *g, size_t k, double change, double by_time, double top,
                      int64_t first)
{
    double end = (double)(start_of(g, k) + g->step);
    g->change[k] += change;
    g->held[k] += end * change - by_time;
    /* Elasticsearch's histogram of the cells starts at the first cell that
     * had a sample: before it, G(a) stood at a cell's end */
    g->rise[k] = isnan(top) ? 0 : cell_of(g, k, first) > 0 ? fmax(top, 0) : top;
}

void gauge_add(gauge *g, int64_t t, double d)
{
    size_t k;
    if (d == 0 || !gauge_bucket_of(g, t, &k))
        return; /* no change, or after the last bucket */
    if (t < g->first)
        t = g->first;
    g->change[k] += d;
    g->held[k] += d * (double)(start_of(g, k) + g->step - t);
    if (!g->cells[k])
        g->cells[k] = pano_calloc(cells_in(g, k), sizeof(double));
    g->cells[k][cell_of(g, k, t)] += d;
}

bool gauge_has_cells(const gauge *g, size_t k)
{
    return k < g->n && g->cells[k] != NULL;
}

void gauge_add_cell(gauge *g, size_t k, int64_t cell_start, double d)
{
    if (!gauge_has_cells(g, k))
        return;
    int64_t a = start_of(g, k);
    if (cell_start / g->grid < a / g->grid || cell_start >= a + g->step)
        return; /* not a cell of this bucket */
    g->cells[k][cell_of(g, k, cell_start)] += d;
}

/* The highest level above G(a) just before a cell's end, from every change. */
static double rise_of_cells(const gauge *g, size_t k)
{
    double level = 0, top = -INFINITY;
    for (size_t c = 0, n = cells_in(g, k); c < n; c++) {
        level += g->cells[k][c];
        top = fmax(top, level);
    }
    return top;
}

void gauge_points(const gauge *g, pano_point *points)
{
    double level = 0; /* G(a) */
    for (size_t k = 0; k < g->n; k++) {
        double mean = level + g->held[k] / (double)g->step;
        double rise = g->cells[k] ? rise_of_cells(g, k) : g->rise[k];
        double peak = fmax(level + rise, mean);
        points[k] = (pano_point){(double)start_of(g, k) / 1000, fmax(mean, 0), fmax(peak, 0)};
        level += g->change[k];
    }
}
