/*
 * pano-darshan against darshan-parser 3.5.0: for every log in
 * fixtures/darshan, every value that darshan-parser --total --perf and
 * --file printed (the .txt files beside the log, read with pano-darshan's
 * own text parser) must be in the event built from the binary log: integers
 * exactly, floats equal once printed with the same precision. No value is
 * written in this file.
 */
#include "darshan_testutil.h"
#include "darshan_text.h"
#include "testutil.h"

#include <inttypes.h>

typedef struct {
    const char *log;
    size_t compared;
    size_t mismatches;
} checker;

static size_t total_compared;

static void mismatch(checker *c, const char *what, const char *expected, const char *got)
{
    c->mismatches++;
    fprintf(stderr, "%s: %s: darshan-parser printed %s, the event has %s\n", c->log, what,
            expected, got ? got : "nothing");
}

/* A float as darshan-parser prints it (%lf: 6 decimals, or 4 for run time). */
static void check_double(checker *c, const char *what, const pano_json *obj, const char *key,
                         double expected, int decimals)
{
    char want[64], have[64];
    snprintf(want, sizeof want, "%.*f", decimals, expected);
    double got;
    c->compared++;
    if (!obj || !pano_json_get_number(obj, key, &got)) {
        mismatch(c, what, want, NULL);
        return;
    }
    snprintf(have, sizeof have, "%.*f", decimals, got);
    if (strcmp(want, have) != 0)
        mismatch(c, what, want, have);
}

static void check_int(checker *c, const char *what, const pano_json *obj, const char *key,
                      int64_t expected)
{
    char want[32], have[32];
    snprintf(want, sizeof want, "%" PRId64, expected);
    int64_t got;
    c->compared++;
    if (!obj || !pano_json_get_int(obj, key, &got)) {
        mismatch(c, what, want, NULL);
        return;
    }
    snprintf(have, sizeof have, "%" PRId64, got);
    if (got != expected)
        mismatch(c, what, want, have);
}

static void check_str(checker *c, const char *what, const pano_json *obj, const char *key,
                      const char *expected)
{
    const char *got = obj ? pano_json_get_str(obj, key) : NULL;
    c->compared++;
    if (!got || strcmp(got, expected) != 0)
        mismatch(c, what, expected, got);
}

static void check_total(checker *c, const char *module, const pano_json *totals,
                        const pano_darshan_total *t)
{
    char what[160];
    snprintf(what, sizeof what, "%s total_%s", module, t->name);
    switch (t->type) {
    case PANO_DARSHAN_VALUE_INT:
        check_int(c, what, totals, t->name, t->v.i);
        break;
    case PANO_DARSHAN_VALUE_UINT: {
        /* A record id above INT64_MAX is a string in the event. */
        char want[32];
        snprintf(want, sizeof want, "%" PRIu64, t->v.u);
        check_str(c, what, totals, t->name, want);
        break;
    }
    case PANO_DARSHAN_VALUE_FLOAT:
        check_double(c, what, totals, t->name, t->v.f, 6);
        break;
    }
}

static const char *label(char *buf, size_t size, const char *module, const char *name)
{
    snprintf(buf, size, "%s %s", module, name);
    return buf;
}

static void check_module(checker *c, const pano_json *ev, const pano_darshan_module_summary *ref)
{
    if (!ref->n_totals && !ref->has_perf && !ref->has_files)
        return; /* listed in the region table only */
    char key[128], what[160];
    snprintf(key, sizeof key, "%s_module_data", ref->name);
    const pano_json *md = pano_json_get(ev, key);
    if (!md) {
        mismatch(c, key, "a module section", NULL);
        return;
    }
    if (ref->partial) {
        c->compared++;
        pano_json *p = pano_json_get(md, "partial");
        if (!p || p->type != PANO_JSON_BOOL || !p->u.boolean)
            mismatch(c, "partial flag", "true", NULL);
    }

    const pano_json *totals = pano_json_get(md, "totals");
    for (size_t i = 0; i < ref->n_totals; i++)
        check_total(c, ref->name, totals, &ref->totals[i]);
    /* and nothing more than darshan-parser printed */
    if (ref->n_totals && pano_json_len(totals) != ref->n_totals) {
        char want[32], have[32];
        snprintf(want, sizeof want, "%zu counters", ref->n_totals);
        snprintf(have, sizeof have, "%zu", pano_json_len(totals));
        mismatch(c, "number of totals", want, have);
    }

    if (ref->has_perf) {
        const pano_darshan_perf *p = &ref->perf;
        const pano_json *unique = pano_json_get(md, "unique_files");
        const pano_json *shared = pano_json_get(md, "shared_files");
        check_int(c, label(what, sizeof what, ref->name, "total_bytes"), md, "total_bytes", p->total_bytes);
        check_int(c, label(what, sizeof what, ref->name, "slowest_rank"), unique, "slowest_rank", p->slowest_rank);
        check_double(c, label(what, sizeof what, ref->name, "slowest_rank_io_time"), unique, "slowest_rank_io_time",
                     p->slowest_rank_io_time, 6);
        check_double(c, label(what, sizeof what, ref->name, "slowest_rank_meta_only_time"), unique,
                     "slowest_rank_meta_only_time", p->slowest_rank_meta_only_time, 6);
        if (p->has_rw_only_time)
            check_double(c, label(what, sizeof what, ref->name, "slowest_rank_rw_only_time"), unique,
                         "slowest_rank_rw_only_time", p->slowest_rank_rw_only_time, 6);
        check_double(c, label(what, sizeof what, ref->name, "time_by_slowest"), shared, "time_by_slowest",
                     p->time_by_slowest, 6);
        if (p->has_agg_time)
            check_double(c, label(what, sizeof what, ref->name, "agg_time_by_slowest"), md, "agg_time_by_slowest",
                         p->agg_time_by_slowest, 6);
        check_double(c, label(what, sizeof what, ref->name, "agg_perf_by_slowest"), md, "agg_perf_by_slowest",
                     p->agg_perf_by_slowest, 6);
    }

    if (ref->has_files) {
        const pano_json *files = pano_json_get(md, "files");
        for (int i = 0; i < PANO_DARSHAN_FILES_CATEGORIES; i++) {
            const char *cat = pano_darshan_file_category_names[i];
            const pano_json *o = files ? pano_json_get(files, cat) : NULL;
            snprintf(what, sizeof what, "%s files %s count", ref->name, cat);
            check_int(c, what, o, "count", ref->files[i].count);
            snprintf(what, sizeof what, "%s files %s bytes", ref->name, cat);
            check_int(c, what, o, "bytes", ref->files[i].bytes);
            snprintf(what, sizeof what, "%s files %s max_byte_offset", ref->name, cat);
            check_int(c, what, o, "max_byte_offset", ref->files[i].max_offset);
        }
    }
}

