#include "schema.h"

#include "mem.h"
#include "regex_ecma.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Bits of the "type" keyword. */
enum {
    T_NULL = 1 << 0,
    T_BOOLEAN = 1 << 1,
    T_INTEGER = 1 << 2,
    T_NUMBER = 1 << 3,
    T_STRING = 1 << 4,
    T_ARRAY = 1 << 5,
    T_OBJECT = 1 << 6,
};

struct pano_schema {
    bool is_false; /* the schema `false`: nothing is valid */
    unsigned types; /* 0: any type */
    const char **required;
    size_t n_required;
    const char **prop_names;
    pano_schema **prop_schemas;
    size_t n_props;
    /* Open-addressing table over properties and required names: entry =
     * index + 1 into names[] (0: empty); names[i] has a schema in
     * name_schemas[i] (NULL: only required) and is required if bit i of
     * required_bits is set. */
    const char **names;
    pano_schema **name_schemas;
    uint64_t *name_hashes;
    size_t n_names;
    uint32_t *table;
    size_t table_size; /* a power of two */
    uint64_t *required_bits; /* n_names bits */
    pano_schema *additional; /* additionalProperties as a schema */
    pano_schema *items;
    bool has_min_items, has_max_items;
    int64_t min_items, max_items;
    const pano_json *enum_values; /* an array, in the schema document */
    const pano_json *const_value;
    bool has_minimum, has_maximum, has_excl_minimum, has_excl_maximum;
    double minimum, maximum, excl_minimum, excl_maximum;
    bool has_min_length, has_max_length;
    int64_t min_length, max_length;
    bool has_pattern;
    regex_t pattern;
    const char *pattern_text;
    uint64_t pattern_id; /* unique in the process, from 1 */
    pano_schema **all_of, **any_of, **one_of;
    size_t n_all_of, n_any_of, n_one_of;
    pano_schema *not_schema;
    pano_schema *ref; /* the target of $ref */
};

/* Patterns compiled so far, to tell them apart (matches). */
static atomic_uint_least64_t patterns_compiled;

typedef struct {
    char *path; /* relative to the set's directory ("events/x.schema.json") */
    pano_json *doc;
} schema_file;

typedef struct {
    const pano_json *node;
    pano_schema *schema;
} cache_entry;

typedef struct {
    char *name;
    pano_schema *schema;
} event_entry;

struct pano_schema_set {
    schema_file *files;
    size_t n_files;
    cache_entry *cache; /* every compiled schema, by its JSON node */
    size_t n_cache, cap_cache;
    event_entry *events; /* sorted by name */
    size_t n_events;
    pano_schema *envelope;
};

#define MAX_FILE_SIZE (4u << 20)
#define MAX_VALIDATION_DEPTH 200

/* ---- errors ------------------------------------------------------------ */

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen,
                                                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- compiling --------------------------------------------------------- */

static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static size_t find_name(const pano_schema *c, const char *key, uint64_t h)
{
    if (!c->table_size)
        return SIZE_MAX;
    size_t mask = c->table_size - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t e = c->table[i];
        if (e == 0)
            return SIZE_MAX;
        if (c->name_hashes[e - 1] == h && strcmp(c->names[e - 1], key) == 0)
            return e - 1;
    }
}

/* Index properties and required names together, for one pass over an
 * object's keys. */
static void build_name_table(pano_schema *c)
{
    size_t max = c->n_props + c->n_required;
    if (max == 0)
        return;
    c->names = pano_calloc(max, sizeof *c->names);
    c->name_schemas = pano_calloc(max, sizeof *c->name_schemas);
    c->name_hashes = pano_calloc(max, sizeof *c->name_hashes);
    c->required_bits = pano_calloc((max + 63) / 64, sizeof *c->required_bits);
    c->table_size = 8;
    while (c->table_size < 2 * max)
        c->table_size *= 2;
    c->table = pano_calloc(c->table_size, sizeof *c->table);
    for (size_t i = 0; i < max; i++) {
        bool required = i >= c->n_props;
        const char *name = required ? c->required[i - c->n_props] : c->prop_names[i];
        uint64_t h = hash_key(name);
        size_t at = find_name(c, name, h);
        if (at == SIZE_MAX) {
            at = c->n_names++;
            c->names[at] = name;
            c->name_hashes[at] = h;
            size_t mask = c->table_size - 1, k = h & mask;
            while (c->table[k])
                k = (k + 1) & mask;
            c->table[k] = (uint32_t)(at + 1);
        }
        if (required)
            c->required_bits[at / 64] |= 1ULL << (at % 64);
        else
            c->name_schemas[at] = c->prop_schemas[i];
    }
}

static pano_schema *compile(pano_schema_set *set, size_t file, const pano_json *node,
                            const char *where, char *err, size_t errlen);

