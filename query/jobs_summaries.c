/*
 * jobs_summaries.c - a workflow's runs from the indexer's summaries
 * (summary.h, runs.h).
 *
 * Every summary document of the workflow is read through a point in time,
 * in pages of 10,000 sorted by _id (so that a run's documents of two
 * partitions come one after the other and are merged), only the fields
 * used. Each becomes the run jobs.c would have made of the same events:
 * run_of mirrors on_monitor_run and on_open_run, instance_of on_instance,
 * and the side counts go through runs_side as on_side's do.
 */
#include "mem.h"
#include "runs.h"
#include "store_es.h"
#include "summary.h"

#include <math.h>
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
    double first[RUNS_KINDS]; /* the earliest event each kind's summaries hold */
    bool seen[RUNS_KINDS];
} reading;

/* doc[group][key] as a number (missing when absent), or as a new string. */
static double num(const pano_json *doc, const char *group, const char *key, double missing)
{
    return store_num(pano_json_get(doc, group), key, missing);
}

static char *str(const pano_json *doc, const char *group, const char *key)
{
    char buf[8192];
    return pano_strdup(store_str(pano_json_get(doc, group), key, buf, sizeof buf));
}

/* A number of an array, 0 for anything else (null: a field the event
 * did not have). */
static double number(const pano_json *v)
{
    return v->type == PANO_JSON_INT ? (double)v->u.integer
           : v->type == PANO_JSON_DOUBLE ? v->u.real.value
                                         : 0;
}

/* The values of a latest entry, or NULL. */
static const pano_json *latest(const pano_json *doc, const char *name)
{
    return pano_json_get(pano_json_get(pano_json_get(doc, "latest"), name), "v");
}

static void run_of(reading *rd, const pano_json *d)
{
    if (isnan(num(d, "min", "first", NAN)))
        return; /* samples without a start or an end make no run */
    run *r = runs_add(&rd->monitor);
    pano_job *j = &r->job;
    j->from_monitor = true;
    j->dag_job_id = str(d, "set", "job");
    j->host = str(d, "set", "host");
    j->transformation = str(d, "least", "xf");
    j->site = str(d, "least", "site");
    j->pid = (int64_t)num(d, "set", "pid", -1);
    j->exe = str(d, "least", "exe");
    j->start = num(d, "min", "first", 0);
    j->last_seen = num(d, "max", "last", j->start);
    j->interval = num(d, "max", "iv", 0);
    if (num(d, "max", "end", 0) > 0) {
        r->ended = true;
        j->end = j->last_seen; /* the end is the run's last event */
        j->exitcode = (int)num(d, "max", "exit", -1);
        j->signal = (int)num(d, "max", "sig", 0);
        j->state = j->signal > 0      ? PANO_JOB_KILLED
                   : j->exitcode == 0 ? PANO_JOB_SUCCEEDED
                                      : PANO_JOB_FAILED;
        j->duration = num(d, "max", "dur", j->end - j->start);
        j->cpu_time = num(d, "max", "cpu", 0);
        j->maxrss = (int64_t)num(d, "max", "rss", -1);
        j->bytes_read = (int64_t)num(d, "max", "rch", -1);
        j->bytes_written = (int64_t)num(d, "max", "wch", -1);
        j->samples = (int64_t)num(d, "max", "ns", 0);
        return;
    }
    if (isnan(num(d, "max", "slast", NAN)))
        return; /* no sample yet */
    j->samples = (int64_t)num(d, "add", "sn", 0);
    double last = num(d, "max", "slast", 0);
    if (last > j->last_seen)
        j->last_seen = last;
    if (j->interval <= 0)
        j->interval = num(d, "max", "siv", 0);
    j->maxrss = (int64_t)num(d, "max", "speak", -1);
    const pano_json *s = latest(d, "s");
    if (s) {
        j->cpu_time = store_num(s, "ut", 0) + store_num(s, "st", 0);
        j->bytes_read = (int64_t)store_num(s, "rch", -1);
        j->bytes_written = (int64_t)store_num(s, "wch", -1);
        j->rss = (int64_t)store_num(s, "rss", 0);
        j->vm = (int64_t)store_num(s, "vm", 0);
        j->procs = (int64_t)store_num(s, "pr", 0);
        j->threads = (int64_t)store_num(s, "th", 0);
    }
}

