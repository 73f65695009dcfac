#include "globus.h"

#include "mem.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_parse.h>

/* ---- positions -------------------------------------------------------- */

static void line_col(const char *text, size_t offset, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < offset; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else
            (*col)++;
    }
}

/* Check the whole input with yajl (several top-level values allowed), so a
 * syntax error is reported with its position. */
static int validate(const char *text, size_t len, char *err, size_t errlen)
{
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    yajl_config(h, yajl_allow_multiple_values, 1);
    yajl_status s = yajl_parse(h, (const unsigned char *)text, len);
    size_t at = yajl_get_bytes_consumed(h);
    if (s == yajl_status_ok) {
        s = yajl_complete_parse(h);
        at = len;
    }
    if (s == yajl_status_ok) {
        yajl_free(h);
        return 0;
    }
    unsigned char *msg = yajl_get_error(h, 0, (const unsigned char *)text, len);
    char what[200];
    snprintf(what, sizeof what, "%s", msg ? (const char *)msg : "invalid JSON");
    if (msg)
        yajl_free_error(h, msg);
    what[strcspn(what, "\n")] = '\0';
    /* "parse error: ..." / "premature EOF" from yajl */
    const char *w = strncmp(what, "parse error: ", 13) == 0 ? what + 13 : what;
    if (at > len)
        at = len;
    size_t line, col;
    line_col(text, at, &line, &col);
    if (at >= len)
        snprintf(err, errlen, "malformed JSON: unexpected end of input at line %zu, column %zu (%s)",
                 line, col, w);
    else
        snprintf(err, errlen, "malformed JSON at line %zu, column %zu (byte %zu): %s", line, col,
                 at + 1, w);
    yajl_free(h);
    return -1;
}

/* End of the JSON value starting at p (valid JSON, checked before). */
static const char *value_end(const char *p, const char *end)
{
    if (*p == '"') {
        for (p++; p < end; p++) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                return p + 1;
        }
        return end;
    }
    if (*p != '{' && *p != '[') {
        while (p < end && !isspace((unsigned char)*p) && *p != '{' && *p != '[' && *p != '"')
            p++;
        return p;
    }
    int depth = 0;
    for (; p < end; p++) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
        } else if (*p == '{' || *p == '[')
            depth++;
        else if (*p == '}' || *p == ']') {
            if (--depth == 0)
                return p + 1;
        }
    }
    return end;
}

/* ---- times and PROGRESS details ---------------------------------------- */

bool pano_globus_time(const char *text, double *out)
{
    int y, mo, d, h, mi, s, n = 0;
    if (!text || sscanf(text, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
        return false;
    const char *p = text + 10;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return false;
    p++;
    if (sscanf(p, "%2d:%2d:%2d%n", &h, &mi, &s, &n) != 3 || n != 8)
        return false;
    p += 8;
    double frac = 0;
    if (*p == '.') {
        double scale = 0.1;
        for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z')
        p++;
    else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om = 0;
        p++;
        if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
            return false;
        oh = (p[0] - '0') * 10 + (p[1] - '0');
        p += 2;
        if (*p == ':')
            p++;
        if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1])) {
            om = (p[0] - '0') * 10 + (p[1] - '0');
            p += 2;
        }
        offset = sign * (oh * 3600L + om * 60L);
    }
    if (*p)
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return false;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                    .tm_hour = h, .tm_min = mi, .tm_sec = s};
    time_t t = timegm(&tm);
    *out = (double)t - (double)offset + frac;
    return true;
}

/* bytes_transferred is a count; duration and mbps stay doubles, so that
 * Elasticsearch maps them as such whatever the first value looks like. */
static void set_number(pano_json *ev, const char *key, double v)
{
    if (strcmp(key, "bytes_transferred") == 0 && v == floor(v) && fabs(v) < 9e15)
        pano_json_set_int(ev, key, (int64_t)v);
    else
        pano_json_set_double(ev, key, v, -1);
}

