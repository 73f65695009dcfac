/*
 * config.h - the one configuration path every pano program shares.
 *
 * Values come from three layers, each overriding the one before:
 *
 *   1. a properties file (Java .properties syntax, like pegasus.properties),
 *      named by --config FILE or the PANO_CONFIG environment variable;
 *   2. the environment: every key has a derived variable name (pano.amqp.url
 *      -> PANO_AMQP_URL) and may have aliases that Pegasus sets
 *      (PEGASUS_WF_UUID, KICKSTART_MON_INTERVAL, ...);
 *   3. the command line: each program maps its options onto keys, and every
 *      program accepts --set KEY=VALUE for any key (cli.h).
 *
 * All keys live in one registry (config_keys.c) with a type, a default and a
 * description; deploy/pano.properties documents the same list. Values are
 * checked when they are set, so a bad value is reported with the key's name
 * and where it came from. Unknown pano.* keys in a file are warned about;
 * keys of other tools (pegasus.*) that pano does not use are ignored.
 */
#ifndef PANO_CONFIG_H
#define PANO_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    PANO_CFG_DEFAULT = 0,
    PANO_CFG_FILE,
    PANO_CFG_ENV,
    PANO_CFG_CLI,
} pano_config_source;

typedef enum {
    PANO_CFG_STR,
    PANO_CFG_INT,    /* integer in [min, max] */
    PANO_CFG_DOUBLE, /* real in [min, max] */
    PANO_CFG_BOOL,   /* true/false, yes/no, on/off, 1/0 */
    PANO_CFG_SIZE,   /* bytes, with optional k/M/G suffix (powers of 1024) */
} pano_config_type;

/* One registered key (see config_keys.c). */
typedef struct {
    const char *name;
    pano_config_type type;
    const char *default_value; /* NULL: unset unless configured */
    double min, max;           /* numeric types */
    bool secret;               /* value never printed (URLs are redacted) */
    const char *env_aliases[6]; /* extra environment names, by priority */
    const char *prop_aliases[3]; /* extra property names (Pegasus keys) */
    const char *description;
} pano_config_key;

/* The registry, terminated by an entry whose name is NULL. */
extern const pano_config_key pano_config_keys[];

typedef struct pano_config pano_config;

pano_config *pano_config_new(void);
void pano_config_free(pano_config *cfg);

/* The usual start of a program: the file given (or PANO_CONFIG when file is
 * NULL), then the environment. Returns 0, or -1 with a message in err.
 * A bad value does not stop loading: every other key is still read, and
 * err describes the first problem. */
int pano_config_load(pano_config *cfg, const char *file, char *err, size_t errlen);

int pano_config_load_file(pano_config *cfg, const char *path, char *err, size_t errlen);
int pano_config_load_env(pano_config *cfg, char *err, size_t errlen);

/* Set a key (or a property alias) from a source; a value from a lower layer
 * never replaces one from a higher layer. Returns 0, or -1 when the key is
 * unknown or the value invalid, with a message naming the key in err. */
int pano_config_set(pano_config *cfg, const char *key, const char *value,
                    pano_config_source source, char *err, size_t errlen);

/* Find --config FILE / --config=FILE in argv (before getopt runs). */
const char *pano_config_find_arg(int argc, char **argv);

/* Typed getters. The key must be registered with that type (checked with an
 * abort: it is a programming error). A string key with no value and no
 * default returns NULL. */
const char *pano_config_str(const pano_config *cfg, const char *key);
int64_t pano_config_int(const pano_config *cfg, const char *key);
double pano_config_double(const pano_config *cfg, const char *key);
bool pano_config_bool(const pano_config *cfg, const char *key);
uint64_t pano_config_size(const pano_config *cfg, const char *key);
pano_config_source pano_config_source_of(const pano_config *cfg, const char *key);

/* Print the effective configuration as a properties file, secrets hidden. */
void pano_config_dump(const pano_config *cfg, FILE *out);

/* Parse a boolean word: 1 true, 0 false, -1 not a boolean. */
int pano_config_parse_bool(const char *text);
/* Parse a duration: a number of seconds, or one with a unit: ms, s, m, h,
 * d, w or y (365 days): "90d", "1.5h". Seconds, or -1 if it is not one. */
double pano_config_parse_duration(const char *text);

#endif