static pano_schema *cached(const pano_schema_set *set, const pano_json *node)
{
    for (size_t i = 0; i < set->n_cache; i++)
        if (set->cache[i].node == node)
            return set->cache[i].schema;
    return NULL;
}

static void remember(pano_schema_set *set, const pano_json *node, pano_schema *s)
{
    if (set->n_cache == set->cap_cache) {
        set->cap_cache = set->cap_cache ? set->cap_cache * 2 : 64;
        set->cache = pano_reallocarray(set->cache, set->cap_cache, sizeof *set->cache);
    }
    set->cache[set->n_cache++] = (cache_entry){node, s};
}

/* Join a relative reference onto the directory of a file, resolving . and ..
 * Returns NULL when it leaves the set's directory. */
static char *join_path(const char *from_file, const char *ref, size_t reflen)
{
    const char *slash = strrchr(from_file, '/');
    size_t dirlen = slash ? (size_t)(slash - from_file) : 0;
    char *joined = pano_malloc(dirlen + 1 + reflen + 1);
    size_t n = 0;
    if (dirlen && !(reflen && ref[0] == '/')) {
        memcpy(joined, from_file, dirlen);
        joined[dirlen] = '/';
        n = dirlen + 1;
    }
    memcpy(joined + n, ref, reflen);
    joined[n + reflen] = '\0';
    /* Normalize segment by segment. */
    char *out = pano_malloc(strlen(joined) + 1);
    size_t o = 0;
    char *save, *seg;
    for (seg = strtok_r(joined, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        if (strcmp(seg, ".") == 0)
            continue;
        if (strcmp(seg, "..") == 0) {
            if (o == 0) {
                free(joined);
                free(out);
                return NULL;
            }
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--; /* the slash */
            continue;
        }
        if (o)
            out[o++] = '/';
        size_t l = strlen(seg);
        memcpy(out + o, seg, l);
        o += l;
    }
    out[o] = '\0';
    free(joined);
    return out;
}

/* Follow a JSON pointer ("/$defs/name") inside a document. */
static const pano_json *follow_pointer(const pano_json *doc, const char *ptr)
{
    const pano_json *cur = doc;
    while (*ptr == '/') {
        ptr++;
        size_t len = strcspn(ptr, "/");
        char token[256];
        size_t t = 0;
        for (size_t i = 0; i < len && t + 1 < sizeof token; i++) {
            if (ptr[i] == '~' && i + 1 < len && (ptr[i + 1] == '0' || ptr[i + 1] == '1')) {
                token[t++] = ptr[i + 1] == '0' ? '~' : '/';
                i++;
            } else
                token[t++] = ptr[i];
        }
        token[t] = '\0';
        if (cur->type == PANO_JSON_OBJECT)
            cur = pano_json_get(cur, token);
        else if (cur->type == PANO_JSON_ARRAY) {
            char *end;
            unsigned long i = strtoul(token, &end, 10);
            cur = *token && *end == '\0' && i < pano_json_len(cur) ? pano_json_at(cur, i) : NULL;
        } else
            cur = NULL;
        if (!cur)
            return NULL;
        ptr += len;
    }
    return *ptr == '\0' ? cur : NULL;
}

static pano_schema *resolve_ref(pano_schema_set *set, size_t file, const char *ref,
                                const char *where, char *err, size_t errlen)
{
    const char *hash = strchr(ref, '#');
    size_t doclen = hash ? (size_t)(hash - ref) : strlen(ref);
    const char *fragment = hash ? hash + 1 : "";
    size_t target = file;
    if (doclen > 0) {
        if (memmem(ref, doclen, "://", 3)) {
            /* An absolute URI: match it against the files' $id. */
            target = SIZE_MAX;
            for (size_t i = 0; i < set->n_files; i++) {
                const char *id = pano_json_get_str(set->files[i].doc, "$id");
                if (id && strlen(id) == doclen && memcmp(id, ref, doclen) == 0)
                    target = i;
            }
        } else {
            char *path = join_path(set->files[file].path, ref, doclen);
            target = SIZE_MAX;
            for (size_t i = 0; path && i < set->n_files; i++)
                if (strcmp(set->files[i].path, path) == 0)
                    target = i;
            free(path);
        }
        if (target == SIZE_MAX) {
            set_err(err, errlen, "%s: $ref '%s': no such schema file", where, ref);
            return NULL;
        }
    }
    const pano_json *node = follow_pointer(set->files[target].doc, fragment);
    if (!node) {
        set_err(err, errlen, "%s: $ref '%s': no such location", where, ref);
        return NULL;
    }
    char there[512];
    snprintf(there, sizeof there, "%s#%s", set->files[target].path, fragment);
    return compile(set, target, node, there, err, errlen);
}

static bool get_count(const pano_json *s, const char *key, int64_t *out, bool *has,
                      const char *where, char *err, size_t errlen)
{
    const pano_json *v = pano_json_get(s, key);
    if (!v)
        return true;
    double d;
    if (!pano_json_get_number(s, key, &d) || d < 0 || d != floor(d) || d > 1e15) {
        set_err(err, errlen, "%s: '%s' must be a non-negative integer", where, key);
        return false;
    }
    *out = (int64_t)d;
    *has = true;
    return true;
}

static bool get_bound(const pano_json *s, const char *key, double *out, bool *has,
                      const char *where, char *err, size_t errlen)
{
    if (!pano_json_get(s, key))
        return true;
    if (!pano_json_get_number(s, key, out)) {
        set_err(err, errlen, "%s: '%s' must be a number", where, key);
        return false;
    }
    *has = true;
    return true;
}

static unsigned type_bit(const char *name)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"null", T_NULL},     {"boolean", T_BOOLEAN}, {"integer", T_INTEGER},
                 {"number", T_NUMBER}, {"string", T_STRING},   {"array", T_ARRAY},
                 {"object", T_OBJECT}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].name, name) == 0)
            return names[i].bit;
    return 0;
}

