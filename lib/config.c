#include "config.h"

#include "log.h"
#include "mem.h"
#include "url.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    char *value;
    pano_config_source source;
} config_value;

struct pano_config {
    config_value *values; /* parallel to pano_config_keys */
    size_t count;
};

static const char *const source_names[] = {"default", "file", "environment",
                                           "command line"};

pano_config *pano_config_new(void)
{
    pano_config *cfg = pano_calloc(1, sizeof *cfg);
    while (pano_config_keys[cfg->count].name)
        cfg->count++;
    cfg->values = pano_calloc(cfg->count, sizeof *cfg->values);
    return cfg;
}

void pano_config_free(pano_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->count; i++)
        free(cfg->values[i].value);
    free(cfg->values);
    free(cfg);
}

/* Index of a key by its name or one of its property aliases, or -1. */
static ssize_t key_index(const pano_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->count; i++) {
        const pano_config_key *k = &pano_config_keys[i];
        if (strcmp(k->name, name) == 0)
            return (ssize_t)i;
        for (size_t a = 0; a < 3 && k->prop_aliases[a]; a++)
            if (strcmp(k->prop_aliases[a], name) == 0)
                return (ssize_t)i;
    }
    return -1;
}

double pano_config_parse_duration(const char *text)
{
    static const struct {
        const char *unit;
        double seconds;
    } units[] = {{"", 1},       {"s", 1},         {"ms", 0.001},      {"m", 60},
                 {"h", 3600},   {"d", 86400},     {"w", 7 * 86400.0}, {"y", 365 * 86400.0}};
    char *end;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v) || v < 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0)
            return v * units[i].seconds;
    return -1;
}

int pano_config_parse_bool(const char *s)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return -1;
}

static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    double mult = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': mult = 1024.0; end++; break;
    case 'm': mult = 1024.0 * 1024; end++; break;
    case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (tolower((unsigned char)*end) == 'i')
        end++;
    if (tolower((unsigned char)*end) == 'b')
        end++;
    if (*end != '\0' || v * mult > 1.8e19)
        return false;
    *out = (uint64_t)(v * mult);
    return true;
}

/* Check a value against its key's type; message in err on failure. */
static int validate(const pano_config_key *k, const char *value, char *err,
                    size_t errlen)
{
    char *end;
    switch (k->type) {
    case PANO_CFG_STR:
        if (strcmp(k->name, "pano.log.level") == 0 && pano_log_level_parse(value) < 0) {
            snprintf(err, errlen, "'%s' is not a log level (error, warn, info, debug)",
                     value);
            return -1;
        }
        return 0;
    case PANO_CFG_BOOL:
        if (pano_config_parse_bool(value) < 0) {
            snprintf(err, errlen, "'%s' is not a boolean (true/false, yes/no, 1/0)",
                     value);
            return -1;
        }
        return 0;
    case PANO_CFG_INT:
    case PANO_CFG_DOUBLE: {
        errno = 0;
        double v = strtod(value, &end);
        if (end == value || *end != '\0' || errno || !isfinite(v) ||
            (k->type == PANO_CFG_INT && v != floor(v))) {
            snprintf(err, errlen, "'%s' is not %s", value,
                     k->type == PANO_CFG_INT ? "an integer" : "a number");
            return -1;
        }
        if (v < k->min || v > k->max) {
            snprintf(err, errlen, "%s is out of range (%g to %g)", value, k->min, k->max);
            return -1;
        }
        return 0;
    }
    case PANO_CFG_SIZE: {
        uint64_t size;
        if (!parse_size(value, &size)) {
            snprintf(err, errlen, "'%s' is not a size (e.g. 512M, 2G, 65536)", value);
            return -1;
        }
        return 0;
    }
    }
    return 0;
}

static int set_index(pano_config *cfg, size_t i, const char *value,
                     pano_config_source source, const char *origin, char *err,
                     size_t errlen)
{
    const pano_config_key *k = &pano_config_keys[i];
    if (cfg->values[i].value && cfg->values[i].source > source)
        return 0; /* a higher layer already decided */
    char why[256];
    if (validate(k, value, why, sizeof why) < 0) {
        /* Secret values are not repeated in the message. */
        if (k->secret)
            snprintf(why, sizeof why, "invalid value");
        snprintf(err, errlen, "%s (%s): %s", k->name, origin, why);
        return -1;
    }
    free(cfg->values[i].value);
    cfg->values[i].value = pano_strdup(value);
    cfg->values[i].source = source;
    return 0;
}

