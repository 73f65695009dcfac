/* A whole file through zstd and back (lib/zstd_file.c): every size,
 * including those that fill the (de)compressor's buffers exactly, comes
 * back byte for byte; a file cut short is an error, not a shorter file. */
#include "testutil.h"
#include "zstd_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/pano-zstd-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* n bytes of text that compresses as a store's pages do, somewhat */
static void write_file(const char *path, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    static const char text[] = "{\"event\":\"kickstart.inv.online\",\"rss\":";
    unsigned x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        int c = i % 64 < sizeof text - 1 ? text[i % 64] : '0' + (int)((x >> 16) % 10);
        ck_assert_int_ne(fputc(c, f), EOF);
    }
    ck_assert_int_eq(fclose(f), 0);
}

static int same_files(const char *a, const char *b)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
    return system(cmd) == 0;
}

START_TEST(round_trip_every_size)
{
    size_t out = ZSTD_DStreamOutSize(), in = ZSTD_CStreamInSize();
    const size_t sizes[] = {0, 1, 1000, out, 3 * out, 3 * out + 1, in, 2 * in - 1, 5000000};
    char plain[96], packed[96], back[96], err[256];
    snprintf(plain, sizeof plain, "%s/plain", dir);
    snprintf(packed, sizeof packed, "%s/packed", dir);
    snprintf(back, sizeof back, "%s/back", dir);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        write_file(plain, sizes[i]);
        ck_assert_msg(pano_zstd_file_compress(plain, packed, 3, err, sizeof err) == 0, "%s", err);
        ck_assert(pano_zstd_file_is(packed));
        ck_assert(!pano_zstd_file_is(plain) || sizes[i] == 0);
        ck_assert_msg(pano_zstd_file_decompress(packed, back, err, sizeof err) == 0,
                      "%zu bytes: %s", sizes[i], err);
        ck_assert_msg(same_files(plain, back), "%zu bytes did not come back", sizes[i]);
    }
}
END_TEST

START_TEST(cut_short_is_an_error)
{
    char plain[96], packed[96], back[96], err[256];
    snprintf(plain, sizeof plain, "%s/plain", dir);
    snprintf(packed, sizeof packed, "%s/packed", dir);
    snprintf(back, sizeof back, "%s/back", dir);
    write_file(plain, 1000000);
    ck_assert_int_eq(pano_zstd_file_compress(plain, packed, 3, err, sizeof err), 0);
    FILE *f = fopen(packed, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    ck_assert_int_eq(truncate(packed, size - 100), 0);
    ck_assert_int_eq(pano_zstd_file_decompress(packed, back, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cut short"), "%s", err);
    ck_assert_int_ne(access(back, F_OK), 0); /* nothing half-written left */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("zstd_file");
    TCase *tc = tcase_create("zstd_file");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip_every_size);
    tcase_add_test(tc, cut_short_is_an_error);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