static void check_header(checker *c, const pano_json *ev, const pano_darshan_summary *ref)
{
    check_str(c, "darshan log version", ev, "darshan_log_version", ref->version);
    check_str(c, "compression method", ev, "compression_method", ref->compression);
    check_str(c, "exe", ev, "exe", ref->exe);
    check_int(c, "uid", ev, "uid", ref->uid);
    check_int(c, "jobid", ev, "jobid", ref->jobid);
    check_int(c, "nprocs", ev, "nprocs", ref->nprocs);
    check_int(c, "start_time", ev, "start_time", ref->start_time);
    check_int(c, "end_time", ev, "end_time", ref->end_time);
    check_double(c, "run time", ev, "run_time", ref->run_time, 4);
    const pano_json *metadata = pano_json_get(ev, "metadata");
    for (size_t i = 0; i < ref->n_metadata; i++)
        check_str(c, ref->metadata[i].key, metadata, ref->metadata[i].key,
                  ref->metadata[i].value);
}

/* NAME.<kind>.show-incomplete.txt when darshan-parser needed that flag
 * (incomplete modules), else NAME.<kind>.txt. */
static char *reference_text(const char *log, const char *kind, size_t *len)
{
    size_t base = strlen(log) - strlen(".darshan");
    char path[4096];
    snprintf(path, sizeof path, "%.*s.%s.show-incomplete.txt", (int)base, log, kind);
    char *text = read_file(path, len);
    if (!text) {
        snprintf(path, sizeof path, "%.*s.%s.txt", (int)base, log, kind);
        text = read_file(path, len);
    }
    ck_assert_msg(text != NULL, "no reference %s for %s", kind, log);
    return text;
}

static void compare_with(checker *c, const pano_json *ev, const char *kind)
{
    size_t len;
    char *text = reference_text(c->log, kind, &len);
    pano_darshan_summary ref;
    char err[512];
    ck_assert_msg(pano_darshan_text_parse(text, len, &ref, err, sizeof err) == 0, "%s: %s", c->log,
                  err);
    free(text);
    check_header(c, ev, &ref);
    for (size_t i = 0; i < ref.n_modules; i++)
        check_module(c, ev, &ref.modules[i]);
    pano_darshan_summary_free(&ref);
}

START_TEST(every_fixture_matches_darshan_parser)
{
    size_t n;
    char **logs = fixture_logs("darshan", &n);
    ck_assert_uint_ge(n, 9);
    size_t failures = 0;
    for (char **log = logs; *log; log++) {
        pano_darshan_summary s;
        summarize_file(*log, &s);
        pano_json *ev = event_of(&s, *log);
        checker c = {.log = *log};
        compare_with(&c, ev, "total-perf");
        compare_with(&c, ev, "file");
        printf("%s: %zu values compared, %zu differ\n", strrchr(*log, '/') + 1, c.compared,
               c.mismatches);
        total_compared += c.compared;
        failures += c.mismatches;
        pano_json_free(ev);
        pano_darshan_summary_free(&s);
    }
    printf("darshan reference: %zu values compared over %zu logs, %zu differ\n",
           total_compared, n, failures);
    ck_assert_uint_eq(failures, 0);
    free_names(logs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("darshan_reference");
    TCase *tc = tcase_create("darshan-parser 3.5.0");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_fixture_matches_darshan_parser);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
