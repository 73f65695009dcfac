#include "es.h"

#include "mem.h"
#include "url.h"

#include <curl/curl.h>
#include <errno.h>
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
};

static size_t collect(char *data, size_t size, size_t n, void *user)
{
    pano_es_response *r = user;
    size_t add = size * n;
    r->body = pano_realloc(r->body, r->len + add + 1);
    memcpy(r->body + r->len, data, add);
    r->len += add;
    r->body[r->len] = '\0';
    return add;
}

static char *read_first_line(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    if (!f || getline(&line, &cap, f) < 0) {
        snprintf(err, errlen, "pano.es.password_file: cannot read %s: %s", path,
                 f ? "empty file" : strerror(errno));
        if (f)
            fclose(f);
        free(line);
        return NULL;
    }
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    return line;
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
    if (pwfile && !(es->password = read_first_line(pwfile, err, errlen)))
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
    CURL *c = es->curl;
    bool verify = pano_config_bool(cfg, "pano.es.tls_verify");
    const char *ca = pano_config_str(cfg, "pano.es.cacert");
    /* Options that fail only on an unknown option or out of memory. */
    if (curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(es->timeout * 1000)) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(es->timeout * 1000)) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, verify ? 1L : 0L) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L) != CURLE_OK ||
        (ca && curl_easy_setopt(c, CURLOPT_CAINFO, ca) != CURLE_OK) ||
        (es->password && curl_easy_setopt(c, CURLOPT_PASSWORD, es->password) != CURLE_OK) ||
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect) != CURLE_OK) {
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

int pano_es_request(pano_es *es, const char *method, const char *path, const char *body,
                    size_t len, pano_es_response *resp, char *err, size_t errlen)
{
    memset(resp, 0, sizeof *resp);
    char *url = pano_asprintf("%s%s", es->base, path);
    size_t plen = strlen(path);
    bool bulk = plen >= 5 && strcmp(path + plen - 5, "_bulk") == 0;
    CURL *c = es->curl;
    CURLcode rc = curl_easy_setopt(c, CURLOPT_URL, url);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_NOBODY, strcmp(method, "HEAD") == 0 ? 1L : 0L);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_HTTPHEADER, bulk ? es->ndjson_headers : es->json_headers);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
    if (rc == CURLE_OK && !body && strcmp(method, "GET") == 0)
        rc = curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    if (rc == CURLE_OK)
        rc = curl_easy_perform(c);
    free(url);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s %s%s: %s", method, es->shown, path, curl_easy_strerror(rc));
        pano_es_response_free(resp);
        return -1;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
    if (!resp->body) {
        resp->body = pano_strdup("");
        resp->len = 0;
    }
    return 0;
}

void pano_es_response_free(pano_es_response *resp)
{
    free(resp->body);
    resp->body = NULL;
    resp->len = 0;
}
