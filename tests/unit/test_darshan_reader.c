/*
 * The .darshan reader beyond the reference numbers: the other fixture logs
 * (big-endian, format 3.00, bzip2, PnetCDF, incomplete modules, DXT), the
 * fixtures re-encoded by this test (uncompressed, several bzip2 or zlib
 * streams per region, the other byte order) giving the same event, and
 * damaged logs (truncated at every offset, flipped bytes, bad magic, newer
 * versions, absurd lengths) giving a clear error and nothing worse.
 */
#include "darshan_testutil.h"
#include "testutil.h"

#include <bzlib.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <zlib.h>

/* ---- helpers ---------------------------------------------------------------- */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} obuf;

static void put(obuf *o, const void *p, size_t n)
{
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2;
        o->data = realloc(o->data, o->cap);
    }
    memcpy(o->data + o->len, p, n);
    o->len += n;
}

static void put_u64_at(uint8_t *p, uint64_t v, bool swap)
{
    if (swap)
        v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
}

static void put_u32_at(uint8_t *p, uint32_t v, bool swap)
{
    if (swap)
        v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
}

static void swap_words(uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        v = __builtin_bswap64(v);
        memcpy(p + i, &v, 8);
    }
}

/* Compress raw as `streams` separate streams, back to back. */
static void compress_region(obuf *o, const uint8_t *raw, size_t len, pano_darshan_compression comp,
                            int streams)
{
    if (comp == PANO_DARSHAN_COMP_NONE) {
        put(o, raw, len);
        return;
    }
    size_t piece = len / (size_t)streams + 1;
    for (size_t off = 0; off < len || (len == 0 && off == 0); off += piece) {
        size_t n = len - off < piece ? len - off : piece;
        unsigned int out_len = (unsigned int)(n + n / 50 + 1024);
        uint8_t *out = malloc(out_len);
        if (comp == PANO_DARSHAN_COMP_ZLIB) {
            uLongf zlen = out_len;
            ck_assert(compress(out, &zlen, raw + off, n) == Z_OK);
            out_len = (unsigned int)zlen;
        } else {
            ck_assert(BZ2_bzBuffToBuffCompress((char *)out, &out_len, (char *)raw + off,
                                               (unsigned int)n, 9, 0, 0) == BZ_OK);
        }
        put(o, out, out_len);
        free(out);
        if (len == 0)
            break;
    }
}

/* Swap the fixed-layout parts of a region's contents (all that pano-darshan
 * decodes), to turn a log into one of the other byte order. */
static void swap_region(const pano_darshan_log *log, int id, uint8_t *raw, size_t len)
{
    if (id == -1) { /* job record: the int64 fields before the metadata */
        swap_words(raw, log->format_minor >= 41 ? 56 : 40);
        return;
    }
    if (id == -2) { /* name records: ids (and lengths in 3.00) */
        size_t p = 0;
        while (p + 8 < len) {
            swap_words(raw + p, 8);
            if (log->format_minor == 0) {
                uint32_t n;
                memcpy(&n, raw + p + 8, 4);
                if (log->swap)
                    n = __builtin_bswap32(n);
                uint32_t swapped = __builtin_bswap32(n);
                memcpy(raw + p + 8, &swapped, 4);
                p += 12 + n;
            } else {
                p += 8 + strlen((char *)raw + p + 8) + 1;
            }
        }
        return;
    }
    if (pano_darshan_module_def_of(id) ||
        pano_darshan_fixed_record_size(id, log->module_versions[id]))
        swap_words(raw, len);
}

/* The log re-encoded with another compression, `streams` streams per
 * region, and optionally in the other byte order. */
