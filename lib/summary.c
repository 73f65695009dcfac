#include "summary.h"

#include "buf.h"
#include "mem.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fields ------------------------------------------------------------------ */

typedef enum { G_SET, G_MIN, G_MAX, G_ADD, G_LEAST } group;
static const char *const group_names[] = {"set", "min", "max", "add", "least"};

/* The group and name of each number and string (summary.h). */
static const struct {
    group g;
    const char *name;
} numbers[PANO_SF_COUNT] = {
    [PANO_SF_PID] = {G_SET, "pid"},     [PANO_SF_INST] = {G_SET, "inst"},
    [PANO_SF_T0] = {G_MIN, "t0"},       [PANO_SF_FIRST] = {G_MIN, "first"},
    [PANO_SF_SUB] = {G_MIN, "sub"},     [PANO_SF_IST] = {G_MIN, "ist"},
    [PANO_SF_LAST] = {G_MAX, "last"},   [PANO_SF_IV] = {G_MAX, "iv"},
    [PANO_SF_END] = {G_MAX, "end"},     [PANO_SF_EXIT] = {G_MAX, "exit"},
    [PANO_SF_SIG] = {G_MAX, "sig"},     [PANO_SF_DUR] = {G_MAX, "dur"},
    [PANO_SF_CPU] = {G_MAX, "cpu"},     [PANO_SF_RSS] = {G_MAX, "rss"},
    [PANO_SF_RCH] = {G_MAX, "rch"},     [PANO_SF_WCH] = {G_MAX, "wch"},
    [PANO_SF_NS] = {G_MAX, "ns"},       [PANO_SF_SLAST] = {G_MAX, "slast"},
    [PANO_SF_SIV] = {G_MAX, "siv"},     [PANO_SF_SPEAK] = {G_MAX, "speak"},
    [PANO_SF_EXEC] = {G_MAX, "exec"},   [PANO_SF_IRSS] = {G_MAX, "irss"},
    [PANO_SF_N] = {G_ADD, "n"},         [PANO_SF_SN] = {G_ADD, "sn"},
    [PANO_SF_D] = {G_ADD, "d"},         [PANO_SF_T] = {G_ADD, "t"},
};
static const struct {
    group g;
    const char *name;
} texts[PANO_ST_COUNT] = {
    [PANO_ST_JOB] = {G_SET, "job"},   [PANO_ST_HOST] = {G_SET, "host"},
    [PANO_ST_XF] = {G_LEAST, "xf"},   [PANO_ST_SITE] = {G_LEAST, "site"},
    [PANO_ST_EXE] = {G_LEAST, "exe"},
};
/* Each latest entry: its name, the length of its order, the names of its
 * values and strings. */
static const struct {
    const char *name;
    int order;
    const char *v[PANO_SUMMARY_VALUES];
    const char *t[PANO_SUMMARY_TEXTS];
} latests[PANO_SL_COUNT] = {
    [PANO_SL_S] = {"s", 1, {"ut", "st", "rch", "wch", "rss", "vm", "pr", "th"}, {NULL}},
    [PANO_SL_ST] = {"st", 2, {"ts", "status"}, {"e"}},
    [PANO_SL_ME] = {"me", 2, {"x", "ld", "ts"}, {NULL}},
    [PANO_SL_PE] = {"pe", 2, {"x", "ts"}, {NULL}},
    [PANO_SL_H] = {"h", 1, {NULL}, {"h"}},
    [PANO_SL_SI] = {"si", 1, {NULL}, {"s"}},
    [PANO_SL_IV] = {"iv", 1, {NULL}, {"xf", "exe"}},
};
static const char *const kind_names[] = {"run", "inst", "side"};

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

static void latest_init(pano_summary_latest *l)
{
    memset(l, 0, sizeof *l);
    l->o[0] = l->o[1] = NAN;
    for (int k = 0; k < PANO_SUMMARY_VALUES; k++)
        l->v[k] = NAN;
}

/* The empty summary, made once and copied (a reader empties one for every
 * document it reads). */
static pano_run_summary empty_summary;
static pthread_once_t empty_summary_once = PTHREAD_ONCE_INIT;

static void make_empty_summary(void)
{
    pano_run_summary *s = &empty_summary;
    s->stream = -1;
    for (int f = 0; f < PANO_SF_COUNT; f++)
        s->v[f] = NAN;
    for (int l = 0; l < PANO_SL_COUNT; l++)
        latest_init(&s->latest[l]);
}

void pano_summary_init(pano_run_summary *s)
{
    pthread_once(&empty_summary_once, make_empty_summary);
    *s = empty_summary;
}

static void latest_clear(pano_summary_latest *l)
{
    for (int k = 0; k < PANO_SUMMARY_TEXTS; k++)
        free(l->t[k]);
    latest_init(l);
}

void pano_summary_clear(pano_run_summary *s)
{
    for (int t = 0; t < PANO_ST_COUNT; t++)
        free(s->t[t]);
    for (int l = 0; l < PANO_SL_COUNT; l++)
        latest_clear(&s->latest[l]);
    for (size_t i = 0; i < s->ninv; i++)
        free(s->inv[i].event_id);
    free(s->inv);
    free(s->ops);
    pano_summary_init(s);
}

/* ---- reading an event -------------------------------------------------------- */

/* A key's number as text: its digits when whole (without printf: it is
 * done for every event), else %.17g. */
