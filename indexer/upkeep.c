/*
 * upkeep.c - the upkeep of pano's indices: partitions made ahead of their
 * events, retention, the shard budget, summary indices compacted
 * (upkeep.h, docs/indexer.md).
 */
#include "upkeep.h"

#include "buf.h"
#include "json.h"
#include "log.h"
#include "mem.h"
#include "retention.h"
#include "summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elasticsearch index names: lowercase letters, digits and . _ -, not
 * starting with . _ or -. */
bool upkeep_index_name_ok(const char *name, bool prefix_only)
{
    size_t len = strlen(name);
    if (len == 0 || len > (prefix_only ? 100 : 200) || strchr("._-+", name[0]))
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("._-", *p)))
            return false;
    return true;
}

/* ---- Elasticsearch ---------------------------------------------------------- */

static long es_send(indexer *ix, const char *method, const char *path, const char *body,
                    char **answer)
{
    char err[512];
    return indexer_es_answered(
        ix, pano_es_send(ix->es, method, path, body, answer, err, sizeof err), err);
}

static pano_json *es_get_json(indexer *ix, const char *path, long *status)
{
    char err[512];
    pano_json *j = pano_es_get_json(ix->es, path, status, err, sizeof err);
    indexer_es_answered(ix, *status, err);
    return j;
}

/* ---- retention ---------------------------------------------------------------- */

static void stream_bases(const indexer *ix, char names[PANO_N_STREAMS][256],
                         const char *bases[PANO_N_STREAMS])
{
    for (int i = 0; i < PANO_N_STREAMS; i++) {
        if (i == PANO_STREAM_UNASSIGNED)
            snprintf(names[i], 256, "%s", ix->fallback_index);
        else if (i == PANO_STREAM_DEAD_LETTER)
            snprintf(names[i], 256, "%s", ix->dead_letter_index);
        else
            snprintf(names[i], 256, "%.200s%s", ix->prefix, pano_streams[i]);
        bases[i] = names[i];
    }
}

/* The base names of the summary streams' partitions, by the stream they
 * summarize (summary.h; "" for a stream without summaries, which no index
 * name matches). */
static void summary_bases(const indexer *ix, char names[PANO_N_STREAMS][256],
                          const char *bases[PANO_N_STREAMS])
{
    for (int i = 0; i < PANO_N_STREAMS; i++) {
        names[i][0] = '\0';
        if (ix->summarize && pano_summary_stream(i))
            pano_summary_base(ix->prefix, i, names[i], 256);
        bases[i] = names[i];
    }
}

/* Delete the partitions past their stream's retention (a dry run lists
 * them on stdout). How many, or -1 when Elasticsearch did not answer. */
long upkeep_retention_pass(indexer *ix, bool dry_run)
{
    char names[PANO_N_STREAMS][256], snames[PANO_N_STREAMS][256], path[1024], *answer;
    const char *bases[PANO_N_STREAMS], *sbases[PANO_N_STREAMS];
    stream_bases(ix, names, bases);
    summary_bases(ix, snames, sbases);
    snprintf(path, sizeof path,
             "/_cat/indices/%s*,%s-*,%s-*?h=index&format=json&expand_wildcards=open,closed",
             ix->prefix, ix->fallback_index, ix->dead_letter_index);
    long st;
    pano_json *list = es_get_json(ix, path, &st);
    if (!list || list->type != PANO_JSON_ARRAY) {
        pano_warn("retention: cannot list the indices (HTTP %ld)", st);
        pano_json_free(list);
        return -1;
    }
    long n = 0;
    double now = pano_now();
    for (size_t i = 0; i < pano_json_len(list); i++) {
        const char *index = pano_json_get_str(pano_json_at(list, i), "index");
        if (!index || !(pano_retention_expired(index, bases, ix->policies, now) ||
                        pano_retention_expired(index, sbases, ix->policies, now)))
            continue;
        n++;
        if (dry_run) {
            printf("%s\n", index);
            continue;
        }
        snprintf(path, sizeof path, "/%s", index); /* a name of pano's own form */
        st = es_send(ix, "DELETE", path, NULL, &answer);
        if (st == 200 || st == 404) {
            pano_info("retention: deleted index %s", index);
            ix->n.indices_deleted += st == 200;
        } else {
            pano_warn("retention: cannot delete index %s (HTTP %ld): %.200s", index, st,
                      answer ? answer : "");
            n--;
        }
        free(answer);
    }
    pano_json_free(list);
    return n;
}

