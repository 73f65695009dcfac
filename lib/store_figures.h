/*
 * store_figures.h - the embedded store's figures: its events counted per
 * workflow, stream, event, label and whether a sample carries its change,
 * with the first and last ts of each count, kept in the store's file in the transactions that write the
 * events. A search that reads nothing else (a workflow's span, its label,
 * how many events of each kind it has) reads these few rows instead of
 * every event (query/store_sqlite.c).
 *
 * A file's table (store.h):
 *
 *   figures(wf_uuid, stream, event, labels, wf_label, dax_label, delta, n,
 *           first, last)
 *       one row per (wf_uuid, stream, event, wf_label, dax_label, delta)
 *       of the file's events: n of them, ts from first to last. wf_label,
 *       dax_label and delta (1: a sample with its change) are the events'
 *       columns (NULL where an event has none); labels,
 *       json_array(wf_label, dax_label, delta), keys the three.
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

/* The statement that counts the events of schema.events where `where`
 * holds (an SQL condition, which may use parameters) into schema.figures,
 * adding to the rows already there. The caller frees it. */
char *store_figures_count_sql(const char *schema, const char *where);

/* The statement that counts the events of the main schema's file after
 * rowid ?1 (those of the writer's transaction), read by their rowids. */
char *store_figures_count_after_sql(void);

/* schema.figures created, and every event of schema.events counted into
 * it, unless the table exists. Within the caller's transaction. 0, or -1
 * with a message in err. */
int store_figures_ensure(sqlite3 *db, const char *schema, char *err, size_t errlen);

/* After events of stream were deleted from the main schema's file: that
 * stream's figures counted again from the events left, within the
 * caller's transaction. 0, or -1 with a message in err. */
int store_figures_recount(sqlite3 *db, const char *stream, char *err, size_t errlen);

#endif
