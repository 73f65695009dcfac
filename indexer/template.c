#include "template.h"

#include "buf.h"
#include "event.h"
#include "json.h"
#include "mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYWORD_IGNORE_ABOVE 8191 /* known string fields */
#define DYNAMIC_IGNORE_ABOVE 1024 /* strings nobody described */

static const char *first_type(const pano_json *schema)
{
    pano_json *t = pano_json_get(schema, "type");
    if (!t)
        return NULL;
    if (t->type == PANO_JSON_STRING)
        return t->u.string.text;
    if (t->type == PANO_JSON_ARRAY)
        for (size_t i = 0; i < pano_json_len(t); i++) {
            pano_json *v = pano_json_at(t, i);
            if (v->type == PANO_JSON_STRING && strcmp(v->u.string.text, "null") != 0)
                return v->u.string.text;
        }
    return NULL;
}

static pano_json *leaf(const char *type)
{
    pano_json *m = pano_json_object();
    pano_json_set_str(m, "type", type);
    if (strcmp(type, "keyword") == 0)
        pano_json_set_int(m, "ignore_above", KEYWORD_IGNORE_ABOVE);
    return m;
}

/* A field of that type that is not searched (kept, or only aggregated). */
static pano_json *not_searched(const char *type)
{
    pano_json *m = leaf(type);
    pano_json_set_bool(m, "index", false);
    return m;
}

/* A workflow's UUID: a keyword matched without case. */
static pano_json *wf_keyword(void)
{
    pano_json *m = leaf("keyword");
    pano_json_set_str(m, "normalizer", "pano_lowercase");
    return m;
}

static bool is_object_mapping(const pano_json *m)
{
    const char *t = pano_json_get_str(m, "type");
    return pano_json_get(m, "properties") || (t && strcmp(t, "object") == 0);
}

static void add_properties(pano_json *props, const pano_json *schema_props);

/* The mapping of one schema node, or NULL when the schema says too little
 * (the dynamic rules then apply). */
static pano_json *schema_to_mapping(const pano_json *schema)
{
    if (!schema || schema->type != PANO_JSON_OBJECT)
        return NULL;
    const char *es = pano_json_get_str(schema, "x-es-type");
    if (es)
        return leaf(es);
    const char *type = first_type(schema);
    pano_json *props = pano_json_get(schema, "properties");
    if (!type) {
        pano_json *e = pano_json_get(schema, "enum");
        if (e && e->type == PANO_JSON_ARRAY && pano_json_len(e) > 0) {
            pano_json *v = pano_json_at(e, 0);
            type = v->type == PANO_JSON_STRING ? "string"
                   : v->type == PANO_JSON_INT  ? "integer"
                   : v->type == PANO_JSON_DOUBLE ? "number"
                   : v->type == PANO_JSON_BOOL ? "boolean"
                                               : NULL;
        } else if (props)
            type = "object";
    }
    if (!type)
        return NULL;
    if (strcmp(type, "string") == 0) {
        const char *format = pano_json_get_str(schema, "format");
        return leaf(format && strcmp(format, "date-time") == 0 ? "date" : "keyword");
    }
    if (strcmp(type, "integer") == 0)
        return leaf("long");
    if (strcmp(type, "number") == 0)
        return leaf("double");
    if (strcmp(type, "boolean") == 0)
        return leaf("boolean");
    if (strcmp(type, "array") == 0)
        return schema_to_mapping(pano_json_get(schema, "items"));
    if (strcmp(type, "object") == 0) {
        pano_json *m = pano_json_object();
        if (props && props->type == PANO_JSON_OBJECT && pano_json_len(props) > 0)
            add_properties(pano_json_set_object(m, "properties"), props);
        else
            pano_json_set_str(m, "type", "object");
        return m;
    }
    return NULL;
}

static void merge_props(pano_json *dst, const pano_json *src, const char *path, pano_buf *warn);

/* One mapping for a field that two schemas describe: a is amended in place
 * (NULL returned), or the mapping that replaces it is returned. */
