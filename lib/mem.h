/*
 * mem.h - allocation that never returns NULL.
 *
 * pano treats memory exhaustion like Redis does: it cannot be handled
 * meaningfully in the middle of building an event, so these wrappers log and
 * abort instead of forcing a NULL check after every small allocation. Sizes
 * that come from input (message bodies, log regions) must be bounded by the
 * caller before they get here.
 */
#ifndef PANO_MEM_H
#define PANO_MEM_H

#include <stddef.h>

void *pano_malloc(size_t size);
void *pano_calloc(size_t count, size_t size);
void *pano_realloc(void *ptr, size_t size);
/* realloc for arrays: count * size, failing (abort) on overflow. */
void *pano_reallocarray(void *ptr, size_t count, size_t size);
char *pano_strdup(const char *s);
char *pano_strndup(const char *s, size_t n);
/* printf into a new string. */
char *pano_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
