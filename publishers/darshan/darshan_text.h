/*
 * darshan_text.h - reading darshan-parser's text output.
 *
 * pano-darshan runs a site's darshan-parser for logs newer than its own
 * reader knows (or reads the text from a file or stdin), and the tests read
 * darshan-parser's reference output; both go through this one parser.
 *
 * It understands the job header, the region list, the module banners, the
 * incomplete-data warning, and what --total, --perf and --file print, in
 * both layouts: darshan-util <= 3.3 (agg_perf_by_cumul/open/open_lastio,
 * time_by_cumul_*, time_by_open*) and >= 3.4 (slowest_rank_rw_only_time,
 * agg_time_by_slowest, values followed by "# seconds" / "# MiB/s"). Other
 * lines (descriptions, mount table, per-record counters) are skipped.
 */
#ifndef PANO_DARSHAN_TEXT_H
#define PANO_DARSHAN_TEXT_H

#include "darshan_summary.h"

#include <stddef.h>

/* Parse text[0..len) into *s. Returns 0, or -1 with a message naming the
 * line in err (the summary is then freed). */
int pano_darshan_text_parse(const char *text, size_t len, pano_darshan_summary *s, char *err,
                            size_t errlen);

#endif
