/*
 * darshan_text.c - darshan-parser text to a summary (see darshan_text.h).
 */
#include "darshan_text.h"

#include "mem.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pano_darshan_summary *s;
    /* The section being read, by index: adding a module moves them all. */
    size_t module;
    bool in_module;
    size_t line;
    char *err;
    size_t errlen;
    bool header_seen;
} parser;

static int bad(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(parser *p, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "darshan-parser output, line %zu: %s", p->line, msg);
    return -1;
}

/* If line starts with prefix, the rest; else NULL. */
static const char *after(const char *line, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(line, prefix, n) == 0 ? line + n : NULL;
}

/* A number followed only by blanks, or by a "# unit" comment. */
static bool number_end(const char *end)
{
    while (*end == ' ' || *end == '\t')
        end++;
    return *end == '\0' || *end == '#';
}

static int parse_int(parser *p, const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || errno || !number_end(end))
        return bad(p, "expected an integer, got '%s'", text);
    *out = v;
    return 0;
}

static int parse_double(parser *p, const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno == ERANGE || !number_end(end))
        return bad(p, "expected a number, got '%s'", text);
    *out = v;
    return 0;
}

static pano_darshan_module_summary *module_named(parser *p, const char *name, size_t len)
{
    char *n = pano_strndup(name, len);
    pano_darshan_module_summary *m = pano_darshan_summary_find_module(p->s, n);
    if (!m)
        m = pano_darshan_summary_add_module(p->s, n);
    free(n);
    return m;
}

static pano_darshan_module_summary *current(parser *p)
{
    return p->in_module ? &p->s->modules[p->module] : NULL;
}

/* "total_<COUNTER>: <value>" */
static int parse_total(parser *p, const char *line)
{
    const char *colon = strstr(line, ": ");
    if (!colon)
        return bad(p, "malformed counter line");
    if (!p->in_module)
        return bad(p, "counter before any module section");
    char *name = pano_strndup(line + 6, (size_t)(colon - line - 6));
    const char *value = colon + 2;
    pano_darshan_module_summary *m = current(p);
    pano_darshan_total *t = NULL;
    for (size_t i = 0; i < m->n_totals && !t; i++) /* printed twice: keep the last */
        if (strcmp(m->totals[i].name, name) == 0)
            t = &m->totals[i];
    if (!t)
        t = pano_darshan_module_add_total(m, name, true);
    free(name);
    if (strpbrk(value, ".eEnN")) {
        t->type = PANO_DARSHAN_VALUE_FLOAT;
        return parse_double(p, value, &t->v.f);
    }
    char *end;
    errno = 0;
    long long i = strtoll(value, &end, 10);
    if (errno == ERANGE && value[0] != '-') {
        errno = 0;
        unsigned long long u = strtoull(value, &end, 10);
        if (end == value || errno || !number_end(end))
            return bad(p, "expected an integer, got '%s'", value);
        t->type = PANO_DARSHAN_VALUE_UINT;
        t->v.u = u;
        return 0;
    }
    if (end == value || errno || !number_end(end))
        return bad(p, "expected an integer, got '%s'", value);
    t->type = PANO_DARSHAN_VALUE_INT;
    t->v.i = i;
    return 0;
}

/* "# <MODULE> module: <N> bytes (compressed), ver=<V>" */
static int parse_region(parser *p, const char *body, const char *mark)
{
    pano_darshan_module_summary *m = module_named(p, body, (size_t)(mark - body));
    const char *rest = mark + strlen(" module: ");
    int64_t bytes, version = 0; /* set by parse_int; gcc -O3 cannot tell */
    char *end;
    errno = 0;
    bytes = strtoll(rest, &end, 10);
    const char *ver = strstr(rest, "ver=");
    if (end == rest || errno || !ver)
        return bad(p, "malformed module region line");
    if (parse_int(p, ver + 4, &version) < 0)
        return -1;
    m->compressed_bytes = bytes;
    m->version = (uint32_t)version;
    return 0;
}

