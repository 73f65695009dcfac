/* pano-transfer: local copies through the engine (native and libcurl),
 * exact bytes, checksums, failures that leave no half file. */
#include "copy.h"
#include "local.h"
#include "testutil.h"
#include "transfer_list.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/pano-copy-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *path(const char *name)
{
    static char buf[8][256];
    static int n;
    char *p = buf[n++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

/* A file of size bytes (a pattern that is not all zeros); its SHA-256. */
static void make_file(const char *name, size_t size, char sha[65])
{
    unsigned char *data = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++)
        data[i] = (unsigned char)((i * 2654435761u) >> 13);
    FILE *f = fopen(path(name), "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, size, f), size);
    ck_assert_int_eq(fclose(f), 0);
    unsigned char d[32];
    unsigned int dl;
    EVP_Digest(data, size, d, &dl, EVP_sha256(), NULL);
    pano_local_hex(d, 32, sha);
    free(data);
}

static off_t size_of(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

typedef struct {
    pano_copy_result r[2000];
    size_t n;
} results;

static void on_done(void *ctx, const pano_copy_result *r)
{
    results *res = ctx;
    ck_assert_uint_lt(res->n, 2000);
    res->r[res->n++] = *r;
}

static long run(pano_transfer_list *l, const pano_copy_options *o, results *res)
{
    pano_copy_callbacks cb = {.done = on_done, .ctx = res};
    char err[256];
    res->n = 0;
    long failed = pano_copy_run(o, l, &cb, err, sizeof err);
    ck_assert_msg(failed >= 0, "%s", err);
    return failed;
}

static void add(pano_transfer_list *l, const char *src, const char *dst)
{
    char err[512];
    ck_assert_msg(pano_transfer_list_add(l, src, dst, "a", "b", NULL, 0, err, sizeof err) == 0,
                  "%s", err);
}

/* How many entries a directory holds (. and .. aside): what a copy left
 * beside its destination, temporary or half files included. */
static int entries(const char *directory)
{
    DIR *d = opendir(directory);
    ck_assert_msg(d != NULL, "%s: %s", directory, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Known sizes, exact bytes and digests, with both engines. */
static void known_sizes(bool curl)
{
    static const size_t sizes[] = {0, 1, 10 * 1024 * 1024};
    char sha[3][65];
    pano_transfer_list l = {0};
    for (size_t i = 0; i < 3; i++) {
        char name[32], out[32];
        snprintf(name, sizeof name, "in%zu", i);
        snprintf(out, sizeof out, "out/sub/o%zu", i); /* parents are created */
        make_file(name, sizes[i], sha[i]);
        add(&l, path(name), path(out));
    }
    pano_copy_options o;
    pano_copy_options_init(&o);
    o.checksum = true;
    o.curl_for_local = curl;
    o.jobs = 2;
    results *res = calloc(1, sizeof *res);
    ck_assert_int_eq(run(&l, &o, res), 0);
    ck_assert_uint_eq(res->n, 3);
    for (size_t k = 0; k < res->n; k++) {
        pano_copy_result *r = &res->r[k];
        size_t i = r->index;
        ck_assert_int_eq(r->status, 0);
        ck_assert_uint_eq(r->bytes, sizes[i]);
        ck_assert_int_eq(r->size, (int64_t)sizes[i]);
        ck_assert_str_eq(r->sha256, sha[i]);
        ck_assert_int_eq(r->retries, 0);
        ck_assert(r->end >= r->start && r->start > 1e9);
        ck_assert_int_eq(size_of(l.items[i].dst_path), (off_t)sizes[i]);
        char again[65], err[256];
        ck_assert(pano_local_sha256_file(l.items[i].dst_path, again, err, sizeof err) == 0);
        ck_assert_str_eq(again, sha[i]);
    }
    free(res);
    pano_transfer_list_free(&l);
}

START_TEST(known_sizes_native) { known_sizes(false); }
END_TEST

START_TEST(known_sizes_curl) { known_sizes(true); }
END_TEST

/* File systems without O_TMPFILE: named temporary files, renamed. Runs in
 * its own process (Check forks), so the setting does not leak. */
START_TEST(known_sizes_named_temp)
{
    pano_local_use_named_temporaries();
    known_sizes(false);
    known_sizes(true);
}
END_TEST

/* Asked for, a new file is a named temporary next to its destination. */
START_TEST(named_temporaries_when_asked)
{
    char *tmp = NULL;
    pano_local_use_named_temporaries();
    int fd = pano_local_create(path("named/out"), 0644, &tmp);
    ck_assert_int_ge(fd, 0);
    ck_assert_ptr_nonnull(tmp);
    ck_assert_msg(strstr(tmp, "/named/.out.pano-"), "%s", tmp);
    ck_assert_int_eq(access(tmp, F_OK), 0);
    ck_assert_int_eq(pano_local_commit(fd, tmp, path("named/out")), 0);
    ck_assert_int_eq(access(path("named/out"), F_OK), 0);
    close(fd);
    free(tmp);
}
END_TEST

START_TEST(failed_named_temp_leaves_nothing)
{
    pano_local_use_named_temporaries();
    char sha[65];
    make_file("src", 5000, sha);
    ck_assert_int_eq(mkdir(path("dst"), 0755), 0);
    pano_transfer_list l = {0};
    char err[512];
    ck_assert(pano_transfer_list_add(&l, path("src"), path("dst/c"), NULL, NULL,
                                     "1111111111111111111111111111111111111111111111111111111111111111",
                                     0, err, sizeof err) == 0);
    pano_copy_options o;
    pano_copy_options_init(&o);
    o.checksum = true;
    o.retry_delay = 0.01;
    results *res = calloc(1, sizeof *res);
    ck_assert_int_eq(run(&l, &o, res), 1);
    ck_assert_msg(entries(path("dst")) == 0, "files left in dst");
    free(res);
    pano_transfer_list_free(&l);
}
END_TEST

/* A destination that exists is replaced whole (an unnamed file linked under
 * a temporary name, or a named temporary file, renamed over it), and no
 * temporary name stays beside it. */
static void replaces_existing(void)
{
    char sha[65];
    make_file("new", 70000, sha);
    ck_assert_int_eq(mkdir(path("rdst"), 0755), 0);
    FILE *f = fopen(path("rdst/o"), "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_gt(fputs("an older, shorter file\n", f), 0);
    ck_assert_int_eq(fclose(f), 0);
    pano_transfer_list l = {0};
    add(&l, path("new"), path("rdst/o"));
    pano_copy_options o;
    pano_copy_options_init(&o);
    results *res = calloc(1, sizeof *res);
    ck_assert_int_eq(run(&l, &o, res), 0);
    ck_assert_int_eq(res->r[0].status, 0);
    char again[65], err[256];
    ck_assert(pano_local_sha256_file(path("rdst/o"), again, err, sizeof err) == 0);
    ck_assert_str_eq(again, sha);
    ck_assert_int_eq(entries(path("rdst")), 1);
    free(res);
    pano_transfer_list_free(&l);
}

START_TEST(replaces_existing_unnamed) { replaces_existing(); }
END_TEST

START_TEST(replaces_existing_named_temp)
{
    pano_local_use_named_temporaries();
    replaces_existing();
}
END_TEST

START_TEST(empty_and_one_byte_digests)
{
    char sha[65];
    make_file("e", 0, sha);
    ck_assert_str_eq(sha, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    pano_local_options lo = {.checksum = true};
    pano_local_result r;
    ck_assert_int_eq(pano_local_copy(path("e"), path("e2"), &lo, &r), 0);
    ck_assert_str_eq(r.sha256, sha);
    ck_assert_uint_eq(r.bytes, 0);
    FILE *f = fopen(path("x"), "w");
    ck_assert_int_eq(fputc('x', f), 'x');
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(pano_local_copy(path("x"), path("x2"), &lo, &r), 0);
    ck_assert_str_eq(r.sha256, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881");
    ck_assert_uint_eq(r.bytes, 1);
    /* without a checksum: copy_file_range */
    lo.checksum = false;
    ck_assert_int_eq(pano_local_copy(path("x"), path("x3"), &lo, &r), 0);
    ck_assert_str_eq(r.sha256, "");
    ck_assert_int_eq(size_of(path("x3")), 1);
}
END_TEST

START_TEST(many_small_files)
{
    pano_transfer_list l = {0};
    char sha[500][65];
    ck_assert_int_eq(mkdir(path("many"), 0755), 0);
    for (int i = 0; i < 500; i++) {
        char name[32], out[32];
        snprintf(name, sizeof name, "many/f%03d", i);
        snprintf(out, sizeof out, "copy/f%03d", i);
        make_file(name, (size_t)(i * 37 % 4096), sha[i]);
        add(&l, path(name), path(out));
    }
    for (int jobs = 1; jobs <= 4; jobs += 3) {
        pano_copy_options o;
        pano_copy_options_init(&o);
        o.jobs = jobs;
        o.checksum = jobs == 4;
        results *res = calloc(1, sizeof *res);
        ck_assert_int_eq(run(&l, &o, res), 0);
        ck_assert_uint_eq(res->n, 500);
        uint64_t total = 0;
        for (size_t k = 0; k < res->n; k++) {
            size_t i = res->r[k].index;
            ck_assert_uint_eq(res->r[k].bytes, i * 37 % 4096);
            total += res->r[k].bytes;
            if (o.checksum)
                ck_assert_str_eq(res->r[k].sha256, sha[i]);
            ck_assert_int_eq(size_of(l.items[i].dst_path), (off_t)(i * 37 % 4096));
        }
        ck_assert_uint_gt(total, 0);
        free(res);
    }
    pano_transfer_list_free(&l);
}
END_TEST

START_TEST(failures_leave_nothing)
{
    char sha[65];
    make_file("src", 1000, sha);
    ck_assert_int_eq(mkdir(path("dst"), 0755), 0);
    ck_assert_int_eq(mkdir(path("adir"), 0755), 0);
    pano_transfer_list l = {0};
    add(&l, path("missing"), path("dst/a"));
    add(&l, path("adir"), path("dst/b"));
    char err[512];
    /* the expected digest does not match */
    ck_assert(pano_transfer_list_add(&l, path("src"), path("dst/c"), NULL, NULL,
                                     "0000000000000000000000000000000000000000000000000000000000000000",
                                     0, err, sizeof err) == 0);
    for (int curl = 0; curl < 2; curl++) {
        pano_copy_options o;
        pano_copy_options_init(&o);
        o.checksum = true;
        o.retries = 2;
        o.retry_delay = 0.01;
        o.curl_for_local = curl;
        results *res = calloc(1, sizeof *res);
        ck_assert_int_eq(run(&l, &o, res), 3);
        for (size_t k = 0; k < res->n; k++) {
            pano_copy_result *r = &res->r[k];
            ck_assert_int_eq(r->status, 1);
            ck_assert_msg(r->error[0], "no error text");
            if (r->index == 0) {
                ck_assert_msg(strstr(r->error, "missing") || strstr(r->error, "exist"), "%s",
                              r->error);
                ck_assert_int_eq(r->retries, 0); /* not a failure that goes away */
                ck_assert_uint_eq(r->bytes, 0);
            }
            if (r->index == 2) {
                ck_assert_msg(strstr(r->error, "checksum mismatch"), "%s", r->error);
                ck_assert_uint_ge(r->bytes, 1000);
            }
        }
        ck_assert_msg(entries(path("dst")) == 0, "files left in dst (curl=%d)", curl);
        free(res);
    }
    pano_transfer_list_free(&l);
}
END_TEST

/* An interrupt in the middle of a long list (here from the done callback
 * of the 20th transfer): every transfer is reported once, those that had
 * not started as such, and only completed copies exist. Each case runs in
 * a process of its own (Check forks): the interrupt is process-wide. */
static void interrupt_after_20(void *ctx, const pano_copy_result *r)
{
    on_done(ctx, r);
    if (((results *)ctx)->n == 20)
        pano_copy_interrupt();
}

static void interrupted_list(int jobs)
{
    pano_transfer_list l = {0};
    ck_assert_int_eq(mkdir(path("many"), 0755), 0);
    for (int i = 0; i < 1000; i++) {
        char name[32], out[32], sha[65];
        snprintf(name, sizeof name, "many/f%03d", i);
        snprintf(out, sizeof out, "copy/f%03d", i);
        make_file(name, 100, sha);
        add(&l, path(name), path(out));
    }
    pano_copy_options o;
    pano_copy_options_init(&o);
    o.jobs = jobs;
    results *res = calloc(1, sizeof *res);
    pano_copy_callbacks cb = {.done = interrupt_after_20, .ctx = res};
    char err[256];
    long failed = pano_copy_run(&o, &l, &cb, err, sizeof err);
    ck_assert_msg(failed > 0, "%s", err);
    ck_assert_uint_eq(res->n, 1000);
    bool seen[1000] = {false};
    size_t ok = 0;
    for (size_t k = 0; k < res->n; k++) {
        pano_copy_result *r = &res->r[k];
        ck_assert(!seen[r->index]);
        seen[r->index] = true;
        if (r->status == 0) {
            ok++;
            ck_assert_int_eq(size_of(l.items[r->index].dst_path), 100);
        } else {
            ck_assert_str_eq(r->error, "interrupted before it started");
            ck_assert_uint_eq(r->bytes, 0);
            ck_assert_int_eq(size_of(l.items[r->index].dst_path), -1);
        }
    }
    ck_assert_uint_ge(ok, 20);
    ck_assert_uint_eq(ok + (size_t)failed, 1000);
    /* nothing but the completed copies in the destination */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq %zu", path("copy"), ok);
    ck_assert_int_eq(system(cmd), 0);
    free(res);
    pano_transfer_list_free(&l);
}

START_TEST(interrupted_inline) { interrupted_list(1); }
END_TEST

START_TEST(interrupted_on_workers) { interrupted_list(4); }
END_TEST

START_TEST(third_party_is_relayed)
{
    /* Neither side local: relayed, and reported like any transfer when the
     * source cannot be reached (the HTTP and sftp tests relay real data). */
    pano_transfer_list l = {0};
    add(&l, "http://127.0.0.1:9/a", "ftp://127.0.0.1:9/b");
    pano_copy_options o;
    pano_copy_options_init(&o);
    o.retries = 0;
    results *res = calloc(1, sizeof *res);
    ck_assert_int_eq(run(&l, &o, res), 1);
    ck_assert_msg(strstr(res->r[0].error, "onnect"), "%s", res->r[0].error);
    ck_assert(res->r[0].relayed);
    ck_assert_uint_eq(res->r[0].bytes, 0);
    free(res);
    pano_transfer_list_free(&l);
}
END_TEST

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("transfer_copy");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, known_sizes_native);
    tcase_add_test(tc, known_sizes_curl);
    tcase_add_test(tc, known_sizes_named_temp);
    tcase_add_test(tc, named_temporaries_when_asked);
    tcase_add_test(tc, failed_named_temp_leaves_nothing);
    tcase_add_test(tc, replaces_existing_unnamed);
    tcase_add_test(tc, replaces_existing_named_temp);
    tcase_add_test(tc, empty_and_one_byte_digests);
    tcase_add_test(tc, many_small_files);
    tcase_add_test(tc, failures_leave_nothing);
    tcase_add_test(tc, third_party_is_relayed);
    tcase_add_test(tc, interrupted_inline);
    tcase_add_test(tc, interrupted_on_workers);
    suite_add_tcase(s, tc);
    int rc = pano_test_run(s);
    curl_global_cleanup();
    return rc;
}
