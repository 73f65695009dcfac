/*
 * deltas.c - the delta pano-indexer gives samples that come without one
 * (deltas.h): the runs' states, the lookups that recover them, and the
 * documents they make.
 */
#include "deltas.h"

#include "event.h"
#include "mem.h"
#include "run_table.h"
#include "sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    RUN_ANNOUNCED = 1, /* its start passed, no sample yet */
    RUN_INGEST,        /* its samples get their delta here */
    RUN_ENDED,         /* closed: later samples get delta 0 */
    RUN_RAW,           /* stored as its samples came */
    RUN_PUBLISHER,     /* its samples carry their own delta */
} run_mode;

typedef struct {
    uint8_t mode;
    double last_ts;   /* the latest sample's ts (ingest, ended) */
    uint64_t last_id; /* the hash of its event_id */
    double last[PANO_SAMPLE_NVALUES];
} run_state;

typedef struct {
    bool prior; /* it held samples without delta, or with the indexer's, before it
                   was first seen here */
    bool lossy; /* a run of it in ingest or raw was evicted */
    bool kept;  /* a run of it went to ingest here (and may end, and be evicted) */
} wf_state;

typedef enum { EV_START, EV_SAMPLE, EV_END } ev_kind;

struct delta_event {
    ev_kind kind;
    bool own_delta; /* a sample with its publisher's delta */
    bool clash;     /* a sample that says delta_source, _offset or _after_end itself */
    int partition;
    int64_t offset;
    double ts;
    uint64_t id_hash;
    unsigned present; /* bit i: it has pano_sample_values[i] */
    double values[PANO_SAMPLE_NVALUES];
    int64_t pid;
    char wf[PANO_WF_UUID_LEN + 1];
    const char *job; /* NULL: no dag_job_id */
    const char *host;
    char *key; /* wf, job, host and pid: the run */
    char text[];  /* key, job and host */
};

struct deltas {
    run_table *runs, *wfs;
    pano_json *indices;     /* where the samples are: [<prefix>samples-*, <prefix>kickstart] */
    pano_json *run_indices; /* and the starts: those and <prefix>kickstart-* */
    deltas_counters n;
    delta_event *const *events; /* the batch's, in order */
    size_t nevents;
    enum { PLAN_WORKFLOWS, PLAN_RUNS, PLAN_DONE } phase;
    const delta_event **asked; /* the searches of the round in hand, in order */
    size_t nasked, cap_asked;
    bool asked_runs;
};

static void on_run_evicted(const char *key, void *value, void *user)
{
    deltas *d = user;
    const run_state *r = value;
    d->n.evicted++;
    if (r->mode != RUN_INGEST && r->mode != RUN_RAW)
        return;
    /* The run's key starts with its workflow. */
    char wf[PANO_WF_UUID_LEN + 1];
    snprintf(wf, sizeof wf, "%.*s", PANO_WF_UUID_LEN, key);
    wf_state *w = run_table_find(d->wfs, wf);
    if (w)
        w->lossy = true;
}

deltas *deltas_new(size_t max_runs, const char *index_prefix)
{
    deltas *d = pano_calloc(1, sizeof *d);
    d->runs = run_table_new(max_runs, sizeof(run_state), on_run_evicted, d);
    d->wfs = run_table_new(max_runs, sizeof(wf_state), NULL, NULL);
    d->indices = pano_json_array();
    char name[300];
    snprintf(name, sizeof name, "%.200ssamples-*", index_prefix);
    pano_json_append(d->indices, pano_json_string(name));
    snprintf(name, sizeof name, "%.200skickstart", index_prefix);
    pano_json_append(d->indices, pano_json_string(name));
    d->run_indices = pano_json_clone(d->indices);
    snprintf(name, sizeof name, "%.200skickstart-*", index_prefix);
    pano_json_append(d->run_indices, pano_json_string(name));
    return d;
}

