#include "summary.h"

#include "buf.h"
#include "event.h"
#include "mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The groups of a summary (summary.h), in the order they are merged. */
static const char *const groups[] = {"set", "min", "max", "add", "least", "latest", "put", NULL};
enum { G_SET, G_MIN, G_MAX, G_ADD, G_LEAST, G_LATEST, G_PUT };

bool pano_summary_stream(int stream)
{
    if (stream < 0 || stream >= PANO_N_EVENT_STREAMS)
        return false;
    const char *s = pano_streams[stream];
    return strcmp(s, "kickstart") == 0 || strcmp(s, "stampede") == 0 ||
           strcmp(s, "darshan") == 0 || strcmp(s, "transfer") == 0;
}

void pano_summary_base(const char *prefix, int stream, char *out, size_t size)
{
    snprintf(out, size, "%.200ssummary-%s", prefix, pano_streams[stream]);
}

/* ---- reading an event -------------------------------------------------------- */

/* A number, also one sent as a string ("512"), as Elasticsearch coerces it:
 * a copy of the node (an integer stays one), or NULL. */
static pano_json *number_of(const pano_json *v)
{
    if (!v)
        return NULL;
    if (v->type == PANO_JSON_INT)
        return pano_json_int(v->u.integer);
    if (v->type == PANO_JSON_DOUBLE)
        return isfinite(v->u.real.value) ? pano_json_double(v->u.real.value, -1) : NULL;
    if (v->type == PANO_JSON_STRING && v->u.string.len > 0) {
        char *end;
        double d = strtod(v->u.string.text, &end);
        if (*end == '\0' && isfinite(d))
            return pano_json_double(d, -1);
    }
    return NULL;
}

static double value_of(const pano_json *v)
{
    return v->type == PANO_JSON_INT ? (double)v->u.integer : v->u.real.value;
}

/* A string or a number as the text a keyword holds, or false. */
static bool text_of(const pano_json *v, char *buf, size_t size)
{
    if (!v)
        return false;
    if (v->type == PANO_JSON_STRING)
        snprintf(buf, size, "%s", v->u.string.text);
    else if (v->type == PANO_JSON_INT)
        snprintf(buf, size, "%lld", (long long)v->u.integer);
    else if (v->type == PANO_JSON_DOUBLE)
        snprintf(buf, size, "%g", v->u.real.value);
    else
        return false;
    return true;
}

/* event[field], or event[a][b] for a dotted "a.b" (an object or a dotted key). */
static const pano_json *field(const pano_json *event, const char *name)
{
    const pano_json *v = pano_json_get(event, name);
    const char *dot = strchr(name, '.');
    if (!v && dot) {
        char head[64];
        snprintf(head, sizeof head, "%.*s", (int)(dot - name), name);
        v = pano_json_get(pano_json_get(event, head), dot + 1);
    }
    return v;
}

static void put_number(pano_json *group, const char *key, const pano_json *event,
                       const char *name)
{
    pano_json *n = number_of(field(event, name));
    if (n)
        pano_json_set(group, key, n);
}

static void put_text(pano_json *group, const char *key, const pano_json *event, const char *name)
{
    char buf[8192];
    if (text_of(field(event, name), buf, sizeof buf))
        pano_json_set_str(group, key, buf);
}

static pano_json *group(pano_json *part, int g)
{
    pano_json *o = pano_json_get(part, groups[g]);
    return o ? o : pano_json_set_object(part, groups[g]);
}

/* A latest entry ordered by o, returned for its values to be added. */
static pano_json *latest(pano_json *part, const char *name, const char *arrival, double o1,
                         const pano_json *o2, bool with_o2)
{
    pano_json *e = pano_json_set_object(group(part, G_LATEST), name);
    pano_json *o = pano_json_set_array(e, "o");
    pano_json_append(o, pano_json_double(o1, -1));
    if (with_o2) {
        pano_json *n = number_of(o2);
        pano_json_append(o, n ? n : pano_json_null());
    }
    pano_json_set_str(e, "i", arrival);
    return pano_json_set_object(e, "v");
}

static bool has_value(const pano_json *v)
{
    return v && v->type != PANO_JSON_NULL && v->type != PANO_JSON_OBJECT &&
           v->type != PANO_JSON_ARRAY;
}

/* The id: a letter, '-', and 128 bits of SHA-256 over the kind, the stream
 * and the key, each ended by a unit separator. */
