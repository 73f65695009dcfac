/*
 * run_delta.c - a run's state and what its events make (run_delta.h).
 */
#include "run_delta.h"

#include "buf.h"
#include "mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

pano_run_event *pano_run_event_read(const pano_json *ev, const char *wf_uuid, int partition,
                                    int64_t offset)
{
    const char *name = pano_json_get_str(ev, "event");
    pano_run_event_kind kind;
    if (!name || strncmp(name, "kickstart.inv.", 14) != 0)
        return NULL;
    if (strcmp(name + 14, "start") == 0)
        kind = PANO_RUN_START;
    else if (strcmp(name + 14, "online") == 0)
        kind = PANO_RUN_SAMPLE;
    else if (strcmp(name + 14, "end") == 0)
        kind = PANO_RUN_END;
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
    pano_run_event *e = pano_calloc(1, sizeof *e + klen + 1 + jl + 1 + hl + 1);
    e->kind = kind;
    e->partition = partition;
    e->offset = offset;
    e->ts = ts;
    e->id_hash = pano_hash_str(id);
    e->pid = pid;
    size_t wl = strnlen(wf_uuid, PANO_WF_UUID_LEN);
    memcpy(e->wf, wf_uuid, wl);
    e->wf[wl] = '\0';
    /* copied, not printed: every sample of a run is read here */
    char *k = e->key = e->text;
    memcpy(k, e->wf, wl);
    k += wl;
    *k++ = '\x1f';
    *k++ = job ? '=' : '-';
    memcpy(k, job ? job : "", jl);
    k += jl;
    *k++ = '\x1f';
    memcpy(k, host, hl);
    k += hl;
    *k++ = '\x1f';
    char num[PANO_JSON_NUMBER_MAX];
    int nl = pano_json_format_int(num, pid);
    memcpy(k, num, (size_t)nl);
    k += nl;
    *k = '\0';
    char *p = k + 1;
    memcpy(p, host, hl + 1);
    e->host = p;
    if (job) {
        memcpy(p + hl + 1, job, jl + 1);
        e->job = p + hl + 1;
    }
    if (kind == PANO_RUN_SAMPLE) {
        e->own_delta = pano_json_get(ev, "delta") != NULL;
        e->clash = pano_json_get(ev, "delta_source") || pano_json_get(ev, "delta_offset") ||
                   pano_json_get(ev, "delta_after_end");
        for (size_t i = 0; i < PANO_SAMPLE_NVALUES && !e->own_delta; i++)
            if (pano_json_get_number(ev, pano_sample_values[i].name, &e->values[i]) &&
                in_range(e->values[i]))
                e->present |= 1u << i;
    }
    return e;
}

void pano_run_event_free(pano_run_event *e)
{
    free(e);
}

/* ---- a run ---------------------------------------------------------------- */

void pano_run_state_of(const pano_json *src, const char *source, pano_run_state *r)
{
    const char *by = pano_json_get_str(src, "delta_source");
    const char *sample = pano_json_get_str(src, "sample");
    const char *id = pano_json_get_str(src, "event_id");
    const char *event = pano_json_get_str(src, "event");
    if (event && strcmp(event, "kickstart.inv.start") == 0)
        r->mode = PANO_RUN_ANNOUNCED; /* no sample of it stored before */
    else if (by && strcmp(by, source) == 0) {
        const pano_json *after_end = pano_json_get(src, "delta_after_end");
        bool ended = (sample && strcmp(sample, "closing") == 0) ||
                     (after_end && after_end->type == PANO_JSON_BOOL && after_end->u.boolean);
        r->mode = ended ? PANO_RUN_ENDED : PANO_RUN_INGEST;
        pano_json_get_number(src, "ts", &r->last_ts);
        r->last_id = id ? pano_hash_str(id) : 0;
        for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
            pano_json_get_number(src, pano_sample_values[i].name, &r->last[i]);
    } else
        r->mode = pano_json_get(src, "delta") ? PANO_RUN_PUBLISHER : PANO_RUN_RAW;
}

