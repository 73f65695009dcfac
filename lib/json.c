#include "json.h"

#include "buf.h"
#include "mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

/* ---- construction ------------------------------------------------------ */

static pano_json *new_value(pano_json_type type)
{
    pano_json *v = pano_calloc(1, sizeof *v);
    v->type = type;
    return v;
}

pano_json *pano_json_null(void) { return new_value(PANO_JSON_NULL); }

pano_json *pano_json_bool(bool value)
{
    pano_json *v = new_value(PANO_JSON_BOOL);
    v->u.boolean = value;
    return v;
}

pano_json *pano_json_int(int64_t value)
{
    pano_json *v = new_value(PANO_JSON_INT);
    v->u.integer = value;
    return v;
}

pano_json *pano_json_double(double value, int decimals)
{
    pano_json *v = new_value(PANO_JSON_DOUBLE);
    v->u.real.value = value;
    v->u.real.decimals = decimals;
    return v;
}

/* Length of the valid UTF-8 sequence at s[0..len), or 0 if invalid.
 * Rejects overlong forms, surrogates and code points above U+10FFFF. */
static size_t utf8_sequence(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (len < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

size_t pano_utf8_valid_prefix(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t valid = 0;
    while (valid < len) {
        if (s[valid] < 0x80) { /* the usual case */
            valid++;
            continue;
        }
        size_t n = utf8_sequence(s + valid, len - valid);
        if (!n)
            break;
        valid += n;
    }
    return valid;
}

/* Room utf8_repair() needs: every byte after the valid prefix may become
 * U+FFFD (3 bytes), plus the NUL. */
static size_t utf8_repair_size(size_t valid, size_t len) { return valid + (len - valid) * 3 + 1; }

/* Copy s[0..len) to out, NUL-terminated, with each byte that does not start
 * a valid sequence replaced by U+FFFD; the first `valid` bytes are known to
 * be valid. Returns the length written. */
static size_t utf8_repair(char *out, const unsigned char *s, size_t valid, size_t len)
{
    memcpy(out, s, valid);
    size_t o = valid;
    for (size_t i = valid; i < len;) {
        size_t n = utf8_sequence(s + i, len - i);
        if (n) {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    return o;
}

pano_json *pano_json_string_len(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    pano_json *v = new_value(PANO_JSON_STRING);
    size_t valid = pano_utf8_valid_prefix(text, len);
    if (valid == len) { /* the usual case: copy as is */
        v->u.string.text = pano_malloc(len + 1);
        memcpy(v->u.string.text, text, len);
        v->u.string.text[len] = '\0';
        v->u.string.len = len;
        return v;
    }
    char *out = pano_malloc(utf8_repair_size(valid, len));
    size_t o = utf8_repair(out, s, valid, len);
    v->u.string.text = pano_realloc(out, o + 1);
    v->u.string.len = o;
    return v;
}

pano_json *pano_json_string(const char *text)
{
    return pano_json_string_len(text, strlen(text));
}

pano_json *pano_json_array(void) { return new_value(PANO_JSON_ARRAY); }
pano_json *pano_json_object(void) { return new_value(PANO_JSON_OBJECT); }

void pano_json_free(pano_json *v)
{
    if (!v)
        return;
    if (v->type == PANO_JSON_STRING)
        free(v->u.string.text);
    if (v->type == PANO_JSON_ARRAY || v->type == PANO_JSON_OBJECT) {
        for (size_t i = 0; i < v->u.items.len; i++) {
            if (v->u.items.keys)
                free(v->u.items.keys[i]);
            pano_json_free(v->u.items.values[i]);
        }
        free(v->u.items.keys);
        free(v->u.items.values);
    }
    free(v);
}

/* Append to an array (key == NULL) or object without checking for an existing
 * key: the parser and clone use it, pano_json_set checks first. */
static void items_push(pano_json *c, char *key, pano_json *value)
{
    if (c->u.items.len == c->u.items.cap) {
        size_t cap = c->u.items.cap ? c->u.items.cap * 2 : 8;
        c->u.items.values =
            pano_reallocarray(c->u.items.values, cap, sizeof(pano_json *));
        if (c->type == PANO_JSON_OBJECT)
            c->u.items.keys = pano_reallocarray(c->u.items.keys, cap, sizeof(char *));
        c->u.items.cap = cap;
    }
    if (c->type == PANO_JSON_OBJECT)
        c->u.items.keys[c->u.items.len] = key;
    c->u.items.values[c->u.items.len++] = value;
}

pano_json *pano_json_clone(const pano_json *v)
{
    switch (v->type) {
    case PANO_JSON_NULL:
        return pano_json_null();
    case PANO_JSON_BOOL:
        return pano_json_bool(v->u.boolean);
    case PANO_JSON_INT:
        return pano_json_int(v->u.integer);
    case PANO_JSON_DOUBLE:
        return pano_json_double(v->u.real.value, v->u.real.decimals);
    case PANO_JSON_STRING:
        return pano_json_string_len(v->u.string.text, v->u.string.len);
    case PANO_JSON_ARRAY:
    case PANO_JSON_OBJECT:
        break;
    }
    pano_json *c = new_value(v->type);
    for (size_t i = 0; i < pano_json_len(v); i++)
        items_push(c, v->type == PANO_JSON_OBJECT ? pano_strdup(pano_json_key_at(v, i)) : NULL,
                   pano_json_clone(pano_json_at(v, i)));
    return c;
}

/* ---- objects and arrays ------------------------------------------------ */

static ssize_t find_key(const pano_json *o, const char *key)
{
    if (!o || o->type != PANO_JSON_OBJECT)
        return -1;
    for (size_t i = 0; i < pano_json_len(o); i++) {
        const char *k = pano_json_key_at(o, i);
        if (k[0] == key[0] && strcmp(k, key) == 0) /* the first byte spares most calls */
            return (ssize_t)i;
    }
    return -1;
}

void pano_json_set(pano_json *o, const char *key, pano_json *value)
{
    ssize_t i = find_key(o, key);
    if (i >= 0) {
        pano_json_free(o->u.items.values[i]);
        o->u.items.values[i] = value;
        return;
    }
    items_push(o, pano_strdup(key), value);
}

void pano_json_add(pano_json *o, const char *key, pano_json *value)
{
    items_push(o, pano_strdup(key), value);
}

void pano_json_set_str(pano_json *o, const char *key, const char *text)
{
    pano_json_set(o, key, pano_json_string(text));
}

void pano_json_set_int(pano_json *o, const char *key, int64_t value)
{
    pano_json_set(o, key, pano_json_int(value));
}

void pano_json_set_double(pano_json *o, const char *key, double value, int decimals)
{
    pano_json_set(o, key, pano_json_double(value, decimals));
}

void pano_json_set_bool(pano_json *o, const char *key, bool value)
{
    pano_json_set(o, key, pano_json_bool(value));
}

pano_json *pano_json_set_object(pano_json *o, const char *key)
{
    pano_json *child = pano_json_object();
    pano_json_set(o, key, child);
    return child;
}

pano_json *pano_json_set_array(pano_json *o, const char *key)
{
    pano_json *child = pano_json_array();
    pano_json_set(o, key, child);
    return child;
}

bool pano_json_remove(pano_json *o, const char *key)
{
    ssize_t i = find_key(o, key);
    if (i < 0)
        return false;
    free(o->u.items.keys[i]);
    pano_json_free(o->u.items.values[i]);
    size_t rest = o->u.items.len - (size_t)i - 1;
    memmove(&o->u.items.keys[i], &o->u.items.keys[i + 1], rest * sizeof(char *));
    memmove(&o->u.items.values[i], &o->u.items.values[i + 1], rest * sizeof(pano_json *));
    o->u.items.len--;
    return true;
}

pano_json *pano_json_get(const pano_json *o, const char *key)
{
    ssize_t i = find_key(o, key);
    return i < 0 ? NULL : pano_json_at(o, (size_t)i);
}

const char *pano_json_get_str(const pano_json *o, const char *key)
{
    pano_json *v = pano_json_get(o, key);
    return v && v->type == PANO_JSON_STRING ? v->u.string.text : NULL;
}

bool pano_json_get_int(const pano_json *o, const char *key, int64_t *out)
{
    pano_json *v = pano_json_get(o, key);
    if (!v || v->type != PANO_JSON_INT)
        return false;
    *out = v->u.integer;
    return true;
}

bool pano_json_get_number(const pano_json *o, const char *key, double *out)
{
    pano_json *v = pano_json_get(o, key);
    if (v && v->type == PANO_JSON_INT) {
        *out = (double)v->u.integer;
        return true;
    }
    if (v && v->type == PANO_JSON_DOUBLE) {
        *out = v->u.real.value;
        return true;
    }
    return false;
}

pano_json *pano_json_get_array(const pano_json *o, const char *key)
{
    pano_json *v = pano_json_get(o, key);
    return v && v->type == PANO_JSON_ARRAY ? v : NULL;
}

void pano_json_append(pano_json *array, pano_json *value)
{
    items_push(array, NULL, value);
}

void pano_json_truncate(pano_json *array, size_t len)
{
    while (array->u.items.len > len)
        pano_json_free(array->u.items.values[--array->u.items.len]);
}

void pano_json_sort(pano_json *array, int (*cmp)(const pano_json *a, const pano_json *b))
{
    pano_json **v = array->u.items.values;
    for (size_t i = 1; i < array->u.items.len; i++) {
        pano_json *x = v[i];
        size_t j = i;
        while (j > 0 && cmp(v[j - 1], x) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* ---- serialization ----------------------------------------------------- */

/* Decimal digits of u, right-aligned to end at `end`; returns the start. */
static char *format_uint_backwards(char *end, uint64_t u)
{
    do {
        *--end = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    return end;
}

/* What snprintf("%" PRId64) writes, without its format parsing: events are
 * mostly integers, and this is the serializer's hottest path. */
int pano_json_format_int(char *buf, int64_t i)
{
    char tmp[24];
    char *end = tmp + sizeof tmp;
    uint64_t magnitude = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
    char *p = format_uint_backwards(end, magnitude);
    if (i < 0)
        *--p = '-';
    memcpy(buf, p, (size_t)(end - p));
    return (int)(end - p);
}

/* snprintf("%.*f", decimals, d) exactly, through integer arithmetic when
 * that is provably the same. The whole part of |d| < 2^53 and the rest are
 * exact doubles; the rest times 10^decimals (< 10^9) is computed with one
 * rounding (relative error <= 2^-53), so its nearest integer is the
 * correctly rounded one unless the product lies within that error of a .5
 * boundary. Those (rare) cases, and larger values, return -1 for snprintf
 * to handle. Epoch times with microseconds take the exact path. */
static int format_fixed(char *buf, double d, int decimals)
{
    static const double scale[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    static const uint64_t iscale[] = {1u,      10u,      100u,      1000u,      10000u,
                                      100000u, 1000000u, 10000000u, 100000000u, 1000000000u};
    if (decimals > 9)
        return -1;
    double a = fabs(d);
    if (!(a < 0x1p53))
        return -1;
    double whole = floor(a);
    double p = (a - whole) * scale[decimals];
    double pwhole = floor(p), frac = p - pwhole;
    if (fabs(frac - 0.5) <= p * 0x1p-50 + 0x1p-60)
        return -1;
    uint64_t w = (uint64_t)whole, f = (uint64_t)pwhole + (frac > 0.5);
    if (f == iscale[decimals]) { /* the fraction rounded up to a whole one */
        f = 0;
        w++;
    }

    char tmp[32];
    char *end = tmp + sizeof tmp, *q = end;
    for (int i = 0; i < decimals; i++) {
        *--q = (char)('0' + f % 10);
        f /= 10;
    }
    if (decimals > 0)
        *--q = '.';
    q = format_uint_backwards(q, w);
    if (signbit(d)) /* printf keeps the sign of -0.0 and of values rounding to 0 */
        *--q = '-';
    memcpy(buf, q, (size_t)(end - q));
    return (int)(end - q);
}

/* Fixed decimals when asked for, else the shortest "%.Ng" that reads back as
 * the same double. */
static int format_double(char *buf, size_t size, double d, int decimals)
{
    if (decimals >= 0) {
        int n = format_fixed(buf, d, decimals);
        if (n >= 0)
            return n;
        n = snprintf(buf, size, "%.*f", decimals, d);
        if (n >= 0 && (size_t)n < size)
            return n;
        /* Too long for fixed decimals (|d| near 1e50 and above): the
         * shortest exact form instead of a truncated buffer. */
    }
    for (int prec = 15; prec <= 17; prec++) {
        int n = snprintf(buf, size, "%.*g", prec, d);
        if (prec == 17 || strtod(buf, NULL) == d) {
            /* Keep it a JSON double: 3 would read back as an integer. */
            if (!strpbrk(buf, ".eEn") && (size_t)n + 2 < size) {
                memcpy(buf + n, ".0", 3);
                n += 2;
            }
            return n;
        }
    }
    return 0;
}

int pano_json_format_double(char *buf, double d, int decimals)
{
    return format_double(buf, PANO_JSON_NUMBER_MAX, d, decimals);
}

/* yajl allocates through mem.h too, so it cannot fail half-way. */
static void *yajl_malloc(void *ctx, size_t size)
{
    (void)ctx;
    return pano_malloc(size);
}
static void *yajl_realloc(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    return pano_realloc(ptr, size);
}
static void yajl_free_memory(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}
/* Not const: yajl_alloc() takes a mutable pointer (yajl copies it). */
static yajl_alloc_funcs yajl_memory = {yajl_malloc, yajl_realloc, yajl_free_memory, NULL};

/* yajl prints in small pieces (a quote, a comma, a number): most fit. */
static void append_to_buf(void *buf, const char *text, size_t len)
{
    pano_buf *b = buf;
    if (b->len + len < b->cap) {
        for (size_t i = 0; i < len; i++) /* shorter than a memcpy call */
            b->data[b->len + i] = text[i];
        b->len += len;
        b->data[b->len] = '\0';
        return;
    }
    pano_buf_append(b, text, len);
}

/* A writer is a yajl generator printing into the caller's buffer. Status
 * codes are not checked call by call: the only failures possible are misuse
 * (a value where a key is due), which the callers' structure rules out, and
 * allocation failure, which aborts (mem.h). */
struct pano_json_writer {
    yajl_gen gen;
};

pano_json_writer *pano_json_writer_new(pano_buf *out)
{
    pano_json_writer *w = pano_malloc(sizeof *w);
    w->gen = yajl_gen_alloc(&yajl_memory);
    yajl_gen_config(w->gen, yajl_gen_print_callback, append_to_buf, out);
    return w;
}

void pano_json_writer_free(pano_json_writer *w)
{
    if (!w)
        return;
    yajl_gen_free(w->gen);
    free(w);
}

void pano_json_write_object_open(pano_json_writer *w) { yajl_gen_map_open(w->gen); }
void pano_json_write_object_close(pano_json_writer *w) { yajl_gen_map_close(w->gen); }
void pano_json_write_array_open(pano_json_writer *w) { yajl_gen_array_open(w->gen); }
void pano_json_write_array_close(pano_json_writer *w) { yajl_gen_array_close(w->gen); }
void pano_json_write_null(pano_json_writer *w) { yajl_gen_null(w->gen); }
void pano_json_write_bool(pano_json_writer *w, bool value) { yajl_gen_bool(w->gen, value); }

/* yajl_gen writes bytes as given: invalid UTF-8 is repaired first. */
void pano_json_write_str_len(pano_json_writer *w, const char *text, size_t len)
{
    size_t valid = pano_utf8_valid_prefix(text, len);
    if (valid == len) {
        yajl_gen_string(w->gen, (const unsigned char *)text, len);
        return;
    }
    char *repaired = pano_malloc(utf8_repair_size(valid, len));
    size_t repaired_len = utf8_repair(repaired, (const unsigned char *)text, valid, len);
    yajl_gen_string(w->gen, (const unsigned char *)repaired, repaired_len);
    free(repaired);
}

void pano_json_write_key(pano_json_writer *w, const char *key)
{
    pano_json_write_str_len(w, key, strlen(key));
}

void pano_json_write_str(pano_json_writer *w, const char *text)
{
    pano_json_write_str_len(w, text, strlen(text));
}

void pano_json_write_int(pano_json_writer *w, int64_t value)
{
    char num[PANO_JSON_NUMBER_MAX];
    int n = pano_json_format_int(num, value);
    yajl_gen_number(w->gen, num, (size_t)n);
}

void pano_json_write_double(pano_json_writer *w, double value, int decimals)
{
    if (!isfinite(value)) {
        yajl_gen_null(w->gen);
        return;
    }
    char num[PANO_JSON_NUMBER_MAX];
    int n = pano_json_format_double(num, value, decimals);
    yajl_gen_number(w->gen, num, (size_t)n);
}

void pano_json_write_members(pano_json_writer *w, const pano_json *object)
{
    for (size_t i = 0; i < pano_json_len(object); i++) {
        pano_json_write_key(w, pano_json_key_at(object, i));
        pano_json_write_value(w, pano_json_at(object, i));
    }
}

void pano_json_write_value(pano_json_writer *w, const pano_json *v)
{
    switch (v->type) {
    case PANO_JSON_NULL:
        pano_json_write_null(w);
        break;
    case PANO_JSON_BOOL:
        pano_json_write_bool(w, v->u.boolean);
        break;
    case PANO_JSON_INT:
        pano_json_write_int(w, v->u.integer);
        break;
    case PANO_JSON_DOUBLE:
        pano_json_write_double(w, v->u.real.value, v->u.real.decimals);
        break;
    case PANO_JSON_STRING:
        pano_json_write_str_len(w, v->u.string.text, v->u.string.len);
        break;
    case PANO_JSON_ARRAY:
        pano_json_write_array_open(w);
        for (size_t i = 0; i < pano_json_len(v); i++)
            pano_json_write_value(w, pano_json_at(v, i));
        pano_json_write_array_close(w);
        break;
    case PANO_JSON_OBJECT:
        pano_json_write_object_open(w);
        pano_json_write_members(w, v);
        pano_json_write_object_close(w);
        break;
    }
}

void pano_json_serialize_to(pano_buf *out, const pano_json *v)
{
    pano_json_writer *w = pano_json_writer_new(out);
    pano_json_write_value(w, v);
    pano_json_writer_free(w);
}

char *pano_json_serialize(const pano_json *v, size_t *len)
{
    pano_buf out = {0};
    pano_json_serialize_to(&out, v);
    if (len)
        *len = out.len;
    return out.data;
}

/* ---- parsing ----------------------------------------------------------- */

/* One set of yajl callbacks serves every pano_json_parse_options: values
 * come from the heap or from an arena, and duplicate keys are refused or
 * replaced, depending on the options. */

/* An open container. For an object: the hashes of its keys by member index,
 * and a 256-bit filter of them, so that a new key is compared with the
 * earlier ones only when its bit is already set. The hash array is reused
 * by the next object at the same depth (hashes_cap >= the object's cap). */
typedef struct {
    pano_json *c;
    uint64_t *hashes;
    size_t hashes_cap;
    uint64_t filter[4];
} parse_level;

typedef struct {
    pano_json_parse_options o;
    pano_json *root;
    parse_level *levels;
    parse_level *level;   /* the innermost open container, or NULL */
    size_t depth, max_depth;
    size_t ready;         /* levels[0..ready) are initialized */
    char *pending_key;    /* key read, value not yet */
    uint64_t pending_hash;
    size_t pending_index; /* member index of an earlier equal key, or SIZE_MAX */
    const char *error;
    char error_buf[160];
} parse_state;

static void *st_alloc(parse_state *st, size_t size)
{
    return st->o.arena ? pano_arena_alloc(st->o.arena, size) : pano_malloc(size);
}

/* A larger block holding the `old` bytes of p (realloc on the heap). */
static void *st_grow(parse_state *st, void *p, size_t old, size_t size)
{
    if (!st->o.arena)
        return pano_realloc(p, size);
    void *fresh = pano_arena_alloc(st->o.arena, size);
    if (old)
        memcpy(fresh, p, old);
    return fresh;
}

static void st_free(parse_state *st, void *p)
{
    if (!st->o.arena)
        free(p);
}

static pano_json *st_value(parse_state *st, pano_json_type type)
{
    pano_json *v = st_alloc(st, sizeof *v);
    memset(v, 0, sizeof *v);
    v->type = type;
    return v;
}

static uint64_t hash_bytes(const unsigned char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

/* Room for one more member in the open container l. */
static void grow(parse_state *st, parse_level *l)
{
    pano_json *top = l->c;
    size_t n = top->u.items.len, cap = n ? n * 2 : 16;
    top->u.items.values =
        st_grow(st, top->u.items.values, n * sizeof(pano_json *), cap * sizeof(pano_json *));
    top->u.items.cap = cap;
    if (top->type != PANO_JSON_OBJECT)
        return;
    top->u.items.keys = st_grow(st, top->u.items.keys, n * sizeof(char *), cap * sizeof(char *));
    if (l->hashes_cap < cap) {
        l->hashes = st_grow(st, l->hashes, n * sizeof *l->hashes, cap * sizeof *l->hashes);
        l->hashes_cap = cap;
    }
}

static int attach(parse_state *st, pano_json *v)
{
    parse_level *l = st->level;
    if (!l) {
        st->root = v;
        return 1;
    }
    pano_json *top = l->c;
    size_t n = top->u.items.len;
    if (top->type == PANO_JSON_OBJECT) {
        if (st->pending_index != SIZE_MAX) {
            /* The key was there before: the last value wins, in its place. */
            if (!st->o.arena)
                pano_json_free(top->u.items.values[st->pending_index]);
            top->u.items.values[st->pending_index] = v;
            st_free(st, st->pending_key);
            st->pending_key = NULL;
            return 1;
        }
        if (n == top->u.items.cap)
            grow(st, l);
        top->u.items.keys[n] = st->pending_key;
        l->hashes[n] = st->pending_hash;
        st->pending_key = NULL;
    } else if (n == top->u.items.cap)
        grow(st, l);
    top->u.items.values[n] = v;
    top->u.items.len = n + 1;
    return 1;
}

static int on_null(void *ctx) { return attach(ctx, st_value(ctx, PANO_JSON_NULL)); }

static int on_bool(void *ctx, int b)
{
    pano_json *v = st_value(ctx, PANO_JSON_BOOL);
    v->u.boolean = b;
    return attach(ctx, v);
}

/* Digits to an integer, or false if it does not fit in int64 (what strtoll
 * reads without ERANGE). */
static bool read_int(const char *s, size_t len, int64_t *out)
{
    bool neg = len > 0 && s[0] == '-';
    size_t i = neg;
    if (i == len || len - i > 19)
        return false;
    uint64_t v = 0;
    for (; i < len; i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    if (v > (uint64_t)INT64_MAX + neg)
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* A decimal without exponent (its '.' at dot; s need not end in a NUL),
 * when it is exactly m / 10^k: with at most 16 significant digits making
 * m < 2^53 (a timestamp with microseconds is one) and k <= 22 decimals,
 * one correctly rounded division (Clinger's fast path). False for the
 * rest, which strtod reads. */
static bool exact_decimal(const char *s, size_t len, const char *dot, double *out)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = s[0] == '-', digits = 0;
    uint64_t m = 0;
    for (; i < len; i++) {
        if (s + i == dot)
            continue;
        if (m == 0 && s[i] == '0')
            continue; /* leading zeros are not significant */
        m = m * 10 + (uint64_t)(s[i] - '0');
        if (++digits > 16)
            return false;
    }
    size_t k = len - (size_t)(dot + 1 - s);
    if (m >= UINT64_C(1) << 53 || k > 22)
        return false;
    double v = (double)m / pow10[k];
    *out = s[0] == '-' ? -v : v;
    return true;
}

/* yajl's text of a number: 1, an int64 (*integer); 0, a double (*d and
 * its *decimals, -1 when printed as %.17g); -1, none (*error says why: too
 * long, or out of the range of a double, as 1e400: JSON has no infinity,
 * and Elasticsearch would refuse it). An integer and a plain decimal read
 * exactly are read in place; the rest goes to strtod, copied to end in a
 * NUL. */
static int read_number(const char *s, size_t len, int64_t *integer, double *d, int *decimals,
                       const char **error)
{
    const char *dot = NULL;
    bool exponent = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.')
            dot = s + i;
        else if (s[i] == 'e' || s[i] == 'E')
            exponent = true;
    }
    if (!dot && !exponent && read_int(s, len, integer))
        return 1;
    /* Out of int64 range, or not an integer. A plain decimal ("1.250")
     * keeps its number of decimals, so that it serializes to the same
     * text. */
    bool plain = dot && !exponent;
    *decimals = plain ? (int)(len - (size_t)(dot + 1 - s)) : -1;
    if (plain && exact_decimal(s, len, dot, d))
        return 0;
    char buf[128];
    if (len >= sizeof buf) {
        *error = "number too long";
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    *d = strtod(buf, NULL);
    if (!isfinite(*d)) {
        *error = "number out of range (larger than a double can hold)";
        return -1;
    }
    return 0;
}

bool pano_json_read_number(const char *text, size_t len, pano_json *out)
{
    const char *error = NULL;
    int64_t i;
    double d;
    int decimals, kind = read_number(text, len, &i, &d, &decimals, &error);
    if (kind < 0)
        return false;
    if (kind == 1)
        *out = (pano_json){.type = PANO_JSON_INT, .u.integer = i};
    else
        *out = (pano_json){.type = PANO_JSON_DOUBLE, .u.real = {d, decimals}};
    return true;
}

static int on_number(void *ctx, const char *s, size_t len)
{
    parse_state *st = ctx;
    int64_t i;
    double d;
    int decimals, kind = read_number(s, len, &i, &d, &decimals, &st->error);
    if (kind < 0)
        return 0;
    if (kind == 1) {
        pano_json *v = st_value(st, PANO_JSON_INT);
        v->u.integer = i;
        return attach(st, v);
    }
    pano_json *v = st_value(st, PANO_JSON_DOUBLE);
    v->u.real.value = d;
    v->u.real.decimals = decimals;
    return attach(st, v);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    parse_state *st = ctx;
    pano_json *v = st_value(st, PANO_JSON_STRING);
    size_t valid = st->o.raw_strings ? len : pano_utf8_valid_prefix((const char *)s, len);
    char *text = st_alloc(st, utf8_repair_size(valid, len));
    v->u.string.text = text;
    if (valid == len) { /* the usual case */
        memcpy(text, s, len);
        text[len] = '\0';
        v->u.string.len = len;
    } else
        v->u.string.len = utf8_repair(text, s, valid, len);
    return attach(st, v);
}

static int open_container(parse_state *st, pano_json_type type)
{
    if (st->depth >= st->max_depth) {
        st->error = "nesting too deep";
        return 0;
    }
    pano_json *c = st_value(st, type);
    attach(st, c);
    if (st->depth == st->ready)
        st->levels[st->ready++] = (parse_level){0};
    parse_level *l = st->level = &st->levels[st->depth++];
    l->c = c;
    memset(l->filter, 0, sizeof l->filter);
    return 1;
}

static int on_map_open(void *ctx) { return open_container(ctx, PANO_JSON_OBJECT); }
static int on_array_open(void *ctx) { return open_container(ctx, PANO_JSON_ARRAY); }

static int on_map_key(void *ctx, const unsigned char *s, size_t len)
{
    parse_state *st = ctx;
    /* Keys are C strings in this model: a key with a NUL byte is refused. */
    if (memchr(s, '\0', len)) {
        st->error = "object key contains a NUL character";
        return 0;
    }
    parse_level *l = st->level;
    uint64_t h = hash_bytes(s, len), bit = 1ULL << ((h >> 56) % 64);
    uint64_t *word = &l->filter[(h >> 56) / 64];
    st->pending_index = SIZE_MAX;
    if (*word & bit) {
        const pano_json *top = l->c;
        for (size_t i = 0; i < top->u.items.len; i++) {
            const char *k = top->u.items.keys[i];
            if (l->hashes[i] != h || strncmp(k, (const char *)s, len) != 0 || k[len] != '\0')
                continue;
            if (st->o.reject_duplicates) {
                snprintf(st->error_buf, sizeof st->error_buf, "duplicate field '%.*s'",
                         (int)(len > 100 ? 100 : len), (const char *)s);
                st->error = st->error_buf;
                return 0;
            }
            st->pending_index = i;
            break;
        }
    }
    *word |= bit;
    char *key = st_alloc(st, len + 1);
    memcpy(key, s, len);
    key[len] = '\0';
    st->pending_key = key;
    st->pending_hash = h;
    return 1;
}

static int on_close(void *ctx)
{
    parse_state *st = ctx;
    st->depth--;
    st->level = st->depth ? st->level - 1 : NULL;
    return 1;
}

static const yajl_callbacks parse_callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_map_open,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_close,
    .yajl_start_array = on_array_open,
    .yajl_end_array = on_close,
};

/* ---- reading as a stream of events -------------------------------------------------- */

typedef struct {
    const pano_json_events *ev;
    void *user;
    const char *error;
} stream_state;

/* yajl's callbacks, each passing its event on to the reader's */
#define EVENTS(c) (((stream_state *)(c))->ev)
#define USER(c) (((stream_state *)(c))->user)
static int stream_map(void *c) { return EVENTS(c)->open(USER(c), false); }
static int stream_array(void *c) { return EVENTS(c)->open(USER(c), true); }
static int stream_close(void *c) { return EVENTS(c)->close(USER(c)); }
static int stream_null(void *c) { return EVENTS(c)->literal(USER(c), -1); }
static int stream_bool(void *c, int b) { return EVENTS(c)->literal(USER(c), b != 0); }

static int stream_key(void *c, const unsigned char *k, size_t n)
{
    return EVENTS(c)->key(USER(c), (const char *)k, n);
}

static int stream_string(void *c, const unsigned char *v, size_t n)
{
    return EVENTS(c)->string(USER(c), (const char *)v, n);
}

static int stream_number(void *c, const char *t, size_t n)
{
    stream_state *s = c;
    /* the usual case, a whole number of up to 15 digits: exact in a double */
    size_t neg = n > 0 && t[0] == '-', at = neg;
    uint64_t whole = 0;
    while (at < n && at - neg < 15 && t[at] >= '0' && t[at] <= '9')
        whole = whole * 10 + (uint64_t)(t[at++] - '0');
    if (at == n && n > neg)
        return s->ev->number(s->user, neg && whole ? -(double)whole : (double)whole);
    int64_t i;
    double d;
    int decimals, kind = read_number(t, n, &i, &d, &decimals, &s->error);
    if (kind < 0)
        return 0;
    return s->ev->number(s->user, kind == 1 ? (double)i : d);
}
#undef EVENTS
#undef USER

static const yajl_callbacks stream_callbacks = {
    .yajl_null = stream_null,
    .yajl_boolean = stream_bool,
    .yajl_number = stream_number,
    .yajl_string = stream_string,
    .yajl_start_map = stream_map,
    .yajl_map_key = stream_key,
    .yajl_end_map = stream_close,
    .yajl_start_array = stream_array,
    .yajl_end_array = stream_close,
};

struct pano_json_stream_reader {
    stream_state s;
    yajl_handle h;
    bool failed;
};

pano_json_stream_reader *pano_json_stream_begin(const pano_json_events *ev, void *user)
{
    pano_json_stream_reader *r = pano_calloc(1, sizeof *r);
    r->s = (stream_state){.ev = ev, .user = user};
    r->h = yajl_alloc(&stream_callbacks, &yajl_memory, &r->s);
    if (!r->h) {
        free(r);
        return NULL;
    }
    return r;
}

/* st's meaning, in err: 0 when st is ok, else -1 (r failed from now on). */
static int stream_status(pano_json_stream_reader *r, yajl_status st, const char *buf, size_t len,
                         char *err, size_t errlen)
{
    if (st == yajl_status_ok)
        return 0;
    r->failed = true;
    if (r->s.error)
        snprintf(err, errlen, "%s", r->s.error);
    else if (st == yajl_status_client_canceled)
        snprintf(err, errlen, "stopped by its reader");
    else {
        unsigned char *msg = yajl_get_error(r->h, 0, (const unsigned char *)buf, len);
        snprintf(err, errlen, "%s", msg ? (const char *)msg : "invalid JSON");
        if (msg)
            yajl_free_error(r->h, msg);
    }
    return -1;
}

int pano_json_stream_feed(pano_json_stream_reader *r, const char *buf, size_t len, char *err,
                          size_t errlen)
{
    if (r->failed) {
        snprintf(err, errlen, "the JSON read so far is not valid");
        return -1;
    }
    return stream_status(r, yajl_parse(r->h, (const unsigned char *)buf, len), buf, len, err,
                         errlen);
}

int pano_json_stream_end(pano_json_stream_reader *r, char *err, size_t errlen)
{
    int rc = r->failed ? -1 : stream_status(r, yajl_complete_parse(r->h), "", 0, err, errlen);
    yajl_free(r->h);
    free(r);
    return rc;
}

int pano_json_stream(const char *buf, size_t len, const pano_json_events *ev, void *user,
                     char *err, size_t errlen)
{
    pano_json_stream_reader *r = pano_json_stream_begin(ev, user);
    if (!r) {
        snprintf(err, errlen, "cannot allocate a JSON parser");
        return -1;
    }
    int fed = pano_json_stream_feed(r, buf, len, err, errlen);
    int ended = pano_json_stream_end(r, err, errlen); /* keeps a failed feed's message */
    return fed < 0 ? fed : ended;
}

bool pano_json_walk(const pano_json *v, const pano_json_events *ev, void *user)
{
    switch (v->type) {
    case PANO_JSON_NULL:
        return ev->literal(user, -1);
    case PANO_JSON_BOOL:
        return ev->literal(user, v->u.boolean);
    case PANO_JSON_INT:
        return ev->number(user, (double)v->u.integer);
    case PANO_JSON_DOUBLE:
        return ev->number(user, v->u.real.value);
    case PANO_JSON_STRING:
        return ev->string(user, v->u.string.text, v->u.string.len);
    case PANO_JSON_ARRAY:
    case PANO_JSON_OBJECT:
        break;
    }
    bool object = v->type == PANO_JSON_OBJECT;
    if (!ev->open(user, !object))
        return false;
    for (size_t i = 0; i < pano_json_len(v); i++) {
        if (object) {
            const char *k = pano_json_key_at(v, i);
            if (!ev->key(user, k, strlen(k)))
                return false;
        }
        if (!pano_json_walk(pano_json_at(v, i), ev, user))
            return false;
    }
    return ev->close(user);
}

/* ---- peeking at an object's string members ---------------------------------------- */

typedef struct {
    pano_json_peek *want;
    size_t n, missing;
    uint64_t found; /* bit i: want[i] */
    size_t depth;
    bool object;       /* the text opened as an object */
    pano_json_peek *at; /* the member whose value comes next, at the top level */
} peek_state;

/* Any value but a string or an object: at the top, buf is no object. */
static int peek_value(void *ctx)
{
    peek_state *p = ctx;
    p->at = NULL;
    return p->depth > 0;
}
static int peek_bool(void *ctx, int b) { (void)b; return peek_value(ctx); }
static int peek_number(void *ctx, const char *s, size_t len)
{
    (void)s;
    (void)len;
    return peek_value(ctx);
}

static int peek_string(void *ctx, const unsigned char *s, size_t len)
{
    peek_state *p = ctx;
    pano_json_peek *w = p->depth == 1 ? p->at : NULL;
    if (!peek_value(ctx))
        return 0;
    if (!w)
        return 1;
    p->found |= UINT64_C(1) << (w - p->want);
    if (len < w->size) {
        memcpy(w->out, s, len);
        w->out[len] = '\0';
    }
    return --p->missing > 0; /* all found: stop there */
}

static int peek_open(void *ctx)
{
    peek_state *p = ctx;
    p->object |= p->depth == 0;
    p->at = NULL;
    p->depth++;
    return 1;
}

static int peek_open_array(void *ctx)
{
    peek_state *p = ctx;
    p->at = NULL;
    return p->depth++ > 0;
}

static int peek_key(void *ctx, const unsigned char *s, size_t len)
{
    peek_state *p = ctx;
    p->at = NULL;
    if (p->depth != 1)
        return 1;
    for (size_t i = 0; i < p->n; i++)
        if (!(p->found & (UINT64_C(1) << i)) && strlen(p->want[i].key) == len &&
            memcmp(p->want[i].key, s, len) == 0)
            p->at = &p->want[i];
    return 1;
}

static int peek_close(void *ctx)
{
    peek_state *p = ctx;
    p->at = NULL;
    p->depth--;
    return 1;
}

static const yajl_callbacks peek_callbacks = {
    .yajl_null = peek_value,
    .yajl_boolean = peek_bool,
    .yajl_number = peek_number,
    .yajl_string = peek_string,
    .yajl_start_map = peek_open,
    .yajl_map_key = peek_key,
    .yajl_end_map = peek_close,
    .yajl_start_array = peek_open_array,
    .yajl_end_array = peek_close,
};

bool pano_json_peek_strings(const char *buf, size_t len, pano_json_peek *want, size_t n)
{
    peek_state p = {.want = want, .n = n, .missing = n};
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        want[i].out[0] = '\0';
    yajl_handle h = yajl_alloc(&peek_callbacks, &yajl_memory, &p);
    if (!h)
        return false;
    yajl_status s = yajl_parse(h, (const unsigned char *)buf, len);
    if (s == yajl_status_ok)
        s = yajl_complete_parse(h);
    yajl_free(h);
    return p.object && (s == yajl_status_ok || (s == yajl_status_client_canceled && !p.missing));
}

/* yajl's buffers in the arena: a size header before each block, so that
 * realloc knows what to copy; free does nothing. */
static void *arena_malloc(void *ctx, size_t size)
{
    size_t *p = pano_arena_alloc(ctx, size + 16);
    *p = size;
    return (char *)p + 16;
}

static void *arena_realloc(void *ctx, void *ptr, size_t size)
{
    if (!ptr)
        return arena_malloc(ctx, size);
    size_t old = *(size_t *)((char *)ptr - 16);
    if (size <= old)
        return ptr;
    void *fresh = arena_malloc(ctx, size);
    memcpy(fresh, ptr, old);
    return fresh;
}

static void arena_nofree(void *ctx, void *ptr)
{
    (void)ctx;
    (void)ptr;
}

pano_json *pano_json_parse_with(const char *buf, size_t len, const pano_json_parse_options *o,
                                char *err, size_t errlen)
{
    parse_state st = {.o = *o, .pending_index = SIZE_MAX};
    st.max_depth = o->max_depth > 0 ? (size_t)o->max_depth : PANO_JSON_DEFAULT_DEPTH;
    st.levels = st_alloc(&st, st.max_depth * sizeof *st.levels);
    yajl_alloc_funcs in_arena = {arena_malloc, arena_realloc, arena_nofree, o->arena};
    yajl_handle h = yajl_alloc(&parse_callbacks, o->arena ? &in_arena : &yajl_memory, &st);
    if (!h) {
        snprintf(err, errlen, "cannot allocate a JSON parser");
        st_free(&st, st.levels);
        return NULL;
    }
    yajl_status s = yajl_parse(h, (const unsigned char *)buf, len);
    if (s == yajl_status_ok)
        s = yajl_complete_parse(h);
    if (s != yajl_status_ok) {
        if (st.error)
            snprintf(err, errlen, "%s", st.error);
        else {
            unsigned char *msg = yajl_get_error(h, 0, (const unsigned char *)buf, len);
            snprintf(err, errlen, "%s", msg ? (const char *)msg : "invalid JSON");
            if (msg)
                yajl_free_error(h, msg);
        }
        /* On the heap, the root holds every value attached so far. */
        if (!o->arena)
            pano_json_free(st.root);
        st.root = NULL;
    }
    st_free(&st, st.pending_key);
    for (size_t i = 0; i < st.ready; i++)
        st_free(&st, st.levels[i].hashes);
    st_free(&st, st.levels);
    yajl_free(h);
    return st.root;
}

pano_json *pano_json_parse(const char *buf, size_t len, int max_depth, char *err,
                           size_t errlen)
{
    pano_json_parse_options o = {.max_depth = max_depth};
    return pano_json_parse_with(buf, len, &o, err, errlen);
}
