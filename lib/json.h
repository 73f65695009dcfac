/*
 * json.h - a small JSON document model, parsed and written with yajl.
 *
 * Events are JSON objects that publishers build field by field and that the
 * bridge and indexer parse, check and sometimes amend. This is the in-memory
 * form they share:
 *
 *   - objects keep their keys in insertion order, so events serialize in the
 *     order they were built (kickstart's field order, readable logs);
 *   - setting an existing key replaces its value in place;
 *   - strings are always valid UTF-8: text from the system (process names,
 *     paths, argv) is repaired with U+FFFD on the way in, and keys on the way out;
 *   - doubles carry the number of decimals to print (ts with 6, CPU seconds
 *     with 3, as kickstart prints them), or -1 for the shortest exact form.
 *
 * Parsing uses yajl's streaming parser with a byte length (bodies need not be
 * NUL-terminated) and a nesting limit, so hostile input cannot exhaust the
 * stack. Allocation failure aborts (see mem.h).
 */
#ifndef PANO_JSON_H
#define PANO_JSON_H

#include "arena.h"
#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    PANO_JSON_NULL,
    PANO_JSON_BOOL,
    PANO_JSON_INT,
    PANO_JSON_DOUBLE,
    PANO_JSON_STRING,
    PANO_JSON_ARRAY,
    PANO_JSON_OBJECT,
} pano_json_type;

typedef struct pano_json pano_json;
struct pano_json {
    pano_json_type type;
    union {
        bool boolean;
        int64_t integer;
        struct {
            double value;
            int decimals; /* digits after the point, or -1: shortest exact */
        } real;
        struct {
            char *text; /* NUL-terminated; may also contain NULs */
            size_t len;
        } string;
        struct {
            char **keys; /* objects only */
            pano_json **values;
            size_t len, cap;
        } items; /* arrays and objects */
    } u;
};

/* Constructors. Strings are copied. */
pano_json *pano_json_null(void);
pano_json *pano_json_bool(bool value);
pano_json *pano_json_int(int64_t value);
pano_json *pano_json_double(double value, int decimals);
pano_json *pano_json_string(const char *text);
pano_json *pano_json_string_len(const char *text, size_t len);
/* How many bytes at the start of text[0..len) are valid UTF-8 (no overlong
 * forms, surrogates or code points above U+10FFFF): len when all are. */
size_t pano_utf8_valid_prefix(const char *text, size_t len);
pano_json *pano_json_array(void);
pano_json *pano_json_object(void);
/* Deep copy. */
pano_json *pano_json_clone(const pano_json *value);
void pano_json_free(pano_json *value);

/* Objects. pano_json_set takes ownership of value and replaces any value the
 * key already has. The typed setters are shorthands; set_object and set_array
 * return the new (empty) child to fill in. */
void pano_json_set(pano_json *object, const char *key, pano_json *value);
void pano_json_set_str(pano_json *object, const char *key, const char *text);
void pano_json_set_int(pano_json *object, const char *key, int64_t value);
void pano_json_set_double(pano_json *object, const char *key, double value,
                          int decimals);
void pano_json_set_bool(pano_json *object, const char *key, bool value);
pano_json *pano_json_set_object(pano_json *object, const char *key);
pano_json *pano_json_set_array(pano_json *object, const char *key);
/* Append a member whose key is known not to be in the object yet, without
 * the search pano_json_set makes (for objects with many members, such as
 * pano-darshan's counter totals). Takes ownership of value. */
void pano_json_add(pano_json *object, const char *key, pano_json *value);
/* Remove a key; true if it was there. */
bool pano_json_remove(pano_json *object, const char *key);

/* Lookups: NULL / false when the key is missing or of another type. */
pano_json *pano_json_get(const pano_json *object, const char *key);
const char *pano_json_get_str(const pano_json *object, const char *key);
bool pano_json_get_int(const pano_json *object, const char *key, int64_t *out);
/* Any number (integer or double) as a double. */
bool pano_json_get_number(const pano_json *object, const char *key,
                          double *out);
