#include "url.h"

#include "mem.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void pano_url_redact(const char *url, char *out, size_t size)
{
    const char *scheme_end = strstr(url, "://");
    const char *auth = scheme_end ? scheme_end + 3 : url;
    size_t auth_len = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < auth + auth_len; p++)
        if (*p == '@')
            at = p; /* the last '@' ends the user info */
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (!colon) {
        snprintf(out, size, "%s", url);
        return;
    }
    snprintf(out, size, "%.*s***%s", (int)(colon + 1 - url), url, at);
}

/* Percent-decode one path segment; NULL if it decodes to something with NUL. */
static char *decode_segment(const char *s, size_t len)
{
    int outlen = 0;
    char *tmp = pano_strndup(s, len);
    char *dec = curl_easy_unescape(NULL, tmp, (int)len, &outlen);
    free(tmp);
    if (!dec)
        return NULL;
    char *copy = NULL;
    if (memchr(dec, '\0', (size_t)outlen) == NULL)
        copy = pano_strndup(dec, (size_t)outlen);
    curl_free(dec);
    return copy;
}

/* Split the path into at most max segments (without the leading '/'). Returns
 * the number found, or -1 when there are more than max. */
static int split_path(const char *path, const char **seg, size_t *len, int max)
{
    if (*path == '/')
        path++;
    if (*path == '\0')
        return 0;
    int n = 0;
    for (;;) {
        if (n == max)
            return -1;
        size_t l = strcspn(path, "/");
        seg[n] = path;
        len[n] = l;
        n++;
        if (path[l] == '\0')
            return n;
        path += l + 1;
    }
}

/* Exchange names: letters, digits, '-', '_', '.', ':' (AMQP 0-9-1). */
static bool valid_exchange(const char *name)
{
    if (!*name || strlen(name) > 127)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || strchr("-_.:", *p)))
            return false;
    return true;
}

static int parse_query(const char *query, pano_amqp_url *out, char *err, size_t errlen)
{
    char *copy = pano_strdup(query), *save = NULL;
    int rc = 0;
    for (char *kv = strtok_r(copy, "&", &save); kv && rc == 0;
         kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        char *end = NULL;
        if (!eq) {
            snprintf(err, errlen, "URL option '%s' has no value", kv);
            rc = -1;
            break;
        }
        *eq = '\0';
        if (strcmp(kv, "heartbeat") == 0) {
            long v = strtol(eq + 1, &end, 10);
            if (*end || v < 0 || v > 3600)
                rc = -1;
            out->heartbeat = (int)v;
        } else if (strcmp(kv, "connection_timeout") == 0) {
            double v = strtod(eq + 1, &end);
            if (*end || v <= 0)
                rc = -1;
            out->connection_timeout = v;
        } else {
            /* Other clients' options (e.g. pika's) are not errors. */
            continue;
        }
        if (rc < 0)
            snprintf(err, errlen, "URL option %s has a bad value '%s'", kv, eq + 1);
    }
    free(copy);
    return rc;
}