bool upkeep_any_retention(const indexer *ix)
{
    for (int i = 0; i < PANO_N_STREAMS; i++)
        if (ix->policies[i].retention > 0)
            return true;
    return false;
}

/* How many shards the cluster allows: cluster.max_shards_per_node times the
 * data nodes (in *data_nodes); 0 when Elasticsearch does not say. */
static long cluster_shard_limit(indexer *ix, long *data_nodes)
{
    long per_node = 0, nodes = 0, st;
    pano_json *j =
        es_get_json(ix, "/_cluster/settings?include_defaults=true&flat_settings=true", &st);
    /* transient overrides persistent, which overrides the default */
    static const char *const levels[] = {"transient", "persistent", "defaults"};
    for (size_t i = 0; i < 3 && j && !per_node; i++) {
        const char *v = pano_json_get_str(pano_json_get(j, levels[i]),
                                          "cluster.max_shards_per_node");
        per_node = v ? atol(v) : 0;
    }
    pano_json_free(j);
    j = es_get_json(ix, "/_cluster/health?filter_path=number_of_data_nodes", &st);
    int64_t v = 0;
    if (j && pano_json_get_int(j, "number_of_data_nodes", &v))
        nodes = (long)v;
    pano_json_free(j);
    *data_nodes = nodes;
    return per_node * nodes;
}

/* Refuse a configuration whose partitions, within their retention, would
 * need more shards than the cluster allows (it would stop creating indices,
 * and so indexing, when it reached the limit). -1 to refuse. */
int upkeep_check_shard_budget(indexer *ix)
{
    int shards = (int)pano_config_int(ix->cfg, "pano.indexer.shards");
    long nodes = 0, limit = cluster_shard_limit(ix, &nodes);
    if (limit <= 0) {
        pano_warn("cannot read the cluster's shard limit: the shard budget is not checked");
        return 0;
    }
    int replicas = ix->replicas == PANO_REPLICAS_AUTO ? (nodes > 1) : ix->replicas;
    long per_year, kept = pano_retention_shards(ix->policies, shards, replicas,
                                                ix->summarize, &per_year);
    if (kept > limit) {
        pano_error("pano.indexer.retention and .partition keep up to %ld shards (%d primary "
                   "and %d replica per index), more than the %ld the cluster allows "
                   "(cluster.max_shards_per_node x data nodes): use longer periods, shorter "
                   "retention, or fewer shards or replicas (docs/operating.md, sizing)",
                   kept, shards, replicas, limit);
        return -1;
    }
    if (per_year > 0)
        pano_info("shards: %ld within retention; the streams kept forever add %ld a year, of "
                  "the %ld the cluster allows",
                  kept, per_year, limit);
    return 0;
}

/* Create the partitions of now and of the next hour ahead of their events:
 * Elasticsearch takes a second or two to create an index, and the first
 * batch of a new period would wait that long, with every event in it. An
 * index that exists already is left as it is. */
