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

void pano_bulk_partition(const char *base, pano_period period, double ts, char *out,
                         size_t size)
{
    char suffix[16];
    pano_period_suffix(period, ts, suffix, sizeof suffix);
    snprintf(out, size, "%.200s-%s", base, suffix);
}

pano_bulk_doc_status pano_bulk_doc_prepare(const char *json, size_t len,
                                           const pano_bulk_layout *layout, double now,
                                           pano_bulk_doc *out, char *reason, size_t reason_len)
{
    memset(out, 0, sizeof *out);
    char err[200];
    pano_json_parse_options po = {.max_depth = PANO_JSON_DEFAULT_DEPTH, .arena = layout->arena};
    pano_json *ev = pano_json_parse_with(json, len, &po, err, sizeof err);
    bool in_arena = layout->arena != NULL;
    if (!ev) {
        snprintf(reason, reason_len, "invalid JSON: %s", err);
        return PANO_BULK_DOC_INVALID;
    }
    pano_place place;
    pano_place_status st = pano_event_place(ev, layout->policies, now, &place, reason, reason_len);
    bool ok = st == PANO_PLACE_OK, expired = st == PANO_PLACE_EXPIRED;
    if (place.event_id) /* for a dead letter too */
        snprintf(out->id, sizeof out->id, "%s", place.event_id);
    if (ok || expired)
        out->ts = place.ts;
    memcpy(out->wf_uuid, place.wf_uuid, sizeof out->wf_uuid);
    int stream = place.stream;
    double ts = place.ts;
    if (ok) {
        out->stream = pano_streams[stream];
        char base[256];
        if (stream == PANO_STREAM_UNASSIGNED)
            snprintf(base, sizeof base, "%s", layout->fallback_index);
        else {
            snprintf(base, sizeof base, "%.200s%s", layout->prefix, out->stream);
            memcpy(out->routing, out->wf_uuid, sizeof out->routing);
        }
        pano_bulk_partition(base, layout->policies[stream].period, ts, out->index, sizeof out->index);
        char stamp[64];
        pano_bulk_timestamp(ts, stamp, sizeof stamp);
        if (pano_json_get(ev, "@timestamp") || memchr(json, '\n', len) ||
            memchr(json, '\r', len)) {
            /* The event's own @timestamp would be a duplicate key (ts wins),
             * and a bulk body needs the document on one line. A tree in
             * the arena is read-only: it becomes a copy on the heap. */
            if (layout->arena)
                ev = pano_json_clone(ev);
            in_arena = false;
            pano_json_remove(ev, "@timestamp");
            size_t n;
            char *text = pano_json_serialize(ev, &n);
            out->doc = pano_asprintf("{\"@timestamp\":\"%s\"%s%s", stamp, n > 2 ? "," : "",
                                     text + 1);
            free(text);
        } else {
            /* Add @timestamp in front of the original text rather than
             * re-serializing the event: cheaper, and the source stays as
             * sent. The object has keys (event, ...), so a comma follows. */
            const char *rest = memchr(json, '{', len) + 1;
            size_t rest_len = len - (size_t)(rest - json);
            static const char open[] = "{\"@timestamp\":\"", close[] = "\",";
            size_t stamp_len = strlen(stamp);
            char *p = out->doc = pano_malloc(sizeof open + stamp_len + sizeof close + rest_len);
            memcpy(p, open, sizeof open - 1);
            p += sizeof open - 1;
            memcpy(p, stamp, stamp_len);
            p += stamp_len;
            memcpy(p, close, sizeof close - 1);
            p += sizeof close - 1;
            memcpy(p, rest, rest_len);
            p[rest_len] = '\0';
        }
        out->doc_len = strlen(out->doc);
    }
    if (ok && layout->keep_event) {
        out->event = ev;
        out->event_in_arena = in_arena;
    } else if (!in_arena)
        pano_json_free(ev);
    return ok ? PANO_BULK_DOC_OK : expired ? PANO_BULK_DOC_EXPIRED : PANO_BULK_DOC_INVALID;
}

void pano_bulk_doc_drop_event(pano_bulk_doc *doc)
{
    if (!doc->event_in_arena)
        pano_json_free(doc->event);
    doc->event = NULL;
    doc->event_in_arena = false;
}

void pano_bulk_doc_free(pano_bulk_doc *doc)
{
    free(doc->doc);
    doc->doc = NULL;
    pano_bulk_doc_drop_event(doc);
}

void pano_bulk_append_json_string(pano_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    pano_buf_append(b, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        pano_buf_append(b, s + start, i - start);
        char esc[7] = {'\\', (char)c, 0};
        if (c < 0x20) {
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            pano_buf_append(b, esc, 6);
        } else
            pano_buf_append(b, esc, 2);
        start = i + 1;
    }
    pano_buf_append(b, s + start, len - start);
    pano_buf_append(b, "\"", 1);
}

void pano_bulk_append(pano_buf *body, const pano_bulk_doc *doc)
{
    /* Index names and routing are built from checked parts; only the id
     * comes from the event as it is. */
    pano_buf_append_str(body, "{\"create\":{\"_index\":\"");
    pano_buf_append_str(body, doc->index);
    pano_buf_append_str(body, "\",\"_id\":");
    pano_bulk_append_json_string(body, doc->id, strlen(doc->id));
    if (doc->routing[0]) {
        pano_buf_append_str(body, ",\"routing\":\"");
        pano_buf_append_str(body, doc->routing);
        pano_buf_append_str(body, "\"");
    }
    pano_buf_append_str(body, "}}\n");
    pano_buf_append(body, doc->doc, doc->doc_len);
    pano_buf_append(body, "\n", 1);
}

pano_bulk_outcome pano_bulk_classify(int status)
{
    if ((status >= 200 && status < 300) || status == 409)
        return PANO_BULK_DONE;
    if (status == 429 || status >= 500 || status == 0)
        return PANO_BULK_RETRY;
    return PANO_BULK_REJECTED;
}

bool pano_bulk_all_created(const char *body, size_t len)
{
    /* {"errors":false,"items":[...]} with filter_path; {"took":N,"errors":false,...}
     * without. Look only at the first 64 bytes, outside any item. */
    size_t n = len < 64 ? len : 64;
    const char *items = memmem(body, n, "\"items\"", 7);
    const char *f = memmem(body, n, "\"errors\":false", 14);
    return f && (!items || f < items);
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
    size_t got = items && items->type == PANO_JSON_ARRAY ? pano_json_len(items) : 0;
    if (!items || items->type != PANO_JSON_ARRAY || got != n) {
        snprintf(err, errlen, "bulk response has %zu items for %zu documents", got, n);
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        pano_json *item = pano_json_at(items, i);
        /* {"create": {"status": 201, "error": {"type": ..., "reason": ...}}} */
        pano_json *op =
            item->type == PANO_JSON_OBJECT && pano_json_len(item) == 1 ? pano_json_at(item, 0) : NULL;
        int64_t status = 0;
        if (!op || !pano_json_get_int(op, "status", &status))
            status = 0;
        results[i].status = (int)status;
        results[i].outcome = pano_bulk_classify((int)status);
        if (!pano_json_get_int(op, "_seq_no", &results[i].seq_no) ||
            !pano_json_get_int(op, "_primary_term", &results[i].primary_term))
            results[i].seq_no = results[i].primary_term = -1;
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
