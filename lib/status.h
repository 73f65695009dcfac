/*
 * status.h - a daemon's metrics for monitoring systems (pano-bridge,
 * pano-indexer): the latest snapshot in Prometheus text format, served at
 * /metrics (404 elsewhere) on a port of its own by the project's HTTP
 * server (http.h), and written to a file for node_exporter's textfile
 * collector.
 */
#ifndef PANO_STATUS_H
#define PANO_STATUS_H

#include <stddef.h>

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

#endif
