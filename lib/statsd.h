/*
 * statsd.h - metrics in DogStatsD's line protocol, as a program in any
 * language writes them to pano-monitor's metrics socket:
 *
 *   name:value|type[|@rate][|#key:value,key,...]
 *
 * one metric a line, several lines a datagram. type: g (gauge), c (count),
 * ms (timing), h (histogram) or d (distribution); a set (s), several
 * values in one line and the other DogStatsD messages (_e, _sc) are
 * refused. A count sent at a sample rate counts value / rate. The tag
 * level:N is the metric's level (1 to 9; 1 without it); the other tags
 * become the event's, key=value (a bare key: key=""). Names, tags and
 * levels are then checked as every custom metric's (metric.h).
 */
#ifndef PANO_STATSD_H
#define PANO_STATSD_H

#include "metric.h"

#include <stddef.h>

#define PANO_STATSD_TAGS_MAX 32
#define PANO_STATSD_LINE_MAX 4096

typedef struct {
    char name[PANO_METRIC_NAME_MAX + 1];
    double value;
    const char *kind; /* "gauge", "count", "timing", "histogram", "distribution" */
    int level;
    const char *tags[PANO_STATSD_TAGS_MAX + 1]; /* "key=value", NULL-terminated, in text */
    char text[2 * PANO_STATSD_LINE_MAX]; /* the line, then the tags */
} pano_statsd_metric;

/* Read one line (len bytes, without its newline) into out. 0, or -1 with
 * the reason in err. */
int pano_statsd_parse(const char *line, size_t len, pano_statsd_metric *out, char *err,
                      size_t errlen);

#endif
