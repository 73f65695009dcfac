#include "store_sqlite.h"

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "mem.h"
#include "partition.h"
#include "store.h"
#include "store_es.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting of filter and filters aggregations inside one bucket. */
#define MAX_PATH 12

/* ---- functions the SQL calls ------------------------------------------------------- */

/* pano_num(x): x as a number, as a numeric mapping indexes it ("512" is
 * 512); NULL when it is none. */
static void fn_num(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    switch (sqlite3_value_type(argv[0])) {
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
        sqlite3_result_value(ctx, argv[0]);
        return;
    case SQLITE_TEXT: {
        const char *t = (const char *)sqlite3_value_text(argv[0]);
        char *end;
        double v = t ? strtod(t, &end) : 0;
        if (t && *t && !*end && isfinite(v))
            sqlite3_result_double(ctx, v);
        else
            sqlite3_result_null(ctx);
        return;
    }
    default:
        sqlite3_result_null(ctx);
    }
}

/* pano_bucket(ms, interval, offset): the start of the date_histogram bucket. */
static void fn_bucket(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    int64_t v = sqlite3_value_int64(argv[0]), step = sqlite3_value_int64(argv[1]),
            offset = sqlite3_value_int64(argv[2]);
    int64_t d = v - offset, q = d / step;
    if (d % step != 0 && d < 0)
        q--;
    sqlite3_result_int64(ctx, q * step + offset);
}

/* Compensated (Kahan) sums, as Elasticsearch's sum, avg and weighted_avg. */
typedef struct {
    double sum, c, weight, wc;
    int64_t n;
} kahan;

static void kahan_add(double *sum, double *c, double v)
{
    double y = v - *c, t = *sum + y;
    *c = (t - *sum) - y;
    *sum = t;
}

static void fn_sum_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    kahan *k = sqlite3_aggregate_context(ctx, sizeof *k);
    if (!k || sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    kahan_add(&k->sum, &k->c, sqlite3_value_double(argv[0]));
    k->n++;
}

static void fn_sum_final(sqlite3_context *ctx)
{
    kahan *k = sqlite3_aggregate_context(ctx, 0);
    sqlite3_result_double(ctx, k ? k->sum : 0);
}

static void fn_avg_final(sqlite3_context *ctx)
{
    kahan *k = sqlite3_aggregate_context(ctx, 0);
    if (k && k->n > 0)
        sqlite3_result_double(ctx, k->sum / (double)k->n);
    else
        sqlite3_result_null(ctx);
}

/* pano_ratio(num, den): Σ num / Σ den over the rows with both: a
 * weighted_avg (num the value times the weight, den the weight), of the
 * events or from the seconds' sums. */
static void fn_ratio_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    kahan *k = sqlite3_aggregate_context(ctx, sizeof *k);
    if (!k || sqlite3_value_type(argv[0]) == SQLITE_NULL ||
        sqlite3_value_type(argv[1]) == SQLITE_NULL)
        return;
    kahan_add(&k->sum, &k->c, sqlite3_value_double(argv[0]));
    kahan_add(&k->weight, &k->wc, sqlite3_value_double(argv[1]));
    k->n++;
}

static void fn_ratio_final(sqlite3_context *ctx)
{
    kahan *k = sqlite3_aggregate_context(ctx, 0);
    if (k && k->n > 0 && k->weight != 0)
        sqlite3_result_double(ctx, k->sum / k->weight);
    else
        sqlite3_result_null(ctx);
}

