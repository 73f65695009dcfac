#include "local.h"

#include "mem.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (64u << 20) /* bytes per copy_file_range/sendfile call */
#define BUF_SIZE (1u << 20)    /* read/write buffer */

void pano_local_hex(const unsigned char *digest, size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[2 * len] = '\0';
}

int pano_local_mkparents(const char *path)
{
    char *dir = pano_strdup(path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) {
        free(dir);
        return 0;
    }
    *slash = '\0';
    /* Walk down, creating what is missing. */
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
            int e = errno;
            free(dir);
            errno = e;
            return -1;
        }
        *p = saved;
        if (!saved)
            break;
    }
    free(dir);
    return 0;
}

static _Atomic unsigned long temp_counter;

/* Calls make(name, arg) with fresh temporary names beside path,
 * ".NAME.pano-<pid>-<n>" (unique within this process, and across processes
 * by the pid), until it fails otherwise than with EEXIST (a name left by a
 * crashed process is skipped). Returns make's result; when it is >= 0,
 * *name is the name it was given. */
static int with_temp_name(const char *path, int (*make)(const char *name, const void *arg),
                          const void *arg, char **name)
{
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    for (int tries = 0; tries < 100; tries++) {
        /* Keep the name within NAME_MAX. */
        char *candidate = pano_asprintf("%.*s.%.200s.pano-%ld-%lu", dirlen, path,
                                        slash ? slash + 1 : path, (long)getpid(),
                                        atomic_fetch_add(&temp_counter, 1));
        int rc = make(candidate, arg);
        if (rc >= 0) {
            *name = candidate;
            return rc;
        }
        int e = errno;
        free(candidate);
        errno = e;
        if (e != EEXIST)
            return -1;
    }
    return -1;
}

/* The mode goes to open(2), which applies the umask. */
static int create_new(const char *name, const void *mode)
{
    return open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, *(const mode_t *)mode & 0777);
}

static int open_temp(const char *path, mode_t mode, char **tmp)
{
    return with_temp_name(path, create_new, &mode, tmp);
}

int pano_local_tempfile(const char *path, mode_t mode, char **tmp)
{
    int fd = open_temp(path, mode, tmp);
    if (fd < 0 && errno == ENOENT && pano_local_mkparents(path) == 0)
        fd = open_temp(path, mode, tmp);
    return fd;
}

static bool retryable_errno(int e) { return e == EIO || e == EAGAIN || e == EINTR || e == EBUSY; }

/* "<action> <path>: <strerror>" */
static int fail(pano_local_result *r, int e, const char *action, const char *path)
{
    snprintf(r->error, sizeof r->error, "%s %s: %s", action, path, strerror(e));
    r->retryable = retryable_errno(e);
    return -1;
}

static void add_progress(const pano_local_options *o, uint64_t n)
{
    if (o->progress)
        atomic_fetch_add_explicit(o->progress, n, memory_order_relaxed);
}

/* In-kernel copy. Returns 0 done, 1 not supported here (nothing copied
 * yet: caller falls back), -1 error (errno). */
static int copy_kernel(int in, int out, uint64_t size, const pano_local_options *o,
                       uint64_t *copied)
{
    bool use_sendfile = false;
    for (;;) {
        ssize_t n;
        if (!use_sendfile)
            n = copy_file_range(in, NULL, out, NULL, COPY_CHUNK, 0);
        else
            n = sendfile(out, in, NULL, COPY_CHUNK);
        if (n > 0) {
            *copied += (uint64_t)n;
            add_progress(o, (uint64_t)n);
            /* Done at the size fstat gave: saves a call per small file.
             * (A file that grows meanwhile is copied as it was.) */
            if (*copied >= size)
                return 0;
            continue;
        }
        if (n == 0) {
            /* copy_file_range may report 0 on some file systems (procfs,
             * ...) without having copied anything: let read/write try. */
            if (*copied == 0 && size > 0)
                return 1;
            return 0;
        }
        if (errno == EINTR)
            continue;
        if (*copied == 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                             errno == EOPNOTSUPP || errno == EBADF)) {
            if (!use_sendfile) {
                use_sendfile = true;
                continue;
            }
            return 1;
        }
        return -1;
    }
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read/write copy, hashing what is read when md is given. */
static int copy_buffered(int in, int out, EVP_MD_CTX *md, const pano_local_options *o,
                         uint64_t *copied, bool *read_failed)
{
    unsigned char *buf = pano_malloc(BUF_SIZE);
    int rc = 0;
    for (;;) {
        ssize_t n = read(in, buf, BUF_SIZE);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            *read_failed = true;
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        if (md && EVP_DigestUpdate(md, buf, (size_t)n) != 1) {
            errno = EIO;
            rc = -1;
            break;
        }
        if (write_all(out, buf, (size_t)n) < 0) {
            rc = -1;
            break;
        }
        *copied += (uint64_t)n;
        add_progress(o, (uint64_t)n);
    }
    free(buf);
    return rc;
}

