#include "buf.h"

#include "mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pano_buf_reserve(pano_buf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    b->data = pano_realloc(b->data, cap);
    b->cap = cap;
}

void pano_buf_append(pano_buf *b, const void *data, size_t len)
{
    pano_buf_reserve(b, len);
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void pano_buf_append_str(pano_buf *b, const char *s) { pano_buf_append(b, s, strlen(s)); }

void pano_buf_appendf(pano_buf *b, const char *fmt, ...)
{
    /* Try in the room there is; grow once if it did not fit. */
    for (int attempt = 0; attempt < 2; attempt++) {
        pano_buf_reserve(b, 64);
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->data + b->len, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->data[b->len] = '\0';
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        pano_buf_reserve(b, (size_t)n);
    }
}

void pano_buf_clear(pano_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void pano_buf_free(pano_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
