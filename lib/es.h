/*
 * es.h - a small Elasticsearch (or OpenSearch) HTTP client on libcurl.
 *
 * One curl handle per client, reused for every request so the connection
 * stays open (HTTP keep-alive); pano_es_request_many() keeps a small pool of
 * further handles for concurrent requests. Credentials may be in the URL or in a
 * password file; they are never logged (messages use the redacted URL).
 */
#ifndef PANO_ES_H
#define PANO_ES_H

#include "config.h"
#include "json.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct pano_es pano_es;

typedef struct {
    long status;    /* HTTP status, 0 if no response arrived */
    char *body;     /* NUL-terminated response body (free with free()) */
    size_t len, cap;
} pano_es_response;

/* Build a client from pano.es.* keys. NULL with a message in err. */
pano_es *pano_es_new(const pano_config *cfg, char *err, size_t errlen);
void pano_es_free(pano_es *es);

/* Send METHOD base_url+path with an optional JSON body (content type
 * application/json; application/x-ndjson when the path, before any query string, ends in "_bulk"
 * or "_msearch").
 * Returns 0 when a response arrived (whatever its status), -1 when none did
 * (connection refused, timeout), with the reason in err. */
int pano_es_request(pano_es *es, const char *method, const char *path, const char *body,
                    size_t len, pano_es_response *resp, char *err, size_t errlen);

void pano_es_response_free(pano_es_response *resp);

/* Takes a piece of an answer's body as it arrives: false stops the
 * transfer, and the request fails as one that got no answer ("stopped by
 * its reader" in err). */
typedef bool (*pano_es_sink)(void *user, const char *data, size_t len);

/* pano_es_request(), but the body of an answer with a 2xx status goes to
 * sink as it arrives, never held whole (resp->body is then empty); the
 * body of any other answer is collected in resp as pano_es_request()
 * collects it, for its reason. */
int pano_es_request_to(pano_es *es, const char *method, const char *path, const char *body,
                       size_t len, pano_es_sink sink, void *user, pano_es_response *resp,
                       char *err, size_t errlen);

/* Abandon requests once should_stop(user) is true (a server stopping, a
 * client gone): it is asked before each request and, by libcurl, about once
 * a second while one waits for its answer. An abandoned request fails as
 * one that got no answer, with "abandoned" in err. NULL: never. The
 * function runs on the thread that sent the request. */
void pano_es_set_abort(pano_es *es, bool (*should_stop)(void *user), void *user);

/* pano_es_request() with an optional NUL-terminated body, for requests
 * whose answer is mostly checked for its status. Returns the HTTP status,
 * or 0 when no response arrived (the reason in err); the response body goes
 * to *answer when answer is not NULL (free with free(); NULL when none
 * arrived). */
long pano_es_send(pano_es *es, const char *method, const char *path, const char *body,
                  char **answer, char *err, size_t errlen);

/* GET path and parse the answer: NULL unless it came with status 200 and is
 * JSON. *status and err as pano_es_send(). */
pano_json *pano_es_get_json(pano_es *es, const char *path, long *status, char *err,
                            size_t errlen);

/* One request of a group sent with pano_es_request_many(). */
typedef struct {
    const char *method, *path, *body;
    size_t len;
    int rc;                /* out: 0 when a response arrived, -1 when none */
    pano_es_response resp; /* out: free with pano_es_response_free() */
    char err[256];         /* out: why no response arrived */
} pano_es_call;

/* Send n requests concurrently, each on a connection of its own (kept open
 * between calls, like the single one), and wait until all are answered or
 * timed out. Bulk requests to several shards or indices are worked on in
 * parallel by Elasticsearch this way. */
void pano_es_request_many(pano_es *es, pano_es_call *calls, size_t n);

/* The base URL with any password hidden, for messages. */
const char *pano_es_describe(const pano_es *es);

#endif
