/*
 * partition.h - where an event is stored, for how long, and where a reader
 * finds it: pano's time-partitioned indices.
 *
 * Events are stored by stream, their family (kickstart, stampede, darshan,
 * transfer, custom, other) with pano-monitor's samples (kickstart.inv.online,
 * most of the bytes, often kept for less time) apart as "samples", plus
 * "unassigned" (no valid wf_uuid) and "dead-letter" (rejected messages). A
 * stream's indices are named <base>-<period>: the base is <prefix><stream>
 * (pano-kickstart), the period the one of the event's own ts, in UTC:
 * 2026 (year), 2026.11 (month) or 2026.11.25 (day). A replayed event lands
 * where the original did, so _id = event_id keeps it once; and a store is
 * emptied of old data by deleting whole indices.
 *
 * Each stream's period and retention come from two keys, each
 * "DEFAULT[,STREAM=VALUE...]" (e.g. "400d,samples=90d"):
 *   pano.indexer.partition   day, month or year
 *   pano.indexer.retention   a duration (90d, 2y; 0 keeps forever); an
 *                            index goes when its period ended longer ago
 */
#ifndef PANO_PARTITION_H
#define PANO_PARTITION_H

#include "config.h"
#include "event.h"
#include "json.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum { PANO_PERIOD_DAY, PANO_PERIOD_MONTH, PANO_PERIOD_YEAR } pano_period;

#define PANO_N_STREAMS 9
/* kickstart samples stampede darshan transfer custom other unassigned dead-letter:
 * first the PANO_N_EVENT_STREAMS streams events are stored in (a reader of
 * workflows searches these), then unassigned and dead-letter. */
extern const char *const pano_streams[PANO_N_STREAMS + 1];
enum {
    PANO_N_EVENT_STREAMS = 7,
    PANO_STREAM_UNASSIGNED = PANO_N_EVENT_STREAMS,
    PANO_STREAM_DEAD_LETTER = 8,
};

/* The stream of an event: "samples" for kickstart.inv.online, else its family. */
const char *pano_event_stream(const char *event_name);
/* Its position in pano_streams, or -1. */
int pano_stream_index(const char *stream);

typedef struct {
    pano_period period;
    double retention; /* seconds; 0: kept forever */
} pano_stream_policy;

/* Every stream's policy from pano.indexer.partition and .retention. 0, or -1
 * with a message in err (an unknown stream, a value that is not one). */
int pano_stream_policies(const pano_config *cfg, pano_stream_policy out[PANO_N_STREAMS],
                         char *err, size_t errlen);

/* The period holding ts: its suffix ("2026.11"), its start and the next
 * one's start (epoch seconds, UTC). */
void pano_period_suffix(pano_period p, double ts, char *out, size_t size);
double pano_period_start(pano_period p, double ts);
double pano_period_next(pano_period p, double ts);
/* A suffix of p's form back into its period: false when it is not one. */
bool pano_period_parse(pano_period p, const char *suffix, double *start, double *end);

/* True when the period holding ts ended more than the retention before now:
 * its index is deleted (or due to be), so an event there would not stay. */
bool pano_period_expired(const pano_stream_policy *policy, double ts, double now);

/* Where a store keeps one event, and whether it can: the checks every
 * store applies (Elasticsearch's through pano-indexer, the embedded one):
 * an event name, an event_id (shorter than PANO_EVENT_ID_MAX), a ts in
 * epoch seconds between 1970 and 9999, and a period not past its stream's
 * retention at time now. Without a valid wf_uuid the event belongs to the
 * stream "unassigned". */
#define PANO_EVENT_ID_MAX 192
typedef enum { PANO_PLACE_OK, PANO_PLACE_INVALID, PANO_PLACE_EXPIRED } pano_place_status;
typedef struct {
    const char *event;    /* its name (in the event given) */
    const char *event_id; /* in the event given */
    double ts;
    int stream;                         /* in pano_streams */
    char wf_uuid[PANO_WF_UUID_LEN + 1]; /* normalized, "" when not valid */
} pano_place;

/* OK, or why not in reason. policies: PANO_N_STREAMS of them. */
pano_place_status pano_event_place(const pano_json *ev, const pano_stream_policy *policies,
                                   double now, pano_place *out, char *reason,
                                   size_t reason_len);

#endif