int pano_local_sha256_file(const char *path, char out[65], char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char why[256];
    int rc = pano_local_sha256_fd(fd, out, why, sizeof why);
    if (rc < 0)
        snprintf(err, errlen, "cannot read %s: %s", path, why);
    close(fd);
    return rc;
}

/* ---- unnamed files: O_TMPFILE, named with linkat(2) once complete ------ */

static _Atomic int proc_fd_usable; /* 0 unknown, 1 yes, -1 no */
static _Atomic int empty_path_usable = 1; /* linkat(AT_EMPTY_PATH) worked or not tried */

void pano_local_use_named_temporaries(void) { atomic_store(&proc_fd_usable, -1); }

static bool can_link_unnamed(void)
{
    int v = atomic_load(&proc_fd_usable);
    if (v == 0) {
        v = access("/proc/self/fd", X_OK) == 0 ? 1 : -1;
        atomic_store(&proc_fd_usable, v);
    }
    return v > 0;
}

/* An unnamed file in dst's directory (creating missing directories), or
 * -1 with errno (EOPNOTSUPP and the like where the file system has none). */
static int open_unnamed(const char *dst, mode_t mode)
{
    if (!can_link_unnamed()) {
        errno = EOPNOTSUPP;
        return -1;
    }
    const char *slash = strrchr(dst, '/');
    char *dir = slash ? pano_strndup(dst, slash == dst ? 1 : (size_t)(slash - dst))
                      : pano_strdup(".");
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode & 0777);
    if (fd < 0 && errno == ENOENT && pano_local_mkparents(dst) == 0)
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode & 0777);
    int e = errno;
    free(dir);
    errno = e;
    return fd;
}

/* proc_path: /proc/self/fd/N of an unnamed file */
static int link_proc_path(const char *name, const void *proc_path)
{
    return linkat(AT_FDCWD, proc_path, AT_FDCWD, name, AT_SYMLINK_FOLLOW);
}

/* Name the unnamed file fd dst, replacing what dst was. */
static int link_unnamed(int fd, const char *dst)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    /* AT_EMPTY_PATH is cheaper than the /proc path, but needs
     * CAP_DAC_READ_SEARCH (or a recent kernel): try it once. */
    if (atomic_load(&empty_path_usable)) {
        if (linkat(fd, "", AT_FDCWD, dst, AT_EMPTY_PATH) == 0)
            return 0;
        if (errno == EEXIST)
            goto exists;
        if (errno != EPERM && errno != ENOENT && errno != EINVAL)
            return -1;
        atomic_store(&empty_path_usable, 0);
    }
    if (link_proc_path(dst, proc) == 0)
        return 0;
    if (errno != EEXIST)
        return -1;
exists:;
    /* dst exists: link under a temporary name, then rename over it. */
    char *name;
    if (with_temp_name(dst, link_proc_path, proc, &name) < 0)
        return -1;
    int rc = rename(name, dst);
    int e = errno;
    if (rc < 0)
        unlink(name);
    free(name);
    errno = e;
    return rc;
}

int pano_local_sha256_fd(int fd, char out[65], char *err, size_t errlen)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "SHA-256 is not available");
        EVP_MD_CTX_free(md);
        return -1;
    }
    unsigned char *buf = pano_malloc(BUF_SIZE);
    int rc = 0;
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, buf, BUF_SIZE, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "%s", strerror(errno));
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        off += n;
        if (EVP_DigestUpdate(md, buf, (size_t)n) != 1) {
            snprintf(err, errlen, "SHA-256 failed");
            rc = -1;
            break;
        }
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (rc == 0) {
        if (EVP_DigestFinal_ex(md, digest, &dlen) != 1) {
            snprintf(err, errlen, "SHA-256 failed");
            rc = -1;
        } else
            pano_local_hex(digest, dlen, out);
    }
    free(buf);
    EVP_MD_CTX_free(md);
    return rc;
}

