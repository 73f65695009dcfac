/*
 * jobs_summaries.c - a workflow's runs from the indexer's summaries
 * (summary.h, runs.h).
 *
 * The summary documents of the workflow (or of the jobs a question needs)
 * are read through a point in time, in pages of 10,000, sorted by _id when
 * the workflow spans two partitions (so that a run's documents of both come
 * one after the other and are merged), else in the order they are stored.
 * Each becomes the run jobs.c would have made of the same events:
 * run_of mirrors on_monitor_run and on_open_run, instance_of on_instance,
 * and the side counts go through runs_side as on_side's do.
 */
#include "log.h"
#include "mem.h"
#include "runs.h"
#include "store_es.h"
#include "store_sqlite.h"
#include "summary.h"
#include "thread.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 10000
#define KEEP_ALIVE "1m"

typedef struct {
    char *job, *host;
    int64_t darshan, transfer;
} side_count;

typedef struct {
    collect monitor, inst;
    side_count *sides;
    size_t nsides, cap_sides;
    double first[RUNS_KINDS];  /* the earliest event each kind's summaries hold */
    bool seen[RUNS_KINDS];
} reading;

/* A string of a summary, taken from it (left NULL; "" when absent): the
 * summary is cleared once read, so its strings move to the run instead of
 * being copied. */
static char *take_text(char **s)
{
    char *t = *s;
    *s = NULL;
    return t ? t : pano_strdup("");
}

/* A number of a summary, missing when absent. */
static double or(double v, double missing)
{
    return isnan(v) ? missing : v;
}

static void run_of(reading *rd, pano_run_summary *d)
{
    const double *v = d->v;
    if (isnan(v[PANO_SF_FIRST]))
        return; /* samples without a start or an end make no run */
    run *r = runs_add(&rd->monitor);
    pano_job *j = &r->job;
    j->from_monitor = true;
    j->dag_job_id = take_text(&d->t[PANO_ST_JOB]);
    j->host = take_text(&d->t[PANO_ST_HOST]);
    j->transformation = take_text(&d->t[PANO_ST_XF]);
    j->site = take_text(&d->t[PANO_ST_SITE]);
    j->pid = (int64_t)or(v[PANO_SF_PID], -1);
    j->exe = take_text(&d->t[PANO_ST_EXE]);
    j->start = v[PANO_SF_FIRST];
    j->last_seen = or(v[PANO_SF_LAST], j->start);
    j->interval = or(v[PANO_SF_IV], 0);
    if (!pano_summary_open(d)) {
        r->ended = true;
        j->end = j->last_seen; /* the end is the run's last event */
        j->exitcode = (int)or(v[PANO_SF_EXIT], -1);
        j->signal = (int)or(v[PANO_SF_SIG], 0);
        j->state = j->signal > 0      ? PANO_JOB_KILLED
                   : j->exitcode == 0 ? PANO_JOB_SUCCEEDED
                                      : PANO_JOB_FAILED;
        j->duration = or(v[PANO_SF_DUR], j->end - j->start);
        j->cpu_time = or(v[PANO_SF_CPU], 0);
        j->maxrss = (int64_t)or(v[PANO_SF_RSS], -1);
        j->bytes_read = (int64_t)or(v[PANO_SF_RCH], -1);
        j->bytes_written = (int64_t)or(v[PANO_SF_WCH], -1);
        j->samples = (int64_t)or(v[PANO_SF_NS], 0);
        return;
    }
    if (isnan(v[PANO_SF_SLAST]))
        return; /* no sample yet */
    j->samples = (int64_t)or(v[PANO_SF_SN], 0);
    if (v[PANO_SF_SLAST] > j->last_seen)
        j->last_seen = v[PANO_SF_SLAST];
    if (j->interval <= 0)
        j->interval = or(v[PANO_SF_SIV], 0);
    j->maxrss = (int64_t)or(v[PANO_SF_SPEAK], -1);
    const pano_summary_latest *s = &d->latest[PANO_SL_S];
    if (s->has) {
        j->cpu_time = or(s->v[PANO_S_UT], 0) + or(s->v[PANO_S_ST], 0);
        j->bytes_read = (int64_t)or(s->v[PANO_S_RCH], -1);
        j->bytes_written = (int64_t)or(s->v[PANO_S_WCH], -1);
        j->rss = (int64_t)or(s->v[PANO_S_RSS], 0);
        j->vm = (int64_t)or(s->v[PANO_S_VM], 0);
        j->procs = (int64_t)or(s->v[PANO_S_PR], 0);
        j->threads = (int64_t)or(s->v[PANO_S_TH], 0);
    }
}