static pano_json *merge_mapping(pano_json *a, const pano_json *b, const char *path,
                                pano_buf *warn)
{
    bool oa = is_object_mapping(a), ob = is_object_mapping(b);
    if (oa && ob) {
        pano_json *pb = pano_json_get(b, "properties");
        if (!pb)
            return NULL;
        pano_json *pa = pano_json_get(a, "properties");
        if (!pa) {
            pano_json_remove(a, "type");
            pa = pano_json_set_object(a, "properties");
        }
        merge_props(pa, pb, path, warn);
        return NULL;
    }
    if (oa != ob) {
        if (warn)
            pano_buf_appendf(warn, "field %s is an object in one schema and a value in another\n",
                             path);
        return NULL;
    }
    const char *ta = pano_json_get_str(a, "type"), *tb = pano_json_get_str(b, "type");
    if (!ta || !tb || strcmp(ta, tb) == 0)
        return NULL;
    pano_json *m;
    if ((strcmp(ta, "long") == 0 || strcmp(ta, "double") == 0) &&
        (strcmp(tb, "long") == 0 || strcmp(tb, "double") == 0))
        m = leaf("double");
    else if (strcmp(ta, "text") == 0 || strcmp(tb, "text") == 0) {
        m = leaf("text");
        pano_json *kw = pano_json_set_object(pano_json_set_object(m, "fields"), "keyword");
        pano_json_set_str(kw, "type", "keyword");
        pano_json_set_int(kw, "ignore_above", DYNAMIC_IGNORE_ABOVE);
    } else
        m = leaf("keyword");
    return m;
}

static void merge_props(pano_json *dst, const pano_json *src, const char *path, pano_buf *warn)
{
    for (size_t i = 0; i < pano_json_len(src); i++) {
        const char *key = pano_json_key_at(src, i);
        char *sub = pano_asprintf("%s%s%s", path, *path ? "." : "", key);
        pano_json *had = pano_json_get(dst, key);
        pano_json *m = had ? merge_mapping(had, pano_json_at(src, i), sub, warn)
                           : pano_json_clone(pano_json_at(src, i));
        if (m)
            pano_json_set(dst, key, m);
        free(sub);
    }
}

static void add_properties(pano_json *props, const pano_json *schema_props)
{
    for (size_t i = 0; i < pano_json_len(schema_props); i++) {
        pano_json *m = schema_to_mapping(pano_json_at(schema_props, i));
        if (!m)
            continue;
        pano_json *one = pano_json_object();
        pano_json_set(one, pano_json_key_at(schema_props, i), m);
        merge_props(props, one, "", NULL);
        pano_json_free(one);
    }
}

/* Give every leaf of props the type the union has at the same path. */
static void apply_union(pano_json *props, const pano_json *uprops)
{
    for (size_t i = 0; i < pano_json_len(props); i++) {
        const char *key = pano_json_key_at(props, i);
        pano_json *u = pano_json_get(uprops, key), *m = pano_json_at(props, i);
        if (!u)
            continue;
        bool om = is_object_mapping(m), ou = is_object_mapping(u);
        if (om && ou) {
            pano_json *p = pano_json_get(m, "properties"), *up = pano_json_get(u, "properties");
            if (p && up)
                apply_union(p, up);
        } else if (!om && !ou)
            pano_json_set(props, key, pano_json_clone(u));
    }
}

/* The file a $ref names, "../alert.schema.json" from events/x.schema.json:
 * a path relative to the referencing file, resolved to one of the set. */
static const pano_schema_file *ref_target(const pano_schema_file *schemas, const char *from,
                                          const char *ref)
{
    char path[512];
    const char *slash = strrchr(from, '/');
    int dir = slash ? (int)(slash - from) : 0;
    if (strncmp(ref, "../", 3) == 0 && dir > 0) {
        const char *up = memrchr(from, '/', (size_t)dir);
        snprintf(path, sizeof path, "%.*s%s", up ? (int)(up - from + 1) : 0, from, ref + 3);
    } else
        snprintf(path, sizeof path, "%.*s%s%s", dir, from, dir ? "/" : "", ref);
    for (size_t i = 0; schemas[i].path; i++)
        if (strcmp(schemas[i].path, path) == 0)
            return &schemas[i];
    return NULL;
}

/* Properties from a schema document: its own, those of inline allOf parts,
 * and those of the files its allOf $refs name (the envelope is added to
 * every family anyway; a shared part such as alert.schema.json is not). */
