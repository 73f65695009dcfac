/*
 * template.h - Elasticsearch index templates generated from schemas/.
 *
 * The JSON Schemas of the events (schemas/envelope.schema.json,
 * schemas/events/<event>.schema.json, and schemas/families/<family>.schema.json
 * for the fields of a family's events from other tools; built into lib/ as
 * pano_builtin_schemas)
 * are the one description of the fields. From them come one template per
 * stream (partition.h), each for that stream's partitions <base>-<period>:
 *
 *   <prefix><family>-*      the events of a family (samples apart)
 *   <prefix>samples-*       pano-monitor's samples (kickstart's fields)
 *   the fallback index      events without a valid wf_uuid: every family's
 *                           fields
 *   <prefix>dead-letter-*   rejected messages: the reason, where they came
 *                           from and the original bytes as text
 *   <prefix>summary-*       the per-run summaries (summary.h): set.wf and
 *                           set.id (sorted by only) mapped, nothing dynamic
 *
 * Types: string -> keyword (format date-time -> date), integer -> long,
 * number -> double, boolean -> boolean, object -> object with its
 * properties, array -> the type of its items; "x-es-type" in a schema
 * overrides (e.g. "text" for messages). @timestamp is a date (from ts).
 * wf_uuid is a keyword with a lowercase normalizer, so a term on it
 * matches whatever case a publisher used.
 *
 * A field that two families type differently gets one type in every
 * template (a query over a workflow spans the families, and an aggregation
 * over several indices must see one type): long and double give double, text
 * and a keyword give text with a .keyword sub-field, any other mix gives
 * keyword (which accepts numbers and booleans as they are). An object in
 * one family and a value in another cannot be made compatible; each family
 * keeps its own and the clash is reported.
 *
 * Fields no schema knows are mapped dynamically and safely: strings as
 * keyword (ignore_above 1024), integers as long, reals as double, no date
 * or numeric detection from strings. In the fallback index, where events of
 * every family meet, such fields are all keywords.
 */
#ifndef PANO_TEMPLATE_H
#define PANO_TEMPLATE_H

#include "schema.h"

#include <stdbool.h>
#include <stddef.h>

#define PANO_REPLICAS_AUTO (-1)

/* pano.indexer.replicas: "auto" or a number of replicas (0-16). Returns
 * PANO_REPLICAS_AUTO, the number, or -2 when it is neither. */
int pano_replicas_parse(const char *value);

typedef struct {
    const char *prefix;
    const char *fallback_index;
    const char *dead_letter_index;
    int shards;
    int replicas; /* PANO_REPLICAS_AUTO: index.auto_expand_replicas 0-1 */
    const char *refresh_interval;
    int total_fields_limit;
} pano_template_options;

typedef struct {
    char name[256]; /* template name: the stream's base name */
    char *body;     /* PUT _index_template/<name> body */
} pano_template;

/* Build every template. Returns 0, or -1 with a message in err (a schema
 * that is not valid JSON). Clashes that cannot be resolved are described
 * in warnings (one per line; may be empty), which the caller frees. */
int pano_templates_build(const pano_schema_file *schemas, const pano_template_options *opt,
                         pano_template **out, size_t *count, char **warnings, char *err,
                         size_t errlen);
void pano_templates_free(pano_template *t, size_t count);

#endif