static void instance_of(reading *rd, pano_run_summary *d)
{
    const double *v = d->v;
    run *r = runs_add(&rd->inst);
    pano_job *j = &r->job;
    j->from_stampede = true;
    j->dag_job_id = take_text(&d->t[PANO_ST_JOB]);
    r->inst_id = (int64_t)or(v[PANO_SF_INST], 0);
    j->host = take_text(&d->latest[PANO_SL_H].t[0]);
    j->site = take_text(&d->latest[PANO_SL_SI].t[0]);
    pano_summary_latest *inv = &d->latest[PANO_SL_IV];
    j->transformation = take_text(&inv->t[0]);
    j->exe = take_text(&inv->t[1]);
    r->submitted = or(v[PANO_SF_SUB], 0);
    double exec = or(v[PANO_SF_EXEC], 0), inv_start = or(v[PANO_SF_IST], 0);
    j->start = exec > 0 ? exec : inv_start > 0 ? inv_start : r->submitted;
    j->last_seen = or(v[PANO_SF_LAST], j->start);
    /* the invocations' sums (0 for none, as a sum over no document is) */
    double inv_dur = 0, inv_cpu = 0;
    for (size_t i = 0; i < d->ninv; i++) {
        inv_dur += or(d->inv[i].dur, 0);
        inv_cpu += or(d->inv[i].cpu, 0);
    }
    if (inv->has) {
        j->cpu_time = inv_cpu;
        j->maxrss = (int64_t)or(v[PANO_SF_IRSS], -1);
    }
    const pano_summary_latest *state = &d->latest[PANO_SL_ST];
    const pano_summary_latest *main_end = &d->latest[PANO_SL_ME], *post_end = &d->latest[PANO_SL_PE];
    const char *e = state->has ? state->t[0] : NULL;
    char event[128] = "";
    if (e)
        snprintf(event, sizeof event, "stampede.job_inst.%s", e);
    j->state = e ? runs_state_after(event, or(state->v[PANO_STATE_STATUS], 0)) : PANO_JOB_QUEUED;
    double x = post_end->has ? post_end->v[PANO_PE_X] : main_end->v[PANO_ME_X];
    double ts = post_end->has ? post_end->v[PANO_PE_TS] : main_end->v[PANO_ME_TS];
    if (!pano_summary_open(d)) { /* the POST script's verdict when it ran, else the job's */
        r->ended = true;
        j->state = runs_decode_status(x, &j->exitcode, &j->signal);
        j->end = or(ts, j->last_seen);
    }
    double local = main_end->has ? main_end->v[PANO_ME_LD] : NAN;
    if (r->ended)
        j->duration = !isnan(local) ? local : inv_dur;
}

/* A new side count at the end of rd's, to fill. */
static side_count *new_side(reading *rd)
{
    if (rd->nsides == rd->cap_sides) {
        rd->cap_sides = rd->cap_sides ? rd->cap_sides * 2 : 64;
        rd->sides = pano_reallocarray(rd->sides, rd->cap_sides, sizeof *rd->sides);
    }
    return &rd->sides[rd->nsides++];
}

static void side_of(reading *rd, pano_run_summary *d)
{
    side_count *s = new_side(rd);
    s->job = take_text(&d->t[PANO_ST_JOB]);
    s->host = take_text(&d->t[PANO_ST_HOST]);
    s->darshan = (int64_t)or(d->v[PANO_SF_D], 0);
    s->transfer = (int64_t)or(d->v[PANO_SF_T], 0);
}

/* The kind of run (runs.h) a kind of summary makes. */
static int kind_of(pano_summary_kind kind)
{
    return kind == PANO_SUMMARY_RUN    ? RUNS_KIND_RUN
           : kind == PANO_SUMMARY_INST ? RUNS_KIND_INST
                                       : RUNS_KIND_SIDE;
}

