/*
 * jobs_cache.h - the rows of the workflows looked at lately, shared by the
 * requests that need them while they hold (cursor.h).
 *
 * A page asks for a workflow, then for a page of its jobs and the window of
 * its timeline it shows, and every viewer of a workflow asks the same: all
 * of these are answered from one reading of the rows (pano_query_jobs,
 * whose cost grows with the workflow), made again only once the workflow's
 * events changed or the clock may have changed them.
 *
 * It keeps the rows of at most JOBS_CACHE_WORKFLOWS workflows and, beyond
 * the latest, at most max_runs rows in all; rows unused for
 * JOBS_CACHE_IDLE seconds are dropped. Thread-safe; rows handed out stay
 * valid until released, whatever the cache drops meanwhile.
 */
#ifndef PANO_EXPLORER_JOBS_CACHE_H
#define PANO_EXPLORER_JOBS_CACHE_H

#include "cursor.h"
#include "query.h"

#define JOBS_CACHE_WORKFLOWS 4
#define JOBS_CACHE_IDLE 120.0

typedef struct jobs_cache jobs_cache;

jobs_cache *jobs_cache_new(size_t max_runs);
/* Every row handed out must have been released. */
void jobs_cache_free(jobs_cache *c);

/* The rows of workflow wf_uuid when rows kept for it still hold at the
 * events now and the time t (explorer_cursor_holds); *cursor is theirs.
 * NULL when there are none. */
const pano_jobs *jobs_cache_get(jobs_cache *c, const char *wf_uuid, const pano_changes *now,
                                double t, explorer_cursor *cursor);

/* Keep jobs (taken: the cache frees them), read when the events were at
 * cursor->at, in place of any rows kept for that workflow, and hand them
 * out. */
const pano_jobs *jobs_cache_put(jobs_cache *c, pano_jobs *jobs, const explorer_cursor *cursor,
                                double t);

/* Done with rows jobs_cache_get or jobs_cache_put handed out. */
void jobs_cache_release(jobs_cache *c, const pano_jobs *jobs);

#endif
