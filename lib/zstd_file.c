#include "zstd_file.h"

#include "mem.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

bool pano_zstd_file_is(const char *path)
{
    FILE *f = fopen(path, "rbe");
    if (!f)
        return false;
    unsigned char m[4];
    bool is = fread(m, 1, sizeof m, f) == sizeof m && m[0] == 0x28 && m[1] == 0xb5 &&
              m[2] == 0x2f && m[3] == 0xfd;
    fclose(f);
    return is;
}

/* Run src through one streaming (de)compression into dst. */
static int stream(const char *src, const char *dst, bool compress, int level, char *err,
                  size_t errlen)
{
    FILE *in = fopen(src, "rbe");
    if (!in) {
        snprintf(err, errlen, "%s: %s", src, strerror(errno));
        return -1;
    }
    FILE *out = fopen(dst, "wbe");
    if (!out) {
        snprintf(err, errlen, "%s: %s", dst, strerror(errno));
        fclose(in);
        return -1;
    }
    ZSTD_CCtx *cc = compress ? ZSTD_createCCtx() : NULL;
    ZSTD_DCtx *dc = compress ? NULL : ZSTD_createDCtx();
    size_t in_cap = compress ? ZSTD_CStreamInSize() : ZSTD_DStreamInSize();
    size_t out_cap = compress ? ZSTD_CStreamOutSize() : ZSTD_DStreamOutSize();
    char *ibuf = pano_malloc(in_cap), *obuf = pano_malloc(out_cap);
    int rc = 0;
    size_t last = 1; /* decompression: 0 once a frame ended */
    if ((compress && (!cc || ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel,
                                                                   level)))) ||
        (!compress && !dc)) {
        snprintf(err, errlen, "zstd: cannot start");
        rc = -1;
    }
    bool done = false;
    while (rc == 0 && !done) {
        size_t n = fread(ibuf, 1, in_cap, in);
        if (ferror(in)) {
            snprintf(err, errlen, "%s: %s", src, strerror(errno));
            rc = -1;
            break;
        }
        bool end = n < in_cap;
        if (!compress && n == 0)
            break; /* nothing more: a call now would ask for a next frame */
        ZSTD_inBuffer ib = {ibuf, n, 0};
        for (;;) {
            ZSTD_outBuffer ob = {obuf, out_cap, 0};
            size_t r = compress ? ZSTD_compressStream2(cc, &ob, &ib, end ? ZSTD_e_end
                                                                          : ZSTD_e_continue)
                                : ZSTD_decompressStream(dc, &ob, &ib);
            if (ZSTD_isError(r)) {
                snprintf(err, errlen, "%s: %s", src, ZSTD_getErrorName(r));
                rc = -1;
                break;
            }
            if (!compress)
                last = r;
            if (fwrite(obuf, 1, ob.pos, out) != ob.pos) {
                snprintf(err, errlen, "%s: %s", dst, strerror(errno));
                rc = -1;
                break;
            }
            /* decompressing, r == 0: a frame ended, all of it written; a call
             * now would wait for a next frame's header */
            bool finished = compress ? (end ? r == 0 : ib.pos == ib.size)
                                     : ib.pos == ib.size && (ob.pos < out_cap || r == 0);
            if (finished)
                break;
        }
        done = end;
    }
    if (rc == 0 && !compress && last != 0) {
        snprintf(err, errlen, "%s: the compressed file is cut short", src);
        rc = -1;
    }
    free(ibuf);
    free(obuf);
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
    fclose(in);
    if (fclose(out) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", dst, strerror(errno));
        rc = -1;
    }
    if (rc < 0)
        unlink(dst);
    return rc;
}

int pano_zstd_file_compress(const char *src, const char *dst, int level, char *err,
                            size_t errlen)
{
    return stream(src, dst, true, level, err, errlen);
}

int pano_zstd_file_decompress(const char *src, const char *dst, char *err, size_t errlen)
{
    return stream(src, dst, false, 0, err, errlen);
}
