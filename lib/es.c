#include "es.h"

#include "mem.h"
#include "secret.h"
#include "url.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pano_es {
    CURL *curl;
    char *base;        /* without a trailing slash */
    char shown[512];   /* redacted */
    char *password;    /* from pano.es.password_file */
    double timeout;
    struct curl_slist *json_headers, *ndjson_headers;
    bool verify;
    char *cacert;
    CURLM *multi;     /* pano_es_request_many() */
    CURL **pool;
    size_t npool;
    bool (*should_stop)(void *user); /* pano_es_set_abort() */
    void *stop_user;
};

static bool stopping(const pano_es *es) { return es->should_stop && es->should_stop(es->stop_user); }

/* libcurl asks this about once a second while a transfer waits, and more
 * often while data flows: a non-zero answer abandons the transfer. */
static int progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                    curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return stopping(user);
}

void pano_es_set_abort(pano_es *es, bool (*should_stop)(void *user), void *user)
{
    es->should_stop = should_stop;
    es->stop_user = user;
}

/* The message of a request that failed: the reason libcurl gives, or that
 * it was abandoned. */
static const char *failure(CURLcode rc)
{
    return rc == CURLE_ABORTED_BY_CALLBACK ? "abandoned" : curl_easy_strerror(rc);
}

static size_t collect(char *data, size_t size, size_t n, void *user)
{
    pano_es_response *r = user;
    size_t add = size * n;
    if (r->len + add + 1 > r->cap) { /* doubling: a 7 MB answer is not copied at every piece */
        size_t cap = r->cap ? r->cap : 16384;
        while (cap < r->len + add + 1)
            cap *= 2;
        r->body = pano_realloc(r->body, cap);
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, add);
    r->len += add;
    r->body[r->len] = '\0';
    return add;
}

/* Options shared by every handle; they fail only on an unknown option or
 * out of memory. */
static int configure(pano_es *es, CURL *c)
{
    if (curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(es->timeout * 1000)) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(es->timeout * 1000)) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, es->verify ? 1L : 0L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, es->verify ? 2L : 0L) != CURLE_OK ||
        (es->cacert && curl_easy_setopt(c, CURLOPT_CAINFO, es->cacert) != CURLE_OK) ||
        (es->password && curl_easy_setopt(c, CURLOPT_PASSWORD, es->password) != CURLE_OK) ||
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, es) != CURLE_OK)
        return -1;
    return 0;
}

pano_es *pano_es_new(const pano_config *cfg, char *err, size_t errlen)
{
    pano_es *es = pano_calloc(1, sizeof *es);
    const char *url = pano_config_str(cfg, "pano.es.url");
    size_t len = strlen(url);
    while (len > 0 && url[len - 1] == '/')
        len--;
    es->base = pano_strndup(url, len);
    pano_url_redact(es->base, es->shown, sizeof es->shown);
    es->timeout = pano_config_double(cfg, "pano.es.timeout");
    const char *pwfile = pano_config_str(cfg, "pano.es.password_file");
    if (pwfile && !(es->password = pano_secret_read("pano.es.password_file", pwfile, err, errlen)))
        goto fail;
    es->curl = curl_easy_init();
    if (!es->curl) {
        snprintf(err, errlen, "cannot initialize libcurl");
        goto fail;
    }
    es->json_headers = curl_slist_append(NULL, "Content-Type: application/json");
    es->ndjson_headers = curl_slist_append(NULL, "Content-Type: application/x-ndjson");
    if (!es->json_headers || !es->ndjson_headers) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    es->verify = pano_config_bool(cfg, "pano.es.tls_verify");
    const char *ca = pano_config_str(cfg, "pano.es.cacert");
    es->cacert = ca ? pano_strdup(ca) : NULL;
    if (configure(es, es->curl) < 0) {
        snprintf(err, errlen, "cannot configure libcurl");
        goto fail;
    }
    return es;
fail:
    pano_es_free(es);
    return NULL;
}

