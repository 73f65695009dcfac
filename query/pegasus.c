/*
 * pegasus.c - pegasus-statistics' summary and pegasus-status' counts,
 * from pegasus-monitord's stampede events, at any moment of the run.
 *
 * pegasus-statistics reads the stampede database monitord fills from these
 * same events (its queries are in Pegasus's
 * packages/pegasus-python/src/Pegasus/db/workflow/stampede_statistics.py);
 * here they come from the store, scoped to the workflow and every
 * sub-workflow under it (root_xwf_id), by five aggregations:
 *   the jobs (stampede.job.info: type, retries allowed), their dependencies
 *   (stampede.job.edge), the job instances (stampede.job_inst.*: the exit
 *   code the instance ended with, DAGMan's run time, the cores), the
 *   invocations (stampede.inv.end), the tasks (stampede.task.info,
 *   stampede.wf.map.task_job), and the DAGMan runs (stampede.xwf.start/end,
 *   stampede.xwf.map.subwf_job).
 * Exit codes are raw wait statuses, as monitord sends them.
 */
#include "event.h"
#include "mem.h"
#include "query.h"
#include "store_es.h"
#include "thread.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const stampede[] = {"stampede", NULL};

/* ---- what is fetched ---------------------------------------------------------- */

typedef struct {
    char *key;       /* "xwf_id\x1fjob_id" */
    char *wf;
    bool dag;        /* a sub-workflow job (type dax or dag) */
    int max_retries;
    int64_t last;    /* its last instance (index into instances), -1 none */
    size_t instances;
} pjob;

typedef struct {
    char *key; /* as pjob */
    int64_t inst;
    double exitcode;  /* the instance's verdict, NAN while it has none */
    double local_dur; /* DAGMan's run time, NAN when it did not run */
    double cores;     /* multiplier_factor */
    bool subwf;       /* its sub-workflow was planned (stampede.xwf.map.subwf_job) */
    char state[32];   /* its latest state event, without "stampede.job_inst." */
} pinst;

typedef struct {
    char *key;
    int64_t inst, inv;
    char *task;       /* "" for none */
    char *transformation;
    double dur, exitcode, maxrss, avg_cpu; /* maxrss, avg_cpu NAN when absent */
} pinv;

typedef struct {
    char *key;  /* "xwf_id\x1ftask_id" */
    bool dag;   /* type dax or dag */
    bool mapped;
} ptask;

typedef struct {
    char *wf, *parent, *child;
} pedge;

typedef struct {
    pjob *jobs;
    size_t njobs;
    pinst *insts;
    size_t ninsts;
    pinv *invs;
    size_t ninvs;
    ptask *tasks;
    size_t ntasks;
    pedge *edges;
    size_t nedges;
    char **subwf_insts; /* "xwf\x1fjob\x1finst" of the instances that ran a sub-workflow */
    size_t nsubwf;
    char **task_maps;   /* "xwf\x1ftask" mapped to a job */
    size_t nmaps;
} fetched;

#define GROW(array, n) ((array) = pano_reallocarray((array), (n) + 1, sizeof *(array)))

static char *key2(const pano_json *key, const char *a, const char *b)
{
    char x[512], y[512];
    return pano_asprintf("%s\x1f%s", store_str(key, a, x, sizeof x), store_str(key, b, y, sizeof y));
}

static bool is_dag_type(const char *type) { return strcmp(type, "dax") == 0 || strcmp(type, "dag") == 0; }

static void on_job(const pano_json *b, void *user)
{
    fetched *f = user;
    const pano_json *k = pano_json_get(b, "key");
    char type[64], wf[512];
    GROW(f->jobs, f->njobs);
    f->jobs[f->njobs++] = (pjob){.key = key2(k, "wf", "job"),
                                 .wf = pano_strdup(store_str(k, "wf", wf, sizeof wf)),
                                 .dag = is_dag_type(store_str(k, "type", type, sizeof type)),
                                 .max_retries = (int)store_num(k, "retries", 0),
                                 .last = -1};
}