int store_sqlite_prepare(sqlite3 *db, char *err, size_t errlen)
{
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    if (sqlite3_create_function(db, "pano_num", 1, flags, NULL, fn_num, NULL, NULL) ||
        sqlite3_create_function(db, "pano_bucket", 3, flags, NULL, fn_bucket, NULL, NULL) ||
        sqlite3_create_function(db, "pano_sum", 1, flags, NULL, NULL, fn_sum_step,
                                fn_sum_final) ||
        sqlite3_create_function(db, "pano_avg", 1, flags, NULL, NULL, fn_sum_step,
                                fn_avg_final) ||
        sqlite3_create_function(db, "pano_ratio", 2, flags, NULL, NULL, fn_ratio_step,
                                fn_ratio_final)) {
        snprintf(err, errlen, "cannot prepare the store: %s", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

/* ---- a search --------------------------------------------------------------------- */

typedef struct {
    sqlite3 *db;
    char *err;
    size_t errlen;
    bool failed;
    bool figures; /* the reader has the store's figures (store_figures.h) */
} ctx;

static int fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ctx *c, const char *fmt, ...)
{
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    c->failed = true;
    return -1;
}

/* The SQL of a field: a column of the events view, @timestamp, or a member
 * of the event's JSON (a dotted name is a path). */
static int field_sql(ctx *c, const char *field, pano_buf *out)
{
    static const char *const columns[] = {"event", "event_id", "wf_uuid", "ts", NULL};
    for (size_t i = 0; columns[i]; i++)
        if (strcmp(field, columns[i]) == 0) {
            pano_buf_append_str(out, field);
            return 0;
        }
    if (strcmp(field, "@timestamp") == 0) {
        pano_buf_append_str(out, "pano_ms(ts)");
        return 0;
    }
    if (strcmp(field, "_id") == 0) {
        pano_buf_append_str(out, "event_id");
        return 0;
    }
    for (size_t i = 0; pano_store_fields[i]; i++)
        if (strcmp(field, pano_store_fields[i]) == 0) { /* a column of its own */
            pano_buf_appendf(out, "\"%s\"", field);
            return 0;
        }
    if (!*field || strlen(field) > 200)
        return fail(c, "the embedded store cannot read the field '%.200s'", field);
    pano_buf_append_str(out, "json_extract(doc, '$");
    for (const char *p = field; *p;) {
        size_t n = strcspn(p, ".");
        for (size_t i = 0; i < n; i++)
            if (!(p[i] == '_' || p[i] == '-' || p[i] == '@' || (p[i] >= '0' && p[i] <= '9') ||
                  (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z')))
                return fail(c, "the embedded store cannot read the field '%.200s'", field);
        pano_buf_appendf(out, ".\"%.*s\"", (int)n, p);
        p += n + (p[n] == '.');
    }
    pano_buf_append_str(out, "')");
    return 0;
}

/* Whether a field is the event's time, which every event has. */
static bool is_time(const char *field)
{
    return strcmp(field, "ts") == 0 || strcmp(field, "@timestamp") == 0;
}

/* The SQL of a field as a number (pano_num), the event's time as it is. */
static int number_sql(ctx *c, const char *field, pano_buf *out)
{
    bool time = is_time(field);
    pano_buf_append_str(out, time ? "" : "pano_num(");
    if (field_sql(c, field, out) < 0)
        return -1;
    pano_buf_append_str(out, time ? "" : ")");
    return 0;
}

/* A JSON value as an SQL literal. */
static int literal(ctx *c, const pano_json *v, pano_buf *out)
{
    switch (v ? v->type : PANO_JSON_NULL) {
    case PANO_JSON_STRING: {
        char *q = sqlite3_mprintf("%Q", v->u.string.text);
        pano_buf_append_str(out, q);
        sqlite3_free(q);
        return 0;
    }
    case PANO_JSON_INT:
        pano_buf_appendf(out, "%lld", (long long)v->u.integer);
        return 0;
    case PANO_JSON_DOUBLE:
        pano_buf_appendf(out, "%.17g", v->u.real.value);
        return 0;
    case PANO_JSON_BOOL:
        pano_buf_append_str(out, v->u.boolean ? "'true'" : "'false'");
        return 0;
    default:
        return fail(c, "the embedded store cannot compare with that value");
    }
}

/* The value's literal and, where a mapping would make it equal to another
 * type's, that one too ("0" and 0; 12 and "12"): a term matches a number
 * sent as a string, as Elasticsearch's mappings coerce it. */
static int literals(ctx *c, const pano_json *v, pano_buf *out)
{
    if (literal(c, v, out) < 0)
        return -1;
    if (v->type == PANO_JSON_STRING) {
        char *end;
        double d = strtod(v->u.string.text, &end);
        if (*v->u.string.text && !*end && isfinite(d))
            pano_buf_appendf(out, ", %.17g", d);
    } else if (v->type == PANO_JSON_INT)
        pano_buf_appendf(out, ", '%lld'", (long long)v->u.integer);
    return 0;
}

/* {"kind": {"field": value}} or {"kind": {"field": {"value": value}}}: the field's name. */
static const char *field_and_value(const pano_json *q, const pano_json **value)
{
    if (pano_json_len(q) != 1)
        return NULL;
    const pano_json *v = pano_json_at(q, 0);
    if (v->type == PANO_JSON_OBJECT && pano_json_get(v, "value"))
        v = pano_json_get(v, "value");
    *value = v;
    return pano_json_key_at(q, 0);
}

static int where_of(ctx *c, const pano_json *query, pano_buf *out);

/* The clauses of a bool query's part (an array, or one query). */
static int clauses(ctx *c, const pano_json *part, const char *join, bool negate, pano_buf *out,
                   size_t *n)
{
    if (!part)
        return 0;
    size_t count = part->type == PANO_JSON_ARRAY ? pano_json_len(part) : 1;
    for (size_t i = 0; i < count; i++) {
        const pano_json *q = part->type == PANO_JSON_ARRAY ? pano_json_at(part, i) : part;
        pano_buf_append_str(out, (*n)++ ? join : "");
        /* a comparison with a field an event lacks is NULL: it does not
         * match, so the negation does (NOT NULL would be NULL) */
        pano_buf_append_str(out, negate ? "NOT coalesce((" : "(");
        if (where_of(c, q, out) < 0)
            return -1;
        pano_buf_append_str(out, negate ? "), 0)" : ")");
    }
    return 0;
}

static int where_bool(ctx *c, const pano_json *b, pano_buf *out)
{
    size_t n = 0;
    pano_buf_append_str(out, "(");
    if (clauses(c, pano_json_get(b, "filter"), " AND ", false, out, &n) < 0 ||
        clauses(c, pano_json_get(b, "must"), " AND ", false, out, &n) < 0)
        return -1;
    /* should: at least one when there is no filter or must, unless told otherwise */
    const pano_json *should = pano_json_get(b, "should");
    size_t ns = !should ? 0 : should->type == PANO_JSON_ARRAY ? pano_json_len(should) : 1;
    int64_t min = n == 0 && ns > 0 ? 1 : 0;
    pano_json_get_int(b, "minimum_should_match", &min);
    if (clauses(c, pano_json_get(b, "must_not"), " AND ", true, out, &n) < 0)
        return -1;
    if (min > 1)
        return fail(c, "the embedded store answers minimum_should_match 1 only");
    if (min == 1) {
        size_t k = 0;
        pano_buf_append_str(out, n++ ? " AND (" : "(");
        if (ns == 0)
            pano_buf_append_str(out, "0");
        else if (clauses(c, should, " OR ", false, out, &k) < 0)
            return -1;
        pano_buf_append_str(out, ")");
    }
    if (n == 0)
        pano_buf_append_str(out, "1");
    pano_buf_append_str(out, ")");
    return 0;
}

/* The first string with the same prefix that sorts after every string of it. */
static bool prefix_end(const char *p, char *out, size_t size)
{
    size_t n = strlen(p);
    if (n == 0 || n >= size || (unsigned char)p[n - 1] == 0xFF)
        return false;
    memcpy(out, p, n + 1);
    out[n - 1] = (char)((unsigned char)out[n - 1] + 1);
    return true;
}

static int where_of(ctx *c, const pano_json *query, pano_buf *out)
{
    if (!query || query->type != PANO_JSON_OBJECT || pano_json_len(query) != 1)
        return fail(c, "the embedded store cannot read that query");
    const char *kind = pano_json_key_at(query, 0);
    const pano_json *q = pano_json_at(query, 0), *v = NULL;
    if (strcmp(kind, "bool") == 0)
        return where_bool(c, q, out);
    if (strcmp(kind, "match_all") == 0) {
        pano_buf_append_str(out, "1");
        return 0;
    }
    if (strcmp(kind, "exists") == 0) {
        const char *f = pano_json_get_str(q, "field");
        if (!f || field_sql(c, f, out) < 0)
            return fail(c, "the embedded store cannot read that exists query");
        pano_buf_append_str(out, " IS NOT NULL");
        return 0;
    }
    const char *field = field_and_value(q, &v);
    if (!field)
        return fail(c, "the embedded store cannot read that %s query", kind);
    if (strcmp(kind, "term") == 0) {
        if (field_sql(c, field, out) < 0)
            return -1;
        pano_buf_append_str(out, " IN (");
        if (literals(c, v, out) < 0)
            return -1;
        pano_buf_append_str(out, ")");
        return 0;
    }
    if (strcmp(kind, "terms") == 0) {
        if (!v || v->type != PANO_JSON_ARRAY)
            return fail(c, "a terms query needs a list");
        if (pano_json_len(v) == 0) {
            pano_buf_append_str(out, "0");
            return 0;
        }
        if (field_sql(c, field, out) < 0)
            return -1;
        pano_buf_append_str(out, " IN (");
        for (size_t i = 0; i < pano_json_len(v); i++) {
            pano_buf_append_str(out, i ? ", " : "");
            if (literals(c, pano_json_at(v, i), out) < 0)
                return -1;
        }
        pano_buf_append_str(out, ")");
        return 0;
    }
    if (strcmp(kind, "prefix") == 0) {
        char end[512];
        if (!v || v->type != PANO_JSON_STRING || !prefix_end(v->u.string.text, end, sizeof end))
            return fail(c, "the embedded store cannot read that prefix query");
        pano_json *hi = pano_json_string(end);
        pano_buf_append_str(out, "(");
        int rc = field_sql(c, field, out);
        pano_buf_append_str(out, " >= ");
        rc |= literal(c, v, out);
        pano_buf_append_str(out, " AND ");
        rc |= field_sql(c, field, out);
        pano_buf_append_str(out, " < ");
        rc |= literal(c, hi, out);
        pano_buf_append_str(out, ")");
        pano_json_free(hi);
        return rc < 0 ? -1 : 0;
    }
    if (strcmp(kind, "range") == 0) {
        static const char *const ops[][2] = {{"gt", ">"}, {"gte", ">="}, {"lt", "<"}, {"lte", "<="}};
        size_t n = 0;
        pano_buf_append_str(out, "(");
        for (size_t i = 0; i < 4; i++) {
            const pano_json *bound = pano_json_get(v, ops[i][0]); /* v: the field's bounds */
            if (!bound)
                continue;
            if (bound->type != PANO_JSON_INT && bound->type != PANO_JSON_DOUBLE)
                return fail(c, "the embedded store compares with numbers only");
            pano_buf_append_str(out, n++ ? " AND " : "");
            if (field_sql(c, field, out) < 0)
                return -1;
            pano_buf_appendf(out, " %s ", ops[i][1]);
            literal(c, bound, out);
            if (strcmp(field, "@timestamp") == 0) {
                /* and a looser bound on ts itself, which an index can seek */
                double ms = bound->type == PANO_JSON_INT ? (double)bound->u.integer
                                                         : bound->u.real.value;
                bool lower = ops[i][1][0] == '>';
                pano_buf_appendf(out, " AND ts %s %.17g", lower ? ">=" : "<=",
                                 (ms + (lower ? -2 : 2)) / 1000.0);
            }
        }
        pano_buf_append_str(out, n ? ")" : "1)");
        return 0;
    }
    return fail(c, "the embedded store cannot answer a '%s' query", kind);
}

/* ---- buckets: the objects a level's aggregations are written into ------------------ */

typedef struct {
    char *key;
    pano_json *obj;
} slot;

/* The buckets of one level of aggregations, found by the values of the SQL
 * expressions that tell them apart (none at the top: one bucket, the answer). */
typedef struct {
    char **exprs;
    size_t nexprs;
    bool figures; /* the expressions read the figures' fields alone */
    bool seconds; /* the expressions read seconds' second: so does every statement below */
    slot *slots;
    size_t cap, n;
} level;

static uint64_t hash_of(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void level_put(level *lv, const char *key, pano_json *obj)
{
    if ((lv->n + 1) * 2 > lv->cap) {
        size_t cap = lv->cap ? lv->cap * 2 : 64;
        slot *slots = pano_calloc(cap, sizeof *slots);
        for (size_t i = 0; i < lv->cap; i++)
            if (lv->slots[i].key) {
                size_t j = hash_of(lv->slots[i].key) & (cap - 1);
                while (slots[j].key)
                    j = (j + 1) & (cap - 1);
                slots[j] = lv->slots[i];
            }
        free(lv->slots);
        lv->slots = slots;
        lv->cap = cap;
    }
    size_t j = hash_of(key) & (lv->cap - 1);
    while (lv->slots[j].key)
        j = (j + 1) & (lv->cap - 1);
    lv->slots[j] = (slot){pano_strdup(key), obj};
    lv->n++;
}

static pano_json *level_get(const level *lv, const char *key)
{
    if (!lv->cap)
        return NULL;
    for (size_t j = hash_of(key) & (lv->cap - 1); lv->slots[j].key; j = (j + 1) & (lv->cap - 1))
        if (strcmp(lv->slots[j].key, key) == 0)
            return lv->slots[j].obj;
    return NULL;
}

static void level_free(level *lv)
{
    for (size_t i = 0; i < lv->cap; i++)
        free(lv->slots[i].key);
    free(lv->slots);
    for (size_t i = 0; i < lv->nexprs; i++)
        free(lv->exprs[i]);
    free(lv->exprs);
}

/* A level under lv, told apart by n more expressions (of the figures'
 * fields alone: figures). */
static void level_below(const level *lv, char *const *exprs, size_t n, bool figures, level *out)
{
    memset(out, 0, sizeof *out);
    out->figures = lv->figures && figures;
    out->nexprs = lv->nexprs + n;
    out->exprs = pano_calloc(out->nexprs, sizeof *out->exprs);
    for (size_t i = 0; i < lv->nexprs; i++)
        out->exprs[i] = pano_strdup(lv->exprs[i]);
    for (size_t i = 0; i < n; i++)
        out->exprs[lv->nexprs + i] = pano_strdup(exprs[i]);
}

/* The key of a row's first n columns (values of a level's expressions). */
static void row_key(sqlite3_stmt *st, int n, pano_buf *out)
{
    pano_buf_clear(out);
    pano_buf_append_str(out, "k");
    for (int i = 0; i < n; i++)
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_NULL:
            pano_buf_append_str(out, "n|");
            break;
        case SQLITE_INTEGER:
            pano_buf_appendf(out, "i%lld|", (long long)sqlite3_column_int64(st, i));
            break;
        case SQLITE_FLOAT:
            pano_buf_appendf(out, "f%.17g|", sqlite3_column_double(st, i));
            break;
        default: {
            const char *t = (const char *)sqlite3_column_text(st, i);
            int len = sqlite3_column_bytes(st, i);
            pano_buf_appendf(out, "t%d:", len);
            pano_buf_append(out, t ? t : "", (size_t)len);
            pano_buf_append_str(out, "|");
        }
        }
}

/* The bucket of lv a row belongs to (its first columns are lv's
 * expressions), or NULL; key is scratch. */
static pano_json *bucket_of_row(const level *lv, sqlite3_stmt *st, pano_buf *key)
{
    row_key(st, (int)lv->nexprs, key);
    return level_get(lv, key->data);
}

static pano_json *column_json(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return pano_json_int(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return pano_json_double(sqlite3_column_double(st, i), -1);
    case SQLITE_NULL:
        return pano_json_null();
    default:
        return pano_json_string_len((const char *)sqlite3_column_text(st, i),
                                    (size_t)sqlite3_column_bytes(st, i));
    }
}

/* The group's columns of lv as "e1, e2, " (or ""). */
static void group_columns(const level *lv, pano_buf *out)
{
    for (size_t i = 0; i < lv->nexprs; i++)
        pano_buf_appendf(out, "%s, ", lv->exprs[i]);
}

static void group_by(const level *lv, size_t extra, pano_buf *out)
{
    size_t n = lv->nexprs + extra;
    for (size_t i = 0; i < n; i++)
        pano_buf_appendf(out, "%s%zu", i ? ", " : " GROUP BY ", i + 1);
}

/* Run sql, calling row() for each row; -1 on failure. */
static int each_row(ctx *c, const char *sql, int (*row)(sqlite3_stmt *st, void *user), void *user)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(c, "the embedded store: %s", sqlite3_errmsg(c->db));
    double t0 = pano_now();
    int rc;
    long rows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        rows++;
        if (row(st, user) < 0) {
            sqlite3_finalize(st);
            return -1;
        }
    }
    if (rc != SQLITE_DONE) {
        fail(c, "the embedded store: %s", sqlite3_errmsg(c->db));
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    pano_debug("%ld rows in %.0f ms: %s", rows, (pano_now() - t0) * 1000, sql);
    return 0;
}

/* ---- empty answers ---------------------------------------------------------------- */

static bool is_metric(const char *kind)
{
    static const char *const metrics[] = {"min", "max", "sum", "avg", "value_count",
                                          "stats", "weighted_avg", NULL};
    for (size_t i = 0; metrics[i]; i++)
        if (strcmp(kind, metrics[i]) == 0)
            return true;
    return false;
}

/* The kind of an aggregation: its one key besides "aggs". */
static const char *kind_of(const pano_json *spec, const pano_json **body)
{
    for (size_t i = 0; i < pano_json_len(spec); i++)
        if (strcmp(pano_json_key_at(spec, i), "aggs") != 0) {
            *body = pano_json_at(spec, i);
            return pano_json_key_at(spec, i);
        }
    *body = NULL;
    return "";
}

/* Each aggregation of aggs, in obj, as over no document at all. */
static void prefill(pano_json *obj, const pano_json *aggs)
{
    for (size_t i = 0; i < pano_json_len(aggs); i++) {
        const char *name = pano_json_key_at(aggs, i);
        const pano_json *spec = pano_json_at(aggs, i), *body;
        const char *kind = kind_of(spec, &body);
        const pano_json *sub = pano_json_get(spec, "aggs");
        if (strcmp(kind, "sum") == 0 || strcmp(kind, "value_count") == 0)
            pano_json_set_int(pano_json_set_object(obj, name), "value", 0);
        else if (strcmp(kind, "stats") == 0) {
            pano_json *s = pano_json_set_object(obj, name);
            pano_json_set_int(s, "count", 0);
            pano_json_set(s, "min", pano_json_null());
            pano_json_set(s, "max", pano_json_null());
            pano_json_set(s, "avg", pano_json_null());
            pano_json_set_int(s, "sum", 0);
        } else if (is_metric(kind))
            pano_json_set(pano_json_set_object(obj, name), "value", pano_json_null());
        else if (strcmp(kind, "filter") == 0) {
            pano_json *f = pano_json_set_object(obj, name);
            pano_json_set_int(f, "doc_count", 0);
            prefill(f, sub);
        } else if (strcmp(kind, "filters") == 0) {
            pano_json *b = pano_json_set_object(pano_json_set_object(obj, name), "buckets");
            const pano_json *fs = pano_json_get(body, "filters");
            for (size_t k = 0; k < pano_json_len(fs); k++) {
                pano_json *f = pano_json_set_object(b, pano_json_key_at(fs, k));
                pano_json_set_int(f, "doc_count", 0);
                prefill(f, sub);
            }
        } else if (strcmp(kind, "top_hits") == 0)
            pano_json_set_array(pano_json_set_object(pano_json_set_object(obj, name), "hits"),
                                "hits");
        else if (strcmp(kind, "max_bucket") == 0)
            pano_json_set(pano_json_set_object(obj, name), "value", pano_json_null());
        else if (strcmp(kind, "terms") == 0 || strcmp(kind, "composite") == 0 ||
                 strcmp(kind, "date_histogram") == 0)
            pano_json_set_array(pano_json_set_object(obj, name), "buckets");
        /* cumulative_sum: set by its histogram */
    }
}

static char *parse_interval(const pano_json *body, int64_t *step)
{
    const char *text = pano_json_get_str(body, "fixed_interval");
    char *end;
    long long v = text ? strtoll(text, &end, 10) : 0;
    if (!text || v <= 0 || strcmp(end, "ms") != 0)
        return pano_strdup(text ? text : "none");
    *step = v;
    return NULL;
}

/* ---- the figures: the searches a workflow's counts of events answer --------------- */

/* The store's figures (store_figures.h) count a file's events per
 * workflow, stream, event, label and delta (whether a sample carries its
 * change), with their first and last ts. A
 * statement whose conditions and groups read those fields alone, and whose
 * metrics are counts and the first or last ts, reads the figures instead
 * of the events: the same answer from a few rows (sum(n) for count(*),
 * min(first) for min(ts), max(last) for max(ts)). */

static bool figures_field(const char *field)
{
    static const char *const fields[] = {"wf_uuid", "event", "wf_label", "dax_label", "delta",
                                         NULL};
    for (size_t i = 0; fields[i]; i++)
        if (strcmp(field, fields[i]) == 0)
            return true;
    return false;
}

/* Whether query reads the figures' fields alone (a bool part: an array or one query). */
static bool figures_query(const pano_json *query)
{
    if (!query)
        return true;
    if (query->type == PANO_JSON_ARRAY) {
        for (size_t i = 0; i < pano_json_len(query); i++)
            if (!figures_query(pano_json_at(query, i)))
                return false;
        return true;
    }
    if (query->type != PANO_JSON_OBJECT || pano_json_len(query) != 1)
        return false;
    const char *kind = pano_json_key_at(query, 0);
    const pano_json *q = pano_json_at(query, 0), *v;
    if (strcmp(kind, "bool") == 0) {
        static const char *const parts[] = {"filter", "must", "should", "must_not", NULL};
        for (size_t i = 0; parts[i]; i++)
            if (!figures_query(pano_json_get(q, parts[i])))
                return false;
        return true;
    }
    if (strcmp(kind, "match_all") == 0)
        return true;
    if (strcmp(kind, "exists") == 0) {
        const char *f = pano_json_get_str(q, "field");
        return f && figures_field(f);
    }
    const char *f = field_and_value(q, &v);
    return f && figures_field(f) &&
           (strcmp(kind, "term") == 0 || strcmp(kind, "terms") == 0 ||
            strcmp(kind, "prefix") == 0);
}

/* Whether the metrics of aggs, in its filters too, are the first or last
 * ts, under conditions on the figures' fields (its buckets and hits are
 * read by statements of their own, which decide for themselves). */
static bool figures_metrics(const pano_json *aggs)
{
    for (size_t i = 0; i < pano_json_len(aggs); i++) {
        const pano_json *spec = pano_json_at(aggs, i), *body;
        const char *kind = kind_of(spec, &body);
        const pano_json *sub = pano_json_get(spec, "aggs");
        if (is_metric(kind)) {
            const char *f = pano_json_get_str(body, "field");
            if (!(strcmp(kind, "min") == 0 || strcmp(kind, "max") == 0) || !f ||
                strcmp(f, "ts") != 0)
                return false;
        } else if (strcmp(kind, "filter") == 0) {
            if (!figures_query(body) || !figures_metrics(sub))
                return false;
        } else if (strcmp(kind, "filters") == 0) {
            const pano_json *fs = pano_json_get(body, "filters");
            for (size_t k = 0; k < pano_json_len(fs); k++)
                if (!figures_query(pano_json_at(fs, k)))
                    return false;
            if (!figures_metrics(sub))
                return false;
        }
    }
    return true;
}

/* The store's seconds (store_figures.h) are the figures per second of
 * the events' milliseconds, with the sums of pano_store_summed_fields and
 * of each times the milliseconds. A date histogram of @timestamp in whole
 * seconds (and whole-second offset) whose metrics are those sums, the sum,
 * first or last of @timestamp, and a summed field's mean weighted by
 * @timestamp (missing 0: Σ v·t / Σ t), under conditions on the figures'
 * fields, and so are its histograms below, reads them instead of the
 * events: a few rows a second whatever the samples. */

static bool summed_field(const char *field)
{
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        if (strcmp(field, pano_store_summed_fields[i]) == 0)
            return true;
    return false;
}

static bool seconds_aggs(const pano_json *aggs);

/* Whether spec, a date_histogram, is one the seconds answer. */
static bool seconds_histogram(const pano_json *spec)
{
    const pano_json *body;
    if (strcmp(kind_of(spec, &body), "date_histogram") != 0)
        return false;
    const char *f = pano_json_get_str(body, "field");
    int64_t step = 0, offset = 0;
    char *bad = parse_interval(body, &step);
    free(bad);
    pano_json_get_int(body, "offset", &offset);
    return !bad && f && strcmp(f, "@timestamp") == 0 && step % 1000 == 0 && offset % 1000 == 0 &&
           seconds_aggs(pano_json_get(spec, "aggs"));
}

static bool seconds_aggs(const pano_json *aggs)
{
    for (size_t i = 0; i < pano_json_len(aggs); i++) {
        const pano_json *spec = pano_json_at(aggs, i), *body;
        const char *kind = kind_of(spec, &body);
        const pano_json *sub = pano_json_get(spec, "aggs");
        const char *f = pano_json_get_str(body, "field");
        bool ok;
        if (strcmp(kind, "sum") == 0)
            ok = f && (strcmp(f, "@timestamp") == 0 || summed_field(f));
        else if (strcmp(kind, "min") == 0 || strcmp(kind, "max") == 0)
            ok = f && strcmp(f, "@timestamp") == 0;
        else if (strcmp(kind, "weighted_avg") == 0) {
            const pano_json *value = pano_json_get(body, "value");
            const char *vf = pano_json_get_str(value, "field");
            const char *wf = pano_json_get_str(pano_json_get(body, "weight"), "field");
            double missing = NAN;
            pano_json_get_number(value, "missing", &missing);
            ok = vf && summed_field(vf) && wf && strcmp(wf, "@timestamp") == 0 && missing == 0;
        } else if (strcmp(kind, "filter") == 0)
            ok = figures_query(body) && seconds_aggs(sub);
        else if (strcmp(kind, "date_histogram") == 0)
            ok = seconds_histogram(spec);
        else
            ok = strcmp(kind, "cumulative_sum") == 0 || strcmp(kind, "max_bucket") == 0;
        if (!ok)
            return false;
    }
    return true;
}

/* ---- one level: its metrics in one statement, its buckets and hits below ------------- */

typedef enum { ITEM_VALUE, ITEM_COUNT, ITEM_STATS } item_kind;

/* What a statement reads: the events, or the store's figures, or its seconds. */
typedef enum { READ_EVENTS, READ_FIGURES, READ_SECONDS } reads;

typedef struct {
    const char *names[MAX_PATH];
    int depth; /* bucket[names[0]]...[names[depth-1]] */
    item_kind kind;
    int col;
} item;

/* An aggregation run by a statement of its own: buckets or hits. */
typedef struct {
    const char *names[MAX_PATH];
    int depth;
    const pano_json *spec;
    char *where;
    bool figures; /* where reads the figures' fields alone */
} deferred;

typedef struct {
    pano_buf select;
    int ncols;
    item *items;
    size_t nitems;
    deferred *defs;
    size_t ndefs;
    reads from; /* what its statement reads */
} walk;

static pano_json *at_path(pano_json *obj, const char *const *names, int depth)
{
    for (int d = 0; d < depth && obj; d++)
        obj = pano_json_get(obj, names[d]);
    return obj;
}

/* ", fn(expr) [FILTER (WHERE cond)]" */
static void add_column(walk *w, const char *fn, const char *expr, const char *cond)
{
    pano_buf_appendf(&w->select, ", %s(%s)", fn, expr);
    if (cond)
        pano_buf_appendf(&w->select, " FILTER (WHERE %s)", cond);
    w->ncols++;
}

/* What each of reads is: its table, and how its rows count events. */
static const struct {
    const char *table, *count_fn, *count_arg;
} read_sql[] = {
    [READ_EVENTS] = {"events", "count", "*"},
    [READ_FIGURES] = {"figures", "total", "n"},
    [READ_SECONDS] = {"seconds", "total", "n"},
};

/* ", count(*)" of the events, or the sum of the figures' counts */
static void add_count(walk *w, const char *cond)
{
    add_column(w, read_sql[w->from].count_fn, read_sql[w->from].count_arg, cond);
}

static item *add_item(walk *w, const char *const *names, int depth, item_kind kind)
{
    w->items = pano_reallocarray(w->items, w->nitems + 1, sizeof *w->items);
    item *it = &w->items[w->nitems++];
    memset(it, 0, sizeof *it);
    memcpy(it->names, names, (size_t)depth * sizeof *names);
    it->depth = depth;
    it->kind = kind;
    it->col = w->ncols; /* the next column, relative to the level's own */
    return it;
}

static char *and_of(const char *a, const char *b)
{
    return a ? pano_asprintf("(%s) AND (%s)", a, b) : pano_strdup(b);
}

/* Collect the metrics of aggs (in filter aggregations too) as columns of the
 * level's statement, and the aggregations needing their own. */
static int walk_aggs(ctx *c, walk *w, const pano_json *aggs, const char *cond,
                     bool cond_figures, const char **names, int depth)
{
    if (depth + 3 > MAX_PATH)
        return fail(c, "aggregations nested too deep for the embedded store");
    for (size_t i = 0; i < pano_json_len(aggs); i++) {
        const char *name = pano_json_key_at(aggs, i);
        const pano_json *spec = pano_json_at(aggs, i), *body;
        const char *kind = kind_of(spec, &body);
        const pano_json *sub = pano_json_get(spec, "aggs");
        names[depth] = name;
        if (is_metric(kind)) {
            pano_buf expr = {0};
            const char *f = pano_json_get_str(body, "field");
            if (strcmp(kind, "weighted_avg") == 0) {
                const pano_json *value = pano_json_get(body, "value");
                const char *vf = pano_json_get_str(value, "field");
                const char *wf = pano_json_get_str(pano_json_get(body, "weight"), "field");
                double missing = NAN;
                if (!vf || !wf)
                    return fail(c, "a weighted_avg needs a value and a weight field");
                if (w->from == READ_SECONDS) { /* seconds_aggs: of a sum, by @timestamp */
                    pano_buf_appendf(&expr, "\"%s@ms\", ms", vf);
                    add_item(w, names, depth + 1, ITEM_VALUE);
                    add_column(w, "pano_ratio", expr.data, cond);
                    pano_buf_free(&expr);
                    continue;
                }
                /* Σ v·w / Σ w over the events with both */
                pano_buf v = {0}, weight = {0};
                pano_json_get_number(value, "missing", &missing);
                pano_buf_append_str(&v, isnan(missing) ? "" : "coalesce(");
                int rc = number_sql(c, vf, &v) < 0 || number_sql(c, wf, &weight) < 0 ? -1 : 0;
                if (!isnan(missing))
                    pano_buf_appendf(&v, ", %.17g)", missing);
                if (rc == 0)
                    pano_buf_appendf(&expr, "(%s) * (%s), %s", v.data, weight.data, weight.data);
                pano_buf_free(&v);
                pano_buf_free(&weight);
                if (rc < 0)
                    return -1;
                add_item(w, names, depth + 1, ITEM_VALUE);
                add_column(w, "pano_ratio", expr.data, cond);
                pano_buf_free(&expr);
                continue;
            }
            if (!f)
                return fail(c, "a %s aggregation needs a field", kind);
            if (w->from == READ_FIGURES) { /* figures_metrics: the first or last ts */
                add_item(w, names, depth + 1, ITEM_VALUE);
                add_column(w, kind, strcmp(kind, "min") == 0 ? "first" : "last", cond);
                continue;
            }
            if (w->from == READ_SECONDS) { /* seconds_aggs: of @timestamp, or a sum */
                add_item(w, names, depth + 1, ITEM_VALUE);
                if (strcmp(kind, "sum") == 0) {
                    pano_buf_appendf(&expr, "\"%s\"", is_time(f) ? "ms" : f);
                    add_column(w, "pano_sum", expr.data, cond);
                    pano_buf_free(&expr);
                } else
                    add_column(w, kind, strcmp(kind, "min") == 0 ? "first" : "last", cond);
                continue;
            }
            if (number_sql(c, f, &expr) < 0)
                return -1;
            if (strcmp(kind, "stats") == 0) {
                add_item(w, names, depth + 1, ITEM_STATS);
                add_column(w, "count", expr.data, cond);
                add_column(w, "min", expr.data, cond);
                add_column(w, "max", expr.data, cond);
                add_column(w, "pano_sum", expr.data, cond);
            } else {
                static const char *const fn[][2] = {{"min", "min"},
                                                    {"max", "max"},
                                                    {"sum", "pano_sum"},
                                                    {"avg", "pano_avg"},
                                                    {"value_count", "count"}};
                for (size_t k = 0; k < sizeof fn / sizeof fn[0]; k++)
                    if (strcmp(kind, fn[k][0]) == 0) {
                        add_item(w, names, depth + 1, ITEM_VALUE);
                        add_column(w, fn[k][1], expr.data, cond);
                    }
            }
            pano_buf_free(&expr);
        } else if (strcmp(kind, "filter") == 0 || strcmp(kind, "filters") == 0) {
            size_t n = strcmp(kind, "filter") == 0 ? 1 : pano_json_len(pano_json_get(body, "filters"));
            for (size_t k = 0; k < n; k++) {
                const pano_json *fq = body;
                int d = depth + 1;
                if (strcmp(kind, "filters") == 0) {
                    const pano_json *fs = pano_json_get(body, "filters");
                    fq = pano_json_at(fs, k);
                    names[d++] = "buckets";
                    names[d++] = pano_json_key_at(fs, k);
                }
                pano_buf q = {0};
                if (where_of(c, fq, &q) < 0) {
                    pano_buf_free(&q);
                    return -1;
                }
                char *inner = and_of(cond, q.data);
                pano_buf_free(&q);
                add_item(w, names, d, ITEM_COUNT);
                add_count(w, inner);
                int rc = walk_aggs(c, w, sub, inner, cond_figures && figures_query(fq), names, d);
                free(inner);
                if (rc < 0)
                    return -1;
            }
        } else if (strcmp(kind, "terms") == 0 || strcmp(kind, "composite") == 0 ||
                   strcmp(kind, "date_histogram") == 0 || strcmp(kind, "top_hits") == 0) {
            w->defs = pano_reallocarray(w->defs, w->ndefs + 1, sizeof *w->defs);
            deferred *df = &w->defs[w->ndefs++];
            memset(df, 0, sizeof *df);
            memcpy(df->names, names, (size_t)(depth + 1) * sizeof *names);
            df->depth = depth + 1;
            df->spec = spec;
            df->where = cond ? pano_strdup(cond) : NULL;
            df->figures = cond_figures;
        } else if (strcmp(kind, "cumulative_sum") != 0 && strcmp(kind, "max_bucket") != 0)
            return fail(c, "the embedded store cannot answer a '%s' aggregation", kind);
    }
    return 0;
}

typedef struct {
    ctx *c;
    const level *lv;
    const walk *w;
    pano_buf key;
} metrics_ctx;

static int on_metrics_row(sqlite3_stmt *st, void *user)
{
    metrics_ctx *m = user;
    int n = (int)m->lv->nexprs;
    pano_json *bucket = bucket_of_row(m->lv, st, &m->key);
    if (!bucket)
        return 0; /* a group no bucket was made for (a terms size cut it) */
    for (size_t i = 0; i < m->w->nitems; i++) {
        const item *it = &m->w->items[i];
        pano_json *o = at_path(bucket, it->names, it->depth);
        int col = n + it->col;
        if (!o)
            continue;
        if (it->kind == ITEM_COUNT)
            pano_json_set_int(o, "doc_count", sqlite3_column_int64(st, col));
        else if (it->kind == ITEM_VALUE)
            pano_json_set(o, "value", column_json(st, col));
        else {
            int64_t count = sqlite3_column_int64(st, col);
            pano_json_set_int(o, "count", count);
            pano_json_set(o, "min", column_json(st, col + 1));
            pano_json_set(o, "max", column_json(st, col + 2));
            double sum = sqlite3_column_double(st, col + 3);
            pano_json_set(o, "avg", count ? pano_json_double(sum / (double)count, -1)
                                          : pano_json_null());
            pano_json_set(o, "sum", pano_json_double(sum, -1));
        }
    }
    return 0;
}

static int run_deferred(ctx *c, const level *lv, const deferred *df, const char *where,
                        bool where_figures);

/* max_bucket: the highest value of a metric over a sibling's buckets. */
static void pipelines(pano_json *obj, const pano_json *aggs)
{
    for (size_t i = 0; i < pano_json_len(aggs); i++) {
        const pano_json *body;
        if (strcmp(kind_of(pano_json_at(aggs, i), &body), "max_bucket") != 0)
            continue;
        const char *path = pano_json_get_str(body, "buckets_path");
        const char *gt = path ? strchr(path, '>') : NULL;
        if (!gt)
            continue;
        char sibling[128];
        snprintf(sibling, sizeof sibling, "%.*s", (int)(gt - path), path);
        const pano_json *buckets = pano_json_get_array(pano_json_get(obj, sibling), "buckets");
        double best = NAN;
        for (size_t k = 0; k < pano_json_len(buckets); k++) {
            double v;
            if (pano_json_get_number(pano_json_get(pano_json_at(buckets, k), gt + 1), "value",
                                     &v) &&
                (isnan(best) || v > best))
                best = v;
        }
        pano_json *o = pano_json_set_object(obj, pano_json_key_at(aggs, i));
        if (isnan(best))
            pano_json_set(o, "value", pano_json_null());
        else
            pano_json_set_double(o, "value", best, -1);
    }
}

/* The metrics of w at level lv, read by one statement after its group
 * columns and count(*) (unless the statement that made lv's buckets read
 * them: metrics_read), then w's deferred aggregations; frees w. rc: the
 * walk's. where_figures: where reads the figures' fields alone. */
static int finish_walk(ctx *c, walk *w, int rc, const pano_json *aggs, const char *where,
                       bool where_figures, const level *lv, bool metrics_read)
{
    if (rc == 0 && w->ncols > 0 && !metrics_read) {
        pano_buf sql = {0};
        pano_buf_append_str(&sql, "SELECT ");
        group_columns(lv, &sql);
        pano_buf_appendf(&sql, "%s(%s)%s FROM %s WHERE %s", read_sql[w->from].count_fn,
                         read_sql[w->from].count_arg, w->select.data, read_sql[w->from].table,
                         where);
        group_by(lv, 0, &sql);
        metrics_ctx m = {c, lv, w, {0}};
        rc = each_row(c, sql.data, on_metrics_row, &m);
        pano_buf_free(&m.key);
        pano_buf_free(&sql);
    }
    for (size_t i = 0; i < w->ndefs; i++) {
        if (rc == 0) {
            char *inner = w->defs[i].where ? and_of(where, w->defs[i].where) : pano_strdup(where);
            rc = run_deferred(c, lv, &w->defs[i], inner, where_figures && w->defs[i].figures);
            free(inner);
        }
        free(w->defs[i].where);
    }
    if (rc == 0)
        for (size_t i = 0; i < lv->cap; i++)
            if (lv->slots[i].key)
                pipelines(lv->slots[i].obj, aggs);
    pano_buf_free(&w->select);
    free(w->items);
    free(w->defs);
    return rc;
}

/* Walk aggs: its metrics' columns follow a statement's count(*). */
static int walk_metrics(ctx *c, walk *w, const pano_json *aggs)
{
    const char *names[MAX_PATH];
    int rc = walk_aggs(c, w, aggs, NULL, true, names, 0);
    for (size_t i = 0; i < w->nitems; i++)
        w->items[i].col++;
    return rc;
}

/* Fill the aggregations aggs into every bucket of lv, whose documents are
 * those where holds (an SQL condition). */
static int run_aggs(ctx *c, const pano_json *aggs, const char *where, bool where_figures,
                    const level *lv)
{
    if (pano_json_len(aggs) == 0)
        return 0;
    walk w = {.from = c->figures && where_figures && lv->figures && figures_metrics(aggs)
                          ? READ_FIGURES
                          : READ_EVENTS};
    int rc = walk_metrics(c, &w, aggs);
    return finish_walk(c, &w, rc, aggs, where, where_figures, lv, false);
}

/* ---- buckets ---------------------------------------------------------------------- */

typedef struct {
    ctx *c;
    const level *parent;
    level *child;
    metrics_ctx *metrics; /* the sub-aggregations' metrics, in the same row */
    const deferred *df;
    const pano_json *sub;
    int nkeys;               /* columns of the bucket's key after the parent's */
    const char *const *keys; /* composite: the names of those columns */
    pano_buf key;
} buckets_ctx;

static int on_bucket_row(sqlite3_stmt *st, void *user)
{
    buckets_ctx *b = user;
    int n = (int)b->parent->nexprs;
    pano_json *parent = bucket_of_row(b->parent, st, &b->key);
    pano_json *list = parent ? pano_json_get_array(at_path(parent, b->df->names, b->df->depth),
                                                   "buckets")
                             : NULL;
    if (!list)
        return 0;
    pano_json *bucket = pano_json_object();
    if (b->keys) {
        pano_json *key = pano_json_set_object(bucket, "key");
        for (int i = 0; i < b->nkeys; i++)
            pano_json_set(key, b->keys[i], column_json(st, n + i));
    } else
        pano_json_set(bucket, "key", column_json(st, n));
    pano_json_set_int(bucket, "doc_count", sqlite3_column_int64(st, n + b->nkeys));
    prefill(bucket, b->sub);
    pano_json_append(list, bucket);
    row_key(st, n + b->nkeys, &b->key);
    level_put(b->child, b->key.data, bucket);
    return b->metrics ? on_metrics_row(st, b->metrics) : 0;
}

/* terms: by doc_count (desc), else by key (asc), or by a metric of the bucket. */
static const char *order_by;
static bool order_desc;

static int compare_keys(const pano_json *a, const pano_json *b)
{
    const pano_json *ka = pano_json_get(a, "key"), *kb = pano_json_get(b, "key");
    double x, y;
    if (ka && kb && ka->type == PANO_JSON_STRING && kb->type == PANO_JSON_STRING)
        return strcmp(ka->u.string.text, kb->u.string.text);
    if (pano_json_get_number(a, "key", &x) && pano_json_get_number(b, "key", &y))
        return x < y ? -1 : x > y;
    return 0;
}

static int compare_buckets(const void *pa, const void *pb)
{
    const pano_json *a = *(pano_json *const *)pa, *b = *(pano_json *const *)pb;
    double x = 0, y = 0;
    if (strcmp(order_by, "_key") == 0) {
        int k = compare_keys(a, b);
        return order_desc ? -k : k;
    }
    if (strcmp(order_by, "_count") == 0) {
        pano_json_get_number(a, "doc_count", &x);
        pano_json_get_number(b, "doc_count", &y);
    } else {
        bool hx = pano_json_get_number(pano_json_get(a, order_by), "value", &x);
        bool hy = pano_json_get_number(pano_json_get(b, order_by), "value", &y);
        if (hx != hy)
            return hx ? -1 : 1; /* buckets without the metric last */
    }
    if (x != y)
        return (x < y) == order_desc ? 1 : -1;
    return compare_keys(a, b);
}

static void order_terms(const pano_json *body, pano_json *list)
{
    order_by = "_count";
    order_desc = true;
    const pano_json *order = pano_json_get(body, "order");
    if (pano_json_len(order) == 1 && pano_json_at(order, 0)->type == PANO_JSON_STRING) {
        order_by = pano_json_key_at(order, 0);
        order_desc = strcmp(pano_json_at(order, 0)->u.string.text, "desc") == 0;
    }
    size_t n = pano_json_len(list);
    if (n > 1)
        qsort(list->u.items.values, n, sizeof *list->u.items.values, compare_buckets);
    int64_t size = 10;
    pano_json_get_int(body, "size", &size);
    pano_json_truncate(list, size < 0 ? 0 : (size_t)size);
}

/* date_histogram with min_doc_count 0: the empty buckets between (and to
 * extended_bounds), each as over no document. */
static void fill_gaps(pano_json *list, const pano_json *body, const pano_json *sub,
                      int64_t step, int64_t offset)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN, v;
    size_t n = pano_json_len(list);
    if (n) {
        pano_json_get_int(pano_json_at(list, 0), "key", &lo);
        pano_json_get_int(pano_json_at(list, n - 1), "key", &hi);
    }
    const pano_json *bounds = pano_json_get(body, "extended_bounds");
    if (bounds && pano_json_get_int(bounds, "min", &v)) {
        int64_t d = v - offset, q = d / step - (d % step != 0 && d < 0);
        lo = q * step + offset < lo ? q * step + offset : lo;
    }
    if (bounds && pano_json_get_int(bounds, "max", &v)) {
        int64_t d = v - offset, q = d / step - (d % step != 0 && d < 0);
        hi = q * step + offset > hi ? q * step + offset : hi;
    }
    if (lo > hi || (hi - lo) / step > 10000000)
        return;
    pano_json *full = pano_json_array();
    size_t i = 0;
    for (int64_t k = lo; k <= hi; k += step) {
        int64_t have = 0;
        if (i < n && pano_json_get_int(pano_json_at(list, i), "key", &have) && have == k) {
            pano_json_append(full, pano_json_clone(pano_json_at(list, i)));
            i++;
            continue;
        }
        pano_json *b = pano_json_object();
        pano_json_set_int(b, "key", k);
        pano_json_set_int(b, "doc_count", 0);
        prefill(b, sub);
        pano_json_append(full, b);
    }
    /* swap the lists' items: list keeps its place in its parent */
    pano_json tmp = *list;
    *list = *full;
    *full = tmp;
    pano_json_free(full);
}

/* cumulative_sum: each bucket's running total of a metric over the buckets before. */
static void cumulative(pano_json *list, const pano_json *sub)
{
    for (size_t i = 0; i < pano_json_len(sub); i++) {
        const pano_json *body;
        if (strcmp(kind_of(pano_json_at(sub, i), &body), "cumulative_sum") != 0)
            continue;
        const char *path = pano_json_get_str(body, "buckets_path");
        double run = 0, v;
        for (size_t k = 0; path && k < pano_json_len(list); k++) {
            pano_json *b = pano_json_at(list, k);
            if (strcmp(path, "_count") == 0 ? pano_json_get_number(b, "doc_count", &v)
                                            : pano_json_get_number(pano_json_get(b, path),
                                                                   "value", &v))
                run += v;
            pano_json_set_double(pano_json_set_object(b, pano_json_key_at(sub, i)), "value", run,
                                 -1);
        }
    }
}

/* For each bucket of lv, the sort clause of a top_hits or of hits. */
static int order_sql(ctx *c, const pano_json *sort, pano_buf *out)
{
    for (size_t i = 0; i < pano_json_len(sort); i++) {
        const pano_json *s = pano_json_at(sort, i);
        if (s->type != PANO_JSON_OBJECT || pano_json_len(s) != 1)
            return fail(c, "the embedded store cannot read that sort");
        const char *field = pano_json_key_at(s, 0);
        const pano_json *how = pano_json_at(s, 0);
        const char *dir = how->type == PANO_JSON_STRING ? how->u.string.text
                                                        : pano_json_get_str(how, "order");
        bool desc = dir && strcmp(dir, "desc") == 0;
        pano_buf expr = {0};
        if (field_sql(c, field, &expr) < 0) {
            pano_buf_free(&expr);
            return -1;
        }
        /* missing values last, both ways, as Elasticsearch sorts them */
        pano_buf_appendf(out, "%s(%s) IS NULL, %s %s", i ? ", " : "", expr.data, expr.data,
                         desc ? "DESC" : "ASC");
        pano_buf_free(&expr);
    }
    pano_buf_appendf(out, "%srow", pano_json_len(sort) ? ", " : "");
    return 0;
}

/* A document's _source as asked: every member, a list of members (dotted
 * names are paths), or {"includes": [...], "excludes": [...]}. */
static pano_json *source_of(const char *doc, const pano_json *want)
{
    char why[64];
    pano_json *all = pano_json_parse(doc, strlen(doc), 0, why, sizeof why);
    if (!all || !want)
        return all;
    const pano_json *include = want->type == PANO_JSON_ARRAY ? want : pano_json_get(want, "includes");
    const pano_json *exclude = want->type == PANO_JSON_OBJECT ? pano_json_get(want, "excludes") : NULL;
    for (size_t i = 0; i < pano_json_len(exclude); i++)
        if (pano_json_at(exclude, i)->type == PANO_JSON_STRING)
            pano_json_remove(all, pano_json_at(exclude, i)->u.string.text);
    if (!include)
        return all;
    pano_json *out = pano_json_object();
    for (size_t i = 0; i < pano_json_len(include); i++) {
        const pano_json *f = pano_json_at(include, i);
        if (f->type != PANO_JSON_STRING)
            continue;
        /* a dotted name: the path, kept as nested objects */
        const pano_json *from = all;
        pano_json *to = out;
        char part[256];
        const char *p = f->u.string.text;
        while (from) {
            size_t n = strcspn(p, ".");
            snprintf(part, sizeof part, "%.*s", (int)n, p);
            const pano_json *v = pano_json_get(from, part);
            if (!v)
                break;
            if (!p[n]) {
                pano_json_set(to, part, pano_json_clone(v));
                break;
            }
            pano_json *next = pano_json_get(to, part);
            to = next && next->type == PANO_JSON_OBJECT ? next : pano_json_set_object(to, part);
            from = v;
            p += n + 1;
        }
    }
    pano_json_free(all);
    return out;
}

typedef struct {
    ctx *c;
    const level *lv;
    const deferred *df;
    const pano_json *source;
    pano_buf key;
} hits_ctx;

static int on_hit_row(sqlite3_stmt *st, void *user)
{
    hits_ctx *h = user;
    int n = (int)h->lv->nexprs;
    pano_json *bucket = bucket_of_row(h->lv, st, &h->key);
    pano_json *list = bucket ? pano_json_get_array(pano_json_get(at_path(bucket, h->df->names,
                                                                         h->df->depth),
                                                                 "hits"),
                                                   "hits")
                             : NULL;
    if (!list)
        return 0;
    pano_json *hit = pano_json_object();
    pano_json_set(hit, "_source", source_of((const char *)sqlite3_column_text(st, n), h->source));
    pano_json_append(list, hit);
    return 0;
}

static int run_top_hits(ctx *c, const level *lv, const deferred *df, const pano_json *body,
                        const char *where)
{
    int64_t size = 3;
    pano_json_get_int(body, "size", &size);
    pano_buf order = {0}, sql = {0};
    if (order_sql(c, pano_json_get(body, "sort"), &order) < 0) {
        pano_buf_free(&order);
        return -1;
    }
    pano_buf_append_str(&sql, "SELECT ");
    for (size_t i = 0; i < lv->nexprs; i++)
        pano_buf_appendf(&sql, "g%zu, ", i);
    pano_buf_append_str(&sql, "doc FROM (SELECT ");
    for (size_t i = 0; i < lv->nexprs; i++)
        pano_buf_appendf(&sql, "%s AS g%zu, ", lv->exprs[i], i);
    pano_buf_append_str(&sql, "doc, row_number() OVER (");
    for (size_t i = 0; i < lv->nexprs; i++)
        pano_buf_appendf(&sql, "%s%s", i ? ", " : "PARTITION BY ", lv->exprs[i]);
    pano_buf_appendf(&sql, " ORDER BY %s) AS rank FROM events WHERE %s) WHERE rank <= %lld",
                     order.data, where, (long long)size);
    hits_ctx h = {c, lv, df, pano_json_get(body, "_source"), {0}};
    int rc = each_row(c, sql.data, on_hit_row, &h);
    pano_buf_free(&h.key);
    pano_buf_free(&order);
    pano_buf_free(&sql);
    return rc;
}

static int run_deferred(ctx *c, const level *lv, const deferred *df, const char *where,
                        bool where_figures)
{
    const pano_json *body;
    const char *kind = kind_of(df->spec, &body);
    const pano_json *sub = pano_json_get(df->spec, "aggs");
    if (strcmp(kind, "top_hits") == 0)
        return run_top_hits(c, lv, df, body, where);

    pano_buf keys = {0}, cond = {0};
    char *exprs[MAX_PATH] = {0};
    const char **names = NULL;
    int nkeys = 0, rc = 0;
    int64_t step = 0, offset = 0, min_doc_count = 1;
    bool keys_figures = true; /* the keys are figures' fields */
    /* a histogram of whole seconds the store counted: read from them */
    bool seconds = c->figures && where_figures && (lv->figures || lv->seconds) &&
                   strcmp(kind, "date_histogram") == 0 && seconds_histogram(df->spec);
    if (lv->seconds && !seconds)
        return fail(c, "the embedded store: a search under a histogram of seconds that is not");
    if (strcmp(kind, "terms") == 0 || strcmp(kind, "date_histogram") == 0) {
        const char *f = pano_json_get_str(body, "field");
        keys_figures = strcmp(kind, "terms") == 0 && f && figures_field(f);
        pano_buf expr = {0};
        if (seconds)
            pano_buf_append_str(&expr, "second * 1000");
        if (!f || (!seconds && field_sql(c, f, &expr) < 0))
            rc = fail(c, "a %s aggregation needs a field", kind);
        else if (strcmp(kind, "terms") == 0) {
            pano_buf_append_str(&keys, expr.data);
            exprs[0] = pano_strdup(expr.data);
            pano_buf_appendf(&cond, "(%s) AND %s IS NOT NULL", where, expr.data);
        } else {
            char *bad = parse_interval(body, &step);
            if (bad) {
                rc = fail(c, "the embedded store takes a date_histogram's fixed_interval in "
                             "ms, not %s",
                          bad);
                free(bad);
            }
            pano_json_get_int(body, "offset", &offset);
            pano_json_get_int(body, "min_doc_count", &min_doc_count);
            pano_buf_appendf(&keys, "pano_bucket(%s, %lld, %lld)", expr.data, (long long)step,
                             (long long)offset);
            exprs[0] = pano_strdup(keys.data);
            if (is_time(f))
                pano_buf_appendf(&cond, "(%s)", where);
            else
                pano_buf_appendf(&cond, "(%s) AND %s IS NOT NULL", where, expr.data);
        }
        nkeys = 1;
        pano_buf_free(&expr);
    } else { /* composite */
        const pano_json *sources = pano_json_get_array(body, "sources");
        nkeys = (int)pano_json_len(sources);
        if (nkeys >= MAX_PATH)
            rc = fail(c, "a composite of too many sources for the embedded store");
        names = pano_calloc((size_t)nkeys + 1, sizeof *names);
        pano_buf_appendf(&cond, "(%s)", where);
        for (int i = 0; i < nkeys && rc == 0; i++) {
            const pano_json *s = pano_json_at(sources, (size_t)i), *t;
            names[i] = pano_json_len(s) == 1 ? pano_json_key_at(s, 0) : "";
            t = pano_json_len(s) == 1 ? pano_json_get(pano_json_at(s, 0), "terms") : NULL;
            const char *f = pano_json_get_str(t, "field");
            keys_figures = keys_figures && f && figures_field(f);
            pano_buf expr = {0};
            if (!f || field_sql(c, f, &expr) < 0) {
                rc = fail(c, "the embedded store answers composite sources of terms only");
                pano_buf_free(&expr);
                break;
            }
            pano_buf_appendf(&keys, "%s%s", i ? ", " : "", expr.data);
            exprs[i] = pano_strdup(expr.data);
            const pano_json *missing = pano_json_get(t, "missing_bucket");
            if (!(missing && missing->type == PANO_JSON_BOOL && missing->u.boolean))
                pano_buf_appendf(&cond, " AND %s IS NOT NULL", expr.data);
            pano_buf_free(&expr);
        }
    }
    if (rc == 0) {
        level child;
        /* the child level is told apart by the parent's expressions and the keys */
        level_below(lv, exprs, (size_t)nkeys, keys_figures, &child);
        child.seconds = seconds;
        /* the buckets and their metrics in one statement: one pass over the rows */
        bool figures = where_figures && (child.figures || seconds);
        walk w = {.from = seconds                                              ? READ_SECONDS
                          : c->figures && figures && figures_metrics(sub) ? READ_FIGURES
                                                                          : READ_EVENTS};
        int walked = walk_metrics(c, &w, sub);
        metrics_ctx m = {c, &child, &w, {0}};
        pano_buf sql = {0};
        pano_buf_append_str(&sql, "SELECT ");
        group_columns(lv, &sql);
        pano_buf_appendf(&sql, "%s, %s(%s)%s FROM %s WHERE %s", keys.data,
                         read_sql[w.from].count_fn, read_sql[w.from].count_arg,
                         walked == 0 && w.select.data ? w.select.data : "",
                         read_sql[w.from].table, cond.data);
        group_by(lv, (size_t)nkeys, &sql);
        pano_buf_append_str(&sql, " ORDER BY ");
        for (size_t i = 0; i < lv->nexprs + (size_t)nkeys; i++)
            pano_buf_appendf(&sql, "%s%zu", i ? ", " : "", i + 1);
        buckets_ctx b = {c, lv, &child, walked == 0 && w.ncols > 0 ? &m : NULL, df, sub, nkeys,
                         names, {0}};
        rc = walked < 0 ? -1 : each_row(c, sql.data, on_bucket_row, &b);
        pano_buf_free(&b.key);
        pano_buf_free(&m.key);
        pano_buf_free(&sql);
        rc = finish_walk(c, &w, rc, sub, cond.data, figures, &child, true);
        level_free(&child);
        for (size_t i = 0; rc == 0 && i < lv->cap; i++) {
            if (!lv->slots[i].key)
                continue;
            pano_json *list =
                pano_json_get_array(at_path(lv->slots[i].obj, df->names, df->depth), "buckets");
            if (!list)
                continue;
            if (strcmp(kind, "terms") == 0)
                order_terms(body, list);
            else if (strcmp(kind, "date_histogram") == 0) {
                if (min_doc_count == 0)
                    fill_gaps(list, body, sub, step, offset);
                cumulative(list, sub);
            }
        }
    }
    free(names);
    for (size_t i = 0; i < MAX_PATH; i++)
        free(exprs[i]);
    pano_buf_free(&keys);
    pano_buf_free(&cond);
    return rc;
}

/* ---- the search ------------------------------------------------------------------- */

static int on_count(sqlite3_stmt *st, void *user)
{
    *(int64_t *)user = sqlite3_column_int64(st, 0);
    return 0;
}

typedef struct {
    pano_json *list;
    const pano_json *source;
} root_hits;

static int on_root_hit(sqlite3_stmt *st, void *user)
{
    root_hits *r = user;
    pano_json *hit = pano_json_object();
    pano_json_set(hit, "_source", source_of((const char *)sqlite3_column_text(st, 0), r->source));
    pano_json_append(r->list, hit);
    return 0;
}

static int run_hits(ctx *c, const pano_json *body, const char *where, bool where_figures,
                    pano_json *answer)
{
    static const char *const known[] = {"size", "query", "aggs", "aggregations", "sort",
                                        "_source", "track_total_hits", "terminate_after", NULL};
    for (size_t i = 0; i < pano_json_len(body); i++) {
        bool ok = false;
        for (size_t k = 0; known[k] && !ok; k++)
            ok = strcmp(pano_json_key_at(body, i), known[k]) == 0;
        if (!ok)
            return fail(c, "the embedded store cannot answer a search with '%s'",
                        pano_json_key_at(body, i));
    }
    pano_json *hits = pano_json_set_object(answer, "hits");
    int64_t size = 10, limit = -1;
    pano_json_get_int(body, "size", &size);
    pano_json_get_int(body, "terminate_after", &limit);
    const pano_json *track = pano_json_get(body, "track_total_hits");
    if (track && track->type == PANO_JSON_BOOL && track->u.boolean) {
        /* terminate_after: the count stops there */
        char *sql = c->figures && where_figures
                        ? pano_asprintf("SELECT min(total(n), %lld) FROM figures WHERE %s",
                                        (long long)(limit > 0 ? limit : INT64_MAX), where)
                    : limit > 0 ? pano_asprintf("SELECT count(*) FROM (SELECT 1 FROM events WHERE "
                                                "%s LIMIT %lld)",
                                                where, (long long)limit)
                                : pano_asprintf("SELECT count(*) FROM events WHERE %s", where);
        int64_t total = 0;
        int rc = each_row(c, sql, on_count, &total);
        free(sql);
        if (rc < 0)
            return -1;
        pano_json *t = pano_json_set_object(hits, "total");
        pano_json_set_int(t, "value", total);
        pano_json_set_str(t, "relation", "eq");
    }
    root_hits r = {pano_json_set_array(hits, "hits"), pano_json_get(body, "_source")};
    if (size <= 0)
        return 0;
    pano_buf order = {0};
    int rc = order_sql(c, pano_json_get(body, "sort"), &order);
    if (rc == 0) {
        char *sql = pano_asprintf("SELECT doc FROM events WHERE %s ORDER BY %s LIMIT %lld", where,
                                  order.data, (long long)size);
        rc = each_row(c, sql, on_root_hit, &r);
        free(sql);
    }
    pano_buf_free(&order);
    return rc;
}

pano_json *store_sqlite_search(sqlite3 *db, const char *const *streams, const pano_json *body,
                               char *err, size_t errlen)
{
    ctx c = {db, err, errlen, false, pano_store_reads_figures(db)};
    pano_buf where = {0};
    size_t n = store_streams(&streams);
    pano_buf_append_str(&where, "stream IN (");
    for (size_t i = 0; i < n; i++)
        pano_buf_appendf(&where, "%s'%s'", i ? ", " : "", streams[i]);
    pano_buf_append_str(&where, ")");
    const pano_json *query = pano_json_get(body, "query");
    if (query) {
        pano_buf_append_str(&where, " AND ");
        where_of(&c, query, &where);
    }
    pano_json *answer = pano_json_object();
    const pano_json *aggs = pano_json_get(body, "aggs");
    if (!aggs)
        aggs = pano_json_get(body, "aggregations");
    bool where_figures = figures_query(query);
    if (!c.failed && run_hits(&c, body, where.data, where_figures, answer) == 0 && aggs) {
        pano_json *out = pano_json_set_object(answer, "aggregations");
        prefill(out, aggs);
        level top = {.figures = true};
        level_put(&top, "k", out);
        run_aggs(&c, aggs, where.data, where_figures, &top);
        level_free(&top);
    }
    pano_buf_free(&where);
    if (c.failed) {
        pano_json_free(answer);
        return NULL;
    }
    return answer;
}
