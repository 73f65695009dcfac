/*
 * status.h - the indexer's status in Prometheus text format, written to a
 * file (atomically: temporary file and rename) and/or served over HTTP by a
 * small thread (any GET, e.g. GET /metrics, returns the latest snapshot).
 */
#ifndef PANO_STATUS_H
#define PANO_STATUS_H

#include <stddef.h>

typedef struct pano_status pano_status;

/* file may be NULL, port 0 means no HTTP. The HTTP listener binds to
 * address (e.g. 127.0.0.1) and port; port -1 asks the kernel for a free
 * port (see pano_status_port). NULL with a message in err on failure. */
pano_status *pano_status_new(const char *file, const char *address, int port, char *err,
                             size_t errlen);
/* The port actually listened on (0 without HTTP). */
int pano_status_port(const pano_status *s);
/* Replace the snapshot (and rewrite the file). Returns -1 if the file could
 * not be written (logged), 0 otherwise. */
int pano_status_publish(pano_status *s, const char *text, size_t len);
void pano_status_free(pano_status *s);

#endif
