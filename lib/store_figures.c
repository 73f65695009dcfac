#include "store_figures.h"

#include "arena.h"
#include "buf.h"
#include "event.h"
#include "mem.h"
#include "store.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY "wf_uuid, stream, event, labels, \"wf_label\", \"dax_label\", \"delta\""

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

/* ---- the tally ----------------------------------------------------------------------- */

/* A row of the tally: the figures of one (wf_uuid, stream, event, labels,
 * second), its key the bytes key_of makes. */
typedef struct {
    uint64_t hash;
    const unsigned char *key;
    size_t keylen;
    int64_t n, ms, first_ms, last_ms;
    double first_ts, last_ts;
    double sum[STORE_FIGURES_SUMMED], sum_ms[STORE_FIGURES_SUMMED];
} tally_row;

struct store_tally {
    sqlite3 *db;
    sqlite3_stmt *figures, *seconds;
    sqlite3_stmt *text_sums; /* what SQLite's total() makes of a text */
    pano_arena arena;        /* the rows' keys */
    tally_row *rows;
    size_t n, cap;
    uint32_t *slots; /* a row's index + 1, 0 when empty; a power of two of them */
    size_t nslots;
    pano_buf key; /* the key being looked up */
};

#define FIRST_SLOTS 1024
/* A tally counting a file's events writes its rows once it has this many,
 * or has counted this many events (a row's sum of milliseconds then stays
 * far within 64 bits: 10^6 x 10^13). */
#define COUNT_FLUSH_ROWS 65536
#define COUNT_FLUSH_EVENTS 1000000

static void append_cell(pano_buf *b, const store_cell *c)
{
    unsigned char type = (unsigned char)c->type;
    pano_buf_append(b, &type, 1);
    if (c->type == SQLITE_INTEGER)
        pano_buf_append(b, &c->i, sizeof c->i);
    else if (c->type == SQLITE_FLOAT)
        pano_buf_append(b, &c->r, sizeof c->r);
    else if (c->type == SQLITE_TEXT) {
        pano_buf_append(b, &c->len, sizeof c->len);
        pano_buf_append(b, c->text, (size_t)c->len);
    }
}

static const unsigned char *read_cell(const unsigned char *p, store_cell *c)
{
    *c = (store_cell){.type = *p++};
    if (c->type == SQLITE_INTEGER) {
        memcpy(&c->i, p, sizeof c->i);
        p += sizeof c->i;
    } else if (c->type == SQLITE_FLOAT) {
        memcpy(&c->r, p, sizeof c->r);
        p += sizeof c->r;
    } else if (c->type == SQLITE_TEXT) {
        memcpy(&c->len, p, sizeof c->len);
        c->text = (const char *)p + sizeof c->len;
        p += sizeof c->len + (size_t)c->len;
    }
    return p;
}

/* The key of e's row in t->key: wf_uuid, stream and event with their
 * NULs, the three labels' cells, the second. */
static void key_of(store_tally *t, const store_figures_event *e, int64_t second)
{
    pano_buf_clear(&t->key);
    pano_buf_append(&t->key, e->wf_uuid, strlen(e->wf_uuid) + 1);
    pano_buf_append(&t->key, e->stream, strlen(e->stream) + 1);
    pano_buf_append(&t->key, e->event, strlen(e->event) + 1);
    append_cell(&t->key, &e->wf_label);
    append_cell(&t->key, &e->dax_label);
    append_cell(&t->key, &e->delta);
    pano_buf_append(&t->key, &second, sizeof second);
}

/* A row's key read back: its strings and cells point into it. */
static void key_read(const tally_row *r, store_figures_event *e, int64_t *second)
{
    const unsigned char *p = r->key;
    e->wf_uuid = (const char *)p;
    p += strlen(e->wf_uuid) + 1;
    e->stream = (const char *)p;
    p += strlen(e->stream) + 1;
    e->event = (const char *)p;
    p += strlen(e->event) + 1;
    p = read_cell(p, &e->wf_label);
    p = read_cell(p, &e->dax_label);
    p = read_cell(p, &e->delta);
    memcpy(second, p, sizeof *second);
}

static void place_slots(store_tally *t)
{
    memset(t->slots, 0, t->nslots * sizeof *t->slots);
    for (size_t i = 0; i < t->n; i++) {
        size_t at = t->rows[i].hash & (t->nslots - 1);
        while (t->slots[at])
            at = (at + 1) & (t->nslots - 1);
        t->slots[at] = (uint32_t)(i + 1);
    }
}

