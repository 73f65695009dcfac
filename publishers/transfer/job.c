#include "job.h"

#include "clock.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool job_wants_digest(const pano_copy_options *o, const job *j)
{
    return o->checksum || j->spec->sha256;
}

void job_begin_attempt(job *j)
{
    if (j->attempts == 0)
        j->start = pano_now();
    j->attempts++;
    j->error[0] = '\0';
    j->retryable = false;
    pano_debug("%s -> %s (attempt %d)", j->spec->src_shown, j->spec->dst_shown, j->attempts);
}

void job_run_local(const pano_copy_options *o, job *j)
{
    /* An expected digest is always checked. */
    pano_local_options lo = {.checksum = job_wants_digest(o, j),
                             .expect_sha256 = j->spec->sha256,
                             .progress = &j->live};
    j->lrc = pano_local_copy(j->spec->src_path, j->spec->dst_path, &lo, &j->lres);
}

bool job_local_outcome(job *j)
{
    pano_local_result *r = &j->lres;
    bool ok = j->lrc == 0;
    /* The bytes moved are the ones written (progress counted them too). */
    atomic_store(&j->live, r->bytes);
    if (ok) {
        j->size = (int64_t)r->bytes;
        memcpy(j->sha256, r->sha256, sizeof j->sha256);
    } else {
        snprintf(j->error, sizeof j->error, "%s", r->error);
        j->retryable = r->retryable;
    }
    return ok;
}

void job_release(job *j, bool success)
{
    if (j->fd >= 0)
        close(j->fd);
    j->fd = -1;
    if (j->kind != KIND_DOWNLOAD && j->kind != KIND_THIRD_PARTY)
        return;
    if (j->tmp && !success)
        unlink(j->tmp);
    free(j->tmp);
    j->tmp = NULL;
    EVP_MD_CTX_free(j->md);
    j->md = NULL;
}
