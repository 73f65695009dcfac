/*
 * redact.h - an event with its names replaced, for a file to share.
 *
 * Every string value of an event (at any depth, array items included) is
 * replaced by a pseudonym, "r" and 16 hexadecimal digits of HMAC-SHA256
 * under a key drawn at random for one redactor and never kept: the same
 * value gets the same pseudonym wherever it occurs in the file (a host in
 * its samples and in the stampede events), and without the key no
 * dictionary of likely names maps a pseudonym back. Kept as they are:
 *   - numbers, booleans, and strings that are numbers ("512");
 *   - what tells events and workflows apart: the event name, workflow
 *     UUIDs (wf_uuid, xwf_id, root_xwf_id, parent_xwf_id, subwf_id), kinds
 *     and levels (type, type_desc, jobtype, level, sample, file_type), the
 *     names of metrics (a custom metric's name, its tags' names), versions
 *     of Pegasus;
 *   - transformation names (transformation, xformation), unless asked.
 * Job and task ids (Pegasus's carry the workflow's label) and event_id (an
 * id may carry a host name) are replaced too: by their pseudonyms, the
 * same wherever they occur, so that the DAG's edges, a job's attempts and
 * its runs still join, and an event is still stored once.
 */
#ifndef PANO_QUERY_REDACT_H
#define PANO_QUERY_REDACT_H

#include "json.h"

#include <stdbool.h>

typedef struct pano_redactor pano_redactor;

/* A redactor with a fresh random key; transformations: replace their names
 * too. NULL when no random key could be drawn. */
pano_redactor *pano_redactor_new(bool transformations);
void pano_redactor_free(pano_redactor *r);

/* Replace, in place, what the event must not show. */
void pano_redact_event(pano_redactor *r, pano_json *event);

#endif