int pano_config_set(pano_config *cfg, const char *key, const char *value,
                    pano_config_source source, char *err, size_t errlen)
{
    ssize_t i = key_index(cfg, key);
    if (i < 0) {
        snprintf(err, errlen, "unknown configuration key '%s'", key);
        return -1;
    }
    return set_index(cfg, (size_t)i, value, source, source_names[source], err, errlen);
}

const char *pano_config_find_arg(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            return argv[i + 1];
        if (strncmp(argv[i], "--config=", 9) == 0)
            return argv[i] + 9;
    }
    return NULL;
}

/* ---- properties files ------------------------------------------------- */

/* Decode the escapes of a .properties key or value in place. */
static void unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p != '\\' || !p[1]) {
            *o++ = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 't': *o++ = '\t'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 'f': *o++ = '\f'; break;
        case 'u': {
            unsigned cp = 0;
            int n = 0;
            while (n < 4 && isxdigit((unsigned char)p[1 + n])) {
                char c = (char)tolower((unsigned char)p[1 + n]);
                cp = cp * 16 + (unsigned)(isdigit((unsigned char)c) ? c - '0' : c - 'a' + 10);
                n++;
            }
            p += n;
            /* Encode as UTF-8 (BMP only, as Java properties do). */
            if (cp < 0x80)
                *o++ = (char)cp;
            else if (cp < 0x800) {
                *o++ = (char)(0xC0 | (cp >> 6));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *o++ = (char)(0xE0 | (cp >> 12));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: *o++ = *p; break;
        }
    }
    *o = '\0';
}

/* Does this physical line continue on the next one (odd trailing '\')? */
static bool continues(const char *line, size_t len)
{
    size_t n = 0;
    while (n < len && line[len - 1 - n] == '\\')
        n++;
    return n % 2 == 1;
}

/* Split one logical line into key and value and set it. */
static int apply_property(pano_config *cfg, char *line, const char *path, int lineno,
                          char *err, size_t errlen)
{
    char *p = line;
    while (*p == ' ' || *p == '\t' || *p == '\f')
        p++;
    if (*p == '\0' || *p == '#' || *p == '!')
        return 0;
    char *key = p;
    while (*p && !(*p == '=' || *p == ':' || *p == ' ' || *p == '\t' || *p == '\f')) {
        if (*p == '\\' && p[1])
            p++;
        p++;
    }
    char *key_end = p;
    while (*p == ' ' || *p == '\t' || *p == '\f')
        p++;
    if (*p == '=' || *p == ':')
        p++;
    while (*p == ' ' || *p == '\t' || *p == '\f')
        p++;
    char *value = p;
    *key_end = '\0';
    unescape(key);
    unescape(value);

    ssize_t i = key_index(cfg, key);
    if (i < 0) {
        if (strncmp(key, "pano.", 5) == 0)
            pano_warn("%s:%d: unknown key '%s' ignored", path, lineno, key);
        else
            pano_debug("%s:%d: key '%s' is not pano's, ignored", path, lineno, key);
        return 0;
    }
    char origin[512];
    snprintf(origin, sizeof origin, "%s:%d", path, lineno);
    return set_index(cfg, (size_t)i, value, PANO_CFG_FILE, origin, err, errlen);
}

int pano_config_load_file(pano_config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open configuration file %s: %s", path,
                 strerror(errno));
        return -1;
    }
    char *logical = NULL;
    size_t logical_len = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, start_line = 0, rc = 0;
    bool joining = false;
    char why[512];
    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        char *part = line;
        if (joining) /* leading white space of a continuation is dropped */
            while (*part == ' ' || *part == '\t' || *part == '\f')
                part++;
        else
            start_line = lineno;
        size_t plen = strlen(part);
        bool more = continues(part, plen);
        if (more)
            plen--; /* drop the backslash */
        logical = pano_realloc(logical, logical_len + plen + 1);
        memcpy(logical + logical_len, part, plen);
        logical_len += plen;
        logical[logical_len] = '\0';
        /* A comment line never continues. */
        if (!joining) {
            const char *q = logical;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == '#' || *q == '!')
                more = false;
        }
        joining = more;
        if (!more) {
            if (apply_property(cfg, logical, path, start_line, why, sizeof why) < 0 && rc == 0) {
                snprintf(err, errlen, "%s", why); /* the first error; the rest still load */
                rc = -1;
            }
            logical_len = 0;
        }
    }
    if (joining && apply_property(cfg, logical, path, start_line, why, sizeof why) < 0 &&
        rc == 0) {
        snprintf(err, errlen, "%s", why);
        rc = -1;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "error reading %s: %s", path, strerror(errno));
        rc = -1;
    }
    free(line);
    free(logical);
    fclose(f);
    return rc;
}

