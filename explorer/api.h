/*
 * api.h - pano-explorer's JSON API: the query library's answers over HTTP,
 * for the pages (and for anyone with curl). Elasticsearch itself is never
 * exposed: every request names one workflow by its UUID (checked), asks
 * the library, and gets its JSON.
 *
 *   GET /api/workflows[?since=30d&limit=50]   recent workflows
 *   GET /api/workflows/UUID                     jobs, statistics (pegasus-
 *                                               statistics' figures when
 *                                               monitord reported it),
 *                                               anomalies, Darshan and transfers
 *   GET /api/workflows/UUID/series?metric=M[&job=JOB][&step=10s]
 *   GET /api/workflows/UUID/jobs/JOB            one job: its row, its start
 *                                               event (argv ...), its events
 *   GET /api/metrics                            the metrics of series
 *
 * Errors are JSON too, {"error": "..."}: 400 for a bad UUID, job name,
 * metric or step, 404 for an unknown workflow, job or path, 502 when
 * Elasticsearch does not answer, 503 for a request abandoned.
 */
#ifndef PANO_EXPLORER_API_H
#define PANO_EXPLORER_API_H

#include "config.h"
#include "http.h"

#include <stdbool.h>

/* Answer a request whose path starts with /api/. Thread-safe: each thread
 * keeps its own connection to Elasticsearch (made from cfg). A request is
 * abandoned, within about a second, once stopping() is true (the server is
 * stopping) or its client has gone away: what Elasticsearch was asked is
 * dropped and the answer is a 503. */
void explorer_api(const pano_config *cfg, bool (*stopping)(void),
                  const pano_http_request *request, pano_http_reply *reply);

/* A step of about span / 240 seconds, and not shorter than the sampling
 * interval, rounded to 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10,
 * 15, 30 min, 1, 2, 6, 12 h or a day. */
double explorer_auto_step(double span, double interval);

#endif