static void number_text(double v, char out[64])
{
    if (v != trunc(v) || fabs(v) >= 1e18) {
        snprintf(out, 64, "%.17g", v);
        return;
    }
    char digits[24];
    int n = 0;
    uint64_t u = (uint64_t)fabs(v);
    do
        digits[n++] = (char)('0' + u % 10);
    while ((u /= 10) > 0);
    int k = 0;
    if (v < 0)
        out[k++] = '-';
    while (n > 0)
        out[k++] = digits[--n];
    out[k] = '\0';
}

/* A number, also one sent as a string ("512"), as Elasticsearch coerces it;
 * NAN for anything else. */
static double number_of(const pano_json *v)
{
    if (!v)
        return NAN;
    if (v->type == PANO_JSON_INT)
        return (double)v->u.integer;
    if (v->type == PANO_JSON_DOUBLE)
        return isfinite(v->u.real.value) ? v->u.real.value : NAN;
    if (v->type == PANO_JSON_STRING && v->u.string.len > 0) {
        char *end;
        double d = strtod(v->u.string.text, &end);
        if (*end == '\0' && isfinite(d))
            return d;
    }
    return NAN;
}

/* A string or a number as the text a keyword holds (a new string), or NULL. */
static char *text_of(const pano_json *v)
{
    if (!v)
        return NULL;
    if (v->type == PANO_JSON_STRING)
        return pano_strdup(v->u.string.text);
    if (v->type == PANO_JSON_INT)
        return pano_asprintf("%lld", (long long)v->u.integer);
    if (v->type == PANO_JSON_DOUBLE)
        return pano_asprintf("%g", v->u.real.value);
    return NULL;
}

/* event[name], or event[a][b] for a dotted "a.b" (an object or a dotted key). */
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

static bool has_value(const pano_json *v)
{
    return v && v->type != PANO_JSON_NULL && v->type != PANO_JSON_OBJECT &&
           v->type != PANO_JSON_ARRAY;
}

/* l's arrival, cut to its room (copied, not printed: once an event). */
static void set_arrival(pano_summary_latest *l, const char *arrival)
{
    size_t n = strnlen(arrival, sizeof l->i - 1);
    memcpy(l->i, arrival, n);
    l->i[n] = '\0';
}

/* Start a latest entry ordered by (o1, o2), returned for its values. */
static pano_summary_latest *latest(pano_run_summary *s, pano_summary_latest_name name,
                                   const char *arrival, double o1, double o2)
{
    pano_summary_latest *l = &s->latest[name];
    l->has = true;
    l->o[0] = o1;
    l->o[1] = o2;
    set_arrival(l, arrival);
    return l;
}

void pano_summary_set_arrival(pano_run_summary *s, const char *arrival)
{
    for (int i = 0; i < PANO_SL_COUNT; i++)
        if (s->latest[i].has)
            set_arrival(&s->latest[i], arrival);
}

/* The id: a letter, '-', and 128 bits of SHA-256 over the kind, the stream
 * and the key, each ended by a unit separator. A run's events mostly come
 * one after another, so the last key hashed on each thread is kept with
 * its hash. */
static void make_id(pano_run_summary *s, const char *const *key, size_t n)
{
    static _Thread_local struct {
        char material[512];
        size_t len;
        char hex[33];
    } last;
    pano_buf b = {0};
    char head[2] = {kind_names[s->kind][0], '\x1f'};
    pano_buf_append(&b, head, 2);
    pano_buf_append_str(&b, pano_streams[s->stream]);
    for (size_t i = 0; i < n; i++) {
        pano_buf_append(&b, "\x1f", 1);
        pano_buf_append_str(&b, key[i]);
    }
    if (b.len != last.len || memcmp(b.data, last.material, b.len) != 0) {
        pano_event_id_of(b.data, b.len, last.hex);
        last.len = b.len <= sizeof last.material ? b.len : 0;
        memcpy(last.material, b.data, last.len);
    }
    pano_buf_free(&b);
    snprintf(s->id, sizeof s->id, "%c-%s", head[0], last.hex);
}

static void run_part(const pano_json *ev, const char *name, const char *arrival, double ts,
                     pano_run_summary *s)
{
    bool start = strcmp(name, "kickstart.inv.start") == 0;
    bool end = strcmp(name, "kickstart.inv.end") == 0;
    double *v = s->v;
    if (start || end) {
        v[PANO_SF_FIRST] = v[PANO_SF_LAST] = ts;
        v[PANO_SF_IV] = number_of(field(ev, "interval"));
        s->t[PANO_ST_XF] = text_of(field(ev, "xformation"));
        s->t[PANO_ST_SITE] = text_of(field(ev, "site"));
        s->t[PANO_ST_EXE] = text_of(field(ev, "exe"));
    }
    if (end) {
        v[PANO_SF_END] = 1;
        static const struct {
            pano_summary_field f;
            const char *name;
        } figures[] = {{PANO_SF_EXIT, "exitcode"}, {PANO_SF_SIG, "signal"},
                       {PANO_SF_DUR, "duration"},  {PANO_SF_CPU, "remote_cpu_time"},
                       {PANO_SF_RSS, "maxrss"},    {PANO_SF_RCH, "final.rchar"},
                       {PANO_SF_WCH, "final.wchar"}, {PANO_SF_NS, "samples"}};
        for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
            v[figures[i].f] = number_of(field(ev, figures[i].name));
    }
    if (strcmp(name, "kickstart.inv.online") == 0) {
        v[PANO_SF_SLAST] = ts;
        v[PANO_SF_SIV] = number_of(field(ev, "interval"));
        v[PANO_SF_SPEAK] = number_of(field(ev, "rss_peak"));
        v[PANO_SF_SN] = 1;
        pano_summary_latest *l = latest(s, PANO_SL_S, arrival, ts, NAN);
        static const char *const gauges[] = {"utime", "stime", "rchar", "wchar",
                                             "rss",   "vm",    "procs", "threads"};
        for (int k = 0; k < PANO_SUMMARY_VALUES; k++)
            l->v[k] = number_of(field(ev, gauges[k]));
    }
}

