/*
 * backoff.h - when pano-indexer tries again: the waits between attempts
 * and the deadline of a drain (pure functions of what happened, but for
 * the jitter, which is random).
 *
 * A wait is backoff x a jitter factor in [0.5, 1.5) (so indexers do not
 * retry in step); the backoff starts at BACKOFF_FIRST and doubles up to
 * pano.indexer.max_backoff. After a shutdown request a batch is retried
 * for at most pano.indexer.drain_timeout seconds. Times are on
 * pano_monotonic().
 */
#ifndef PANO_INDEXER_BACKOFF_H
#define PANO_INDEXER_BACKOFF_H

#include <stdbool.h>

/* The first backoff of a batch's retries, in seconds. */
#define BACKOFF_FIRST 0.1

/* The backoff after one of backoff seconds: doubled, at most max. */
double backoff_next(double backoff, double max);

/* A random factor in [0.5, 1.5) for a wait. */
double backoff_jitter(void);

/* The deadline of a batch's retries at time now: the one it had
 * (deadline, 0 for none), or, once stopping, drain_timeout from now. */
double backoff_deadline(double deadline, bool stopping, double now, double drain_timeout);

/* Whether the retries are over at time now (deadline 0: never). */
bool backoff_expired(double deadline, double now);

#endif