static bool compile_list(pano_schema_set *set, size_t file, const pano_json *s, const char *key,
                         pano_schema ***out, size_t *n, const char *where, char *err,
                         size_t errlen)
{
    const pano_json *list = pano_json_get(s, key);
    if (!list)
        return true;
    if (list->type != PANO_JSON_ARRAY || pano_json_len(list) == 0) {
        set_err(err, errlen, "%s: '%s' must be a non-empty array of schemas", where, key);
        return false;
    }
    *out = pano_calloc(pano_json_len(list), sizeof **out);
    for (size_t i = 0; i < pano_json_len(list); i++) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s.%s[%zu]", where, key, i);
        (*out)[i] = compile(set, file, pano_json_at(list, i), sub, err, errlen);
        if (!(*out)[i])
            return false;
        (*n)++;
    }
    return true;
}

static pano_schema *compile(pano_schema_set *set, size_t file, const pano_json *s,
                            const char *where, char *err, size_t errlen)
{
    pano_schema *done = cached(set, s);
    if (done)
        return done;
    pano_schema *c = pano_calloc(1, sizeof *c);
    remember(set, s, c); /* before the children: recursive $refs find it */
    if (s->type == PANO_JSON_BOOL) {
        c->is_false = !s->u.boolean;
        return c;
    }
    if (s->type != PANO_JSON_OBJECT) {
        set_err(err, errlen, "%s: a schema must be an object or a boolean", where);
        return NULL;
    }
    char sub[512];

    const pano_json *type = pano_json_get(s, "type");
    if (type) {
        size_t n = type->type == PANO_JSON_ARRAY ? pano_json_len(type) : 1;
        for (size_t i = 0; i < n; i++) {
            const pano_json *t = type->type == PANO_JSON_ARRAY ? pano_json_at(type, i) : type;
            unsigned bit = t->type == PANO_JSON_STRING ? type_bit(t->u.string.text) : 0;
            if (!bit) {
                set_err(err, errlen, "%s: unknown 'type'", where);
                return NULL;
            }
            c->types |= bit;
        }
    }

    const pano_json *req = pano_json_get(s, "required");
    if (req) {
        if (req->type != PANO_JSON_ARRAY) {
            set_err(err, errlen, "%s: 'required' must be an array of names", where);
            return NULL;
        }
        c->required = pano_calloc(pano_json_len(req) + 1, sizeof *c->required);
        for (size_t i = 0; i < pano_json_len(req); i++) {
            const pano_json *name = pano_json_at(req, i);
            if (name->type != PANO_JSON_STRING) {
                set_err(err, errlen, "%s: 'required' must be an array of names", where);
                return NULL;
            }
            c->required[c->n_required++] = name->u.string.text;
        }
    }

    const pano_json *props = pano_json_get(s, "properties");
    if (props) {
        if (props->type != PANO_JSON_OBJECT) {
            set_err(err, errlen, "%s: 'properties' must be an object", where);
            return NULL;
        }
        size_t n = pano_json_len(props);
        c->prop_names = pano_calloc(n + 1, sizeof *c->prop_names);
        c->prop_schemas = pano_calloc(n + 1, sizeof *c->prop_schemas);
        for (size_t i = 0; i < n; i++) {
            snprintf(sub, sizeof sub, "%s.properties.%s", where, pano_json_key_at(props, i));
            pano_schema *p = compile(set, file, pano_json_at(props, i), sub, err, errlen);
            if (!p)
                return NULL;
            c->prop_names[c->n_props] = pano_json_key_at(props, i);
            c->prop_schemas[c->n_props++] = p;
        }
    }

    const pano_json *additional = pano_json_get(s, "additionalProperties");
    if (additional) {
        snprintf(sub, sizeof sub, "%s.additionalProperties", where);
        if (!(c->additional = compile(set, file, additional, sub, err, errlen)))
            return NULL;
    }
    const pano_json *items = pano_json_get(s, "items");
    if (items) {
        snprintf(sub, sizeof sub, "%s.items", where);
        if (!(c->items = compile(set, file, items, sub, err, errlen)))
            return NULL;
    }
    if (!get_count(s, "minItems", &c->min_items, &c->has_min_items, where, err, errlen) ||
        !get_count(s, "maxItems", &c->max_items, &c->has_max_items, where, err, errlen) ||
        !get_count(s, "minLength", &c->min_length, &c->has_min_length, where, err, errlen) ||
        !get_count(s, "maxLength", &c->max_length, &c->has_max_length, where, err, errlen) ||
        !get_bound(s, "minimum", &c->minimum, &c->has_minimum, where, err, errlen) ||
        !get_bound(s, "maximum", &c->maximum, &c->has_maximum, where, err, errlen) ||
        !get_bound(s, "exclusiveMinimum", &c->excl_minimum, &c->has_excl_minimum, where, err,
                   errlen) ||
        !get_bound(s, "exclusiveMaximum", &c->excl_maximum, &c->has_excl_maximum, where, err,
                   errlen))
        return NULL;

    const pano_json *en = pano_json_get(s, "enum");
    if (en) {
        if (en->type != PANO_JSON_ARRAY) {
            set_err(err, errlen, "%s: 'enum' must be an array", where);
            return NULL;
        }
        c->enum_values = en;
    }
    c->const_value = pano_json_get(s, "const");

    const pano_json *pattern = pano_json_get(s, "pattern");
    if (pattern) {
        char why[200];
        char *ere = pattern->type == PANO_JSON_STRING
                        ? pano_regex_ecma_to_ere(pattern->u.string.text, why, sizeof why)
                        : NULL;
        if (!ere) {
            set_err(err, errlen, "%s: 'pattern': %s", where,
                    pattern->type == PANO_JSON_STRING ? why : "must be a string");
            return NULL;
        }
        int rc = regcomp(&c->pattern, ere, REG_EXTENDED | REG_NOSUB);
        free(ere);
        if (rc != 0) {
            regerror(rc, &c->pattern, why, sizeof why);
            set_err(err, errlen, "%s: 'pattern' %s: %s", where, pattern->u.string.text, why);
            return NULL;
        }
        c->has_pattern = true;
        c->pattern_text = pattern->u.string.text;
        c->pattern_id = atomic_fetch_add(&patterns_compiled, 1) + 1;
    }

    if (!compile_list(set, file, s, "allOf", &c->all_of, &c->n_all_of, where, err, errlen) ||
        !compile_list(set, file, s, "anyOf", &c->any_of, &c->n_any_of, where, err, errlen) ||
        !compile_list(set, file, s, "oneOf", &c->one_of, &c->n_one_of, where, err, errlen))
        return NULL;
    const pano_json *not = pano_json_get(s, "not");
    if (not) {
        snprintf(sub, sizeof sub, "%s.not", where);
        if (!(c->not_schema = compile(set, file, not, sub, err, errlen)))
            return NULL;
    }
    const pano_json *ref = pano_json_get(s, "$ref");
    if (ref) {
        if (ref->type != PANO_JSON_STRING) {
            set_err(err, errlen, "%s: '$ref' must be a string", where);
            return NULL;
        }
        if (!(c->ref = resolve_ref(set, file, ref->u.string.text, where, err, errlen)))
            return NULL;
    }
    build_name_table(c);
    return c;
}

