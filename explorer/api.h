/*
 * api.h - pano-explorer's JSON API: the query library's answers over HTTP,
 * for the pages (and for anyone with curl). Elasticsearch itself is never
 * exposed: every request names one workflow by its UUID (checked), asks
 * the library, and gets its JSON. An answer holds what a screen shows, so
 * its size follows the screen, not the workflow: nothing is sent per run
 * for all runs of a workflow of more than EXPLORER_BAR_JOBS of them.
 *
 *   GET /api/workflows[?since=30d&limit=50]   recent workflows
 *   GET /api/workflows/UUID[?series=cpu,...][&bins=N][&since=CURSOR]
 *                                               counts, statistics (pegasus-
 *                                               statistics' figures when
 *                                               monitord reported it),
 *                                               anomalies, Darshan and
 *                                               transfers, the timeline's
 *                                               overview in N bins, the runs
 *                                               when there are at most
 *                                               EXPLORER_BAR_JOBS, a cursor;
 *                                               {"unchanged": true} when
 *                                               the cursor still holds
 *   GET /api/workflows/UUID/jobs[?offset=&limit=&state=&q=&sort=]
 *                                               a page of its runs
 *   GET /api/workflows/UUID/timeline[?from=&to=&bins=]
 *                                               the overview of a window,
 *                                               and its runs when few
 *   GET /api/workflows/UUID/series?metric=M[&job=JOB][&step=10s]
 *   GET /api/workflows/UUID/jobs/JOB            one job: its row, its start
 *                                               event (argv ...), its events
 *   GET /api/metrics                            the metrics of series
 *
 * The rows of a workflow are read once for all the requests about it while
 * they hold (jobs_cache.h, cursor.h).
 *
 * Errors are JSON too, {"error": "..."}: 400 for a bad UUID, job name,
 * metric, step or argument, 404 for an unknown workflow, job or path, 502
 * when Elasticsearch does not answer, 503 for a request abandoned.
 */
#ifndef PANO_EXPLORER_API_H
#define PANO_EXPLORER_API_H

#include "config.h"
#include "http.h"
#include "jobs_cache.h"

#include <stdbool.h>

/* At most this many runs are sent one by one, as bars of a timeline with a
 * labelled row each: a workflow's runs in its answer, a window's runs in
 * the timeline's. */
#define EXPLORER_BAR_JOBS 400

typedef struct {
    const pano_config *cfg;  /* Elasticsearch, the store's layout */
    bool (*stopping)(void);  /* true once the server stops */
    jobs_cache *cache;
} explorer_context;

/* Answer a request whose path starts with /api/. Thread-safe: each thread
 * keeps its own connection to Elasticsearch (made from ctx->cfg). A request
 * is abandoned, within about a second, once ctx->stopping() is true or its
 * client has gone away: what Elasticsearch was asked is dropped and the
 * answer is a 503. */
void explorer_api(const explorer_context *ctx, const pano_http_request *request,
                  pano_http_reply *reply);

/* A step of about span / 240 seconds, and not shorter than the sampling
 * interval, rounded to 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10,
 * 15, 30 min, 1, 2, 6, 12 h or a day. */
double explorer_auto_step(double span, double interval);

#endif
