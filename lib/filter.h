/*
 * filter.h - which events a publisher sends: the event filter and the
 * per-publisher on/off toggles.
 *
 * Every publisher (pano-monitor, pano-darshan, pano-transfer, pano-emit)
 * sends through a sink (sink.h), and the sink asks the filter first. An
 * event the filter refuses is not an error and is not spooled: it is simply
 * not sent (logged at debug).
 *
 *   pano.events                 (pegasus.catalog.workflow.amqp.events)
 *       Comma-separated patterns; an event is sent when any pattern matches
 *       its name. Unset, empty or "*" alone: every event. As in Pegasus each
 *       pattern is a regular expression searched anywhere in the name
 *       (POSIX extended syntax, like Python's re.search for these
 *       patterns): "stampede.*" and "inv.end" match by substring, anchor
 *       with ^ and $ ("^kickstart\.inv\.end$"). A pattern that is not a
 *       valid regular expression, or that starts with * or ? (which Pegasus
 *       rejects: "*.inv.*" raises there), is a shell glob matched against
 *       the whole name, "*" matching dots too ("*.inv.*", "kickstart.inv.?nd").
 *
 *   pano.<publisher>.enabled    pano.monitor.enabled, pano.darshan.enabled,
 *       pano.transfer.enabled, pano.emit.enabled: false turns that
 *       publisher's events off entirely (pano-monitor still runs its task,
 *       pano-transfer still copies). The publisher is the program name
 *       given to pano_cli_init()/pano_log_init() ("pano-monitor" ->
 *       pano.monitor.enabled); programs without such a key are always on.
 *
 *   pano.encoding               (pegasus.monitord.encoding)
 *       pano always sends JSON. Accepted so Pegasus properties files work
 *       unchanged; any other value is warned about with an AMQP sink (as
 *       monitord forces json for AMQP) and ignored.
 */
#ifndef PANO_FILTER_H
#define PANO_FILTER_H

#include "config.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct pano_filter pano_filter;

/* Build the filter of a program from the configuration. program may be a
 * path or NULL. Returns NULL with a message naming the key in err when
 * pano.events cannot be used. */
pano_filter *pano_filter_new(const pano_config *cfg, const char *program, char *err,
                             size_t errlen);

/* Only the pattern list (pano.events syntax); for tests and tools. */
pano_filter *pano_filter_parse(const char *patterns, char *err, size_t errlen);

/* True when an event of this name is to be sent. */
bool pano_filter_pass(const pano_filter *f, const char *event);

/* False when the program's pano.<publisher>.enabled is false. */
bool pano_filter_enabled(const pano_filter *f);

/* How pattern i is matched: 'a' all, 'r' regex, 'g' glob; 0 past the end. */
char pano_filter_kind(const pano_filter *f, size_t i);

/* "pano.monitor.enabled" for "pano-monitor" or "/usr/bin/pano-monitor" (the
 * publishers pano-monitor, pano-darshan, pano-transfer, pano-emit), when the
 * registry has that key; NULL otherwise. */
const char *pano_filter_toggle_key(const char *program);

void pano_filter_free(pano_filter *f);

#endif