/* The member when it is an array (object may be NULL too). */
pano_json *pano_json_get_array(const pano_json *object, const char *key);

/* Arrays: takes ownership of value. */
void pano_json_append(pano_json *array, pano_json *value);
/* Free the items from index len on; none when the array is not longer. */
void pano_json_truncate(pano_json *array, size_t len);
/* Order the items by cmp (negative, zero or positive, as for qsort), equal
 * items keeping their order. In place, by insertion: for short arrays. */
void pano_json_sort(pano_json *array, int (*cmp)(const pano_json *a, const pano_json *b));

/* Walking arrays and objects, in order: the number of items (0 for a value
 * that is neither), the value at index i and, for objects, its key. The
 * index must be below the length. */
static inline size_t pano_json_len(const pano_json *v)
{
    return v && (v->type == PANO_JSON_ARRAY || v->type == PANO_JSON_OBJECT) ? v->u.items.len : 0;
}
static inline pano_json *pano_json_at(const pano_json *v, size_t i)
{
    return v->u.items.values[i];
}
static inline const char *pano_json_key_at(const pano_json *v, size_t i)
{
    return v->u.items.keys[i];
}

/* Compact JSON, NUL-terminated, length in *len (may be NULL). Free with free().
 * Never NULL (allocation failure aborts). Non-finite doubles are written as
 * null. */
char *pano_json_serialize(const pano_json *value, size_t *len);
/* The same, appended to a buffer (a bulk body, a payload block). */
void pano_json_serialize_to(pano_buf *out, const pano_json *value);

/* Streaming output, for big events written straight from a program's data
 * without building a tree (pano-darshan's hundreds of counter totals). It
 * appends to out and formats values as the tree serializer does (which is
 * built on it). Inside an object, a key precedes every value. */
typedef struct pano_json_writer pano_json_writer;
pano_json_writer *pano_json_writer_new(pano_buf *out);
void pano_json_writer_free(pano_json_writer *w);
void pano_json_write_object_open(pano_json_writer *w);
void pano_json_write_object_close(pano_json_writer *w);
void pano_json_write_array_open(pano_json_writer *w);
void pano_json_write_array_close(pano_json_writer *w);
/* Invalid UTF-8 in keys and strings is repaired with U+FFFD. */
void pano_json_write_key(pano_json_writer *w, const char *key);
void pano_json_write_str(pano_json_writer *w, const char *text);
void pano_json_write_str_len(pano_json_writer *w, const char *text, size_t len);
void pano_json_write_int(pano_json_writer *w, int64_t value);
/* The text those write for a number, without a NUL, into buf of
 * PANO_JSON_NUMBER_MAX bytes; returns its length. An int64 as
 * "%" PRId64 writes it; a double with `decimals` fixed as "%.*f" writes
 * it, or with -1 the shortest form that reads back as the same double. */
#define PANO_JSON_NUMBER_MAX 64
int pano_json_format_int(char *buf, int64_t value);
int pano_json_format_double(char *buf, double value, int decimals);
/* The number a parse reads in text[0..len), into *out (its type, and its
 * value: an INT, or a DOUBLE and its decimals), with no tree made: false
 * when a parse refuses it (out of a double's range, too long). */
bool pano_json_read_number(const char *text, size_t len, pano_json *out);
void pano_json_write_double(pano_json_writer *w, double value, int decimals);
void pano_json_write_bool(pano_json_writer *w, bool value);
void pano_json_write_null(pano_json_writer *w);
/* A tree value; or only the members of an object tree, to extend it with
 * more written members before closing it. */
void pano_json_write_value(pano_json_writer *w, const pano_json *value);
void pano_json_write_members(pano_json_writer *w, const pano_json *object);

/* Parse exactly one JSON value from buf[0..len). Fails, with a message in err,
 * on syntax errors, invalid UTF-8, trailing data, a number no double can
 * hold (1e400), or nesting deeper than max_depth (arrays and objects; 0:
 * PANO_JSON_DEFAULT_DEPTH). A key that
 * occurs twice in an object keeps its last value. */