/* t0, the time of an event summarized as kind k, in rd's earliest. */
static void note_first(reading *rd, int k, double t0)
{
    if (!isnan(t0) && (!rd->seen[k] || t0 < rd->first[k])) {
        rd->first[k] = t0;
        rd->seen[k] = true;
    }
}

/* One document (a run's, merged over its partitions), its strings taken. */
static void on_document(reading *rd, pano_run_summary *d)
{
    int k = kind_of(d->kind);
    note_first(rd, k, d->v[PANO_SF_T0]);
    if (k == RUNS_KIND_RUN)
        run_of(rd, d);
    else if (k == RUNS_KIND_INST)
        instance_of(rd, d);
    else
        side_of(rd, d);
}

/* ---- reading ------------------------------------------------------------------- */

static void reading_clear(reading *rd);

/* The search of one page after `after` (the sort values of the last hit,
 * or NULL for the first). */
static pano_json *page_body(const char *pit, const pano_json *query, bool by_id,
                            const pano_json *after)
{
    pano_json *b = pano_json_object();
    pano_json *p = pano_json_set_object(b, "pit");
    pano_json_set_str(p, "id", pit);
    pano_json_set_str(p, "keep_alive", KEEP_ALIVE);
    pano_json_set_int(b, "size", PAGE);
    pano_json_set_bool(b, "track_total_hits", false);
    pano_json_set(b, "query", pano_json_clone(query));
    pano_json_set(b, "sort", store_literal(by_id ? "[{\"set.id\":\"asc\"},{\"_shard_doc\":\"asc\"}]"
                                                 : "[{\"_shard_doc\":\"asc\"}]"));
    /* Whole documents: Elasticsearch sends a stored _source as it is, but
     * filters one (leaving out the writers' tokens, say) by parsing and
     * writing it again, which took twice as long for a quarter fewer bytes. */
    if (after)
        pano_json_set(b, "search_after", pano_json_clone(after));
    return b;
}

/* The slices [first, first + count) of the reading (or the whole when
 * nslices is 1), one after the other on one client: their pages, the
 * documents of one run merged, to on_document. */
typedef struct {
    pano_es *es;
    const char *pit;      /* the point in time as opened */
    char *last_pit;       /* as the latest answer gave it (to close) */
    const pano_json *query;
    bool by_id;
    int first, count, nslices;
    reading rd;
    size_t read;
    pano_run_summary held; /* the last document read: the next may be of its run */
    bool holding;
    int rc;
    char err[512];
} slice_read;

/* A document read (cur, emptied). Sorted by _id, it is merged into the one
 * held when of its run (another period's), else the one held is done with
 * and this one held; else it is the run's only one. */
static void take_document(slice_read *s, pano_run_summary *cur)
{
    s->read++;
    if (!s->by_id) {
        on_document(&s->rd, cur);
        pano_summary_clear(cur);
        return;
    }
    if (s->holding && strcmp(s->held.id, cur->id) == 0) {
        pano_summary_merge(&s->held, cur, true);
        pano_summary_clear(cur);
        return;
    }
    if (s->holding)
        on_document(&s->rd, &s->held);
    pano_summary_clear(&s->held);
    s->held = *cur;
    s->holding = true;
}

/* ---- a page read as it streams ---------------------------------------------------- */

/* {"pit_id": ..., "hits": {"hits": [{..., "_source": {...}, "sort": [...]}, ...]}}
 * (and what else Elasticsearch says, passed over: asked for whole, the
 * answer costs Elasticsearch less than filtered), read as it arrives: each
 * _source goes to a summary reader as it is parsed, no tree made; the last
 * hit's sort values are kept. */
#define SORT_VALUES 4
typedef struct {
    slice_read *s;
    int depth;           /* containers open around the next event */
    char key[5][16];     /* the last key at each depth (truncated) */
    bool in_source;      /* events go to src */
    pano_summary_reader src;
    pano_run_summary cur;
    bool in_sort;        /* in a hit's sort values */
    struct {
        bool text;
        double number;
        char string[256];
    } sort[SORT_VALUES]; /* the latest hit's sort values: the page's last once read */
    int nsort;
    size_t hits;
    char *pit; /* pit_id */
} page_reader;

