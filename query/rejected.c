/*
 * rejected.c - the messages a store refused, with their reasons: from
 * Elasticsearch's dead-letter partitions or the embedded store's table.
 */
#include "mem.h"
#include "partition.h"
#include "query.h"
#include "store_es.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(pano_rejected **out, size_t *n, double ts, const char *source, const char *reason,
                const char *event, const char *event_id, const char *wf_uuid, const char *original)
{
    *out = pano_reallocarray(*out, *n + 1, sizeof **out);
    (*out)[(*n)++] = (pano_rejected){
        .ts = ts,
        .source = pano_strdup(source ? source : ""),
        .reason = pano_strdup(reason ? reason : ""),
        .event = pano_strdup(event ? event : ""),
        .event_id = pano_strdup(event_id ? event_id : ""),
        .wf_uuid = pano_strdup(wf_uuid ? wf_uuid : ""),
        .original = pano_strdup(original ? original : ""),
    };
}

/* The workflows wfs[0..n) as a JSON array, or NULL for none given. */
static pano_json *workflow_list(const char *const *wfs, size_t n)
{
    if (!wfs)
        return NULL;
    pano_json *list = pano_json_array();
    for (size_t i = 0; i < n; i++)
        pano_json_append(list, pano_json_string(wfs[i]));
    return list;
}

static int from_sqlite(pano_query *q, double since, const pano_json *wfs, size_t limit,
                       pano_rejected **out, size_t *n, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(q->db,
                           "SELECT received, reason, event, event_id, wf_uuid, CAST(body AS TEXT) "
                           "FROM dead_letters WHERE received >= ?1 AND (?3 IS NULL OR wf_uuid IN "
                           "(SELECT value FROM json_each(?3))) ORDER BY received DESC LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "the embedded store: %s", sqlite3_errmsg(q->db));
        return -1;
    }
    sqlite3_bind_double(st, 1, since);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
    char *list = wfs ? pano_json_serialize(wfs, NULL) : NULL;
    if (list)
        sqlite3_bind_text(st, 3, list, -1, free);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        add(out, n, sqlite3_column_double(st, 0), "pano-store",
            (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2),
            (const char *)sqlite3_column_text(st, 3), (const char *)sqlite3_column_text(st, 4),
            (const char *)sqlite3_column_text(st, 5));
    if (rc != SQLITE_DONE)
        snprintf(err, errlen, "the embedded store: %s", sqlite3_errmsg(q->db));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int from_es(pano_query *q, double since, const pano_json *wfs, size_t limit,
                   pano_rejected **out, size_t *n, char *err, size_t errlen)
{
    pano_json *body = pano_json_object();
    pano_json_set_int(body, "size", (int64_t)limit);
    pano_json_set(body, "sort", store_literal("[{\"@timestamp\":\"desc\"}]"));
    pano_json_set(body, "docvalue_fields",
                  store_literal("[{\"field\":\"@timestamp\",\"format\":\"epoch_millis\"}]"));
    pano_json *filter = pano_json_set_array(
        pano_json_set_object(pano_json_set_object(body, "query"), "bool"), "filter");
    pano_json *range = pano_json_object();
    pano_json *t = pano_json_set_object(pano_json_set_object(range, "range"), "@timestamp");
    pano_json_set_int(t, "gte", pano_event_ms(since));
    pano_json_set_str(t, "format", "epoch_millis");
    pano_json_append(filter, range);
    if (wfs) {
        pano_json *terms = pano_json_object();
        pano_json_set(pano_json_set_object(terms, "terms"), "wf_uuid", pano_json_clone(wfs));
        pano_json_append(filter, terms);
    }
    char *path = pano_asprintf("/%s%s-*/_search?ignore_unavailable=true&allow_no_indices=true",
                               q->prefix, pano_streams[PANO_STREAM_DEAD_LETTER]);
    pano_json *answer = store_post(q, path, body, NULL, err, errlen);
    free(path);
    pano_json_free(body);
    if (!answer)
        return -1;
    const pano_json *hits = pano_json_get_array(pano_json_get(answer, "hits"), "hits");
    for (size_t i = 0; i < pano_json_len(hits); i++) {
        const pano_json *h = pano_json_at(hits, i), *d = pano_json_get(h, "_source");
        const pano_json *ms = pano_json_get_array(pano_json_get(h, "fields"), "@timestamp");
        const pano_json *v = pano_json_len(ms) ? pano_json_at(ms, 0) : NULL;
        double ts = !v                              ? 0
                    : v->type == PANO_JSON_STRING ? strtod(v->u.string.text, NULL)
                    : v->type == PANO_JSON_INT    ? (double)v->u.integer
                    : v->type == PANO_JSON_DOUBLE ? v->u.real.value
                                                  : 0;
        const char *event = pano_json_get_str(d, "event");
        add(out, n, ts / 1000, pano_json_get_str(d, "source"), pano_json_get_str(d, "reason"),
            event ? event : pano_json_get_str(d, "routing_key"), pano_json_get_str(d, "event_id"),
            pano_json_get_str(d, "wf_uuid"), pano_json_get_str(d, "original"));
    }
    pano_json_free(answer);
    return 0;
}

static int rejected(pano_query *q, double since, const char *const *wfs, size_t nwfs,
                    size_t limit, pano_rejected **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    pano_json *list = workflow_list(wfs, nwfs);
    int rc = q->db ? from_sqlite(q, since, list, limit, out, n, err, errlen)
                   : from_es(q, since, list, limit, out, n, err, errlen);
    pano_json_free(list);
    if (rc < 0) {
        pano_rejected_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int pano_query_rejected(pano_query *q, double since, size_t limit, pano_rejected **out,
                        size_t *n, char *err, size_t errlen)
{
    return rejected(q, since, NULL, 0, limit, out, n, err, errlen);
}

int pano_query_rejected_of(pano_query *q, const char *const *wfs, size_t nwfs, size_t limit,
                           pano_rejected **out, size_t *n, char *err, size_t errlen)
{
    return rejected(q, 0, wfs, nwfs, limit, out, n, err, errlen);
}

void pano_rejected_free(pano_rejected *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].source);
        free(r[i].reason);
        free(r[i].event);
        free(r[i].event_id);
        free(r[i].wf_uuid);
        free(r[i].original);
    }
    free(r);
}

pano_json *pano_rejected_to_json(const pano_rejected *r, size_t n)
{
    pano_json *list = pano_json_array();
    for (size_t i = 0; i < n; i++) {
        pano_json *o = pano_json_object();
        pano_json_set_double(o, "ts", r[i].ts, 3);
        pano_json_set_str(o, "source", r[i].source);
        pano_json_set_str(o, "reason", r[i].reason);
        pano_json_set_str(o, "event", r[i].event);
        pano_json_set_str(o, "event_id", r[i].event_id);
        pano_json_set_str(o, "wf_uuid", r[i].wf_uuid);
        pano_json_set_str(o, "original", r[i].original);
        pano_json_append(list, o);
    }
    return list;
}
