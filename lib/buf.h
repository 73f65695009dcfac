/*
 * buf.h - a growable byte buffer (bulk request bodies, payload capture).
 */
#ifndef PANO_BUF_H
#define PANO_BUF_H

#include <stddef.h>

typedef struct {
    char *data; /* always NUL-terminated once anything was appended */
    size_t len, cap;
} pano_buf;

/* Room for more bytes (and the NUL after them) without growing again. */
void pano_buf_reserve(pano_buf *b, size_t more);
void pano_buf_append(pano_buf *b, const void *data, size_t len);
void pano_buf_append_str(pano_buf *b, const char *s);
void pano_buf_appendf(pano_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empty it, keeping the memory. */
void pano_buf_clear(pano_buf *b);
void pano_buf_free(pano_buf *b);

#endif