/* Where the next value is: a hit's member (hits.hits[i].KEY) or the top's. */
static bool at_hit(const page_reader *p, const char *key)
{
    return p->depth == 4 && strcmp(p->key[1], "hits") == 0 && strcmp(p->key[2], "hits") == 0 &&
           strcmp(p->key[4], key) == 0;
}

static bool page_open(void *user, bool array)
{
    page_reader *p = user;
    if (p->in_source)
        return pano_summary_reader_events.open(&p->src, array);
    if (!array && at_hit(p, "_source")) {
        p->in_source = true;
        pano_summary_reader_start(&p->src, &p->cur);
        return pano_summary_reader_events.open(&p->src, array);
    }
    if (array && at_hit(p, "sort"))
        p->in_sort = true;
    if (p->depth == 3 && !array)
        p->nsort = 0; /* a hit */
    if (++p->depth < 5)
        p->key[p->depth][0] = '\0';
    return true;
}

static bool page_close(void *user)
{
    page_reader *p = user;
    if (p->in_source) {
        pano_summary_reader_events.close(&p->src);
        if (p->src.done) {
            p->in_source = false;
            if (pano_summary_reader_finish(&p->src))
                take_document(p->s, &p->cur);
            else
                pano_summary_clear(&p->cur);
        }
        return true;
    }
    if (p->in_sort && p->depth == 5)
        p->in_sort = false;
    if (p->depth == 4)
        p->hits++;
    p->depth--;
    return true;
}

static bool page_key(void *user, const char *key, size_t len)
{
    page_reader *p = user;
    if (p->in_source)
        return pano_summary_reader_events.key(&p->src, key, len);
    if (p->depth >= 1 && p->depth < 5) {
        size_t n = len < sizeof p->key[0] - 1 ? len : sizeof p->key[0] - 1;
        memcpy(p->key[p->depth], key, n);
        p->key[p->depth][n] = '\0';
    }
    return true;
}

static bool page_number(void *user, double v)
{
    page_reader *p = user;
    if (p->in_source)
        return pano_summary_reader_events.number(&p->src, v);
    if (p->in_sort && p->depth == 5 && p->nsort < SORT_VALUES) {
        p->sort[p->nsort].text = false;
        p->sort[p->nsort++].number = v;
    }
    return true;
}

static bool page_string(void *user, const char *text, size_t len)
{
    page_reader *p = user;
    if (p->in_source)
        return pano_summary_reader_events.string(&p->src, text, len);
    if (p->in_sort && p->depth == 5 && p->nsort < SORT_VALUES) {
        if (len >= sizeof p->sort[0].string)
            return false; /* no sort value of ours is that long */
        p->sort[p->nsort].text = true;
        memcpy(p->sort[p->nsort].string, text, len);
        p->sort[p->nsort++].string[len] = '\0';
    } else if (p->depth == 1 && strcmp(p->key[1], "pit_id") == 0) {
        free(p->pit);
        p->pit = pano_malloc(len + 1);
        memcpy(p->pit, text, len);
        p->pit[len] = '\0';
    }
    return true;
}

static bool page_literal(void *user, int v)
{
    page_reader *p = user;
    return p->in_source ? pano_summary_reader_events.literal(&p->src, v) : true;
}

static const pano_json_events page_events = {page_open, page_close, page_key,
                                             page_number, page_string, page_literal};

/* The last hit's sort values, as search_after takes them. */
static pano_json *last_sort(const page_reader *p)
{
    pano_json *a = pano_json_array();
    for (int i = 0; i < p->nsort; i++) {
        double v = p->sort[i].number;
        pano_json_append(a, p->sort[i].text ? pano_json_string(p->sort[i].string)
                            : v == trunc(v) && fabs(v) < 9e15 ? pano_json_int((int64_t)v)
                                                              : pano_json_double(v, -1));
    }
    return a;
}

