/*
 * darshan-parser text to events: the pre-3.4 layout (agg_perf_by_cumul,
 * time_by_open, ... and no "# MiB/s"), the 3.4+ layout, incomplete modules,
 * and text that is not darshan-parser's.
 */
#include "darshan_testutil.h"
#include "darshan_text.h"
#include "testutil.h"

/* What darshan-parser 3.1 printed for --total --perf --file (abridged: two
 * counters; the layout is that of darshan-util 3.3.1's darshan-parser.c). */
static const char legacy_text[] =
    "# darshan log version: 3.10\n"
    "# compression method: ZLIB\n"
    "# exe: /projects/app -f /tmp/x.dat\n"
    "# uid: 31074\n"
    "# jobid: 1439734\n"
    "# start_time: 1520287485\n"
    "# start_time_asci: Mon Mar  5 22:04:45 2018\n"
    "# end_time: 1520287486\n"
    "# end_time_asci: Mon Mar  5 22:04:46 2018\n"
    "# nprocs: 4\n"
    "# run time: 2\n"
    "# metadata: lib_ver = 3.1.6\n"
    "# metadata: h = romio_no_indep_rw=true;cb_nodes=4\n"
    "\n"
    "# log file regions\n"
    "# -------------------------------------------------------\n"
    "# header: 320 bytes (uncompressed)\n"
    "# job data: 500 bytes (compressed)\n"
    "# record table: 114 bytes (compressed)\n"
    "# POSIX module: 219 bytes (compressed), ver=3\n"
    "# MPI-IO module: 178 bytes (compressed), ver=2\n"
    "\n"
    "# mounted file systems (mount point and fs type)\n"
    "# -------------------------------------------------------\n"
    "# mount entry:\t/projects\tgpfs\n"
    "\n"
    "# *******************************************************\n"
    "# POSIX module data\n"
    "# *******************************************************\n"
    "\n"
    "# description of POSIX counters:\n"
    "#   POSIX_*: posix operation counts.\n"
    "total_POSIX_OPENS: 16\n"
    "total_POSIX_F_READ_TIME: 0.749659\n"
    "\n"
    "# Total file counts\n"
    "# <file_type> <file_count> <total_bytes> <max_byte_offset>\n"
    "# total: 1 134217728 134217728\n"
    "# read_only: 0 0 0\n"
    "# write_only: 0 0 0\n"
    "# read_write: 1 134217728 134217728\n"
    "# unique: 0 0 0\n"
    "# shared: 1 134217728 134217728\n"
    "\n"
    "# performance\n"
    "# -----------\n"
    "# total_bytes: 134217728\n"
    "#\n"
    "# I/O timing for unique files (seconds):\n"
    "# ...........................\n"
    "# unique files: slowest_rank_io_time: 0.000000\n"
    "# unique files: slowest_rank_meta_only_time: 0.000000\n"
    "# unique files: slowest_rank: 0\n"
    "#\n"
    "# I/O timing for shared files (seconds):\n"
    "# (multiple estimates shown; time_by_slowest is generally the most accurate)\n"
    "# ...........................\n"
    "# shared files: time_by_cumul_io_only: 0.311138\n"
    "# shared files: time_by_cumul_meta_only: 0.036664\n"
    "# shared files: time_by_open: 0.402987\n"
    "# shared files: time_by_open_lastio: 0.394216\n"
    "# shared files: time_by_slowest: 0.402927\n"
    "#\n"
    "# Aggregate performance, including both shared and unique files (MiB/s):\n"
    "# (multiple estimates shown; agg_perf_by_slowest is generally the most accurate)\n"
    "# ...........................\n"
    "# agg_perf_by_cumul: 411.396046\n"
    "# agg_perf_by_open: 317.628374\n"
    "# agg_perf_by_open_lastio: 324.697166\n"
    "# agg_perf_by_slowest: 317.675672\n";