int pano_amqp_url_parse(const char *text, pano_amqp_url *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->heartbeat = -1;
    out->connection_timeout = -1;

    char shown[512];
    pano_url_redact(text, shown, sizeof shown);

    /* curl reads "amqp:///x" as host "x"; for a broker that is a missing host. */
    const char *after = strstr(text, "://");
    if (after && (after[3] == '/' || after[3] == '\0')) {
        snprintf(err, errlen, "bad broker URL '%s': no host", shown);
        return -1;
    }

    CURLU *u = curl_url();
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL, *password = NULL,
         *path = NULL, *query = NULL;
    int rc = -1;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, text, CURLU_NON_SUPPORT_SCHEME);
    if (uc != CURLUE_OK) {
        snprintf(err, errlen, "bad broker URL '%s': %s", shown, curl_url_strerror(uc));
        goto done;
    }
    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    if (!scheme) {
        snprintf(err, errlen, "bad broker URL '%s': no scheme", shown);
        goto done;
    }
    if (strcmp(scheme, "amqp") == 0 || strcmp(scheme, "rabbitmq") == 0)
        out->tls = false;
    else if (strcmp(scheme, "amqps") == 0 || strcmp(scheme, "rabbitmqs") == 0)
        out->tls = true;
    else {
        snprintf(err, errlen,
                 "bad broker URL '%s': unknown scheme '%s' (use amqp, amqps, rabbitmq "
                 "or rabbitmqs)",
                 shown, scheme);
        goto done;
    }
    out->from_management_api = scheme[0] == 'r';

    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
        snprintf(err, errlen, "bad broker URL '%s': no host", shown);
        goto done;
    }
    /* IPv6 literals come back in brackets; the socket layer wants them bare. */
    size_t hl = strlen(host);
    out->host = host[0] == '[' && hl > 2 ? pano_strndup(host + 1, hl - 2) : pano_strdup(host);

    out->port = out->tls ? 5671 : 5672;
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && port &&
        !out->from_management_api) {
        char *end;
        long p = strtol(port, &end, 10);
        if (*end || p < 1 || p > 65535) {
            snprintf(err, errlen, "bad broker URL '%s': bad port '%s'", shown, port);
            goto done;
        }
        out->port = (int)p;
    }

    curl_url_get(u, CURLUPART_USER, &user, CURLU_URLDECODE);
    curl_url_get(u, CURLUPART_PASSWORD, &password, CURLU_URLDECODE);
    out->user = pano_strdup(user && *user ? user : "guest");
    out->password = pano_strdup(password ? password : (user && *user ? "" : "guest"));

    curl_url_get(u, CURLUPART_PATH, &path, 0);
    const char *seg[5];
    size_t len[5];
    int nseg = split_path(path ? path : "", seg, len, 5);
    const char *vseg = NULL, *xseg = NULL;
    size_t vlen = 0, xlen = 0;
    if (out->from_management_api) {
        if (nseg != 5 || len[0] != 3 || strncmp(seg[0], "api", 3) != 0 || len[1] != 9 ||
            strncmp(seg[1], "exchanges", 9) != 0 || len[4] != 7 ||
            strncmp(seg[4], "publish", 7) != 0) {
            snprintf(err, errlen,
                     "bad broker URL '%s': a %s:// URL must have the path "
                     "/api/exchanges/VHOST/EXCHANGE/publish",
                     shown, scheme);
            goto done;
        }
        vseg = seg[2], vlen = len[2], xseg = seg[3], xlen = len[3];
    } else if (nseg < 0 || nseg > 2) {
        snprintf(err, errlen,
                 "bad broker URL '%s': the path must be /EXCHANGE or /VHOST/EXCHANGE",
                 shown);
        goto done;
    } else if (nseg == 2) {
        vseg = seg[0], vlen = len[0], xseg = seg[1], xlen = len[1];
    } else if (nseg == 1 && len[0] == 3 && strncasecmp(seg[0], "%2f", 3) == 0) {
        vseg = seg[0], vlen = len[0]; /* "/%2f" is RabbitMQ's way to say vhost "/" */
    } else if (nseg == 1) {
        xseg = seg[0], xlen = len[0];
    }

    out->vhost = vlen ? decode_segment(vseg, vlen) : pano_strdup("/");
    out->exchange = xseg ? decode_segment(xseg, xlen) : pano_strdup(PANO_AMQP_DEFAULT_EXCHANGE);
    if (!out->vhost || !out->exchange) {
        snprintf(err, errlen, "bad broker URL '%s': bad percent-encoding in the path", shown);
        goto done;
    }
    if (!valid_exchange(out->exchange)) {
        snprintf(err, errlen,
                 "bad broker URL '%s': exchange name '%s' must be 1-127 letters, "
                 "digits, '-', '_', '.' or ':'",
                 shown, out->exchange);
        goto done;
    }
    if (strlen(out->vhost) > 255) {
        snprintf(err, errlen, "bad broker URL '%s': vhost name too long", shown);
        goto done;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK && query &&
        parse_query(query, out, err, errlen) < 0)
        goto done;
    rc = 0;

done:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(user);
    curl_free(password);
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
    if (rc < 0)
        pano_amqp_url_free(out);
    return rc;
}

void pano_amqp_url_free(pano_amqp_url *url)
{
    free(url->host);
    free(url->user);
    if (url->password) /* do not leave the secret in freed memory */
        memset(url->password, 0, strlen(url->password));
    free(url->password);
    free(url->vhost);
    free(url->exchange);
    memset(url, 0, sizeof *url);
}