static void on_edge(const pano_json *b, void *user)
{
    fetched *f = user;
    const pano_json *k = pano_json_get(b, "key");
    char wf[512], p[512], c[512];
    GROW(f->edges, f->nedges);
    f->edges[f->nedges++] = (pedge){pano_strdup(store_str(k, "wf", wf, sizeof wf)),
                                    pano_strdup(store_str(k, "parent", p, sizeof p)),
                                    pano_strdup(store_str(k, "child", c, sizeof c))};
}

/* The exit code an instance ended with, as monitord records it: the job's
 * (main.end), 1 when it was aborted or could not be submitted, the PRE
 * script's when that failed, and finally the POST script's, the verdict. */
static void on_instance(const pano_json *b, void *user)
{
    fetched *f = user;
    const pano_json *k = pano_json_get(b, "key");
    GROW(f->insts, f->ninsts);
    pinst *i = &f->insts[f->ninsts++];
    *i = (pinst){.key = key2(k, "wf", "job"), .inst = (int64_t)store_num(k, "inst", 0),
                 .exitcode = NAN, .local_dur = NAN, .cores = 1};
    const pano_json *main_end = store_top_hit(store_agg(b, "main_end"), "doc");
    if (main_end) {
        i->exitcode = store_num(main_end, "exitcode", NAN);
        i->local_dur = store_num(main_end, "local_dur", NAN);
        i->cores = store_num(main_end, "multiplier_factor", 1);
    }
    int64_t forced = 0;
    pano_json_get_int(store_agg(b, "forced"), "doc_count", &forced);
    if (forced > 0)
        i->exitcode = 1;
    const pano_json *pre = store_top_hit(store_agg(b, "pre_failed"), "doc");
    if (pre)
        i->exitcode = store_num(pre, "exitcode", 1);
    const pano_json *post = store_top_hit(store_agg(b, "post_end"), "doc");
    if (post)
        i->exitcode = store_num(post, "exitcode", NAN);
    const pano_json *latest = store_top_hit(store_agg(b, "state"), "doc");
    const char *event = latest ? pano_json_get_str(latest, "event") : NULL;
    snprintf(i->state, sizeof i->state, "%s",
             event && strlen(event) > 18 ? event + strlen("stampede.job_inst.") : "");
}

static void on_invocation(const pano_json *b, void *user)
{
    fetched *f = user;
    const pano_json *k = pano_json_get(b, "key");
    const pano_json *doc = store_top_hit(b, "doc");
    char task[512], tr[512];
    GROW(f->invs, f->ninvs);
    f->invs[f->ninvs++] = (pinv){
        .key = key2(k, "wf", "job"),
        .inst = (int64_t)store_num(k, "inst", 0),
        .inv = (int64_t)store_num(k, "inv", 0),
        .task = pano_strdup(store_str(doc, "task_id", task, sizeof task)),
        .transformation = pano_strdup(store_str(doc, "transformation", tr, sizeof tr)),
        .dur = store_num(doc, "dur", 0),
        .exitcode = store_num(doc, "exitcode", NAN),
        .maxrss = store_num(doc, "maxrss", NAN),
        .avg_cpu = store_num(doc, "avg_cpu", NAN),
    };
}

static void on_task(const pano_json *b, void *user)
{
    fetched *f = user;
    const pano_json *k = pano_json_get(b, "key");
    char type[64];
    GROW(f->tasks, f->ntasks);
    f->tasks[f->ntasks++] =
        (ptask){.key = key2(k, "wf", "task"), .dag = is_dag_type(store_str(k, "type", type, sizeof type))};
}

static void on_task_map(const pano_json *b, void *user)
{
    fetched *f = user;
    GROW(f->task_maps, f->nmaps);
    f->task_maps[f->nmaps++] = key2(pano_json_get(b, "key"), "wf", "task");
}

