/*
 * bench_workflow.h - the big workflow of bench/query.sh and bench/explorer.sh,
 * event by event, in the shape one of two publishers gives it.
 *
 * Job j (0 <= j < jobs) is DAG job "job_ID%05d" of transformation xf_(j%10)
 * on host node-(j%50).example.org, pid 10000+j; jobs start one every 0.35 s,
 * samples come 1 s apart, and the last job that ended did so about 60 s
 * before `now`.
 *
 *   monitor  pano-monitor's: per job a kickstart.inv.start, `samples`
 *            kickstart.inv.online samples WITH delta (start, periodic, end)
 *            and a kickstart.inv.end; 3 % fail (exit 1: j % 33 == 5); the
 *            last 20 jobs never end (half their samples, no end).
 *   pegasus  Pegasus's: per job a kickstart.inv.start, `samples` cumulative
 *            kickstart.inv.online samples WITHOUT delta (Panorama's
 *            kickstart's fields, tests/data/events), a kickstart.inv.end,
 *            and pegasus-monitord's stampede.job_inst.main.start and .end
 *            (Pegasus 5.0.5's fields, tests/data/pegasus) for job instance
 *            j+1 of job_id = the DAG job id, as pano-bridge passes them on
 *            (wf_uuid from xwf_id, a hashed event_id); 1 % fail (exit 1, raw
 *            status 256: j % 100 == 7); the last 10 jobs never end (half
 *            their samples, no kickstart.inv.end, no main.end); and before
 *            the first job the workflow's stampede.xwf.start.
 *
 * Events are written in this order, job after job, each as one compact JSON
 * object, to emit(name, text, len, user); a non-zero return stops the walk.
 */
#ifndef PANO_BENCH_WORKFLOW_H
#define PANO_BENCH_WORKFLOW_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { BENCH_SHAPE_MONITOR, BENCH_SHAPE_PEGASUS } bench_shape;

/* "monitor" or "pegasus"; false for anything else. */
bool bench_shape_parse(const char *name, bench_shape *out);
/* Samples per job when none is asked for: 100 (monitor), 12 (pegasus). */
int bench_shape_default_samples(bench_shape shape);

typedef struct {
    bench_shape shape;
    long long jobs;
    int samples;         /* per job that ends, >= 2 */
    const char *wf_uuid;
    const char *run_id;  /* makes the event ids of this workflow unique */
    double now;          /* epoch s */
} bench_workflow;

typedef int (*bench_emit)(const char *event, const char *text, size_t len, void *user);

/* Emits every event; returns how many, or -1 when emit returned non-zero. */
long long bench_workflow_write(const bench_workflow *w, bench_emit emit, void *user);

/* How many events bench_workflow_write emits, and how many of the jobs fail
 * and never end. */
long long bench_workflow_count(const bench_workflow *w);
long long bench_workflow_failed(const bench_workflow *w);
long long bench_workflow_unended(const bench_workflow *w);

#endif
