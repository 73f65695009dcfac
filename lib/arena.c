#include "arena.h"

#include "mem.h"

#include <stdlib.h>

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

void *pano_arena_alloc(pano_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    pano_arena_chunk *c = a->chunks;
    if (!c || c->size - c->used < size) {
        size_t n = size > a->chunk_size ? size : a->chunk_size;
        c = pano_malloc(sizeof *c + n);
        c->size = n;
        c->used = 0;
        c->next = a->chunks;
        a->chunks = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    return p;
}

void pano_arena_reset(pano_arena *a)
{
    /* Keep the oldest chunk when it has the default size (the first one
     * allocated), free the rest: one huge message does not keep its memory. */
    pano_arena_chunk *keep = NULL;
    for (pano_arena_chunk *c = a->chunks; c;) {
        pano_arena_chunk *next = c->next;
        if (!next && c->size == a->chunk_size)
            keep = c;
        else
            free(c);
        c = next;
    }
    if (keep)
        keep->used = 0;
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
