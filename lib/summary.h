/*
 * summary.h - the per-run summaries pano-indexer keeps as events arrive and
 * pano-query reads instead of reducing a workflow's events at every call.
 *
 * A summary is one Elasticsearch document per run, in the partitions of
 * the stream it summarizes, <prefix>summary-<stream>-<period> (the period
 * of each event's own ts, in that stream's partitioning; so a run whose
 * events span two periods has a document in each, merged by the reader),
 * routed by wf_uuid, with a deterministic _id (pano_run_summary.id):
 *
 *   run    stream kickstart: a pano-monitor run, per (wf_uuid, dag_job_id,
 *          hostname, pid), from its kickstart.inv.* events (samples too);
 *   inst   stream stampede: a pegasus-monitord job instance, per (wf_uuid,
 *          job_id, job_inst_id), from its stampede.job_inst.* and
 *          stampede.inv.end events (both keys present);
 *   side   streams darshan and transfer: the darshan.* or transfer.* events
 *          per (wf_uuid, dag_job_id, hostname).
 *
 * An event's contribution, several merged, and a stored document are one
 * struct (pano_run_summary); as JSON (the document), groups of fields, each
 * merged its own way:
 *
 *   set     the key: k (run, inst, side), id, wf, job, host, pid, inst;
 *           open, failed (pano_summary_open and pano_summary_failed of
 *           the document, derived when it is written, never merged)
 *   min     smallest number          max    largest number
 *   add     sum (counts: applied only for an event that was created, not
 *           for a replay already stored)
 *   least   smallest string (byte order)
 *   latest  name -> {"o": [numbers], "i": arrival, "v": {values}}: the one
 *           with the greatest o (compared in order, null below any number),
 *           of those the one that arrived first (the smallest i)
 *   put     inv -> {event_id: [dur, remote_cpu_time]}: the union
 *   ops     the writers' last 16 tokens (pano_summary_apply)
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
 * Numbers are written as integers when they are whole.
 */
#ifndef PANO_SUMMARY_H
#define PANO_SUMMARY_H

#include "buf.h"
#include "event.h"
#include "json.h"
#include "partition.h"

#include <stdbool.h>
#include <stddef.h>

/* A document's _id: a letter of its kind, '-', 32 hex digits. */
#define PANO_SUMMARY_ID_LEN 34
/* The writers' tokens a document keeps. */
#define PANO_SUMMARY_OPS 16

typedef enum { PANO_SUMMARY_RUN, PANO_SUMMARY_INST, PANO_SUMMARY_SIDE } pano_summary_kind;

/* The numbers, by group: set, min, max, add. */
typedef enum {
    PANO_SF_PID, PANO_SF_INST,
    PANO_SF_T0, PANO_SF_FIRST, PANO_SF_SUB, PANO_SF_IST,
    PANO_SF_LAST, PANO_SF_IV, PANO_SF_END, PANO_SF_EXIT, PANO_SF_SIG, PANO_SF_DUR, PANO_SF_CPU,
    PANO_SF_RSS, PANO_SF_RCH, PANO_SF_WCH, PANO_SF_NS, PANO_SF_SLAST, PANO_SF_SIV, PANO_SF_SPEAK,
    PANO_SF_EXEC, PANO_SF_IRSS,
    PANO_SF_N, PANO_SF_SN, PANO_SF_D, PANO_SF_T,
    PANO_SF_COUNT
} pano_summary_field;

/* The strings: set job, host; least xf, site, exe. */
typedef enum { PANO_ST_JOB, PANO_ST_HOST, PANO_ST_XF, PANO_ST_SITE, PANO_ST_EXE, PANO_ST_COUNT } pano_summary_text;

/* The latest entries, and the places of their values (v) and strings (t). */
typedef enum { PANO_SL_S, PANO_SL_ST, PANO_SL_ME, PANO_SL_PE, PANO_SL_H, PANO_SL_SI, PANO_SL_IV, PANO_SL_COUNT } pano_summary_latest_name;
enum { PANO_S_UT, PANO_S_ST, PANO_S_RCH, PANO_S_WCH, PANO_S_RSS, PANO_S_VM, PANO_S_PR, PANO_S_TH };
enum { PANO_STATE_TS, PANO_STATE_STATUS }; /* st: t[0] = e */
enum { PANO_ME_X, PANO_ME_LD, PANO_ME_TS };
enum { PANO_PE_X, PANO_PE_TS };          /* h: t[0] = h; si: t[0] = s; iv: t[0] = xf, t[1] = exe */
#define PANO_SUMMARY_VALUES 8
#define PANO_SUMMARY_TEXTS 2

typedef struct {
    bool has;
    double o[2];  /* the order, NAN for null; o[1] only for st, me and pe */
    char i[24];   /* when it arrived ("" when not read back) */
    double v[PANO_SUMMARY_VALUES];  /* NAN: absent */
    char *t[PANO_SUMMARY_TEXTS];    /* NULL: absent */
} pano_summary_latest;

typedef struct {
    char *event_id;
    double dur, cpu; /* NAN: absent */
} pano_summary_inv;