static void on_subwf(const pano_json *b, void *user)
{
    fetched *f = user;
    const pano_json *k = pano_json_get(b, "key");
    char *k2 = key2(k, "wf", "job");
    GROW(f->subwf_insts, f->nsubwf);
    f->subwf_insts[f->nsubwf++] = pano_asprintf("%s\x1f%lld", k2, (long long)store_num(k, "inst", 0));
    free(k2);
}

/* ---- requests -------------------------------------------------------------------- */

/* Events of the workflow and of the sub-workflows under it. */
static pano_json *tree_body(const char *uuid, const char *event, bool is_prefix, pano_json **aggs)
{
    pano_json *filter, *body = store_body(NULL, &filter);
    pano_json *tree = pano_json_object();
    pano_json *b = pano_json_set_object(tree, "bool");
    pano_json *should = pano_json_set_array(b, "should");
    pano_json_append(should, store_term("wf_uuid", uuid));
    pano_json_append(should, store_term("root_xwf_id", uuid));
    pano_json_set_int(b, "minimum_should_match", 1);
    pano_json_append(filter, tree);
    pano_json_append(filter, is_prefix ? store_prefix("event", event) : store_term("event", event));
    *aggs = pano_json_set_object(body, "aggs");
    return body;
}

/* A composite aggregation "c" over the given (name, field) sources. */
static pano_json *composite(pano_json *aggs, const char *const (*sources)[2], size_t n)
{
    pano_json *a = pano_json_set_object(aggs, "c");
    pano_json *c = pano_json_set_object(a, "composite");
    pano_json_set_int(c, "size", 5000);
    pano_json *list = pano_json_set_array(c, "sources");
    for (size_t i = 0; i < n; i++) {
        pano_json *s = pano_json_object();
        pano_json *t = pano_json_set_object(pano_json_set_object(s, sources[i][0]), "terms");
        pano_json_set_str(t, "field", sources[i][1]);
        pano_json_set_bool(t, "missing_bucket", true);
        pano_json_append(list, s);
    }
    return pano_json_set_object(a, "aggs");
}

static pano_json *top_doc(pano_json *filter, const char *fields)
{
    pano_json *sub, *a = store_filter_agg(filter, &sub);
    pano_json *top = pano_json_set_object(pano_json_set_object(sub, "doc"), "top_hits");
    pano_json_set_int(top, "size", 1);
    pano_json_set(top, "sort", store_literal("[{\"ts\":\"desc\"},{\"js_id\":{\"order\":\"desc\","
                                             "\"unmapped_type\":\"long\"}}]"));
    pano_json_set(top, "_source", store_literal(fields));
    return a;
}

static int run(pano_query *q, pano_json *body, void (*each)(const pano_json *, void *),
               fetched *f, char *err, size_t errlen)
{
    int rc = store_composite_each(q, NULL, stampede, body, "c", each, f, err, errlen);
    return rc;
}

