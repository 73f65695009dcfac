/* Workflows made by hand for the query layer's unit tests. */
#ifndef PANO_JOBS_FIXTURE_H
#define PANO_JOBS_FIXTURE_H

#include "mem.h"
#include "query.h"

#include <stdio.h>

/* A workflow of n zeroed runs (pano_jobs_free frees it); the test names
 * each with pano_test_name_job and sets what it is about. */
static inline pano_jobs pano_test_workflow(const char *uuid, const char *label, size_t n,
                                           double now)
{
    pano_jobs w = {.now = now};
    snprintf(w.wf_uuid, sizeof w.wf_uuid, "%s", uuid);
    w.wf_label = pano_strdup(label);
    w.jobs = pano_calloc(n ? n : 1, sizeof *w.jobs);
    w.n = n;
    return w;
}

/* Names a run (id, also its DAG job id) and its context; it succeeded. */
static inline void pano_test_name_job(pano_job *j, const char *id, const char *transformation,
                                      const char *host, const char *site, const char *exe)
{
    j->id = pano_strdup(id);
    j->dag_job_id = pano_strdup(id);
    j->transformation = pano_strdup(transformation);
    j->host = pano_strdup(host);
    j->site = pano_strdup(site);
    j->exe = pano_strdup(exe);
    j->state = PANO_JOB_SUCCEEDED;
}

#endif
