/*
 * status.h - a daemon's metrics for monitoring systems (pano-bridge,
 * pano-indexer): the latest snapshot in Prometheus text format, served at
 * /metrics (404 elsewhere) on a port of its own by the project's HTTP
 * server (http.h), and written to a file for node_exporter's textfile
 * collector.
 */
#ifndef PANO_STATUS_H
#define PANO_STATUS_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

typedef struct pano_status pano_status;

/* Serve the snapshot on address:port (port -1: any free port, see
 * pano_status_port). NULL with a message in err. */
pano_status *pano_status_new(const char *address, int port, char *err, size_t errlen);
/* The port listened on. */
int pano_status_port(const pano_status *s);
/* Replace the snapshot served (until then: an empty document). */
void pano_status_publish(pano_status *s, const char *text, size_t len);
void pano_status_free(pano_status *s);

/* Write text to path atomically (a temporary file in the same directory,
 * then rename), so a reader never sees half of it. 0, or -1 with a message
 * in err. */
int pano_status_write_file(const char *path, const char *text, size_t len, char *err,
                           size_t errlen);

/* A latency histogram (seconds), fixed buckets from 5 ms to 10 s. */
#define PANO_HISTOGRAM_BUCKETS 16
extern const double pano_histogram_bounds[PANO_HISTOGRAM_BUCKETS];

typedef struct {
    uint64_t bucket[PANO_HISTOGRAM_BUCKETS + 1]; /* not cumulative; the last is +Inf */
    uint64_t count;
    double sum;
} pano_histogram;

void pano_histogram_observe(pano_histogram *h, double seconds);

/* Append n histograms of one metric, told apart by label=values[i], in
 * Prometheus text format (cumulative _bucket lines, _sum, _count). */
void pano_histogram_format(pano_buf *out, const char *name, const char *help, const char *label,
                           const char *const *values, const pano_histogram *h, size_t n);

#endif