static pano_json *slice_page(const slice_read *s, int slice, const pano_json *after)
{
    pano_json *b = page_body(s->last_pit, s->query, s->by_id, after);
    if (s->nslices > 1) {
        pano_json *sl = pano_json_set_object(b, "slice");
        pano_json_set_int(sl, "id", slice);
        pano_json_set_int(sl, "max", s->nslices);
    }
    return b;
}

/* The pages of one slice; false once reading failed (s->rc). */
static bool read_one_slice(slice_read *s, int slice)
{
    pano_json *after = NULL;
    for (;;) {
        pano_json *body = slice_page(s, slice, after);
        page_reader p = {.s = s};
        int rc = store_post_stream(s->es, "/_search", body, &page_events, &p, s->err,
                                   sizeof s->err);
        pano_json_free(body);
        if (p.in_source)
            pano_summary_clear(&p.cur);
        if (rc < 0) {
            free(p.pit);
            s->rc = -1;
            break;
        }
        if (p.pit && strcmp(p.pit, s->last_pit) != 0) {
            free(s->last_pit);
            s->last_pit = p.pit;
        } else
            free(p.pit);
        pano_json_free(after);
        after = p.hits && p.nsort ? last_sort(&p) : NULL;
        if (p.hits < PAGE || !after)
            break;
    }
    pano_json_free(after);
    return s->rc == 0;
}

static void *read_slice(void *arg)
{
    slice_read *s = arg;
    s->last_pit = pano_strdup(s->pit);
    pano_summary_init(&s->held);
    for (int i = 0; i < s->count && read_one_slice(s, s->first + i); i++)
        ;
    if (s->holding && s->rc == 0)
        on_document(&s->rd, &s->held);
    pano_summary_clear(&s->held);
    return NULL;
}

/* The runs of from added to into (from is left empty). */
static void move_runs(collect *into, collect *from)
{
    if (into->n == 0) { /* taken whole */
        free(into->runs);
        *into = *from;
    } else {
        if (into->cap < into->n + from->n) {
            into->cap = into->n + from->n;
            into->runs = pano_reallocarray(into->runs, into->cap, sizeof *into->runs);
        }
        if (from->n) /* (from->runs may be NULL) */
            memcpy(into->runs + into->n, from->runs, from->n * sizeof *from->runs);
        into->n += from->n;
        free(from->runs);
    }
    memset(from, 0, sizeof *from);
}

/* What slice from read, added to into (from is left empty). */
static void move_reading(reading *into, reading *from)
{
    move_runs(&into->monitor, &from->monitor);
    move_runs(&into->inst, &from->inst);
    for (size_t i = 0; i < from->nsides; i++)
        *new_side(into) = from->sides[i];
    free(from->sides);
    from->sides = NULL;
    from->nsides = from->cap_sides = 0;
    for (int k = 0; k < RUNS_KINDS; k++)
        if (from->seen[k])
            note_first(into, k, from->first[k]);
}

/* Every summary document of the workflow that query matches, the documents
 * of one run merged, to on_document, counted in *read. When the workflow
 * lies in one partition of each summary stream (no run has two documents),
 * by two readers at once, one on each of the query's clients, so that
 * Elasticsearch fetches one's page while the other's is parsed: each
 * reads one half of every shard (2 x shards slices; slice i is half i /
 * shards of shard i % shards), however unlike the shards' sizes. 0, or -1
 * with a message in err. */
