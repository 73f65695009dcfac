/*
 * http.h - the project's one HTTP server, on libmicrohttpd: pano-explorer's
 * pages and API, and the daemons' /metrics.
 *
 * Read-only by design: GET and HEAD are answered, any other method gets
 * 405. Requests run on a small pool of threads, so a handler may block
 * (ask Elasticsearch) without stopping the others, and must be thread-safe;
 * the threads block every signal, which stay the program's.
 * With a user and password every request must carry them (HTTP basic
 * authentication; 401 otherwise). Connections idle for 30 s are closed and
 * at most 64 are open at once. Every answer carries the extra headers the
 * server was started with (a Content-Security-Policy, say) and
 * X-Content-Type-Options: nosniff.
 */
#ifndef PANO_HTTP_H
#define PANO_HTTP_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct pano_http pano_http;
typedef struct pano_http_request pano_http_request;

typedef struct {
    int status;               /* 200 unless set */
    const char *content_type; /* "text/plain; charset=utf-8" unless set */
    const char *cache;        /* Cache-Control, "no-store" unless set */
    pano_buf body;            /* what to send ... */
    const char *file;         /* ... or this file's contents (a static page) */
} pano_http_reply;

/* Fill the reply. The request and its strings live until the handler returns. */
typedef void (*pano_http_handler)(void *user, const pano_http_request *request,
                                  pano_http_reply *reply);

/* The path of the URL, without the query string ("/api/workflows"). */
const char *pano_http_path(const pano_http_request *r);
/* A query-string argument ("?step=10s"), decoded, or NULL. */
const char *pano_http_arg(const pano_http_request *r, const char *name);
/* True once the client has closed its connection (or it broke): nobody
 * will read the answer, so a long handler may give up. Cheap (one poll(2)
 * that does not wait); safe from the handler's thread. */
bool pano_http_client_gone(const pano_http_request *r);

typedef struct {
    const char *address;  /* numeric IPv4 or IPv6 address; NULL: 127.0.0.1 */
    int port;             /* 0: any free port (pano_http_port tells which) */
    const char *user;     /* both set: basic authentication on every request */
    const char *password;
    unsigned threads;     /* 0: 2 */
    const char *const *headers; /* extra response headers: name, value, ..., NULL */
} pano_http_options;

/* Listen and serve in the background. NULL with a message in err (address
 * in use, bad address). */
pano_http *pano_http_start(const pano_http_options *o, pano_http_handler handler, void *user,
                           char *err, size_t errlen);
int pano_http_port(const pano_http *s);
/* Stop listening, finish the requests in progress. */
void pano_http_stop(pano_http *s);

/* True when address is a loopback address (127.0.0.0/8, ::1). */
bool pano_http_is_loopback(const char *address);

#endif