static uint8_t *reencode(const uint8_t *data, size_t size, pano_darshan_compression comp,
                         int streams, bool other_order, size_t *out_len)
{
    pano_darshan_log log;
    char err[256];
    ck_assert_msg(pano_darshan_log_open(&log, data, size, err, sizeof err) == 0, "%s", err);
    bool swap = log.swap != other_order; /* the output's order relative to the host */
    obuf o = {0};
    uint8_t zero[2048] = {0};
    put(&o, zero, log.header_size);
    memcpy(o.data, data, 8); /* version */
    put_u64_at(o.data + 8, 6567223, swap);
    o.data[16] = (uint8_t)comp;

    pano_darshan_buf raw = {0};
    /* job, then names, then modules */
    ck_assert(pano_darshan_log_inflate(&log, log.job, "job", &raw, err, sizeof err) == 0);
    if (other_order)
        swap_region(&log, -1, raw.data, raw.len);
    compress_region(&o, raw.data, raw.len, comp, streams);

    pano_darshan_region names = {o.len, 0};
    ck_assert(pano_darshan_log_inflate(&log, log.names, "names", &raw, err, sizeof err) == 0);
    if (other_order)
        swap_region(&log, -2, raw.data, raw.len);
    if (raw.len)
        compress_region(&o, raw.data, raw.len, comp, streams);
    names.len = o.len - names.off;

    pano_darshan_region modules[PANO_DARSHAN_MAX_MODS] = {{0, 0}};
    for (int id = 0; id < PANO_DARSHAN_MAX_MODS; id++) {
        if (!log.modules[id].len)
            continue;
        ck_assert(pano_darshan_log_inflate(&log, log.modules[id], "module", &raw, err,
                                           sizeof err) == 0);
        if (other_order)
            swap_region(&log, id, raw.data, raw.len);
        modules[id].off = o.len;
        compress_region(&o, raw.data, raw.len, comp, streams);
        modules[id].len = o.len - modules[id].off;
    }
    pano_darshan_buf_free(&raw);

    bool current = log.format_minor >= 41;
    size_t maps = current ? 48 : 40, slots = current ? 64 : 16;
    size_t versions = maps + 16 * slots;
    uint64_t partial = 0;
    for (size_t slot = 0; slot < slots; slot++) {
        int id = pano_darshan_module_id_of_slot(log.format_minor, (int)slot);
        if (id >= PANO_DARSHAN_MAX_MODS)
            continue;
        put_u64_at(o.data + maps + 16 * slot, modules[id].off, swap);
        put_u64_at(o.data + maps + 16 * slot + 8, modules[id].len, swap);
        put_u32_at(o.data + versions + 4 * slot, log.module_versions[id], swap);
        if ((log.partial >> id) & 1)
            partial |= UINT64_C(1) << slot;
    }
    if (current) {
        put_u64_at(o.data + 24, partial, swap);
        put_u64_at(o.data + 32, names.len ? names.off : o.len, swap);
        put_u64_at(o.data + 40, names.len, swap);
    } else {
        put_u32_at(o.data + 20, (uint32_t)partial, swap);
        put_u64_at(o.data + 24, names.len ? names.off : o.len, swap);
        put_u64_at(o.data + 32, names.len, swap);
    }
    *out_len = o.len;
    return o.data;
}

/* The event without what legitimately differs between encodings. */
static char *comparable_event(const pano_darshan_summary *s)
{
    pano_json *ev = event_of(s, NULL);
    pano_json_remove(ev, "event_id");
    pano_json_remove(ev, "seq");
    pano_json_remove(ev, "wf_uuid");
    pano_json_remove(ev, "compression_method");
    for (size_t i = 0; i < pano_json_len(ev); i++)
        if (pano_json_at(ev, i)->type == PANO_JSON_OBJECT)
            pano_json_remove(pano_json_at(ev, i), "compressed_bytes");
    char *text = pano_json_serialize(ev, NULL);
    pano_json_free(ev);
    return text;
}

static char **all_logs(size_t *n)
{
    size_t a, b;
    char **one = fixture_logs("darshan", &a), **two = fixture_logs("darshan-more", &b);
    char **all = malloc((a + b + 1) * sizeof *all);
    memcpy(all, one, a * sizeof *all);
    memcpy(all + a, two, (b + 1) * sizeof *all);
    free(one);
    free(two);
    *n = a + b;
    return all;
}

/* ---- the other fixture logs ----------------------------------------------- */

static const pano_darshan_module_summary *module(const pano_darshan_summary *s, const char *name)
{
    const pano_darshan_module_summary *m = pano_darshan_summary_find_module(s, name);
    ck_assert_msg(m != NULL, "no %s module", name);
    return m;
}

static int64_t total_int(const pano_darshan_module_summary *m, const char *name)
{
    for (size_t i = 0; i < m->n_totals; i++)
        if (strcmp(m->totals[i].name, name) == 0)
            return m->totals[i].v.i;
    ck_abort_msg("no total %s", name);
    return 0;
}