static int fetch(pano_query *q, const char *uuid, fetched *f, char *err, size_t errlen)
{
    pano_json *aggs, *body;
    static const char *const job_keys[][2] = {
        {"wf", "xwf_id"}, {"job", "job_id"}, {"type", "type_desc"}, {"retries", "max_retries"}};
    body = tree_body(uuid, "stampede.job.info", false, &aggs);
    composite(aggs, job_keys, 4);
    if (run(q, body, on_job, f, err, errlen) < 0)
        return -1;
    if (f->njobs == 0)
        return 0; /* monitord never reported this workflow */

    static const char *const edge_keys[][2] = {
        {"wf", "xwf_id"}, {"parent", "parent_job_id"}, {"child", "child_job_id"}};
    body = tree_body(uuid, "stampede.job.edge", false, &aggs);
    composite(aggs, edge_keys, 3);
    if (run(q, body, on_edge, f, err, errlen) < 0)
        return -1;

    static const char *const inst_keys[][2] = {
        {"wf", "xwf_id"}, {"job", "job_id"}, {"inst", "job_inst_id"}};
    body = tree_body(uuid, "stampede.job_inst.", true, &aggs);
    pano_json *sub = composite(aggs, inst_keys, 3);
    pano_json_set(sub, "main_end",
                  top_doc(store_term("event", "stampede.job_inst.main.end"),
                          "[\"exitcode\",\"local_dur\",\"multiplier_factor\"]"));
    pano_json_set(sub, "post_end", top_doc(store_term("event", "stampede.job_inst.post.end"),
                                           "[\"exitcode\"]"));
    pano_json_set(sub, "pre_failed",
                  top_doc(store_literal("{\"bool\":{\"filter\":[{\"term\":{\"event\":"
                                        "\"stampede.job_inst.pre.end\"}},{\"term\":{\"status\":-1}}]}}"),
                          "[\"exitcode\"]"));
    pano_json *unused;
    pano_json_set(sub, "forced",
                  store_filter_agg(store_literal(
                                       "{\"bool\":{\"should\":[{\"term\":{\"event\":\"stampede.job_inst.abort.info\"}},"
                                       "{\"bool\":{\"filter\":[{\"terms\":{\"event\":["
                                       "\"stampede.job_inst.submit.end\",\"stampede.job_inst.grid.submit.end\","
                                       "\"stampede.job_inst.globus.submit.end\"]}},{\"term\":{\"status\":-1}}]}}],"
                                       "\"minimum_should_match\":1}}"),
                                   &unused));
    pano_json_set(sub, "state",
                  top_doc(store_literal("{\"bool\":{\"must_not\":[{\"terms\":{\"event\":["
                                        "\"stampede.job_inst.host.info\",\"stampede.job_inst.image.info\","
                                        "\"stampede.job_inst.composite\",\"stampede.job_inst.tag\"]}}]}}"),
                          "[\"event\"]"));
    if (run(q, body, on_instance, f, err, errlen) < 0)
        return -1;

    static const char *const inv_keys[][2] = {
        {"wf", "xwf_id"}, {"job", "job_id"}, {"inst", "job_inst_id"}, {"inv", "inv_id"}};
    body = tree_body(uuid, "stampede.inv.end", false, &aggs);
    sub = composite(aggs, inv_keys, 4);
    pano_json *top = pano_json_set_object(pano_json_set_object(sub, "doc"), "top_hits");
    pano_json_set_int(top, "size", 1);
    pano_json_set(top, "_source",
                  store_literal("[\"task_id\",\"transformation\",\"dur\",\"exitcode\","
                                "\"maxrss\",\"avg_cpu\"]"));
    if (run(q, body, on_invocation, f, err, errlen) < 0)
        return -1;

    static const char *const task_keys[][2] = {
        {"wf", "xwf_id"}, {"task", "task_id"}, {"type", "type_desc"}};
    body = tree_body(uuid, "stampede.task.info", false, &aggs);
    composite(aggs, task_keys, 3);
    if (run(q, body, on_task, f, err, errlen) < 0)
        return -1;
    body = tree_body(uuid, "stampede.wf.map.task_job", false, &aggs);
    composite(aggs, task_keys, 2);
    if (run(q, body, on_task_map, f, err, errlen) < 0)
        return -1;

    body = tree_body(uuid, "stampede.xwf.map.subwf_job", false, &aggs);
    composite(aggs, inst_keys, 3);
    return run(q, body, on_subwf, f, err, errlen);
}

/* The DAGMan runs of each workflow in the tree: how many started and
 * ended, the sums of their times, the status of the last end. */
typedef struct {
    char wf[64];
    int64_t starts, ends;
    double start_sum, end_sum;
    double status; /* of the latest xwf.end */
} pdag;

