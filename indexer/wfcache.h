/*
 * wfcache.h - a bounded set of workflows the indexer has seen (their alias
 * exists), approximately least-recently-used.
 *
 * Two generations of a fixed-size hash set: lookups that hit the old
 * generation move the key to the current one; when the current one is half
 * full it becomes the old one and the oldest keys are forgotten. Forgetting
 * costs one idempotent alias request when the workflow shows up again.
 */
#ifndef PANO_WFCACHE_H
#define PANO_WFCACHE_H

#include <stdbool.h>
#include <stddef.h>

#define PANO_WFCACHE_KEY 64

typedef struct pano_wfcache pano_wfcache;

/* Remembers at least capacity/2 and at most capacity keys. */
pano_wfcache *pano_wfcache_new(size_t capacity);
void pano_wfcache_free(pano_wfcache *c);

/* True if key is known (and refreshes it). */
bool pano_wfcache_has(pano_wfcache *c, const char *key);
void pano_wfcache_add(pano_wfcache *c, const char *key);
/* Keys currently remembered. */
size_t pano_wfcache_size(const pano_wfcache *c);

#endif