START_TEST(more_logs_give_sensible_events)
{
    size_t n;
    char **logs = fixture_logs("darshan-more", &n);
    ck_assert_uint_eq(n, 6);
    for (char **log = logs; *log; log++) {
        pano_darshan_summary s;
        summarize_file(*log, &s);
        const char *name = strrchr(*log, '/') + 1;
        ck_assert_int_gt(s.nprocs, 0);
        ck_assert_int_ge(s.end_time, s.start_time);
        ck_assert(s.start_time > 1400000000 && s.end_time < 2000000000); /* 2014 .. 2033 */
        ck_assert_ptr_nonnull(s.exe);
        const pano_darshan_module_summary *posix = module(&s, "POSIX");
        ck_assert(posix->has_perf && posix->records > 0);
        ck_assert_int_gt(posix->perf.total_bytes, 0);
        ck_assert(posix->perf.agg_perf_by_slowest > 0);
        /* bytes read + written as counted by the file table and by --perf agree */
        ck_assert_int_eq(posix->files[PANO_DARSHAN_FILES_TOTAL].bytes, posix->perf.total_bytes);
        ck_assert_int_eq(total_int(posix, "POSIX_BYTES_READ") +
                             total_int(posix, "POSIX_BYTES_WRITTEN"),
                         posix->perf.total_bytes);

        if (strstr(name, "ppc64")) { /* big-endian, format 3.10, old module versions */
            ck_assert_str_eq(s.version, "3.10");
            ck_assert_int_eq(s.nprocs, 4);
            ck_assert_uint_eq(posix->version, 3);
            ck_assert_int_eq(total_int(posix, "POSIX_FILENOS"), -1); /* up-converted */
            ck_assert_int_eq(module(&s, "MPI-IO")->perf.total_bytes, posix->perf.total_bytes);
            ck_assert_int_eq(total_int(module(&s, "STDIO"), "STDIO_FDOPENS"), -1);
            ck_assert_ptr_nonnull(module(&s, "BG/Q")->note);
        } else if (strstr(name, "3.0.0")) {
            ck_assert_str_eq(s.version, "3.00");
            ck_assert_uint_eq(posix->version, 1);
            ck_assert_int_eq(total_int(posix, "POSIX_RENAME_SOURCES"), -1);
            ck_assert_int_eq(module(&s, "MPI-IO")->perf.total_bytes, posix->perf.total_bytes);
        } else if (strstr(name, "PNETCDF")) {
            ck_assert_int_ge(module(&s, "PNETCDF_FILE")->records, 1);
            ck_assert_int_ge(module(&s, "PNETCDF_VAR")->records, 1);
        } else if (strstr(name, "imbalanced")) {
            ck_assert(posix->partial);
            ck_assert_int_eq(s.nprocs, 496);
        } else if (strstr(name, "dxt")) {
            ck_assert(module(&s, "DXT_POSIX")->partial && module(&s, "DXT_POSIX")->note);
            ck_assert(!posix->partial);
        } else if (strstr(name, "bzip2")) {
            ck_assert_str_eq(s.compression, "BZIP2");
            ck_assert_int_eq(s.nprocs, 65536);
        }
        pano_darshan_summary_free(&s);
    }
    free_names(logs);
}
END_TEST

/* ---- encodings -------------------------------------------------------------- */

START_TEST(reencoded_logs_give_the_same_event)
{
    static const struct {
        pano_darshan_compression comp;
        int streams;
        bool other_order;
    } variants[] = {
        {PANO_DARSHAN_COMP_NONE, 1, false}, {PANO_DARSHAN_COMP_BZIP2, 3, false},
        {PANO_DARSHAN_COMP_ZLIB, 5, false}, {PANO_DARSHAN_COMP_ZLIB, 1, true},
        {PANO_DARSHAN_COMP_BZIP2, 2, true},
    };
    size_t n;
    char **logs = all_logs(&n);
    for (char **log = logs; *log; log++) {
        size_t len;
        char *data = read_file(*log, &len);
        pano_darshan_summary s;
        summarize_file(*log, &s);
        char *want = comparable_event(&s);
        pano_darshan_summary_free(&s);
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            size_t out_len;
            uint8_t *out = reencode((uint8_t *)data, len, variants[v].comp, variants[v].streams,
                                    variants[v].other_order, &out_len);
            char err[512];
            ck_assert_msg(pano_darshan_summarize_log(out, out_len, &s, err, sizeof err) == 0,
                          "%s variant %zu: %s", *log, v, err);
            char *got = comparable_event(&s);
            ck_assert_msg(strcmp(want, got) == 0, "%s variant %zu:\n%s\n%s", *log, v, want, got);
            ck_assert_str_eq(s.compression, pano_darshan_compression_name(variants[v].comp));
            free(got);
            pano_darshan_summary_free(&s);
            free(out);
        }
        free(want);
        free(data);
    }
    free_names(logs);
}
END_TEST

/* ---- damage ----------------------------------------------------------------- */

/* Summarize damaged bytes: fails or succeeds, never crashes; a failure
 * comes with a message. Returns the result. */