static double number(const pano_json *o, const char *key)
{
    double d;
    ck_assert_msg(o && pano_json_get_number(o, key, &d), "no %s", key);
    return d;
}

START_TEST(legacy_layout)
{
    pano_darshan_summary s;
    char err[256];
    ck_assert_msg(
        pano_darshan_text_parse(legacy_text, strlen(legacy_text), &s, err, sizeof err) == 0, "%s",
        err);
    pano_json *ev = event_of(&s, NULL);
    ck_assert_str_eq(pano_json_get_str(ev, "darshan_log_version"), "3.10");
    ck_assert_str_eq(pano_json_get_str(ev, "exe"), "/projects/app -f /tmp/x.dat");
    ck_assert(number(ev, "nprocs") == 4 && number(ev, "run_time") == 2);
    ck_assert(number(ev, "ts") == 1520287486);
    ck_assert_str_eq(pano_json_get_str(pano_json_get(ev, "metadata"), "h"),
                     "romio_no_indep_rw=true;cb_nodes=4");

    pano_json *posix = pano_json_get(ev, "POSIX_module_data");
    ck_assert(number(posix, "module_version") == 3 && number(posix, "compressed_bytes") == 219);
    ck_assert(number(posix, "total_bytes") == 134217728);
    ck_assert(number(posix, "agg_perf_by_slowest") == 317.675672);
    ck_assert(number(posix, "agg_perf_by_cumul") == 411.396046);
    ck_assert(number(posix, "agg_perf_by_open_lastio") == 324.697166);
    ck_assert_ptr_null(pano_json_get(posix, "agg_time_by_slowest")); /* not in this layout */
    pano_json *shared = pano_json_get(posix, "shared_files");
    ck_assert(number(shared, "time_by_slowest") == 0.402927);
    ck_assert(number(shared, "time_by_open") == 0.402987);
    ck_assert(number(shared, "time_by_cumul_meta_only") == 0.036664);
    pano_json *unique = pano_json_get(posix, "unique_files");
    ck_assert_ptr_null(pano_json_get(unique, "slowest_rank_rw_only_time"));
    int64_t rank;
    ck_assert(pano_json_get_int(unique, "slowest_rank", &rank) && rank == 0);
    pano_json *totals = pano_json_get(posix, "totals");
    ck_assert(number(totals, "POSIX_OPENS") == 16 && number(totals, "POSIX_F_READ_TIME") == 0.749659);
    ck_assert(number(pano_json_get(pano_json_get(posix, "files"), "read_write"),
                     "max_byte_offset") == 134217728);
    /* a module of the region list without data sections */
    pano_json *mpiio = pano_json_get(ev, "MPI-IO_module_data");
    ck_assert(number(mpiio, "module_version") == 2);
    ck_assert_ptr_null(pano_json_get(mpiio, "total_bytes"));

    pano_json_free(ev);
    pano_darshan_summary_free(&s);
}
END_TEST

static pano_darshan_summary parse_fixture(const char *name)
{
    char *path = fixture_dir(name);
    size_t len;
    char *text = read_file(path, &len);
    ck_assert_msg(text != NULL, "%s", path);
    pano_darshan_summary s;
    char err[256];
    ck_assert_msg(pano_darshan_text_parse(text, len, &s, err, sizeof err) == 0, "%s", err);
    free(text);
    free(path);
    return s;
}

START_TEST(current_layout_with_units)
{
    pano_darshan_summary s = parse_fixture("darshan/mpi-io-test-x86_64-3.5.0.total-perf.txt");
    const pano_darshan_module_summary *posix = pano_darshan_summary_find_module(&s, "POSIX");
    ck_assert(posix && posix->has_perf && posix->perf.has_agg_time);
    ck_assert(posix->perf.has_rw_only_time);
    /* "# agg_perf_by_slowest: 3122.286459 # MiB/s" */
    ck_assert(posix->perf.agg_perf_by_slowest > 3122.28 && posix->perf.agg_perf_by_slowest < 3122.29);
    ck_assert_uint_eq(posix->n_totals, 86);
    ck_assert(pano_darshan_summary_find_module(&s, "HEATMAP")); /* from the region list */
    pano_darshan_summary_free(&s);
}
END_TEST

