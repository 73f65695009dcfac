/*
 * run_delta.h - how a job run's samples that come without `delta` get one:
 * the state of a run and what each of its events makes, shared by
 * pano-indexer (indexer/deltas.h, which keeps the states in a table and
 * recovers them from Elasticsearch) and the embedded store (store.h, which
 * reads them back from its file).
 *
 * A run is (wf_uuid, dag_job_id, hostname, pid), as pano-query keys runs;
 * its events are kickstart.inv.start, .online and .end. Its state:
 *
 *   none        nothing known of it;
 *   announced   its kickstart.inv.start passed, no sample yet;
 *   ingest      its samples get their delta: the first one delta = its
 *               values; the next ones the change since the run's latest
 *               sample; one older than that (late) or a copy of it (a
 *               replay), delta 0, so that a run's deltas always add up to
 *               its latest values;
 *   ended       its kickstart.inv.end passed: a closing sample was made, at
 *               the end's time (not before the last sample's), with the
 *               counters of the last sample, the gauges at zero and their
 *               negative as delta (`"sample": "closing"`, event_id
 *               <end's event_id>-closing), as pano-monitor's last sample
 *               brings them to zero; later samples get delta 0;
 *   raw         its first sample came without delta and without a start
 *               before it: stored as it came, read by pano-query's raw
 *               path;
 *   publisher   its samples carry their own delta: left alone.
 *
 * The samples given a delta say who made it (`delta_source`: "indexer" or
 * "store"), and where ("delta_offset", the indexer's Kafka offset).
 */
#ifndef PANO_RUN_DELTA_H
#define PANO_RUN_DELTA_H

#include "arena.h"
#include "event.h"
#include "json.h"
#include "sample.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    PANO_RUN_NONE = 0,
    PANO_RUN_ANNOUNCED,
    PANO_RUN_INGEST,
    PANO_RUN_ENDED,
    PANO_RUN_RAW,
    PANO_RUN_PUBLISHER,
} pano_run_mode;

typedef struct {
    uint8_t mode;     /* pano_run_mode */
    double last_ts;   /* the latest sample's ts (ingest, ended) */
    uint64_t last_id; /* the hash of its event_id (pano_hash_str) */
    double last[PANO_SAMPLE_NVALUES];
} pano_run_state;

typedef enum { PANO_RUN_START, PANO_RUN_SAMPLE, PANO_RUN_END } pano_run_event_kind;

/* What a run event says. */
typedef struct {
    pano_run_event_kind kind;
    bool own_delta; /* a sample with its publisher's delta */
    bool clash;     /* a sample that says delta_source, _offset or _after_end itself */
    int partition;  /* where it was read (the indexer's Kafka partition and */
    int64_t offset; /* offset; -1 and -1 elsewhere) */
    double ts;
    uint64_t id_hash;
    unsigned present; /* bit i: it has pano_sample_values[i] (read only for a */
    double values[PANO_SAMPLE_NVALUES]; /* sample without its own delta) */
    int64_t pid;
    char wf[PANO_WF_UUID_LEN + 1];
    const char *job;  /* NULL: no dag_job_id */
    const char *host;
    char *key;        /* wf, job, host and pid: the run */
    char text[];      /* key, job and host */
} pano_run_event;

/* The run event ev is (kickstart.inv.start, .online or .end with a hostname
 * and a pid, its wf_uuid already normalized), read at partition and offset;
 * NULL for any other event. */
pano_run_event *pano_run_event_read(const pano_json *ev, const char *wf_uuid, int partition,
                                    int64_t offset);
void pano_run_event_free(pano_run_event *e);

/* The state of a run from the latest of its samples and its start that
 * were stored (the document src), deltas being made by source. */
void pano_run_state_of(const pano_json *src, const char *source, pano_run_state *r);

/* The members a sample's document gets in front of its own. */
typedef struct {
    double delta[PANO_SAMPLE_NVALUES];
    const char *source;
    int64_t offset;  /* delta_offset, or -1: none */
    bool after_end;  /* delta_after_end */
    bool own_follow; /* the document's own members follow, as they came (not
                        written again without a delta_source of their own) */
} pano_run_made;

/* What one event's passing makes, all NULL or false when nothing. */
typedef struct {
    char *doc;     /* the sample's document with its delta, replacing doc */
    pano_run_made made_members; /* what doc has in front of its own */
    char *closing; /* a closing sample (an event, JSON) to store after it */
    bool made;     /* doc holds a delta made here */
    bool late;     /* delta 0: the sample is older than the run's latest or a
                      copy of it (pano-indexer then sends its batch after the
                      one before it, so that an original still in flight is
                      stored before its copy) */
} pano_run_change;

/* Pass event e of run r (state none when nothing is known of the run):
 * doc, its prepared document (doc_len bytes), and json, the event as it
 * came. r becomes the run's next state (none: forget it); out what it
 * makes, marked as made by source. Free what out holds with free(). */
void pano_run_apply(pano_run_state *r, const pano_run_event *e, const char *source,
                    const char *doc, size_t doc_len, const char *json, size_t json_len,
                    pano_run_change *out);

/* The tree parsing out->doc would give, in arena (read-only, until it is
 * reset), without parsing the document again: the members made here, then
 * those of doc, the document's tree as read from the very bytes given to
 * pano_run_apply (its strings as parsing gives them: no \u escape in
 * them, no key twice). NULL when out->doc must be parsed whole. */
const pano_json *pano_run_change_tree(const pano_run_change *ch, const pano_json *doc,
                                      pano_arena *arena);

#endif
