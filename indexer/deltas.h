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
 * A run is (wf_uuid, dag_job_id, hostname, pid), as pano-query keys runs;
 * its events (kickstart.inv.start, .online, .end) come through one Kafka
 * partition, in order as the bridges produced them. Its state:
 *
 *   announced   its kickstart.inv.start passed, no sample yet;
 *   ingest      the indexer gives its samples their delta: the first one
 *               delta = its values; the next ones the change since the
 *               run's latest sample; one older than that (late) or a copy
 *               of it (a replay), delta 0, so a run's deltas always add up
 *               to its latest values (its last change shows at the next
 *               sample after the late one);
 *   ended       its kickstart.inv.end passed: a closing sample was made, at
 *               the end's time (not before the last sample's), with the
 *               counters of the last sample, the gauges at zero and their
 *               negative as delta (`"sample": "closing"`, event_id
 *               <end's event_id>-closing), as pano-monitor's last sample
 *               brings them to zero; later samples get delta 0;
 *   raw         its first sample came without delta and without a start
 *               before it: it is stored as it came, all of it, and read by
 *               pano-query's raw path, which ends its gauges after its last
 *               sample (nothing else would: a run pano-query knows nothing
 *               of, with no end, is never lost);
 *   publisher   its samples carry their own delta: left alone.
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct deltas deltas;
typedef struct delta_event delta_event;

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

/* ---- one event ------------------------------------------------------------ */

/* What a run event says (kickstart.inv.start, .online or .end with a
 * hostname and a pid, its wf_uuid already normalized), read at its Kafka
 * partition and offset; NULL for any other event. */
delta_event *delta_event_read(const pano_json *ev, const char *wf_uuid, int partition,
                              int64_t offset);
void delta_event_free(delta_event *e);

/* ---- a batch -------------------------------------------------------------- */

/* Start on the run events of a batch, in Kafka order (kept until the last
 * deltas_apply()). */
void deltas_begin(deltas *d, delta_event *const *events, size_t n);
/* The next round of lookups as an _msearch body appended to body; how many
 * searches it holds, 0 when no lookup is left. */
size_t deltas_plan(deltas *d, pano_buf *body);
/* Apply the answer to that round; -1 (why in err) when it is not a usable
 * one: then start again from deltas_begin(). */
int deltas_read(deltas *d, const char *answer, size_t len, char *err, size_t errlen);

/* What one event's passing makes, all NULL or false when nothing. */
typedef struct {
    char *doc;     /* the sample's document with its delta, replacing doc */
    char *closing; /* a closing sample (an event, JSON) to index after it */
    bool late;     /* delta 0: the batch must reach the store after the one
                      before it, in one bulk request, so that an original
                      still in flight is stored before its copy */
} delta_change;

/* Handle the next event of the batch: e, its prepared document doc (JSON,
 * doc_len bytes) and the event as it came (json, json_len). Free what out
 * holds with free(). */
void deltas_apply(deltas *d, const delta_event *e, const char *doc, size_t doc_len,
                  const char *json, size_t json_len, delta_change *out);

/* ---- the table ------------------------------------------------------------ */

/* Forget the runs and workflows of a partition taken away. */
void deltas_forget_partition(deltas *d, int partition);
const deltas_counters *deltas_counts(const deltas *d);
/* Runs in the table. */
size_t deltas_runs(const deltas *d);

#endif