static bool state_event(const char *name)
{
    for (size_t i = 0; pano_job_inst_state_events[i]; i++)
        if (strcmp(name, pano_job_inst_state_events[i]) == 0)
            return true;
    return false;
}

static void inst_part(const pano_json *ev, const char *name, const char *id,
                      const char *arrival, double ts, pano_run_summary *s)
{
    double *v = s->v;
    v[PANO_SF_LAST] = ts;
    double js = number_of(pano_json_get(ev, "js_id"));
    if (has_value(pano_json_get(ev, "site")))
        latest(s, PANO_SL_SI, arrival, -ts, NAN)->t[0] = text_of(pano_json_get(ev, "site"));
    if (strcmp(name, "stampede.inv.end") == 0) {
        if (!(number_of(field(ev, "inv_id")) >= 0))
            return; /* a PRE or POST script, not the job itself */
        v[PANO_SF_IRSS] = number_of(field(ev, "maxrss"));
        v[PANO_SF_IST] = number_of(field(ev, "start_time"));
        pano_summary_latest *l = latest(s, PANO_SL_IV, arrival, -ts, NAN);
        l->t[0] = text_of(field(ev, "transformation"));
        l->t[1] = text_of(field(ev, "executable"));
        s->inv = pano_calloc(1, sizeof *s->inv);
        s->inv[0] = (pano_summary_inv){pano_strdup(id), number_of(field(ev, "dur")),
                                       number_of(field(ev, "remote_cpu_time"))};
        s->ninv = s->cap_inv = 1;
        return;
    }
    const char *e = name + strlen("stampede.job_inst.");
    if (strcmp(e, "submit.start") == 0)
        v[PANO_SF_SUB] = ts;
    if (strcmp(e, "main.start") == 0)
        v[PANO_SF_EXEC] = ts;
    if (strcmp(e, "host.info") == 0)
        latest(s, PANO_SL_H, arrival, -ts, NAN)->t[0] = text_of(pano_json_get(ev, "hostname"));
    if (state_event(name)) {
        pano_summary_latest *l = latest(s, PANO_SL_ST, arrival, ts, js);
        l->t[0] = pano_strdup(e);
        l->v[PANO_STATE_TS] = number_of(pano_json_get(ev, "ts"));
        l->v[PANO_STATE_STATUS] = number_of(pano_json_get(ev, "status"));
    }
    if (strcmp(e, "main.end") == 0) {
        pano_summary_latest *l = latest(s, PANO_SL_ME, arrival, ts, js);
        l->v[PANO_ME_X] = number_of(pano_json_get(ev, "exitcode"));
        l->v[PANO_ME_LD] = number_of(pano_json_get(ev, "local_dur"));
        l->v[PANO_ME_TS] = number_of(pano_json_get(ev, "ts"));
    }
    if (strcmp(e, "post.end") == 0) {
        pano_summary_latest *l = latest(s, PANO_SL_PE, arrival, ts, js);
        l->v[PANO_PE_X] = number_of(pano_json_get(ev, "exitcode"));
        l->v[PANO_PE_TS] = number_of(pano_json_get(ev, "ts"));
    }
}

bool pano_summary_of_event(const pano_json *ev, const char *wf_uuid, double ts,
                           const char *arrival, pano_run_summary *out)
{
    pano_summary_init(out);
    const char *name = pano_json_get_str(ev, "event");
    const char *id = pano_json_get_str(ev, "event_id");
    if (!name || !id || !*wf_uuid)
        return false;
    const pano_json *job = pano_json_get(ev, "dag_job_id"), *host = pano_json_get(ev, "hostname");
    pano_summary_field number = PANO_SF_COUNT; /* the key's number: pid or inst */
    if (strncmp(name, "kickstart.inv.", 14) == 0) {
        out->kind = PANO_SUMMARY_RUN;
        out->stream = pano_stream_index("kickstart");
        number = PANO_SF_PID;
        out->v[number] = trunc(number_of(pano_json_get(ev, "pid"))); /* a pid is whole */
        run_part(ev, name, arrival, ts, out);
    } else if (strncmp(name, "stampede.job_inst.", 18) == 0 ||
               strcmp(name, "stampede.inv.end") == 0) {
        job = pano_json_get(ev, "job_id");
        number = PANO_SF_INST;
        out->v[number] = number_of(pano_json_get(ev, "job_inst_id"));
        if (!has_value(job) || isnan(out->v[number])) {
            pano_summary_init(out);
            return false;
        }
        out->kind = PANO_SUMMARY_INST;
        out->stream = pano_stream_index("stampede");
        host = NULL;
        inst_part(ev, name, id, arrival, ts, out);
    } else if (strncmp(name, "darshan.", 8) == 0 || strncmp(name, "transfer.", 9) == 0) {
        out->kind = PANO_SUMMARY_SIDE;
        out->stream = pano_stream_index(pano_event_family(name));
        out->v[name[0] == 'd' ? PANO_SF_D : PANO_SF_T] = 1;
    } else
        return false;
    out->t[PANO_ST_JOB] = text_of(job);
    out->t[PANO_ST_HOST] = text_of(host);
    char num[64] = "";
    if (number != PANO_SF_COUNT && !isnan(out->v[number]))
        number_text(out->v[number], num);
    const char *key[] = {wf_uuid, out->t[PANO_ST_JOB] ? out->t[PANO_ST_JOB] : "",
                         out->t[PANO_ST_HOST] ? out->t[PANO_ST_HOST] : "", num};
    make_id(out, key, 4);
    snprintf(out->wf, sizeof out->wf, "%s", wf_uuid);
    out->v[PANO_SF_T0] = ts;
    out->v[PANO_SF_N] = 1;
    return true;
}

