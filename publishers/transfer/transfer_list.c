#include "transfer_list.h"

#include "buf.h"
#include "json.h"
#include "mem.h"
#include "url.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const supported_schemes[] = {"file", "http", "https", "ftp",
                                                "ftps", "scp",  "sftp",  NULL};

bool pano_transfer_scheme(const char *text, char *out, size_t size)
{
    const char *sep = strstr(text, "://");
    if (!sep || sep == text || (size_t)(sep - text) >= size)
        return false;
    for (const char *p = text; p < sep; p++)
        if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
            return false;
    if (!isalpha((unsigned char)text[0]))
        return false;
    size_t n = (size_t)(sep - text);
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)text[i]);
    out[n] = '\0';
    return true;
}

bool pano_transfer_scheme_supported(const char *scheme)
{
    for (const char *const *s = supported_schemes; *s; s++)
        if (strcmp(*s, scheme) == 0)
            return true;
    return false;
}

char *pano_transfer_path_to_url(const char *path)
{
    pano_buf b = {0};
    pano_buf_append_str(&b, "file://");
    if (path[0] != '/') {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd)) {
            path = path[0] == '.' && path[1] == '/' ? path + 2 : path;
            char *abs = pano_asprintf("%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path);
            char *url = pano_transfer_path_to_url(abs);
            free(abs);
            pano_buf_free(&b);
            return url;
        }
    }
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (isalnum(*p) || strchr("/-._~!$&'()*+,;=:@", *p))
            pano_buf_append(&b, p, 1);
        else {
            char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            pano_buf_append(&b, enc, 3);
        }
    }
    return b.data;
}

char *pano_transfer_url_to_path(const char *url)
{
    if (strncasecmp(url, "file://", 7) != 0)
        return NULL;
    const char *p = url + 7;
    if (*p != '/') {
        /* file://host/path: only this host. */
        if (strncasecmp(p, "localhost/", 10) != 0)
            return NULL;
        p += 9;
    }
    return pano_url_decode(p, strcspn(p, "?#")); /* NULL for %00 */
}

/* Normalize one side; returns 0 or -1 with a message. */
static int normalize(const char *text, const char *what, char **url, char **path, char *err,
                     size_t errlen)
{
    char scheme[16];
    *url = *path = NULL;
    if (!*text) {
        snprintf(err, errlen, "empty %s", what);
        return -1;
    }
    if (!pano_transfer_scheme(text, scheme, sizeof scheme)) {
        *url = pano_transfer_path_to_url(text);
        *path = pano_transfer_url_to_path(*url); /* absolute */
        return 0;
    }
    if (!pano_transfer_scheme_supported(scheme)) {
        snprintf(err, errlen, "%s: unsupported scheme '%s' (file, http, https, ftp, ftps, scp, sftp)",
                 what, scheme);
        return -1;
    }
    if (strcmp(scheme, "file") == 0) {
        *path = pano_transfer_url_to_path(text);
        if (!*path) {
            snprintf(err, errlen, "%s: only file:///path or file://localhost/path URLs are local",
                     what);
            return -1;
        }
    }
    *url = pano_strdup(text);
    return 0;
}

/* The URL as it may be shown: without its password. */
static char *shown(const char *url)
{
    if (!strchr(url, '@'))
        return pano_strdup(url);
    size_t size = strlen(url) + 8;
    char *out = pano_malloc(size);
    pano_url_redact(url, out, size);
    return out;
}

static const char *last_component(const char *s, size_t *len)
{
    size_t n = strcspn(s, "?#");
    while (n > 1 && s[n - 1] == '/')
        n--;
    size_t start = n;
    while (start > 0 && s[start - 1] != '/')
        start--;
    *len = n - start;
    return s + start;
}