pano_json *pano_json_parse(const char *buf, size_t len, int max_depth,
                           char *err, size_t errlen);

#define PANO_JSON_DEFAULT_DEPTH 64

/* How pano_json_parse_with() reads: pano_json_parse() is {.max_depth =
 * max_depth}, everything else zero. */
typedef struct {
    int max_depth; /* 0: PANO_JSON_DEFAULT_DEPTH */
    /* NULL: the tree is on the heap (pano_json_free). Else every value,
     * and yajl's own buffers, come from the arena: no malloc once its
     * chunk is warm. Such a tree is read-only (no pano_json_set, _free,
     * ...) and lives until the arena is reset. */
    pano_arena *arena;
    /* A key twice in one object fails with "duplicate field 'k'"
     * (Elasticsearch refuses such documents); else the last one wins. */
    bool reject_duplicates;
    /* Strings exactly as yajl decodes them; else repaired to valid UTF-8
     * with U+FFFD (yajl lets a lone low-surrogate escape such as \udc00
     * through as invalid bytes). */
    bool raw_strings;
} pano_json_parse_options;

pano_json *pano_json_parse_with(const char *buf, size_t len, const pano_json_parse_options *o,
                                char *err, size_t errlen);

/* JSON read as a stream of events, with no tree made: for a reader of many
 * documents that keeps a few values of each. Each callback returns false
 * to stop the reading; user is the reader's. Keys and strings are not
 * NUL-terminated (strings as yajl decodes them, not repaired); a number
 * comes as the double the tree would hold (an int64's converted). */
typedef struct {
    bool (*open)(void *user, bool array); /* an object, or an array */
    bool (*close)(void *user);
    bool (*key)(void *user, const char *key, size_t len);
    bool (*number)(void *user, double value);
    bool (*string)(void *user, const char *s, size_t len);
    bool (*literal)(void *user, int value); /* 1 true, 0 false, -1 null */
} pano_json_events;

/* Read buf[0..len), one JSON value, as events: 0, or -1 with a message in
 * err (not JSON, a number no double holds, or stopped by a callback). */
int pano_json_stream(const char *buf, size_t len, const pano_json_events *ev, void *user,
                     char *err, size_t errlen);
/* The same, read as it arrives: pieces of one JSON value fed in turn (a
 * token may be split between two), their events given as each is read.
 * begin: NULL only when out of memory. feed: 0, or -1 with a message in
 * err; after a failure every feed fails. end: whether the whole value was
 * read: 0, or -1 when a feed failed (its message stays) or, with a
 * message in err, when the value is incomplete; it frees the reader, which
 * every begin must end. */
typedef struct pano_json_stream_reader pano_json_stream_reader;
pano_json_stream_reader *pano_json_stream_begin(const pano_json_events *ev, void *user);
int pano_json_stream_feed(pano_json_stream_reader *r, const char *buf, size_t len, char *err,
                          size_t errlen);
int pano_json_stream_end(pano_json_stream_reader *r, char *err, size_t errlen);
/* The same events from a tree: false when a callback stopped it. */
bool pano_json_walk(const pano_json *v, const pano_json_events *ev, void *user);

/* A string member of an object, wanted by pano_json_peek_strings. */
typedef struct {
    const char *key;
    char *out; /* its value, NUL-terminated; "" when absent, not a string or
                  longer than size - 1 bytes */
    size_t size; /* at least 1 */
} pano_json_peek;

/* Read the object in buf[0..len) only as far as needed to find the string
 * values of its members want[0..n).key (at its top level): no tree is
 * made, and what follows the last one found is not checked (for a reader
 * that only routes what another will check); n at most 64. False when buf
 * does not start as a JSON object, or is not JSON up to where they were
 * found. */
bool pano_json_peek_strings(const char *buf, size_t len, pano_json_peek *want, size_t n);

#endif
