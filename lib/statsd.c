/*
 * statsd.c - DogStatsD lines read into metrics (statsd.h).
 */
#include "statsd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *type, *kind;
} kinds[] = {{"g", "gauge"},         {"c", "count"},       {"ms", "timing"},
             {"h", "histogram"},     {"d", "distribution"}};

/* A number that is all of s. */
static bool number(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return *s && !*end && errno == 0 && isfinite(*out);
}

/* The tags of "#k:v,k,..." (s, after the '#') into out->tags, written at w. */
static int read_tags(char *s, char *w, pano_statsd_metric *out, size_t *ntags, char *err,
                     size_t errlen)
{
    char *save = NULL;
    for (char *tag = strtok_r(s, ",", &save); tag; tag = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tag, ':');
        if (colon && colon - tag == 5 && strncmp(tag, "level", 5) == 0) {
            double level;
            if (!number(colon + 1, &level) || level != floor(level) || level < 1 || level > 9) {
                snprintf(err, errlen, "level '%s' is not 1 to 9", colon + 1);
                return -1;
            }
            out->level = (int)level;
            continue;
        }
        if (*ntags == PANO_STATSD_TAGS_MAX) {
            snprintf(err, errlen, "more than %d tags", PANO_STATSD_TAGS_MAX);
            return -1;
        }
        out->tags[(*ntags)++] = w;
        size_t klen = colon ? (size_t)(colon - tag) : strlen(tag);
        memcpy(w, tag, klen);
        w[klen] = '=';
        w += klen + 1;
        if (colon) {
            size_t vlen = strlen(colon + 1);
            memcpy(w, colon + 1, vlen);
            w += vlen;
        }
        *w++ = '\0';
    }
    return 0;
}

int pano_statsd_parse(const char *line, size_t len, pano_statsd_metric *out, char *err,
                      size_t errlen)
{
    memset(out->tags, 0, sizeof out->tags);
    out->level = 1;
    if (len == 0 || len >= PANO_STATSD_LINE_MAX) {
        snprintf(err, errlen, "a line has 1 to %d bytes", PANO_STATSD_LINE_MAX - 1);
        return -1;
    }
    if (memchr(line, '\0', len)) {
        snprintf(err, errlen, "a NUL byte in the line");
        return -1;
    }
    if ((len > 3 && memcmp(line, "_e{", 3) == 0) || (len > 4 && memcmp(line, "_sc|", 4) == 0)) {
        snprintf(err, errlen, "a DogStatsD event or service check, not a metric");
        return -1;
    }
    char *s = out->text, *tags_at = out->text + len + 1;
    memcpy(s, line, len);
    s[len] = '\0';
    char *colon = strchr(s, ':'), *bar = strchr(s, '|');
    if (!colon || !bar || colon > bar) {
        snprintf(err, errlen, "not name:value|type");
        return -1;
    }
    size_t nlen = (size_t)(colon - s);
    if (nlen == 0 || nlen > PANO_METRIC_NAME_MAX) {
        snprintf(err, errlen, "a metric name has 1 to %d bytes", PANO_METRIC_NAME_MAX);
        return -1;
    }
    memcpy(out->name, s, nlen);
    out->name[nlen] = '\0';
    *bar = '\0';
    if (strchr(colon + 1, ':')) {
        snprintf(err, errlen, "several values in one line");
        return -1;
    }
    if (!number(colon + 1, &out->value)) {
        snprintf(err, errlen, "value '%s' is not a finite number", colon + 1);
        return -1;
    }
    char *rest = bar + 1, *next = strchr(rest, '|');
    if (next)
        *next++ = '\0';
    out->kind = NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(rest, kinds[i].type) == 0)
            out->kind = kinds[i].kind;
    if (!out->kind) {
        snprintf(err, errlen, "type '%s' is not g, c, ms, h or d", rest);
        return -1;
    }
    double rate = 1;
    size_t ntags = 0;
    while (next) {
        char *field = next;
        if ((next = strchr(field, '|')))
            *next++ = '\0';
        if (field[0] == '@') {
            if (!number(field + 1, &rate) || rate <= 0 || rate > 1) {
                snprintf(err, errlen, "sample rate '%s' is not in (0, 1]", field + 1);
                return -1;
            }
        } else if (field[0] == '#') {
            if (read_tags(field + 1, tags_at, out, &ntags, err, errlen) < 0)
                return -1;
            tags_at = ntags ? strchr(out->tags[ntags - 1], '\0') + 1 : tags_at;
        } else if (!(field[0] == 'c' && field[1] == ':') && field[0] != 'T') {
            /* a container id (c:) or a timestamp (T) is DogStatsD's own */
            snprintf(err, errlen, "unknown field '%s'", field);
            return -1;
        }
    }
    if (strcmp(out->kind, "count") == 0)
        out->value /= rate;
    return 0;
}