/* ---- merging ------------------------------------------------------------------ */

/* The order of two latest entries: positive when a is the one to keep. */
static int latest_cmp(const pano_summary_latest *a, const pano_summary_latest *b)
{
    for (int k = 0; k < 2; k++) {
        bool an = !isnan(a->o[k]), bn = !isnan(b->o[k]);
        if (an != bn)
            return an ? 1 : -1;
        if (an && a->o[k] != b->o[k])
            return a->o[k] > b->o[k] ? 1 : -1;
    }
    return strcmp(b->i, a->i); /* the same order: the one that arrived first */
}

static char *dup_or_null(const char *s)
{
    return s ? pano_strdup(s) : NULL;
}

static void latest_copy(pano_summary_latest *to, const pano_summary_latest *from)
{
    latest_clear(to);
    *to = *from;
    for (int k = 0; k < PANO_SUMMARY_TEXTS; k++)
        to->t[k] = dup_or_null(from->t[k]);
}

static void add_inv(pano_run_summary *s, const pano_summary_inv *inv)
{
    for (size_t i = 0; i < s->ninv; i++)
        if (strcmp(s->inv[i].event_id, inv->event_id) == 0)
            return; /* one event, the same figures */
    if (s->ninv == s->cap_inv) {
        s->cap_inv = s->cap_inv ? s->cap_inv * 2 : 4;
        s->inv = pano_reallocarray(s->inv, s->cap_inv, sizeof *s->inv);
    }
    s->inv[s->ninv++] = (pano_summary_inv){pano_strdup(inv->event_id), inv->dur, inv->cpu};
}

void pano_summary_merge(pano_run_summary *into, const pano_run_summary *from, bool with_counts)
{
    if (!into->id[0]) {
        into->kind = from->kind;
        into->stream = from->stream;
        memcpy(into->id, from->id, sizeof into->id);
        memcpy(into->wf, from->wf, sizeof into->wf);
    }
    for (int f = 0; f < PANO_SF_COUNT; f++) {
        double a = into->v[f], b = from->v[f];
        if (isnan(b))
            continue;
        switch (numbers[f].g) {
        case G_ADD:
            if (with_counts)
                into->v[f] = isnan(a) ? b : a + b;
            break;
        case G_MIN:
            if (isnan(a) || b < a)
                into->v[f] = b;
            break;
        case G_MAX:
            if (isnan(a) || b > a)
                into->v[f] = b;
            break;
        default: /* set: the key, the same in every part */
            into->v[f] = b;
        }
    }
    for (int t = 0; t < PANO_ST_COUNT; t++) {
        const char *b = from->t[t];
        char *a = into->t[t];
        if (b && (!a || (texts[t].g == G_LEAST && strcmp(b, a) < 0))) {
            free(a);
            into->t[t] = pano_strdup(b);
        }
    }
    for (int l = 0; l < PANO_SL_COUNT; l++)
        if (from->latest[l].has &&
            (!into->latest[l].has || latest_cmp(&from->latest[l], &into->latest[l]) > 0))
            latest_copy(&into->latest[l], &from->latest[l]);
    for (size_t i = 0; i < from->ninv; i++)
        add_inv(into, &from->inv[i]);
}

bool pano_summary_apply(pano_run_summary *doc, const pano_run_summary *update, const char *op)
{
    for (size_t i = 0; i < doc->nops; i++)
        if (strcmp(doc->ops[i], op) == 0)
            return false;
    pano_summary_merge(doc, update, true);
    if (!doc->ops)
        doc->ops = pano_calloc(PANO_SUMMARY_OPS, sizeof *doc->ops);
    if (doc->nops == PANO_SUMMARY_OPS) {
        memmove(doc->ops[0], doc->ops[1], (PANO_SUMMARY_OPS - 1) * sizeof doc->ops[0]);
        doc->nops--;
    }
    snprintf(doc->ops[doc->nops++], sizeof doc->ops[0], "%s", op);
    return true;
}

/* ---- JSON ------------------------------------------------------------------------ */