int pano_local_create(const char *dst, mode_t mode, char **tmp)
{
    *tmp = NULL;
    int fd = open_unnamed(dst, mode);
    if (fd < 0 && errno != ENOENT && errno != EACCES && errno != EROFS && errno != ENOSPC &&
        errno != EDQUOT && errno != ENOTDIR)
        fd = pano_local_tempfile(dst, mode, tmp);
    return fd;
}

int pano_local_commit(int fd, const char *tmp, const char *dst)
{
    return tmp ? rename(tmp, dst) : link_unnamed(fd, dst);
}

int pano_local_copy(const char *src, const char *dst, const pano_local_options *o,
                    pano_local_result *r)
{
    memset(r, 0, sizeof *r);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return fail(r, errno, "cannot open source", src);
    struct stat st;
    if (fstat(in, &st) < 0) {
        int e = errno;
        close(in);
        return fail(r, e, "cannot stat source", src);
    }
    if (S_ISDIR(st.st_mode)) {
        close(in);
        return fail(r, EISDIR, "source", src);
    }
    if (st.st_size >= (1 << 20))
        posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* An unnamed file where the file system has them (nothing is left
     * behind even if the process is killed), else a temporary name. */
    char *tmp = NULL;
    int out = pano_local_create(dst, st.st_mode, &tmp);
    if (out < 0) {
        int e = errno;
        close(in);
        return fail(r, e, "cannot create a file next to", dst);
    }

    EVP_MD_CTX *md = NULL;
    int rc = 0;
    bool read_failed = false;
    if (o->checksum) {
        md = EVP_MD_CTX_new();
        if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
            snprintf(r->error, sizeof r->error, "SHA-256 is not available");
            rc = -1;
        }
        if (rc == 0)
            rc = copy_buffered(in, out, md, o, &r->bytes, &read_failed);
    } else {
        /* st_size 0 may still have content (procfs): read it */
        rc = S_ISREG(st.st_mode) && st.st_size > 0
                 ? copy_kernel(in, out, (uint64_t)st.st_size, o, &r->bytes)
                 : 1;
        if (rc == 1)
            rc = copy_buffered(in, out, NULL, o, &r->bytes, &read_failed);
    }
    if (rc < 0 && !r->error[0])
        fail(r, errno, read_failed ? "cannot read" : "cannot write", read_failed ? src : dst);
    close(in);

    if (rc == 0 && md) {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int dlen = 0;
        if (EVP_DigestFinal_ex(md, digest, &dlen) != 1) {
            snprintf(r->error, sizeof r->error, "SHA-256 failed");
            rc = -1;
        } else {
            pano_local_hex(digest, dlen, r->sha256);
            /* Verify what landed in the file. */
            char again[65], why[300];
            if (pano_local_sha256_fd(out, again, why, sizeof why) < 0) {
                snprintf(r->error, sizeof r->error, "verifying the copy of %s: %s", dst, why);
                rc = -1;
            } else if (strcmp(again, r->sha256) != 0) {
                snprintf(r->error, sizeof r->error,
                         "checksum mismatch: source sha256 %s, copy sha256 %s", r->sha256,
                         again);
                r->retryable = true;
                rc = -1;
            }
            if (rc == 0 && o->expect_sha256 && strcmp(o->expect_sha256, r->sha256) != 0) {
                /* checked before DST is touched */
                snprintf(r->error, sizeof r->error,
                         "checksum mismatch: expected sha256 %s, source has %s", o->expect_sha256,
                         r->sha256);
                rc = -1;
            }
        }
    }
    EVP_MD_CTX_free(md);
    if (rc == 0) {
        if (pano_local_commit(out, tmp, dst) < 0)
            rc = fail(r, errno, "cannot name the copy", dst);
        else {
            free(tmp); /* it is dst now */
            tmp = NULL;
        }
    }
    if (close(out) < 0 && rc == 0) {
        rc = fail(r, errno, "cannot write", dst);
        unlink(dst);
    }
    if (rc < 0 && tmp)
        unlink(tmp);
    free(tmp);
    return rc;
}
