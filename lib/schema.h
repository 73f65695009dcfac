/*
 * schema.h - check events against pano's JSON Schemas (schemas/).
 *
 * A small checker for the subset of JSON Schema (draft 2020-12) that pano's
 * schemas use, applied to the parsed form of an event (json.h):
 *
 *   type (a name or a list; "integer" also accepts 3.0), required,
 *   properties, additionalProperties (false or a schema), items (one schema
 *   for every element), minItems, maxItems, enum, const, minimum, maximum,
 *   exclusiveMinimum, exclusiveMaximum, minLength, maxLength (in characters),
 *   pattern (an ECMA-262 regex translated to POSIX ERE by regex_ecma.h;
 *   what it cannot translate is refused when the schema is loaded), allOf, anyOf, oneOf, not, and $ref to another
 *   schema file (relative to the referencing file: "../envelope.schema.json")
 *   or to a part of one ("#/$defs/name", "other.schema.json#/$defs/x").
 * Annotations (title, description, $id, x-*) and unknown keywords are
 * ignored. Failures name the field and the rule in plain words:
 *   "missing required field 'wf_uuid'", "'seq' must be an integer",
 *   "'argv[2]' must be a string", "'event' does not match the pattern ...".
 *
 * A schema set is a directory: envelope.schema.json at its top applies to
 * every event, events/<event name>.schema.json to one event (and usually
 * includes the envelope with allOf/$ref). Files are loaded once; checking
 * allocates nothing. The project's schemas/ are built into every program
 * (pano_builtin_schemas), so none needs the directory at run time.
 */
#ifndef PANO_SCHEMA_H
#define PANO_SCHEMA_H

#include "config.h"
#include "json.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct pano_schema pano_schema;
typedef struct pano_schema_set pano_schema_set;

/* One schema file: its path relative to the set's top
 * ("envelope.schema.json", "events/kickstart.inv.end.schema.json") and its
 * text. */
typedef struct {
    const char *path;
    const char *text;
} pano_schema_file;

/* The files of schemas/, embedded at build time (schemas/meson.build),
 * terminated by a NULL path. */
extern const pano_schema_file pano_builtin_schemas[];

/* Load every *.schema.json under dir (recursively) and resolve their $refs.
 * envelope.schema.json must exist. Returns NULL with a message naming the
 * file and the problem in err. */
pano_schema_set *pano_schema_set_load(const char *dir, char *err, size_t errlen);
void pano_schema_set_free(pano_schema_set *set);

/* Number of per-event schemas (events/ *.schema.json). */
size_t pano_schema_set_event_count(const pano_schema_set *set);

/* The schema that applies to an event: events/<name>.schema.json if there is
 * one, else the envelope. */
const pano_schema *pano_schema_for_event(const pano_schema_set *set, const char *name);
const pano_schema *pano_schema_envelope(const pano_schema_set *set);

/* The same from files held in memory (pano_builtin_schemas, say), terminated
 * by a NULL path. */
pano_schema_set *pano_schema_set_from_files(const pano_schema_file *files, char *err,
                                            size_t errlen);

/* The schemas events are checked against: the directory pano.bridge.
 * schema_dir names, else the built-in ones. NULL with a message in err. */
pano_schema_set *pano_schema_set_configured(const pano_config *cfg, char *err, size_t errlen);

/* Compile one schema from its JSON text, for tests and single-file use;
 * $refs may only point inside it. NULL with a message in err on error. */
pano_schema_set *pano_schema_set_from_text(const char *text, char *err, size_t errlen);

/* Check a value. Returns true, or false with the first problem found in
 * reason (always NUL-terminated). */
bool pano_schema_validate(const pano_schema *schema, const pano_json *value, char *reason,
                          size_t size);

#endif