static void make_id(pano_summary_part *out, char kind, const char *const *key, size_t n)
{
    pano_buf b = {0};
    char head[2] = {kind, '\x1f'};
    pano_buf_append(&b, head, 2);
    pano_buf_append_str(&b, pano_streams[out->stream]);
    for (size_t i = 0; i < n; i++) {
        pano_buf_append(&b, "\x1f", 1);
        pano_buf_append_str(&b, key[i]);
    }
    char hex[33];
    pano_event_id_of(b.data, b.len, hex);
    pano_buf_free(&b);
    snprintf(out->id, sizeof out->id, "%c-%s", kind, hex);
}

static void run_part(const pano_json *ev, const char *name, const char *arrival, double ts,
                     pano_json *p)
{
    bool start = strcmp(name, "kickstart.inv.start") == 0;
    bool end = strcmp(name, "kickstart.inv.end") == 0;
    pano_json *min = group(p, G_MIN), *max = group(p, G_MAX), *add = group(p, G_ADD);
    if (start || end) {
        pano_json_set_double(min, "first", ts, -1);
        pano_json_set_double(max, "last", ts, -1);
        put_number(max, "iv", ev, "interval");
        pano_json *least = group(p, G_LEAST);
        put_text(least, "xf", ev, "xformation");
        put_text(least, "site", ev, "site");
        put_text(least, "exe", ev, "exe");
    }
    if (end) {
        pano_json_set_int(max, "end", 1);
        static const char *const figures[][2] = {
            {"exit", "exitcode"}, {"sig", "signal"},     {"dur", "duration"},
            {"cpu", "remote_cpu_time"}, {"rss", "maxrss"}, {"rch", "final.rchar"},
            {"wch", "final.wchar"}, {"ns", "samples"}};
        for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
            put_number(max, figures[i][0], ev, figures[i][1]);
    }
    if (strcmp(name, "kickstart.inv.online") == 0) {
        pano_json_set_double(max, "slast", ts, -1);
        put_number(max, "siv", ev, "interval");
        put_number(max, "speak", ev, "rss_peak");
        pano_json_set_int(add, "sn", 1);
        pano_json *v = latest(p, "s", arrival, ts, NULL, false);
        static const char *const gauges[][2] = {{"ut", "utime"}, {"st", "stime"}, {"rch", "rchar"},
                                                {"wch", "wchar"}, {"rss", "rss"}, {"vm", "vm"},
                                                {"pr", "procs"},  {"th", "threads"}};
        for (size_t i = 0; i < sizeof gauges / sizeof gauges[0]; i++)
            put_number(v, gauges[i][0], ev, gauges[i][1]);
    }
}

const char *const pano_job_inst_state_events[] = {
    "stampede.job_inst.submit.start", "stampede.job_inst.submit.end",
    "stampede.job_inst.pre.start",    "stampede.job_inst.pre.term",
    "stampede.job_inst.pre.end",      "stampede.job_inst.main.start",
    "stampede.job_inst.main.term",    "stampede.job_inst.main.end",
    "stampede.job_inst.post.start",   "stampede.job_inst.post.term",
    "stampede.job_inst.post.end",     "stampede.job_inst.held.start",
    "stampede.job_inst.held.end",     "stampede.job_inst.abort.info",
    NULL,
};

static bool state_event(const char *name)
{
    for (size_t i = 0; pano_job_inst_state_events[i]; i++)
        if (strcmp(name, pano_job_inst_state_events[i]) == 0)
            return true;
    return false;
}