static int try_damaged(const uint8_t *data, size_t len, char *err, size_t errlen)
{
    pano_darshan_summary s;
    err[0] = '\0';
    int rc = pano_darshan_summarize_log(data, len, &s, err, errlen);
    if (rc == 0)
        pano_darshan_summary_free(&s);
    else
        ck_assert_msg(err[0] != '\0', "an error without a message");
    return rc;
}

START_TEST(truncated_logs_fail_clearly)
{
    size_t n, tried = 0;
    char **logs = all_logs(&n);
    for (char **log = logs; *log; log++) {
        size_t len;
        char *data = read_file(*log, &len);
        /* every offset of small logs, a few thousand of large ones */
        size_t step = len > 40000 ? len / 3000 : 1;
        for (size_t cut = 0; cut < len; cut += step) {
            char err[512];
            int rc = try_damaged((uint8_t *)data, cut, err, sizeof err);
            ck_assert_msg(rc < 0, "%s truncated to %zu bytes was accepted", *log, cut);
            tried++;
        }
        free(data);
    }
    printf("truncated logs: %zu truncations, all rejected\n", tried);
    free_names(logs);
}
END_TEST

START_TEST(flipped_bytes_never_crash)
{
    size_t n, tried = 0, rejected = 0;
    char **logs = all_logs(&n);
    for (char **log = logs; *log; log++) {
        size_t len;
        uint8_t *data = (uint8_t *)read_file(*log, &len);
        /* every header byte, then a few hundred bytes spread over the rest */
        size_t step = len > 2000 ? len / 400 : 1;
        for (size_t i = 0; i < len; i += (i < 1400 ? 1 : step)) {
            static const uint8_t masks[] = {0x01, 0xff};
            for (size_t m = 0; m < sizeof masks; m++) {
                data[i] ^= masks[m];
                char err[512];
                rejected += try_damaged(data, len, err, sizeof err) < 0;
                tried++;
                data[i] ^= masks[m];
            }
        }
        free(data);
    }
    printf("flipped bytes: %zu damaged logs, %zu rejected, the rest read\n", tried, rejected);
    free_names(logs);
}
END_TEST

static void expect_error(const uint8_t *data, size_t len, const char *needle)
{
    char err[512];
    ck_assert_int_lt(try_damaged(data, len, err, sizeof err), 0);
    ck_assert_msg(strstr(err, needle), "'%s' not in '%s'", needle, err);
}

START_TEST(bad_headers_fail_clearly)
{
    char *path = fixture_dir("darshan/mpi-io-test-x86_64-3.5.0.darshan");
    size_t len;
    uint8_t *data = (uint8_t *)read_file(path, &len);
    uint8_t *copy = malloc(len);

    memcpy(copy, data, len);
    copy[8] ^= 0x55;
    expect_error(copy, len, "bad magic number");

    memcpy(copy, data, len);
    memcpy(copy, "3.50\0\0\0\0", 8);
    char err[512];
    pano_darshan_summary s;
    ck_assert_int_eq(pano_darshan_summarize_log(copy, len, &s, err, sizeof err),
                     PANO_DARSHAN_ERR_VERSION);
    ck_assert_msg(strstr(err, "'3.50'") && strstr(err, "--parser"), "%s", err);

    memcpy(copy, "\0\0\0\0\0\0\0\0", 8);
    expect_error(copy, len, "not a Darshan log");
    expect_error(data, 10, "truncated header");

    /* absurd lengths and offsets in the region maps */
    memcpy(copy, data, len);
    put_u64_at(copy + 40, UINT64_C(1) << 62, false); /* name records */
    expect_error(copy, len, "outside the file");
    memcpy(copy, data, len);
    put_u64_at(copy + 48 + 16, len - 10, false); /* POSIX offset */
    put_u64_at(copy + 48 + 24, UINT64_MAX - 5, false); /* and length */
    expect_error(copy, len, "outside the file");
    memcpy(copy, data, len);
    put_u64_at(copy + 48 + 16, 5, false); /* POSIX region inside the header */
    expect_error(copy, len, "outside the file");
    memcpy(copy, data, len);
    copy[16] = 7; /* compression */
    expect_error(copy, len, "unknown compression");

    free(copy);
    free(data);
    free(path);
}
END_TEST

/* Damage inside the compressed data: re-encode uncompressed, change job
 * and record fields, and check the reader's answers. */