static pano_darshan_perf *perf_of(parser *p)
{
    current(p)->has_perf = true;
    return &current(p)->perf;
}

/* The "# ..." lines of --perf. Returns 1 if the line was one, 0 if not. */
static int parse_perf(parser *p, const char *body)
{
    static const char *const legacy_shared[] = {"time_by_cumul_io_only", "time_by_cumul_meta_only",
                                                "time_by_open", "time_by_open_lastio"};
    static const char *const legacy_agg[] = {"agg_perf_by_cumul", "agg_perf_by_open",
                                             "agg_perf_by_open_lastio"};
    const char *v;
    if ((v = after(body, "total_bytes: ")))
        return parse_int(p, v, &perf_of(p)->total_bytes) < 0 ? -1 : 1;
    if ((v = after(body, "unique files: slowest_rank_io_time: ")))
        return parse_double(p, v, &perf_of(p)->slowest_rank_io_time) < 0 ? -1 : 1;
    if ((v = after(body, "unique files: slowest_rank_meta_only_time: ")))
        return parse_double(p, v, &perf_of(p)->slowest_rank_meta_only_time) < 0 ? -1 : 1;
    if ((v = after(body, "unique files: slowest_rank_rw_only_time: "))) {
        perf_of(p)->has_rw_only_time = true;
        return parse_double(p, v, &perf_of(p)->slowest_rank_rw_only_time) < 0 ? -1 : 1;
    }
    if ((v = after(body, "unique files: slowest_rank: ")))
        return parse_int(p, v, &perf_of(p)->slowest_rank) < 0 ? -1 : 1;
    if ((v = after(body, "shared files: time_by_slowest: ")))
        return parse_double(p, v, &perf_of(p)->time_by_slowest) < 0 ? -1 : 1;
    if ((v = after(body, "agg_time_by_slowest: "))) {
        perf_of(p)->has_agg_time = true;
        return parse_double(p, v, &perf_of(p)->agg_time_by_slowest) < 0 ? -1 : 1;
    }
    if ((v = after(body, "agg_perf_by_slowest: ")))
        return parse_double(p, v, &perf_of(p)->agg_perf_by_slowest) < 0 ? -1 : 1;

    for (size_t i = 0; i < sizeof legacy_shared / sizeof legacy_shared[0]; i++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "shared files: %s: ", legacy_shared[i]);
        if ((v = after(body, prefix))) {
            double d;
            if (parse_double(p, v, &d) < 0)
                return -1;
            pano_darshan_perf_add_legacy(perf_of(p), legacy_shared[i], true, d);
            return 1;
        }
    }
    for (size_t i = 0; i < sizeof legacy_agg / sizeof legacy_agg[0]; i++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s: ", legacy_agg[i]);
        if ((v = after(body, prefix))) {
            double d;
            if (parse_double(p, v, &d) < 0)
                return -1;
            pano_darshan_perf_add_legacy(perf_of(p), legacy_agg[i], false, d);
            return 1;
        }
    }
    return 0;
}

/* "# <category>: <count> <bytes> <max offset>" of --file. */
static int parse_files(parser *p, const char *body)
{
    for (int c = 0; c < PANO_DARSHAN_FILES_CATEGORIES; c++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s: ", pano_darshan_file_category_names[c]);
        const char *v = after(body, prefix);
        if (!v)
            continue;
        pano_darshan_file_category *f = &current(p)->files[c];
        if (sscanf(v, "%" SCNd64 " %" SCNd64 " %" SCNd64, &f->count, &f->bytes,
                   &f->max_offset) != 3)
            return bad(p, "malformed file count line");
        current(p)->has_files = true;
        return 1;
    }
    return 0;
}