static int read_all(pano_query *q, const pano_jobs *jobs, const pano_json *query, reading *rd,
                    size_t *read, char *err, size_t errlen)
{
    char *indices = store_summary_indices(q, jobs);
    char *path = pano_asprintf("/%s/_pit?keep_alive=%s&routing=%s&ignore_unavailable=true",
                               indices, KEEP_ALIVE, jobs->wf_uuid);
    free(indices);
    pano_json *empty = pano_json_object();
    pano_json *opened = store_post(q, path, empty, NULL, err, errlen);
    pano_json_free(empty);
    free(path);
    const char *id = opened ? pano_json_get_str(opened, "id") : NULL;
    if (!id) {
        if (opened)
            snprintf(err, errlen, "Elasticsearch opened no point in time over the summaries");
        pano_json_free(opened);
        return -1;
    }
    /* Sorted by _id when a run may have documents in two partitions, so
     * that they come one after the other; else in the order they are
     * stored, which Elasticsearch pages at less cost, and in slices. */
    bool by_id = !store_summary_one_period(q, jobs);
    int64_t shards = 1;
    pano_json_get_int(pano_json_get(opened, "_shards"), "total", &shards);
    if (shards < 1 || shards > 1024)
        shards = 1;
    int readers = by_id ? 1 : 2;
    slice_read s[2];
    for (int i = 0; i < readers; i++)
        s[i] = (slice_read){.es = i ? q->reader : q->es, .pit = id, .query = query,
                            .by_id = by_id, .first = i * (int)shards,
                            .count = by_id ? 1 : (int)shards,
                            .nslices = by_id ? 1 : 2 * (int)shards};
    pthread_t t;
    bool threaded = false;
    if (readers > 1)
        threaded = pano_thread_start(&t, read_slice, &s[1]);
    read_slice(&s[0]);
    if (threaded)
        pthread_join(t, NULL);
    else if (readers > 1)
        read_slice(&s[1]);
    int rc = 0;
    for (int i = 0; i < readers; i++) {
        if (s[i].rc < 0 && rc == 0) {
            snprintf(err, errlen, "%s", s[i].err);
            rc = -1;
        }
        *read += s[i].read;
        move_reading(rd, &s[i].rd);
        reading_clear(&s[i].rd);
    }
    /* The point in time is let go now rather than after its keep-alive. */
    char *close = pano_asprintf("{\"id\":\"%s\"}", s[0].last_pit);
    pano_es_response r = {0};
    char why[256];
    if (pano_es_request(q->es, "DELETE", "/_pit", close, strlen(close), &r, why, sizeof why) == 0)
        pano_es_response_free(&r);
    free(close);
    for (int i = 0; i < readers; i++)
        free(s[i].last_pit);
    pano_json_free(opened);
    return rc;
}

static void free_runs(collect *c)
{
    for (size_t i = 0; i < c->n; i++)
        runs_free_job(&c->runs[i].job);
    free(c->runs);
    memset(c, 0, sizeof *c);
}

static void reading_clear(reading *rd)
{
    free_runs(&rd->monitor);
    free_runs(&rd->inst);
    for (size_t i = 0; i < rd->nsides; i++) {
        free(rd->sides[i].job);
        free(rd->sides[i].host);
    }
    free(rd->sides);
    memset(rd, 0, sizeof *rd);
}

/* Whether the summaries read cover the store's events: a store written (or
 * partly) before summaries existed lacks the summaries of its earliest
 * events. */
static bool covers(const reading *rd, const runs_coverage *events)
{
    for (int k = 0; k < RUNS_KINDS; k++)
        if (events->events[k] > 0 && !(rd->seen[k] && rd->first[k] <= events->first[k] + 1e-6))
            return false;
    return true;
}

/* Makes what was written to the workflow's summary partitions searchable
 * (a refresh, which Elasticsearch skips where nothing changed). A failure
 * (a user without the right to refresh) leaves the summaries as read. */
static void refresh(pano_query *q, const pano_jobs *jobs)
{
    char *indices = store_summary_indices(q, jobs);
    char *path =
        pano_asprintf("/%s/_refresh?ignore_unavailable=true&allow_no_indices=true", indices);
    free(indices);
    pano_es_response r = {0};
    char why[256];
    if (pano_es_request(q->es, "POST", path, NULL, 0, &r, why, sizeof why) < 0)
        pano_debug("POST %s: %s", path, why);
    else {
        pano_debug("POST %s: HTTP %ld", path, r.status);
        pano_es_response_free(&r);
    }
    free(path);
}

/* A query: field is false. */
static pano_json *field_is_false(const char *field)
{
    pano_json *q = pano_json_object();
    pano_json_set_bool(pano_json_set_object(q, "term"), field, false);
    return q;
}

/* The query of every summary of the workflow. */
static pano_json *workflow_query(const char *wf_uuid)
{
    return store_term("set.wf", wf_uuid);
}

/* At most this many open documents are looked for; more, and every
 * document is read. */
