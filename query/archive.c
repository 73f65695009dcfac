/*
 * archive.c - a workflow in one file: its events, as the store pano-query
 * reads holds them, written into a new embedded-store file (store.h).
 *
 * From the embedded store the rows are copied (pano_store_export). From
 * Elasticsearch the workflows' documents are read in pages of a point in
 * time, in the order they were stored (by ts, then as indexed: events of
 * one time are in one shard, and their order there decides which is a
 * job's latest, as it does for pano-query), and put, as their publishers
 * sent them, into a scratch store beside the file, which is then exported
 * the same way: what pano-indexer added is left out (@timestamp; the delta
 * it gave samples that came without one, and the closing samples it made),
 * since whichever store the file is imported into makes those again.
 * Redacting, from either store, goes through the scratch store too.
 */
#include "es.h"
#include "log.h"
#include "mem.h"
#include "query.h"
#include "redact.h"
#include "store.h"
#include "store_es.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE 1000
#define MAX_DEAD_LETTERS 10000

/* The published event of a document, or NULL for one pano-indexer made. */
static pano_json *as_published(const pano_json *source)
{
    pano_json *ev = pano_json_clone(source);
    pano_json_remove(ev, "@timestamp");
    const char *by = pano_json_get_str(ev, "delta_source");
    if (by && strcmp(by, "indexer") == 0) {
        const char *sample = pano_json_get_str(ev, "sample");
        if (sample && strcmp(sample, "closing") == 0) {
            pano_json_free(ev);
            return NULL;
        }
        static const char *const made[] = {"delta", "delta_source", "delta_offset",
                                           "delta_after_end"};
        for (size_t i = 0; i < sizeof made / sizeof *made; i++)
            pano_json_remove(ev, made[i]);
    }
    return ev;
}

/* The workflows wfs[0..n), NULL-terminated, into *all (a list of its own). */
static void workflows_of(const char *const *wfs, size_t n, char ***all, size_t *nall)
{
    *all = pano_calloc(n + 1, sizeof **all);
    for (*nall = 0; *nall < n; (*nall)++)
        (*all)[*nall] = pano_strdup(wfs[*nall]);
}

/* The workflows in Elasticsearch and their sub-workflows (whose events
 * name one of them as root_xwf_id), NULL-terminated, into *all. */
static int with_subworkflows(pano_query *q, const char *const *wfs, size_t n, char ***all,
                             size_t *nall, char *err, size_t errlen)
{
    workflows_of(wfs, n, all, nall);
    pano_json *body = pano_json_object();
    pano_json_set_int(body, "size", 0);
    pano_json_set(body, "query", store_terms("root_xwf_id", (const char *const *)*all));
    pano_json *t = pano_json_set_object(pano_json_set_object(pano_json_set_object(body, "aggs"),
                                                             "w"),
                                        "terms");
    pano_json_set_str(t, "field", "wf_uuid");
    pano_json_set_int(t, "size", 10000);
    pano_json *answer = store_search(q, NULL, STORE_EVENT_STREAMS, body, err, errlen);
    if (!answer)
        return -1;
    const pano_json *b = pano_json_get_array(store_agg(pano_json_get(answer, "aggregations"), "w"),
                                             "buckets");
    for (size_t i = 0; i < pano_json_len(b); i++) {
        const char *wf = pano_json_get_str(pano_json_at(b, i), "key");
        bool known = false;
        for (size_t k = 0; wf && k < *nall && !known; k++)
            known = strcmp((*all)[k], wf) == 0;
        if (wf && !known) {
            *all = pano_reallocarray(*all, *nall + 2, sizeof **all);
            (*all)[(*nall)++] = pano_strdup(wf);
            (*all)[*nall] = NULL;
        }
    }
    pano_json_free(answer);
    return 0;
}

/* A point in time over the event streams' indices: its id, or NULL. */
static char *open_pit(pano_query *q, char *err, size_t errlen)
{
    char *path = pano_asprintf("/%s*,-%ssummary-*,-%s%s-*/_pit?keep_alive=2m"
                               "&ignore_unavailable=true",
                               q->prefix, q->prefix, q->prefix,
                               pano_streams[PANO_STREAM_DEAD_LETTER]);
    pano_json *empty = pano_json_object();
    pano_json *answer = store_post(q, path, empty, NULL, err, errlen);
    pano_json_free(empty);
    free(path);
    const char *id = answer ? pano_json_get_str(answer, "id") : NULL;
    char *pit = id ? pano_strdup(id) : NULL;
    if (answer && !pit)
        snprintf(err, errlen, "Elasticsearch opened no point in time");
    pano_json_free(answer);
    return pit;
}

