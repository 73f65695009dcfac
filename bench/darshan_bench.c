/*
 * darshan_bench - time converting .darshan logs to darshan.perf events
 * against the floor: only inflating the log's compressed regions.
 *
 *   darshan_bench LOG...
 *
 * Both are measured in the same run, in alternating rounds, each round long
 * enough to be timed reliably; the best round of each counts. Prints one
 * line per log and ends with
 *   RESULT darshan ratio_to_inflate=<geometric mean over the logs>
 */
#include "darshan_event.h"
#include "darshan_log.h"
#include "darshan_summarize.h"
#include "darshan_summary.h"
#include "event.h"
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 7
#define ROUND_SECONDS 0.05

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The floor: inflate every region of the log (job, names, all modules). */
static int inflate_all(const pano_darshan_file *f, pano_darshan_buf *buf)
{
    pano_darshan_log log;
    char err[512];
    if (pano_darshan_log_open(&log, f->data, f->size, err, sizeof err) < 0)
        return -1;
    if (pano_darshan_log_inflate(&log, log.job, "job", buf, err, sizeof err) < 0 ||
        pano_darshan_log_inflate(&log, log.names, "names", buf, err, sizeof err) < 0)
        return -1;
    for (int id = 0; id < PANO_DARSHAN_MAX_MODS; id++)
        if (log.modules[id].len &&
            pano_darshan_log_inflate(&log, log.modules[id], "module", buf, err, sizeof err) < 0)
            return -1;
    return 0;
}

/* What pano-darshan does per log: read, summarize, build and serialize. */
static int convert(const pano_darshan_file *f, pano_source *src)
{
    pano_darshan_summary s;
    char err[512];
    if (pano_darshan_summarize_log(f->data, f->size, &s, err, sizeof err) < 0)
        return -1;
    pano_json *envelope = pano_event_new(src, "darshan.perf");
    pano_buf json = {0};
    pano_darshan_event_write(&json, envelope, &s, "log");
    pano_buf_free(&json);
    pano_json_free(envelope);
    pano_darshan_summary_free(&s);
    return 0;
}

/* The reader alone: summarize, no event. */
static int summarize(const pano_darshan_file *f)
{
    pano_darshan_summary s;
    char err[512];
    if (pano_darshan_summarize_log(f->data, f->size, &s, err, sizeof err) < 0)
        return -1;
    pano_darshan_summary_free(&s);
    return 0;
}

typedef struct {
    const pano_darshan_file *file;
    pano_source *src;
    pano_darshan_buf buf;
} bench_ctx;

static int run_floor(bench_ctx *c) { return inflate_all(c->file, &c->buf); }
static int run_convert(bench_ctx *c) { return convert(c->file, c->src); }
static int run_summarize(bench_ctx *c) { return summarize(c->file); }

/* Seconds per call: the best of ROUNDS rounds of `iterations` calls. */
static double best_round(int (*fn)(bench_ctx *), bench_ctx *c, long iterations, double *best)
{
    double t0 = now();
    for (long i = 0; i < iterations; i++)
        if (fn(c) < 0)
            return -1;
    double per_call = (now() - t0) / (double)iterations;
    if (*best == 0 || per_call < *best)
        *best = per_call;
    return per_call;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: darshan_bench LOG...\n");
        return 2;
    }
    pano_config *cfg = pano_config_new();
    char env_err[256];
    if (pano_config_load_env(cfg, env_err, sizeof env_err) < 0) {
        fprintf(stderr, "darshan_bench: %s\n", env_err);
        return 2;
    }
    pano_source *src = pano_source_new(cfg);
    double log_sum = 0, worst = 0, read_all_log_sum = 0;
    int measured = 0, read_all = 0;
    printf("%-60s %10s %10s %10s %7s %7s\n", "log", "inflate_us", "read_us", "convert_us",
           "read_x", "ratio");
    for (int a = 1; a < argc; a++) {
        pano_darshan_file file;
        char err[512];
        if (pano_darshan_file_load(argv[a], &file, err, sizeof err) < 0) {
            fprintf(stderr, "%s: %s\n", argv[a], err);
            return 1;
        }
        bench_ctx c = {.file = &file, .src = src};
        /* calibrate: enough calls for a round of ROUND_SECONDS */
        double t0 = now();
        long calls = 0;
        while (now() - t0 < ROUND_SECONDS / 5) {
            if (run_convert(&c) < 0) {
                fprintf(stderr, "%s: cannot convert\n", argv[a]);
                return 1;
            }
            calls++;
        }
        long iterations = calls * 5 > 0 ? calls * 5 : 1;
        double floor_best = 0, convert_best = 0, read_best = 0;
        for (int r = 0; r < ROUNDS; r++) {
            if (best_round(run_floor, &c, iterations, &floor_best) < 0 ||
                best_round(run_summarize, &c, iterations, &read_best) < 0 ||
                best_round(run_convert, &c, iterations, &convert_best) < 0) {
                fprintf(stderr, "%s: failed\n", argv[a]);
                return 1;
            }
        }
        double ratio = convert_best / floor_best;
        const char *name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        printf("%-60.60s %10.1f %10.1f %10.1f %7.2f %7.2f\n", name, floor_best * 1e6,
               read_best * 1e6, convert_best * 1e6, read_best / floor_best, ratio);
        log_sum += log(ratio);
        /* Logs whose DXT or heatmap regions are skipped, not inflated, read
         * in far less than their floor and flatter the mean: also report
         * the mean without them. */
        if (read_best / floor_best >= 0.5) {
            read_all_log_sum += log(ratio);
            read_all++;
        }
        if (ratio > worst)
            worst = ratio;
        measured++;
        pano_darshan_buf_free(&c.buf);
        pano_darshan_file_free(&file);
    }
    double geomean = exp(log_sum / measured);
    printf("ratio_to_inflate over %d logs: geometric mean %.2f, max %.2f (target <= 2)\n",
           measured, geomean, worst);
    if (read_all)
        printf("without the %d logs whose regions are partly skipped: geometric mean %.2f\n",
               measured - read_all, exp(read_all_log_sum / read_all));
    printf("RESULT darshan ratio_to_inflate=%.2f\n", geomean);
    pano_source_free(src);
    pano_config_free(cfg);
    return 0;
}