static void write_number(pano_json_writer *w, double v)
{
    if (v == trunc(v) && fabs(v) < 9007199254740992.0)
        pano_json_write_int(w, (int64_t)v);
    else
        pano_json_write_double(w, v, -1);
}

bool pano_summary_open(const pano_run_summary *s)
{
    if (s->kind == PANO_SUMMARY_RUN)
        return !(s->v[PANO_SF_END] > 0);
    if (s->kind != PANO_SUMMARY_INST)
        return false;
    const pano_summary_latest *state = &s->latest[PANO_SL_ST];
    const pano_summary_latest *main_end = &s->latest[PANO_SL_ME], *post_end = &s->latest[PANO_SL_PE];
    const char *e = state->has ? state->t[0] : NULL;
    double x = post_end->has ? post_end->v[PANO_PE_X] : main_end->v[PANO_ME_X];
    bool verdict = post_end->has || main_end->has;
    bool final_verdict = post_end->has || (e && strcmp(e, "main.end") == 0);
    return !(verdict && final_verdict && !isnan(x));
}

bool pano_summary_failed(const pano_run_summary *s)
{
    const double *v = s->v;
    if (s->kind == PANO_SUMMARY_RUN)
        return v[PANO_SF_END] > 0 && (v[PANO_SF_SIG] > 0 || !(v[PANO_SF_EXIT] == 0));
    if (s->kind != PANO_SUMMARY_INST)
        return false;
    const pano_summary_latest *main_end = &s->latest[PANO_SL_ME], *post_end = &s->latest[PANO_SL_PE];
    double me = main_end->v[PANO_ME_X], pe = post_end->v[PANO_PE_X];
    return (main_end->has && !isnan(me) && me != 0) || (post_end->has && !isnan(pe) && pe != 0);
}

/* Opens group g's object before its first member. */
static void open_group(pano_json_writer *w, group g, bool *open)
{
    if (*open)
        return;
    pano_json_write_key(w, group_names[g]);
    pano_json_write_object_open(w);
    *open = true;
}

/* The members of group g, opening it when there is one. */
static void write_group(pano_json_writer *w, const pano_run_summary *s, group g)
{
    bool open = g == G_SET;
    if (open) {
        pano_json_write_key(w, "set");
        pano_json_write_object_open(w);
        pano_json_write_key(w, "k");
        pano_json_write_str(w, kind_names[s->kind]);
        pano_json_write_key(w, "id");
        pano_json_write_str(w, s->id);
        pano_json_write_key(w, "wf");
        pano_json_write_str(w, s->wf);
        pano_json_write_key(w, "open");
        pano_json_write_bool(w, pano_summary_open(s));
        pano_json_write_key(w, "failed");
        pano_json_write_bool(w, pano_summary_failed(s));
    }
    for (int t = 0; t < PANO_ST_COUNT; t++) {
        if (texts[t].g != g || !s->t[t])
            continue;
        open_group(w, g, &open);
        pano_json_write_key(w, texts[t].name);
        pano_json_write_str(w, s->t[t]);
    }
    for (int f = 0; f < PANO_SF_COUNT; f++) {
        if (numbers[f].g != g || isnan(s->v[f]))
            continue;
        open_group(w, g, &open);
        pano_json_write_key(w, numbers[f].name);
        write_number(w, s->v[f]);
    }
    if (open)
        pano_json_write_object_close(w);
}

void pano_summary_write(const pano_run_summary *s, pano_buf *out)
{
    pano_json_writer *w = pano_json_writer_new(out);
    pano_json_write_object_open(w);
    for (group g = G_SET; g <= G_LEAST; g++)
        write_group(w, s, g);
    bool open = false;
    for (int l = 0; l < PANO_SL_COUNT; l++) {
        const pano_summary_latest *e = &s->latest[l];
        if (!e->has)
            continue;
        if (!open) {
            pano_json_write_key(w, "latest");
            pano_json_write_object_open(w);
            open = true;
        }
        pano_json_write_key(w, latests[l].name);
        pano_json_write_object_open(w);
        pano_json_write_key(w, "o");
        pano_json_write_array_open(w);
        for (int k = 0; k < latests[l].order; k++) {
            if (isnan(e->o[k]))
                pano_json_write_null(w);
            else
                write_number(w, e->o[k]);
        }
        pano_json_write_array_close(w);
        pano_json_write_key(w, "i");
        pano_json_write_str(w, e->i);
        pano_json_write_key(w, "v");
        pano_json_write_object_open(w);
        for (int k = 0; k < PANO_SUMMARY_VALUES; k++)
            if (latests[l].v[k] && !isnan(e->v[k])) {
                pano_json_write_key(w, latests[l].v[k]);
                write_number(w, e->v[k]);
            }
        for (int k = 0; k < PANO_SUMMARY_TEXTS; k++)
            if (latests[l].t[k] && e->t[k]) {
                pano_json_write_key(w, latests[l].t[k]);
                pano_json_write_str(w, e->t[k]);
            }
        pano_json_write_object_close(w);
        pano_json_write_object_close(w);
    }
    if (open)
        pano_json_write_object_close(w);
    if (s->ninv) {
        pano_json_write_key(w, "put");
        pano_json_write_object_open(w);
        pano_json_write_key(w, "inv");
        pano_json_write_object_open(w);
        for (size_t i = 0; i < s->ninv; i++) {
            pano_json_write_key(w, s->inv[i].event_id);
            pano_json_write_array_open(w);
            double f[2] = {s->inv[i].dur, s->inv[i].cpu};
            for (int k = 0; k < 2; k++) {
                if (isnan(f[k]))
                    pano_json_write_null(w);
                else
                    write_number(w, f[k]);
            }
            pano_json_write_array_close(w);
        }
        pano_json_write_object_close(w);
        pano_json_write_object_close(w);
    }
    if (s->nops) {
        pano_json_write_key(w, "ops");
        pano_json_write_array_open(w);
        for (size_t i = 0; i < s->nops; i++)
            pano_json_write_str(w, s->ops[i]);
        pano_json_write_array_close(w);
    }
    pano_json_write_object_close(w);
    pano_json_writer_free(w);
}

