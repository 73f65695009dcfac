#include "filter.h"

#include "log.h"
#include "mem.h"

#include <ctype.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A pattern list longer than this is a configuration mistake. */
#define MAX_PATTERNS 256

typedef struct {
    char kind; /* 'a' all, 'r' regex, 'g' glob */
    char *text;
    regex_t re;
} pattern;

struct pano_filter {
    bool disabled;
    bool all;
    size_t n;
    pattern *p;
};

const char *pano_filter_toggle_key(const char *program)
{
    if (!program)
        return NULL;
    const char *base = strrchr(program, '/');
    base = base ? base + 1 : program;
    static const char *const publishers[] = {"monitor", "darshan", "transfer", "emit"};
    if (strncmp(base, "pano-", 5) != 0)
        return NULL;
    bool known = false;
    for (size_t i = 0; i < sizeof publishers / sizeof *publishers; i++)
        known = known || strcmp(base + 5, publishers[i]) == 0;
    if (!known)
        return NULL;
    char key[128];
    if ((size_t)snprintf(key, sizeof key, "pano.%s.enabled", base + 5) >= sizeof key)
        return NULL;
    for (const pano_config_key *k = pano_config_keys; k->name; k++)
        if (k->type == PANO_CFG_BOOL && strcmp(k->name, key) == 0)
            return k->name;
    return NULL;
}

/* Pegasus rejects patterns that start with a repetition ("*.inv.*" raises
 * "nothing to repeat"); so do POSIX regcomp implementations, mostly, but
 * not all: decide here, whatever the C library does. */
static bool looks_like_glob(const char *s) { return s[0] == '*' || s[0] == '?'; }

static int add_pattern(pano_filter *f, const char *text, char *err, size_t errlen)
{
    if (strcmp(text, "*") == 0) {
        f->all = true;
        f->p[f->n].kind = 'a';
    } else if (!looks_like_glob(text) &&
               regcomp(&f->p[f->n].re, text, REG_EXTENDED | REG_NOSUB) == 0) {
        f->p[f->n].kind = 'r';
    } else {
        /* Not a regular expression: a glob over the whole name. */
        if (strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                         "._-*?[]!^") != strlen(text)) {
            snprintf(err, errlen,
                     "pano.events: '%s' is neither a regular expression nor a glob of "
                     "event names",
                     text);
            return -1;
        }
        pano_debug("pano.events: '%s' is not a regular expression: matched as a glob", text);
        f->p[f->n].kind = 'g';
    }
    f->p[f->n].text = pano_strdup(text);
    f->n++;
    return 0;
}

pano_filter *pano_filter_parse(const char *patterns, char *err, size_t errlen)
{
    pano_filter *f = pano_calloc(1, sizeof *f);
    char *copy = pano_strdup(patterns ? patterns : "");
    size_t count = 1;
    for (const char *c = copy; *c; c++)
        count += *c == ',';
    if (count > MAX_PATTERNS) {
        snprintf(err, errlen, "pano.events: more than %d patterns", MAX_PATTERNS);
        free(copy);
        pano_filter_free(f);
        return NULL;
    }
    f->p = pano_calloc(count, sizeof *f->p);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && isspace((unsigned char)end[-1]))
            *--end = '\0';
        if (!*tok)
            continue;
        if (add_pattern(f, tok, err, errlen) < 0) {
            free(copy);
            pano_filter_free(f);
            return NULL;
        }
    }
    free(copy);
    if (f->n == 0) /* unset or empty: every event, like "*" */
        f->all = true;
    return f;
}

pano_filter *pano_filter_new(const pano_config *cfg, const char *program, char *err,
                             size_t errlen)
{
    pano_filter *f = pano_filter_parse(pano_config_str(cfg, "pano.events"), err, errlen);
    if (!f)
        return NULL;
    const char *toggle = pano_filter_toggle_key(program);
    if (toggle && !pano_config_bool(cfg, toggle)) {
        f->disabled = true;
        pano_info("%s is false: no event is sent", toggle);
    }
    /* A pegasus.properties written for monitord (events = stampede.*) would
     * silence a pano publisher: say so. */
    static const struct {
        const char *key, *events[4];
    } own[] = {
        {"pano.monitor.enabled", {"kickstart.inv.start", "kickstart.inv.online", "kickstart.inv.end"}},
        {"pano.darshan.enabled", {"darshan.perf"}},
        {"pano.transfer.enabled", {"transfer.inv.local.single", "transfer.inv.local", "transfer.inv.go"}},
        {"pano.emit.enabled", {"custom.metric"}},
    };
    for (size_t i = 0; toggle && !f->disabled && !f->all && i < sizeof own / sizeof *own; i++) {
        if (strcmp(own[i].key, toggle) != 0)
            continue;
        bool any = false;
        for (size_t e = 0; e < 4 && own[i].events[e]; e++)
            any = any || pano_filter_pass(f, own[i].events[e]);
        if (!any)
            pano_warn("pano.events (pegasus.catalog.workflow.amqp.events) = '%s' lets none of "
                      "this program's events through (%s...): nothing will be sent",
                      pano_config_str(cfg, "pano.events"), own[i].events[0]);
    }
    const char *encoding = pano_config_str(cfg, "pano.encoding");
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    if (encoding && strcasecmp(encoding, "json") != 0) {
        if (url && *url)
            pano_warn("pano.encoding (pegasus.monitord.encoding) is '%s': pano always sends "
                      "JSON to the broker (as pegasus-monitord does for AMQP)",
                      encoding);
        else
            pano_debug("pano.encoding is '%s': pano writes JSON lines only", encoding);
    }
    return f;
}

bool pano_filter_pass(const pano_filter *f, const char *event)
{
    if (!f)
        return true;
    if (f->disabled || !event)
        return false;
    if (f->all)
        return true;
    for (size_t i = 0; i < f->n; i++) {
        const pattern *p = &f->p[i];
        if (p->kind == 'r' ? regexec(&p->re, event, 0, NULL, 0) == 0
                           : fnmatch(p->text, event, 0) == 0)
            return true;
    }
    return false;
}

bool pano_filter_enabled(const pano_filter *f) { return !f || !f->disabled; }

char pano_filter_kind(const pano_filter *f, size_t i) { return i < f->n ? f->p[i].kind : 0; }

void pano_filter_free(pano_filter *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        if (f->p[i].kind == 'r')
            regfree(&f->p[i].re);
        free(f->p[i].text);
    }
    free(f->p);
    free(f);
}