void deltas_free(deltas *d)
{
    if (!d)
        return;
    run_table_free(d->runs);
    run_table_free(d->wfs);
    pano_json_free(d->indices);
    pano_json_free(d->run_indices);
    free(d->asked);
    free(d);
}

/* ---- one event ------------------------------------------------------------ */

/* A string without control characters (NUL included): the parts of a
 * run's key are kept apart by \x1f, and such a name is no host's or job's. */
static bool plain(const pano_json *v)
{
    if (!v || v->type != PANO_JSON_STRING)
        return false;
    for (size_t i = 0; i < v->u.string.len; i++) {
        unsigned char c = (unsigned char)v->u.string.text[i];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    return true;
}

/* What a sample's value can be: a count or a level, exact in a double. */
static bool in_range(double v)
{
    return v >= 0 && v < 9007199254740992.0; /* 2^53 */
}

delta_event *delta_event_read(const pano_json *ev, const char *wf_uuid, int partition,
                              int64_t offset)
{
    const char *name = pano_json_get_str(ev, "event");
    ev_kind kind;
    if (!name || strncmp(name, "kickstart.inv.", 14) != 0)
        return NULL;
    if (strcmp(name + 14, "start") == 0)
        kind = EV_START;
    else if (strcmp(name + 14, "online") == 0)
        kind = EV_SAMPLE;
    else if (strcmp(name + 14, "end") == 0)
        kind = EV_END;
    else
        return NULL;
    const char *host = pano_json_get_str(ev, "hostname");
    const char *id = pano_json_get_str(ev, "event_id");
    const pano_json *job_v = pano_json_get(ev, "dag_job_id");
    const char *job = pano_json_get_str(ev, "dag_job_id");
    int64_t pid;
    double ts;
    if (!wf_uuid[0] || !host || !id || !pano_json_get_int(ev, "pid", &pid) ||
        !pano_json_get_number(ev, "ts", &ts) || (job_v && !job) ||
        !plain(pano_json_get(ev, "hostname")) || (job && !plain(job_v)))
        return NULL;
    size_t hl = strlen(host), jl = job ? strlen(job) : 0;
    /* key: wf \x1f ("=" job | "-") \x1f host \x1f pid */
    size_t klen = PANO_WF_UUID_LEN + 2 + jl + 1 + hl + 1 + 24;
    delta_event *e = pano_calloc(1, sizeof *e + klen + 1 + jl + 1 + hl + 1);
    e->kind = kind;
    e->partition = partition;
    e->offset = offset;
    e->ts = ts;
    e->id_hash = run_table_hash(id);
    e->pid = pid;
    snprintf(e->wf, sizeof e->wf, "%s", wf_uuid);
    e->key = e->text;
    snprintf(e->key, klen + 1, "%s\x1f%s%s\x1f%s\x1f%lld", wf_uuid, job ? "=" : "-",
             job ? job : "", host, (long long)pid);
    char *p = e->key + strlen(e->key) + 1;
    memcpy(p, host, hl + 1);
    e->host = p;
    if (job) {
        memcpy(p + hl + 1, job, jl + 1);
        e->job = p + hl + 1;
    }
    if (kind == EV_SAMPLE) {
        e->own_delta = pano_json_get(ev, "delta") != NULL;
        e->clash = pano_json_get(ev, "delta_source") || pano_json_get(ev, "delta_offset") ||
                   pano_json_get(ev, "delta_after_end");
        for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
            if (pano_json_get_number(ev, pano_sample_values[i].name, &e->values[i]) &&
                in_range(e->values[i]))
                e->present |= 1u << i;
    }
    return e;
}

void delta_event_free(delta_event *e)
{
    free(e);
}

/* ---- lookups -------------------------------------------------------------- */

void deltas_begin(deltas *d, delta_event *const *events, size_t n)
{
    d->events = events;
    d->nevents = n;
    d->phase = PLAN_WORKFLOWS;
    d->nasked = 0;
}

static void ask(deltas *d, const delta_event *e)
{
    if (d->nasked == d->cap_asked) {
        d->cap_asked = d->cap_asked ? 2 * d->cap_asked : 64;
        d->asked = pano_reallocarray(d->asked, d->cap_asked, sizeof *d->asked);
    }
    d->asked[d->nasked++] = e;
}

static pano_json *term(const char *field, pano_json *value)
{
    pano_json *q = pano_json_object();
    pano_json_set(pano_json_set_object(q, "term"), field, value);
    return q;
}

static pano_json *exists(const char *field)
{
    pano_json *q = pano_json_object();
    pano_json_set_str(pano_json_set_object(q, "exists"), "field", field);
    return q;
}

static pano_json *not(pano_json *query)
{
    pano_json *q = pano_json_object();
    pano_json_append(pano_json_set_array(pano_json_set_object(q, "bool"), "must_not"), query);
    return q;
}

static pano_json *offset_below(int64_t offset)
{
    pano_json *q = pano_json_object();
    pano_json *r = pano_json_set_object(pano_json_set_object(q, "range"), "delta_offset");
    pano_json_set_int(r, "lt", offset);
    return q;
}

static pano_json *any_of(pano_json *a, pano_json *b)
{
    pano_json *q = pano_json_object();
    pano_json *bq = pano_json_set_object(q, "bool");
    pano_json *should = pano_json_set_array(bq, "should");
    pano_json_append(should, a);
    pano_json_append(should, b);
    pano_json_set_int(bq, "minimum_should_match", 1);
    return q;
}

/* One search of an _msearch body: its header and the body whose filter
 * (the workflow's samples, and its starts with_starts) *filter receives
 * more conditions. */
static pano_json *search(const deltas *d, const delta_event *e, bool with_starts,
                         pano_buf *out, pano_json **filter)
{
    pano_json *h = pano_json_object();
    pano_json_set(h, "index", pano_json_clone(with_starts ? d->run_indices : d->indices));
    pano_json_set_str(h, "routing", e->wf);
    pano_json_set_bool(h, "ignore_unavailable", true);
    pano_json_set_bool(h, "allow_no_indices", true);
    pano_json_serialize_to(out, h);
    pano_buf_append(out, "\n", 1);
    pano_json_free(h);
    pano_json *body = pano_json_object();
    *filter = pano_json_set_array(
        pano_json_set_object(pano_json_set_object(body, "query"), "bool"), "filter");
    pano_json_append(*filter, term("wf_uuid", pano_json_string(e->wf)));
    if (with_starts) {
        pano_json *names = pano_json_array();
        pano_json_append(names, pano_json_string("kickstart.inv.online"));
        pano_json_append(names, pano_json_string("kickstart.inv.start"));
        pano_json *q = pano_json_object();
        pano_json_set(pano_json_set_object(q, "terms"), "event", names);
        pano_json_append(*filter, q);
    } else
        pano_json_append(*filter, term("event", pano_json_string("kickstart.inv.online")));
    return body;
}

static void finish(pano_json *body, pano_buf *out)
{
    pano_json_serialize_to(out, body);
    pano_buf_append(out, "\n", 1);
    pano_json_free(body);
}

/* Whether the workflow of e held samples without delta, or with a delta an
 * indexer made (at any offset: an indexer stopped before its offsets were
 * committed made some of those it now gets again, and their runs' starts
 * are in the store). */
static void ask_workflow(const deltas *d, const delta_event *e, pano_buf *out)
{
    pano_json *filter, *body = search(d, e, false, out, &filter);
    pano_json_set_int(body, "size", 0);
    pano_json_set_int(body, "track_total_hits", 1);
    pano_json *made = pano_json_object();
    pano_json *f = pano_json_set_array(pano_json_set_object(made, "bool"), "filter");
    pano_json_append(f, term("delta_source", pano_json_string("indexer")));
    pano_json_append(filter, any_of(not(exists("delta")), made));
    finish(body, out);
}

/* The run's latest sample among those not made at or above e's offset, or
 * else its start. */
static void ask_run(const deltas *d, const delta_event *e, pano_buf *out)
{
    pano_json *filter, *body = search(d, e, true, out, &filter);
    pano_json_set_int(body, "size", 1);
    pano_json *sort = pano_json_set_array(body, "sort");
    static const char *const by[][2] = {{"ts", "double"}, {"delta_offset", "long"}};
    for (size_t i = 0; i < 2; i++) {
        pano_json *s = pano_json_object();
        pano_json *o = pano_json_set_object(s, by[i][0]);
        pano_json_set_str(o, "order", "desc");
        pano_json_set_str(o, "unmapped_type", by[i][1]);
        pano_json_append(sort, s);
    }
    pano_json *src = pano_json_set_array(body, "_source");
    static const char *const fields[] = {"event",        "ts",     "event_id",       "delta",
                                         "delta_source", "sample", "delta_after_end"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        pano_json_append(src, pano_json_string(fields[i]));
    for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
        pano_json_append(src, pano_json_string(pano_sample_values[i].name));
    if (e->job)
        pano_json_append(filter, term("dag_job_id", pano_json_string(e->job)));
    else
        pano_json_append(filter, not(exists("dag_job_id")));
    pano_json_append(filter, term("hostname", pano_json_string(e->host)));
    pano_json_append(filter, term("pid", pano_json_int(e->pid)));
    pano_json_append(filter, any_of(offset_below(e->offset), not(exists("delta_offset"))));
    finish(body, out);
}

/* A set of the strings seen in one pass. */
static bool first_time(run_table *seen, const char *key)
{
    if (run_table_find(seen, key))
        return false;
    run_table_add(seen, key, 0);
    return true;
}

size_t deltas_plan(deltas *d, pano_buf *body)
{
    d->nasked = 0;
    run_table *seen = run_table_new(2 * d->nevents + 1, 0, NULL, NULL); /* runs, workflows */
    if (d->phase == PLAN_WORKFLOWS) {
        /* Every run and workflow of the batch is made the most recently
         * used, so that what apply adds evicts none of them. A workflow is
         * asked for when the first event of a run not in the table needs
         * it. */
        for (size_t i = 0; i < d->nevents; i++) {
            const delta_event *e = d->events[i];
            bool known = run_table_find(d->runs, e->key) != NULL;
            bool wf_known = run_table_find(d->wfs, e->wf) != NULL;
            if (!known && first_time(seen, e->key) && !e->own_delta && !wf_known &&
                first_time(seen, e->wf))
                ask(d, e);
        }
        d->asked_runs = false;
        d->phase = PLAN_RUNS;
    } else if (d->phase == PLAN_RUNS) {
        for (size_t i = 0; i < d->nevents; i++) {
            const delta_event *e = d->events[i];
            if (run_table_find(d->runs, e->key) || !first_time(seen, e->key) || e->own_delta)
                continue;
            const wf_state *w = run_table_find(d->wfs, e->wf);
            if (!w || w->prior || w->lossy || (e->kind != EV_START && w->kept))
                ask(d, e);
        }
        d->asked_runs = true;
        d->phase = PLAN_DONE;
    }
    run_table_free(seen);
    for (size_t i = 0; i < d->nasked; i++)
        (d->asked_runs ? ask_run : ask_workflow)(d, d->asked[i], body);
    d->n.lookups += d->nasked;
    if (d->nasked == 0 && d->phase != PLAN_DONE)
        return deltas_plan(d, body);
    return d->nasked;
}

static const pano_json *path(const pano_json *v, const char *a, const char *b)
{
    return pano_json_get(pano_json_get(v, a), b);
}

/* The state of a run from its latest sample. */
static void state_of(const pano_json *src, run_state *r)
{
    const char *source = pano_json_get_str(src, "delta_source");
    const char *sample = pano_json_get_str(src, "sample");
    const char *id = pano_json_get_str(src, "event_id");
    const char *event = pano_json_get_str(src, "event");
    if (event && strcmp(event, "kickstart.inv.start") == 0)
        r->mode = RUN_ANNOUNCED; /* no sample of it stored before */
    else if (source && strcmp(source, "indexer") == 0) {
        const pano_json *after_end = pano_json_get(src, "delta_after_end");
        bool ended = (sample && strcmp(sample, "closing") == 0) ||
                     (after_end && after_end->type == PANO_JSON_BOOL && after_end->u.boolean);
        r->mode = ended ? RUN_ENDED : RUN_INGEST;
        pano_json_get_number(src, "ts", &r->last_ts);
        r->last_id = id ? run_table_hash(id) : 0;
        for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
            pano_json_get_number(src, pano_sample_values[i].name, &r->last[i]);
    } else
        r->mode = pano_json_get(src, "delta") ? RUN_PUBLISHER : RUN_RAW;
}

int deltas_read(deltas *d, const char *answer, size_t len, char *err, size_t errlen)
{
    char why[200];
    pano_json *a = pano_json_parse(answer, len, PANO_JSON_DEFAULT_DEPTH, why, sizeof why);
    const pano_json *responses = a ? pano_json_get_array(a, "responses") : NULL;
    int rc = -1;
    if (!a)
        snprintf(err, errlen, "unreadable _msearch answer: %s", why);
    else if (pano_json_len(responses) != d->nasked)
        snprintf(err, errlen, "_msearch answered %zu searches of %zu",
                 pano_json_len(responses), d->nasked);
    else
        rc = 0;
    for (size_t i = 0; rc == 0 && i < d->nasked; i++) {
        const pano_json *r = pano_json_at(responses, i);
        const pano_json *error = pano_json_get(r, "error");
        int64_t failed = 0, total = 0;
        const pano_json *to = pano_json_get(r, "timed_out");
        bool timed_out = to && to->type == PANO_JSON_BOOL && to->u.boolean;
        pano_json_get_int(pano_json_get(r, "_shards"), "failed", &failed);
        if (error) {
            const char *reason = pano_json_get_str(error, "reason");
            snprintf(err, errlen, "a lookup failed: %.300s", reason ? reason : "no reason given");
            rc = -1;
        } else if (failed > 0 || timed_out) {
            /* what the missing shards hold could be the run's state */
            snprintf(err, errlen, "a lookup answered in part (%lld shards failed%s)",
                     (long long)failed, timed_out ? ", timed out" : "");
            rc = -1;
        } else if (!d->asked_runs && !pano_json_get_int(path(r, "hits", "total"), "value", &total)) {
            snprintf(err, errlen, "a workflow's lookup answered no total");
            rc = -1;
        }
    }
    /* Every answer is read before any is applied: a round applies whole. */
    for (size_t i = 0; rc == 0 && i < d->nasked; i++) {
        const pano_json *r = pano_json_at(responses, i);
        const delta_event *e = d->asked[i];
        if (!d->asked_runs) {
            int64_t total = 0;
            pano_json_get_int(path(r, "hits", "total"), "value", &total);
            wf_state *w = run_table_find(d->wfs, e->wf);
            if (!w)
                w = run_table_add(d->wfs, e->wf, e->partition);
            w->prior = total > 0;
            continue;
        }
        const pano_json *hits = pano_json_get_array(pano_json_get(r, "hits"), "hits");
        if (pano_json_len(hits) == 0)
            continue; /* no sample: the event decides (deltas_apply) */
        run_state s = {0};
        state_of(pano_json_get(pano_json_at(hits, 0), "_source"), &s);
        run_state *r2 = run_table_add(d->runs, e->key, e->partition);
        *r2 = s;
    }
    pano_json_free(a);
    return rc;
}

/* ---- the changes ---------------------------------------------------------- */

static wf_state *workflow_of(deltas *d, const delta_event *e)
{
    wf_state *w = run_table_find(d->wfs, e->wf);
    if (!w) {
        /* not asked for (it was evicted meanwhile): assume the worst */
        w = run_table_add(d->wfs, e->wf, e->partition);
        w->prior = true;
    }
    return w;
}

static void put_value(pano_buf *b, size_t i, double v)
{
    if (pano_sample_values[i].seconds)
        pano_buf_appendf(b, "%.3f", v);
    else
        pano_buf_appendf(b, "%lld", (long long)llround(v));
}

/* The document with delta, delta_source and delta_offset in front. */
static char *with_delta(const char *doc, size_t len, const double *delta, const delta_event *e,
                        bool after_end)
{
    pano_buf b = {0};
    pano_buf_append_str(&b, "{\"delta\":{");
    for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++) {
        pano_buf_appendf(&b, "%s\"%s\":", i ? "," : "", pano_sample_values[i].name);
        put_value(&b, i, delta[i]);
    }
    pano_buf_appendf(&b, "},\"delta_source\":\"indexer\",\"delta_offset\":%lld,%s",
                     (long long)e->offset, after_end ? "\"delta_after_end\":true," : "");
    if (!e->clash) {
        pano_buf_append(&b, doc + 1, len - 1); /* after its '{' */
        return b.data;
    }
    /* Its own delta_source or delta_offset would be a duplicate key. */
    char why[64];
    pano_json *o = pano_json_parse(doc, len, PANO_JSON_DEFAULT_DEPTH, why, sizeof why);
    pano_json_remove(o, "delta_source");
    pano_json_remove(o, "delta_offset");
    pano_json_remove(o, "delta_after_end");
    size_t n;
    char *text = pano_json_serialize(o, &n);
    pano_buf_append(&b, text + 1, n - 1);
    free(text);
    pano_json_free(o);
    return b.data;
}

/* The closing sample of run r, ended by e (json: the end event as it came),
 * at time ts: the end's context, the last counters, the gauges at zero. */
static char *closing_event(const delta_event *e, const run_state *r, double ts,
                           const char *json, size_t len)
{
    char why[64];
    pano_json *end = pano_json_parse(json, len, PANO_JSON_DEFAULT_DEPTH, why, sizeof why);
    if (!end)
        return NULL;
    pano_json *c = pano_json_object();
    pano_json_set_str(c, "event", "kickstart.inv.online");
    pano_json_set_double(c, "ts", ts, 6);
    const char *id = pano_json_get_str(end, "event_id");
    char hash[33], closing_id[192];
    if (strlen(id) + sizeof "-closing" <= sizeof closing_id)
        snprintf(closing_id, sizeof closing_id, "%s-closing", id);
    else {
        pano_event_id_of(id, strlen(id), hash);
        snprintf(closing_id, sizeof closing_id, "closing-%s", hash);
    }
    pano_json_set_str(c, "event_id", closing_id);
    for (size_t i = 0; i < pano_json_len(end); i++) {
        const char *k = pano_json_key_at(end, i);
        if ((pano_event_is_envelope_key(k) && strcmp(k, "event") != 0 && strcmp(k, "ts") != 0 &&
             strcmp(k, "event_id") != 0 && strcmp(k, "seq") != 0) ||
            strcmp(k, "pid") == 0 || strcmp(k, "exe") == 0)
            pano_json_set(c, k, pano_json_clone(pano_json_at(end, i)));
    }
    pano_json *delta = pano_json_object();
    for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++) {
        const pano_sample_value *v = &pano_sample_values[i];
        double value = v->gauge ? 0 : r->last[i], change = v->gauge ? -r->last[i] : 0;
        if (v->seconds) {
            pano_json_set_double(c, v->name, value, 3);
            pano_json_set_double(delta, v->name, change, 3);
        } else {
            pano_json_set_int(c, v->name, llround(value));
            pano_json_set_int(delta, v->name, llround(change));
        }
    }
    pano_json_set(c, "delta", delta);
    pano_json_set_str(c, "delta_source", "indexer");
    pano_json_set_int(c, "delta_offset", e->offset);
    pano_json_set_str(c, "sample", "closing");
    size_t n;
    char *text = pano_json_serialize(c, &n);
    pano_json_free(c);
    pano_json_free(end);
    return text;
}