/* The row of the key in t->key, made when new. */
static tally_row *row_of(store_tally *t)
{
    uint64_t h = pano_hash_bytes(t->key.data, t->key.len);
    size_t at = h & (t->nslots - 1);
    for (; t->slots[at]; at = (at + 1) & (t->nslots - 1)) {
        tally_row *r = &t->rows[t->slots[at] - 1];
        if (r->hash == h && r->keylen == t->key.len && memcmp(r->key, t->key.data, r->keylen) == 0)
            return r;
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : FIRST_SLOTS / 2;
        t->rows = pano_realloc(t->rows, t->cap * sizeof *t->rows);
    }
    unsigned char *key = pano_arena_alloc(&t->arena, t->key.len);
    memcpy(key, t->key.data, t->key.len);
    tally_row *r = &t->rows[t->n++];
    *r = (tally_row){.hash = h, .key = key, .keylen = t->key.len, .first_ms = INT64_MAX,
                     .last_ms = INT64_MIN, .first_ts = INFINITY, .last_ts = -INFINITY};
    t->slots[at] = (uint32_t)t->n;
    if (t->n * 2 > t->nslots) { /* at most half full */
        t->nslots *= 2;
        t->slots = pano_realloc(t->slots, t->nslots * sizeof *t->slots);
        place_slots(t);
    }
    return r;
}

/* A summed field's value c of an event at ms added to sum and sum_ms as
 * SQLite's total(f) and total(f * ms) add it. */
static void add_summed(store_tally *t, const store_cell *c, int64_t ms, double *sum, double *sum_ms)
{
    int64_t product;
    switch (c->type) {
    case SQLITE_INTEGER:
        *sum += (double)c->i;
        /* an integer product, or a real one where it overflows */
        *sum_ms += __builtin_mul_overflow(c->i, ms, &product) ? (double)c->i * (double)ms
                                                               : (double)product;
        break;
    case SQLITE_FLOAT:
        *sum += c->r;
        *sum_ms += c->r * (double)ms;
        break;
    case SQLITE_TEXT: /* what a text is worth, SQLite's to say */
        sqlite3_bind_text(t->text_sums, 1, c->text, c->len, SQLITE_STATIC);
        sqlite3_bind_int64(t->text_sums, 2, ms);
        if (sqlite3_step(t->text_sums) == SQLITE_ROW) {
            *sum += sqlite3_column_double(t->text_sums, 0);
            *sum_ms += sqlite3_column_double(t->text_sums, 1);
        }
        sqlite3_reset(t->text_sums);
        break;
    default: break; /* NULL: nothing */
    }
}

void store_tally_add(store_tally *t, const store_figures_event *e)
{
    int64_t ms = pano_event_ms(e->ts);
    key_of(t, e, ms / 1000);
    tally_row *r = row_of(t);
    r->n++;
    r->ms += ms;
    if (ms < r->first_ms)
        r->first_ms = ms;
    if (ms > r->last_ms)
        r->last_ms = ms;
    if (e->ts < r->first_ts)
        r->first_ts = e->ts;
    if (e->ts > r->last_ts)
        r->last_ts = e->ts;
    for (size_t i = 0; i < STORE_FIGURES_SUMMED; i++)
        add_summed(t, &e->summed[i], ms, &r->sum[i], &r->sum_ms[i]);
}

void store_cell_bind(sqlite3_stmt *st, int i, const store_cell *c)
{
    switch (c->type) {
    case SQLITE_INTEGER: sqlite3_bind_int64(st, i, c->i); break;
    case SQLITE_FLOAT: sqlite3_bind_double(st, i, c->r); break;
    case SQLITE_TEXT: sqlite3_bind_text(st, i, c->text, c->len, SQLITE_STATIC); break;
    default: sqlite3_bind_null(st, i); break;
    }
}

/* Parameters ?1 to ?7 of either statement: the key, the second last. */
static void bind_key(sqlite3_stmt *st, const tally_row *r)
{
    store_figures_event e;
    int64_t second;
    key_read(r, &e, &second);
    sqlite3_bind_text(st, 1, e.wf_uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e.stream, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, e.event, -1, SQLITE_STATIC);
    store_cell_bind(st, 4, &e.wf_label);
    store_cell_bind(st, 5, &e.dax_label);
    store_cell_bind(st, 6, &e.delta);
    sqlite3_bind_int64(st, 7, second);
}

static int step(sqlite3 *db, sqlite3_stmt *st, char *err, size_t errlen)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    if (rc < 0)
        snprintf(err, errlen, "the store's figures: %s", sqlite3_errmsg(db));
    sqlite3_reset(st);
    return rc;
}

