/*
 * store_sqlite_summaries.c - the embedded store's summaries read
 * (store_sqlite.h): what jobs_summaries.c reads from Elasticsearch's
 * summary partitions, from the store's summaries view (store.h).
 */
#include "store_sqlite.h"

#include "store.h"

#include <stdio.h>
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

int store_sqlite_summaries(sqlite3 *db, const char *wf, bool scoped, bool with_failed,
                           void (*each)(const pano_run_summary *doc, void *user), void *user,
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
    /* each document's tree in one arena, reused: no allocation per value */
    pano_arena arena;
    pano_arena_init(&arena, 16384);
    pano_json_parse_options in_arena = {.arena = &arena};
    int rc, out = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        (*read)++;
        char why[128];
        pano_arena_reset(&arena);
        pano_json *j = pano_json_parse_with((const char *)sqlite3_column_text(st, 0),
                                            (size_t)sqlite3_column_bytes(st, 0), &in_arena, why,
                                            sizeof why);
        pano_run_summary cur;
        bool ok = j && pano_summary_read(j, &cur);
        if (!ok) {
            snprintf(err, errlen, "summary %.40s of %s is damaged (not a summary's JSON)",
                     (const char *)sqlite3_column_text(st, 1), wf);
            out = 1;
            break;
        }
        if (holding && strcmp(held.id, cur.id) == 0) {
            pano_summary_merge(&held, &cur, true);
            pano_summary_clear(&cur);
            continue;
        }
        if (holding)
            each(&held, user);
        pano_summary_clear(&held);
        held = cur;
        holding = true;
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = sql_fail(db, err, errlen);
    if (out == 0 && holding)
        each(&held, user);
    pano_summary_clear(&held);
    pano_arena_free(&arena);
    sqlite3_finalize(st);
    return out;
}
