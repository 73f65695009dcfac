#include "store_es.h"

#include "buf.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "store_sqlite.h"
#include "summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Named partitions in a path at most: a longer span reads every partition of
 * the stream (a request line must stay under Elasticsearch's 4 KB). */
#define MAX_NAMED_PARTITIONS 24

/* The partitions of base (in period) that hold the workflow's span, or
 * base-* for every one. */
static void append_partitions(pano_buf *path, const pano_jobs *jobs, const char *base,
                              pano_period period)
{
    bool named = jobs && jobs->stored_from > 0 && jobs->stored_to >= jobs->stored_from;
    size_t count = 0;
    for (double t = named ? jobs->stored_from : 0; named && t <= jobs->stored_to;
         t = pano_period_next(period, t))
        named = ++count <= MAX_NAMED_PARTITIONS;
    if (!named) {
        pano_buf_appendf(path, "%s-*", base);
        return;
    }
    char suffix[16];
    for (double t = jobs->stored_from; t <= jobs->stored_to; t = pano_period_next(period, t)) {
        pano_period_suffix(period, t, suffix, sizeof suffix);
        pano_buf_appendf(path, "%s%s-%s", t > jobs->stored_from ? "," : "", base, suffix);
    }
}

static void append_stream(pano_buf *path, const pano_query *q, const pano_jobs *jobs,
                          const char *stream)
{
    char base[256];
    snprintf(base, sizeof base, "%s%s", q->prefix, stream);
    /* the unpartitioned index of earlier versions: samples were kickstart's */
    pano_buf_appendf(path, "%s%s,", q->prefix, strcmp(stream, "samples") == 0 ? "kickstart" : stream);
    int s = pano_stream_index(stream);
    append_partitions(path, jobs, base, q->policies[s < 0 ? 0 : s].period);
}

char *store_summary_indices(const pano_query *q, const pano_jobs *jobs)
{
    pano_buf list = {0};
    for (int s = 0; s < PANO_N_STREAMS; s++) {
        if (!pano_summary_stream(s))
            continue;
        char base[256];
        pano_summary_base(q->prefix, s, base, sizeof base);
        if (list.len)
            pano_buf_append_str(&list, ",");
        append_partitions(&list, jobs, base, q->policies[s].period);
    }
    return list.data;
}

bool store_summary_one_period(const pano_query *q, const pano_jobs *jobs)
{
    if (!(jobs->stored_from > 0 && jobs->stored_to >= jobs->stored_from))
        return false;
    for (int s = 0; s < PANO_N_STREAMS; s++) {
        if (!pano_summary_stream(s))
            continue;
        char from[16], to[16];
        pano_period_suffix(q->policies[s].period, jobs->stored_from, from, sizeof from);
        pano_period_suffix(q->policies[s].period, jobs->stored_to, to, sizeof to);
        if (strcmp(from, to) != 0)
            return false;
    }
    return true;
}

pano_json *store_summary_search(pano_query *q, const pano_jobs *jobs, pano_json *body,
                                const char *keep, char *err, size_t errlen)
{
    char *indices = store_summary_indices(q, jobs);
    char *path = pano_asprintf("/%s/_search?routing=%s&ignore_unavailable=true"
                               "&allow_no_indices=true&filter_path=%s",
                               indices, jobs->wf_uuid, keep);
    free(indices);
    pano_json *answer = store_post(q, path, body, NULL, err, errlen);
    pano_json_free(body);
    free(path);
    return answer;
}

int store_summarized(pano_query *q, const pano_jobs *where, int64_t *out, char *err,
                     size_t errlen)
{
    if (q->db) { /* the embedded store keeps its own */
        int64_t counted[3];
        if (store_sqlite_summarized(q->db, where->wf_uuid, counted, NULL, err, errlen) < 0)
            return -1;
        *out = counted[0] + counted[1] + counted[2];
        return 0;
    }
    pano_json *body = pano_json_object();
    pano_json_set_int(body, "size", 0);
    pano_json *term = pano_json_set_object(pano_json_set_object(body, "query"), "term");
    pano_json_set_str(term, "set.wf", where->wf_uuid);
    pano_json_set(pano_json_set_object(body, "aggs"), "n", store_metric("sum", "add.n"));
    pano_json *answer = store_summary_search(q, where, body, "aggregations", err, errlen);
    if (!answer)
        return -1;
    *out = (int64_t)store_value(pano_json_get(answer, "aggregations"), "n", 0);
    pano_json_free(answer);
    return 0;
}

/* The _search path over the given streams for one workflow, routed by its
 * UUID, or for every workflow (jobs NULL): see store_search in store_es.h. */
size_t store_streams(const char *const **streams)
{
    size_t n = 0;
    if (*streams == STORE_EVENT_STREAMS) {
        *streams = pano_streams;
        return PANO_N_EVENT_STREAMS;
    }
    while ((*streams)[n])
        n++;
    return n;
}

static char *search_path(const pano_query *q, const pano_jobs *jobs, const char *const *streams)
{
    size_t n = store_streams(&streams);
    pano_buf path = {0};
    pano_buf_append_str(&path, "/");
    for (size_t i = 0; i < n; i++) {
        if (i)
            pano_buf_append_str(&path, ",");
        append_stream(&path, q, jobs, streams[i]);
    }
    /* Partitions a workflow never used do not exist: not an error. */
    pano_buf_append_str(&path, "/_search?ignore_unavailable=true&allow_no_indices=true");
    if (jobs) {
        pano_buf_append_str(&path, "&routing=");
        pano_buf_append_str(&path, jobs->wf_uuid);
    }
    return path.data; /* NUL-terminated, the caller frees it */
}

pano_json *store_body(const char *wf_uuid, pano_json **filter)
{
    pano_json *body = pano_json_object();
    pano_json_set_int(body, "size", 0);
    pano_json_set_bool(body, "track_total_hits", false);
    pano_json *b = pano_json_set_object(pano_json_set_object(body, "query"), "bool");
    *filter = pano_json_set_array(b, "filter");
    if (wf_uuid)
        pano_json_append(*filter, store_term("wf_uuid", wf_uuid));
    return body;
}

static pano_json *field_query(const char *kind, const char *field, pano_json *value)
{
    pano_json *q = pano_json_object();
    pano_json_set(pano_json_set_object(q, kind), field, value);
    return q;
}

pano_json *store_term(const char *field, const char *value)
{
    return field_query("term", field, pano_json_string(value));
}

pano_json *store_terms(const char *field, const char *const *values)
{
    pano_json *list = pano_json_array();
    for (size_t i = 0; values[i]; i++)
        pano_json_append(list, pano_json_string(values[i]));
    return field_query("terms", field, list);
}

pano_json *store_prefix(const char *field, const char *value)
{
    return field_query("prefix", field, pano_json_string(value));
}

pano_json *store_exists(const char *field)
{
    pano_json *q = pano_json_object();
    pano_json_set_str(pano_json_set_object(q, "exists"), "field", field);
    return q;
}

pano_json *store_run_filter(const pano_job *j)
{
    pano_json *q = pano_json_object();
    pano_json *b = pano_json_set_object(q, "bool");
    pano_json *f = pano_json_set_array(b, "filter");
    if (*j->dag_job_id)
        pano_json_append(f, store_term("dag_job_id", j->dag_job_id));
    else
        pano_json_append(pano_json_set_array(b, "must_not"), store_exists("dag_job_id"));
    pano_json_append(f, store_term("hostname", j->host));
    if (j->pid >= 0)
        pano_json_append(f, field_query("term", "pid", pano_json_int(j->pid)));
    return q;
}

void store_add_published_by(pano_json *filter, const pano_jobs *jobs, const pano_job *job)
{
    if (*job->dag_job_id)
        pano_json_append(filter, store_term("dag_job_id", job->dag_job_id));
    if (*job->host)
        pano_json_append(filter, store_term("hostname", job->host));
    pano_json *range = pano_json_object();
    pano_json *ts = pano_json_set_object(pano_json_set_object(range, "range"), "ts");
    pano_json_set_double(ts, "gte", job->start - 1, 3);
    pano_json_set_double(ts, "lte", (job->end > 0 ? job->end : jobs->now) + 1, 3);
    pano_json_append(filter, range);
}

pano_json *store_metric(const char *kind, const char *field)
{
    pano_json *m = pano_json_object();
    pano_json_set_str(pano_json_set_object(m, kind), "field", field);
    return m;
}

pano_json *store_filter_agg(pano_json *filter, pano_json **aggs)
{
    pano_json *a = pano_json_object();
    pano_json_set(a, "filter", filter);
    *aggs = pano_json_set_object(a, "aggs");
    return a;
}

void store_span_aggs(pano_json *aggs)
{
    pano_json_set(aggs, "first", store_metric("min", "ts"));
    pano_json_set(aggs, "last", store_metric("max", "ts"));
    pano_json *not_darshan = pano_json_object(), *span;
    pano_json_set(pano_json_set_object(not_darshan, "bool"), "must_not",
                  store_term("event", "darshan.perf"));
    pano_json_set(aggs, "span", store_filter_agg(not_darshan, &span));
    pano_json_set(span, "first", store_metric("min", "ts"));
    pano_json_set(span, "last", store_metric("max", "ts"));
}

void store_span_read(const pano_json *aggs, double *first, double *last)
{
    const pano_json *span = store_agg(aggs, "span");
    const pano_json *from = store_value(span, "first", 0) > 0 ? span : aggs;
    *first = store_value(from, "first", 0);
    *last = store_value(from, "last", 0);
}

/* Elasticsearch's own words for a refused request: error.root_cause[0].reason. */
static void error_reason(const pano_json *answer, char *out, size_t size)
{
    const pano_json *e = answer ? pano_json_get(answer, "error") : NULL;
    const pano_json *rc = pano_json_get_array(e, "root_cause");
    const char *reason = NULL;
    if (pano_json_len(rc) > 0)
        reason = pano_json_get_str(pano_json_at(rc, 0), "reason");
    if (!reason && e)
        reason = pano_json_get_str(e, "reason");
    snprintf(out, size, "%s", reason ? reason : "no reason given");
}

pano_json *store_literal(const char *text)
{
    char why[128];
    pano_json *v = pano_json_parse(text, strlen(text), 0, why, sizeof why);
    if (!v) {
        pano_error("bad JSON literal %s: %s", text, why);
        abort();
    }
    return v;
}

/* An answer parsed (into arena when given: a read-only tree that lives
 * until the arena is reset; else onto the heap), and freed; NULL, with
 * Elasticsearch's reason in err, when its status is not 2xx. */
static pano_json *parse_answer(pano_es *es, pano_es_response *r, pano_arena *arena, char *err,
                               size_t errlen)
{
    char why[512];
    pano_json_parse_options po = {.max_depth = 512, .arena = arena};
    pano_json *answer = pano_json_parse_with(r->body ? r->body : "", r->len, &po, why, sizeof why);
    if (r->status / 100 != 2 || !answer) {
        char reason[300];
        if (answer)
            error_reason(answer, reason, sizeof reason);
        else
            snprintf(reason, sizeof reason, "unreadable answer: %.200s", why);
        snprintf(err, errlen, "Elasticsearch at %s refused a search (HTTP %ld): %s",
                 pano_es_describe(es), r->status, reason);
        if (!arena)
            pano_json_free(answer);
        answer = NULL;
    }
    pano_es_response_free(r);
    return answer;
}

/* POST body to path: 0 with the answer in *r (a 2xx answer's body to sink
 * instead, when one is given: pano_es_request_to), or -1 (nothing in *r)
 * with a message in err when none came. */
static int post(pano_es *es, const char *path, const pano_json *body, pano_es_sink sink,
                void *user, pano_es_response *r, char *err, size_t errlen)
{
    size_t len;
    char *text = pano_json_serialize(body, &len);
    char why[512];
    double t0 = pano_now();
    int rc = sink ? pano_es_request_to(es, "POST", path, text, len, sink, user, r, why, sizeof why)
                  : pano_es_request(es, "POST", path, text, len, r, why, sizeof why);
    pano_debug("POST %s (%zu bytes): HTTP %ld, %s%zu bytes in %.1f ms", path, len, r->status,
               sink ? "streamed; held " : "", r->len, (pano_now() - t0) * 1000);
    free(text);
    if (rc < 0)
        snprintf(err, errlen, "Elasticsearch at %s does not answer: %s", pano_es_describe(es),
                 why);
    return rc;
}

/* A piece of an answer to its stream reader. */
typedef struct {
    pano_json_stream_reader *reader;
    char why[256];
} streaming;

static bool feed(void *user, const char *data, size_t len)
{
    streaming *s = user;
    return pano_json_stream_feed(s->reader, data, len, s->why, sizeof s->why) == 0;
}

int store_post_stream(pano_es *es, const char *path, const pano_json *body,
                      const pano_json_events *ev, void *user, char *err, size_t errlen)
{
    streaming s = {.reader = pano_json_stream_begin(ev, user)};
    if (!s.reader) {
        snprintf(err, errlen, "cannot allocate a JSON parser");
        return -1;
    }
    pano_es_response r;
    int rc = post(es, path, body, feed, &s, &r, err, errlen);
    bool stopped = rc < 0 && s.why[0]; /* by the reader: the answer is unreadable */
    if (rc == 0 && r.status / 100 != 2) {
        pano_json_free(parse_answer(es, &r, NULL, err, errlen)); /* its reason, in err */
        rc = -1;
    }
    /* (a failed feed keeps its message; an incomplete answer gets one) */
    if (pano_json_stream_end(s.reader, s.why, sizeof s.why) < 0 && (rc == 0 || stopped)) {
        snprintf(err, errlen, "Elasticsearch's answer to %s is unreadable: %s", path, s.why);
        rc = -1;
    }
    pano_es_response_free(&r);
    return rc;
}

pano_json *store_post_on(pano_es *es, const char *path, const pano_json *body, pano_arena *arena,
                         char *err, size_t errlen)
{
    pano_es_response r = {0};
    if (post(es, path, body, NULL, NULL, &r, err, errlen) < 0)
        return NULL;
    return parse_answer(es, &r, arena, err, errlen);
}

pano_json *store_post(pano_query *q, const char *path, const pano_json *body, pano_arena *arena,
                      char *err, size_t errlen)
{
    return store_post_on(q->es, path, body, arena, err, errlen);
}

pano_json *store_search(pano_query *q, const pano_jobs *jobs, const char *const *streams,
                        pano_json *body, char *err, size_t errlen)
{
    return store_search_except(q, jobs, streams, body, NULL, err, errlen);
}

pano_json *store_search_except(pano_query *q, const pano_jobs *jobs, const char *const *streams,
                               pano_json *body, const char *drop, char *err, size_t errlen)
{
    if (q->db) { /* the embedded store answers the same search */
        pano_json *answer = store_sqlite_search(q->db, streams, body, err, errlen);
        pano_json_free(body);
        return answer;
    }
    char *path = search_path(q, jobs, streams);
    if (drop) {
        pano_buf p = {0};
        pano_buf_appendf(&p, "%s&filter_path=", path);
        for (const char *s = drop; *s;) {
            size_t len = strcspn(s, ",");
            pano_buf_appendf(&p, "%s-%.*s", s == drop ? "" : ",", (int)len, s);
            s += len + (s[len] == ',');
        }
        free(path);
        path = p.data;
    }
    pano_json *answer = store_post(q, path, body, NULL, err, errlen);
    free(path);
    pano_json_free(body);
    return answer;
}

int store_composite_each(pano_query *q, const pano_jobs *jobs, const char *const *streams,
                         pano_json *body, const char *name,
                         void (*each)(const pano_json *bucket, void *user), void *user,
                         char *err, size_t errlen)
{
    if (q->db) { /* every bucket in one answer */
        pano_json *answer = store_sqlite_search(q->db, streams, body, err, errlen);
        pano_json_free(body);
        if (!answer)
            return -1;
        const pano_json *buckets =
            pano_json_get_array(store_agg(pano_json_get(answer, "aggregations"), name), "buckets");
        for (size_t i = 0; i < pano_json_len(buckets); i++)
            each(pano_json_at(buckets, i), user);
        pano_json_free(answer);
        return 0;
    }
    char *path = search_path(q, jobs, streams);
    pano_json *composite = pano_json_get(pano_json_get(pano_json_get(body, "aggs"), name),
                                         "composite");
    /* Pages of thousands of buckets: parsed into an arena, dropped at once. */
    pano_arena arena;
    pano_arena_init(&arena, 1 << 20);
    int rc;
    for (;;) {
        pano_arena_reset(&arena);
        pano_json *answer = store_post(q, path, body, &arena, err, errlen);
        if (!answer) {
            rc = -1;
            break;
        }
        const pano_json *agg = store_agg(pano_json_get(answer, "aggregations"), name);
        const pano_json *buckets = pano_json_get_array(agg, "buckets");
        size_t n = pano_json_len(buckets);
        for (size_t i = 0; i < n; i++)
            each(pano_json_at(buckets, i), user);
        const pano_json *after = agg ? pano_json_get(agg, "after_key") : NULL;
        if (n == 0 || !after) {
            rc = 0;
            break;
        }
        pano_json_set(composite, "after", pano_json_clone(after)); /* onto the heap */
    }
    pano_arena_free(&arena);
    free(path);
    pano_json_free(body);
    return rc;
}

void *store_find(const void *key, const void *base, size_t n, size_t size,
                 int (*cmp)(const void *, const void *))
{
    return n ? bsearch(key, base, n, size, cmp) : NULL;
}

const pano_json *store_agg(const pano_json *aggs, const char *name)
{
    return aggs ? pano_json_get(aggs, name) : NULL;
}

double store_value(const pano_json *aggs, const char *name, double missing)
{
    double v;
    const pano_json *a = store_agg(aggs, name);
    return a && pano_json_get_number(a, "value", &v) ? v : missing;
}

const pano_json *store_top_hit(const pano_json *aggs, const char *name)
{
    const pano_json *a = store_agg(aggs, name);
    const pano_json *hits = pano_json_get_array(pano_json_get(a, "hits"), "hits");
    if (pano_json_len(hits) == 0)
        return NULL;
    return pano_json_get(pano_json_at(hits, 0), "_source");
}

const char *store_str(const pano_json *doc, const char *field, char *buf, size_t size)
{
    const pano_json *v = doc ? pano_json_get(doc, field) : NULL;
    buf[0] = '\0';
    if (!v)
        return buf;
    if (v->type == PANO_JSON_STRING)
        snprintf(buf, size, "%s", v->u.string.text);
    else if (v->type == PANO_JSON_INT)
        snprintf(buf, size, "%lld", (long long)v->u.integer);
    else if (v->type == PANO_JSON_DOUBLE)
        snprintf(buf, size, "%g", v->u.real.value);
    return buf;
}

double store_num(const pano_json *doc, const char *field, double missing)
{
    const pano_json *v = doc ? pano_json_get(doc, field) : NULL;
    double d;
    if (v && (v->type == PANO_JSON_INT || v->type == PANO_JSON_DOUBLE))
        return pano_json_get_number(doc, field, &d) ? d : missing;
    if (v && v->type == PANO_JSON_STRING && v->u.string.len > 0) {
        char *end;
        d = strtod(v->u.string.text, &end);
        if (*end == '\0' && isfinite(d))
            return d;
    }
    return missing;
}