#define PREPARE_AHEAD 3600
void upkeep_prepare_partitions(indexer *ix)
{
    char names[2 * PANO_N_STREAMS][256], index[256], last[256] = "", path[300];
    const char *bases[2 * PANO_N_STREAMS];
    double now = pano_now();
    ix->last_prepared = pano_monotonic();
    if (!ix->indices_ready)
        return; /* without the templates, an index would get no mappings */
    stream_bases(ix, names, bases);
    summary_bases(ix, names + PANO_N_STREAMS, bases + PANO_N_STREAMS);
    for (int i = 0; i < 2 * PANO_N_STREAMS; i++)
        for (double t = now; *bases[i] && t <= now + PREPARE_AHEAD; t += PREPARE_AHEAD) {
            pano_bulk_partition(bases[i], ix->policies[i % PANO_N_STREAMS].period, t, index,
                                sizeof index);
            if (strcmp(index, last) == 0)
                continue;
            snprintf(last, sizeof last, "%s", index);
            snprintf(path, sizeof path, "/%s", index);
            char *answer;
            long st = es_send(ix, "PUT", path, NULL, &answer);
            if (st == 0)
                return; /* not answering: the next time, or the bulk requests */
            if (st != 200 && !(st == 400 && answer &&
                               strstr(answer, "resource_already_exists_exception")))
                pano_debug("cannot create %s ahead of its events (HTTP %ld): it will be "
                           "created by them",
                           index, st);
            free(answer);
        }
}

/* ---- summaries compacted ------------------------------------------------------ */

/* Force-merge the i-th index noted without its deleted documents, in the
 * background; asked again later when Elasticsearch did not take it. */
static void compact(indexer *ix, size_t i, double now)
{
    const char *name = ix->compact[i].name;
    char path[512], *answer = NULL;
    long st;
    if (!ix->compact[i].configured) { /* an index made before its template said so */
        snprintf(path, sizeof path, "/%s/_settings", name);
        st = es_send(ix, "PUT", path, "{\"index.merge.policy.expunge_deletes_allowed\":0}",
                     &answer);
        free(answer);
        answer = NULL;
        ix->compact[i].configured = st == 200;
    }
    /* a merge keeps what came after the last commit (Elasticsearch's safe
     * commit): committed first */
    snprintf(path, sizeof path, "/%s/_flush", name);
    st = es_send(ix, "POST", path, NULL, &answer);
    free(answer);
    answer = NULL;
    snprintf(path, sizeof path,
             "/%s/_forcemerge?only_expunge_deletes=true&wait_for_completion=false", name);
    if (st == 200)
        st = es_send(ix, "POST", path, NULL, &answer);
    if (st == 200 || st == 404) { /* 404: deleted meanwhile (retention) */
        ix->n.compactions += st == 200;
        ix->compact[i].pending = false;
        if (st == 200)
            pano_info("summaries: compacting %s", name);
    } else {
        pano_warn("summaries: cannot compact %s (HTTP %ld): %.200s", name, st,
                  answer ? answer : "");
        ix->compact[i].first = ix->compact[i].last = now;
    }
    free(answer);
}

void upkeep_note_update(indexer *ix, const char *index, double now)
{
    size_t i = 0;
    while (i < ix->ncompact && strcmp(ix->compact[i].name, index) != 0)
        i++;
    if (i == ix->ncompact && ix->ncompact < COMPACT_INDICES)
        ix->ncompact++;
    else if (i == ix->ncompact) { /* full: an index compacted, else the longest quiet, makes room */
        i = 0;
        for (size_t k = 1; k < ix->ncompact; k++)
            if (ix->compact[i].pending &&
                (!ix->compact[k].pending || ix->compact[k].last < ix->compact[i].last))
                i = k;
        if (ix->compact[i].pending)
            compact(ix, i, now);
    }
    if (strcmp(ix->compact[i].name, index) != 0) {
        snprintf(ix->compact[i].name, sizeof ix->compact[i].name, "%s", index);
        ix->compact[i].configured = ix->compact[i].pending = false;
    }
    if (!ix->compact[i].pending)
        ix->compact[i].first = now;
    ix->compact[i].pending = true;
    ix->compact[i].last = now;
}

void upkeep_compact_summaries(indexer *ix, double now, bool all)
{
    if (!ix->es_up) /* asked once it answers again; at shutdown, not waited for */
        return;
    for (size_t i = 0; i < ix->ncompact && ix->es_up; i++)
        if (ix->compact[i].pending &&
            (all || now - ix->compact[i].last >= UPKEEP_COMPACT_QUIET ||
             now - ix->compact[i].first >= UPKEEP_COMPACT_EVERY))
            compact(ix, i, now);
}
