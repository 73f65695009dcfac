#include "normalize.h"

#include "event.h"
#include "mem.h"

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
    for (size_t i = len; i > 0 && text[i - 1] == '='; i--)
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


/* Unwrap {"routing_key":..., "payload":"<base64>", "payload_encoding":"base64"}
 * (Panorama's kickstart publishing through the management API) in place. */
static bool unwrap_management_form(pano_json **doc, bool *unwrapped, pano_normalized *out)
{
    const char *encoding = pano_json_get_str(*doc, "payload_encoding");
    pano_json *payload = pano_json_get(*doc, "payload");
    if (!encoding || !payload || payload->type != PANO_JSON_STRING)
        return true; /* not that form */
    if (strcmp(encoding, "base64") != 0)
        return reject(out, "management-API message with unknown payload_encoding '%s'",
                      encoding);
    size_t n;
    char *inner = base64_decode(payload->u.string.text, payload->u.string.len, &n);
    if (!inner)
        return reject(out, "management-API message whose payload is not base64");
    char err[200];
    pano_json *parsed = pano_json_parse(inner, n, PANO_JSON_DEFAULT_DEPTH, err, sizeof err);
    free(inner);
    if (!parsed)
        return reject(out, "invalid JSON inside a management-API message: %s", err);
    pano_json_free(*doc);
    *doc = parsed;
    *unwrapped = true;
    return true;
}

bool pano_normalize(const char *routing_key, const char *body, size_t len, size_t max_size,
                    pano_normalized *out)
{
    memset(out, 0, sizeof *out);
    if (len > max_size) {
        snprintf(out->reason, sizeof out->reason, "message too large (%zu bytes, limit %zu)",
                 len, max_size);
        return false;
    }
    char err[200];
    pano_json *doc = pano_json_parse(body, len, PANO_JSON_DEFAULT_DEPTH, err, sizeof err);
    if (!doc)
        return reject(out, "invalid JSON: %s", err);
    bool changed = false, ok = false;
    if (doc->type != PANO_JSON_OBJECT) {
        reject(out, "not a JSON object");
        goto done;
    }
    if (!unwrap_management_form(&doc, &changed, out))
        goto done;
    if (doc->type != PANO_JSON_OBJECT) {
        reject(out, "not a JSON object");
        goto done;
    }

    pano_json *event = pano_json_get(doc, "event");
    if (!event && pano_event_name_valid(routing_key)) {
        pano_json_set_str(doc, "event", routing_key);
        changed = true;
    } else if (!event || event->type != PANO_JSON_STRING) {
        reject(out, "missing or non-string 'event'");
        goto done;
    }
    const char *name = pano_json_get_str(doc, "event");
    if (!pano_event_name_valid(name)) {
        reject(out, "invalid event name '%.100s'", name);
        goto done;
    }

    pano_json *wf = pano_json_get(doc, "wf_uuid");
    const char *xwf = pano_json_get_str(doc, "xwf_id");
    if (!wf && xwf) {
        pano_json_set_str(doc, "wf_uuid", xwf);
        changed = true;
    } else if (!wf) {
        reject(out, "missing 'wf_uuid' (and no 'xwf_id')");
        goto done;
    } else if (wf->type != PANO_JSON_STRING || wf->u.string.len == 0 ||
               wf->u.string.len >= sizeof out->wf_uuid) {
        reject(out, "'wf_uuid' must be a non-empty string of at most 127 bytes");
        goto done;
    }
    snprintf(out->wf_uuid, sizeof out->wf_uuid, "%s", pano_json_get_str(doc, "wf_uuid"));

    double ts;
    if (!pano_json_get_number(doc, "ts", &ts)) {
        reject(out, "%s", pano_json_get(doc, "ts") ? "'ts' is not a number" : "missing 'ts'");
        goto done;
    }
    pano_json *seq = pano_json_get(doc, "seq");
    if (seq && seq->type != PANO_JSON_INT) {
        reject(out, "'seq' is not an integer");
        goto done;
    }
    static const char *const string_fields[] = {"event_id", "hostname"};
    for (size_t i = 0; i < 2; i++) {
        pano_json *v = pano_json_get(doc, string_fields[i]);
        if (v && v->type != PANO_JSON_STRING) {
            reject(out, "'%s' is not a string", string_fields[i]);
            goto done;
        }
    }
    if (!pano_json_get(doc, "event_id")) {
        /* Hash the routing key and the original bytes, so a redelivery of
         * the same message gets the same id. */
        char id[33];
        size_t klen = strlen(routing_key);
        char *material = pano_malloc(klen + 1 + len);
        memcpy(material, routing_key, klen + 1);
        memcpy(material + klen + 1, body, len);
        pano_event_id_of(material, klen + 1 + len, id);
        free(material);
        pano_json_set_str(doc, "event_id", id);
        changed = true;
    }

    out->family = pano_event_family(name);
    if (changed) {
        out->owned = pano_json_serialize(doc, &out->len);
        out->body = out->owned;
    } else {
        out->body = body;
        out->len = len;
    }
    ok = out->body != NULL;
    if (!ok)
        reject(out, "cannot serialize the normalized event");
done:
    pano_json_free(doc);
    return ok;
}

void pano_normalized_free(pano_normalized *n)
{
    free(n->owned);
    n->owned = NULL;
}