static int fetch_runs(pano_query *q, const char *uuid, pdag **out, size_t *n, char *err,
                      size_t errlen)
{
    pano_json *aggs, *body = tree_body(uuid, "stampede.xwf.", true, &aggs);
    pano_json *terms = pano_json_set_object(pano_json_set_object(aggs, "wf"), "terms");
    pano_json_set_str(terms, "field", "xwf_id");
    pano_json_set_int(terms, "size", 10000);
    pano_json *sub = pano_json_set_object(pano_json_get(aggs, "wf"), "aggs"), *s, *e;
    pano_json_set(sub, "start", store_filter_agg(store_term("event", "stampede.xwf.start"), &s));
    pano_json_set(s, "sum", store_metric("sum", "ts"));
    pano_json_set(sub, "end", store_filter_agg(store_term("event", "stampede.xwf.end"), &e));
    pano_json_set(e, "sum", store_metric("sum", "ts"));
    pano_json *top = pano_json_set_object(pano_json_set_object(e, "latest"), "top_hits");
    pano_json_set_int(top, "size", 1);
    pano_json_set(top, "sort", store_literal("[{\"ts\":\"desc\"}]"));
    pano_json_set(top, "_source", store_literal("[\"status\"]"));
    pano_json *answer = store_search(q, NULL, stampede, body, err, errlen);
    if (!answer)
        return -1;
    const pano_json *buckets =
        pano_json_get_array(store_agg(pano_json_get(answer, "aggregations"), "wf"), "buckets");
    *n = pano_json_len(buckets);
    *out = pano_calloc(*n ? *n : 1, sizeof **out);
    for (size_t i = 0; i < *n; i++) {
        const pano_json *b = pano_json_at(buckets, i);
        pdag *d = &(*out)[i];
        store_str(b, "key", d->wf, sizeof d->wf);
        const pano_json *start = store_agg(b, "start"), *end = store_agg(b, "end");
        pano_json_get_int(start, "doc_count", &d->starts);
        pano_json_get_int(end, "doc_count", &d->ends);
        d->start_sum = store_value(start, "sum", 0);
        d->end_sum = store_value(end, "sum", 0);
        d->status = store_num(store_top_hit(end, "latest"), "status", NAN);
    }
    pano_json_free(answer);
    return 0;
}

/* ---- pegasus-statistics' arithmetic ------------------------------------------------ */

static int by_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int by_key_then_inst(const void *a, const void *b)
{
    const pinst *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->inst < y->inst ? -1 : x->inst > y->inst;
}

static pjob *find_job(fetched *f, const char *key)
{
    return store_find(&key, f->jobs, f->njobs, sizeof *f->jobs, by_key);
}

static pinst *find_inst(fetched *f, const char *key, int64_t inst)
{
    pinst probe = {.key = (char *)key, .inst = inst};
    return store_find(&probe, f->insts, f->ninsts, sizeof *f->insts, by_key_then_inst);
}

static bool has(char **sorted, size_t n, const char *key)
{
    return store_find(&key, sorted, n, sizeof *sorted, by_key) != NULL;
}

/* Distinct strings of a list (sorted in place). */
static size_t distinct(char **list, size_t n)
{
    pano_sort(list, n, sizeof *list, by_key);
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += i == 0 || strcmp(list[i], list[i - 1]) != 0;
    return d;
}

static void count_jobs(fetched *f, bool dags, pano_pegasus_counts *c)
{
    size_t with_instances = 0, instances = 0;
    for (size_t i = 0; i < f->njobs; i++) {
        pjob *j = &f->jobs[i];
        if (j->dag != dags)
            continue;
        c->total++;
        if (j->last < 0)
            continue;
        with_instances++;
        instances += j->instances;
        double e = f->insts[j->last].exitcode;
        c->succeeded += e == 0;
        c->failed += !isnan(e) && e != 0;
    }
    c->retries = instances - with_instances;
    c->incomplete = c->total - c->succeeded - c->failed;
    c->total_with_retries = c->succeeded + c->failed + c->retries;
}

