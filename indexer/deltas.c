/*
 * deltas.c - the delta pano-indexer gives samples that come without one
 * (deltas.h): the table of runs' states and the lookups that recover them;
 * what each event makes is run_delta.c's.
 */
#include "deltas.h"

#include "event.h"
#include "mem.h"
#include "run_delta.h"
#include "run_table.h"
#include "sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bool prior; /* it held samples without delta, or with the indexer's, before it
                   was first seen here */
    bool lossy; /* a run of it in ingest or raw was evicted */
    bool kept;  /* a run of it went to ingest here (and may end, and be evicted) */
} wf_state;

struct deltas {
    run_table *runs, *wfs;
    pano_json *indices;     /* where the samples are: [<prefix>samples-*, <prefix>kickstart] */
    pano_json *run_indices; /* and the starts: those and <prefix>kickstart-* */
    deltas_counters n;
    pano_run_event *const *events; /* the batch's, in order */
    size_t nevents;
    enum { PLAN_WORKFLOWS, PLAN_RUNS, PLAN_DONE } phase;
    const pano_run_event **asked; /* the searches of the round in hand, in order */
    size_t nasked, cap_asked;
    bool asked_runs;
};

static void on_run_evicted(const char *key, void *value, void *user)
{
    deltas *d = user;
    const pano_run_state *r = value;
    d->n.evicted++;
    if (r->mode != PANO_RUN_INGEST && r->mode != PANO_RUN_RAW)
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
    d->runs = run_table_new(max_runs, sizeof(pano_run_state), on_run_evicted, d);
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

/* ---- lookups -------------------------------------------------------------- */

void deltas_begin(deltas *d, pano_run_event *const *events, size_t n)
{
    d->events = events;
    d->nevents = n;
    d->phase = PLAN_WORKFLOWS;
    d->nasked = 0;
}

static void ask(deltas *d, const pano_run_event *e)
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
static pano_json *search(const deltas *d, const pano_run_event *e, bool with_starts,
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
static void ask_workflow(const deltas *d, const pano_run_event *e, pano_buf *out)
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
static void ask_run(const deltas *d, const pano_run_event *e, pano_buf *out)
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
            const pano_run_event *e = d->events[i];
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
            const pano_run_event *e = d->events[i];
            if (run_table_find(d->runs, e->key) || !first_time(seen, e->key) || e->own_delta)
                continue;
            const wf_state *w = run_table_find(d->wfs, e->wf);
            if (!w || w->prior || w->lossy || (e->kind != PANO_RUN_START && w->kept))
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
        const pano_run_event *e = d->asked[i];
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
        pano_run_state s = {0};
        pano_run_state_of(pano_json_get(pano_json_at(hits, 0), "_source"), "indexer", &s);
        pano_run_state *r2 = run_table_add(d->runs, e->key, e->partition);
        *r2 = s;
    }
    pano_json_free(a);
    return rc;
}

/* ---- the changes ---------------------------------------------------------- */

static wf_state *workflow_of(deltas *d, const pano_run_event *e)
{
    wf_state *w = run_table_find(d->wfs, e->wf);
    if (!w) {
        /* not asked for (it was evicted meanwhile): assume the worst */
        w = run_table_add(d->wfs, e->wf, e->partition);
        w->prior = true;
    }
    return w;
}

void deltas_apply(deltas *d, const pano_run_event *e, const char *doc, size_t doc_len,
                  const char *json, size_t json_len, pano_run_change *out)
{
    pano_run_state *r = run_table_find(d->runs, e->key);
    pano_run_state s = r ? *r : (pano_run_state){0};
    pano_run_apply(&s, e, "indexer", doc, doc_len, json, json_len, out);
    if (!r && s.mode != PANO_RUN_NONE)
        r = run_table_add(d->runs, e->key, e->partition);
    if (r && s.mode == PANO_RUN_NONE)
        run_table_remove(d->runs, e->key);
    else if (r)
        *r = s;
    if (out->made) {
        workflow_of(d, e)->kept = true;
        d->n.made++;
        d->n.late += out->late;
    }
    if (out->closing)
        d->n.closings++;
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