/* ---- environment ------------------------------------------------------ */

/* pano.amqp.url -> PANO_AMQP_URL */
static void derived_env_name(const char *key, char *out, size_t size)
{
    size_t i = 0;
    for (; key[i] && i + 1 < size; i++)
        out[i] = key[i] == '.' ? '_' : (char)toupper((unsigned char)key[i]);
    out[i] = '\0';
}

int pano_config_load_env(pano_config *cfg, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t i = 0; i < cfg->count; i++) {
        const pano_config_key *k = &pano_config_keys[i];
        char derived[128];
        derived_env_name(k->name, derived, sizeof derived);
        const char *name = derived;
        const char *value = getenv(derived);
        for (size_t a = 0; !value && a < 6 && k->env_aliases[a]; a++) {
            name = k->env_aliases[a];
            value = getenv(name);
        }
        if (!value || !*value)
            continue;
        /* Go on after a bad value, so that one mistake does not hide the
         * other keys from a program that tolerates errors; report the first. */
        char why[512];
        if (set_index(cfg, i, value, PANO_CFG_ENV, name, why, sizeof why) < 0 && rc == 0) {
            snprintf(err, errlen, "%s", why);
            rc = -1;
        }
    }
    return rc;
}

int pano_config_load(pano_config *cfg, const char *file, char *err, size_t errlen)
{
    if (!file || !*file)
        file = getenv("PANO_CONFIG");
    if (file && *file && pano_config_load_file(cfg, file, err, errlen) < 0)
        return -1;
    return pano_config_load_env(cfg, err, errlen);
}

/* ---- getters ---------------------------------------------------------- */

static size_t checked_index(const pano_config *cfg, const char *key,
                            pano_config_type type)
{
    ssize_t i = key_index(cfg, key);
    if (i < 0 || pano_config_keys[i].type != type) {
        pano_error("internal error: configuration key '%s' %s", key,
                   i < 0 ? "is not registered" : "read with the wrong type");
        abort();
    }
    return (size_t)i;
}

static const char *raw_value(const pano_config *cfg, size_t i)
{
    return cfg->values[i].value ? cfg->values[i].value : pano_config_keys[i].default_value;
}

const char *pano_config_str(const pano_config *cfg, const char *key)
{
    return raw_value(cfg, checked_index(cfg, key, PANO_CFG_STR));
}

int64_t pano_config_int(const pano_config *cfg, const char *key)
{
    const char *v = raw_value(cfg, checked_index(cfg, key, PANO_CFG_INT));
    return v ? (int64_t)strtod(v, NULL) : 0;
}

double pano_config_double(const pano_config *cfg, const char *key)
{
    const char *v = raw_value(cfg, checked_index(cfg, key, PANO_CFG_DOUBLE));
    return v ? strtod(v, NULL) : 0.0;
}

bool pano_config_bool(const pano_config *cfg, const char *key)
{
    const char *v = raw_value(cfg, checked_index(cfg, key, PANO_CFG_BOOL));
    return v && pano_config_parse_bool(v) == 1;
}

uint64_t pano_config_size(const pano_config *cfg, const char *key)
{
    const char *v = raw_value(cfg, checked_index(cfg, key, PANO_CFG_SIZE));
    uint64_t size = 0;
    if (v)
        parse_size(v, &size);
    return size;
}

pano_config_source pano_config_source_of(const pano_config *cfg, const char *key)
{
    ssize_t i = key_index(cfg, key);
    return i < 0 || !cfg->values[i].value ? PANO_CFG_DEFAULT : cfg->values[i].source;
}

void pano_config_dump(const pano_config *cfg, FILE *out)
{
    for (size_t i = 0; i < cfg->count; i++) {
        const pano_config_key *k = &pano_config_keys[i];
        const char *v = raw_value(cfg, i);
        if (!v) {
            fprintf(out, "# %s is not set\n", k->name);
            continue;
        }
        char shown[1024];
        if (k->secret)
            pano_url_redact(v, shown, sizeof shown);
        else
            snprintf(shown, sizeof shown, "%s", v);
        fprintf(out, "%s = %s    # from %s\n", k->name, shown,
                source_names[cfg->values[i].value ? cfg->values[i].source : PANO_CFG_DEFAULT]);
    }
}
