/*
 * darshan_summarize.h - a .darshan log read into a summary.
 *
 * Opens the log with the binary reader (darshan_log.h), copies the job
 * record into the summary, and for each module region present either feeds
 * its records through the accumulator (darshan_accum.h: POSIX, MPI-IO,
 * STDIO), counts them (fixed-size records of other modules), or notes why
 * the region is skipped.
 */
#ifndef PANO_DARSHAN_SUMMARIZE_H
#define PANO_DARSHAN_SUMMARIZE_H

#include "darshan_summary.h"

#include <stddef.h>
#include <stdint.h>

/* Read a .darshan log from memory into *s. Returns 0, or -1 with a message
 * in err (the summary is then freed), or PANO_DARSHAN_ERR_VERSION (darshan_log.h)
 * for a format version this reader does not know. Modules that cannot be summarized
 * (DXT, HEATMAP, unknown ids or versions) get a note instead of data. */
int pano_darshan_summarize_log(const uint8_t *data, size_t size, pano_darshan_summary *s, char *err,
                               size_t errlen);

#endif
