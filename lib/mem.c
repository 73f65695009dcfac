#include "mem.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(size_t size)
{
    fprintf(stderr, "pano: out of memory (allocating %zu bytes)\n", size);
    abort();
}

void *pano_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        out_of_memory(size);
    return p;
}

void *pano_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(count * size);
    return p;
}

void *pano_realloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        out_of_memory(size);
    return p;
}

void *pano_reallocarray(void *ptr, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        out_of_memory(SIZE_MAX);
    return pano_realloc(ptr, count * size);
}

char *pano_strdup(const char *s) { return pano_strndup(s, strlen(s)); }

char *pano_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = pano_malloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *pano_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = NULL;
    int n = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (n < 0)
        out_of_memory(0);
    return p;
}
