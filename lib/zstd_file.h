/*
 * zstd_file.h - a whole file compressed with Zstandard (libzstd), as an
 * exported workflow travels: one zstd frame, which `zstd -d` also reads.
 */
#ifndef PANO_ZSTD_FILE_H
#define PANO_ZSTD_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* True when path starts with zstd's frame magic number. */
bool pano_zstd_file_is(const char *path);

/* Compress src into dst (created, or truncated) at level (1..19), or
 * decompress it. 0, or -1 with a message in err; dst is removed on failure. */
int pano_zstd_file_compress(const char *src, const char *dst, int level, char *err,
                            size_t errlen);
int pano_zstd_file_decompress(const char *src, const char *dst, char *err, size_t errlen);

#endif