const char *pano_summary_kind_name(pano_summary_kind kind)
{
    return kind_names[kind];
}

bool pano_summary_kind_parse(const char *name, pano_summary_kind *out)
{
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, kind_names[i]) == 0) {
            *out = (pano_summary_kind)i;
            return true;
        }
    return false;
}

/* ---- reading a document back ------------------------------------------------------ */

/* What a key names, by where it is: the names of every place a reader
 * keeps something, in one hash table made once. */
typedef enum { AT_DOC, AT_GROUP, AT_LATEST = AT_GROUP + 5, AT_ENTRY, AT_V, AT_PUT = AT_V + PANO_SL_COUNT } key_place;
typedef enum {
    K_GROUP, K_LATEST, K_PUT, K_OPS,      /* of the document */
    K_KIND, K_ID, K_WF, K_NUMBER, K_TEXT, /* of a group */
    K_ENTRY,                              /* of latest */
    K_O, K_I, K_V,                        /* of a latest entry */
    K_VALUE, K_VTEXT,                     /* of an entry's v */
    K_INV,                                /* of put */
} key_kind;

/* A key as one word: its bytes, zero-padded (no name is longer than 8). */
#define KEY_WORD_MAX 8

typedef struct {
    const char *name; /* NULL: a free slot */
    uint64_t word;    /* name as key_word makes it */
    size_t len;
    int place;
    key_kind kind;
    int index;
} key_slot;

#define KEY_SLOTS 256 /* a power of two, over twice the names */
static key_slot key_slots[KEY_SLOTS];
static pthread_once_t key_slots_once = PTHREAD_ONCE_INIT;

static uint64_t key_word(const char *name, size_t len)
{
    uint64_t w = 0; /* byte by byte: a memcpy of a length not known costs a call */
    for (size_t i = 0; i < len; i++)
        w |= (uint64_t)(unsigned char)name[i] << (8 * i);
    return w;
}

static uint32_t key_hash(int place, uint64_t word)
{
    return (uint32_t)(((word ^ (uint64_t)place) * 0x9E3779B97F4A7C15u) >> 40);
}

static void add_key(int place, const char *name, key_kind kind, int index)
{
    size_t len = strlen(name);
    if (len > KEY_WORD_MAX) { /* a name added without room for it: a bug */
        fprintf(stderr, "summary.c: key name '%s' is longer than %d bytes\n", name, KEY_WORD_MAX);
        abort();
    }
    uint64_t w = key_word(name, len);
    uint32_t h = key_hash(place, w);
    while (key_slots[h % KEY_SLOTS].name)
        h++;
    key_slots[h % KEY_SLOTS] = (key_slot){name, w, len, place, kind, index};
}

static void make_key_slots(void)
{
    for (group g = G_SET; g <= G_LEAST; g++)
        add_key(AT_DOC, group_names[g], K_GROUP, g);
    add_key(AT_DOC, "latest", K_LATEST, 0);
    add_key(AT_DOC, "put", K_PUT, 0);
    add_key(AT_DOC, "ops", K_OPS, 0);
    add_key(AT_GROUP + G_SET, "k", K_KIND, 0);
    add_key(AT_GROUP + G_SET, "id", K_ID, 0);
    add_key(AT_GROUP + G_SET, "wf", K_WF, 0);
    for (int f = 0; f < PANO_SF_COUNT; f++)
        add_key(AT_GROUP + (int)numbers[f].g, numbers[f].name, K_NUMBER, f);
    for (int t = 0; t < PANO_ST_COUNT; t++)
        add_key(AT_GROUP + (int)texts[t].g, texts[t].name, K_TEXT, t);
    for (int l = 0; l < PANO_SL_COUNT; l++) {
        add_key(AT_LATEST, latests[l].name, K_ENTRY, l);
        for (int i = 0; i < PANO_SUMMARY_VALUES; i++)
            if (latests[l].v[i])
                add_key(AT_V + l, latests[l].v[i], K_VALUE, i);
        for (int i = 0; i < PANO_SUMMARY_TEXTS; i++)
            if (latests[l].t[i])
                add_key(AT_V + l, latests[l].t[i], K_VTEXT, i);
    }
    add_key(AT_ENTRY, "o", K_O, 0);
    add_key(AT_ENTRY, "i", K_I, 0);
    add_key(AT_ENTRY, "v", K_V, 0);
    add_key(AT_PUT, "inv", K_INV, 0);
}

/* A key's slot: one word compared, no string (this runs for every key of
 * every document read). */
