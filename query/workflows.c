/*
 * workflows.c - the recent workflows of the store, and the events a job
 * published beside its samples.
 */
#include "event.h"
#include "mem.h"
#include "query.h"
#include "store_es.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A workflow with runs still open and nothing new for this long is stalled. */
#define STALLED_AFTER 120.0

static int64_t count_of(const pano_json *aggs, const char *name)
{
    int64_t n = 0;
    const pano_json *a = store_agg(aggs, name);
    return a && pano_json_get_int(a, "doc_count", &n) ? n : 0;
}

int pano_query_workflows(pano_query *q, double since, size_t limit, double now,
                         pano_workflow **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    pano_json *filter, *body = store_body(NULL, &filter);
    pano_json *range = pano_json_object();
    pano_json_set_double(pano_json_set_object(pano_json_set_object(range, "range"), "ts"), "gte",
                         since, 3);
    pano_json_append(filter, range);
    pano_json_append(filter, store_exists("wf_uuid"));
    pano_json *wf = pano_json_set_object(pano_json_set_object(body, "aggs"), "wf");
    pano_json *terms = pano_json_set_object(wf, "terms");
    pano_json_set_str(terms, "field", "wf_uuid");
    pano_json_set_int(terms, "size", (int64_t)limit);
    pano_json_set(terms, "order", store_literal("{\"last\":\"desc\"}"));
    pano_json *sub = pano_json_set_object(wf, "aggs"), *a;
    store_span_aggs(sub);
    /* pano's publishers name it wf_label, monitord dax_label */
    const char *label_fields[] = {"wf_label", "dax_label"};
    for (size_t i = 0; i < 2; i++) {
        pano_json *t = pano_json_set_object(pano_json_set_object(sub, label_fields[i]), "terms");
        pano_json_set_str(t, "field", label_fields[i]);
        pano_json_set_int(t, "size", 1);
    }
    pano_json_set(sub, "starts", store_filter_agg(store_term("event", "kickstart.inv.start"), &a));
    pano_json *ends = store_filter_agg(store_term("event", "kickstart.inv.end"), &a);
    pano_json *ok;
    pano_json_set(a, "ok", store_filter_agg(store_term("exitcode", "0"), &ok));
    pano_json_set(sub, "ends", ends);
    pano_json *xwf = store_filter_agg(store_term("event", "stampede.xwf.end"), &a);
    pano_json *top = pano_json_set_object(pano_json_set_object(a, "status"), "top_hits");
    pano_json_set_int(top, "size", 1);
    pano_json_set(top, "sort", store_literal("[{\"ts\":\"desc\"}]"));
    pano_json_set(top, "_source", store_literal("[\"status\"]"));
    pano_json_set(sub, "xwf_end", xwf);
    pano_json_set(sub, "monitord", store_filter_agg(store_prefix("event", "stampede.job_inst."), &a));

    pano_json *answer = store_search(q, NULL, STORE_EVENT_STREAMS, body, err, errlen);
    if (!answer)
        return -1;
    const pano_json *buckets =
        pano_json_get_array(store_agg(pano_json_get(answer, "aggregations"), "wf"), "buckets");
    size_t count = pano_json_len(buckets);
    *out = pano_calloc(count ? count : 1, sizeof **out);
    for (size_t i = 0; i < count; i++) {
        const pano_json *b = pano_json_at(buckets, i);
        pano_workflow *w = &(*out)[*n];
        char buf[512];
        if (!pano_wf_uuid_normalize(store_str(b, "key", buf, sizeof buf), w->wf_uuid))
            continue; /* the fallback index's strays */
        buf[0] = '\0';
        for (size_t l = 0; l < 2 && !buf[0]; l++) {
            const pano_json *labels =
                pano_json_get_array(store_agg(b, label_fields[l]), "buckets");
            if (pano_json_len(labels) > 0)
                store_str(pano_json_at(labels, 0), "key", buf, sizeof buf);
        }
        w->wf_label = pano_strdup(buf);
        store_span_read(b, &w->first_event, &w->last_event);
        const pano_json *e = store_agg(b, "ends");
        size_t ended = (size_t)count_of(b, "ends");
        w->runs = (size_t)count_of(b, "starts");
        w->succeeded = (size_t)count_of(e, "ok");
        w->failed = ended - w->succeeded;
        w->running = w->runs > ended ? w->runs - ended : 0;
        const pano_json *status = store_top_hit(store_agg(b, "xwf_end"), "status");
        w->runs_known = w->runs > 0 || count_of(b, "monitord") == 0;
        if (status)
            w->state = store_num(status, "status", 0) == 0 ? "succeeded" : "failed";
        else if (w->running > 0 || !w->runs_known) /* monitord's, not ended */
            w->state = now - w->last_event > STALLED_AFTER ? "stalled" : "running";
        else
            w->state = w->failed > 0 ? "failed" : "succeeded";
        (*n)++;
    }
    pano_json_free(answer);
    return 0;
}

