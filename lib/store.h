/*
 * store.h - the embedded store: a workflow's events in SQLite, no services.
 *
 * A store is a directory. Each host writes its own SQLite file in it,
 * <host>.pano.sqlite, so that hosts sharing the directory over a network
 * file system never write to one file (SQLite's locks and its WAL are
 * safe between processes of one host, not between hosts). Readers open
 * every host's file of the directory at once (pano_store_open_reader) and
 * see one store: an event present in two files counts once.
 *
 * A file holds (format version PANO_STORE_FORMAT, in PRAGMA user_version,
 * and application_id 'pano'):
 *
 *   events(event_id UNIQUE, wf_uuid, stream, event, ts, <fields>, doc)
 *       one row per event, at most once by event_id; doc is the event as
 *       the bridge would produce it (normalized, checked against schemas/:
 *       normalize.h, the same code path), stream its partition.h stream;
 *       each of pano_store_fields has a column of its own (named as the
 *       field, "delta.utime") holding what json_extract(doc, field) gives,
 *       but 1 for an object or array: searches read those without parsing
 *       the doc;
 *   dead_letters(received, reason, event, event_id, wf_uuid, body)
 *       every event the checks refused, as it came, with the reason;
 *   summaries(...)
 *       pano-indexer's per-run summaries of the file's events, written in
 *       their transactions (store_summaries.h);
 *   figures(...), seconds(...)
 *       the file's events counted per workflow, stream, event, label and
 *       whether a sample carries its change, with their first and last ts,
 *       as a whole and per second (with the samples' changes summed),
 *       written in their transactions (store_figures.h).
 *
 * Writing: one transaction per pano_store_put (or, in a batch,
 * pano_store_begin/commit, per PANO_STORE_BATCH_COMMIT events or
 * PANO_STORE_BATCH_SECONDS; a batch's
 * queued events, pano_store_queue, on the store's writer thread),
 * BEGIN IMMEDIATE, waiting up to pano.store.
 * busy_timeout for other writers (opening a file that others are making
 * or changing waits as long); an event counts as stored once its
 * transaction committed. On a local file system the file is in WAL mode
 * (readers never block writers; a killed writer loses only what it had
 * not committed); on a network or cluster file system (NFS, Lustre, GPFS,
 * CIFS, ...) in rollback-journal mode, which needs no shared memory. A
 * writer's connection is used by one thread at a time: the caller's
 * functions below wait for the queued events to be written first.
 * Events older than their stream's retention (pano.indexer.retention) are
 * refused as dead letters, and deleted from the file when it is opened for
 * writing (at most once an hour).
 */
#ifndef PANO_STORE_H
#define PANO_STORE_H

#include "config.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PANO_STORE_FORMAT 2
#define PANO_STORE_SUFFIX ".pano.sqlite"

typedef struct pano_store pano_store;

/* The fields kept in columns of their own: the ones pano-query filters,
 * groups and sums on. NULL-terminated. */
extern const char *const pano_store_fields[];

/* Whether field, one of pano_store_fields, is a name or label that
 * Elasticsearch maps as a keyword (the schemas' strings): its column has
 * TEXT affinity, so a name keeps the form it came in ("0042") and a number
 * sent for one is its text, as in a keyword. The other columns have NUMERIC
 * affinity: "12" sent for a number is 12, as a mapping coerces it. */
bool pano_store_is_keyword(const char *field);

/* The fields the store sums per second of its events (the samples'
 * changes, delta.*), in its table seconds (store_figures.h), and carries in
 * the index of a workflow's events. NULL-terminated. */
extern const char *const pano_store_summed_fields[];

/* The store pano.store names, else the default one:
 * $XDG_DATA_HOME/pano/store, or ~/.local/share/pano/store. 0, or -1 with a
 * message in err (no HOME). */
int pano_store_path(const pano_config *cfg, char *out, size_t size, char *err, size_t errlen);

/* The store a reader (pano-query, pano-explorer) reads instead of
 * Elasticsearch, in out: the one pano.store names, or, when neither
 * pano.es.url nor pano.amqp.url is configured, the default store if it
 * holds a file. False: read Elasticsearch. */
bool pano_store_to_read(const pano_config *cfg, char *out, size_t size);

/* Open this host's file of the store directory dir for writing, creating
 * both when missing (0700 and 0600). The host is pano.hostname or
 * gethostname(), reduced to [A-Za-z0-9._-]. NULL with a message in err. */
pano_store *pano_store_open_writer(const pano_config *cfg, const char *dir, char *err,
                                   size_t errlen);

/* The file this writer writes. */
const char *pano_store_file(const pano_store *s);