static void count_tasks(fetched *f, pano_pegasus_counts *c)
{
    pano_sort(f->task_maps, f->nmaps, sizeof *f->task_maps, by_key);
    for (size_t i = 0; i < f->ntasks; i++)
        c->total += !f->tasks[i].dag && has(f->task_maps, f->nmaps, f->tasks[i].key);
    /* The invocations of tasks: of the last instance of a job (not a
     * sub-workflow's) they count once per task as succeeded or failed;
     * every one beyond the first per task is a retry. */
    char **ok = pano_calloc(f->ninvs + 1, sizeof *ok), **bad = pano_calloc(f->ninvs + 1, sizeof *bad);
    char **all = pano_calloc(f->ninvs + 1, sizeof *all);
    size_t nok = 0, nbad = 0, nall = 0;
    for (size_t i = 0; i < f->ninvs; i++) {
        pinv *v = &f->invs[i];
        if (!*v->task)
            continue;
        char *wf_task = pano_asprintf("%.*s\x1f%s", (int)strcspn(v->key, "\x1f"), v->key, v->task);
        all[nall++] = wf_task;
        pjob *j = find_job(f, v->key);
        pinst *inst = find_inst(f, v->key, v->inst);
        bool last = j && !j->dag && j->last >= 0 && inst == &f->insts[j->last];
        if (last && v->exitcode == 0)
            ok[nok++] = wf_task;
        else if (last && !isnan(v->exitcode))
            bad[nbad++] = wf_task;
    }
    c->succeeded = distinct(ok, nok);
    c->failed = distinct(bad, nbad);
    c->retries = nall - distinct(all, nall);
    c->incomplete = c->total > c->succeeded + c->failed ? c->total - c->succeeded - c->failed : 0;
    c->total_with_retries = c->succeeded + c->failed + c->retries;
    for (size_t i = 0; i < nall; i++)
        free(all[i]);
    free(all);
    free(ok);
    free(bad);
}

static void wall_times(fetched *f, pano_pegasus *out)
{
    pano_sort(f->subwf_insts, f->nsubwf, sizeof *f->subwf_insts, by_key);
    /* as kickstart saw them: the jobs' own invocations (not their PRE and
     * POST scripts, not a sub-workflow's DAGMan), times the cores */
    for (size_t i = 0; i < f->ninvs; i++) {
        pinv *v = &f->invs[i];
        if (v->inv < 0 || strcmp(v->transformation, "condor::dagman") == 0)
            continue;
        pinst *inst = find_inst(f, v->key, v->inst);
        double t = v->dur * (inst ? inst->cores : 1);
        out->cumulative_job_wall_time += t;
        if (v->exitcode > 0)
            out->cumulative_badput_time += t;
    }
    /* as DAGMan saw them: every instance, but a sub-workflow's (its jobs
     * count through its own workflow) */
    for (size_t i = 0; i < f->ninsts; i++) {
        pinst *inst = &f->insts[i];
        pjob *j = find_job(f, inst->key);
        char *id = pano_asprintf("%s\x1f%lld", inst->key, (long long)inst->inst);
        bool skip = j && j->dag && has(f->subwf_insts, f->nsubwf, id);
        free(id);
        if (skip || isnan(inst->local_dur))
            continue;
        double t = inst->local_dur * inst->cores;
        out->cumulative_job_walltime_from_submit_side += t;
        if (inst->exitcode > 0)
            out->cumulative_badput_walltime_from_submit_side += t;
    }
}

static int by_transformation(const void *a, const void *b)
{
    const pinv *x = *(const pinv *const *)a, *y = *(const pinv *const *)b;
    int c = strcmp(x->transformation, y->transformation);
    return c ? c : (x->exitcode == 0) == (y->exitcode == 0) ? 0 : x->exitcode == 0 ? -1 : 1;
}