void pano_es_free(pano_es *es)
{
    if (!es)
        return;
    if (es->curl)
        curl_easy_cleanup(es->curl);
    for (size_t i = 0; i < es->npool; i++)
        curl_easy_cleanup(es->pool[i]);
    free(es->pool);
    if (es->multi)
        curl_multi_cleanup(es->multi);
    free(es->cacert);
    curl_slist_free_all(es->json_headers);
    curl_slist_free_all(es->ndjson_headers);
    free(es->base);
    if (es->password) {
        memset(es->password, 0, strlen(es->password));
        free(es->password);
    }
    free(es);
}

const char *pano_es_describe(const pano_es *es) { return es->shown; }

/* A request whose successful answer goes to a sink (pano_es_request_to). */
typedef struct {
    CURL *c;
    pano_es_response *resp; /* where any other answer is collected */
    pano_es_sink sink;
    void *user;
    int to_sink; /* -1 not known yet, 1 the answer is a success's, 0 not */
} sinking;

static size_t to_sink(char *data, size_t size, size_t n, void *user)
{
    sinking *k = user;
    if (k->to_sink < 0) {
        long status = 0;
        if (curl_easy_getinfo(k->c, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
            status = 0;
        k->to_sink = status / 100 == 2;
    }
    if (!k->to_sink)
        return collect(data, size, n, k->resp);
    return k->sink(k->user, data, size * n) ? size * n : CURL_WRITEFUNC_ERROR;
}

/* Set up c for one request, its answer to write(data) (collect: into
 * resp); the URL is returned for the caller to free after the transfer. */
static CURLcode prepare(pano_es *es, CURL *c, const char *method, const char *path,
                        const char *body, size_t len, pano_es_response *resp,
                        curl_write_callback write, void *data, char **url)
{
    memset(resp, 0, sizeof *resp);
    *url = pano_asprintf("%s%s", es->base, path);
    size_t plen = strcspn(path, "?"); /* the path without a query string */
    bool ndjson = (plen >= 5 && strncmp(path + plen - 5, "_bulk", 5) == 0) ||
                  (plen >= 8 && strncmp(path + plen - 8, "_msearch", 8) == 0);
    CURLcode rc = curl_easy_setopt(c, CURLOPT_URL, *url);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_NOBODY, strcmp(method, "HEAD") == 0 ? 1L : 0L);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_HTTPHEADER, ndjson ? es->ndjson_headers : es->json_headers);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
    if (rc == CURLE_OK && !body && strcmp(method, "GET") == 0)
        rc = curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_WRITEDATA, data);
    /* the progress callback only for a client that may abandon requests
     * (pano-explorer's), not on the indexer's bulk path */
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_NOPROGRESS, es->should_stop ? 0L : 1L);
    return rc;
}

static void finish(CURL *c, pano_es_response *resp)
{
    if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status) != CURLE_OK)
        resp->status = 0;
    if (!resp->body) {
        resp->body = pano_strdup("");
        resp->len = 0;
    }
}

/* One request on the client's handle, its answer to write(data). */
static int request(pano_es *es, const char *method, const char *path, const char *body,
                   size_t len, pano_es_response *resp, curl_write_callback write, void *data,
                   char *err, size_t errlen)
{
    char *url;
    CURL *c = es->curl;
    CURLcode rc = prepare(es, c, method, path, body, len, resp, write, data, &url);
    if (rc == CURLE_OK)
        rc = stopping(es) ? CURLE_ABORTED_BY_CALLBACK : curl_easy_perform(c);
    free(url);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s %s%s: %s", method, es->shown, path,
                 rc == CURLE_WRITE_ERROR ? "stopped by its reader" : failure(rc));
        pano_es_response_free(resp);
        return -1;
    }
    finish(c, resp);
    return 0;
}

int pano_es_request(pano_es *es, const char *method, const char *path, const char *body,
                    size_t len, pano_es_response *resp, char *err, size_t errlen)
{
    return request(es, method, path, body, len, resp, collect, resp, err, errlen);
}

int pano_es_request_to(pano_es *es, const char *method, const char *path, const char *body,
                       size_t len, pano_es_sink sink, void *user, pano_es_response *resp,
                       char *err, size_t errlen)
{
    sinking k = {.c = es->curl, .resp = resp, .sink = sink, .user = user, .to_sink = -1};
    return request(es, method, path, body, len, resp, to_sink, &k, err, errlen);
}

