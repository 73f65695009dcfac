/*
 * summary.h - the per-run summaries pano-indexer keeps as events arrive and
 * pano-query reads instead of reducing a workflow's events at every call.
 *
 * A summary is one Elasticsearch document per run, in the partitions of
 * the stream it summarizes, <prefix>summary-<stream>-<period> (the period
 * of each event's own ts, in that stream's partitioning; so a run whose
 * events span two periods has a document in each, merged by the reader),
 * routed by wf_uuid, with a deterministic _id (pano_summary_part.id):
 *
 *   run    stream kickstart: a pano-monitor run, per (wf_uuid, dag_job_id,
 *          hostname, pid), from its kickstart.inv.* events (samples too);
 *   inst   stream stampede: a pegasus-monitord job instance, per (wf_uuid,
 *          job_id, job_inst_id), from its stampede.job_inst.* and
 *          stampede.inv.end events (both keys present);
 *   side   streams darshan and transfer: the darshan.* or transfer.* events
 *          per (wf_uuid, dag_job_id, hostname).
 *
 * An event's contribution, several merged, and a stored document have one
 * form: groups of fields, each merged its own way:
 *
 *   set     the key: k (run, inst, side), id, wf, job, host, pid, inst
 *   min     smallest number          max    largest number
 *   add     sum (counts: applied only for an event that was created, not
 *           for a replay already stored)
 *   least   smallest string (byte order)
 *   latest  name -> {"o": [numbers], "i": arrival, "v": {values}}: the one
 *           with the greatest o (compared in order, null below any number),
 *           of those the one that arrived first (the smallest i)
 *   put     name -> {key: value}: the union (keyed by event_id)
 *
 * Every merge but add is idempotent and commutative, so the same events
 * applied twice or in any order give the same document. add is made exact
 * by counting only events that were created (not a replay already stored)
 * and by the writer's token (op: where the update's events came from)
 * that the document keeps among its last 16 ops, so that an update applied
 * again (its answer lost, then retried) changes nothing. The indexer reads
 * a document, applies a batch's merged contribution with pano_summary_apply
 * and writes it back only if nobody wrote it meanwhile (if_seq_no); the
 * reader merges a run's documents of two periods with pano_summary_merge.
 * One merge, in C, for both.
 *
 * The fields, per kind (event fields in parentheses):
 *   run   min t0 (ts, every event), first (ts of .start and .end);
 *         max last (ts of .start/.end), iv (interval of .start/.end),
 *         end (1 once an .end came), exit sig dur cpu rss rch wch ns
 *         (.end's exitcode signal duration remote_cpu_time maxrss
 *         final.rchar final.wchar samples), slast siv speak (.online's ts
 *         interval rss_peak); add n (events), sn (samples); least xf site
 *         exe (xformation site exe of .start/.end); latest s (the latest
 *         .online: ut st rch wch rss vm pr th = utime stime rchar wchar rss
 *         vm procs threads)
 *   inst  min t0, sub (ts of submit.start), ist (start_time of inv.end);
 *         max last (ts), exec (ts of main.start), irss (maxrss of inv.end);
 *         add n; latest st (the latest state event by ts, js_id: e = its
 *         name after "stampede.job_inst.", ts, status), me (main.end:
 *         x = exitcode, ld = local_dur, ts), pe (post.end: x, ts), h (the
 *         first host.info: h = hostname), si (the first event with a site:
 *         s), iv (the first inv.end: xf = transformation, exe =
 *         executable); put inv (event_id -> [dur, remote_cpu_time] of each
 *         inv.end). inv.end counts only with inv_id >= 0 (the job itself,
 *         not its PRE/POST scripts), as pegasus-statistics counts.
 *   side  min t0; add n, d (darshan.*), t (transfer.*)
 */
#ifndef PANO_SUMMARY_H
#define PANO_SUMMARY_H

#include "json.h"
#include "partition.h"

#include <stdbool.h>
#include <stddef.h>

/* A document's _id: a letter of its kind, '-', 32 hex digits. */
#define PANO_SUMMARY_ID_LEN 34

typedef struct {
    int stream;                       /* its summary stream (partition.h), -1: none */
    char id[PANO_SUMMARY_ID_LEN + 1]; /* the document's _id */
    pano_json *part;                  /* the contribution, in the form above */
} pano_summary_part;

/* The stampede.job_inst.* events that move a job instance from one state
 * to another (NULL-terminated). */
extern const char *const pano_job_inst_state_events[];

/* Whether events of this stream (its index in pano_streams) have
 * summaries, in the summary stream of that name (samples belong to
 * kickstart's runs and so to its stream). */
bool pano_summary_stream(int stream);

/* The base name of a summary stream's partitions: <prefix>summary-<stream>. */
void pano_summary_base(const char *prefix, int stream, char *out, size_t size);

/* The contribution of one event (a parsed object; its wf_uuid normalized
 * and ts as the indexer read them; arrival, a string that orders it after
 * the events of its run that came before it: the indexer's Kafka offset,
 * zero-padded, as a run's events come through one partition). Of events
 * equal in a latest entry's order the first to arrive is kept, as
 * Elasticsearch's top_hits keep the first indexed. False, with out->part
 * NULL, when the event belongs to no summary. */
bool pano_summary_of_event(const pano_json *event, const char *wf_uuid, double ts,
                           const char *arrival, pano_summary_part *out);
void pano_summary_part_free(pano_summary_part *p);

/* Merge from into into (both in the form above); add's counts only when
 * with_counts. from is left as it is; keys other than the groups' are
 * ignored. */
void pano_summary_merge(pano_json *into, const pano_json *from, bool with_counts);

/* Apply an update (a contribution, or several merged with their counts
 * already chosen) to a stored document (an empty object for a new one)
 * under the writer's token op: false, with doc unchanged, when the document
 * already holds op (this very update was applied before); else doc is
 * merged and holds op among its last 16. */
bool pano_summary_apply(pano_json *doc, const pano_json *update, const char *op);

#endif
