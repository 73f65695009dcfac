/*
 * fastjson.h - parse JSON into arena memory, for reading only.
 *
 * The bridge parses every message to check it, and most messages go to
 * Kafka unchanged. This parser builds the same value tree as json.h
 * (pano_json), but in an arena that is reset for the next message: in the
 * steady state a message costs no malloc at all (yajl's own buffers come
 * from the arena too). Values parsed here must not be freed or modified with
 * the pano_json_* functions; pano_json_get() and friends work.
 *
 * Differences from pano_json_parse(): a key that occurs twice in an object
 * is an error ("duplicate field 'x'": Elasticsearch would refuse the
 * document), and strings are not repaired (yajl has already refused invalid
 * UTF-8).
 */
#ifndef PANO_FASTJSON_H
#define PANO_FASTJSON_H

#include "json.h"

#include <stddef.h>

typedef struct pano_arena_chunk pano_arena_chunk;

typedef struct {
    pano_arena_chunk *chunks; /* the first one is kept across resets */
    size_t chunk_size;
} pano_arena;

void pano_arena_init(pano_arena *a, size_t chunk_size);
/* Forget everything allocated; keeps the first chunk. */
void pano_arena_reset(pano_arena *a);
void pano_arena_free(pano_arena *a);
void *pano_arena_alloc(pano_arena *a, size_t size);

/* Parse exactly one JSON value from buf[0..len) into the arena. NULL with
 * a message in err on syntax errors, invalid UTF-8, trailing data, nesting
 * deeper than max_depth, or a duplicate key. */
pano_json *pano_json_parse_arena(pano_arena *a, const char *buf, size_t len, int max_depth,
                                 char *err, size_t errlen);

#endif