/* pegasus-statistics' breakdown: every invocation, by transformation and
 * outcome. Memory and CPU leave out the invocations that have none (SQL's
 * aggregates skip NULLs), and a 0 (what kickstart gives scripts) alike. */
static void breakdown(fetched *f, pano_pegasus *out)
{
    pinv **sorted = pano_calloc(f->ninvs + 1, sizeof *sorted);
    for (size_t i = 0; i < f->ninvs; i++)
        sorted[i] = &f->invs[i];
    pano_sort(sorted, f->ninvs, sizeof *sorted, by_transformation);
    double *rt = pano_calloc(f->ninvs + 1, sizeof *rt), *mem = pano_calloc(f->ninvs + 1, sizeof *mem);
    double *cpu = pano_calloc(f->ninvs + 1, sizeof *cpu);
    for (size_t from = 0, to; from < f->ninvs; from = to) {
        to = from + 1;
        while (to < f->ninvs && by_transformation(&sorted[from], &sorted[to]) == 0)
            to++;
        size_t nr = 0, nm = 0, nc = 0;
        for (size_t i = from; i < to; i++) {
            pinv *v = sorted[i];
            pinst *inst = find_inst(f, v->key, v->inst);
            rt[nr++] = v->dur * (inst ? inst->cores : 1);
            if (v->maxrss > 0)
                mem[nm++] = v->maxrss / 1024;
            if (v->avg_cpu > 0)
                cpu[nc++] = v->avg_cpu * 100;
        }
        out->breakdown = pano_reallocarray(out->breakdown, out->n_breakdown + 1, sizeof *out->breakdown);
        out->breakdown[out->n_breakdown++] = (pano_pegasus_breakdown){
            .transformation = pano_strdup(sorted[from]->transformation),
            .succeeded = sorted[from]->exitcode == 0,
            .count = to - from,
            .runtime = pano_summarize(rt, nr),
            .memory = pano_summarize(mem, nm),
            .avg_cpu = pano_summarize(cpu, nc),
        };
    }
    free(rt);
    free(mem);
    free(cpu);
    free(sorted);
}

/* pegasus-status: DAGMan's node counts for each DAG that ran, summed. */
static void dag_status(fetched *f, const char *root, const pdag *dags, size_t ndags,
                       pano_pegasus_status *s)
{
    s->state = "Running";
    for (size_t d = 0; d < ndags; d++) {
        const pdag *g = &dags[d];
        if (g->starts == 0)
            continue;
        bool ended = g->ends >= g->starts;
        if (strcmp(g->wf, root) == 0 && ended)
            s->state = g->status == 0 ? "Success" : "Failure";
        for (size_t i = 0; i < f->njobs; i++) {
            pjob *j = &f->jobs[i];
            if (strcmp(j->wf, g->wf) != 0)
                continue;
            s->total++;
            if (j->last < 0) {
                if (ended)
                    continue; /* DAGMan's final count leaves them out */
                /* ready when every parent succeeded */
                const char *name = j->key + strlen(j->wf) + 1;
                bool ready = true;
                for (size_t e = 0; e < f->nedges && ready; e++) {
                    pedge *x = &f->edges[e];
                    if (strcmp(x->wf, g->wf) != 0 || strcmp(x->child, name) != 0)
                        continue;
                    char *pk = pano_asprintf("%s\x1f%s", g->wf, x->parent);
                    pjob *p = find_job(f, pk);
                    free(pk);
                    ready = p && p->last >= 0 && f->insts[p->last].exitcode == 0;
                }
                s->ready += ready;
                s->unready += !ready;
                continue;
            }
            pinst *last = &f->insts[j->last];
            if (last->exitcode == 0)
                s->succeeded++;
            else if (!isnan(last->exitcode)) {
                /* failed for good once no retry is left, or the DAG is over */
                if (ended || (int)j->instances > j->max_retries)
                    s->failed++;
                else
                    s->ready++;
            } else if (strncmp(last->state, "pre.", 4) == 0)
                s->pre++;
            else if (strncmp(last->state, "post.", 5) == 0 || strcmp(last->state, "main.end") == 0)
                s->post++;
            else
                s->queued++;
        }
    }
    s->percent_done = s->total ? round(10000.0 * (double)s->succeeded / (double)s->total) / 100 : 0;
}