static void close_pit(pano_query *q, const char *pit)
{
    pano_json *body = pano_json_object();
    pano_json_set_str(body, "id", pit);
    char *text = pano_json_serialize(body, NULL);
    char err[256];
    if (pano_es_send(q->es, "DELETE", "/_pit", text, NULL, err, sizeof err) != 200)
        pano_debug("closing the point in time: %s", err); /* it expires anyway */
    free(text);
    pano_json_free(body);
}

/* One event into the scratch store, redacted when asked. */
static int put(pano_store *s, pano_json *ev, pano_redactor *r, char *err, size_t errlen)
{
    if (r)
        pano_redact_event(r, ev);
    size_t len;
    char *json = pano_json_serialize(ev, &len);
    char why[512];
    pano_store_outcome o = pano_store_queue(s, NULL, json, len, why, sizeof why);
    free(json);
    if (o == PANO_STORE_FAILED) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    if (o == PANO_STORE_REJECTED)
        pano_warn("an event of the store was refused, kept as a dead letter: %s", why);
    return 0;
}

/* Every event of the workflows all (NULL-terminated) in Elasticsearch
 * into the scratch store. */
static int copy_events(pano_query *q, pano_store *s, char **all, pano_redactor *r, char *err,
                       size_t errlen)
{
    char *pit = open_pit(q, err, errlen);
    if (!pit)
        return -1;
    pano_json *after = NULL;
    int rc = 0;
    for (;;) {
        pano_json *body = pano_json_object();
        pano_json_set_int(body, "size", PAGE);
        pano_json_set_bool(body, "track_total_hits", false);
        pano_json_set(body, "query", store_terms("wf_uuid", (const char *const *)all));
        pano_json *p = pano_json_set_object(body, "pit");
        pano_json_set_str(p, "id", pit);
        pano_json_set_str(p, "keep_alive", "2m");
        pano_json_set(body, "sort", store_literal("[{\"ts\":\"asc\"},{\"_shard_doc\":\"asc\"}]"));
        if (after)
            pano_json_set(body, "search_after", after);
        after = NULL;
        pano_json *answer = store_post(q, "/_search", body, NULL, err, errlen);
        pano_json_free(body);
        if (!answer) {
            rc = -1;
            break;
        }
        const char *next = pano_json_get_str(answer, "pit_id");
        if (next && strcmp(next, pit) != 0) {
            free(pit);
            pit = pano_strdup(next);
        }
        const pano_json *hits = pano_json_get_array(pano_json_get(answer, "hits"), "hits");
        size_t got = pano_json_len(hits);
        for (size_t i = 0; i < got; i++) {
            const pano_json *h = pano_json_at(hits, i);
            pano_json *ev = as_published(pano_json_get(h, "_source"));
            if (!ev)
                continue;
            rc = put(s, ev, r, err, errlen);
            pano_json_free(ev);
            if (rc < 0)
                break;
        }
        if (rc == 0 && got == PAGE)
            after = pano_json_clone(pano_json_get(pano_json_at(hits, got - 1), "sort"));
        pano_json_free(answer);
        if (!after)
            break;
    }
    close_pit(q, pit);
    free(pit);
    return rc;
}

/* The workflows' dead letters, as they came, with their reasons. */
static int copy_dead_letters(pano_query *q, pano_store *s, char **all, size_t n, char *err,
                             size_t errlen)
{
    pano_rejected *r;
    size_t got;
    if (pano_query_rejected_of(q, (const char *const *)all, n, MAX_DEAD_LETTERS, &r, &got, err,
                               errlen) < 0)
        return -1;
    if (got == MAX_DEAD_LETTERS)
        pano_warn("more than %d dead letters: the newest %d exported", MAX_DEAD_LETTERS,
                  MAX_DEAD_LETTERS);
    int rc = 0;
    for (size_t i = got; i-- > 0 && rc == 0;) { /* oldest first */
        char why[512];
        if (pano_store_keep_refused(s, r[i].ts, r[i].reason, *r[i].event ? r[i].event : NULL,
                                    *r[i].event_id ? r[i].event_id : NULL,
                                    *r[i].wf_uuid ? r[i].wf_uuid : NULL, r[i].original,
                                    strlen(r[i].original), why,
                                    sizeof why) == PANO_STORE_FAILED) {
            snprintf(err, errlen, "%s", why);
            rc = -1;
        }
    }
    pano_rejected_free(r, got);
    return rc;
}

