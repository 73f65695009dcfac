/* pano-transfer: list files, URL helpers and the progress line. */
#include "progress.h"
#include "testutil.h"
#include "transfer_list.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int parse(pano_transfer_list *l, const char *text, char *err, size_t errlen)
{
    return pano_transfer_list_parse(l, text, strlen(text), "local", "condorpool", err, errlen);
}

START_TEST(json_lines_and_pairs)
{
    pano_transfer_list l = {0};
    char err[512];
    const char *text =
        "# a comment\n"
        "\n"
        "{\"src\": \"http://example.org/a b\", \"dst\": \"/scratch/a\", \"src_site\": \"web\"}\n"
        "  /data/in.txt   file:///scratch/in%20put.txt  \n"
        "{\"source_url\": \"/x\", \"destination_url\": \"sftp://host/x\", "
        "\"destination_site_name\": \"remote\", \"sha256\": "
        "\"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\"}\n";
    ck_assert_msg(parse(&l, text, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(l.len, 3);

    ck_assert_str_eq(l.items[0].src_url, "http://example.org/a b");
    ck_assert_ptr_null(l.items[0].src_path);
    ck_assert_str_eq(l.items[0].dst_url, "file:///scratch/a");
    ck_assert_str_eq(l.items[0].dst_path, "/scratch/a");
    ck_assert_str_eq(l.items[0].src_site, "web");
    ck_assert_str_eq(l.items[0].dst_site, "condorpool"); /* the default */
    ck_assert_uint_eq(l.items[0].line, 3);

    ck_assert_str_eq(l.items[1].src_path, "/data/in.txt");
    ck_assert_str_eq(l.items[1].dst_path, "/scratch/in put.txt");
    ck_assert_str_eq(l.items[1].src_site, "local");

    ck_assert_str_eq(l.items[2].dst_url, "sftp://host/x");
    ck_assert_ptr_null(l.items[2].dst_path);
    ck_assert_str_eq(l.items[2].dst_site, "remote");
    ck_assert_str_eq(l.items[2].sha256,
                     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    pano_transfer_list_free(&l);
}
END_TEST

START_TEST(errors_name_the_line)
{
    static const struct {
        const char *text, *expect;
    } cases[] = {
        {"a b\nonly-one\n", "line 2: expected \"SRC DST\""},
        {"a b c\n", "line 1: expected \"SRC DST\""},
        {"\n{\"src\": \"a\"}\n", "line 2: needs \"src\" and \"dst\""},
        {"{\"src\": \"a\", \"dst\": }\n", "line 1: invalid JSON"},
        {"gopher://h/x /tmp/x\n", "line 1: source: unsupported scheme 'gopher'"},
        {"/a file://otherhost/x\n", "line 1: destination: only file:///path"},
        {"{\"src\": \"/a\", \"dst\": \"/b\", \"sha256\": \"abc\"}\n", "line 1: sha256 'abc'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pano_transfer_list l = {0};
        char err[512] = "";
        ck_assert_int_eq(parse(&l, cases[i].text, err, sizeof err), -1);
        ck_assert_msg(strstr(err, cases[i].expect), "case %zu: '%s' lacks '%s'", i, err,
                      cases[i].expect);
        pano_transfer_list_free(&l);
    }
}
END_TEST

START_TEST(directory_destination_gets_the_name)
{
    char dir[] = "/tmp/pano-list-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    pano_transfer_list l = {0};
    char err[512];
    ck_assert(pano_transfer_list_add(&l, "http://h/p/data.bin?x=1", dir, NULL, NULL, NULL, 0,
                                     err, sizeof err) == 0);
    ck_assert(pano_transfer_list_add(&l, "/a/b/c.txt", "sftp://h/dir/", NULL, NULL, NULL, 0, err,
                                     sizeof err) == 0);
    char expect[PATH_MAX];
    snprintf(expect, sizeof expect, "%s/data.bin", dir);
    ck_assert_str_eq(l.items[0].dst_path, expect);
    ck_assert_str_eq(l.items[1].dst_url, "sftp://h/dir/c.txt");
    /* passwords never reach events or logs */
    /* a destination that does not exist is the file itself */
    char file[PATH_MAX + 8], file_url[PATH_MAX + 16];
    snprintf(file, sizeof file, "%s/x", dir);
    snprintf(file_url, sizeof file_url, "file://%s", file);
    ck_assert(pano_transfer_list_add(&l, "ftp://user:s3cret@h/x", file, NULL, NULL, NULL, 0,
                                     err, sizeof err) == 0);
    ck_assert_str_eq(l.items[2].src_url, "ftp://user:s3cret@h/x");
    ck_assert_ptr_null(strstr(l.items[2].src_shown, "s3cret"));
    ck_assert_ptr_nonnull(strstr(l.items[2].src_shown, "user:***@h/x"));
    ck_assert_str_eq(l.items[2].dst_shown, file_url);
    ck_assert_ptr_null(l.items[0].src_site);
    pano_transfer_list_free(&l);
    rmdir(dir);
}
END_TEST

START_TEST(urls_and_paths)
{
    char scheme[16];
    ck_assert(pano_transfer_scheme("HTTPS://x/y", scheme, sizeof scheme));
    ck_assert_str_eq(scheme, "https");
    ck_assert(!pano_transfer_scheme("/plain/path", scheme, sizeof scheme));
    ck_assert(!pano_transfer_scheme("weird:/x", scheme, sizeof scheme));
    ck_assert(pano_transfer_scheme_supported("scp"));
    ck_assert(!pano_transfer_scheme_supported("gopher"));

    char *u = pano_transfer_path_to_url("/a b/ü%#.txt");
    ck_assert_str_eq(u, "file:///a%20b/%C3%BC%25%23.txt");
    char *p = pano_transfer_url_to_path(u);
    ck_assert_str_eq(p, "/a b/ü%#.txt");
    free(u);
    free(p);
    /* Relative paths become absolute. */
    char cwd[PATH_MAX], expect[PATH_MAX + 32];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    u = pano_transfer_path_to_url("./rel");
    p = pano_transfer_url_to_path(u);
    snprintf(expect, sizeof expect, "%s/rel", cwd);
    ck_assert_str_eq(p, expect);
    free(u);
    free(p);
    p = pano_transfer_url_to_path("file://localhost/etc/hosts");
    ck_assert_str_eq(p, "/etc/hosts");
    free(p);
    ck_assert_ptr_null(pano_transfer_url_to_path("file://elsewhere/etc/hosts"));
    ck_assert_ptr_null(pano_transfer_url_to_path("file:///a%00b"));
    ck_assert_ptr_null(pano_transfer_url_to_path("http://x/y"));
}
END_TEST

START_TEST(progress_line)
{
    char b[64];
    pano_progress_bytes(b, sizeof b, 812);
    ck_assert_str_eq(b, "812 B");
    pano_progress_bytes(b, sizeof b, 1.5 * 1024 * 1024);
    ck_assert_str_eq(b, "1.5 MiB");
    pano_copy_stats s = {.total = 10, .done = 4, .failed = 1, .active = 2, .bytes = 2048};
    char line[256];
    pano_progress_format(line, sizeof line, &s, 2.0);
    ck_assert_str_eq(line, "4/10 files  2.0 KiB  1.0 KiB/s  2 active  1 failed");
    /* Not a terminal: nothing is drawn. */
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    pano_progress *p = pano_progress_new(f, false);
    pano_progress_update(p, &s);
    pano_progress_finish(p, &s);
    pano_progress_free(p);
    fclose(f);
    ck_assert_uint_eq(outlen, 0);
    free(out);
    /* Enabled: redrawn in place, one newline at the end. */
    f = open_memstream(&out, &outlen);
    p = pano_progress_new(f, true);
    pano_progress_update(p, &s);
    pano_progress_finish(p, &s);
    pano_progress_free(p);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(out, "\r4/10 files"));
    ck_assert(out[outlen - 1] == '\n');
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("transfer_list");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, json_lines_and_pairs);
    tcase_add_test(tc, errors_name_the_line);
    tcase_add_test(tc, directory_destination_gets_the_name);
    tcase_add_test(tc, urls_and_paths);
    tcase_add_test(tc, progress_line);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