bool pano_globus_progress(const char *details, pano_json *event)
{
    static const char *const keys[] = {"bytes_transferred", "duration", "mbps"};
    if (!details)
        return false;
    bool found = false;
    char err[128];
    pano_json *obj = pano_json_parse(details, strlen(details), 8, err, sizeof err);
    if (obj && obj->type == PANO_JSON_OBJECT) {
        for (size_t i = 0; i < 3; i++) {
            double v;
            const char *s;
            char *end;
            if (pano_json_get_number(obj, keys[i], &v))
                ;
            else if ((s = pano_json_get_str(obj, keys[i])) && (v = strtod(s, &end), end != s))
                ;
            else
                continue;
            if (isfinite(v)) {
                set_number(event, keys[i], v);
                found = true;
            }
        }
        pano_json_free(obj);
        return found;
    }
    pano_json_free(obj);
    /* "bytes_transferred=123 duration=4.5 mbps=0.2" and the like */
    for (size_t i = 0; i < 3; i++) {
        const char *p = details;
        size_t klen = strlen(keys[i]);
        while ((p = strstr(p, keys[i]))) {
            const char *q = p + klen;
            bool starts = p == details || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
            p = q;
            if (!starts)
                continue;
            while (*q == ' ' || *q == '"')
                q++;
            if (*q != '=' && *q != ':')
                continue;
            q++;
            while (*q == ' ' || *q == '"')
                q++;
            char *end;
            double v = strtod(q, &end);
            if (end != q && isfinite(v)) {
                set_number(event, keys[i], v);
                found = true;
            }
            break;
        }
    }
    return found;
}

/* ---- documents ------------------------------------------------------------ */

static pano_json *convert_event(const pano_json *in)
{
    pano_json *ev = pano_json_object();
    for (size_t i = 0; i < pano_json_len(in); i++) {
        const char *k = pano_json_key_at(in, i);
        if (strcmp(k, "DATA_TYPE") == 0)
            continue;
        pano_json_set(ev, k, pano_json_clone(pano_json_at(in, i)));
    }
    double t;
    if (pano_globus_time(pano_json_get_str(in, "time"), &t))
        pano_json_set_double(ev, "ts", t, 6);
    const char *code = pano_json_get_str(in, "code");
    if (code && strcmp(code, "PROGRESS") == 0)
        pano_globus_progress(pano_json_get_str(in, "details"), ev);
    return ev;
}

static double event_ts(const pano_json *ev)
{
    double t;
    return pano_json_get_number(ev, "ts", &t) ? t : 0;
}

static int by_ts(const pano_json *a, const pano_json *b)
{
    double ta = event_ts(a), tb = event_ts(b);
    return (ta > tb) - (ta < tb);
}

/* Append the events of list (an array, or an event_list document) to the
 * body's transfer_events, keeping them oldest first. */
static int add_events(pano_json *body, const pano_json *list, char *err, size_t errlen)
{
    if (list->type == PANO_JSON_OBJECT) {
        const pano_json *data = pano_json_get(list, "DATA");
        if (!data) {
            snprintf(err, errlen, "an event list without DATA");
            return -1;
        }
        list = data;
    }
    if (list->type != PANO_JSON_ARRAY) {
        snprintf(err, errlen, "task events are not a list");
        return -1;
    }
    pano_json *events = pano_json_get(body, "transfer_events");
    if (!events)
        events = pano_json_set_array(body, "transfer_events");
    for (size_t i = 0; i < pano_json_len(list); i++) {
        const pano_json *e = pano_json_at(list, i);
        if (e->type != PANO_JSON_OBJECT) {
            snprintf(err, errlen, "task event %zu is not an object", i + 1);
            return -1;
        }
        pano_json_append(events, convert_event(e));
    }
    /* The API lists the newest first. */
    pano_json_sort(events, by_ts);
    return 0;
}

static bool is_events_key(const char *k)
{
    return strcmp(k, "events") == 0 || strcmp(k, "transfer_events") == 0 ||
           strcmp(k, "task_event_list") == 0 || strcmp(k, "event_list") == 0;
}

