/*
 * globus.h - Globus Transfer task documents into transfer.inv.go bodies.
 *
 * Input is one or more JSON documents, one after another (whitespace
 * between them), as the Transfer API and the globus CLI print them:
 *
 *   - a task ({"DATA_TYPE": "task", "task_id": ..., "status": ...}), as
 *     GET /task/<id> or `globus task show --format json` gives it;
 *   - a task carrying its events: "events" or "transfer_events" (an array
 *     of event documents), or "task_event_list"/"event_list" (an
 *     event_list document or an array);
 *   - an event_list document ({"DATA_TYPE": "event_list", "DATA": [...]},
 *     `globus task event-list --format json`): its events belong to the
 *     task just before it;
 *   - a task_list document ({"DATA_TYPE": "task_list", "DATA": [...]}), or
 *     a JSON array of tasks.
 *
 * Each task gives one body: the task's fields as Globus names them (less
 * DATA_TYPE and event_link), with these changes so that the body sits in
 * the same index as the other transfer events:
 *
 *   status          0 (SUCCEEDED) or 1 (FAILED) like every transfer event;
 *                   left out while the task is ACTIVE or INACTIVE
 *   globus_status   the Globus status word (SUCCEEDED, FAILED, ACTIVE, ...)
 *   transfer_start_time, transfer_completion_time, transfer_duration
 *                   request_time / completion_time as epoch seconds
 *   transfer_events[]  the events, oldest first, each with code, time,
 *                   description, details (the string as Globus sent it),
 *                   is_error, and "ts" (the time as epoch seconds); a
 *                   PROGRESS event's details are parsed into the numbers
 *                   bytes_transferred, duration (s) and mbps.
 */
#ifndef PANO_TRANSFER_GLOBUS_H
#define PANO_TRANSFER_GLOBUS_H

#include "json.h"

#include <stdbool.h>
#include <stddef.h>

/* Parse the documents in text and append one body (an object) per task to
 * bodies (an array). Returns the number of tasks, or -1 with a message in
 * err that names the line and column of malformed input. */
long pano_globus_parse(const char *text, size_t len, pano_json *bodies, char *err,
                       size_t errlen);

/* Globus time ("2019-10-01 22:13:45+00:00", "2019-10-01T22:13:45.5Z", ...)
 * as epoch seconds; false when it is not such a time. */
bool pano_globus_time(const char *text, double *out);

/* Parse a PROGRESS event's details (a JSON object in a string, or
 * "key=value" words) into bytes_transferred, duration and mbps, set on
 * event. Returns true when at least one number was found. */
bool pano_globus_progress(const char *details, pano_json *event);

#endif
