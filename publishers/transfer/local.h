/*
 * local.h - the fast path for local -> local copies, and file helpers the
 * libcurl engine shares.
 *
 * libcurl can copy file:// to file://, but only through its read/write
 * callbacks and a small buffer. A local copy here uses copy_file_range(2)
 * (in-kernel, reflinks where the file system can), falling back to
 * sendfile(2) and then read/write; with a checksum it reads and writes
 * through a 1 MiB buffer and hashes what it reads (and verifies the copy by
 * reading it back). Either way the data goes to an unnamed file in DST's
 * directory (O_TMPFILE), given its name with linkat(2) only when complete,
 * so a failed or killed copy leaves nothing behind; where the file system
 * has no O_TMPFILE, a temporary ".NAME.pano-PID-N" file renamed over DST.
 * Missing parent directories of DST are created.
 */
#ifndef PANO_TRANSFER_LOCAL_H
#define PANO_TRANSFER_LOCAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    bool checksum;              /* SHA-256 of the data, and verify the copy */
    const char *expect_sha256;  /* with checksum: the digest the data must have (or NULL) */
    _Atomic uint64_t *progress; /* bytes copied so far (may be NULL) */
} pano_local_options;

typedef struct {
    uint64_t bytes;   /* bytes written to the destination */
    char sha256[65];  /* hex digest when checksum was asked for, else "" */
    char error[512];  /* why it failed */
    bool retryable;   /* the failure may go away (EIO, EAGAIN, ...) */
} pano_local_result;

/* Copy src to dst. Returns 0, or -1 with r->error set. */
int pano_local_copy(const char *src, const char *dst, const pano_local_options *o,
                    pano_local_result *r);

/* A new file that becomes dst only with pano_local_commit(): an unnamed
 * O_TMPFILE file in dst's directory (*tmp set to NULL) or, where the file
 * system has none, a temporary ".NAME.pano-PID-N" (*tmp set to its name,
 * to free). Opened read-write; missing directories are created. Returns
 * the descriptor, or -1 with errno set. */
int pano_local_create(const char *dst, mode_t mode, char **tmp);

/* Give the file from pano_local_create() the name dst, replacing what dst
 * was. Returns 0, or -1 with errno set. */
int pano_local_commit(int fd, const char *tmp, const char *dst);

/* SHA-256 of what fd holds (read from offset 0 with pread). 0, or -1 with
 * a message. */
int pano_local_sha256_fd(int fd, char out[65], char *err, size_t errlen);

/* From now on, named temporary files even where unnamed ones (O_TMPFILE,
 * linked through /proc/self/fd) work: the path taken where /proc is not
 * mounted, for tests to reach it. */
void pano_local_use_named_temporaries(void);

/* Create a temporary file next to path (".NAME.pano-XXXXXX" in its
 * directory, creating missing directories) with the given mode less the
 * umask. Returns the descriptor and the name in *tmp, or -1 with errno set. */
int pano_local_tempfile(const char *path, mode_t mode, char **tmp);

/* Create the missing parent directories of path. 0 or -1 with errno set. */
int pano_local_mkparents(const char *path);

/* SHA-256 of a file's content as 64 hex digits. 0, or -1 with a message. */
int pano_local_sha256_file(const char *path, char out[65], char *err, size_t errlen);

/* Hex of a binary digest. */
void pano_local_hex(const unsigned char *digest, size_t len, char *out);

#endif
