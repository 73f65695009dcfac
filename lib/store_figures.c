#include "store_figures.h"

#include "buf.h"
#include "event.h"
#include "mem.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>

#define KEY "wf_uuid, stream, event, labels, \"wf_label\", \"dax_label\", \"delta\""
#define KEY_OF_EVENT                                                                     \
    "wf_uuid, stream, event, json_array(\"wf_label\", \"dax_label\", \"delta\"),"        \
    " \"wf_label\", \"dax_label\", \"delta\""

/* pano_ms(ts): the whole millisecond Elasticsearch keeps of @timestamp. */
static void fn_ms(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, pano_event_ms(sqlite3_value_double(argv[0])));
}

int store_figures_functions(sqlite3 *db, char *err, size_t errlen)
{
    if (sqlite3_create_function(db, "pano_ms", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, fn_ms,
                                NULL, NULL) == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "cannot prepare the store: %s", sqlite3_errmsg(db));
    return -1;
}

/* The statements counting the events of `from` (schema.events and how it
 * is read) where `where` holds. */
static char *count_sql(const char *schema, const char *from, const char *where)
{
    pano_buf b = {0};
    pano_buf_appendf(&b,
                     "INSERT INTO %s.figures (" KEY ", n, first, last)"
                     " SELECT " KEY_OF_EVENT ", count(*), min(ts), max(ts) FROM %s.events%s"
                     " WHERE %s GROUP BY 1, 2, 3, 4"
                     " ON CONFLICT DO UPDATE SET n = n + excluded.n,"
                     " first = min(first, excluded.first), last = max(last, excluded.last);",
                     schema, schema, from, where);
    pano_buf_appendf(&b, "INSERT INTO %s.seconds (" KEY ", second, n, ms, first, last", schema);
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\", \"%s@ms\"", pano_store_summed_fields[i],
                         pano_store_summed_fields[i]);
    pano_buf_append_str(&b, ") SELECT " KEY_OF_EVENT ", pano_ms(ts) / 1000, count(*),"
                            " sum(pano_ms(ts)), min(pano_ms(ts)), max(pano_ms(ts))");
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", total(\"%s\"), total(\"%s\" * pano_ms(ts))",
                         pano_store_summed_fields[i], pano_store_summed_fields[i]);
    pano_buf_appendf(&b,
                     " FROM %s.events%s WHERE %s GROUP BY 1, 2, 3, 4, 8"
                     " ON CONFLICT DO UPDATE SET n = n + excluded.n, ms = ms + excluded.ms,"
                     " first = min(first, excluded.first), last = max(last, excluded.last)",
                     schema, from, where);
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\" = \"%s\" + excluded.\"%s\","
                             " \"%s@ms\" = \"%s@ms\" + excluded.\"%s@ms\"",
                         pano_store_summed_fields[i], pano_store_summed_fields[i],
                         pano_store_summed_fields[i], pano_store_summed_fields[i],
                         pano_store_summed_fields[i], pano_store_summed_fields[i]);
    return b.data;
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
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    if (rc < 0)
        snprintf(err, errlen, "the store's figures: %s", sqlite3_errmsg(db));
    return rc;
}

int store_figures_make(sqlite3 *db, const char *schema, char *err, size_t errlen)
{
    pano_buf b = {0};
    pano_buf_appendf(&b,
                     "DROP TABLE IF EXISTS %s.figures; DROP TABLE IF EXISTS %s.seconds;"
                     "CREATE TABLE %s.figures (wf_uuid TEXT NOT NULL, stream TEXT NOT NULL,"
                     " event TEXT NOT NULL, labels TEXT NOT NULL, \"wf_label\" ANY,"
                     " \"dax_label\" ANY, \"delta\" ANY, n INTEGER NOT NULL, first REAL NOT NULL,"
                     " last REAL NOT NULL, PRIMARY KEY (wf_uuid, stream, event, labels))"
                     " WITHOUT ROWID;"
                     "CREATE TABLE %s.seconds (wf_uuid TEXT NOT NULL, stream TEXT NOT NULL,"
                     " event TEXT NOT NULL, labels TEXT NOT NULL, \"wf_label\" ANY,"
                     " \"dax_label\" ANY, \"delta\" ANY, second INTEGER NOT NULL,"
                     " n INTEGER NOT NULL, ms REAL NOT NULL, first INTEGER NOT NULL,"
                     " last INTEGER NOT NULL",
                     schema, schema, schema, schema);
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\" REAL NOT NULL, \"%s@ms\" REAL NOT NULL",
                         pano_store_summed_fields[i], pano_store_summed_fields[i]);
    pano_buf_append_str(&b, ", PRIMARY KEY (wf_uuid, stream, event, labels, second))"
                            " WITHOUT ROWID;");
    char *count = store_figures_count_sql(schema, "true");
    pano_buf_append_str(&b, count);
    free(count);
    int rc = run(db, b.data, err, errlen);
    pano_buf_free(&b);
    return rc;
}

int store_figures_recount(sqlite3 *db, const char *stream, char *err, size_t errlen)
{
    char *where = sqlite3_mprintf("stream = %Q", stream);
    char *del = sqlite3_mprintf("DELETE FROM main.figures WHERE stream = %Q;"
                                "DELETE FROM main.seconds WHERE stream = %Q",
                                stream, stream);
    char *count = store_figures_count_sql("main", where);
    int rc = run(db, del, err, errlen) < 0 || run(db, count, err, errlen) < 0 ? -1 : 0;
    sqlite3_free(where);
    sqlite3_free(del);
    free(count);
    return rc;
}