int store_tally_flush(store_tally *t, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        const tally_row *r = &t->rows[i];
        /* the second's row; the whole's, to which SQLite adds it */
        bind_key(t->seconds, r);
        sqlite3_bind_int64(t->seconds, 8, r->n);
        sqlite3_bind_int64(t->seconds, 9, r->ms);
        sqlite3_bind_int64(t->seconds, 10, r->first_ms);
        sqlite3_bind_int64(t->seconds, 11, r->last_ms);
        for (int f = 0; f < STORE_FIGURES_SUMMED; f++) {
            sqlite3_bind_double(t->seconds, 12 + 2 * f, r->sum[f]);
            sqlite3_bind_double(t->seconds, 13 + 2 * f, r->sum_ms[f]);
        }
        rc = step(t->db, t->seconds, err, errlen);
        bind_key(t->figures, r);
        sqlite3_bind_int64(t->figures, 8, r->n);
        sqlite3_bind_double(t->figures, 9, r->first_ts);
        sqlite3_bind_double(t->figures, 10, r->last_ts);
        if (rc == 0)
            rc = step(t->db, t->figures, err, errlen);
    }
    store_tally_discard(t);
    return rc;
}

void store_tally_discard(store_tally *t)
{
    t->n = 0;
    memset(t->slots, 0, t->nslots * sizeof *t->slots);
    pano_arena_reset(&t->arena);
}

void store_tally_free(store_tally *t)
{
    if (!t)
        return;
    sqlite3_finalize(t->figures);
    sqlite3_finalize(t->seconds);
    sqlite3_finalize(t->text_sums);
    pano_arena_free(&t->arena);
    pano_buf_free(&t->key);
    free(t->rows);
    free(t->slots);
    free(t);
}

store_tally *store_tally_new(sqlite3 *db, const char *schema, char *err, size_t errlen)
{
    store_tally *t = pano_calloc(1, sizeof *t);
    t->db = db;
    pano_arena_init(&t->arena, 0);
    t->nslots = FIRST_SLOTS;
    t->slots = pano_calloc(t->nslots, sizeof *t->slots);
    /* ?1-?3 wf_uuid, stream, event; ?4-?6 the labels; ?7 the second */
    pano_buf figures = {0}, b = {0};
    pano_buf_appendf(&figures,
                     "INSERT INTO %s.figures (" KEY ", n, first, last)"
                     " VALUES (?1, ?2, ?3, json_array(?4, ?5, ?6), ?4, ?5, ?6, ?8, ?9, ?10)"
                     " ON CONFLICT DO UPDATE SET n = n + excluded.n,"
                     " first = min(first, excluded.first), last = max(last, excluded.last)",
                     schema);
    pano_buf_appendf(&b, "INSERT INTO %s.seconds (" KEY ", second, n, ms, first, last", schema);
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\", \"%s@ms\"", pano_store_summed_fields[i],
                         pano_store_summed_fields[i]);
    pano_buf_append_str(&b, ") VALUES (?1, ?2, ?3, json_array(?4, ?5, ?6), ?4, ?5, ?6, ?7, ?8, ?9,"
                            " ?10, ?11");
    for (int i = 0; i < STORE_FIGURES_SUMMED; i++)
        pano_buf_appendf(&b, ", ?%d, ?%d", 12 + 2 * i, 13 + 2 * i);
    pano_buf_append_str(&b, ") ON CONFLICT DO UPDATE SET n = n + excluded.n, ms = ms + excluded.ms,"
                            " first = min(first, excluded.first), last = max(last, excluded.last)");
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\" = \"%s\" + excluded.\"%s\","
                             " \"%s@ms\" = \"%s@ms\" + excluded.\"%s@ms\"",
                         pano_store_summed_fields[i], pano_store_summed_fields[i],
                         pano_store_summed_fields[i], pano_store_summed_fields[i],
                         pano_store_summed_fields[i], pano_store_summed_fields[i]);
    bool ok = sqlite3_prepare_v2(db, figures.data, -1, &t->figures, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db, b.data, -1, &t->seconds, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db, "SELECT total(?1), total(?1 * ?2)", -1, &t->text_sums,
                                 NULL) == SQLITE_OK;
    pano_buf_free(&figures);
    pano_buf_free(&b);
    if (!ok) {
        snprintf(err, errlen, "the store's figures: %s", sqlite3_errmsg(db));
        store_tally_free(t);
        return NULL;
    }
    return t;
}

/* ---- a file's events counted ----------------------------------------------------------- */

