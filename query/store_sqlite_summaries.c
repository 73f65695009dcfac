/*
 * store_sqlite_summaries.c - the embedded store's summaries read
 * (store_sqlite.h): what jobs_summaries.c reads from Elasticsearch's
 * summary partitions, from the store's summaries view (store.h).
 */
#include "store_sqlite.h"

#include "buf.h"
#include "mem.h"
#include "store.h"
#include "thread.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sql_fail(sqlite3 *db, char *err, size_t errlen)
{
    snprintf(err, errlen, "the embedded store's summaries: %s", sqlite3_errmsg(db));
    return -1;
}

/* The events each kind of summary is made of, in the order of
 * pano_summary_kind, by the columns of the events' index
 * (events_by_workflow: wf_uuid, stream, event, job_id, job_inst_id); a
 * run's and side events counted (COUNT) in TABLE: the events, or the
 * store's figures (store_figures.h) where the reader has them. */
#define KINDS_SQL(COUNT, TABLE)                                                                 \
    "SELECT (SELECT " COUNT " FROM " TABLE " WHERE wf_uuid = ?1"                                \
    "  AND stream IN ('kickstart', 'samples')"                                                  \
    "  AND event >= 'kickstart.inv.' AND event < 'kickstart.inv/'),"                            \
    " (SELECT count(*) FROM events WHERE wf_uuid = ?1 AND stream = 'stampede'"                  \
    "  AND ((event >= 'stampede.job_inst.' AND event < 'stampede.job_inst/')"                   \
    "   OR event = 'stampede.inv.end') AND \"job_id\" IS NOT NULL AND \"job_inst_id\" IS NOT NULL)," \
    " (SELECT " COUNT " FROM " TABLE " WHERE wf_uuid = ?1"                                      \
    "  AND ((event >= 'darshan.' AND event < 'darshan/')"                                       \
    "   OR (event >= 'transfer.' AND event < 'transfer/')))"
static const char events_sql[] = KINDS_SQL("count(*)", "events");
static const char figures_sql[] = KINDS_SQL("total(n)", "figures");

/* The one row of sql's three counts (bound to wf) added to out. */
static int counts(sqlite3 *db, const char *sql, const char *wf, int64_t out[3], char *err,
                  size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, err, errlen);
    sqlite3_bind_text(st, 1, wf, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        for (int k = 0; k < 3; k++)
            out[k] += sqlite3_column_int64(st, k);
    int ok = rc == SQLITE_DONE ? 0 : sql_fail(db, err, errlen);
    sqlite3_finalize(st);
    return ok;
}

int store_sqlite_summarized(sqlite3 *db, const char *wf, int64_t counted[3], int64_t events[3],
                            char *err, size_t errlen)
{
    memset(counted, 0, 3 * sizeof *counted);
    if (counts(db,
               "SELECT total(n + closing) FILTER (WHERE kind = 'run'),"
               " total(n) FILTER (WHERE kind = 'inst'), total(n) FILTER (WHERE kind = 'side')"
               " FROM summaries WHERE wf_uuid = ?1",
               wf, counted, err, errlen) < 0)
        return -1;
    if (!events)
        return 0;
    memset(events, 0, 3 * sizeof *events);
    return counts(db, pano_store_reads_figures(db) ? figures_sql : events_sql, wf, events, err,
                  errlen);
}

/* The documents in scope: ?2 scoped, ?3 with the failed. */
#define IN_SCOPE "(open OR (?3 AND failed))"
static const char select_sql[] =
    "SELECT doc, id FROM summaries WHERE wf_uuid = ?1 AND (NOT ?2"
    " OR id IN (SELECT id FROM summaries WHERE wf_uuid = ?1 AND " IN_SCOPE ")"
    " OR job IN (SELECT job FROM summaries WHERE wf_uuid = ?1 AND job IS NOT NULL AND " IN_SCOPE "))"
    " ORDER BY id";

/* The documents are read in chunks: a chunk's rows copied out of SQLite,
 * then parsed (most of the cost) by a second thread while the main thread
 * reads the next chunk and hands on the documents of the one before, and
 * by both threads once it has, each taking the next document not yet
 * taken. */
#define CHUNK 4096