static int parse_header(parser *p, const char *body)
{
    pano_darshan_summary *s = p->s;
    const char *v;
    if ((v = after(body, "darshan log version: "))) {
        free(s->version);
        s->version = pano_strdup(v);
        p->header_seen = true;
        return 1;
    }
    if ((v = after(body, "compression method: "))) {
        free(s->compression);
        s->compression = pano_strdup(v);
        return 1;
    }
    if ((v = after(body, "exe: "))) {
        free(s->exe);
        s->exe = pano_strdup(v);
        return 1;
    }
    if ((v = after(body, "metadata: "))) {
        const char *eq = strstr(v, " = ");
        if (!eq)
            return bad(p, "malformed metadata line");
        char *key = pano_strndup(v, (size_t)(eq - v));
        pano_darshan_summary_add_metadata(s, key, eq + 3);
        free(key);
        return 1;
    }
    static const struct {
        const char *prefix;
        size_t offset;
    } ints[] = {
        {"uid: ", offsetof(pano_darshan_summary, uid)},
        {"jobid: ", offsetof(pano_darshan_summary, jobid)},
        {"start_time: ", offsetof(pano_darshan_summary, start_time)},
        {"end_time: ", offsetof(pano_darshan_summary, end_time)},
        {"nprocs: ", offsetof(pano_darshan_summary, nprocs)},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if ((v = after(body, ints[i].prefix)))
            return parse_int(p, v, (int64_t *)((char *)s + ints[i].offset)) < 0 ? -1 : 1;
    if ((v = after(body, "run time: ")))
        return parse_double(p, v, &s->run_time) < 0 ? -1 : 1;
    return 0;
}

static int parse_line(parser *p, char *line)
{
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r')
        line[--n] = '\0';
    if (after(line, "total_"))
        return parse_total(p, line);
    const char *body = after(line, "# ");
    if (!body)
        return 0;

    int r = parse_header(p, body);
    if (r != 0)
        return r < 0 ? -1 : 0;

    const char *mark;
    size_t blen = strlen(body);
    static const char banner[] = " module data";
    if (blen > sizeof banner - 1 && strcmp(body + blen - (sizeof banner - 1), banner) == 0 &&
        !strchr(body, ':')) {
        p->module = (size_t)(module_named(p, body, blen - (sizeof banner - 1)) - p->s->modules);
        p->in_module = true;
        return 0;
    }
    if ((mark = strstr(body, " module: ")) && strstr(mark, "bytes (compressed)"))
        return parse_region(p, body, mark);
    const char *w = after(body, "*WARNING*: The ");
    if (w && (mark = strstr(w, " module contains incomplete data"))) {
        module_named(p, w, (size_t)(mark - w))->partial = true;
        return 0;
    }
    if (!p->in_module)
        return 0;
    r = parse_perf(p, body);
    if (r == 0)
        r = parse_files(p, body);
    return r < 0 ? -1 : 0;
}

int pano_darshan_text_parse(const char *text, size_t len, pano_darshan_summary *s, char *err,
                            size_t errlen)
{
    memset(s, 0, sizeof *s);
    parser p = {.s = s, .err = err, .errlen = errlen};
    const char *end = text + len;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (text < end && rc == 0) {
        const char *nl = memchr(text, '\n', (size_t)(end - text));
        size_t n = nl ? (size_t)(nl - text) : (size_t)(end - text);
        if (n + 1 > cap) {
            cap = n + 1;
            line = pano_realloc(line, cap);
        }
        memcpy(line, text, n);
        line[n] = '\0';
        p.line++;
        if (memchr(line, '\0', n))
            rc = bad(&p, "NUL byte in text");
        else
            rc = parse_line(&p, line);
        text += n + (nl != NULL);
    }
    free(line);
    if (rc == 0 && !p.header_seen) {
        snprintf(err, errlen, "not darshan-parser output (no '# darshan log version' line)");
        rc = -1;
    }
    if (rc < 0)
        pano_darshan_summary_free(s);
    return rc;
}
