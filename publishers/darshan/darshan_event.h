/*
 * darshan_event.h - a summary as a darshan.perf event.
 *
 * The event describes the job, so its ts is the job's end time (not the
 * time the log was read). Field names follow Panorama's pegasus-darshan
 * (job header keys, <MODULE>_module_data with total_bytes,
 * agg_perf_by_slowest, unique_files{}, shared_files{}), so existing
 * consumers keep working; totals{} and files{} add darshan-parser's
 * --total and --file. See docs/darshan.md for the full schema.
 */
#ifndef PANO_DARSHAN_EVENT_H
#define PANO_DARSHAN_EVENT_H

#include "darshan_summary.h"
#include "json.h"

/* Append the event as JSON to out: the members of envelope (made by
 * pano_event_new; its ts becomes the job's end time), then the summary's
 * fields. Written without building a tree: a log has hundreds of counters.
 * log_file, the log's path, may be NULL. */
void pano_darshan_event_write(pano_buf *out, pano_json *envelope, const pano_darshan_summary *s,
                              const char *log_file);

/* The job's end time in epoch seconds (with nanoseconds for 3.41 logs). */
double pano_darshan_summary_end_time(const pano_darshan_summary *s);

#endif