START_TEST(absurd_record_values_fail_clearly)
{
    char *path = fixture_dir("darshan/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan");
    size_t len, out_len;
    uint8_t *data = (uint8_t *)read_file(path, &len);
    uint8_t *plain = reencode(data, len, PANO_DARSHAN_COMP_NONE, 1, false, &out_len);
    pano_darshan_log log;
    char err[512];
    ck_assert(pano_darshan_log_open(&log, plain, out_len, err, sizeof err) == 0);

    /* a rank beyond the job's processes */
    uint8_t *copy = malloc(out_len);
    memcpy(copy, plain, out_len);
    put_u64_at(copy + log.modules[PANO_DARSHAN_MOD_POSIX].off + 8, 1000, false);
    expect_error(copy, out_len, "rank 1000");

    /* nprocs of 2^62 must not make the reader allocate per process */
    memcpy(copy, plain, out_len);
    put_u64_at(copy + log.job.off + 24, UINT64_C(1) << 62, false); /* 3.21: uid, start, end, nprocs */
    pano_darshan_summary s;
    ck_assert_msg(pano_darshan_summarize_log(copy, out_len, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(s.nprocs, INT64_C(1) << 62);
    pano_darshan_summary_free(&s);

    /* counters that overflow when summed, and a float too long for %.6f */
    memcpy(copy, plain, out_len);
    size_t posix = log.modules[PANO_DARSHAN_MOD_POSIX].off, record = 16 + 8 * (69 + 17);
    for (size_t r = 0; r < 3; r++)
        put_u64_at(copy + posix + r * record + 16 + 8 * 14, INT64_MAX, false); /* BYTES_READ */
    double huge = 1e300;
    uint64_t bits;
    memcpy(&bits, &huge, 8);
    put_u64_at(copy + posix + 16 + 8 * (69 + 8), bits, false); /* F_READ_TIME */
    ck_assert_msg(pano_darshan_summarize_log(copy, out_len, &s, err, sizeof err) == 0, "%s", err);
    pano_json *ev = event_of(&s, NULL);
    double read_time;
    ck_assert(pano_json_get_number(pano_json_get(pano_json_get(ev, "POSIX_module_data"), "totals"),
                                   "POSIX_F_READ_TIME", &read_time) &&
              read_time >= 1e300);
    pano_json_free(ev);
    pano_darshan_summary_free(&s);

    /* a job region too short for the job record */
    memcpy(copy, plain, out_len);
    put_u64_at(copy + 24, log.job.off + 100, false); /* the name map offset ends the job region */
    expect_error(copy, out_len, "job");

    /* a module region ending in part of a record: read, with a note */
    memcpy(copy, plain, out_len);
    put_u64_at(copy + 40 + 16 + 8, log.modules[PANO_DARSHAN_MOD_POSIX].len - 100, false);
    ck_assert_msg(pano_darshan_summarize_log(copy, out_len, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_ptr_nonnull(pano_darshan_summary_find_module(&s, "POSIX")->note);
    pano_darshan_summary_free(&s);

    free(copy);
    free(plain);
    free(data);
    free(path);
}
END_TEST

/* A zlib bomb: a small region that inflates far beyond any real log. */
START_TEST(inflation_is_bounded)
{
    size_t big = (size_t)64 << 20;
    uint8_t *zeros = calloc(1, big);
    uLongf zlen = compressBound(big);
    uint8_t *z = malloc(zlen);
    ck_assert(compress2(z, &zlen, zeros, big, 9) == Z_OK);
    free(zeros);

    char *path = fixture_dir("darshan/mpi-io-test-x86_64-3.5.0.darshan");
    size_t len;
    uint8_t *data = (uint8_t *)read_file(path, &len);
    uint8_t *bomb = malloc(len + zlen);
    memcpy(bomb, data, len);
    memcpy(bomb + len, z, zlen);
    put_u64_at(bomb + 48 + 16, len, false);
    put_u64_at(bomb + 48 + 24, zlen, false);
    expect_error(bomb, len + zlen, "inflates to more than");
    free(bomb);
    free(z);
    free(data);
    free(path);
}
END_TEST

int main(void)
{
#ifndef __SANITIZE_ADDRESS__
    /* No allocation may come near this (ASan builds bound it instead with
     * max_allocation_size_mb, see meson.build). */
    struct rlimit limit = {(rlim_t)1 << 30, (rlim_t)1 << 30};
    setrlimit(RLIMIT_AS, &limit);
#endif
    Suite *s = suite_create("darshan_reader");
    TCase *tc = tcase_create("reader");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, more_logs_give_sensible_events);
    tcase_add_test(tc, reencoded_logs_give_the_same_event);
    tcase_add_test(tc, truncated_logs_fail_clearly);
    tcase_add_test(tc, flipped_bytes_never_crash);
    tcase_add_test(tc, bad_headers_fail_clearly);
    tcase_add_test(tc, absurd_record_values_fail_clearly);
    tcase_add_test(tc, inflation_is_bounded);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
