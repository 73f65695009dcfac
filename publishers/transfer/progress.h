/*
 * progress.h - the progress line pano-transfer draws on a terminal.
 *
 * Shown only when stderr is a terminal (or when forced); otherwise the
 * program is quiet. The line is redrawn in place at most 5 times a second
 * and ended with a newline when the run finishes.
 */
#ifndef PANO_TRANSFER_PROGRESS_H
#define PANO_TRANSFER_PROGRESS_H

#include "copy.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct pano_progress pano_progress;

/* enabled: draw at all (usually isatty(fileno(out))). */
pano_progress *pano_progress_new(FILE *out, bool enabled);
void pano_progress_update(pano_progress *p, const pano_copy_stats *s);
/* Draw the final state and end the line. */
void pano_progress_finish(pano_progress *p, const pano_copy_stats *s);
void pano_progress_free(pano_progress *p);

/* "1.5 MiB", "812 B": binary units, one decimal from KiB on. */
void pano_progress_bytes(char *out, size_t size, double bytes);

/* The text of one progress line (no \r), for elapsed seconds. */
void pano_progress_format(char *out, size_t size, const pano_copy_stats *s, double elapsed);

#endif