#define OPEN_MAX 10000

/* The query of the summaries of the workflow's jobs in scope (the DAG jobs
 * with a document open, or failed too, every document of theirs; a run
 * without a DAG job, its documents) into *query, when the summaries are
 * known to cover the workflow: one search that gives the earliest event
 * each kind of summary holds (mapped since summaries say whether they are
 * open) and the documents in scope. A document written before then lacks
 * `set.open` and `set.failed` and counts as both. *query is left NULL when
 * the summaries cannot tell (not mapped, or behind the events: the caller
 * reads every document and checks) or too many are in scope. 0, or -1 with
 * a message in err. */
static int scope_query(pano_query *q, const pano_jobs *jobs, const runs_coverage *events,
                       runs_scope scope, pano_json **query, char *err, size_t errlen)
{
    *query = NULL;
    pano_json *body = pano_json_object();
    pano_json_set_int(body, "size", OPEN_MAX);
    pano_json_set_bool(body, "track_total_hits", false);
    pano_json_set(body, "query", workflow_query(jobs->wf_uuid));
    /* in scope: not known to be out of it */
    pano_json *out_of_scope = pano_json_object();
    pano_json *all_false = pano_json_set_array(pano_json_set_object(out_of_scope, "bool"), "filter");
    pano_json_append(all_false, field_is_false("set.open"));
    if (scope == RUNS_OPEN_OR_FAILED)
        pano_json_append(all_false, field_is_false("set.failed"));
    pano_json_set(pano_json_set_object(pano_json_set_object(body, "post_filter"), "bool"),
                  "must_not", out_of_scope);
    pano_json_set(body, "_source", store_literal("[\"set.id\",\"set.job\"]"));
    pano_json *kinds = pano_json_set_object(pano_json_set_object(body, "aggs"), "k");
    pano_json *terms = pano_json_set_object(kinds, "terms");
    pano_json_set_str(terms, "field", "set.k");
    pano_json_set(pano_json_set_object(kinds, "aggs"), "t0", store_metric("min", "min.t0"));
    pano_json *answer =
        store_summary_search(q, jobs, body, "aggregations,hits.hits._source", err, errlen);
    if (!answer)
        return -1;
    /* the earliest event of each kind, as reading every document finds it */
    reading earliest = {0};
    const pano_json *buckets =
        pano_json_get_array(store_agg(pano_json_get(answer, "aggregations"), "k"), "buckets");
    for (size_t i = 0; i < pano_json_len(buckets); i++) {
        const pano_json *b = pano_json_at(buckets, i);
        pano_summary_kind kind;
        if (pano_summary_kind_parse(pano_json_get_str(b, "key"), &kind))
            note_first(&earliest, kind_of(kind), store_value(b, "t0", NAN));
    }
    bool covered = covers(&earliest, events);
    const pano_json *hits = pano_json_get_array(pano_json_get(answer, "hits"), "hits");
    size_t n = pano_json_len(hits);
    if (covered && n < OPEN_MAX) {
        pano_json *job_list = pano_json_array(), *id_list = pano_json_array();
        for (size_t i = 0; i < n; i++) {
            const pano_json *set = pano_json_get(pano_json_get(pano_json_at(hits, i), "_source"), "set");
            const char *id = pano_json_get_str(set, "id"), *job = pano_json_get_str(set, "job");
            if (id)
                pano_json_append(id_list, pano_json_string(id));
            if (job)
                pano_json_append(job_list, pano_json_string(job));
        }
        pano_json *b = pano_json_object();
        pano_json *in = pano_json_set_object(b, "bool");
        pano_json *filter = pano_json_set_array(in, "filter");
        pano_json_append(filter, workflow_query(jobs->wf_uuid));
        pano_json *should = pano_json_set_array(in, "should");
        pano_json *terms_job = pano_json_object(), *terms_id = pano_json_object();
        pano_json_set(pano_json_set_object(terms_job, "terms"), "set.job", job_list);
        pano_json_set(pano_json_set_object(terms_id, "terms"), "set.id", id_list);
        pano_json_append(should, terms_job);
        pano_json_append(should, terms_id);
        pano_json_set_int(in, "minimum_should_match", 1);
        *query = b;
    }
    pano_json_free(answer);
    return 0;
}