static void instance_of(reading *rd, const pano_json *d)
{
    run *r = runs_add(&rd->inst);
    pano_job *j = &r->job;
    char buf[8192];
    j->from_stampede = true;
    j->dag_job_id = str(d, "set", "job");
    r->inst_id = (int64_t)num(d, "set", "inst", 0);
    j->host = pano_strdup(store_str(latest(d, "h"), "h", buf, sizeof buf));
    j->site = pano_strdup(store_str(latest(d, "si"), "s", buf, sizeof buf));
    const pano_json *inv = latest(d, "iv");
    j->transformation = pano_strdup(store_str(inv, "xf", buf, sizeof buf));
    j->exe = pano_strdup(store_str(inv, "exe", buf, sizeof buf));
    r->submitted = num(d, "min", "sub", 0);
    double exec = num(d, "max", "exec", 0);
    double inv_start = num(d, "min", "ist", 0);
    j->start = exec > 0 ? exec : inv_start > 0 ? inv_start : r->submitted;
    j->last_seen = num(d, "max", "last", j->start);
    /* the invocations' sums (0 for none, as a sum over no document is) */
    double inv_dur = 0, inv_cpu = 0;
    const pano_json *each = pano_json_get(pano_json_get(d, "put"), "inv");
    for (size_t i = 0; i < pano_json_len(each); i++) {
        const pano_json *f = pano_json_at(each, i);
        if (pano_json_len(f) == 2) {
            inv_dur += number(pano_json_at(f, 0));
            inv_cpu += number(pano_json_at(f, 1));
        }
    }
    if (inv) {
        j->cpu_time = inv_cpu;
        j->maxrss = (int64_t)num(d, "max", "irss", -1);
    }
    const pano_json *state = latest(d, "st");
    const pano_json *main_end = latest(d, "me"), *post_end = latest(d, "pe");
    const char *e = state ? pano_json_get_str(state, "e") : NULL;
    char event[128] = "";
    if (e)
        snprintf(event, sizeof event, "stampede.job_inst.%s", e);
    j->state = e ? runs_state_after(event, store_num(state, "status", 0)) : PANO_JOB_QUEUED;
    /* The verdict is the POST script's when it ran, else the job's own. */
    const pano_json *verdict = post_end ? post_end : main_end;
    bool final_verdict = post_end || (e && strcmp(e, "main.end") == 0);
    if (verdict && final_verdict && !isnan(store_num(verdict, "x", NAN))) {
        r->ended = true;
        j->state = runs_decode_status(store_num(verdict, "x", 0), &j->exitcode, &j->signal);
        j->end = store_num(verdict, "ts", j->last_seen);
    }
    double local = store_num(main_end, "ld", NAN);
    if (r->ended)
        j->duration = !isnan(local) ? local : inv_dur;
}

static void side_of(reading *rd, const pano_json *d)
{
    if (rd->nsides == rd->cap_sides) {
        rd->cap_sides = rd->cap_sides ? rd->cap_sides * 2 : 64;
        rd->sides = pano_reallocarray(rd->sides, rd->cap_sides, sizeof *rd->sides);
    }
    side_count *s = &rd->sides[rd->nsides++];
    s->job = str(d, "set", "job");
    s->host = str(d, "set", "host");
    s->darshan = (int64_t)num(d, "add", "d", 0);
    s->transfer = (int64_t)num(d, "add", "t", 0);
}

/* One document (a run's, merged over its partitions). */
static void on_document(reading *rd, const pano_json *d)
{
    static const char *const kinds[RUNS_KINDS] = {"run", "inst", "side"};
    const char *k = pano_json_get_str(pano_json_get(d, "set"), "k");
    for (int i = 0; k && i < RUNS_KINDS; i++) {
        if (strcmp(k, kinds[i]) != 0)
            continue;
        double t0 = num(d, "min", "t0", NAN);
        if (!isnan(t0) && (!rd->seen[i] || t0 < rd->first[i])) {
            rd->first[i] = t0;
            rd->seen[i] = true;
        }
        if (i == RUNS_KIND_RUN)
            run_of(rd, d);
        else if (i == RUNS_KIND_INST)
            instance_of(rd, d);
        else
            side_of(rd, d);
    }
}

/* ---- reading ------------------------------------------------------------------- */

static const char *doc_id(const pano_json *source)
{
    const char *id = pano_json_get_str(pano_json_get(source, "set"), "id");
    return id ? id : "";
}

/* The search of one page after `after` (the sort values of the last hit,
 * or NULL for the first). */
static pano_json *page_body(const char *pit, const char *wf_uuid, const pano_json *after)
{
    pano_json *b = pano_json_object();
    pano_json *p = pano_json_set_object(b, "pit");
    pano_json_set_str(p, "id", pit);
    pano_json_set_str(p, "keep_alive", KEEP_ALIVE);
    pano_json_set_int(b, "size", PAGE);
    pano_json_set_bool(b, "track_total_hits", false);
    pano_json_set(pano_json_set_object(b, "query"), "term", pano_json_object());
    pano_json_set_str(pano_json_get(pano_json_get(b, "query"), "term"), "set.wf", wf_uuid);
    pano_json_set(b, "sort", store_literal("[{\"set.id\":\"asc\"},{\"_shard_doc\":\"asc\"}]"));
    /* what the runs are made of: not the writer's tokens, the workflow or
     * the event ids that order the latest entries */
    pano_json_set(b, "_source",
                  store_literal("{\"excludes\":[\"ops\",\"set.wf\",\"latest.*.i\"]}"));
    if (after)
        pano_json_set(b, "search_after", pano_json_clone(after));
    return b;
}

/* Every summary document of the workflow, the documents of one run merged,
 * to on_document. 0, or -1 with a message in err. */