/* ---- loading ----------------------------------------------------------- */

static void free_schema(pano_schema *c)
{
    free(c->names);
    free(c->name_schemas);
    free(c->name_hashes);
    free(c->table);
    free(c->required_bits);
    free(c->required);
    free(c->prop_names);
    free(c->prop_schemas);
    free(c->all_of);
    free(c->any_of);
    free(c->one_of);
    if (c->has_pattern)
        regfree(&c->pattern);
    free(c);
}

void pano_schema_set_free(pano_schema_set *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n_cache; i++)
        free_schema(set->cache[i].schema);
    free(set->cache);
    for (size_t i = 0; i < set->n_files; i++) {
        free(set->files[i].path);
        pano_json_free(set->files[i].doc);
    }
    free(set->files);
    for (size_t i = 0; i < set->n_events; i++)
        free(set->events[i].name);
    free(set->events);
    free(set);
}

/* Parse one schema file's text and add it to the set under its relative
 * path (where: how to name it in messages). */
static int add_text(pano_schema_set *set, const char *rel, const char *text, size_t len,
                    const char *where, char *err, size_t errlen)
{
    char why[200];
    pano_json *doc = pano_json_parse(text, len, 128, why, sizeof why);
    if (!doc) {
        set_err(err, errlen, "%s: invalid JSON: %s", where, why);
        return -1;
    }
    set->files = pano_reallocarray(set->files, set->n_files + 1, sizeof *set->files);
    set->files[set->n_files++] = (schema_file){pano_strdup(rel), doc};
    return 0;
}