void pano_es_request_many(pano_es *es, pano_es_call *calls, size_t n)
{
    if (n == 1) {
        calls[0].rc = pano_es_request(es, calls[0].method, calls[0].path, calls[0].body,
                                      calls[0].len, &calls[0].resp, calls[0].err,
                                      sizeof calls[0].err);
        return;
    }
    if (!es->multi && !(es->multi = curl_multi_init())) {
        for (size_t i = 0; i < n; i++) {
            calls[i].rc = -1;
            memset(&calls[i].resp, 0, sizeof calls[i].resp);
            snprintf(calls[i].err, sizeof calls[i].err, "cannot initialize libcurl");
        }
        return;
    }
    while (es->npool < n) {
        CURL *c = curl_easy_init();
        if (!c || configure(es, c) < 0) {
            if (c)
                curl_easy_cleanup(c);
            break;
        }
        es->pool = pano_reallocarray(es->pool, es->npool + 1, sizeof *es->pool);
        es->pool[es->npool++] = c;
    }
    char **urls = pano_calloc(n, sizeof *urls);
    bool *added = pano_calloc(n, sizeof *added);
    for (size_t i = 0; i < n; i++) {
        pano_es_call *k = &calls[i];
        k->rc = -1;
        k->err[0] = '\0';
        CURLcode rc = CURLE_FAILED_INIT;
        if (i < es->npool)
            rc = prepare(es, es->pool[i], k->method, k->path, k->body, k->len, &k->resp, collect,
                         &k->resp, &urls[i]);
        else
            memset(&k->resp, 0, sizeof k->resp);
        if (rc == CURLE_OK && curl_multi_add_handle(es->multi, es->pool[i]) == CURLM_OK)
            added[i] = true;
        else
            snprintf(k->err, sizeof k->err, "%.16s %.100s%.100s: cannot start the request", k->method,
                     es->shown, k->path);
    }
    int running = 1;
    while (running) {
        if (curl_multi_perform(es->multi, &running) != CURLM_OK)
            break;
        if (running && curl_multi_poll(es->multi, NULL, 0, 1000, NULL) != CURLM_OK)
            break;
    }
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(es->multi, &left)))
        if (m->msg == CURLMSG_DONE)
            for (size_t i = 0; i < n; i++)
                if (added[i] && es->pool[i] == m->easy_handle) {
                    pano_es_call *k = &calls[i];
                    if (m->data.result == CURLE_OK) {
                        k->rc = 0;
                        finish(m->easy_handle, &k->resp);
                    } else
                        snprintf(k->err, sizeof k->err, "%.16s %.100s%.60s: %.60s", k->method, es->shown,
                                 k->path, failure(m->data.result));
                }
    for (size_t i = 0; i < n; i++) {
        if (added[i])
            curl_multi_remove_handle(es->multi, es->pool[i]);
        if (calls[i].rc < 0) {
            if (!calls[i].err[0])
                snprintf(calls[i].err, sizeof calls[i].err, "%.16s %.100s%.100s: no answer",
                         calls[i].method, es->shown, calls[i].path);
            pano_es_response_free(&calls[i].resp);
        }
        free(urls[i]);
    }
    free(urls);
    free(added);
}

void pano_es_response_free(pano_es_response *resp)
{
    free(resp->body);
    resp->body = NULL;
    resp->len = resp->cap = 0;
}

long pano_es_send(pano_es *es, const char *method, const char *path, const char *body,
                  char **answer, char *err, size_t errlen)
{
    pano_es_response resp;
    if (answer)
        *answer = NULL;
    if (errlen)
        err[0] = '\0';
    if (pano_es_request(es, method, path, body, body ? strlen(body) : 0, &resp, err, errlen) < 0)
        return 0;
    if (answer)
        *answer = resp.body;
    else
        pano_es_response_free(&resp);
    return resp.status;
}

pano_json *pano_es_get_json(pano_es *es, const char *path, long *status, char *err,
                            size_t errlen)
{
    char *answer;
    *status = pano_es_send(es, "GET", path, NULL, &answer, err, errlen);
    pano_json *j = *status == 200 && answer ? pano_json_parse(answer, strlen(answer),
                                                              PANO_JSON_DEFAULT_DEPTH, err,
                                                              errlen)
                                            : NULL;
    free(answer);
    return j;
}