/* What was read, in c: the runs in the order of runs.h, the side counts
 * when with_side. */
static void deliver(reading *rd, bool with_side, collect *c)
{
    move_runs(c, &rd->monitor);
    move_runs(c, &rd->inst);
    runs_sort(c);
    for (size_t i = 0; with_side && i < rd->nsides; i++)
        runs_side(c, rd->sides[i].job, rd->sides[i].host, rd->sides[i].darshan,
                  rd->sides[i].transfer);
}

static void on_store_document(pano_run_summary *d, void *rd)
{
    on_document(rd, d);
}

/* From the embedded store's summaries, written in the transactions of the
 * events they count: used when, for every kind, they count exactly the
 * workflow's events (a file written before summaries, a run's event in
 * two hosts' files, an event purged: the events are read instead). */
static int runs_from_store(pano_query *q, const pano_jobs *jobs, bool with_side,
                           runs_scope scope, collect *c, char *err, size_t errlen)
{
    int64_t counted[3], stored[3];
    if (store_sqlite_summarized(q->db, jobs->wf_uuid, counted, stored, err, errlen) < 0)
        return -1;
    if (stored[0] + stored[1] + stored[2] == 0)
        return 0;
    for (int k = 0; k < 3; k++)
        if (counted[k] != stored[k]) {
            pano_debug("the summaries of %s count %lld %s event(s), the store holds %lld: not used",
                       jobs->wf_uuid, (long long)counted[k],
                       pano_summary_kind_name((pano_summary_kind)k), (long long)stored[k]);
            return 0;
        }
    reading rd = {0};
    size_t read = 0;
    int rc = store_sqlite_summaries(q->db, jobs->wf_uuid, scope != RUNS_ALL,
                                    scope == RUNS_OPEN_OR_FAILED, on_store_document, &rd, &read,
                                    err, errlen);
    pano_debug("%zu summary row(s) of %s read", read, jobs->wf_uuid);
    if (rc == 1)
        pano_warn("%s: its events are read instead", err);
    if (rc == 0)
        deliver(&rd, with_side, c);
    reading_clear(&rd);
    return rc < 0 ? -1 : rc == 1 ? 0 : scope == RUNS_ALL ? 1 : 2;
}

int runs_from_summaries(pano_query *q, const pano_jobs *jobs, const runs_coverage *events,
                        bool with_side, runs_scope scope, collect *c, char *err,
                        size_t errlen)
{
    if (q->db)
        return runs_from_store(q, jobs, with_side, scope, c, err, errlen);
    /* pano-indexer writes a batch's summaries just after its events, so
     * the events may be searchable before them: summaries that count fewer
     * events than the store holds are refreshed before they are read.
     * Still behind (a batch's summaries in flight, or counts left short by
     * a crash, indexer.md), they are taken as read. */
    int64_t summarized;
    if (store_summarized(q, jobs, &summarized, err, errlen) < 0)
        return -1;
    int64_t stored = 0;
    for (int k = 0; k < RUNS_KINDS; k++)
        stored += events->events[k];
    if (summarized > 0 && summarized < stored)
        refresh(q, jobs);
    pano_json *query = NULL;
    if (scope != RUNS_ALL && scope_query(q, jobs, events, scope, &query, err, errlen) < 0)
        return -1;
    bool known = query != NULL; /* covered, as the first search showed */
    if (!query)
        query = workflow_query(jobs->wf_uuid);
    reading rd = {0};
    size_t read = 0;
    int rc = read_all(q, jobs, query, &rd, &read, err, errlen);
    pano_json_free(query);
    pano_debug("%zu summary document(s) of %s read%s", read, jobs->wf_uuid,
               !known ? "" : scope == RUNS_OPEN ? ", of the jobs not ended" : ", of the jobs not ended or failed");
    bool covered = rc == 0 && (known || covers(&rd, events));
    if (covered)
        deliver(&rd, with_side, c);
    reading_clear(&rd);
    return rc < 0 ? -1 : !covered ? 0 : known ? 2 : 1;
}