static void schema_properties(pano_json *props, const pano_json *schema,
                              const pano_schema_file *schemas, const char *path, int depth)
{
    pano_json *p = pano_json_get(schema, "properties");
    if (p && p->type == PANO_JSON_OBJECT)
        add_properties(props, p);
    pano_json *all = pano_json_get(schema, "allOf");
    for (size_t i = 0; all && all->type == PANO_JSON_ARRAY && i < pano_json_len(all); i++) {
        const pano_json *part = pano_json_at(all, i);
        const char *ref = pano_json_get_str(part, "$ref");
        if (!ref) {
            schema_properties(props, part, schemas, path, depth);
            continue;
        }
        const pano_schema_file *target = ref_target(schemas, path, ref);
        if (!target || strcmp(target->path, "envelope.schema.json") == 0 || depth > 4)
            continue;
        pano_json *doc = pano_json_parse(target->text, strlen(target->text),
                                         PANO_JSON_DEFAULT_DEPTH, NULL, 0);
        if (doc)
            schema_properties(props, doc, schemas, target->path, depth + 1);
        pano_json_free(doc);
    }
}

int pano_replicas_parse(const char *value)
{
    if (strcmp(value, "auto") == 0)
        return PANO_REPLICAS_AUTO;
    if (*value < '0' || *value > '9')
        return -2; /* strtol would take " 1" and "-1" */
    char *end;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (errno || end == value || *end || n < 0 || n > 16)
        return -2;
    return (int)n;
}

/* The kinds of index: events of a family, events of every family (the
 * fallback index), dead letters, summaries. */
typedef enum { INDEX_EVENTS, INDEX_MIXED, INDEX_DEAD_LETTERS, INDEX_SUMMARIES } index_kind;

static pano_json *settings(const pano_template_options *opt, index_kind kind)
{
    pano_json *s = pano_json_object();
    pano_json_set_int(s, "number_of_shards", opt->shards);
    if (opt->replicas == PANO_REPLICAS_AUTO)
        pano_json_set_str(s, "auto_expand_replicas", "0-1");
    else
        pano_json_set_int(s, "number_of_replicas", opt->replicas);
    if (kind != INDEX_DEAD_LETTERS)
        pano_json_set_str(s, "refresh_interval", opt->refresh_interval);
    pano_json_set_int(pano_json_set_object(pano_json_set_object(s, "mapping"), "total_fields"),
                      "limit", opt->total_fields_limit);
    if (kind == INDEX_SUMMARIES) /* compacted whole (upkeep.h): any deleted copy goes */
        pano_json_set_int(pano_json_set_object(pano_json_set_object(s, "merge"), "policy"),
                          "expunge_deletes_allowed", 0);
    pano_json *norm = pano_json_set_object(
        pano_json_set_object(pano_json_set_object(s, "analysis"), "normalizer"),
        "pano_lowercase");
    pano_json_set_str(norm, "type", "custom");
    pano_json_append(pano_json_set_array(norm, "filter"), pano_json_string("lowercase"));
    return s;
}

static pano_json *dynamic_rule(const char *name, const char *match, const char *type)
{
    pano_json *r = pano_json_object();
    pano_json *d = pano_json_set_object(r, name);
    pano_json_set_str(d, "match_mapping_type", match);
    pano_json *m = pano_json_set_object(d, "mapping");
    pano_json_set_str(m, "type", type);
    if (strcmp(type, "keyword") == 0)
        pano_json_set_int(m, "ignore_above", DYNAMIC_IGNORE_ABOVE);
    return r;
}

/* The envelope fields the indexer relies on, whatever the schemas say. */
static void fixed_fields(pano_json *props)
{
    pano_json_set(props, "@timestamp", leaf("date"));
    pano_json_set(props, "wf_uuid", wf_keyword());
    pano_json_set(props, "event", leaf("keyword"));
    pano_json_set(props, "event_id", leaf("keyword"));
}

/* Dead letters and summaries: no dynamic fields at all. Mixed (the
 * fallback index, where events of every family meet): fields no schema
 * knows are keywords, which take any value, so one family's number cannot
 * refuse another's string. */