typedef struct {
    pano_store *s;
    pano_redactor *r;
    char *err;
    size_t errlen;
} feed_ctx;

static int feed_event(const char *event, const char *event_id, const char *doc, size_t len,
                      void *user)
{
    (void)event;
    (void)event_id;
    feed_ctx *f = user;
    char perr[200];
    pano_json *ev = pano_json_parse(doc, len, 0, perr, sizeof perr);
    if (!ev) {
        snprintf(f->err, f->errlen, "an event of the store does not parse: %s", perr);
        return -1;
    }
    int rc = put(f->s, ev, f->r, f->err, f->errlen);
    pano_json_free(ev);
    return rc;
}

/* Remove the scratch store: its files, then the directory. */
static void remove_scratch(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *p = pano_asprintf("%s/%s", dir, e->d_name);
        unlink(p);
        free(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* The workflows' events put into a scratch store beside the file (from
 * Elasticsearch, or redacted from the embedded store), then exported. */
static int export_via_scratch(pano_query *q, const char *const *wfs, size_t n,
                              const char *file, pano_redactor *r, char *err, size_t errlen)
{
    /* (pano_store_export says so too, but only after all the reading) */
    if (access(file, F_OK) == 0) {
        snprintf(err, errlen, "%s exists: name another file, or remove it first", file);
        return -1;
    }
    char **all = NULL;
    size_t nall = 0;
    char *dir = pano_asprintf("%s.scratch-XXXXXX", file);
    pano_config *cfg = pano_config_new(); /* the defaults: no retention */
    pano_store *s = NULL;
    sqlite3 *db = NULL;
    int rc = 0;
    if (q->db) /* the store's own view finds the sub-workflows */
        workflows_of(wfs, n, &all, &nall);
    else
        rc = with_subworkflows(q, wfs, n, &all, &nall, err, errlen);
    if (rc == 0 && !mkdtemp(dir)) {
        snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
        free(dir);
        dir = NULL;
        rc = -1;
    }
    char cfg_err[256];
    if (rc == 0 && pano_config_set(cfg, "pano.hostname", "export", PANO_CFG_CLI, cfg_err,
                                   sizeof cfg_err) < 0) {
        snprintf(err, errlen, "%s", cfg_err);
        rc = -1;
    }
    if (rc == 0 && !(s = pano_store_open_writer(cfg, dir, err, errlen)))
        rc = -1;
    if (rc == 0)
        rc = pano_store_begin(s, err, errlen);
    feed_ctx f = {s, r, err, errlen};
    if (rc == 0 && q->db)
        rc = pano_store_each_event(q->db, (const char *const *)all, nall, feed_event, &f, err,
                                   errlen);
    else if (rc == 0)
        rc = copy_events(q, s, all, r, err, errlen);
    /* a dead letter is a message as it came, which cannot be redacted */
    if (rc == 0 && !q->db && !r)
        rc = copy_dead_letters(q, s, all, nall, err, errlen);
    if (rc == 0 && pano_store_commit(s, err, errlen) != 0)
        rc = -1;
    pano_store_close(s);
    const char *paths[] = {dir};
    if (rc == 0 && !(db = pano_store_open_reader(paths, 1, err, errlen)))
        rc = -1;
    if (rc == 0) {
        char *source = q->db ? pano_strdup("embedded store")
                             : pano_asprintf("Elasticsearch, indices %s*", q->prefix);
        if (r) {
            char *redacted = pano_asprintf("%s; redacted", source);
            free(source);
            source = redacted;
        }
        rc = pano_store_export(db, (const char *const *)all, nall, file, source, err, errlen);
        free(source);
    }
    if (db)
        sqlite3_close(db);
    if (dir)
        remove_scratch(dir);
    free(dir);
    pano_config_free(cfg);
    for (size_t i = 0; i < nall; i++)
        free(all[i]);
    free(all);
    return rc;
}

int pano_query_export(pano_query *q, const char *const *wfs, size_t n, const char *file,
                      pano_redactor *r, char *err, size_t errlen)
{
    if (q->db && !r)
        return pano_store_export(q->db, wfs, n, file, "embedded store", err, errlen);
    return export_via_scratch(q, wfs, n, file, r, err, errlen);
}