static void free_fetched(fetched *f)
{
    for (size_t i = 0; i < f->njobs; i++) {
        free(f->jobs[i].key);
        free(f->jobs[i].wf);
    }
    for (size_t i = 0; i < f->ninsts; i++)
        free(f->insts[i].key);
    for (size_t i = 0; i < f->ninvs; i++) {
        free(f->invs[i].key);
        free(f->invs[i].task);
        free(f->invs[i].transformation);
    }
    for (size_t i = 0; i < f->ntasks; i++)
        free(f->tasks[i].key);
    for (size_t i = 0; i < f->nedges; i++) {
        free(f->edges[i].wf);
        free(f->edges[i].parent);
        free(f->edges[i].child);
    }
    for (size_t i = 0; i < f->nsubwf; i++)
        free(f->subwf_insts[i]);
    for (size_t i = 0; i < f->nmaps; i++)
        free(f->task_maps[i]);
    free(f->jobs);
    free(f->insts);
    free(f->invs);
    free(f->tasks);
    free(f->edges);
    free(f->subwf_insts);
    free(f->task_maps);
}

void pano_pegasus_free(pano_pegasus *p)
{
    for (size_t i = 0; i < p->n_breakdown; i++)
        free(p->breakdown[i].transformation);
    free(p->breakdown);
    p->breakdown = NULL;
    p->n_breakdown = 0;
}

int pano_query_pegasus(pano_query *q, const char *wf_uuid, pano_pegasus *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->workflow_wall_time = NAN;
    char uuid[PANO_WF_UUID_LEN + 1];
    if (!pano_wf_uuid_normalize(wf_uuid, uuid)) {
        snprintf(err, errlen, "'%.80s' is not a workflow UUID (8-4-4-4-12 hexadecimal digits)",
                 wf_uuid);
        return -1;
    }
    fetched f = {0};
    pdag *dags = NULL;
    size_t ndags = 0;
    int rc = fetch(q, uuid, &f, err, errlen);
    if (rc == 0 && f.njobs > 0)
        rc = fetch_runs(q, uuid, &dags, &ndags, err, errlen);
    if (rc == 0 && f.njobs > 0) {
        out->present = true;
        pano_sort(f.jobs, f.njobs, sizeof *f.jobs, by_key);
        pano_sort(f.insts, f.ninsts, sizeof *f.insts, by_key_then_inst);
        for (size_t i = 0; i < f.ninsts; i++) {
            pjob *j = find_job(&f, f.insts[i].key);
            if (!j)
                continue; /* an instance of a job the planner did not announce */
            j->instances++;
            j->last = (int64_t)i; /* sorted: the last one seen has the highest id */
        }
        count_jobs(&f, false, &out->jobs);
        count_jobs(&f, true, &out->sub_workflows);
        count_tasks(&f, &out->tasks);
        wall_times(&f, out);
        breakdown(&f, out);
        for (size_t d = 0; d < ndags; d++) {
            if (strcmp(dags[d].wf, uuid) != 0)
                continue;
            /* the sum of each DAGMan run's length, across rescue restarts */
            if (dags[d].starts > 0 && dags[d].starts == dags[d].ends)
                out->workflow_wall_time = dags[d].end_sum - dags[d].start_sum;
            out->workflow_retries = dags[d].starts > 1 ? (size_t)dags[d].starts - 1 : 0;
        }
        dag_status(&f, uuid, dags, ndags, &out->status);
    }
    free(dags);
    free_fetched(&f);
    return rc;
}
