/*
 * clock.h - the two clocks pano reads.
 *
 * pano_now() is the wall clock: event timestamps, index dates, retention.
 * pano_monotonic() never jumps when the wall clock is set: every interval,
 * timeout, linger, backoff and deadline is measured on it.
 */
#ifndef PANO_CLOCK_H
#define PANO_CLOCK_H

/* Current time as epoch seconds with microseconds. */
double pano_now(void);

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC), nanosecond
 * resolution. */
double pano_monotonic(void);

#endif