/* A sample of a run in ingest (or announced, or ended): its delta. */
static void sample_delta(deltas *d, run_state *r, const delta_event *e, const char *doc,
                         size_t doc_len, delta_change *out)
{
    double delta[PANO_SAMPLE_NVALUES] = {0};
    bool late = r->mode == RUN_ENDED ||
                (r->mode == RUN_INGEST &&
                 (e->ts < r->last_ts || (e->ts == r->last_ts && e->id_hash == r->last_id)));
    if (!late) {
        for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
            if (e->present & (1u << i)) {
                delta[i] = pano_sample_delta(i, e->values[i], r->last[i]);
                r->last[i] = e->values[i];
            }
        r->mode = RUN_INGEST;
        r->last_ts = e->ts;
        r->last_id = e->id_hash;
    }
    workflow_of(d, e)->kept = true;
    out->doc = with_delta(doc, doc_len, delta, e, r->mode == RUN_ENDED);
    out->late = late;
    d->n.made++;
    d->n.late += late;
}

static void new_run(deltas *d, const delta_event *e, run_mode mode)
{
    run_state *r = run_table_add(d->runs, e->key, e->partition);
    r->mode = (uint8_t)mode;
}

void deltas_apply(deltas *d, const delta_event *e, const char *doc, size_t doc_len,
                  const char *json, size_t json_len, delta_change *out)
{
    memset(out, 0, sizeof *out);
    run_state *r = run_table_find(d->runs, e->key);
    switch (e->kind) {
    case EV_START:
        if (!r)
            new_run(d, e, RUN_ANNOUNCED);
        else if (r->mode == RUN_ENDED && e->ts > r->last_ts) {
            /* the same job, host and pid again (a retry): a new run */
            memset(r, 0, sizeof *r);
            r->mode = RUN_ANNOUNCED;
        }
        return;
    case EV_SAMPLE:
        if (e->own_delta) {
            if (!r)
                new_run(d, e, RUN_PUBLISHER);
            else if (r->mode == RUN_ANNOUNCED)
                r->mode = RUN_PUBLISHER;
            return;
        }
        if (!r) {
            /* no start before it, no history: as it came */
            new_run(d, e, RUN_RAW);
            return;
        }
        if (r->mode == RUN_ANNOUNCED || r->mode == RUN_INGEST || r->mode == RUN_ENDED)
            sample_delta(d, r, e, doc, doc_len, out);
        return;
    case EV_END:
        if (!r || r->mode == RUN_ENDED)
            return;
        if (r->mode != RUN_INGEST) {
            run_table_remove(d->runs, e->key);
            return;
        }
        double ts = fmax(e->ts, r->last_ts);
        out->closing = closing_event(e, r, ts, json, json_len);
        for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
            if (pano_sample_values[i].gauge)
                r->last[i] = 0;
        r->mode = RUN_ENDED;
        r->last_ts = ts;
        d->n.closings++;
        return;
    }
}

/* ---- the table ------------------------------------------------------------ */

void deltas_forget_partition(deltas *d, int partition)
{
    run_table_forget_partition(d->runs, partition);
    run_table_forget_partition(d->wfs, partition);
}

const deltas_counters *deltas_counts(const deltas *d)
{
    return &d->n;
}

size_t deltas_runs(const deltas *d)
{
    return run_table_count(d->runs);
}
