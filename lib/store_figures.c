#include "store_figures.h"

#include "mem.h"

#include <stdio.h>
#include <stdlib.h>

#define COLUMNS "wf_uuid, stream, event, labels, \"wf_label\", \"dax_label\", \"delta\", n, first, last"

/* The statement counting the events of `from` (schema.events and how it
 * is read) where `where` holds. */
static char *count_sql(const char *schema, const char *from, const char *where)
{
    return pano_asprintf(
        "INSERT INTO %s.figures (" COLUMNS ")"
        " SELECT wf_uuid, stream, event, json_array(\"wf_label\", \"dax_label\", \"delta\"),"
        " \"wf_label\", \"dax_label\", \"delta\", count(*), min(ts), max(ts) FROM %s.events%s"
        " WHERE %s GROUP BY 1, 2, 3, 4"
        " ON CONFLICT DO UPDATE SET n = n + excluded.n, first = min(first, excluded.first),"
        " last = max(last, excluded.last)",
        schema, schema, from, where);
}

char *store_figures_count_sql(const char *schema, const char *where)
{
    return count_sql(schema, "", where);
}

char *store_figures_count_after_sql(void)
{
    /* by rowid: SQLite would otherwise scan the whole index of a
     * workflow's events, which holds every column counted */
    return count_sql("main", " NOT INDEXED", "rowid > ?1");
}

static int run(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "the store's figures: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
}

int store_figures_ensure(sqlite3 *db, const char *schema, char *err, size_t errlen)
{
    char *sql = sqlite3_mprintf("SELECT 1 FROM %s.sqlite_master WHERE name = 'figures'", schema);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "the store's figures: %s", sqlite3_errmsg(db));
        return -1;
    }
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "the store's figures: %s", sqlite3_errmsg(db));
        return -1;
    }
    char *create = pano_asprintf(
        "CREATE TABLE %s.figures (wf_uuid TEXT NOT NULL, stream TEXT NOT NULL,"
        " event TEXT NOT NULL, labels TEXT NOT NULL, \"wf_label\" ANY, \"dax_label\" ANY,"
        " \"delta\" ANY,"
        " n INTEGER NOT NULL, first REAL NOT NULL, last REAL NOT NULL,"
        " PRIMARY KEY (wf_uuid, stream, event, labels)) WITHOUT ROWID",
        schema);
    char *count = store_figures_count_sql(schema, "true");
    rc = run(db, create, err, errlen) < 0 || run(db, count, err, errlen) < 0 ? -1 : 0;
    free(create);
    free(count);
    return rc;
}

int store_figures_recount(sqlite3 *db, const char *stream, char *err, size_t errlen)
{
    char *where = sqlite3_mprintf("stream = %Q", stream);
    char *del = sqlite3_mprintf("DELETE FROM main.figures WHERE stream = %Q", stream);
    char *count = store_figures_count_sql("main", where);
    int rc = run(db, del, err, errlen) < 0 || run(db, count, err, errlen) < 0 ? -1 : 0;
    sqlite3_free(where);
    sqlite3_free(del);
    free(count);
    return rc;
}