static int add(pano_transfer_list *list, const char *src, const char *dst, const char *src_site,
               const char *dst_site, const char *sha256, size_t line, bool stat_dst, char *err,
               size_t errlen)
{
    pano_transfer_spec s = {.line = line};
    if (normalize(src, "source", &s.src_url, &s.src_path, err, errlen) < 0)
        return -1;
    char *dst_text = NULL;
    /* cp semantics: DST/ or an existing directory receives SRC's name. */
    size_t dlen = strlen(dst);
    char scheme[16];
    bool dst_is_dir = dlen > 0 && dst[dlen - 1] == '/';
    if (stat_dst && !dst_is_dir && !pano_transfer_scheme(dst, scheme, sizeof scheme)) {
        struct stat st;
        dst_is_dir = stat(dst, &st) == 0 && S_ISDIR(st.st_mode);
    }
    if (dst_is_dir) {
        size_t blen;
        const char *base = last_component(s.src_path ? s.src_path : s.src_url, &blen);
        if (blen == 0 || (blen == 1 && base[0] == '/')) {
            snprintf(err, errlen, "source %s has no file name to copy into directory %s", src,
                     dst);
            goto fail;
        }
        dst_text = pano_asprintf("%s%s%.*s", dst, dst[dlen - 1] == '/' ? "" : "/", (int)blen,
                                 base);
    }
    if (normalize(dst_text ? dst_text : dst, "destination", &s.dst_url, &s.dst_path, err,
                  errlen) < 0)
        goto fail;
    free(dst_text);
    dst_text = NULL;
    if (sha256 && *sha256) {
        size_t n = strlen(sha256);
        if (n != 64 || strspn(sha256, "0123456789abcdefABCDEF") != 64) {
            snprintf(err, errlen, "sha256 '%s' is not 64 hex digits", sha256);
            goto fail;
        }
        s.sha256 = pano_strdup(sha256);
        for (char *p = s.sha256; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    s.src_shown = shown(s.src_url);
    s.dst_shown = shown(s.dst_url);
    s.src_site = src_site && *src_site ? pano_strdup(src_site) : NULL;
    s.dst_site = dst_site && *dst_site ? pano_strdup(dst_site) : NULL;
    if (list->len == list->cap) {
        list->cap = list->cap ? list->cap * 2 : 16;
        list->items = pano_reallocarray(list->items, list->cap, sizeof *list->items);
    }
    list->items[list->len++] = s;
    return 0;
fail:
    free(dst_text);
    free(s.src_url);
    free(s.src_path);
    free(s.dst_url);
    free(s.dst_path);
    return -1;
}

int pano_transfer_list_add(pano_transfer_list *list, const char *src, const char *dst,
                           const char *src_site, const char *dst_site, const char *sha256,
                           size_t line, char *err, size_t errlen)
{
    return add(list, src, dst, src_site, dst_site, sha256, line, true, err, errlen);
}

static const char *first_str(const pano_json *obj, const char *a, const char *b)
{
    const char *v = pano_json_get_str(obj, a);
    return v ? v : pano_json_get_str(obj, b);
}

static int parse_json_line(pano_transfer_list *list, const char *line, size_t len,
                           size_t lineno, const char *dsrc, const char *ddst, char *err,
                           size_t errlen)
{
    char why[256];
    pano_json *obj = pano_json_parse(line, len, 8, why, sizeof why);
    if (!obj) {
        snprintf(err, errlen, "line %zu: invalid JSON: %s", lineno, why);
        return -1;
    }
    int rc = -1;
    if (obj->type != PANO_JSON_OBJECT) {
        snprintf(err, errlen, "line %zu: expected a JSON object", lineno);
        goto out;
    }
    const char *src = first_str(obj, "src", "source_url");
    const char *dst = first_str(obj, "dst", "destination_url");
    if (!src || !dst) {
        snprintf(err, errlen, "line %zu: needs \"src\" and \"dst\" strings", lineno);
        goto out;
    }
    const char *ss = first_str(obj, "src_site", "source_site_name");
    const char *ds = first_str(obj, "dst_site", "destination_site_name");
    const char *sha = first_str(obj, "sha256", "checksum");
    if (add(list, src, dst, ss ? ss : dsrc, ds ? ds : ddst, sha, lineno, false, why,
            sizeof why) < 0) {
        snprintf(err, errlen, "line %zu: %s", lineno, why);
        goto out;
    }
    rc = 0;
out:
    pano_json_free(obj);
    return rc;
}

int pano_transfer_list_parse(pano_transfer_list *list, const char *text, size_t len,
                             const char *default_src_site, const char *default_dst_site,
                             char *err, size_t errlen)
{
    size_t lineno = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        lineno++;
        const char *a = p, *b = eol;
        p = nl ? nl + 1 : end;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (a == b || *a == '#')
            continue;
        if (memchr(a, '\0', (size_t)(b - a))) {
            snprintf(err, errlen, "line %zu: contains a NUL byte", lineno);
            return -1;
        }
        if (*a == '{') {
            if (parse_json_line(list, a, (size_t)(b - a), lineno, default_src_site,
                                default_dst_site, err, errlen) < 0)
                return -1;
            continue;
        }
        /* "SRC DST" */
        const char *w1 = a, *w1e = w1;
        while (w1e < b && !isspace((unsigned char)*w1e))
            w1e++;
        const char *w2 = w1e;
        while (w2 < b && isspace((unsigned char)*w2))
            w2++;
        const char *w2e = w2;
        while (w2e < b && !isspace((unsigned char)*w2e))
            w2e++;
        if (w2 == b || w2e != b) {
            snprintf(err, errlen, "line %zu: expected \"SRC DST\" or a JSON object", lineno);
            return -1;
        }
        char *src = pano_strndup(w1, (size_t)(w1e - w1));
        char *dst = pano_strndup(w2, (size_t)(w2e - w2));
        char why[256];
        int rc = add(list, src, dst, default_src_site, default_dst_site, NULL, lineno, false,
                     why, sizeof why);
        free(src);
        free(dst);
        if (rc < 0) {
            snprintf(err, errlen, "line %zu: %s", lineno, why);
            return -1;
        }
    }
    return 0;
}

void pano_transfer_list_free(pano_transfer_list *list)
{
    for (size_t i = 0; i < list->len; i++) {
        pano_transfer_spec *s = &list->items[i];
        free(s->src_url);
        free(s->dst_url);
        free(s->src_shown);
        free(s->dst_shown);
        free(s->src_path);
        free(s->dst_path);
        free(s->src_site);
        free(s->dst_site);
        free(s->sha256);
    }
    free(list->items);
    list->items = NULL;
    list->len = list->cap = 0;
}
