/*
 * store_runs.h - the embedded store writer's memory of its runs' states
 * (run_delta.h), so that a run's samples that come without `delta` do not
 * each look the run's latest sample up in the file.
 *
 * A state is what the file gives (store.c's run_state: the run's latest
 * sample or start, by ts, then by row): read from the file once, then kept
 * as this writer stores the run's start and samples. It is only as good as the
 * writer's knowledge of the file, so store.c forgets every state when
 * another connection wrote to the file (its data_version changed), when a
 * transaction is rolled back, and when a start or a sample is stored that
 * names no run (pano_run_event_read reads none of it). A fixed table of
 * RUN_STATES entries, each run in the entry of its key's hash: a run that
 * finds its entry taken by another is read from the file again. Only
 * store.c calls this.
 */
#ifndef PANO_STORE_RUNS_H
#define PANO_STORE_RUNS_H

#include "json.h"
#include "run_delta.h"

#include <stdbool.h>

typedef struct store_runs store_runs;

store_runs *store_runs_new(void);
void store_runs_free(store_runs *sr);

/* The state kept for run key into r: false when none is. */
bool store_runs_get(store_runs *sr, const char *key, pano_run_state *r);
/* Keep run key's state as read from the file, latest_ts the ts of the row
 * it was read from (-INFINITY: the file has none). */
void store_runs_put(store_runs *sr, const char *key, double latest_ts, const pano_run_state *r);
/* A start or sample of run key just stored at ts, doc the document
 * stored: the run's state from then on, when it is kept and ts is not
 * before the row it was read from. */
void store_runs_stored(store_runs *sr, const char *key, double ts, const pano_json *doc);
/* Forget every state. */
void store_runs_forget(store_runs *sr);

#endif