static pano_json *convert_task(const pano_json *task, char *err, size_t errlen)
{
    pano_json *body = pano_json_object();
    for (size_t i = 0; i < pano_json_len(task); i++) {
        const char *k = pano_json_key_at(task, i);
        const pano_json *v = pano_json_at(task, i);
        if (strcmp(k, "DATA_TYPE") == 0 || strcmp(k, "event_link") == 0 || is_events_key(k))
            continue;
        if (strcmp(k, "status") == 0) {
            if (v->type == PANO_JSON_STRING) {
                pano_json_set_str(body, "globus_status", v->u.string.text);
                if (strcmp(v->u.string.text, "SUCCEEDED") == 0)
                    pano_json_set_int(body, "status", 0);
                else if (strcmp(v->u.string.text, "FAILED") == 0)
                    pano_json_set_int(body, "status", 1);
            }
            continue;
        }
        pano_json_set(body, k, pano_json_clone(v));
    }
    for (size_t i = 0; i < pano_json_len(task); i++)
        if (is_events_key(pano_json_key_at(task, i)) &&
            add_events(body, pano_json_at(task, i), err, errlen) < 0) {
            pano_json_free(body);
            return NULL;
        }
    double start, end;
    bool has_start = pano_globus_time(pano_json_get_str(task, "request_time"), &start);
    bool has_end = pano_globus_time(pano_json_get_str(task, "completion_time"), &end);
    if (has_start)
        pano_json_set_double(body, "transfer_start_time", start, 6);
    if (has_end)
        pano_json_set_double(body, "transfer_completion_time", end, 6);
    if (has_start && has_end)
        pano_json_set_double(body, "transfer_duration", end - start, 6);
    return body;
}

static bool is_task(const pano_json *doc)
{
    const char *type = pano_json_get_str(doc, "DATA_TYPE");
    if (type)
        return strcmp(type, "task") == 0;
    return pano_json_get(doc, "task_id") != NULL;
}

/* One document (or an element of a list); appends to bodies. */
static int handle_doc(const pano_json *doc, pano_json *bodies, int depth, char *err,
                      size_t errlen)
{
    if (doc->type == PANO_JSON_ARRAY && depth == 0) {
        for (size_t i = 0; i < pano_json_len(doc); i++) {
            char why[400];
            if (handle_doc(pano_json_at(doc, i), bodies, depth + 1, why, sizeof why) < 0) {
                snprintf(err, errlen, "element %zu: %.300s", i + 1, why);
                return -1;
            }
        }
        return 0;
    }
    if (doc->type != PANO_JSON_OBJECT) {
        snprintf(err, errlen, "expected a Globus task document (a JSON object)");
        return -1;
    }
    const char *type = pano_json_get_str(doc, "DATA_TYPE");
    if (type && strcmp(type, "task_list") == 0) {
        const pano_json *data = pano_json_get_array(doc, "DATA");
        if (!data) {
            snprintf(err, errlen, "a task_list without a DATA list");
            return -1;
        }
        return handle_doc(data, bodies, 0, err, errlen);
    }
    if (type && strcmp(type, "event_list") == 0) {
        size_t n = pano_json_len(bodies);
        if (n == 0) {
            snprintf(err, errlen, "an event_list with no task document before it");
            return -1;
        }
        return add_events(pano_json_at(bodies, n - 1), doc, err, errlen);
    }
    if (!is_task(doc)) {
        snprintf(err, errlen, "not a Globus task (no task_id%s%s)", type ? ", DATA_TYPE " : "",
                 type ? type : "");
        return -1;
    }
    pano_json *body = convert_task(doc, err, errlen);
    if (!body)
        return -1;
    pano_json_append(bodies, body);
    return 0;
}

long pano_globus_parse(const char *text, size_t len, pano_json *bodies, char *err,
                       size_t errlen)
{
    size_t blank = 0;
    while (blank < len && isspace((unsigned char)text[blank]))
        blank++;
    if (blank == len) {
        snprintf(err, errlen, "no JSON document in the input");
        return -1;
    }
    if (validate(text, len, err, errlen) < 0)
        return -1;
    size_t before = pano_json_len(bodies);
    const char *p = text, *end = text + len;
    int docs = 0;
    for (;;) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p >= end)
            break;
        const char *e = value_end(p, end);
        size_t line, col;
        line_col(text, (size_t)(p - text), &line, &col);
        char why[400];
        pano_json *doc = pano_json_parse(p, (size_t)(e - p), 32, why, sizeof why);
        if (!doc) {
            snprintf(err, errlen, "document at line %zu, column %zu: %.300s", line, col, why);
            return -1;
        }
        docs++;
        int rc = handle_doc(doc, bodies, 0, why, sizeof why);
        pano_json_free(doc);
        if (rc < 0) {
            snprintf(err, errlen, "document at line %zu, column %zu: %.300s", line, col, why);
            pano_json_truncate(bodies, before); /* all or nothing */
            return -1;
        }
        p = e;
    }
    if (docs == 0) {
        snprintf(err, errlen, "no JSON document in the input");
        return -1;
    }
    return (long)(pano_json_len(bodies) - before);
}
