#include "normalize.h"

#include "arena.h"
#include "event.h"
#include "mem.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decode base64 text; NULL if it is not base64. */
static char *base64_decode(const char *text, size_t len, size_t *outlen)
{
    if (len % 4 != 0 || len > (size_t)1 << 30)
        return NULL;
    char *out = pano_malloc(len / 4 * 3 + 1);
    int n = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)text, (int)len);
    if (n < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the '=' padding as zero bytes. */
    for (size_t i = len; i > 0 && i > len - 2 && text[i - 1] == '='; i--)
        n--;
    *outlen = (size_t)n;
    out[n] = '\0';
    return out;
}

__attribute__((format(printf, 2, 3))) static bool reject(pano_normalized *out,
                                                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof out->reason, fmt, ap);
    va_end(ap);
    return false;
}

struct pano_normalizer {
    pano_normalize_options o;
    pano_arena arena;
};

pano_normalizer *pano_normalizer_new(const pano_normalize_options *options)
{
    pano_normalizer *nz = pano_calloc(1, sizeof *nz);
    nz->o = *options;
    pano_arena_init(&nz->arena, 64 * 1024);
    return nz;
}

void pano_normalizer_free(pano_normalizer *nz)
{
    if (!nz)
        return;
    pano_arena_free(&nz->arena);
    free(nz);
}

/* Say precisely why a message did not parse. */
static void parse_failed(const char *body, size_t len, char *err, pano_normalized *out)
{
    size_t bad = pano_utf8_valid_prefix(body, len);
    if (bad < len) {
        reject(out, "invalid UTF-8 at byte %zu", bad);
        return;
    }
    /* yajl's messages end with a newline. */
    size_t n = strlen(err);
    while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == ' '))
        err[--n] = '\0';
    if (strcmp(err, "nesting too deep") == 0)
        reject(out, "invalid JSON: nested deeper than %d levels", PANO_NORMALIZE_MAX_DEPTH);
    else
        reject(out, "invalid JSON: %s", err);
}

/* Parse with the nesting limit (malloc'ed tree, for changing it). */
static pano_json *parse(const char *body, size_t len, pano_normalized *out)
{
    char err[200];
    pano_json *doc = pano_json_parse(body, len, PANO_NORMALIZE_MAX_DEPTH, err, sizeof err);
    if (doc)
        return doc;
    parse_failed(body, len, err, out);
    return NULL;
}

/* Unwrap {"routing_key":..., "payload":..., "payload_encoding":...}, the
 * body Panorama's kickstart POSTs to the management API, in place. Sets
 * *inner_key to the routing key it names (owned by the caller). */
static bool unwrap_management_form(pano_json **doc, bool *unwrapped, char **inner_key,
                                   pano_normalized *out)
{
    if (pano_json_get(*doc, "event"))
        return true;
    const char *encoding = pano_json_get_str(*doc, "payload_encoding");
    pano_json *payload = pano_json_get(*doc, "payload");
    if (!encoding || !payload || payload->type != PANO_JSON_STRING)
        return true; /* not that form */
    char *inner;
    size_t n;
    if (strcmp(encoding, "base64") == 0) {
        inner = base64_decode(payload->u.string.text, payload->u.string.len, &n);
        if (!inner)
            return reject(out, "management-API message whose payload is not base64");
    } else if (strcmp(encoding, "string") == 0) {
        n = payload->u.string.len;
        inner = pano_strndup(payload->u.string.text, n);
    } else
        return reject(out, "management-API message with unknown payload_encoding '%.50s'",
                      encoding);
    pano_json *parsed = parse(inner, n, out);
    free(inner);
    if (!parsed) {
        char why[sizeof out->reason];
        snprintf(why, sizeof why, "%s", out->reason);
        return reject(out, "in the payload of a management-API message: %s", why);
    }
    const char *key = pano_json_get_str(*doc, "routing_key");
    *inner_key = key ? pano_strdup(key) : NULL;
    pano_json_free(*doc);
    *doc = parsed;
    *unwrapped = true;
    return true;
}