typedef enum {
    PANO_STORE_STORED,
    PANO_STORE_DUPLICATE, /* an event of that event_id is there already */
    PANO_STORE_REJECTED,  /* kept in dead_letters; the reason in err */
    PANO_STORE_FAILED,    /* nothing written (disk full, locked too long); err says */
} pano_store_outcome;

/* Check one event (routing_key may be NULL: the event's own name) and store
 * it, or its dead letter (within a batch, in its transaction). */
pano_store_outcome pano_store_put(pano_store *s, const char *routing_key, const char *json,
                                  size_t len, char *err, size_t errlen);

/* Keep a message refused elsewhere (another store's dead letter) as it
 * came, with its reason and what it said it was (NULL: unknown). */
pano_store_outcome pano_store_keep_refused(pano_store *s, double received, const char *reason,
                                           const char *event, const char *event_id,
                                           const char *wf_uuid, const char *body, size_t len,
                                           char *err, size_t errlen);

/* Group the next events in a batch until pano_store_commit (a burst of
 * events, few disk syncs): in one transaction, committed and begun again
 * once it holds PANO_STORE_BATCH_COMMIT events or is
 * PANO_STORE_BATCH_SECONDS old, whichever comes first (each commit writes
 * again every index page its events touched, so the fewer the better; the
 * other writers of the file wait for it, and readers see its events, at
 * most about that long). 0, or -1 with a message in err. */
#define PANO_STORE_BATCH_COMMIT 100000
#define PANO_STORE_BATCH_SECONDS 1.0
int pano_store_begin(pano_store *s, char *err, size_t errlen);

/* Many events, written at the pace of the disk: within a batch, an event is
 * checked at once on the caller's thread (PANO_STORE_REJECTED: the reason
 * in err, its dead letter written with the rest) and written by the
 * store's writer thread while the caller checks the next ones
 * (PANO_STORE_STORED then only says that it was accepted; an event_id
 * stored already is left out as by pano_store_put; an event over 64 KiB
 * is written by pano_store_put, after those queued). Outside a batch,
 * pano_store_put. */
pano_store_outcome pano_store_queue(pano_store *s, const char *routing_key, const char *json,
                                    size_t len, char *err, size_t errlen);

/* End the batch: every event queued written, and committed. 0, or how
 * many of the batch's accepted events were not stored (a transaction that
 * could not commit, a disk full), with the first reason in err. */
int pano_store_commit(pano_store *s, char *err, size_t errlen);

void pano_store_close(pano_store *s);

/* Open stores and files to read, as one: each path is a store directory
 * (every *.pano.sqlite in it) or one file (an export, compressed, too),
 * opened read-only. The
 * connection's views `events` (with `row`, a row's place in its file, for
 * a stable order) and `dead_letters` are the union of the files' tables,
 * an event_id present in several files taken once; `summaries` the union
 * of those of the files that have them, every row (a file without them
 * adds none); `figures` and `seconds` the file's, when the events are of
 * one file that has them or were copied (below), else there are no such
 * views (pano_store_reads_figures).
 * Up to SQLite's limit of
 * attached databases (10 unless built otherwise) the files are read where
 * they are; past it, their rows are first copied into the connection's
 * temporary database. NULL with a message in err (no such path, not a pano
 * store, a newer format). */
sqlite3 *pano_store_open_reader(const char *const *paths, size_t n, char *err, size_t errlen);

/* Whether a reader connection has the views `figures` and `seconds`. */
bool pano_store_reads_figures(sqlite3 *reader);

/* Write the events of the workflows wfs[0..n) (and of their sub-workflows:
 * those whose events name one of them as root_xwf_id) and their dead
 * letters, and their summaries (a run's first row where several files
 * have one) and figures, as a reader connection sees them, into a new store file, in
 * rollback-journal mode, compressed as a whole with zstd (zstd_file.h;
 * `zstd -d` gives the SQLite file), written under a temporary name and
 * renamed. pano_store_open_reader reads such a file through a private
 * decompressed copy. Its meta table: exported_at (epoch s),
 * pano_version, source, counts ({"events": N, "dead_letters": N,
 * "workflows": {uuid: {stream: N}}}). Fails when file exists. 0, or -1
 * with a message in err. */
int pano_store_export(sqlite3 *reader, const char *const *wfs, size_t n, const char *file,
                      const char *source, char *err, size_t errlen);

/* Each event of a reader connection's view (of the workflows wfs[0..n) and
 * their sub-workflows; wfs NULL: of all), oldest first: each(event name,
 * event_id, doc, its length, user); a non-zero return stops there and is
 * returned. -1 with a message in err when the store cannot be read. */
int pano_store_each_event(sqlite3 *reader, const char *const *wfs, size_t n,
                          int (*each)(const char *event, const char *event_id, const char *doc,
                                      size_t len, void *user),
                          void *user, char *err, size_t errlen);

#endif
