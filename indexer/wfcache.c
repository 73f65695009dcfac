#include "wfcache.h"

#include "mem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char (*keys)[PANO_WFCACHE_KEY];
    size_t slots, used;
} gen;

struct pano_wfcache {
    gen g[2]; /* g[0] current, g[1] old */
    size_t limit; /* keys per generation */
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void gen_init(gen *g, size_t slots)
{
    g->keys = pano_calloc(slots, sizeof *g->keys);
    g->slots = slots;
    g->used = 0;
}

/* Slot of key, or of the empty slot where it would go. */
static size_t gen_find(const gen *g, const char *key)
{
    size_t i = hash(key) & (g->slots - 1);
    while (g->keys[i][0] && strcmp(g->keys[i], key) != 0)
        i = (i + 1) & (g->slots - 1);
    return i;
}

pano_wfcache *pano_wfcache_new(size_t capacity)
{
    pano_wfcache *c = pano_calloc(1, sizeof *c);
    c->limit = capacity / 2 ? capacity / 2 : 1;
    size_t slots = 4;
    while (slots < c->limit * 2) /* load factor at most 1/2 */
        slots *= 2;
    gen_init(&c->g[0], slots);
    gen_init(&c->g[1], slots);
    return c;
}

void pano_wfcache_free(pano_wfcache *c)
{
    if (!c)
        return;
    free(c->g[0].keys);
    free(c->g[1].keys);
    free(c);
}

static void insert_current(pano_wfcache *c, const char *key)
{
    gen *cur = &c->g[0];
    size_t i = gen_find(cur, key);
    if (cur->keys[i][0])
        return;
    if (cur->used >= c->limit) {
        gen old = c->g[1];
        c->g[1] = c->g[0];
        memset(old.keys, 0, old.slots * sizeof *old.keys);
        old.used = 0;
        c->g[0] = old;
        cur = &c->g[0];
        i = gen_find(cur, key);
    }
    snprintf(cur->keys[i], sizeof cur->keys[i], "%s", key);
    cur->used++;
}

bool pano_wfcache_has(pano_wfcache *c, const char *key)
{
    if (c->g[0].keys[gen_find(&c->g[0], key)][0])
        return true;
    if (c->g[1].keys[gen_find(&c->g[1], key)][0]) {
        insert_current(c, key);
        return true;
    }
    return false;
}

void pano_wfcache_add(pano_wfcache *c, const char *key)
{
    if (!pano_wfcache_has(c, key))
        insert_current(c, key);
}

size_t pano_wfcache_size(const pano_wfcache *c) { return c->g[0].used + c->g[1].used; }
