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
 */
#ifndef PANO_STORE_FIGURES_H
#define PANO_STORE_FIGURES_H

#include <sqlite3.h>
#include <stddef.h>

/* The SQL function pano_ms(ts) (pano_event_ms) on a connection that counts
 * or reads the figures. 0, or -1 with a message in err. */
int store_figures_functions(sqlite3 *db, char *err, size_t errlen);

/* The statements (two, ';' between) that count the events of
 * schema.events where `where` holds into schema's figures and seconds,
 * adding to the rows already there. The caller frees it. */
char *store_figures_count_sql(const char *schema, const char *where);

/* The statements that count the events of the main schema's file after
 * rowid ?1 (those of the writer's transaction), read by their rowids. */
char *store_figures_count_after_sql(void);

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