/* ---- the changes ---------------------------------------------------------- */

/* A value as a delta holds it: seconds with 3 decimals, else a whole
 * number (written as the serializer writes numbers, without printf's
 * format parsing: a sample has thirteen of them). */
static int value_text(char num[PANO_JSON_NUMBER_MAX], size_t i, double v)
{
    return pano_sample_values[i].seconds ? pano_json_format_double(num, v, 3)
                                         : pano_json_format_int(num, llround(v));
}

static void put_value(pano_buf *b, size_t i, double v)
{
    char num[PANO_JSON_NUMBER_MAX];
    pano_buf_append(b, num, (size_t)value_text(num, i, v));
}

/* The document with delta, delta_source and delta_offset in front (what
 * pano_run_change_tree makes a tree of, from what made says). */
static char *with_delta(const char *doc, size_t len, const pano_run_made *made)
{
    const double *delta = made->delta;
    const char *source = made->source;
    pano_buf b = {0};
    pano_buf_reserve(&b, len + 512); /* the members made take about 300 bytes */
    pano_buf_append_str(&b, "{\"delta\":{");
    for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++) {
        pano_buf_append_str(&b, i ? ",\"" : "\"");
        pano_buf_append_str(&b, pano_sample_values[i].name);
        pano_buf_append_str(&b, "\":");
        put_value(&b, i, delta[i]);
    }
    pano_buf_appendf(&b, "},\"delta_source\":\"%s\",", source);
    if (made->offset >= 0)
        pano_buf_appendf(&b, "\"delta_offset\":%lld,", (long long)made->offset);
    if (made->after_end)
        pano_buf_append_str(&b, "\"delta_after_end\":true,");
    if (made->own_follow) {
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
static char *closing_event(const pano_run_event *e, const pano_run_state *r, const char *source,
                           double ts, const char *json, size_t len)
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
    pano_json_set_str(c, "delta_source", source);
    if (e->offset >= 0)
        pano_json_set_int(c, "delta_offset", e->offset);
    pano_json_set_str(c, "sample", "closing");
    size_t n;
    char *text = pano_json_serialize(c, &n);
    pano_json_free(c);
    pano_json_free(end);
    return text;
}

/* A sample of a run in ingest (or announced, or ended): its delta. */
static void sample_delta(pano_run_state *r, const pano_run_event *e, const char *source,
                         const char *doc, size_t doc_len, pano_run_change *out)
{
    double delta[PANO_SAMPLE_NVALUES] = {0};
    bool late = r->mode == PANO_RUN_ENDED ||
                (r->mode == PANO_RUN_INGEST &&
                 (e->ts < r->last_ts || (e->ts == r->last_ts && e->id_hash == r->last_id)));
    if (!late) {
        for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
            if (e->present & (1u << i)) {
                delta[i] = pano_sample_delta(i, e->values[i], r->last[i]);
                r->last[i] = e->values[i];
            }
        r->mode = PANO_RUN_INGEST;
        r->last_ts = e->ts;
        r->last_id = e->id_hash;
    }
    pano_run_made *m = &out->made_members;
    memcpy(m->delta, delta, sizeof m->delta);
    m->source = source;
    m->offset = e->offset;
    m->after_end = r->mode == PANO_RUN_ENDED;
    m->own_follow = !e->clash;
    out->doc = with_delta(doc, doc_len, m);
    out->made = true;
    out->late = late;
}