/* Is name a key of doc once its keys are renamed to names (NULL: kept)? */
static bool key_taken(const pano_json *doc, char *const *names, const char *name)
{
    for (size_t i = 0; i < pano_json_len(doc); i++)
        if (strcmp(names[i] ? names[i] : pano_json_key_at(doc, i), name) == 0)
            return true;
    return false;
}

/* monitord before 4.9 kept raw key names (xwf__id); it now writes "_" for
 * "__". Rename such keys, in order, unless the new name is taken; the keys
 * keep their places. */
static bool respell_stampede_keys(pano_json **doc)
{
    size_t n = pano_json_len(*doc);
    char **names = pano_calloc(n ? n : 1, sizeof *names);
    bool changed = false;
    for (size_t i = 0; i < n; i++) {
        const char *key = pano_json_key_at(*doc, i);
        if (!strstr(key, "__"))
            continue;
        char *fresh = pano_malloc(strlen(key) + 1);
        size_t o = 0;
        for (const char *p = key; *p;) {
            if (p[0] == '_' && p[1] == '_') {
                fresh[o++] = '_';
                p += 2;
            } else
                fresh[o++] = *p++;
        }
        fresh[o] = '\0';
        if (key_taken(*doc, names, fresh)) {
            free(fresh);
            continue;
        }
        names[i] = fresh;
        changed = true;
    }
    if (changed) {
        pano_json *respelled = pano_json_object();
        for (size_t i = 0; i < n; i++)
            pano_json_add(respelled, names[i] ? names[i] : pano_json_key_at(*doc, i),
                          pano_json_clone(pano_json_at(*doc, i)));
        pano_json_free(*doc);
        *doc = respelled;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return changed;
}

/* The envelope fields the bridge itself needs; checked after the schema,
 * since an event's own schema might not include the envelope. */
static bool check_fields(const pano_json *event, const pano_json *wf, pano_normalized *out)
{
    const char *name = event && event->type == PANO_JSON_STRING ? event->u.string.text : NULL;
    if (!name || !pano_event_name_valid(name))
        return name ? reject(out, "invalid event name '%.100s'", name)
                    : reject(out, "missing required field 'event'");
    if (!wf || wf->type != PANO_JSON_STRING)
        return reject(out, wf ? "'wf_uuid' must be a string" : "missing required field 'wf_uuid'");
    if (wf->u.string.len == 0)
        return reject(out, "'wf_uuid' must not be empty");
    if (wf->u.string.len > PANO_WF_UUID_MAX)
        return reject(out, "'wf_uuid' is longer than %d bytes", PANO_WF_UUID_MAX);
    memcpy(out->wf_uuid, wf->u.string.text, wf->u.string.len + 1);
    out->wf_uuid_len = wf->u.string.len;
    out->family = pano_event_family(name);
    return true;
}

static bool check_key_fields(const pano_json *doc, const char **name, pano_normalized *out)
{
    *name = pano_json_get_str(doc, "event");
    return check_fields(pano_json_get(doc, "event"), pano_json_get(doc, "wf_uuid"), out);
}

/* A time stamp pano keeps: from 2000-01-01 to a day ahead of now. Anything
 * else is a clock that was never set, or a field that is no time at all
 * (Pegasus's planner stamps the static events that describe a workflow's
 * jobs with about 3,200,000, February 1970). */
static bool plausible_ts(const pano_json *ts, double now)
{
    double v = ts->type == PANO_JSON_INT      ? (double)ts->u.integer
               : ts->type == PANO_JSON_DOUBLE ? ts->u.real.value
                                              : NAN;
    return v >= 946684800.0 && v <= now + 86400;
}

/* Does this event need no change? One pass over its top-level keys, which
 * also finds its event name, wf_uuid and event_id. */
static bool needs_no_change(const pano_json *doc, const pano_json **event_value,
                            const pano_json **wf_value, const pano_json **id_value)
{
    bool event = false, wf_uuid = false, event_id = false, stampede = false, old_keys = false;
    bool wrapped = false, ts = false;
    for (size_t i = 0; i < pano_json_len(doc); i++) {
        const char *k = pano_json_key_at(doc, i);
        const pano_json *v = pano_json_at(doc, i);
        switch (k[0]) {
        case 'e':
            if (strcmp(k, "event") == 0) {
                event = true;
                *event_value = v;
                stampede = v->type == PANO_JSON_STRING && strncmp(v->u.string.text, "stampede.", 9) == 0;
            } else if (strcmp(k, "event_id") == 0) {
                event_id = true;
                *id_value = v;
            }
            break;
        case 'w':
            if (strcmp(k, "wf_uuid") == 0) {
                wf_uuid = true;
                *wf_value = v;
            }
            break;
        case 'p':
            wrapped |= strcmp(k, "payload_encoding") == 0;
            break;
        case 't':
            /* a ts of another type is left to the schema to refuse */
            if (strcmp(k, "ts") == 0)
                ts = (v->type != PANO_JSON_INT && v->type != PANO_JSON_DOUBLE) ||
                     plausible_ts(v, pano_now());
            break;
        default:
            break;
        }
        old_keys |= strstr(k, "__") != NULL;
    }
    return event && wf_uuid && event_id && ts && !wrapped && !(stampede && old_keys);
}

/* An event whose ts is missing or implausible gets one, and says so:
 * ts_source "wf_ts" when monitord sent the workflow's own time stamp
 * (wf_ts, plausible), so that the static events of a replayed 2023 run stay
 * in 2023 with the rest of it; else "received", the time the bridge took
 * it. The original, if any, is kept as text in ts_sent. Returns true when
 * the event changed; a ts that is there but no finite number is left to
 * the schema and the checks below, which refuse it. */
static bool settle_ts(pano_json *doc)
{
    const pano_json *ts = pano_json_get(doc, "ts");
    double now = pano_now();
    if (ts && (ts->type != PANO_JSON_INT && ts->type != PANO_JSON_DOUBLE))
        return false;
    if (ts && !isfinite(ts->type == PANO_JSON_DOUBLE ? ts->u.real.value : 0))
        return false;
    if (ts && plausible_ts(ts, now))
        return false;
    if (ts) {
        char *sent = pano_json_serialize(ts, NULL);
        pano_json_set_str(doc, "ts_sent", sent);
        free(sent);
    }
    const pano_json *wf_ts = pano_json_get(doc, "wf_ts");
    if (wf_ts && plausible_ts(wf_ts, now)) {
        pano_json_set(doc, "ts", pano_json_clone(wf_ts));
        pano_json_set_str(doc, "ts_source", "wf_ts");
    } else {
        pano_json_set_double(doc, "ts", now, 6);
        pano_json_set_str(doc, "ts_source", "received");
    }
    return true;
}

static bool slow_path(pano_normalizer *nz, const char *routing_key, const char *body, size_t len,
                      pano_normalized *out);

bool pano_normalize(pano_normalizer *nz, const char *routing_key, const char *body, size_t len,
                    pano_normalized *out)
{
    memset(out, 0, sizeof *out);
    if (len > nz->o.max_size)
        return reject(out, "message too large (%zu bytes, limit %zu)", len, nz->o.max_size);
    char err[200];
    pano_arena_reset(&nz->arena);
    /* Strings need no repair: only the original bytes are produced. */
    pano_json_parse_options fast = {.max_depth = PANO_NORMALIZE_MAX_DEPTH,
                                    .arena = &nz->arena,
                                    .reject_duplicates = true,
                                    .raw_strings = true};
    pano_json *doc = pano_json_parse_with(body, len, &fast, err, sizeof err);
    if (!doc) {
        parse_failed(body, len, err, out);
        return false;
    }
    if (doc->type != PANO_JSON_OBJECT)
        return reject(out, "the event must be an object");
    const pano_json *event = NULL, *wf = NULL, *id = NULL;
    if (!needs_no_change(doc, &event, &wf, &id))
        return slow_path(nz, routing_key, body, len, out);
    /* The fast path: check it as it is, produce the original bytes. */
    const char *name = event->type == PANO_JSON_STRING ? event->u.string.text : NULL;
    const pano_schema *schema = name ? pano_schema_for_event(nz->o.schemas, name)
                                     : pano_schema_envelope(nz->o.schemas);
    if (!pano_schema_validate(schema, doc, out->reason, sizeof out->reason) ||
        !check_fields(event, wf, out))
        return false;
    out->body = body;
    out->len = len;
    out->doc = doc; /* in the arena, until the next call */
    if (id->type == PANO_JSON_STRING) {
        out->event_id = id->u.string.text;
        out->event_id_len = id->u.string.len;
    }
    return true;
}

/* Events that must change: parsed again into a tree that can be edited. */
static bool slow_path(pano_normalizer *nz, const char *routing_key, const char *body, size_t len,
                      pano_normalized *out)
{
    const pano_normalize_options *o = &nz->o;
    pano_json *doc = parse(body, len, out);
    if (!doc)
        return false;
    bool changed = false, ok = false;
    char *inner_key = NULL;
    if (doc->type != PANO_JSON_OBJECT) {
        reject(out, "the event must be an object");
        goto done;
    }
    if (!unwrap_management_form(&doc, &changed, &inner_key, out))
        goto done;
    if (doc->type != PANO_JSON_OBJECT) {
        reject(out, "the event must be an object");
        goto done;
    }

    /* A nameless event is named by its routing key. */
    const char *key = inner_key ? inner_key : routing_key;
    if (!pano_json_get(doc, "event") && pano_event_name_valid(key)) {
        pano_json_set_str(doc, "event", key);
        changed = true;
    }
    const char *name = pano_json_get_str(doc, "event");

    /* Stampede (monitord) events. */
    if ((name && strncmp(name, "stampede.", 9) == 0) || pano_json_get(doc, "xwf__id"))
        changed |= respell_stampede_keys(&doc);
    if (!pano_json_get(doc, "wf_uuid")) {
        const char *xwf = pano_json_get_str(doc, "xwf_id");
        if (!xwf)
            xwf = pano_json_get_str(doc, "root_xwf_id");
        if (xwf) {
            pano_json_set_str(doc, "wf_uuid", xwf);
            changed = true;
        }
    }

    /* pano's publishers always set an event_id: without one (or wrapped
     * for the management API) the event comes from another tool. */
    bool foreign = changed || !pano_json_get(doc, "event_id");
    changed |= settle_ts(doc);
    if (!pano_json_get(doc, "event_id")) {
        /* Hash the routing key and the original bytes, so a redelivery of
         * the same message gets the same id. */
        char id[33];
        size_t klen = strlen(routing_key);
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int dlen = 0;
        if (!md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL) ||
            !EVP_DigestUpdate(md, routing_key, klen + 1) || !EVP_DigestUpdate(md, body, len) ||
            !EVP_DigestFinal_ex(md, digest, &dlen) || dlen < 16) {
            EVP_MD_CTX_free(md);
            reject(out, "cannot compute an event_id (SHA-256 failed)");
            goto done;
        }
        EVP_MD_CTX_free(md);
        for (int i = 0; i < 16; i++)
            snprintf(id + 2 * i, 3, "%02x", digest[i]);
        pano_json_set_str(doc, "event_id", id);
        changed = true;
    }

    /* schemas/events/ describe pano's own publishers (pano-monitor's
     * kickstart.inv.online has fields Panorama's kickstart never sent):
     * events from other tools are held to the envelope. */
    const pano_schema *schema = name && !foreign ? pano_schema_for_event(o->schemas, name)
                                                 : pano_schema_envelope(o->schemas);
    if (!pano_schema_validate(schema, doc, out->reason, sizeof out->reason))
        goto done;
    if (!check_key_fields(doc, &name, out))
        goto done;
    const pano_json *id = pano_json_get(doc, "event_id");
    if (id && id->type == PANO_JSON_STRING) {
        out->event_id = id->u.string.text;
        out->event_id_len = id->u.string.len;
    }
    out->changed = changed;
    if (changed) {
        out->owned = pano_json_serialize(doc, &out->len);
        out->body = out->owned;
    } else {
        out->body = body;
        out->len = len;
    }
    out->doc = out->owned_doc = doc;
    ok = true;
done:
    free(inner_key);
    if (!ok)
        pano_json_free(doc);
    return ok;
}

void pano_normalized_free(pano_normalized *n)
{
    free(n->owned);
    pano_json_free(n->owned_doc);
    n->owned = NULL;
    n->owned_doc = NULL;
    n->doc = NULL;
}
