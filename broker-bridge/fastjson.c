#include "fastjson.h"

#include "mem.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

/* ---- arena ------------------------------------------------------------- */

struct pano_arena_chunk {
    pano_arena_chunk *next;
    size_t size, used;
    _Alignas(16) char data[];
};

void pano_arena_init(pano_arena *a, size_t chunk_size)
{
    a->chunks = NULL;
    a->chunk_size = chunk_size ? chunk_size : 64 * 1024;
}

void pano_arena_reset(pano_arena *a)
{
    /* Keep the first (oldest, default-sized) chunk; free the rest, so that
     * one huge message does not keep its memory. */
    pano_arena_chunk *keep = NULL;
    for (pano_arena_chunk *c = a->chunks; c;) {
        pano_arena_chunk *next = c->next;
        if (!next && c->size == a->chunk_size)
            keep = c;
        else
            free(c);
        c = next;
    }
    if (keep) {
        keep->used = 0;
        keep->next = NULL;
    }
    a->chunks = keep;
}

void pano_arena_free(pano_arena *a)
{
    for (pano_arena_chunk *c = a->chunks; c;) {
        pano_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->chunks = NULL;
}

void *pano_arena_alloc(pano_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    pano_arena_chunk *c = a->chunks;
    if (!c || c->size - c->used < size) {
        size_t n = size > a->chunk_size ? size : a->chunk_size;
        c = pano_malloc(sizeof *c + n);
        c->size = n;
        c->used = 0;
        /* The default-sized chunk stays last, so reset can find it. */
        c->next = a->chunks;
        a->chunks = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    return p;
}

/* yajl's allocator on the arena: a size header before each block, so that
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

/* ---- parsing ----------------------------------------------------------- */

typedef struct {
    pano_arena *arena;
    pano_json *root;
    pano_json **stack;
    uint64_t **hashes; /* per open object: the hashes of its keys */
    uint64_t (*seen)[4]; /* per open object: a 256-bit filter of those hashes */
    size_t depth, max_depth;
    char *pending_key;
    uint64_t pending_hash;
    const char *error;
    char error_buf[200];
} parse_state;

static uint64_t hash_bytes(const unsigned char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static pano_json *new_value(parse_state *st, pano_json_type type)
{
    pano_json *v = pano_arena_alloc(st->arena, sizeof *v);
    memset(v, 0, sizeof *v);
    v->type = type;
    return v;
}

static int attach(parse_state *st, pano_json *v)
{
    if (st->depth == 0) {
        st->root = v;
        return 1;
    }
    pano_json *top = st->stack[st->depth - 1];
    size_t n = top->u.items.len;
    if (n == top->u.items.cap) {
        size_t cap = n ? n * 2 : 16;
        pano_json **values = pano_arena_alloc(st->arena, cap * sizeof *values);
        if (n)
            memcpy(values, top->u.items.values, n * sizeof *values);
        top->u.items.values = values;
        if (top->type == PANO_JSON_OBJECT) {
            char **keys = pano_arena_alloc(st->arena, cap * sizeof *keys);
            uint64_t *hashes = pano_arena_alloc(st->arena, cap * sizeof *hashes);
            if (n) {
                memcpy(keys, top->u.items.keys, n * sizeof *keys);
                memcpy(hashes, st->hashes[st->depth - 1], n * sizeof *hashes);
            }
            top->u.items.keys = keys;
            st->hashes[st->depth - 1] = hashes;
        }
        top->u.items.cap = cap;
    }
    if (top->type == PANO_JSON_OBJECT) {
        top->u.items.keys[n] = st->pending_key;
        st->hashes[st->depth - 1][n] = st->pending_hash;
        st->pending_key = NULL;
    }
    top->u.items.values[n] = v;
    top->u.items.len = n + 1;
    return 1;
}

static int on_null(void *ctx)
{
    parse_state *st = ctx;
    return attach(st, new_value(st, PANO_JSON_NULL));
}

static int on_bool(void *ctx, int b)
{
    parse_state *st = ctx;
    pano_json *v = new_value(st, PANO_JSON_BOOL);
    v->u.boolean = b;
    return attach(st, v);
}

/* Digits to an integer, or false if it does not fit in int64. */
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

/* A decimal with at most 15 significant digits and no exponent is exactly
 * m / 10^k with m < 2^53 and k <= 22: one correctly rounded division
 * (Clinger's fast path). Everything else goes to strtod. */
static double read_double(const char *s, size_t len, const char *dot)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = s[0] == '-', digits = 0;
    uint64_t m = 0;
    for (; i < len; i++) {
        if (s + i == dot)
            continue;
        if (s[i] < '0' || s[i] > '9')
            return strtod(s, NULL);
        if (m == 0 && s[i] == '0')
            continue; /* leading zeros are not significant */
        m = m * 10 + (uint64_t)(s[i] - '0');
        if (++digits > 15)
            return strtod(s, NULL);
    }
    size_t k = (size_t)(len - (size_t)(dot + 1 - s));
    if (k > 22)
        return strtod(s, NULL);
    double v = (double)m / pow10[k];
    return s[0] == '-' ? -v : v;
}

/* The same reading of numbers as json.c. */
static int on_number(void *ctx, const char *s, size_t len)
{
    parse_state *st = ctx;
    char buf[128];
    if (len >= sizeof buf) {
        st->error = "number too long";
        return 0;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    const char *dot = NULL;
    bool exponent = false;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '.')
            dot = buf + i;
        else if (buf[i] == 'e' || buf[i] == 'E')
            exponent = true;
    }
    int64_t i;
    if (!dot && !exponent && read_int(buf, len, &i)) {
        pano_json *v = new_value(st, PANO_JSON_INT);
        v->u.integer = i;
        return attach(st, v);
    }
    pano_json *v = new_value(st, PANO_JSON_DOUBLE);
    v->u.real.value = dot && !exponent ? read_double(buf, len, dot) : strtod(buf, NULL);
    v->u.real.decimals = dot && !exponent ? (int)(len - (size_t)(dot + 1 - buf)) : -1;
    return attach(st, v);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    parse_state *st = ctx;
    pano_json *v = new_value(st, PANO_JSON_STRING);
    char *text = pano_arena_alloc(st->arena, len + 1);
    memcpy(text, s, len);
    text[len] = '\0';
    v->u.string.text = text;
    v->u.string.len = len;
    return attach(st, v);
}

static int open_container(parse_state *st, pano_json_type type)
{
    if (st->depth >= st->max_depth) {
        st->error = "nesting too deep";
        return 0;
    }
    pano_json *c = new_value(st, type);
    attach(st, c);
    st->hashes[st->depth] = NULL;
    memset(st->seen[st->depth], 0, sizeof st->seen[st->depth]);
    st->stack[st->depth++] = c;
    return 1;
}

static int on_map_open(void *ctx) { return open_container(ctx, PANO_JSON_OBJECT); }
static int on_array_open(void *ctx) { return open_container(ctx, PANO_JSON_ARRAY); }

static int on_map_key(void *ctx, const unsigned char *s, size_t len)
{
    parse_state *st = ctx;
    if (memchr(s, '\0', len)) {
        st->error = "object key contains a NUL character";
        return 0;
    }
    uint64_t h = hash_bytes(s, len);
    pano_json *top = st->stack[st->depth - 1];
    const uint64_t *hashes = st->hashes[st->depth - 1];
    /* Look for an earlier equal key only when the filter says it may be. */
    uint64_t *seen = st->seen[st->depth - 1];
    unsigned bit = (unsigned)(h >> 56);
    bool maybe = seen[bit / 64] & (1ULL << (bit % 64));
    seen[bit / 64] |= 1ULL << (bit % 64);
    for (size_t i = 0; maybe && i < top->u.items.len; i++)
        if (hashes[i] == h && strlen(top->u.items.keys[i]) == len &&
            memcmp(top->u.items.keys[i], s, len) == 0) {
            snprintf(st->error_buf, sizeof st->error_buf, "duplicate field '%.*s'",
                     (int)(len > 100 ? 100 : len), (const char *)s);
            st->error = st->error_buf;
            return 0;
        }
    char *key = pano_arena_alloc(st->arena, len + 1);
    memcpy(key, s, len);
    key[len] = '\0';
    st->pending_key = key;
    st->pending_hash = h;
    return 1;
}

static int on_close(void *ctx)
{
    ((parse_state *)ctx)->depth--;
    return 1;
}

static const yajl_callbacks callbacks = {
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

pano_json *pano_json_parse_arena(pano_arena *a, const char *buf, size_t len, int max_depth,
                                 char *err, size_t errlen)
{
    parse_state st = {.arena = a};
    st.max_depth = max_depth > 0 ? (size_t)max_depth : PANO_JSON_DEFAULT_DEPTH;
    st.stack = pano_arena_alloc(a, st.max_depth * sizeof *st.stack);
    st.hashes = pano_arena_alloc(a, st.max_depth * sizeof *st.hashes);
    st.seen = pano_arena_alloc(a, st.max_depth * sizeof *st.seen);
    yajl_alloc_funcs funcs = {arena_malloc, arena_realloc, arena_nofree, a};
    yajl_handle h = yajl_alloc(&callbacks, &funcs, &st);
    if (!h) {
        snprintf(err, errlen, "out of memory");
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
        }
        st.root = NULL;
    }
    yajl_free(h);
    return st.root;
}