static char *template_body(const pano_template_options *opt, const char *const *patterns,
                           const pano_json *props, index_kind kind)
{
    bool mixed = kind == INDEX_MIXED;
    pano_json *t = pano_json_object();
    pano_json *pat = pano_json_set_array(t, "index_patterns");
    for (size_t i = 0; patterns[i]; i++)
        pano_json_append(pat, pano_json_string(patterns[i]));
    pano_json_set_int(t, "priority", 200);
    pano_json *meta = pano_json_set_object(t, "_meta");
    pano_json_set_str(meta, "generator", "pano-indexer (from schemas/)");
    pano_json *tt = pano_json_set_object(t, "template");
    pano_json_set(tt, "settings", settings(opt, kind));
    pano_json *m = pano_json_set_object(tt, "mappings");
    if (kind == INDEX_DEAD_LETTERS || kind == INDEX_SUMMARIES)
        pano_json_set_bool(m, "dynamic", false);
    else {
        pano_json_set_bool(m, "date_detection", false);
        pano_json_set_bool(m, "numeric_detection", false);
        pano_json *dt = pano_json_set_array(m, "dynamic_templates");
        pano_json_append(dt, dynamic_rule("pano_strings", "string", "keyword"));
        pano_json_append(dt, dynamic_rule("pano_longs", "long", mixed ? "keyword" : "long"));
        pano_json_append(dt,
                         dynamic_rule("pano_doubles", "double", mixed ? "keyword" : "double"));
        if (mixed)
            pano_json_append(dt, dynamic_rule("pano_booleans", "boolean", "keyword"));
    }
    pano_json_set(m, "properties", pano_json_clone(props));
    char *body = pano_json_serialize(t, NULL);
    pano_json_free(t);
    return body;
}

static const char *schema_event_name(const char *file, char *out, size_t size)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    snprintf(out, size, "%s", base);
    char *suffix = strstr(out, ".schema.json");
    if (suffix)
        *suffix = '\0';
    return out;
}

