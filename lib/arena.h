/*
 * arena.h - bump allocation for memory that is dropped all at once.
 *
 * Blocks come from chunks of chunk_size bytes (larger requests get a chunk
 * of their own), 16-byte aligned and never freed one by one: reset forgets
 * everything, keeping one default-sized chunk, so that a loop that builds
 * and drops a similar structure each round (the bridge's parse of every
 * message) does no malloc at all in the steady state. Allocation failure
 * aborts (mem.h).
 */
#ifndef PANO_ARENA_H
#define PANO_ARENA_H

#include <stddef.h>

typedef struct pano_arena_chunk pano_arena_chunk;

typedef struct {
    pano_arena_chunk *chunks; /* newest first; the default-sized one last */
    size_t chunk_size;
} pano_arena;

/* chunk_size 0: 64 KiB. */
void pano_arena_init(pano_arena *a, size_t chunk_size);
void *pano_arena_alloc(pano_arena *a, size_t size);
/* Forget every block; keeps one default-sized chunk for reuse. */
void pano_arena_reset(pano_arena *a);
void pano_arena_free(pano_arena *a);

#endif
