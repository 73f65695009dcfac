/*
 * run_table.c - a bounded table of keyed entries with least-recently-used
 * eviction (run_table.h).
 */
#include "run_table.h"

#include "event.h"
#include "mem.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    struct entry *chain;       /* next in its hash bucket */
    struct entry *older, *newer; /* the use order */
    uint64_t hash;
    int partition;
    char *key;                 /* stored after the value */
    max_align_t value[];
} entry;

struct run_table {
    entry **buckets;
    size_t nbuckets; /* a power of two, grown with the count */
    size_t count, capacity, value_size;
    entry *oldest, *newest;
    run_table_evicted on_evict;
    void *user;
};

run_table *run_table_new(size_t capacity, size_t value_size, run_table_evicted on_evict,
                         void *user)
{
    run_table *t = pano_calloc(1, sizeof *t);
    t->capacity = capacity ? capacity : 1;
    t->value_size = value_size;
    t->nbuckets = 1024;
    t->buckets = pano_calloc(t->nbuckets, sizeof *t->buckets);
    t->on_evict = on_evict;
    t->user = user;
    return t;
}

void run_table_free(run_table *t)
{
    if (!t)
        return;
    for (entry *e = t->oldest, *next; e; e = next) {
        next = e->newer;
        free(e);
    }
    free(t->buckets);
    free(t);
}

static void unlink_use(run_table *t, entry *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else
        t->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        t->newest = e->older;
    e->older = e->newer = NULL;
}

static void link_newest(run_table *t, entry *e)
{
    e->older = t->newest;
    e->newer = NULL;
    if (t->newest)
        t->newest->newer = e;
    else
        t->oldest = e;
    t->newest = e;
}

static entry **slot_of(run_table *t, const char *key, uint64_t hash)
{
    entry **p = &t->buckets[hash & (t->nbuckets - 1)];
    while (*p && ((*p)->hash != hash || strcmp((*p)->key, key) != 0))
        p = &(*p)->chain;
    return p;
}

void *run_table_find(run_table *t, const char *key)
{
    entry *e = *slot_of(t, key, pano_hash_str(key));
    if (!e)
        return NULL;
    unlink_use(t, e);
    link_newest(t, e);
    return e->value;
}

/* Take e out of its bucket and the use order, and free it. */
static void drop(run_table *t, entry *e)
{
    entry **p = slot_of(t, e->key, e->hash);
    *p = e->chain;
    unlink_use(t, e);
    free(e);
    t->count--;
}

static void grow(run_table *t)
{
    size_t n = t->nbuckets * 2;
    entry **b = pano_calloc(n, sizeof *b);
    for (size_t i = 0; i < t->nbuckets; i++)
        for (entry *e = t->buckets[i], *next; e; e = next) {
            next = e->chain;
            e->chain = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

void *run_table_add(run_table *t, const char *key, int partition)
{
    if (t->count >= t->capacity) {
        entry *old = t->oldest;
        if (t->on_evict)
            t->on_evict(old->key, old->value, t->user);
        drop(t, old);
    }
    if (t->count >= t->nbuckets)
        grow(t);
    size_t klen = strlen(key);
    entry *e = pano_calloc(1, sizeof *e + t->value_size + klen + 1);
    e->key = (char *)e->value + t->value_size;
    memcpy(e->key, key, klen + 1);
    e->hash = pano_hash_str(key);
    e->partition = partition;
    entry **slot = &t->buckets[e->hash & (t->nbuckets - 1)];
    e->chain = *slot;
    *slot = e;
    link_newest(t, e);
    t->count++;
    return e->value;
}

bool run_table_remove(run_table *t, const char *key)
{
    entry *e = *slot_of(t, key, pano_hash_str(key));
    if (!e)
        return false;
    drop(t, e);
    return true;
}

size_t run_table_forget_partition(run_table *t, int partition)
{
    size_t n = 0;
    for (entry *e = t->oldest, *next; e; e = next) {
        next = e->newer;
        if (e->partition == partition) {
            drop(t, e);
            n++;
        }
    }
    return n;
}

size_t run_table_count(const run_table *t)
{
    return t->count;
}