typedef struct {
    pano_summary_kind kind;
    int stream;                          /* its summary stream (partition.h), -1: none */
    char id[PANO_SUMMARY_ID_LEN + 1];    /* the document's _id */
    char wf[PANO_WF_UUID_LEN + 1];       /* the workflow */
    double v[PANO_SF_COUNT];             /* NAN: absent */
    char *t[PANO_ST_COUNT];              /* NULL: absent */
    pano_summary_latest latest[PANO_SL_COUNT];
    pano_summary_inv *inv;
    size_t ninv, cap_inv;
    char (*ops)[48];                     /* a document's tokens (NULL: none yet) */
    size_t nops;
} pano_run_summary;

/* The stampede.job_inst.* events that move a job instance from one state
 * to another (NULL-terminated). */
extern const char *const pano_job_inst_state_events[];

/* A kind from its name in a document's set.k ("run", "inst", "side"):
 * false for another name or NULL. */
bool pano_summary_kind_parse(const char *name, pano_summary_kind *out);
/* A kind's name, as pano_summary_kind_parse reads it. */
const char *pano_summary_kind_name(pano_summary_kind kind);

/* Whether events of this stream (its index in pano_streams) have
 * summaries, in the summary stream of that name (samples belong to
 * kickstart's runs and so to its stream). */
bool pano_summary_stream(int stream);

/* The base name of a summary stream's partitions: <prefix>summary-<stream>. */
void pano_summary_base(const char *prefix, int stream, char *out, size_t size);

/* An empty summary (nothing known), and freeing what one holds (then it is
 * empty again). */
void pano_summary_init(pano_run_summary *s);
void pano_summary_clear(pano_run_summary *s);

/* The contribution of one event (a parsed object; its wf_uuid normalized
 * and ts as the indexer read them; arrival, a string that orders it after
 * the events of its run that came before it: the indexer's Kafka offset,
 * zero-padded, as a run's events come through one partition). Of events
 * equal in a latest entry's order the first to arrive is kept, as
 * Elasticsearch's top_hits keep the first indexed. False, with out empty,
 * when the event belongs to no summary. */
bool pano_summary_of_event(const pano_json *event, const char *wf_uuid, double ts,
                           const char *arrival, pano_run_summary *out);

/* The arrival of a contribution made before it was known (given as ""). */
void pano_summary_set_arrival(pano_run_summary *s, const char *arrival);

/* Merge from into into (of one document); add's counts only when
 * with_counts. The key (kind, id, wf, set) is taken from from when into
 * has none. */
void pano_summary_merge(pano_run_summary *into, const pano_run_summary *from, bool with_counts);

/* Apply an update (a contribution, or several merged with their counts
 * already chosen) to a stored document (empty for a new one) under the
 * writer's token op: false, with doc unchanged, when the document already
 * holds op (this very update was applied before); else doc is merged and
 * holds op among its last 16. */
bool pano_summary_apply(pano_run_summary *doc, const pano_run_summary *update, const char *op);

/* Whether a run or an instance has not ended by this document alone: a
 * run without its .end, an instance without its verdict (the POST
 * script's post.end, or a main.end as its latest state, with an exit
 * code). A side document is never open. Of a run's documents of several
 * periods, merged, one that is open has at least one document open by
 * itself: the merge takes each field's latest or largest, so the document
 * that holds the merged latest state, or every document, would be ended
 * too. pano-query reads the jobs of open documents alone where that is
 * all it needs (query.md). */
bool pano_summary_open(const pano_run_summary *s);

/* Whether a run or an instance ended badly by this document alone: a run's
 * .end with a signal, or an exit code other than 0 or none; an instance's
 * main.end or post.end with an exit code other than 0 (a wider net than
 * its verdict). A run whose row pano-query shows failed or killed has a
 * document open or failed by itself, as above. */
bool pano_summary_failed(const pano_run_summary *s);

/* The document as JSON (one line), appended to out. */
void pano_summary_write(const pano_run_summary *s, pano_buf *out);
/* A document read back (its _source; fields left out of it stay absent)
 * into out (made empty first): from a tree, or from its text with no tree
 * made. False, with out empty, when it is not a summary. */
bool pano_summary_read(const pano_json *doc, pano_run_summary *out);
bool pano_summary_parse(const char *json, size_t len, pano_run_summary *out);

/* Reading a document from JSON events (json.h), for a reader that finds
 * documents inside a larger answer (Elasticsearch's pages of hits): start,
 * then pano_summary_reader_events with the reader as user from the
 * document's opening brace to its closing one (done is then true), then
 * finish, which says what pano_summary_read would. The fields are the
 * reader's own. */
#define PANO_SUMMARY_READER_DEPTH 8
typedef struct {
    int in, sub, count;
} pano_summary_reader_frame;
typedef struct {
    pano_run_summary *out;
    pano_summary_reader_frame frames[PANO_SUMMARY_READER_DEPTH];
    int depth;
    int want;          /* the key slot the last key named, -1: none */
    int to, to_index;  /* where the next value goes */
    char kind[8];
    bool has_kind, has_id;
    bool done;         /* the document's object closed */
} pano_summary_reader;
extern const pano_json_events pano_summary_reader_events;
void pano_summary_reader_start(pano_summary_reader *r, pano_run_summary *out);
bool pano_summary_reader_finish(pano_summary_reader *r);

#endif