static const key_slot *find_key_slot(int place, const char *name, size_t len)
{
    if (len > KEY_WORD_MAX)
        return NULL;
    uint64_t w = key_word(name, len);
    for (uint32_t h = key_hash(place, w);; h++) {
        const key_slot *k = &key_slots[h % KEY_SLOTS];
        if (!k->name)
            return NULL;
        if (k->word == w && k->place == place && k->len == len)
            return k;
    }
}

/* The containers a reader is in (pano_summary_reader's frames). */
enum {
    IN_DOC, IN_GROUP, IN_LATEST, IN_ENTRY, IN_O, IN_V, IN_PUT, IN_INV, IN_INV_ENTRY, IN_OPS,
    IN_SKIP, /* a container whose contents are not kept */
};

/* What the next value goes to (after a key, or in an array). */
enum {
    TO_NOTHING, TO_NUMBER, TO_TEXT, TO_KIND, TO_ID, TO_WF, TO_I, TO_VALUE, TO_VTEXT, TO_INV, TO_OP,
};

void pano_summary_reader_start(pano_summary_reader *r, pano_run_summary *out)
{
    pthread_once(&key_slots_once, make_key_slots);
    pano_summary_init(out);
    *r = (pano_summary_reader){.out = out, .want = -1};
}

/* A value (or a container) comes: where it goes (*to, *index: what the key
 * before it named, or the array's next item) and the frame it is in (NULL
 * when none is kept). The key before it is used up. */
static const pano_summary_reader_frame *take_value(pano_summary_reader *r, int *to, int *index)
{
    *to = r->to;
    *index = r->to_index;
    r->to = TO_NOTHING;
    r->want = -1;
    if (r->depth == 0 || r->depth > PANO_SUMMARY_READER_DEPTH)
        return NULL;
    pano_summary_reader_frame *f = &r->frames[r->depth - 1];
    if (f->in == IN_O) {
        *to = f->count < 2 ? TO_NUMBER : TO_NOTHING;
        *index = f->count++;
    } else if (f->in == IN_INV_ENTRY) {
        *to = f->count < 2 ? TO_INV : TO_NOTHING;
        *index = f->count++;
    } else if (f->in == IN_OPS) {
        *to = TO_OP;
        *index = -1;
    }
    return f;
}

static bool reader_open(void *user, bool array)
{
    pano_summary_reader *r = user;
    int to, index;
    int want = r->want; /* what the key before it named */
    const pano_summary_reader_frame *f = take_value(r, &to, &index);
    int in = IN_SKIP, sub = 0;
    int parent = r->depth == 0 ? -1 : f ? f->in : IN_SKIP;
    if (r->depth == 0 && !array)
        in = IN_DOC;
    else if (parent == IN_DOC && !array && want >= 0) {
        const key_slot *k = &key_slots[want];
        in = k->kind == K_GROUP ? IN_GROUP : k->kind == K_LATEST ? IN_LATEST
             : k->kind == K_PUT ? IN_PUT : IN_SKIP;
        sub = k->index;
    } else if (parent == IN_DOC && array && want >= 0 && key_slots[want].kind == K_OPS)
        in = IN_OPS;
    else if (parent == IN_LATEST && !array && want >= 0) {
        in = IN_ENTRY;
        sub = key_slots[want].index;
    } else if (parent == IN_ENTRY && want >= 0) {
        const key_slot *k = &key_slots[want];
        in = k->kind == K_O && array ? IN_O : k->kind == K_V && !array ? IN_V : IN_SKIP;
        sub = f->sub;
    } else if (parent == IN_PUT && !array && want >= 0 && key_slots[want].kind == K_INV)
        in = IN_INV;
    else if (parent == IN_INV && array && to == TO_INV && index == -1) {
        in = IN_INV_ENTRY;
        sub = (int)r->out->ninv - 1;
    }
    if (r->depth < PANO_SUMMARY_READER_DEPTH)
        r->frames[r->depth] = (pano_summary_reader_frame){.in = in, .sub = sub};
    r->depth++;
    return true;
}

static bool reader_close(void *user)
{
    pano_summary_reader *r = user;
    r->to = TO_NOTHING;
    r->want = -1;
    if (r->depth > 0 && --r->depth == 0)
        r->done = true;
    return true;
}

static bool reader_key(void *user, const char *key, size_t len)
{
    pano_summary_reader *r = user;
    r->to = TO_NOTHING;
    r->want = -1;
    if (r->depth == 0 || r->depth > PANO_SUMMARY_READER_DEPTH)
        return true;
    pano_summary_reader_frame *f = &r->frames[r->depth - 1];
    pano_run_summary *out = r->out;
    int place = f->in == IN_DOC      ? AT_DOC
                : f->in == IN_GROUP  ? AT_GROUP + f->sub
                : f->in == IN_LATEST ? AT_LATEST
                : f->in == IN_ENTRY  ? AT_ENTRY
                : f->in == IN_V      ? AT_V + f->sub
                : f->in == IN_PUT    ? AT_PUT
                                     : -1;
    if (f->in == IN_INV) { /* an invocation: its event_id */
        if (out->ninv == out->cap_inv) {
            out->cap_inv = out->cap_inv ? out->cap_inv * 2 : 4;
            out->inv = pano_reallocarray(out->inv, out->cap_inv, sizeof *out->inv);
        }
        char *id = pano_malloc(len + 1);
        memcpy(id, key, len);
        id[len] = '\0';
        out->inv[out->ninv++] = (pano_summary_inv){id, NAN, NAN};
        r->to = TO_INV;
        r->to_index = -1;
        return true;
    }
    const key_slot *k = place < 0 ? NULL : find_key_slot(place, key, len);
    if (!k)
        return true;
    r->want = (int)(k - key_slots);
    r->to_index = k->index;
    switch (k->kind) {
    case K_KIND: r->to = TO_KIND; break;
    case K_ID: r->to = TO_ID; break;
    case K_WF: r->to = TO_WF; break;
    case K_NUMBER: r->to = TO_NUMBER; break;
    case K_TEXT: r->to = TO_TEXT; break;
    case K_I: r->to = TO_I; break;
    case K_VALUE: r->to = TO_VALUE; break;
    case K_VTEXT: r->to = TO_VTEXT; break;
    case K_ENTRY: out->latest[k->index].has = true; break; /* whatever its value */
    default: break;
    }
    return true;
}

