/*
 * event.h - the pano event envelope.
 *
 * Every event is a JSON object (json.h) that starts with the same envelope:
 *
 *   event          dotted name, also the AMQP routing key (kickstart.inv.start)
 *   ts             epoch seconds with microseconds
 *   event_id       unique id, fixed when the event is built, so a resent event
 *                  keeps it; the indexer uses it as the Elasticsearch _id
 *   seq            counter per source (per publishing process), from 1
 *   hostname
 *   wf_uuid, wf_label, dag_job_id, condor_job_id, xformation, task_id, site,
 *   rank           the workflow context Pegasus puts in each job's environment
 *                  (PEGASUS_WF_UUID, ..., CONDOR_JOBID; PANO_* equivalents;
 *                  see config_keys.c). Unset fields are left out.
 *
 * Field names and units follow Panorama/kickstart, so existing queries work.
 */
#ifndef PANO_EVENT_H
#define PANO_EVENT_H

#include "config.h"
#include "clock.h"
#include "json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest event name accepted (it is an AMQP routing key, a shortstr). */
#define PANO_EVENT_NAME_MAX 255

typedef struct pano_source pano_source;

/* A source of events: the context read from configuration, the host name, a
 * random instance id and the seq counter. */
pano_source *pano_source_new(const pano_config *cfg);
void pano_source_free(pano_source *src);
const char *pano_source_wf_uuid(const pano_source *src);

/* When no wf_uuid is configured, pano_source_new() warns and makes one up
 * (a random UUID), so the run's events stay findable and routable. */

/* A new event with its envelope filled in, ts = now. */
pano_json *pano_event_new(pano_source *src, const char *name);
/* True for the envelope's own keys (event, ts, event_id, seq, hostname, the
 * context fields and rank): whoever publishes an event sets them. */
bool pano_event_is_envelope_key(const char *key);

/* Pegasus's MONITORING_PAYLOAD protocol: a task adds events to its job by
 * printing, anywhere in its stdout or stderr,
 *   @@@MONITORING_PAYLOAD - START@@@{"ts": 1700000000,
 *     "monitoring_event": "darshan.perf", "payload": [{...}]}@@@MONITORING_PAYLOAD - END@@@
 * pano-monitor and pegasus-monitord turn each payload item into an event. */
#define PANO_PAYLOAD_START "@@@MONITORING_PAYLOAD - START@@@"
#define PANO_PAYLOAD_END "@@@MONITORING_PAYLOAD - END@@@"
/* Append the block that carries this event (markers included, no newline):
 * ts as whole seconds, monitoring_event = its name, and one payload item
 * holding its fields without the envelope, which the reader sets. */
void pano_event_payload_block(pano_buf *out, const pano_json *event);

/* Names are dot-separated words of letters, digits, '_' and '-'. */
bool pano_event_name_valid(const char *name);

/* The family of an event name: its first word when it is one of kickstart,
 * darshan, transfer, stampede or custom, else "other". Families choose the
 * Kafka topic and the Elasticsearch index. */
const char *pano_event_family(const char *name);

/* Every family, "other" last, NULL-terminated: PANO_N_FAMILIES names. */
#define PANO_N_FAMILIES 6
extern const char *const pano_event_families[];

/* A canonical workflow UUID: 36 characters and the NUL. */
#define PANO_WF_UUID_LEN 36

/* Accept exactly 8-4-4-4-12 hexadecimal digits (either case) and write the
 * lowercase form to out (what indices, routing and queries use). Returns
 * false for anything else, with out empty: a wf_uuid becomes part of a name
 * or a query only once this accepted it. */
bool pano_wf_uuid_normalize(const char *in, char out[PANO_WF_UUID_LEN + 1]);

/* A random (version 4) UUID, lowercase, 36 characters. */
void pano_uuid4(char out[37]);

/* A deterministic id for content that arrived without one: the first 128
 * bits of SHA-256 over the bytes, as 32 hex digits. */
void pano_event_id_of(const void *data, size_t len, char out[33]);

/* The 64-bit FNV-1a hash of a string: an event_id or a run's key, told
 * apart without keeping it; of n bytes at p. */
uint64_t pano_hash_str(const char *s);
uint64_t pano_hash_bytes(const void *p, size_t n);

/* The millisecond an event of time ts (epoch s) is stored under: the
 * indexer writes @timestamp to the microsecond (pano_bulk_timestamp: whole
 * seconds and rounded microseconds), Elasticsearch keeps whole milliseconds
 * of it (aggregations on @timestamp see these); the embedded store counts
 * its events per second of these (store_figures.h). */
int64_t pano_event_ms(double ts);

#endif
