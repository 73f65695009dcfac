#include "url.h"

#include "mem.h"

#include <ctype.h>
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

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *pano_url_decode(const char *s, size_t len)
{
    char *out = pano_malloc(len + 1), *o = out;
    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < len &&
            (hi = hex_value((unsigned char)s[i + 1])) >= 0 &&
            (lo = hex_value((unsigned char)s[i + 2])) >= 0) {
            *o++ = (char)(hi * 16 + lo);
            i += 2;
        } else
            *o++ = s[i];
    }
    *o = '\0';
    if (memchr(out, '\0', (size_t)(o - out))) {
        free(out); /* %00 */
        return NULL;
    }
    return out;
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

/* Host names: RFC 3986 reg-name without percent-encoding (letters, digits,
 * "-._~" and sub-delims); IPv6 literals: hex digits, ':' and '.'. */
static bool valid_host(const char *h, size_t len, bool ipv6)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)h[i];
        bool ok = ipv6 ? isxdigit(c) || c == ':' || c == '.'
                       : isalnum(c) || strchr("-._~!$&'()*+,;=", c);
        if (!ok)
            return false;
    }
    return true;
}

/* scheme://[user[:password]@]host[:port][/path][?query][#fragment], split
 * as RFC 3986 does (the user info ends at the last '@' of the authority). */
typedef struct {
    const char *scheme, *user, *password, *host, *port, *path, *query;
    size_t scheme_len, user_len, password_len, host_len, port_len, path_len, query_len;
    bool has_password, ipv6;
} url_parts;

static const char *split_url(const char *text, url_parts *u)
{
    memset(u, 0, sizeof *u);
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return "spaces or control characters";
    const char *sep = strstr(text, "://");
    if (!sep || sep == text || !isalpha((unsigned char)text[0]))
        return "no scheme";
    for (const char *p = text; p < sep; p++)
        if (!isalnum((unsigned char)*p) && !strchr("+-.", *p))
            return "no scheme";
    u->scheme = text;
    u->scheme_len = (size_t)(sep - text);

    const char *auth = sep + 3;
    size_t auth_len = strcspn(auth, "/?#");
    const char *host = auth, *auth_end = auth + auth_len;
    for (const char *p = auth; p < auth_end; p++)
        if (*p == '@')
            host = p + 1;
    if (host > auth) {
        const char *info_end = host - 1;
        const char *colon = memchr(auth, ':', (size_t)(info_end - auth));
        u->user = auth;
        u->user_len = (size_t)((colon ? colon : info_end) - auth);
        if (colon) {
            u->has_password = true;
            u->password = colon + 1;
            u->password_len = (size_t)(info_end - colon - 1);
        }
    }
    const char *host_end;
    if (*host == '[') {
        const char *close = memchr(host, ']', (size_t)(auth_end - host));
        if (!close)
            return "unterminated IPv6 address";
        u->ipv6 = true;
        u->host = host + 1;
        u->host_len = (size_t)(close - host - 1);
        host_end = close + 1;
        if (host_end < auth_end && *host_end != ':')
            return "bad host";
    } else {
        host_end = memchr(host, ':', (size_t)(auth_end - host));
        if (!host_end)
            host_end = auth_end;
        u->host = host;
        u->host_len = (size_t)(host_end - host);
    }
    if (u->host_len == 0)
        return "no host";
    if (!valid_host(u->host, u->host_len, u->ipv6))
        return "bad host";
    if (host_end < auth_end) { /* ":port", possibly empty (the default) */
        u->port = host_end + 1;
        u->port_len = (size_t)(auth_end - u->port);
    }
    u->path = auth_end;
    u->path_len = strcspn(u->path, "?#");
    if (u->path[u->path_len] == '?') {
        u->query = u->path + u->path_len + 1;
        u->query_len = strcspn(u->query, "#");
    }
    return NULL;
}

int pano_amqp_url_parse(const char *text, pano_amqp_url *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->heartbeat = -1;
    out->connection_timeout = -1;

    char shown[512];
    pano_url_redact(text, shown, sizeof shown);

    url_parts u;
    const char *problem = split_url(text, &u);
    if (problem) {
        snprintf(err, errlen, "bad broker URL '%s': %s", shown, problem);
        return -1;
    }
    char scheme[16];
    snprintf(scheme, sizeof scheme, "%.*s", (int)(u.scheme_len < 15 ? u.scheme_len : 15),
             u.scheme);
    for (char *c = scheme; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    char *user = NULL, *password = NULL, *path = NULL, *query = NULL;
    int rc = -1;
    if (u.scheme_len < sizeof scheme &&
        (strcmp(scheme, "amqp") == 0 || strcmp(scheme, "rabbitmq") == 0))
        out->tls = false;
    else if (u.scheme_len < sizeof scheme &&
             (strcmp(scheme, "amqps") == 0 || strcmp(scheme, "rabbitmqs") == 0))
        out->tls = true;
    else {
        snprintf(err, errlen,
                 "bad broker URL '%s': unknown scheme '%.*s' (use amqp, amqps, rabbitmq "
                 "or rabbitmqs)",
                 shown, (int)u.scheme_len, u.scheme);
        goto done;
    }
    out->from_management_api = scheme[0] == 'r';
    out->host = pano_strndup(u.host, u.host_len);

    out->port = out->tls ? 5671 : 5672;
    if (u.port_len) {
        long p = 0;
        size_t i = 0;
        for (; i < u.port_len && isdigit((unsigned char)u.port[i]) && p <= 65535; i++)
            p = p * 10 + (u.port[i] - '0');
        if (i < u.port_len || p < 1 || p > 65535) {
            snprintf(err, errlen, "bad broker URL '%s': bad port '%.*s' (1 to 65535)", shown,
                     (int)u.port_len, u.port);
            goto done;
        }
        /* A rabbitmq[s]:// port is the management API's, not AMQP's. */
        if (!out->from_management_api)
            out->port = (int)p;
    }

    if (u.user) {
        user = pano_url_decode(u.user, u.user_len);
        password = u.has_password ? pano_url_decode(u.password, u.password_len) : NULL;
        if (!user || (u.has_password && !password)) {
            snprintf(err, errlen, "bad broker URL '%s': bad percent-encoding in the user info",
                     shown);
            goto done;
        }
    }
    out->user = pano_strdup(user && *user ? user : "guest");
    out->password = pano_strdup(password ? password : (user && *user ? "" : "guest"));

    path = pano_strndup(u.path, u.path_len);
    const char *seg[5];
    size_t len[5];
    int nseg = split_path(path, seg, len, 5);
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

    out->vhost = vlen ? pano_url_decode(vseg, vlen) : pano_strdup("/");
    out->exchange = xseg ? pano_url_decode(xseg, xlen) : pano_strdup(PANO_AMQP_DEFAULT_EXCHANGE);
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
    if (u.query_len) {
        query = pano_strndup(u.query, u.query_len);
        if (parse_query(query, out, err, errlen) < 0)
            goto done;
    }
    rc = 0;

done:
    free(user);
    if (password) /* do not leave the secret in freed memory */
        memset(password, 0, strlen(password));
    free(password);
    free(path);
    free(query);
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