START_TEST(incomplete_modules)
{
    /* with --show-incomplete: data, flagged */
    pano_darshan_summary s =
        parse_fixture("darshan/partial_data_stdio.total-perf.show-incomplete.txt");
    const pano_darshan_module_summary *stdio = pano_darshan_summary_find_module(&s, "STDIO");
    ck_assert(stdio && stdio->partial && stdio->n_totals == 29);
    ck_assert(!pano_darshan_summary_find_module(&s, "POSIX")->partial);
    pano_darshan_summary_free(&s);
    /* without it, darshan-parser stops after the banner: a module without data */
    s = parse_fixture("darshan/partial_data_stdio.total-perf.txt");
    stdio = pano_darshan_summary_find_module(&s, "STDIO");
    ck_assert(stdio && stdio->n_totals == 0 && !stdio->has_perf);
    pano_darshan_summary_free(&s);
}
END_TEST

START_TEST(not_darshan_parser_output)
{
    pano_darshan_summary s;
    char err[256];
    const char *hello = "hello\nworld\n";
    ck_assert_int_eq(pano_darshan_text_parse(hello, strlen(hello), &s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "not darshan-parser output"), "%s", err);

    const char *bad = "# darshan log version: 3.41\n# POSIX module data\n# total_bytes: lots\n";
    ck_assert_int_eq(pano_darshan_text_parse(bad, strlen(bad), &s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 3") && strstr(err, "lots"), "%s", err);

    const char *orphan = "# darshan log version: 3.41\ntotal_POSIX_OPENS: 1\n";
    ck_assert_int_eq(pano_darshan_text_parse(orphan, strlen(orphan), &s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 2"), "%s", err);

    const char nul[] = "# darshan log version: 3.41\n# exe: a\0b\n";
    ck_assert_int_eq(pano_darshan_text_parse(nul, sizeof nul - 1, &s, err, sizeof err), -1);
}
END_TEST

/* Found by fuzz_darshan_text: modules named after a section began (region
 * lines, warnings) must not leave the parser pointing into freed memory. */
START_TEST(modules_named_inside_a_section)
{
    char text[4096] = "# darshan log version: 3.41\n# POSIX module data\n";
    for (int i = 0; i < 40; i++) {
        char line[96];
        snprintf(line, sizeof line, "# M%d module: 10 bytes (compressed), ver=1\n", i);
        strcat(text, line);
    }
    strcat(text, "# *WARNING*: The OTHER module contains incomplete data!\n"
                 "# total: 1 2 3\ntotal_POSIX_OPENS: 4\n# total_bytes: 5\n");
    pano_darshan_summary s;
    char err[256];
    ck_assert_msg(pano_darshan_text_parse(text, strlen(text), &s, err, sizeof err) == 0, "%s", err);
    const pano_darshan_module_summary *posix = pano_darshan_summary_find_module(&s, "POSIX");
    ck_assert(posix->has_files && posix->files[PANO_DARSHAN_FILES_TOTAL].max_offset == 3);
    ck_assert(posix->n_totals == 1 && posix->perf.total_bytes == 5);
    ck_assert(pano_darshan_summary_find_module(&s, "OTHER")->partial);
    ck_assert_uint_eq(s.n_modules, 42);
    pano_darshan_summary_free(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("darshan_text");
    TCase *tc = tcase_create("darshan-parser text");
    tcase_add_test(tc, legacy_layout);
    tcase_add_test(tc, current_layout_with_units);
    tcase_add_test(tc, incomplete_modules);
    tcase_add_test(tc, not_darshan_parser_output);
    tcase_add_test(tc, modules_named_inside_a_section);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
