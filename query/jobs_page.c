/*
 * jobs_page.c - a page of a workflow's rows: those a filter keeps (words in
 * their id, state, transformation or host; their states), in an order, from
 * an offset.
 */
#include "mem.h"
#include "query.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sort_names[] = {"newest", "oldest", "longest", "id"};

bool pano_job_sort_parse(const char *name, pano_job_sort *out)
{
    for (size_t i = 0; i < sizeof sort_names / sizeof sort_names[0]; i++)
        if (strcmp(name, sort_names[i]) == 0) {
            *out = (pano_job_sort)i;
            return true;
        }
    return false;
}

/* Whether needle (lowercase, not empty) is in hay, letters compared
 * without case. */
static bool contains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t k = 0;
        while (k < n && hay[k] && tolower((unsigned char)hay[k]) == needle[k])
            k++;
        if (k == n)
            return true;
    }
    return false;
}

static bool matches(const pano_job *j, const pano_job_filter *f, const char *words)
{
    if (f->states && !(f->states & (1u << j->state)))
        return false;
    if (!*words)
        return true;
    char text[1200];
    snprintf(text, sizeof text, "%s %s %s %s", j->id, pano_job_state_name(j->state),
             j->transformation ? j->transformation : "", j->host ? j->host : "");
    return contains(text, words);
}

static bool waiting(const pano_job *j)
{
    return !(j->start > 0) || j->state == PANO_JOB_QUEUED || j->state == PANO_JOB_HELD;
}

static int by_id(const pano_job *x, const pano_job *y) { return strcmp(x->id, y->id); }

/* -1 when a comes first for a key that wants larger values first. */
static int larger_first(double a, double b) { return a > b ? -1 : a < b; }

static int compare(const void *a, const void *b, void *user)
{
    const pano_jobs *jobs = ((const void **)user)[0];
    const pano_job_filter *f = ((const void **)user)[1];
    const pano_job *x = &jobs->jobs[*(const size_t *)a], *y = &jobs->jobs[*(const size_t *)b];
    int c = 0;
    bool xs = x->start > 0, ys = y->start > 0;
    switch (f->sort) {
    case PANO_SORT_NEWEST:
        c = (int)waiting(y) - (int)waiting(x);
        if (!c) /* not started: as late as can be */
            c = larger_first(xs ? x->start : INFINITY, ys ? y->start : INFINITY);
        break;
    case PANO_SORT_OLDEST:
        c = xs != ys ? (xs ? -1 : 1) : -larger_first(x->start, y->start);
        break;
    case PANO_SORT_LONGEST:
        c = larger_first(x->duration, y->duration);
        break;
    case PANO_SORT_ID:
        break;
    }
    return c ? c : by_id(x, y);
}

size_t pano_jobs_select(const pano_jobs *jobs, const pano_job_filter *f, size_t offset,
                        size_t limit, size_t *page, size_t *n_page)
{
    /* the words as typed, without the spaces around them, in lowercase */
    const char *text = f->text ? f->text : "";
    while (isspace((unsigned char)*text))
        text++;
    size_t len = strlen(text);
    while (len && isspace((unsigned char)text[len - 1]))
        len--;
    char *words = pano_malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        words[i] = (char)tolower((unsigned char)text[i]);
    words[len] = '\0';

    size_t *kept = pano_calloc(jobs->n ? jobs->n : 1, sizeof *kept), total = 0;
    for (size_t i = 0; i < jobs->n; i++)
        if (matches(&jobs->jobs[i], f, words))
            kept[total++] = i;
    const void *order[] = {jobs, f};
    if (total > 1)
        qsort_r(kept, total, sizeof *kept, compare, order);
    *n_page = 0;
    for (size_t i = offset; i < total && *n_page < limit; i++)
        page[(*n_page)++] = kept[i];
    free(kept);
    free(words);
    return total;
}
