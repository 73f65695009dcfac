/*
 * metric.h - custom metrics from any program: custom.metric events.
 *
 *   pano_metrics *m = pano_metrics_open(NULL, err, sizeof err);
 *   const char *tags[] = {"phase=solve", "grid=512", NULL};
 *   pano_metric(m, "residual", 1.5e-6, 1, tags, err, sizeof err);
 *   pano_metrics_close(m);
 *
 * Events carry the same envelope as every pano event, so the workflow
 * context (PEGASUS_WF_UUID, PEGASUS_DAG_JOB_ID, the MPI rank, ...) that
 * Pegasus and pano-monitor put in a job's environment comes along, and go
 * through the same sink (broker with confirms, spool when it is down, or
 * JSON lines). pano-emit is the command-line form.
 *
 * Inside a task that pano-monitor runs (PANO_METRICS_SOCKET set), a metric
 * goes instead as one DogStatsD line to the monitor's metrics socket
 * (statsd.h), which sends it with the job's envelope on its own
 * connection: no connection here, and a send that never blocks (a full
 * socket drops the metric: -1, counted by pano_metrics_dropped). A metric
 * whose name holds ':', '|' or a line break, or a tag value ',' , '|' or a
 * line break, goes through the sink, as every metric does when an output
 * file (pano.output) was asked for.
 *
 * Levels work like Dragon's telemetry levels: every metric has a level
 * (1 = the default, higher = more detailed) and only those at or below the
 * configured pano.monitor.level (PANO_MONITOR_LEVEL, pano-monitor --level)
 * are sent; the others cost a comparison.
 *
 * An event:
 *   {"event":"custom.metric", <envelope>, "name":"residual", "value":1.5e-06,
 *    "level":1, "tags":{"phase":"solve","grid":"512"}, "pid":4242}
 */
#ifndef PANO_METRIC_H
#define PANO_METRIC_H

#include "config.h"
#include "event.h"
#include "json.h"

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define PANO_METRIC_EVENT "custom.metric"
#define PANO_METRIC_NAME_MAX 255
#define PANO_METRICS_SOCKET_ENV "PANO_METRICS_SOCKET"

typedef struct pano_metrics pano_metrics;

/* cfg NULL: read the configuration (PANO_CONFIG file, then the
 * environment). Events go where every publisher's go (sink.h: the broker,
 * pano.output, else the embedded store). Returns NULL with a message in
 * err when events cannot be sent at all (bad URL, unwritable output or
 * store). */
pano_metrics *pano_metrics_open(const pano_config *cfg, char *err, size_t errlen);
void pano_metrics_close(pano_metrics *m);

/* Metrics dropped because the metrics socket was full. */
uint64_t pano_metrics_dropped(const pano_metrics *m);

/* Whether a metric of this level would be sent. */
bool pano_metrics_enabled(const pano_metrics *m, int level);

/* Send one metric. tags are "key=value" strings, NULL-terminated (tags may
 * be NULL). Returns 0 when sent (or spooled), 1 when its level is above the
 * configured one (not sent), -1 with a message in err (invalid name, value
 * or tag; or the sink failed). */
int pano_metric(pano_metrics *m, const char *name, double value, int level,
                const char *const *tags, char *err, size_t errlen);

/* Build the event without sending it; NULL with a message in err when the
 * name, value, level or a tag is invalid. */
pano_json *pano_metric_event(pano_source *src, const char *name, double value, int level,
                             const char *const *tags, char *err, size_t errlen);

/* Replay the spool of the configured broker (see sink.h). */
int pano_metrics_flush_spool(pano_metrics *m, double lock_wait, char *err, size_t errlen);

#endif