static void inst_part(const pano_json *ev, const char *name, const char *id,
                      const char *arrival, double ts, pano_json *p)
{
    pano_json *min = group(p, G_MIN), *max = group(p, G_MAX);
    pano_json_set_double(max, "last", ts, -1);
    const pano_json *js = pano_json_get(ev, "js_id");
    if (has_value(pano_json_get(ev, "site")))
        put_text(latest(p, "si", arrival, -ts, NULL, false), "s", ev, "site");
    if (strcmp(name, "stampede.inv.end") == 0) {
        const pano_json *inv_id = field(ev, "inv_id");
        pano_json *n = number_of(inv_id);
        bool own = n && value_of(n) >= 0; /* the job itself, not a PRE/POST script */
        pano_json_free(n);
        if (!own)
            return;
        put_number(max, "irss", ev, "maxrss");
        put_number(min, "ist", ev, "start_time");
        pano_json *v = latest(p, "iv", arrival, -ts, NULL, false);
        put_text(v, "xf", ev, "transformation");
        put_text(v, "exe", ev, "executable");
        pano_json *figures = pano_json_array();
        pano_json *dur = number_of(field(ev, "dur")), *cpu = number_of(field(ev, "remote_cpu_time"));
        pano_json_append(figures, dur ? dur : pano_json_null());
        pano_json_append(figures, cpu ? cpu : pano_json_null());
        pano_json_set(pano_json_set_object(group(p, G_PUT), "inv"), id, figures);
        return;
    }
    const char *e = name + strlen("stampede.job_inst.");
    if (strcmp(e, "submit.start") == 0)
        pano_json_set_double(min, "sub", ts, -1);
    if (strcmp(e, "main.start") == 0)
        pano_json_set_double(max, "exec", ts, -1);
    if (strcmp(e, "host.info") == 0)
        put_text(latest(p, "h", arrival, -ts, NULL, false), "h", ev, "hostname");
    if (state_event(name)) {
        pano_json *v = latest(p, "st", arrival, ts, js, true);
        pano_json_set_str(v, "e", e);
        put_number(v, "ts", ev, "ts");
        put_number(v, "status", ev, "status");
    }
    if (strcmp(e, "main.end") == 0) {
        pano_json *v = latest(p, "me", arrival, ts, js, true);
        put_number(v, "x", ev, "exitcode");
        put_number(v, "ld", ev, "local_dur");
        put_number(v, "ts", ev, "ts");
    }
    if (strcmp(e, "post.end") == 0) {
        pano_json *v = latest(p, "pe", arrival, ts, js, true);
        put_number(v, "x", ev, "exitcode");
        put_number(v, "ts", ev, "ts");
    }
}

bool pano_summary_of_event(const pano_json *ev, const char *wf_uuid, double ts,
                           const char *arrival, pano_summary_part *out)
{
    memset(out, 0, sizeof *out);
    out->stream = -1;
    const char *name = pano_json_get_str(ev, "event");
    const char *id = pano_json_get_str(ev, "event_id");
    if (!name || !id || !*wf_uuid)
        return false;
    char job[8192] = "", host[8192] = "", num[64] = "";
    bool has_job = text_of(pano_json_get(ev, "dag_job_id"), job, sizeof job);
    bool has_host = text_of(pano_json_get(ev, "hostname"), host, sizeof host);
    char kind;
    const char *k;
    pano_json *p = pano_json_object();
    pano_json *set = group(p, G_SET);
    pano_json *key_num = NULL;
    if (strncmp(name, "kickstart.inv.", 14) == 0) {
        kind = 'r', k = "run";
        key_num = number_of(pano_json_get(ev, "pid"));
        if (key_num && key_num->type == PANO_JSON_DOUBLE) { /* a pid is an integer */
            int64_t pid = (int64_t)key_num->u.real.value;
            pano_json_free(key_num);
            key_num = pano_json_int(pid);
        }
        if (key_num)
            pano_json_set(set, "pid", key_num);
        run_part(ev, name, arrival, ts, p);
    } else if (strncmp(name, "stampede.job_inst.", 18) == 0 ||
               strcmp(name, "stampede.inv.end") == 0) {
        kind = 'i', k = "inst";
        has_job = text_of(pano_json_get(ev, "job_id"), job, sizeof job) &&
                  has_value(pano_json_get(ev, "job_id"));
        key_num = number_of(pano_json_get(ev, "job_inst_id"));
        if (!has_job || !key_num) {
            pano_json_free(key_num);
            pano_json_free(p);
            return false;
        }
        pano_json_set(set, "inst", key_num);
        has_host = false;
        inst_part(ev, name, id, arrival, ts, p);
    } else if (strncmp(name, "darshan.", 8) == 0 || strncmp(name, "transfer.", 9) == 0) {
        kind = 's', k = "side";
        pano_json_set_int(group(p, G_ADD), name[0] == 'd' ? "d" : "t", 1);
    } else {
        pano_json_free(p);
        return false;
    }
    if (key_num)
        text_of(key_num, num, sizeof num);
    out->stream = pano_stream_index(kind == 'r' ? "kickstart" : pano_event_family(name));
    const char *key[] = {wf_uuid, has_job ? job : "", has_host ? host : "", num};
    make_id(out, kind, key, 4);
    pano_json_set_str(set, "k", k);
    pano_json_set_str(set, "id", out->id);
    pano_json_set_str(set, "wf", wf_uuid);
    if (has_job)
        pano_json_set_str(set, "job", job);
    if (has_host)
        pano_json_set_str(set, "host", host);
    pano_json_set_double(group(p, G_MIN), "t0", ts, -1);
    pano_json_set_int(group(p, G_ADD), "n", 1);
    out->part = p;
    return true;
}

