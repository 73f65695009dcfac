/*
 * store_figures.h - the embedded store's figures: its events counted per
 * workflow, stream, event, label and whether a sample carries its change,
 * as a whole and per second, kept in the store's file in the transactions
 * that write the events. A search that reads nothing else (a workflow's
 * span, its label, how many events of each kind it has; a date histogram
 * of whole seconds of the samples' changes, a series) reads these rows
 * instead of every event (query/store_sqlite.c).
 *
 * A file's tables (store.h):
 *
 *   figures(wf_uuid, stream, event, labels, wf_label, dax_label, delta, n,
 *           first, last)
 *       one row per (wf_uuid, stream, event, wf_label, dax_label, delta)
 *       of the file's events: n of them, ts from first to last. wf_label,
 *       dax_label and delta (1: a sample with its change) are the events'
 *       columns (NULL where an event has none); labels,
 *       json_array(wf_label, dax_label, delta), keys the three.
 *   seconds(wf_uuid, stream, event, labels, wf_label, dax_label, delta,
 *           second, n, ms, first, last, <f>, <f>@ms for each of
 *           pano_store_summed_fields)
 *       the same per second: the events whose time in whole milliseconds
 *       (pano_event_ms: what Elasticsearch buckets) is in [second * 1000,
 *       second * 1000 + 1000); ms the sum of those milliseconds, first and
 *       last the least and the greatest; <f> the sum of a field, <f>@ms the
 *       sum of the field times the milliseconds (0 where none has it).
 *
 * The figures count exactly the events of their file: an event stored
 * counts in the transaction that stores it, one deleted (retention) in the
 * one that deletes it, and a file written before figures were kept is
 * counted whole when a writer first opens it.
 *
 * One tally counts them all: the writer adds each event it stores, as it
 * stores it, and writes the tally's rows (added to those of the file) with
 * its transaction; a whole file, or a stream after a purge, is counted by
 * reading its events into a tally.
 */
#ifndef PANO_STORE_FIGURES_H
#define PANO_STORE_FIGURES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_FIGURES_SUMMED 13 /* pano_store_summed_fields */

/* A value as a column of SQLite holds it (text not copied). */
typedef struct {
    int type; /* SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT or SQLITE_TEXT */
    int64_t i;
    double r;
    const char *text;
    int len;
} store_cell;

/* c bound to parameter i of st (text not copied: it must outlive the
 * statement's step). */
void store_cell_bind(sqlite3_stmt *st, int i, const store_cell *c);

/* What an event counts by: its columns of those names. */
typedef struct {
    const char *wf_uuid, *stream, *event;
    store_cell wf_label, dax_label, delta;
    double ts;
    store_cell summed[STORE_FIGURES_SUMMED]; /* of pano_store_summed_fields */
} store_figures_event;

/* The figures of events not yet written to schema's figures and seconds. */
typedef struct store_tally store_tally;

/* A tally writing to schema's tables on db. NULL, with a message in err,
 * when its statements cannot be made. */
store_tally *store_tally_new(sqlite3 *db, const char *schema, char *err, size_t errlen);
/* e counted (its strings copied). */
void store_tally_add(store_tally *t, const store_figures_event *e);
/* What was counted added to the tables, within the caller's transaction,
 * and the tally emptied. 0, or -1 with a message in err. */
int store_tally_flush(store_tally *t, char *err, size_t errlen);
/* What was counted forgotten (its transaction rolled back). */
void store_tally_discard(store_tally *t);
void store_tally_free(store_tally *t);

/* The SQL function pano_ms(ts) (pano_event_ms) on a reader's connection,
 * whose searches of seconds ask for it (query/store_sqlite.c). 0, or -1
 * with a message in err. */
int store_figures_functions(sqlite3 *db, char *err, size_t errlen);

/* The events of schema.events where `where` (SQL) holds counted into
 * schema's figures and seconds, added to the rows already there, within
 * the caller's transaction. 0, or -1 with a message in err. */
int store_figures_count(sqlite3 *db, const char *schema, const char *where, char *err,
                        size_t errlen);

/* schema's figures and seconds made anew (either dropped first), and every
 * event of schema.events counted into them: a new file's, or one written
 * before figures were kept. Within the caller's transaction. 0, or -1 with
 * a message in err. */
int store_figures_make(sqlite3 *db, const char *schema, char *err, size_t errlen);

/* After events of stream were deleted from the main schema's file: that
 * stream's figures counted again from the events left, within the
 * caller's transaction. 0, or -1 with a message in err. */
int store_figures_recount(sqlite3 *db, const char *stream, char *err, size_t errlen);

#endif
