/*
 * cursor.h - what a page sends back to learn whether its workflow changed.
 *
 * An answer about a workflow is made from its rows, which change in two
 * ways: when events are stored (or removed), which changes the count and
 * latest ts of its events (pano_query_changes, one small search), and by
 * the clock alone, when a running pano-monitor run stops sending samples
 * and turns lost. So a cursor is the events an answer was made from and
 * the time until which the clock cannot have changed it: while the events
 * are the same and that time has not come, the answer still holds.
 *
 * Its text is four whole numbers, "EVENTS-SUMMARIZED-LATEST-UNTIL": the
 * count of the events, how many of them the summaries count (pano_changes),
 * their latest ts in milliseconds, and that time in milliseconds (0:
 * whatever the time).
 */
#ifndef PANO_EXPLORER_CURSOR_H
#define PANO_EXPLORER_CURSOR_H

#include "query.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    pano_changes at; /* the events the answer was made from */
    double until;    /* epoch s the answer holds until while they stay so; 0: always */
} explorer_cursor;

/* The text form; size 64 is always enough. */
void explorer_cursor_format(const explorer_cursor *c, char *out, size_t size);
/* False for anything but the text form. */
bool explorer_cursor_parse(const char *text, explorer_cursor *out);

/* Whether an answer made at c still holds when the events are now and the
 * time is t. */
bool explorer_cursor_holds(const explorer_cursor *c, const pano_changes *now, double t);

/* Until when the clock cannot change what jobs say: while a pano-monitor run
 * runs, it turns lost a few sampling intervals after its last sample (query.h),
 * so an answer holds one interval (at least 1 s, at most
 * EXPLORER_CLOCK_RECHECK s) from jobs->now, and then is made again; with no
 * such run, always (0). */
#define EXPLORER_CLOCK_RECHECK 60.0
double explorer_cursor_until(const pano_jobs *jobs);

#endif
