#include "redact.h"

#include "mem.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

struct pano_redactor {
    unsigned char key[32];
    bool transformations;
};

/* Fields whose strings are kept: structure, not names. */
static const char *const kept[] = {
    "event", "wf_uuid", "xwf_id", "root_xwf_id", "parent_xwf_id", "subwf_id",
    "type", "type_desc", "jobtype", "level", "sample", "file_type",
    "stream", "ts_source", "ts_sent", "pegasus_version", "planner_version", "dax_version",
    "metric", "unit", "units", "kind", "delta_source", NULL};
static const char *const transformation_fields[] = {"transformation", "xformation", NULL};

pano_redactor *pano_redactor_new(bool transformations)
{
    pano_redactor *r = pano_calloc(1, sizeof *r);
    size_t got = 0;
    while (got < sizeof r->key) {
        ssize_t n = getrandom(r->key + got, sizeof r->key - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(r);
            return NULL;
        }
        got += (size_t)n;
    }
    r->transformations = transformations;
    return r;
}

void pano_redactor_free(pano_redactor *r)
{
    if (!r)
        return;
    memset(r->key, 0, sizeof r->key);
    free(r);
}

static bool listed(const char *const *names, const char *key)
{
    for (size_t i = 0; key && names[i]; i++)
        if (strcmp(names[i], key) == 0)
            return true;
    return false;
}

/* A string that is a number as a whole ("512", "1.5e3") says nothing else. */
static bool is_number(const char *s, size_t len)
{
    if (len == 0 || len > 40)
        return false;
    char *end;
    errno = 0;
    strtod(s, &end);
    return end == s + len && errno == 0;
}

static void pseudonym(const pano_redactor *r, pano_json *v)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!HMAC(EVP_sha256(), r->key, (int)sizeof r->key, (const unsigned char *)v->u.string.text,
              v->u.string.len, mac, &n) ||
        n < 8) {
        memset(mac, 0, sizeof mac); /* never the value itself */
        n = 8;
    }
    char out[18] = "r";
    for (int i = 0; i < 8; i++)
        snprintf(out + 1 + 2 * i, 3, "%02x", mac[i]);
    free(v->u.string.text);
    v->u.string.text = pano_strdup(out);
    v->u.string.len = strlen(out);
}

/* key: the member's name this value is under (NULL inside an array: its
 * array's). */
static void redact(const pano_redactor *r, pano_json *v, const char *key)
{
    switch (v->type) {
    case PANO_JSON_STRING:
        if (listed(kept, key))
            return;
        if (!r->transformations && listed(transformation_fields, key))
            return;
        if (is_number(v->u.string.text, v->u.string.len))
            return;
        pseudonym(r, v);
        return;
    case PANO_JSON_ARRAY:
        for (size_t i = 0; i < v->u.items.len; i++)
            redact(r, v->u.items.values[i], key);
        return;
    case PANO_JSON_OBJECT:
        for (size_t i = 0; i < v->u.items.len; i++)
            redact(r, v->u.items.values[i], v->u.items.keys[i]);
        return;
    default: return;
    }
}

void pano_redact_event(pano_redactor *r, pano_json *event)
{
    /* a custom metric's name is what it measures, as a metric's is */
    const char *ev = pano_json_get_str(event, "event");
    pano_json *name = ev && strcmp(ev, "custom.metric") == 0 ? pano_json_get(event, "name") : NULL;
    char *kept_name = name && name->type == PANO_JSON_STRING ? pano_strdup(name->u.string.text)
                                                             : NULL;
    redact(r, event, NULL);
    if (kept_name)
        pano_json_set_str(event, "name", kept_name);
    free(kept_name);
}