int pano_templates_build(const pano_schema_file *schemas, const pano_template_options *opt,
                         pano_template **out, size_t *count, char **warnings, char *err,
                         size_t errlen)
{
    size_t nfam = 0;
    while (pano_event_families[nfam])
        nfam++;
    pano_json *envelope = pano_json_object();
    pano_json **fam = pano_calloc(nfam, sizeof *fam);
    for (size_t f = 0; f < nfam; f++)
        fam[f] = pano_json_object();
    pano_buf warn = {0};
    int rc = 0;

    for (size_t i = 0; schemas[i].path; i++) {
        char why[200], name[256];
        pano_json *s = pano_json_parse(schemas[i].text, strlen(schemas[i].text),
                                       PANO_JSON_DEFAULT_DEPTH, why, sizeof why);
        if (!s || s->type != PANO_JSON_OBJECT) {
            snprintf(err, errlen, "schema %s: %s", schemas[i].path, s ? "not an object" : why);
            pano_json_free(s);
            rc = -1;
            goto done;
        }
        schema_event_name(schemas[i].path, name, sizeof name);
        if (strcmp(schemas[i].path, "envelope.schema.json") == 0)
            schema_properties(envelope, s, schemas, schemas[i].path, 0);
        else if (strncmp(schemas[i].path, "families/", 9) == 0) {
            /* families/<family>.schema.json: fields of a family's events
             * from other tools (pegasus-monitord's stampede.*) */
            for (size_t f = 0; f < nfam; f++)
                if (strcmp(pano_event_families[f], name) == 0)
                    schema_properties(fam[f], s, schemas, schemas[i].path, 0);
        } else if (strchr(schemas[i].path, '/') || strchr(name, '.')) {
            /* an event's schema (a part shared by events, such as
             * alert.schema.json, counts through the events that name it) */
            const char *family = pano_event_family(name);
            for (size_t f = 0; f < nfam; f++)
                if (strcmp(pano_event_families[f], family) == 0)
                    schema_properties(fam[f], s, schemas, schemas[i].path, 0);
        }
        pano_json_free(s);
    }

    /* Every family has the envelope; then one type per field across all. */
    pano_json *all = pano_json_object();
    for (size_t f = 0; f < nfam; f++) {
        pano_json *p = pano_json_clone(envelope);
        merge_props(p, fam[f], "", &warn);
        pano_json_free(fam[f]);
        fam[f] = p;
        fixed_fields(fam[f]);
        merge_props(all, fam[f], "", &warn);
    }
    for (size_t f = 0; f < nfam; f++) {
        apply_union(fam[f], all);
        fixed_fields(fam[f]);
    }
    fixed_fields(all);

    /* One template per stream (partition.h), for its partitions
     * <base>-<period>: the families, the samples (kickstart's fields), the
     * fallback index (every family's), the dead letters, then one for the
     * partitions of every summary stream. */
    size_t nt = nfam + 4;
    pano_template *t = pano_calloc(nt, sizeof *t);
    for (size_t f = 0; f <= nfam; f++) {
        const char *stream = f < nfam ? pano_event_families[f] : "samples";
        const pano_json *props = fam[f < nfam ? f : 0]; /* kickstart first */
        snprintf(t[f].name, sizeof t[f].name, "%.200s%s", opt->prefix, stream);
        char pattern[260];
        snprintf(pattern, sizeof pattern, "%s-*", t[f].name);
        const char *patterns[] = {pattern, NULL};
        t[f].body = template_body(opt, patterns, props, INDEX_EVENTS);
    }
    char fallback[260];
    snprintf(fallback, sizeof fallback, "%.250s-*", opt->fallback_index);
    const char *fallback_patterns[] = {fallback, NULL};
    snprintf(t[nfam + 1].name, sizeof t[nfam + 1].name, "%s", opt->fallback_index);
    t[nfam + 1].body = template_body(opt, fallback_patterns, all, INDEX_MIXED);

    pano_json *dl = pano_json_object();
    pano_json_set(dl, "@timestamp", leaf("date"));
    pano_json_set(dl, "reason", leaf("text"));
    pano_json_set(dl, "status", leaf("long"));
    pano_json_set(dl, "topic", leaf("keyword"));
    pano_json_set(dl, "partition", leaf("long"));
    pano_json_set(dl, "offset", leaf("long"));
    pano_json_set(dl, "wf_uuid", wf_keyword());
    pano_json_set(dl, "event", leaf("keyword"));
    pano_json_set(dl, "event_id", leaf("keyword"));
    pano_json_set(dl, "source", leaf("keyword"));
    pano_json_set(dl, "routing_key", leaf("keyword"));
    pano_json_set(dl, "exchange", leaf("keyword"));
    pano_json_set(dl, "original_size", leaf("long"));
    pano_json_set(dl, "truncated", leaf("boolean"));
    pano_json_set(dl, "original", not_searched("text"));
    char dead[260];
    snprintf(dead, sizeof dead, "%.250s-*", opt->dead_letter_index);
    const char *dead_patterns[] = {dead, NULL};
    snprintf(t[nfam + 2].name, sizeof t[nfam + 2].name, "%s", opt->dead_letter_index);
    t[nfam + 2].body = template_body(opt, dead_patterns, dl, INDEX_DEAD_LETTERS);
    pano_json_free(dl);
    pano_json_free(all);

    /* The per-run summaries (summary.h), of every summarized stream: only
     * what a reader asks by is mapped: the workflow, the kind, the DAG job
     * and whether the run is open or failed (searched), the _id (sorted by), the
     * earliest event's time (its minimum per kind) and the count of events
     * (summed by pano_query_changes); the rest is kept in _source. */
    pano_json *sp = pano_json_object();
    pano_json *set = pano_json_set_object(pano_json_set_object(sp, "set"), "properties");
    pano_json_set(set, "wf", wf_keyword());
    pano_json_set(set, "id", leaf("keyword"));
    pano_json_set(set, "k", leaf("keyword"));
    pano_json_set(set, "job", leaf("keyword"));
    pano_json_set(set, "open", leaf("boolean"));
    pano_json_set(set, "failed", leaf("boolean"));
    pano_json_set(pano_json_set_object(pano_json_set_object(sp, "min"), "properties"), "t0",
                  not_searched("double"));
    pano_json_set(pano_json_set_object(pano_json_set_object(sp, "add"), "properties"), "n",
                  not_searched("long"));
    char summaries[260];
    snprintf(t[nfam + 3].name, sizeof t[nfam + 3].name, "%.200ssummary", opt->prefix);
    snprintf(summaries, sizeof summaries, "%s-*", t[nfam + 3].name);
    const char *summary_patterns[] = {summaries, NULL};
    t[nfam + 3].body = template_body(opt, summary_patterns, sp, INDEX_SUMMARIES);
    pano_json_free(sp);

    *out = t;
    *count = nt;
done:
    for (size_t f = 0; f < nfam; f++)
        pano_json_free(fam[f]);
    free(fam);
    pano_json_free(envelope);
    if (rc == 0 && warnings)
        *warnings = warn.data ? warn.data : pano_strdup("");
    else
        pano_buf_free(&warn);
    return rc;
}

void pano_templates_free(pano_template *t, size_t count)
{
    if (!t)
        return;
    for (size_t i = 0; i < count; i++)
        free(t[i].body);
    free(t);
}
