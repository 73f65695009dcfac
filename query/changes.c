/*
 * changes.c - what tells that a workflow's events changed, at the cost of
 * one small search: their count and their latest ts.
 */
#include "event.h"
#include "query.h"
#include "store_es.h"

#include <stdio.h>
#include <string.h>

int pano_query_changes(pano_query *q, const char *wf_uuid, pano_changes *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    /* routed by the workflow, over every partition (its span is not known) */
    pano_jobs where = {0};
    if (!pano_wf_uuid_normalize(wf_uuid, where.wf_uuid)) {
        snprintf(err, errlen, "'%.80s' is not a workflow UUID (8-4-4-4-12 hexadecimal digits)",
                 wf_uuid);
        return -1;
    }
    pano_json *filter, *body = store_body(where.wf_uuid, &filter);
    pano_json_set_bool(body, "track_total_hits", true);
    pano_json_set(pano_json_set_object(body, "aggs"), "latest", store_metric("max", "ts"));
    pano_json *answer = store_search(q, &where, STORE_EVENT_STREAMS, body, err, errlen);
    if (!answer)
        return -1;
    const pano_json *total = pano_json_get(pano_json_get(answer, "hits"), "total");
    if (!total || !pano_json_get_int(total, "value", &out->events)) {
        snprintf(err, errlen, "Elasticsearch's answer has no hits.total.value");
        pano_json_free(answer);
        return -1;
    }
    out->latest = store_value(pano_json_get(answer, "aggregations"), "latest", 0);
    pano_json_free(answer);
    return q->use_summaries ? store_summarized(q, &where, &out->summarized, err, errlen) : 0;
}
