/*
 * archive.c - a workflow in one file: its events, as the store pano-query
 * reads holds them, written into a new embedded-store file (store.h).
 */
#include "query.h"
#include "store.h"
#include "store_es.h"

#include <stdio.h>

int pano_query_export(pano_query *q, const char *const *wfs, size_t n, const char *file,
                      char *err, size_t errlen)
{
    if (!q->db) {
        snprintf(err, errlen,
                 "export reads the embedded store (--store PATH, pano.store); from "
                 "Elasticsearch it is not available yet");
        return -1;
    }
    return pano_store_export(q->db, wfs, n, file, "embedded store", err, errlen);
}