void pano_workflows_free(pano_workflow *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(w[i].wf_label);
    free(w);
}

pano_json *pano_query_job_start(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                                char *err, size_t errlen)
{
    if (!job->from_monitor)
        return pano_json_null();
    static const char *const fam[] = {"kickstart", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json_set_int(body, "size", 1);
    /* the event as published: Elasticsearch's own @timestamp left out */
    pano_json_set(body, "_source", store_literal("{\"excludes\":[\"@timestamp\"]}"));
    pano_json_append(filter, store_term("event", "kickstart.inv.start"));
    pano_json_append(filter, store_run_filter(job));
    pano_json *answer = store_search(q, jobs, fam, body, err, errlen);
    if (!answer)
        return NULL;
    const pano_json *hits = pano_json_get_array(pano_json_get(answer, "hits"), "hits");
    const pano_json *src =
        pano_json_len(hits) > 0 ? pano_json_get(pano_json_at(hits, 0), "_source") : NULL;
    pano_json *start = src ? pano_json_clone(src) : pano_json_null();
    pano_json_free(answer);
    return start;
}

pano_json *pano_query_job_events(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                                 size_t limit, char *err, size_t errlen)
{
    static const char *const fam[] = {"darshan", "transfer", "custom", "other", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json_set_int(body, "size", (int64_t)limit);
    pano_json_set(body, "sort", store_literal("[{\"ts\":\"asc\"}]"));
    /* The per-file table of a Darshan log can be large: its totals stay. */
    pano_json_set(body, "_source", store_literal("{\"excludes\":[\"files\",\"@timestamp\"]}"));
    store_add_published_by(filter, jobs, job);
    pano_json *answer = store_search(q, jobs, fam, body, err, errlen);
    if (!answer)
        return NULL;
    pano_json *events = pano_json_array();
    const pano_json *hits = pano_json_get_array(pano_json_get(answer, "hits"), "hits");
    for (size_t i = 0; i < pano_json_len(hits); i++) {
        const pano_json *src = pano_json_get(pano_json_at(hits, i), "_source");
        if (src)
            pano_json_append(events, pano_json_clone(src));
    }
    pano_json_free(answer);
    return events;
}

pano_json *pano_query_job_metrics(pano_query *q, const pano_jobs *jobs, const pano_job *job,
                                  size_t limit, bool *left_out, char *err, size_t errlen)
{
    static const char *const fam[] = {"custom", NULL};
    pano_json *filter, *body = store_body(jobs->wf_uuid, &filter);
    pano_json_set_int(body, "size", (int64_t)limit + 1); /* one more: were some left out */
    pano_json_set(body, "sort", store_literal("[{\"ts\":\"desc\"}]"));
    pano_json_set(body, "_source", store_literal("[\"ts\",\"name\",\"value\"]"));
    pano_json_append(filter, store_term("event", "custom.metric"));
    store_add_published_by(filter, jobs, job);
    pano_json *answer = store_search(q, jobs, fam, body, err, errlen);
    if (!answer)
        return NULL;
    const pano_json *hits = pano_json_get_array(pano_json_get(answer, "hits"), "hits");
    size_t n = pano_json_len(hits);
    *left_out = n > limit;
    if (n > limit)
        n = limit;
    pano_json *metrics = pano_json_object();
    for (size_t i = n; i-- > 0;) { /* oldest first */
        const pano_json *src = pano_json_get(pano_json_at(hits, i), "_source");
        const char *name = pano_json_get_str(src, "name");
        double ts, value;
        if (!name || !pano_json_get_number(src, "ts", &ts) ||
            !pano_json_get_number(src, "value", &value))
            continue;
        pano_json *points = pano_json_get(metrics, name);
        if (!points)
            points = pano_json_set_array(metrics, name);
        pano_json *p = pano_json_array();
        pano_json_append(p, pano_json_double(ts, 6));
        pano_json_append(p, pano_json_double(value, -1));
        pano_json_append(points, p);
    }
    pano_json_free(answer);
    return metrics;
}
