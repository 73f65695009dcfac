/*
 * sink.h - where a publisher's events go.
 *
 * Every publisher (pano-monitor, pano-darshan, pano-transfer, pano-emit)
 * sends events through a sink built from the configuration:
 *
 *   - pano.amqp.url set: AMQP with publisher confirms (amqp_client.h). The connection
 *     is opened on first use and reopened once when it fails; an event counts
 *     as sent only when the broker confirmed it and routed it to a queue.
 *   - otherwise: one JSON object per line, appended to pano.output ("-" is
 *     standard output), or to the program's default output.
 */
#ifndef PANO_SINK_H
#define PANO_SINK_H

#include "config.h"
#include "json.h"

typedef struct pano_sink pano_sink;

/* default_output is used when neither pano.amqp.url nor pano.output is set
 * ("-" for stdout, "/dev/stderr", ...). Returns NULL with a message in err
 * when the configuration is unusable (bad URL, unreadable password file,
 * output file that cannot be opened). A broker that is down is not an error
 * here: sends will fail and say so. */
pano_sink *pano_sink_open(const pano_config *cfg, const char *default_output, char *err,
                          size_t errlen);

/* Send one event. Returns 0 once it is delivered (confirmed by the broker,
 * or written and flushed), -1 with a message in err otherwise. */
int pano_sink_send(pano_sink *sink, const pano_json *event, char *err, size_t errlen);

/* Same for an event that is already serialized. */
int pano_sink_send_raw(pano_sink *sink, const char *routing_key, const char *event_id,
                       const char *json, size_t len, char *err, size_t errlen);

/* "amqp://user:***@host:5672/vhost/exchange" or the output path. */
const char *pano_sink_describe(const pano_sink *sink);

void pano_sink_close(pano_sink *sink);

#endif