static store_cell cell_of_column(sqlite3_stmt *st, int i)
{
    store_cell c = {.type = sqlite3_column_type(st, i)};
    switch (c.type) {
    case SQLITE_INTEGER: c.i = sqlite3_column_int64(st, i); break;
    case SQLITE_FLOAT: c.r = sqlite3_column_double(st, i); break;
    case SQLITE_NULL: break;
    default: /* a text (the store binds no blob) */
        c.type = SQLITE_TEXT;
        c.text = (const char *)sqlite3_column_text(st, i);
        c.len = sqlite3_column_bytes(st, i);
        break;
    }
    return c;
}

int store_figures_count(sqlite3 *db, const char *schema, const char *where, char *err,
                        size_t errlen)
{
    store_tally *t = store_tally_new(db, schema, err, errlen);
    if (!t)
        return -1;
    pano_buf b = {0};
    pano_buf_append_str(&b, "SELECT wf_uuid, stream, event, \"wf_label\", \"dax_label\","
                            " \"delta\", ts");
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\"", pano_store_summed_fields[i]);
    pano_buf_appendf(&b, " FROM %s.events WHERE %s", schema, where);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, b.data, -1, &st, NULL) == SQLITE_OK ? 0 : -1, got;
    pano_buf_free(&b);
    size_t counted = 0;
    while (rc == 0 && (got = sqlite3_step(st)) == SQLITE_ROW) {
        store_figures_event e = {
            .wf_uuid = (const char *)sqlite3_column_text(st, 0),
            .stream = (const char *)sqlite3_column_text(st, 1),
            .event = (const char *)sqlite3_column_text(st, 2),
            .wf_label = cell_of_column(st, 3),
            .dax_label = cell_of_column(st, 4),
            .delta = cell_of_column(st, 5),
            .ts = sqlite3_column_double(st, 6),
        };
        for (int i = 0; i < STORE_FIGURES_SUMMED; i++)
            e.summed[i] = cell_of_column(st, 7 + i);
        if (!e.wf_uuid || !e.stream || !e.event) { /* out of memory */
            rc = -1;
            break;
        }
        store_tally_add(t, &e);
        if (++counted >= COUNT_FLUSH_EVENTS || t->n >= COUNT_FLUSH_ROWS) {
            counted = 0;
            if (store_tally_flush(t, err, errlen) < 0)
                rc = -2; /* err says why */
        }
    }
    if (rc == 0 && got != SQLITE_DONE)
        rc = -1;
    if (rc == -1)
        snprintf(err, errlen, "the store's figures: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (rc == 0)
        rc = store_tally_flush(t, err, errlen);
    store_tally_free(t);
    return rc < 0 ? -1 : 0;
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
                     " event TEXT NOT NULL, labels TEXT NOT NULL, \"wf_label\" TEXT,"
                     " \"dax_label\" TEXT, \"delta\" NUMERIC, n INTEGER NOT NULL, first REAL NOT NULL,"
                     " last REAL NOT NULL, PRIMARY KEY (wf_uuid, stream, event, labels))"
                     " WITHOUT ROWID;"
                     "CREATE TABLE %s.seconds (wf_uuid TEXT NOT NULL, stream TEXT NOT NULL,"
                     " event TEXT NOT NULL, labels TEXT NOT NULL, \"wf_label\" TEXT,"
                     " \"dax_label\" TEXT, \"delta\" NUMERIC, second INTEGER NOT NULL,"
                     " n INTEGER NOT NULL, ms REAL NOT NULL, first INTEGER NOT NULL,"
                     " last INTEGER NOT NULL",
                     schema, schema, schema, schema);
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\" REAL NOT NULL, \"%s@ms\" REAL NOT NULL",
                         pano_store_summed_fields[i], pano_store_summed_fields[i]);
    pano_buf_append_str(&b, ", PRIMARY KEY (wf_uuid, stream, event, labels, second))"
                            " WITHOUT ROWID;");
    int rc = run(db, b.data, err, errlen);
    pano_buf_free(&b);
    return rc < 0 ? -1 : store_figures_count(db, schema, "true", err, errlen);
}

int store_figures_recount(sqlite3 *db, const char *stream, char *err, size_t errlen)
{
    char *where = sqlite3_mprintf("stream = %Q", stream);
    char *del = sqlite3_mprintf("DELETE FROM main.figures WHERE stream = %Q;"
                                "DELETE FROM main.seconds WHERE stream = %Q",
                                stream, stream);
    int rc = run(db, del, err, errlen) < 0 || store_figures_count(db, "main", where, err, errlen) < 0
                 ? -1
                 : 0;
    sqlite3_free(where);
    sqlite3_free(del);
    return rc;
}
