/*
 * runs.h - the runs a workflow's rows are made of (internal to the query
 * library): what jobs.c collects from the events and jobs_summaries.c from
 * the indexer's summaries, before jobs.c joins them into rows.
 *
 * A run is a pano-monitor run (per dag_job_id, hostname, pid) or a
 * pegasus-monitord job instance (per job_id, job_inst_id). Both sources
 * add them in any order, then sort them (runs_sort) before the Darshan
 * and transfer events are counted per (dag_job_id, hostname) with
 * runs_side; the order is total, so the rows made of them are the same.
 */
#ifndef PANO_QUERY_RUNS_H
#define PANO_QUERY_RUNS_H

#include "query.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    pano_job job;
    int64_t inst_id;   /* stampede job_inst_id, -1 for a monitor run */
    bool ended;
    double submitted;  /* stampede: first submit, for ordering instances */
} run;

typedef struct {
    run *runs;
    size_t n, cap;
} collect;

/* Which jobs' rows a question needs: all, those with a run or an instance
 * not ended, or those and the ones that ended badly (summary.h's open and
 * failed). */
typedef enum { RUNS_ALL, RUNS_OPEN, RUNS_OPEN_OR_FAILED } runs_scope;

/* A new run at the end of c, nothing known yet (-1 for the unknowns). */
run *runs_add(collect *c);
/* Free a run's strings. */
void runs_free_job(pano_job *j);

/* Exit code and signal of a raw wait status as Pegasus stores them (512 =
 * exit 2, a signal in the low 7 bits, negative when kickstart itself
 * failed): the state it means. */
pano_job_state runs_decode_status(double raw, int *exitcode, int *signal);
/* The state a job instance is in after its latest state event (a
 * stampede.job_inst.* name) with that status. */
pano_job_state runs_state_after(const char *event, double status);
/* Sort c's runs: by dag_job_id, a job's monitor runs before its
 * instances, the runs by start and the instances by job_inst_id, then by
 * (hostname, pid, xformation, site, exe). Nothing to do when they are
 * already in that order. */
void runs_sort(collect *c);
/* Count a DAG job's Darshan and transfer events on host: they go to its
 * latest run on that host (or on any host when none ran there), the first
 * in c's order of those as late. c sorted (runs_sort). */
void runs_side(collect *c, const char *job, const char *host, int64_t darshan, int64_t transfer);

/* The events' side of a workflow that tells whether its summaries cover it:
 * for each kind of summary (run, inst, side), how many of its events the
 * workflow has and the ts of the earliest. */
enum { RUNS_KIND_RUN, RUNS_KIND_INST, RUNS_KIND_SIDE, RUNS_KINDS };
typedef struct {
    int64_t events[RUNS_KINDS];
    double first[RUNS_KINDS];
} runs_coverage;

/* The runs of a workflow from the indexer's summaries (summary.h), added
 * to c (empty) in the order above, and the side events counted when
 * with_side; of the jobs in scope, where the summaries can tell (every run
 * else). 1 when the
 * summaries cover every event of the workflow of their kinds (for each
 * kind with events, a summary holds one as early as the earliest), 2 when
 * they do and only the runs of the jobs in scope were read; 0, with
 * c left empty, when they do not (a store written, or part of it, before
 * summaries existed); -1 with a message in err. On the embedded store, its
 * own summaries, when they count exactly the workflow's events of each kind
 * (events unused). */
int runs_from_summaries(pano_query *q, const pano_jobs *jobs, const runs_coverage *events,
                        bool with_side, runs_scope scope, collect *c, char *err,
                        size_t errlen);

/* pano_query_jobs, or for a narrower scope, where the summaries can tell,
 * the rows of the jobs in it alone (with every attempt of theirs), partial
 * then set in out. */
int runs_query_jobs(pano_query *q, const char *wf_uuid, double now, runs_scope scope,
                    pano_jobs *out, char *err, size_t errlen);

#endif
