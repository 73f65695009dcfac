#include "store_summaries.h"

#include "buf.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "summary.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The documents a transaction touched, by id (open addressing). */
typedef struct {
    pano_run_summary doc; /* doc.id[0] == '\0': a free slot */
    int64_t closing;
} slot;

struct store_summaries {
    sqlite3 *db;
    sqlite3_stmt *read, *write;
    slot *slots;
    size_t n, cap; /* cap: a power of two */
};

static int sql_fail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
    return -1;
}

#define TABLE_SQL                                                                            \
    "CREATE TABLE IF NOT EXISTS summaries (id TEXT NOT NULL, wf_uuid TEXT NOT NULL,"        \
    " kind TEXT NOT NULL, stream TEXT NOT NULL, job TEXT, open INTEGER NOT NULL,"           \
    " failed INTEGER NOT NULL, t0 REAL, last REAL, n INTEGER NOT NULL,"                     \
    " closing INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (wf_uuid, id)) WITHOUT ROWID;" \
    "CREATE INDEX IF NOT EXISTS summaries_by_workflow"                                      \
    " ON summaries (wf_uuid, kind, n, closing, open, failed, job);"

int store_summaries_make(sqlite3 *db, const char *file, char *err, size_t errlen)
{
    /* a table of rows in the order written has no primary key index */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT count(*) FROM sqlite_master WHERE name = 'summaries'),"
                           " (SELECT count(*) FROM pragma_index_list('summaries')"
                           "  WHERE origin = 'pk')",
                           -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "the summaries' table", err, errlen);
    bool older = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1 &&
                 sqlite3_column_int(st, 1) == 0;
    sqlite3_finalize(st);
    const char *sql = TABLE_SQL;
    if (older) {
        pano_info("store %s: writing its summaries again in the order of their workflows", file);
        sql = "ALTER TABLE summaries RENAME TO summaries_as_written;"
              "DROP INDEX IF EXISTS summaries_by_workflow;" TABLE_SQL
              "INSERT INTO summaries (" STORE_SUMMARIES_COLUMNS ") SELECT " STORE_SUMMARIES_COLUMNS
              " FROM summaries_as_written;"
              "DROP TABLE summaries_as_written;";
    }
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(db, "making the summaries' table", err, errlen);
    return 0;
}

store_summaries *store_summaries_new(sqlite3 *db, char *err, size_t errlen)
{
    store_summaries *ss = pano_calloc(1, sizeof *ss);
    ss->db = db;
    if (sqlite3_prepare_v2(db, "SELECT doc, closing FROM summaries WHERE wf_uuid = ?1 AND id = ?2",
                           -1, &ss->read, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO summaries (" STORE_SUMMARIES_COLUMNS
                           ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                           -1, &ss->write, NULL) != SQLITE_OK) {
        sql_fail(db, "preparing the summaries' statements", err, errlen);
        store_summaries_free(ss);
        return NULL;
    }
    return ss;
}

/* The slot of id: its document, or the free slot where it goes. */
static slot *find(store_summaries *ss, const char *id)
{
    size_t mask = ss->cap - 1;
    for (size_t i = pano_hash_str(id) & mask;; i = (i + 1) & mask)
        if (!ss->slots[i].doc.id[0] || strcmp(ss->slots[i].doc.id, id) == 0)
            return &ss->slots[i];
}

static void grow(store_summaries *ss)
{
    slot *old = ss->slots;
    size_t old_cap = ss->cap;
    ss->cap = old_cap ? old_cap * 2 : 256;
    ss->slots = pano_calloc(ss->cap, sizeof *ss->slots);
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].doc.id[0])
            *find(ss, old[i].doc.id) = old[i];
    free(old);
}

/* Read document id of workflow wf from the file into sl (left empty when
 * there is none). */