static int add_file(pano_schema_set *set, const char *path, const char *rel, char *err,
                    size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = pano_malloc(MAX_FILE_SIZE + 1);
    size_t n = fread(text, 1, MAX_FILE_SIZE + 1, f);
    bool bad_read = ferror(f);
    fclose(f);
    int rc = -1;
    if (bad_read || n > MAX_FILE_SIZE)
        set_err(err, errlen, "%s: %s", path, bad_read ? "read error" : "file too large");
    else
        rc = add_text(set, rel, text, n, path, err, errlen);
    free(text);
    return rc;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int scan_dir(pano_schema_set *set, const char *root, const char *rel, int depth,
                    char *err, size_t errlen)
{
    char *dir = *rel ? pano_asprintf("%s/%s", root, rel) : pano_strdup(root);
    DIR *d = opendir(dir);
    if (!d) {
        set_err(err, errlen, "cannot read schema directory %s: %s", dir, strerror(errno));
        free(dir);
        return -1;
    }
    /* Sorted, so that loading does not depend on the directory order. */
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        names = pano_reallocarray(names, n + 1, sizeof *names);
        names[n++] = pano_strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, (int (*)(const void *, const void *))strcmp);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *path = pano_asprintf("%s/%s", dir, names[i]);
        char *child = *rel ? pano_asprintf("%s/%s", rel, names[i]) : pano_strdup(names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (depth < 4)
                rc = scan_dir(set, root, child, depth + 1, err, errlen);
        } else if (has_suffix(names[i], ".schema.json"))
            rc = add_file(set, path, child, err, errlen);
        free(path);
        free(child);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(dir);
    return rc;
}

static int compare_events(const void *a, const void *b)
{
    return strcmp(((const event_entry *)a)->name, ((const event_entry *)b)->name);
}

/* Compile every file; register the envelope and events/<name>. */
static int compile_all(pano_schema_set *set, bool need_envelope, char *err, size_t errlen)
{
    for (size_t i = 0; i < set->n_files; i++) {
        pano_schema *s = compile(set, i, set->files[i].doc, set->files[i].path, err, errlen);
        if (!s)
            return -1;
        const char *path = set->files[i].path;
        if (strcmp(path, "envelope.schema.json") == 0)
            set->envelope = s;
        else if (strncmp(path, "events/", 7) == 0 && !strchr(path + 7, '/')) {
            size_t len = strlen(path + 7) - strlen(".schema.json");
            set->events = pano_reallocarray(set->events, set->n_events + 1, sizeof *set->events);
            set->events[set->n_events++] = (event_entry){pano_strndup(path + 7, len), s};
        }
    }
    if (need_envelope && !set->envelope) {
        set_err(err, errlen, "no envelope.schema.json");
        return -1;
    }
    if (set->n_events)
        qsort(set->events, set->n_events, sizeof *set->events, compare_events);
    return 0;
}

pano_schema_set *pano_schema_set_load(const char *dir, char *err, size_t errlen)
{
    pano_schema_set *set = pano_calloc(1, sizeof *set);
    char why[600];
    if (scan_dir(set, dir, "", 0, err, errlen) < 0)
        goto fail;
    if (compile_all(set, true, why, sizeof why) < 0) {
        set_err(err, errlen, "schemas in %s: %s", dir, why);
        goto fail;
    }
    return set;
fail:
    pano_schema_set_free(set);
    return NULL;
}

pano_schema_set *pano_schema_set_from_files(const pano_schema_file *files, char *err,
                                            size_t errlen)
{
    pano_schema_set *set = pano_calloc(1, sizeof *set);
    for (size_t i = 0; files[i].path; i++)
        if (add_text(set, files[i].path, files[i].text, strlen(files[i].text), files[i].path,
                     err, errlen) < 0)
            goto fail;
    if (compile_all(set, true, err, errlen) < 0)
        goto fail;
    return set;
fail:
    pano_schema_set_free(set);
    return NULL;
}

pano_schema_set *pano_schema_set_from_text(const char *text, char *err, size_t errlen)
{
    const pano_schema_file one[] = {{"envelope.schema.json", text}, {NULL, NULL}};
    return pano_schema_set_from_files(one, err, errlen);
}

size_t pano_schema_set_event_count(const pano_schema_set *set) { return set->n_events; }

const pano_schema *pano_schema_envelope(const pano_schema_set *set) { return set->envelope; }

