#include "bulk.h"

#include "event.h"
#include "json.h"
#include "mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void pano_bulk_timestamp(double ts, char *out, size_t size)
{
    time_t secs = (time_t)floor(ts);
    long micros = lround((ts - (double)secs) * 1e6);
    if (micros >= 1000000) {
        secs++;
        micros -= 1000000;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%s.%06ldZ", date, micros);
}

bool pano_bulk_doc_prepare(const char *json, size_t len, const char *index_prefix,
                           pano_bulk_doc *out, char *reason, size_t reason_len)
{
    memset(out, 0, sizeof *out);
    char err[200];
    pano_json *ev = pano_json_parse(json, len, PANO_JSON_DEFAULT_DEPTH, err, sizeof err);
    bool ok = false;
    if (!ev) {
        snprintf(reason, reason_len, "invalid JSON: %s", err);
        return false;
    }
    const char *name = pano_json_get_str(ev, "event");
    const char *id = pano_json_get_str(ev, "event_id");
    const char *wf = pano_json_get_str(ev, "wf_uuid");
    double ts;
    if (ev->type != PANO_JSON_OBJECT || !name || !pano_event_name_valid(name))
        snprintf(reason, reason_len, "no valid event name");
    else if (!id || !*id || strlen(id) >= sizeof out->id)
        snprintf(reason, reason_len, "no usable event_id");
    else if (!pano_json_get_number(ev, "ts", &ts))
        snprintf(reason, reason_len, "no numeric ts");
    else {
        snprintf(out->index, sizeof out->index, "%s%s", index_prefix, pano_event_family(name));
        snprintf(out->id, sizeof out->id, "%s", id);
        snprintf(out->routing, sizeof out->routing, "%s", wf && strlen(wf) < sizeof out->routing ? wf : "");
        /* Add @timestamp in front of the original text rather than
         * re-serializing the event: cheaper, and the source stays as sent. */
        char stamp[64];
        pano_bulk_timestamp(ts, stamp, sizeof stamp);
        const char *rest = memchr(json, '{', len) + 1;
        size_t rest_len = len - (size_t)(rest - json);
        out->doc = pano_asprintf("{\"@timestamp\":\"%s\",%.*s", stamp, (int)rest_len, rest);
        out->doc_len = strlen(out->doc);
        ok = true;
    }
    pano_json_free(ev);
    return ok;
}

void pano_bulk_doc_free(pano_bulk_doc *doc)
{
    free(doc->doc);
    doc->doc = NULL;
}

void pano_bulk_append(pano_buf *body, const pano_bulk_doc *doc)
{
    pano_json *action = pano_json_object();
    pano_json *create = pano_json_set_object(action, "create");
    pano_json_set_str(create, "_index", doc->index);
    pano_json_set_str(create, "_id", doc->id);
    if (doc->routing[0])
        pano_json_set_str(create, "routing", doc->routing);
    size_t n;
    char *line = pano_json_serialize(action, &n);
    pano_buf_append(body, line, n);
    pano_buf_append(body, "\n", 1);
    pano_buf_append(body, doc->doc, doc->doc_len);
    pano_buf_append(body, "\n", 1);
    free(line);
    pano_json_free(action);
}

pano_bulk_outcome pano_bulk_classify(int status)
{
    if ((status >= 200 && status < 300) || status == 409)
        return PANO_BULK_DONE;
    if (status == 429 || status >= 500 || status == 0)
        return PANO_BULK_RETRY;
    return PANO_BULK_REJECTED;
}

int pano_bulk_read_response(const char *body, size_t len, size_t n, pano_bulk_result *results,
                            char *err, size_t errlen)
{
    char why[200];
    pano_json *r = pano_json_parse(body, len, PANO_JSON_DEFAULT_DEPTH, why, sizeof why);
    if (!r) {
        snprintf(err, errlen, "unreadable bulk response: %s", why);
        return -1;
    }
    pano_json *items = pano_json_get(r, "items");
    int rc = 0;
    if (!items || items->type != PANO_JSON_ARRAY || items->u.items.len != n) {
        snprintf(err, errlen, "bulk response has %zu items for %zu documents",
                 items && items->type == PANO_JSON_ARRAY ? items->u.items.len : 0, n);
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        pano_json *item = items->u.items.values[i];
        /* {"create": {"status": 201, "error": {"type": ..., "reason": ...}}} */
        pano_json *op = item->type == PANO_JSON_OBJECT && item->u.items.len == 1
                            ? item->u.items.values[0]
                            : NULL;
        int64_t status = 0;
        if (!op || !pano_json_get_int(op, "status", &status))
            status = 0;
        results[i].status = (int)status;
        results[i].outcome = pano_bulk_classify((int)status);
        results[i].reason[0] = '\0';
        pano_json *error = pano_json_get(op, "error");
        if (error) {
            const char *type = pano_json_get_str(error, "type");
            const char *text = pano_json_get_str(error, "reason");
            snprintf(results[i].reason, sizeof results[i].reason, "%s: %s",
                     type ? type : "error", text ? text : "");
        }
    }
done:
    pano_json_free(r);
    return rc;
}