static void put_number(pano_summary_reader *r, const pano_summary_reader_frame *f, int to,
                       int index, double v)
{
    pano_run_summary *out = r->out;
    if (to == TO_NUMBER && f->in == IN_GROUP)
        out->v[index] = v;
    else if (to == TO_NUMBER && f->in == IN_O)
        out->latest[f->sub].o[index] = v;
    else if (to == TO_VALUE && f->in == IN_V)
        out->latest[f->sub].v[index] = v;
    else if (to == TO_INV && f->in == IN_INV_ENTRY && f->sub >= 0) {
        pano_summary_inv *inv = &out->inv[f->sub];
        if (index == 0)
            inv->dur = v;
        else
            inv->cpu = v;
    }
}

static void put_string(pano_summary_reader *r, const pano_summary_reader_frame *f, int to,
                       int index, const char *s, size_t len)
{
    pano_run_summary *out = r->out;
    char **text = NULL;
    if (to == TO_TEXT && f->in == IN_GROUP)
        text = &out->t[index];
    else if (to == TO_VTEXT && f->in == IN_V)
        text = &out->latest[f->sub].t[index];
    if (text) {
        free(*text);
        *text = pano_malloc(len + 1);
        memcpy(*text, s, len);
        (*text)[len] = '\0';
        return;
    }
    char *into = NULL;
    size_t size = 0;
    if (to == TO_KIND && f->in == IN_GROUP) {
        into = r->kind, size = sizeof r->kind;
        r->has_kind = true;
    } else if (to == TO_ID && f->in == IN_GROUP) {
        into = out->id, size = sizeof out->id;
        r->has_id = true;
    } else if (to == TO_WF && f->in == IN_GROUP)
        into = out->wf, size = sizeof out->wf;
    else if (to == TO_I && f->in == IN_ENTRY)
        into = out->latest[f->sub].i, size = sizeof out->latest[0].i;
    else if (to == TO_OP && f->in == IN_OPS && out->nops < PANO_SUMMARY_OPS) {
        if (!out->ops)
            out->ops = pano_calloc(PANO_SUMMARY_OPS, sizeof *out->ops);
        into = out->ops[out->nops++], size = sizeof out->ops[0];
    }
    if (into) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(into, s, n);
        into[n] = '\0';
        if (to == TO_KIND && len >= size)
            r->has_kind = false; /* no kind's name is that long */
    }
}

/* A value where take_value says: a number (s NULL), a string, or a literal
 * (neither: kept nowhere, no summary field is true or false). */
static bool put_value(pano_summary_reader *r, double v, const char *s, size_t len, bool literal)
{
    int to, index;
    const pano_summary_reader_frame *f = take_value(r, &to, &index);
    if (f && !literal && !s)
        put_number(r, f, to, index, v);
    else if (f && !literal)
        put_string(r, f, to, index, s, len);
    return true;
}

static bool reader_number(void *user, double v)
{
    return put_value(user, v, NULL, 0, false);
}

static bool reader_string(void *user, const char *s, size_t len)
{
    return put_value(user, 0, s, len, false);
}

static bool reader_literal(void *user, int value)
{
    return put_value(user, 0, NULL, 0, true);
}

const pano_json_events pano_summary_reader_events = {
    .open = reader_open,
    .close = reader_close,
    .key = reader_key,
    .number = reader_number,
    .string = reader_string,
    .literal = reader_literal,
};

bool pano_summary_reader_finish(pano_summary_reader *r)
{
    pano_summary_kind kind;
    if (!r->done || !r->has_kind || !r->has_id || !pano_summary_kind_parse(r->kind, &kind)) {
        pano_summary_clear(r->out);
        return false;
    }
    r->out->kind = kind;
    return true;
}

bool pano_summary_read(const pano_json *doc, pano_run_summary *out)
{
    pano_summary_reader r;
    pano_summary_reader_start(&r, out);
    return doc && pano_json_walk(doc, &pano_summary_reader_events, &r) &&
           pano_summary_reader_finish(&r);
}

bool pano_summary_parse(const char *json, size_t len, pano_run_summary *out)
{
    pano_summary_reader r;
    char err[128];
    pano_summary_reader_start(&r, out);
    if (pano_json_stream(json, len, &pano_summary_reader_events, &r, err, sizeof err) < 0) {
        pano_summary_clear(out);
        return false;
    }
    return pano_summary_reader_finish(&r);
}