const pano_schema *pano_schema_for_event(const pano_schema_set *set, const char *name)
{
    size_t lo = 0, hi = set->n_events;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(name, set->events[mid].name);
        if (c == 0)
            return set->events[mid].schema;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return set->envelope;
}

/* ---- validation -------------------------------------------------------- */

typedef struct {
    char *reason;
    size_t size;
    char path[512];
    size_t plen;
    bool truncated; /* the path did not fit */
    int depth;
} vctx;

/* The field being checked, for messages: "'seq'", "'argv[2]'", or "the
 * event" at the top. */
static void describe(const vctx *c, char *out, size_t size)
{
    if (c->plen == 0)
        snprintf(out, size, "the event");
    else
        snprintf(out, size, "'%s%s'", c->path[0] == '.' ? c->path + 1 : c->path,
                 c->truncated ? "..." : "");
}

__attribute__((format(printf, 2, 3))) static bool fail(vctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, c->size, fmt, ap);
    va_end(ap);
    return false;
}

static size_t push_key(vctx *c, const char *key)
{
    size_t saved = c->plen, len = strlen(key);
    if (len + 2 > sizeof c->path - c->plen) {
        c->truncated = true;
        return saved;
    }
    c->path[c->plen] = '.';
    memcpy(c->path + c->plen + 1, key, len + 1);
    c->plen += len + 1;
    return saved;
}

static size_t push_index(vctx *c, size_t i)
{
    size_t saved = c->plen;
    int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, "[%zu]", i);
    if (n < 0 || (size_t)n >= sizeof c->path - c->plen) {
        c->path[saved] = '\0';
        c->truncated = true;
    } else
        c->plen += (size_t)n;
    return saved;
}

static void pop(vctx *c, size_t saved)
{
    c->plen = saved;
    c->path[saved] = '\0';
}

static bool is_integral(double d) { return isfinite(d) && d == floor(d); }

static bool type_matches(unsigned types, const pano_json *v)
{
    switch (v->type) {
    case PANO_JSON_NULL:
        return types & T_NULL;
    case PANO_JSON_BOOL:
        return types & T_BOOLEAN;
    case PANO_JSON_INT:
        return types & (T_INTEGER | T_NUMBER);
    case PANO_JSON_DOUBLE:
        return (types & T_NUMBER) || ((types & T_INTEGER) && is_integral(v->u.real.value));
    case PANO_JSON_STRING:
        return types & T_STRING;
    case PANO_JSON_ARRAY:
        return types & T_ARRAY;
    case PANO_JSON_OBJECT:
        return types & T_OBJECT;
    }
    return false;
}

static void type_words(unsigned types, char *out, size_t size)
{
    static const struct {
        unsigned bit;
        const char *words;
    } names[] = {{T_OBJECT, "an object"}, {T_ARRAY, "an array"},  {T_STRING, "a string"},
                 {T_INTEGER, "an integer"}, {T_NUMBER, "a number"}, {T_BOOLEAN, "a boolean"},
                 {T_NULL, "null"}};
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(types & names[i].bit))
            continue;
        if (names[i].bit == T_INTEGER && (types & T_NUMBER))
            continue; /* "a number" covers it */
        int n = snprintf(out + o, size - o, "%s%s", o ? " or " : "", names[i].words);
        if (n < 0 || (size_t)n >= size - o)
            break;
        o += (size_t)n;
    }
}

static bool json_equal(const pano_json *a, const pano_json *b)
{
    bool an = a->type == PANO_JSON_INT || a->type == PANO_JSON_DOUBLE;
    bool bn = b->type == PANO_JSON_INT || b->type == PANO_JSON_DOUBLE;
    if (an && bn) {
        if (a->type == PANO_JSON_INT && b->type == PANO_JSON_INT)
            return a->u.integer == b->u.integer;
        double x = a->type == PANO_JSON_INT ? (double)a->u.integer : a->u.real.value;
        double y = b->type == PANO_JSON_INT ? (double)b->u.integer : b->u.real.value;
        return x == y;
    }
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case PANO_JSON_NULL:
        return true;
    case PANO_JSON_BOOL:
        return a->u.boolean == b->u.boolean;
    case PANO_JSON_STRING:
        return a->u.string.len == b->u.string.len &&
               memcmp(a->u.string.text, b->u.string.text, a->u.string.len) == 0;
    case PANO_JSON_ARRAY:
        if (pano_json_len(a) != pano_json_len(b))
            return false;
        for (size_t i = 0; i < pano_json_len(a); i++)
            if (!json_equal(pano_json_at(a, i), pano_json_at(b, i)))
                return false;
        return true;
    case PANO_JSON_OBJECT:
        if (pano_json_len(a) != pano_json_len(b))
            return false;
        for (size_t i = 0; i < pano_json_len(a); i++) {
            const pano_json *other = pano_json_get(b, pano_json_key_at(a, i));
            if (!other || !json_equal(pano_json_at(a, i), other))
                return false;
        }
        return true;
    default:
        return false;
    }
}

