/* Helpers shared by the pano-darshan unit tests. */
#ifndef PANO_DARSHAN_TESTUTIL_H
#define PANO_DARSHAN_TESTUTIL_H

#include "darshan_event.h"
#include "darshan_log.h"
#include "darshan_summarize.h"
#include "darshan_summary.h"
#include "event.h"
#include "json.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* $PANO_FIXTURES/<sub> (meson sets it to tests/data), or tests/data/<sub>
 * when the test runs by hand from the source tree. */
static inline char *fixture_dir(const char *sub)
{
    const char *root = getenv("PANO_FIXTURES");
    char *path = malloc(4096);
    snprintf(path, 4096, "%s/%s", root ? root : "tests/data", sub);
    return path;
}

/* The *.darshan files of a fixture folder, sorted, NULL-terminated. */
static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline char **fixture_logs(const char *sub, size_t *count)
{
    char *dir = fixture_dir(sub);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 8 && strcmp(e->d_name + len - 8, ".darshan") == 0) {
            names = realloc(names, (n + 2) * sizeof *names);
            names[n] = malloc(strlen(dir) + len + 2);
            sprintf(names[n], "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    free(dir);
    qsort(names, n, sizeof *names, compare_names);
    names[n] = NULL;
    *count = n;
    return names;
}

static inline void free_names(char **names)
{
    for (char **p = names; *p; p++)
        free(*p);
    free(names);
}

/* The whole file, or NULL if it does not exist. */
static inline char *read_file(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)size + 1);
    ck_assert(fread(buf, 1, (size_t)size, f) == (size_t)size);
    buf[size] = '\0';
    fclose(f);
    *len = (size_t)size;
    return buf;
}

/* The event of a summary, as a consumer sees it: serialized and parsed. */
static inline pano_json *event_of(const pano_darshan_summary *s, const char *log_file)
{
    pano_config *cfg = pano_config_new();
    pano_source *src = pano_source_new(cfg);
    pano_json *envelope = pano_event_new(src, "darshan.perf");
    pano_buf text = {0};
    pano_darshan_event_write(&text, envelope, s, log_file);
    char err[256];
    /* Strict, as the bridge reads it: no key twice in an object. */
    const pano_json_parse_options strict = {.reject_duplicates = true};
    pano_json *back = pano_json_parse_with(text.data, text.len, &strict, err, sizeof err);
    ck_assert_msg(back != NULL, "%s", err);
    pano_buf_free(&text);
    pano_json_free(envelope);
    pano_source_free(src);
    pano_config_free(cfg);
    return back;
}

/* Summarize a log file; fails the test if it cannot be read. */
static inline void summarize_file(const char *path, pano_darshan_summary *s)
{
    size_t len;
    char *data = read_file(path, &len);
    ck_assert_msg(data != NULL, "cannot read %s", path);
    char err[512];
    int rc = pano_darshan_summarize_log((const uint8_t *)data, len, s, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: %s", path, err);
    free(data);
}

#endif