static int read_doc(store_summaries *ss, const char *wf, const char *id, slot *sl, char *err,
                    size_t errlen)
{
    pano_run_summary *doc = &sl->doc;
    pano_summary_init(doc);
    sl->closing = 0;
    sqlite3_bind_text(ss->read, 1, wf, -1, SQLITE_STATIC);
    sqlite3_bind_text(ss->read, 2, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(ss->read), out = 0;
    if (rc == SQLITE_ROW) {
        if (!pano_summary_parse((const char *)sqlite3_column_text(ss->read, 0),
                                (size_t)sqlite3_column_bytes(ss->read, 0), doc)) {
            snprintf(err, errlen, "summary %s is damaged: not a summary's JSON", id);
            out = -1;
        }
        sl->closing = sqlite3_column_int64(ss->read, 1);
    } else if (rc != SQLITE_DONE)
        out = sql_fail(ss->db, "reading a summary", err, errlen);
    sqlite3_reset(ss->read);
    sqlite3_clear_bindings(ss->read);
    return out;
}

void store_summaries_part(const pano_json *doc, const pano_place *place, store_summary_part *out)
{
    const char *sample = pano_json_get_str(doc, "sample");
    out->closing = sample && strcmp(sample, "closing") == 0;
    out->has = pano_summary_of_event(doc, place->wf_uuid, place->ts, "", &out->part);
}

void store_summaries_part_clear(store_summary_part *p)
{
    if (p->has)
        pano_summary_clear(&p->part);
    p->has = false;
}

int store_summaries_add(store_summaries *ss, store_summary_part *p, int64_t rowid, char *err,
                        size_t errlen)
{
    if (!p->has)
        return 0;
    bool closing = p->closing;
    char arrival[24]; /* the row, in 20 digits: "%020lld" (a rowid is positive) */
    uint64_t left = (uint64_t)rowid;
    for (int d = 19; d >= 0; d--, left /= 10)
        arrival[d] = (char)('0' + left % 10);
    arrival[20] = '\0';
    pano_run_summary part = p->part; /* taken: cleared below */
    p->has = false;
    pano_summary_set_arrival(&part, arrival);
    if (2 * (ss->n + 1) > ss->cap)
        grow(ss);
    slot *sl = find(ss, part.id);
    if (!sl->doc.id[0]) {
        if (read_doc(ss, part.wf, part.id, sl, err, errlen) < 0) {
            pano_summary_clear(&sl->doc);
            pano_summary_clear(&part);
            return -1;
        }
        ss->n++;
    }
    if (closing) { /* the doc knows nothing of it, so that it reads as pano-indexer's */
        if (!sl->doc.id[0]) { /* its key alone */
            pano_run_summary *d = &sl->doc;
            d->kind = part.kind;
            memcpy(d->id, part.id, sizeof d->id);
            memcpy(d->wf, part.wf, sizeof d->wf);
            d->v[PANO_SF_PID] = part.v[PANO_SF_PID];
            for (int t = PANO_ST_JOB; t <= PANO_ST_HOST; t++)
                d->t[t] = part.t[t] ? pano_strdup(part.t[t]) : NULL;
        }
        sl->closing++;
    } else
        pano_summary_merge(&sl->doc, &part, true);
    if (sl->doc.stream < 0) /* not in a document read back */
        sl->doc.stream = part.stream;
    pano_summary_clear(&part);
    return 0;
}

static void bind_number(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static int write_doc(store_summaries *ss, const slot *sl, pano_buf *json, char *err,
                     size_t errlen)
{
    const pano_run_summary *d = &sl->doc;
    json->len = 0;
    pano_summary_write(d, json);
    sqlite3_stmt *st = ss->write;
    const char *job = d->t[PANO_ST_JOB];
    double last = isnan(d->v[PANO_SF_LAST]) ? d->v[PANO_SF_T0] : d->v[PANO_SF_LAST];
    sqlite3_bind_text(st, 1, d->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, d->wf, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, pano_summary_kind_name(d->kind), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, d->stream >= 0 ? pano_streams[d->stream] : "", -1, SQLITE_STATIC);
    if (job)
        sqlite3_bind_text(st, 5, job, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, pano_summary_open(d));
    sqlite3_bind_int(st, 7, pano_summary_failed(d));
    bind_number(st, 8, d->v[PANO_SF_T0]);
    bind_number(st, 9, last);
    sqlite3_bind_int64(st, 10, (int64_t)(isnan(d->v[PANO_SF_N]) ? 0 : d->v[PANO_SF_N]));
    sqlite3_bind_int64(st, 11, sl->closing);
    sqlite3_bind_text(st, 12, json->data, (int)json->len, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : sql_fail(ss->db, "writing a summary", err, errlen);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

int store_summaries_flush(store_summaries *ss, char *err, size_t errlen)
{
    pano_buf json = {0};
    int rc = 0;
    for (size_t i = 0; i < ss->cap && rc == 0; i++)
        if (ss->slots[i].doc.id[0])
            rc = write_doc(ss, &ss->slots[i], &json, err, errlen);
    pano_buf_free(&json);
    store_summaries_discard(ss);
    return rc;
}

void store_summaries_discard(store_summaries *ss)
{
    for (size_t i = 0; i < ss->cap; i++)
        if (ss->slots[i].doc.id[0]) {
            pano_summary_clear(&ss->slots[i].doc);
            ss->slots[i].doc.id[0] = '\0';
        }
    ss->n = 0;
}

void store_summaries_free(store_summaries *ss)
{
    if (!ss)
        return;
    store_summaries_discard(ss);
    free(ss->slots);
    sqlite3_finalize(ss->read);
    sqlite3_finalize(ss->write);
    free(ss);
}