/* A short text form of a schema value for messages (enum, const). */
static void value_text(const pano_json *v, char *out, size_t size)
{
    char *s = pano_json_serialize(v, NULL);
    snprintf(out, size, "%s", s);
    if (strlen(s) >= size && size > 4)
        memcpy(out + size - 4, "...", 4);
    free(s);
}

static size_t utf8_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

static bool check(const pano_schema *s, const pano_json *v, vctx *c);

/* Whether text matches s's pattern. The last text that matched is kept,
 * per thread: an event's name is mostly the one before's. */
static bool matches(const pano_schema *s, const char *text, size_t len)
{
    static _Thread_local struct {
        uint64_t pattern;
        size_t len;
        char text[128];
    } last;
    if (last.pattern == s->pattern_id && last.len == len && memcmp(last.text, text, len) == 0)
        return true;
    regmatch_t m[1] = {{0, (regoff_t)len}};
    if (regexec(&s->pattern, text, 1, m, REG_STARTEND) != 0)
        return false;
    if (len <= sizeof last.text) {
        last.pattern = s->pattern_id;
        last.len = len;
        memcpy(last.text, text, len);
    }
    return true;
}

static bool check_object(const pano_schema *s, const pano_json *v, vctx *c)
{
    char what[600];
    if (s->n_names == 0 && !s->additional)
        return true;
    /* One pass over the keys: check the values, note the required ones. */
    uint64_t seen_small = 0, *seen = &seen_small;
    size_t words = (s->n_names + 63) / 64;
    uint64_t seen_big[16];
    if (words > 1) {
        seen = words <= 16 ? seen_big : pano_calloc(words, sizeof *seen);
        memset(seen, 0, (words <= 16 ? words : 0) * sizeof *seen);
    }
    bool ok = true;
    for (size_t i = 0; i < pano_json_len(v) && ok; i++) {
        const char *key = pano_json_key_at(v, i);
        size_t at = s->n_names ? find_name(s, key, hash_key(key)) : SIZE_MAX;
        const pano_schema *p = NULL;
        if (at != SIZE_MAX) {
            seen[at / 64] |= 1ULL << (at % 64);
            p = s->name_schemas[at];
            if (!p && !s->additional)
                continue; /* only required */
        }
        if (!p)
            p = s->additional;
        if (!p)
            continue;
        size_t saved = push_key(c, key);
        ok = check(p, pano_json_at(v, i), c);
        if (!ok && p->is_false && p == s->additional) {
            describe(c, what, sizeof what);
            fail(c, "unexpected field %s", what);
        }
        pop(c, saved);
    }
    /* Missing required fields, in the order the schema lists them. */
    for (size_t r = 0; ok && r < s->n_required; r++) {
        size_t at = find_name(s, s->required[r], hash_key(s->required[r]));
        if (seen[at / 64] & (1ULL << (at % 64)))
            continue;
        if (c->plen == 0)
            fail(c, "missing required field '%s'", s->required[r]);
        else {
            describe(c, what, sizeof what);
            fail(c, "missing required field '%s' in %s", s->required[r], what);
        }
        ok = false;
    }
    if (words > 16)
        free(seen);
    return ok;
}