typedef struct {
    pano_buf text;           /* the rows' id and doc, each NUL-terminated */
    size_t id[CHUNK], doc[CHUNK], len[CHUNK]; /* where each row's are in text */
    pano_run_summary sum[CHUNK];
    bool ok[CHUNK];
    size_t n;
    atomic_size_t next;      /* the next row to parse */
} chunk;

/* Parse the chunk's rows not yet taken (c: a chunk; a thread's too). */
static void *parse_rows(void *arg)
{
    chunk *c = arg;
    size_t i;
    while ((i = atomic_fetch_add(&c->next, 1)) < c->n)
        c->ok[i] = pano_summary_parse(c->text.data + c->doc[i], c->len[i], &c->sum[i]);
    return NULL;
}

/* Up to CHUNK rows of st into c: the last step's code. */
static int fill(sqlite3_stmt *st, chunk *c)
{
    c->n = 0;
    c->text.len = 0;
    atomic_store(&c->next, 0);
    int rc = SQLITE_DONE;
    while (c->n < CHUNK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *id = sqlite3_column_text(st, 1), *doc = sqlite3_column_text(st, 0);
        c->id[c->n] = c->text.len;
        pano_buf_append(&c->text, id, (size_t)sqlite3_column_bytes(st, 1));
        pano_buf_append(&c->text, "", 1);
        c->doc[c->n] = c->text.len;
        c->len[c->n] = (size_t)sqlite3_column_bytes(st, 0);
        pano_buf_append(&c->text, doc, c->len[c->n]);
        pano_buf_append(&c->text, "", 1);
        c->n++;
    }
    return rc;
}

/* A thread parsing c's rows (false when none could start). */
static bool start_parser(pthread_t *t, chunk *c)
{
    return c->n > 0 && pano_thread_start(t, parse_rows, c);
}

int store_sqlite_summaries(sqlite3 *db, const char *wf, bool scoped, bool with_failed,
                           void (*each)(pano_run_summary *doc, void *user), void *user,
                           size_t *read, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, select_sql, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, err, errlen);
    sqlite3_bind_text(st, 1, wf, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, scoped);
    sqlite3_bind_int(st, 3, with_failed);
    pano_run_summary held; /* the last document read: the next may be of its run */
    bool holding = false;
    pano_summary_init(&held);
    /* three chunks in turn: the one parsed, the one read, the one handed on */
    chunk *chunks = pano_calloc(3, sizeof *chunks), *c = &chunks[0], *done = NULL;
    int rc = fill(st, c), out = 0;
    for (size_t k = 1; c->n || done; k++) {
        pthread_t t;
        bool threaded = start_parser(&t, c);
        chunk *next = &chunks[k % 3];
        next->n = 0;
        if (rc == SQLITE_ROW)
            rc = fill(st, next);
        for (size_t i = 0; done && i < done->n; i++) {
            pano_run_summary *cur = &done->sum[i];
            if (out != 0 || !done->ok[i]) {
                if (out == 0)
                    snprintf(err, errlen, "summary %.40s of %s is damaged (not a summary's JSON)",
                             done->text.data + done->id[i], wf);
                out = 1;
                pano_summary_clear(cur);
                continue;
            }
            (*read)++;
            if (holding && strcmp(held.id, cur->id) == 0) {
                pano_summary_merge(&held, cur, true);
                pano_summary_clear(cur);
                continue;
            }
            if (holding) {
                each(&held, user);
                pano_summary_clear(&held);
                holding = false;
            }
            /* held (copied) only when the next document may be of its run */
            const char *id = done->text.data + done->id[i];
            if (i + 1 < done->n && strcmp(done->text.data + done->id[i + 1], id) != 0) {
                each(cur, user);
                pano_summary_clear(cur);
                continue;
            }
            held = *cur;
            holding = true;
        }
        parse_rows(c);
        if (threaded)
            pthread_join(t, NULL);
        done = c->n ? c : NULL;
        c = next;
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = sql_fail(db, err, errlen);
    if (out == 0 && holding)
        each(&held, user);
    pano_summary_clear(&held);
    for (int i = 0; i < 3; i++)
        pano_buf_free(&chunks[i].text);
    free(chunks);
    sqlite3_finalize(st);
    return out;
}