static int read_all(pano_query *q, const pano_jobs *jobs, reading *rd, char *err, size_t errlen)
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
    char *pit = pano_strdup(id);
    pano_json_free(opened);
    pano_arena arena;
    pano_arena_init(&arena, 1 << 20);
    pano_json *after = NULL, *held = NULL; /* held: a document its run's next may follow */
    int rc = 0;
    for (;;) {
        pano_json *body = page_body(pit, jobs->wf_uuid, after);
        pano_arena_reset(&arena);
        pano_json *answer = store_post(
            q, "/_search?filter_path=pit_id,hits.hits._source,hits.hits.sort", body, &arena, err,
            errlen);
        pano_json_free(body);
        if (!answer) {
            rc = -1;
            break;
        }
        const char *next_pit = pano_json_get_str(answer, "pit_id");
        if (next_pit && strcmp(next_pit, pit) != 0) {
            free(pit);
            pit = pano_strdup(next_pit);
        }
        const pano_json *hits = pano_json_get_array(pano_json_get(answer, "hits"), "hits");
        size_t n = pano_json_len(hits);
        for (size_t i = 0; i < n; i++) {
            const pano_json *src = pano_json_get(pano_json_at(hits, i), "_source");
            if (held && strcmp(doc_id(held), doc_id(src)) == 0) {
                pano_summary_merge(held, src, true);
                continue;
            }
            if (held) {
                on_document(rd, held);
                pano_json_free(held);
                held = NULL;
            }
            bool next_same = i + 1 < n && strcmp(doc_id(src), doc_id(pano_json_get(
                                                                  pano_json_at(hits, i + 1),
                                                                  "_source"))) == 0;
            if (next_same || i + 1 == n)
                held = pano_json_clone(src); /* onto the heap: the page goes */
            else
                on_document(rd, src);
        }
        pano_json_free(after);
        after = n ? pano_json_clone(pano_json_get(pano_json_at(hits, n - 1), "sort")) : NULL;
        if (n < PAGE || !after)
            break;
    }
    if (held && rc == 0)
        on_document(rd, held);
    pano_json_free(held);
    pano_json_free(after);
    pano_arena_free(&arena);
    /* The point in time is let go now rather than after its keep-alive. */
    char *close = pano_asprintf("{\"id\":\"%s\"}", pit);
    pano_es_response r = {0};
    char why[256];
    if (pano_es_request(q->es, "DELETE", "/_pit", close, strlen(close), &r, why, sizeof why) == 0)
        pano_es_response_free(&r);
    free(close);
    free(pit);
    return rc;
}

/* The composite aggregations' order (runs.h): keywords by their bytes,
 * numbers by value, the missing first. */
static int by_run_key(const void *a, const void *b)
{
    const pano_job *x = &((const run *)a)->job, *y = &((const run *)b)->job;
    int c;
    if ((c = strcmp(x->dag_job_id, y->dag_job_id)) || (c = strcmp(x->host, y->host)))
        return c;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if ((c = strcmp(x->transformation, y->transformation)) || (c = strcmp(x->site, y->site)))
        return c;
    return strcmp(x->exe, y->exe);
}

static int by_instance_key(const void *a, const void *b)
{
    const run *x = a, *y = b;
    int c = strcmp(x->job.dag_job_id, y->job.dag_job_id);
    if (c)
        return c;
    return x->inst_id < y->inst_id ? -1 : x->inst_id > y->inst_id;
}

static void free_runs(collect *c)
{
    for (size_t i = 0; i < c->n; i++)
        runs_free_job(&c->runs[i].job);
    free(c->runs);
    memset(c, 0, sizeof *c);
}

int runs_from_summaries(pano_query *q, const pano_jobs *jobs, const runs_coverage *events,
                        bool with_side, collect *c, char *err, size_t errlen)
{
    reading rd = {0};
    int rc = read_all(q, jobs, &rd, err, errlen);
    /* A store written (or partly) before summaries existed lacks the
     * summaries of its earliest events. */
    bool covered = rc == 0;
    for (int k = 0; k < RUNS_KINDS && covered; k++)
        if (events->events[k] > 0)
            covered = rd.seen[k] && rd.first[k] <= events->first[k] + 1e-6;
    if (covered) {
        store_sort(rd.monitor.runs, rd.monitor.n, sizeof *rd.monitor.runs, by_run_key);
        store_sort(rd.inst.runs, rd.inst.n, sizeof *rd.inst.runs, by_instance_key);
        for (int k = 0; k < 2; k++) {
            collect *from = k == 0 ? &rd.monitor : &rd.inst;
            for (size_t i = 0; i < from->n; i++)
                *runs_add(c) = from->runs[i];
            free(from->runs);
        }
        for (size_t i = 0; with_side && i < rd.nsides; i++)
            runs_side(c, rd.sides[i].job, rd.sides[i].host, rd.sides[i].darshan,
                      rd.sides[i].transfer);
    } else {
        free_runs(&rd.monitor);
        free_runs(&rd.inst);
    }
    for (size_t i = 0; i < rd.nsides; i++) {
        free(rd.sides[i].job);
        free(rd.sides[i].host);
    }
    free(rd.sides);
    return rc < 0 ? -1 : covered ? 1 : 0;
}