static bool check(const pano_schema *s, const pano_json *v, vctx *c)
{
    char what[600], words[200];
    if (++c->depth > MAX_VALIDATION_DEPTH) {
        c->depth--;
        return fail(c, "schema nesting deeper than %d levels", MAX_VALIDATION_DEPTH);
    }
    bool ok = false;
    if (s->is_false) {
        describe(c, what, sizeof what);
        fail(c, "%s is not allowed", what);
        goto out;
    }
    if (s->types && !type_matches(s->types, v)) {
        describe(c, what, sizeof what);
        type_words(s->types, words, sizeof words);
        fail(c, "%s must be %s", what, words);
        goto out;
    }
    if (s->ref && !check(s->ref, v, c))
        goto out;
    for (size_t i = 0; i < s->n_all_of; i++)
        if (!check(s->all_of[i], v, c))
            goto out;
    if (s->enum_values) {
        bool found = false;
        for (size_t i = 0; i < pano_json_len(s->enum_values) && !found; i++)
            found = json_equal(v, pano_json_at(s->enum_values, i));
        if (!found) {
            describe(c, what, sizeof what);
            char list[200];
            char *text = pano_json_serialize(s->enum_values, NULL);
            /* "[0,1]" -> "0, 1" */
            size_t o = 0;
            for (const char *p = text + 1; *p && o + 3 < sizeof list; p++) {
                if (p[1] == '\0' && *p == ']')
                    break;
                list[o++] = *p;
                if (*p == ',')
                    list[o++] = ' ';
            }
            list[o] = '\0';
            free(text);
            fail(c, "%s must be one of %s", what, list);
            goto out;
        }
    }
    if (s->const_value && !json_equal(v, s->const_value)) {
        describe(c, what, sizeof what);
        value_text(s->const_value, words, sizeof words);
        fail(c, "%s must be %s", what, words);
        goto out;
    }
    if (v->type == PANO_JSON_INT || v->type == PANO_JSON_DOUBLE) {
        double d = v->type == PANO_JSON_INT ? (double)v->u.integer : v->u.real.value;
        if (s->has_minimum && !(d >= s->minimum)) {
            describe(c, what, sizeof what);
            fail(c, "%s must be at least %.15g", what, s->minimum);
            goto out;
        }
        if (s->has_maximum && !(d <= s->maximum)) {
            describe(c, what, sizeof what);
            fail(c, "%s must be at most %.15g", what, s->maximum);
            goto out;
        }
        if (s->has_excl_minimum && !(d > s->excl_minimum)) {
            describe(c, what, sizeof what);
            fail(c, "%s must be greater than %.15g", what, s->excl_minimum);
            goto out;
        }
        if (s->has_excl_maximum && !(d < s->excl_maximum)) {
            describe(c, what, sizeof what);
            fail(c, "%s must be less than %.15g", what, s->excl_maximum);
            goto out;
        }
    }
    if (v->type == PANO_JSON_STRING) {
        if (s->has_min_length || s->has_max_length) {
            int64_t n = (int64_t)utf8_chars(v->u.string.text, v->u.string.len);
            if (s->has_min_length && n < s->min_length) {
                describe(c, what, sizeof what);
                fail(c, "%s must be at least %lld characters long", what,
                     (long long)s->min_length);
                goto out;
            }
            if (s->has_max_length && n > s->max_length) {
                describe(c, what, sizeof what);
                fail(c, "%s is longer than %lld characters", what, (long long)s->max_length);
                goto out;
            }
        }
        if (s->has_pattern && !matches(s, v->u.string.text, v->u.string.len)) {
            describe(c, what, sizeof what);
            fail(c, "%s does not match the pattern %s", what, s->pattern_text);
            goto out;
        }
    }
    if (v->type == PANO_JSON_ARRAY) {
        size_t n = pano_json_len(v);
        if (s->has_min_items && (int64_t)n < s->min_items) {
            describe(c, what, sizeof what);
            fail(c, "%s must have at least %lld items", what, (long long)s->min_items);
            goto out;
        }
        if (s->has_max_items && (int64_t)n > s->max_items) {
            describe(c, what, sizeof what);
            fail(c, "%s must have at most %lld items", what, (long long)s->max_items);
            goto out;
        }
        if (s->items)
            for (size_t i = 0; i < n; i++) {
                size_t saved = push_index(c, i);
                bool item_ok = check(s->items, pano_json_at(v, i), c);
                pop(c, saved);
                if (!item_ok)
                    goto out;
            }
    }
    if (v->type == PANO_JSON_OBJECT && !check_object(s, v, c))
        goto out;
    if (s->n_any_of) {
        bool any = false;
        for (size_t i = 0; i < s->n_any_of && !any; i++)
            any = check(s->any_of[i], v, c);
        if (!any) {
            describe(c, what, sizeof what);
            fail(c, "%s matches none of the allowed forms", what);
            goto out;
        }
    }
    if (s->n_one_of) {
        size_t matched = 0;
        for (size_t i = 0; i < s->n_one_of; i++)
            matched += check(s->one_of[i], v, c);
        if (matched != 1) {
            describe(c, what, sizeof what);
            fail(c, "%s must match exactly one of the allowed forms (it matches %zu)", what,
                 matched);
            goto out;
        }
    }
    if (s->not_schema && check(s->not_schema, v, c)) {
        describe(c, what, sizeof what);
        fail(c, "%s matches a form that is not allowed", what);
        goto out;
    }
    ok = true;
out:
    c->depth--;
    return ok;
}

bool pano_schema_validate(const pano_schema *schema, const pano_json *value, char *reason,
                          size_t size)
{
    char scratch[1];
    vctx c = {.reason = size ? reason : scratch, .size = size ? size : sizeof scratch};
    c.reason[0] = '\0';
    return check(schema, value, &c);
}

pano_schema_set *pano_schema_set_configured(const pano_config *cfg, char *err, size_t errlen)
{
    const char *dir = pano_config_str(cfg, "pano.bridge.schema_dir");
    return dir ? pano_schema_set_load(dir, err, errlen)
               : pano_schema_set_from_files(pano_builtin_schemas, err, errlen);
}