void pano_run_apply(pano_run_state *r, const pano_run_event *e, const char *source,
                    const char *doc, size_t doc_len, const char *json, size_t json_len,
                    pano_run_change *out)
{
    memset(out, 0, sizeof *out);
    switch (e->kind) {
    case PANO_RUN_START:
        if (r->mode == PANO_RUN_NONE)
            r->mode = PANO_RUN_ANNOUNCED;
        else if (r->mode == PANO_RUN_ENDED && e->ts > r->last_ts) {
            /* the same job, host and pid again (a retry): a new run */
            memset(r, 0, sizeof *r);
            r->mode = PANO_RUN_ANNOUNCED;
        }
        return;
    case PANO_RUN_SAMPLE:
        if (e->own_delta) {
            if (r->mode == PANO_RUN_NONE || r->mode == PANO_RUN_ANNOUNCED)
                r->mode = PANO_RUN_PUBLISHER;
            return;
        }
        if (r->mode == PANO_RUN_NONE) /* no start before it, no history: as it came */
            r->mode = PANO_RUN_RAW;
        else if (r->mode == PANO_RUN_ANNOUNCED || r->mode == PANO_RUN_INGEST ||
                 r->mode == PANO_RUN_ENDED)
            sample_delta(r, e, source, doc, doc_len, out);
        return;
    case PANO_RUN_END:
        if (r->mode == PANO_RUN_ENDED || r->mode == PANO_RUN_NONE)
            return;
        if (r->mode != PANO_RUN_INGEST) {
            memset(r, 0, sizeof *r); /* nothing more to do for it */
            return;
        }
        double ts = fmax(e->ts, r->last_ts);
        out->closing = closing_event(e, r, source, ts, json, json_len);
        for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++)
            if (pano_sample_values[i].gauge)
                r->last[i] = 0;
        r->mode = PANO_RUN_ENDED;
        r->last_ts = ts;
        return;
    }
}

/* A member of a tree made in arena. */
static void member(pano_json *o, pano_arena *arena, const char *key, pano_json value)
{
    size_t klen = strlen(key);
    char *k = pano_arena_alloc(arena, klen + 1);
    memcpy(k, key, klen + 1);
    pano_json *v = pano_arena_alloc(arena, sizeof *v);
    *v = value;
    o->u.items.keys[o->u.items.len] = k;
    o->u.items.values[o->u.items.len++] = v;
}

/* An empty object of room for n members, its arrays in arena. */
static pano_json object_in(pano_arena *arena, size_t n)
{
    pano_json o = {.type = PANO_JSON_OBJECT};
    o.u.items.keys = pano_arena_alloc(arena, (n ? n : 1) * sizeof(char *));
    o.u.items.values = pano_arena_alloc(arena, (n ? n : 1) * sizeof(pano_json *));
    o.u.items.cap = n;
    return o;
}

const pano_json *pano_run_change_tree(const pano_run_change *ch, const pano_json *doc,
                                      pano_arena *arena)
{
    const pano_run_made *m = &ch->made_members;
    if (!ch->doc || !m->own_follow || !doc || doc->type != PANO_JSON_OBJECT)
        return NULL;
    /* the values as with_delta writes them, read as a parse reads them */
    pano_json delta = object_in(arena, PANO_SAMPLE_NVALUES);
    for (size_t i = 0; i < PANO_SAMPLE_NVALUES; i++) {
        char num[PANO_JSON_NUMBER_MAX];
        pano_json v;
        if (!pano_json_read_number(num, (size_t)value_text(num, i, m->delta[i]), &v))
            return NULL;
        member(&delta, arena, pano_sample_values[i].name, v);
    }
    size_t source_len = strlen(m->source);
    char *source = pano_arena_alloc(arena, source_len + 1);
    memcpy(source, m->source, source_len + 1);
    pano_json *tree = pano_arena_alloc(arena, sizeof *tree);
    *tree = object_in(arena, 4 + doc->u.items.len);
    member(tree, arena, "delta", delta);
    member(tree, arena, "delta_source",
           (pano_json){.type = PANO_JSON_STRING, .u.string = {source, source_len}});
    if (m->offset >= 0)
        member(tree, arena, "delta_offset", (pano_json){.type = PANO_JSON_INT, .u.integer = m->offset});
    if (m->after_end)
        member(tree, arena, "delta_after_end", (pano_json){.type = PANO_JSON_BOOL, .u.boolean = true});
    /* then the document's own, as they are */
    for (size_t i = 0; i < doc->u.items.len; i++) {
        tree->u.items.keys[tree->u.items.len] = doc->u.items.keys[i];
        tree->u.items.values[tree->u.items.len++] = doc->u.items.values[i];
    }
    return tree;
}
