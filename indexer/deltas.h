/*
 * deltas.h - the delta pano-indexer gives samples that come without one.
 *
 * pano-monitor's samples (kickstart.inv.online) carry `delta`, each value's
 * change since the previous sample of the run (sample.h), so that a time
 * series is one date_histogram of sums. Samples of other publishers
 * (Pegasus's own kickstart) come without it; the indexer adds it as they
 * pass, from the last values of each run it keeps, so that they are stored
 * as pano-monitor's are, marked `"delta_source": "indexer"` with
 * `delta_offset`, the Kafka offset of the event it was made at.
 *
 * A run is (wf_uuid, dag_job_id, hostname, pid); its events (kickstart.inv.
 * start, .online, .end) come through one Kafka partition, in order as the
 * bridges produced them. What each makes, by the run's state, is
 * run_delta.h's, shared with the embedded store.
 *
 * The states are kept in a bounded table (run_table.h; pano.indexer.
 * delta_runs runs and as many workflows, at least two batches' worth so
 * that no run of a batch in flight is evicted), the least
 * recently seen going first. A run not in the table (the indexer
 * restarted, was given the partition, or evicted the run) is looked up in
 * Elasticsearch rather than started again from zero: its latest sample
 * among those made at a lower offset of the partition, which is exactly
 * the state the run had before this event, whoever indexed it, and however
 * much of a batch in flight reached the store. Only when it matters: each
 * workflow is asked once whether it holds samples of those kinds (a store
 * written before without delta, or deltas made by an indexer before), and
 * its runs are looked up only then, or when one of its runs was evicted.
 * The lookups of a batch go as one _msearch per round, after a _refresh.
 *
 * A batch's events are handled in order: deltas_begin(), then rounds of
 * deltas_plan() and deltas_read() until the plan is empty, then
 * deltas_apply() for each event. Nothing here sends a request.
 */
#ifndef PANO_INDEXER_DELTAS_H
#define PANO_INDEXER_DELTAS_H

#include "buf.h"
#include "json.h"
#include "run_delta.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct deltas deltas;

typedef struct {
    uint64_t made;     /* samples given a delta */
    uint64_t late;     /* of those, late or copies of the latest: delta 0 */
    uint64_t closings; /* closing samples made */
    uint64_t lookups;  /* workflows and runs looked up in Elasticsearch */
    uint64_t evicted;  /* runs evicted from the table */
} deltas_counters;

/* Deltas for runs of the index prefix's samples (<prefix>samples-*, and
 * <prefix>kickstart, a store without partitions), keeping at most
 * max_runs runs and as many workflows. */
deltas *deltas_new(size_t max_runs, const char *index_prefix);
void deltas_free(deltas *d);

/* ---- a batch -------------------------------------------------------------- */

/* Start on the run events of a batch, in Kafka order (kept until the last
 * deltas_apply()). */
void deltas_begin(deltas *d, pano_run_event *const *events, size_t n);
/* The next round of lookups as an _msearch body appended to body; how many
 * searches it holds, 0 when no lookup is left. */
size_t deltas_plan(deltas *d, pano_buf *body);
/* Apply the answer to that round; -1 (why in err) when it is not a usable
 * one: then start again from deltas_begin(). */
int deltas_read(deltas *d, const char *answer, size_t len, char *err, size_t errlen);

/* Handle the next event of the batch: e, its prepared document doc (JSON,
 * doc_len bytes) and the event as it came (json, json_len). Free what out
 * holds with free(). */
void deltas_apply(deltas *d, const pano_run_event *e, const char *doc, size_t doc_len,
                  const char *json, size_t json_len, pano_run_change *out);

/* ---- the table ------------------------------------------------------------ */

/* Forget the runs and workflows of a partition taken away. */
void deltas_forget_partition(deltas *d, int partition);
const deltas_counters *deltas_counts(const deltas *d);
/* Runs in the table. */
size_t deltas_runs(const deltas *d);

#endif