void pano_summary_part_free(pano_summary_part *p)
{
    pano_json_free(p->part);
    p->part = NULL;
}

/* ---- merging ------------------------------------------------------------------ */

static bool is_number(const pano_json *v)
{
    return v && (v->type == PANO_JSON_INT || v->type == PANO_JSON_DOUBLE);
}

/* o and i of two latest entries: positive when a is the one to keep. */
static int latest_cmp(const pano_json *a, const pano_json *b)
{
    const pano_json *x = pano_json_get_array(a, "o"), *y = pano_json_get_array(b, "o");
    for (size_t k = 0; k < pano_json_len(x) && k < pano_json_len(y); k++) {
        const pano_json *p = pano_json_at(x, k), *q = pano_json_at(y, k);
        bool pn = is_number(p), qn = is_number(q);
        if (!pn || !qn) {
            if (pn != qn)
                return pn ? 1 : -1;
            continue;
        }
        double u = value_of(p), v = value_of(q);
        if (u != v)
            return u < v ? -1 : 1;
    }
    /* the same order: the one that arrived first */
    const char *i = pano_json_get_str(a, "i"), *j = pano_json_get_str(b, "i");
    return strcmp(j ? j : "", i ? i : "");
}

static pano_json *sum(const pano_json *a, const pano_json *b)
{
    if (a->type == PANO_JSON_INT && b->type == PANO_JSON_INT)
        return pano_json_int(a->u.integer + b->u.integer);
    return pano_json_double(value_of(a) + value_of(b), -1);
}

void pano_summary_merge(pano_json *into, const pano_json *from, bool with_counts)
{
    for (int g = 0; groups[g]; g++) {
        const pano_json *f = pano_json_get(from, groups[g]);
        if (!f || f->type != PANO_JSON_OBJECT || (g == G_ADD && !with_counts))
            continue;
        pano_json *d = pano_json_get(into, groups[g]);
        if (!d || d->type != PANO_JSON_OBJECT)
            d = pano_json_set_object(into, groups[g]);
        for (size_t i = 0; i < pano_json_len(f); i++) {
            const char *k = pano_json_key_at(f, i);
            const pano_json *v = pano_json_at(f, i);
            pano_json *c = pano_json_get(d, k);
            bool take = !c;
            switch (g) {
            case G_SET:
                take = true;
                break;
            case G_MIN:
            case G_MAX:
                if (c && is_number(v) && is_number(c))
                    take = g == G_MIN ? value_of(v) < value_of(c) : value_of(v) > value_of(c);
                break;
            case G_ADD:
                if (c && is_number(v) && is_number(c)) {
                    pano_json_set(d, k, sum(c, v));
                    continue;
                }
                break;
            case G_LEAST:
                if (c && v->type == PANO_JSON_STRING && c->type == PANO_JSON_STRING)
                    take = strcmp(v->u.string.text, c->u.string.text) < 0;
                break;
            case G_LATEST:
                if (c)
                    take = latest_cmp(v, c) > 0;
                break;
            case G_PUT:
                if (c && c->type == PANO_JSON_OBJECT) {
                    for (size_t m = 0; m < pano_json_len(v); m++)
                        pano_json_set(c, pano_json_key_at(v, m), pano_json_clone(pano_json_at(v, m)));
                    continue;
                }
                break;
            }
            if (take)
                pano_json_set(d, k, pano_json_clone(v));
        }
    }
}

/* The update's token is kept among the document's last SUMMARY_OPS. */
#define SUMMARY_OPS 16

bool pano_summary_apply(pano_json *doc, const pano_json *part, const char *op)
{
    pano_json *ops = pano_json_get_array(doc, "ops");
    for (size_t i = 0; i < pano_json_len(ops); i++) {
        const pano_json *o = pano_json_at(ops, i);
        if (o->type == PANO_JSON_STRING && strcmp(o->u.string.text, op) == 0)
            return false;
    }
    pano_summary_merge(doc, part, true);
    pano_json *kept = pano_json_array();
    size_t n = pano_json_len(ops), from = n >= SUMMARY_OPS ? n - SUMMARY_OPS + 1 : 0;
    for (size_t i = from; i < n; i++)
        pano_json_append(kept, pano_json_clone(pano_json_at(ops, i)));
    pano_json_append(kept, pano_json_string(op));
    pano_json_set(doc, "ops", kept);
    return true;
}
