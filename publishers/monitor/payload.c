#include "payload.h"

#include "buf.h"
#include "log.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Incremental matching of a fixed marker (Knuth-Morris-Pratt), so a marker
 * split anywhere across reads is still found, and found once. */
typedef struct {
    const char *text;
    size_t len;
    size_t fail[64];
} marker;

static void marker_init(marker *m, const char *text)
{
    m->text = text;
    m->len = strlen(text);
    m->fail[0] = 0;
    size_t k = 0;
    for (size_t i = 1; i < m->len; i++) {
        while (k > 0 && text[i] != text[k])
            k = m->fail[k - 1];
        if (text[i] == text[k])
            k++;
        m->fail[i] = k;
    }
}

/* Advance the match state by one byte; true when the marker is complete. */
static inline bool marker_step(const marker *m, size_t *state, char c)
{
    size_t k = *state;
    while (k > 0 && c != m->text[k])
        k = m->fail[k - 1];
    if (c == m->text[k])
        k++;
    if (k == m->len) {
        *state = 0;
        return true;
    }
    *state = k;
    return false;
}

typedef enum { OUTSIDE, INSIDE, SKIPPING } scan_state;

struct pano_payload_scanner {
    marker start, end;
    scan_state state;
    size_t matched; /* bytes of the current marker matched so far */
    size_t max_block;
    pano_buf block; /* INSIDE: text since the start marker */
    size_t skipped; /* SKIPPING: text length so far */
    pano_payload_fn fn;
    void *user;
};

pano_payload_scanner *pano_payload_scanner_new(size_t max_block, pano_payload_fn fn, void *user)
{
    pano_payload_scanner *s = pano_calloc(1, sizeof *s);
    marker_init(&s->start, PANO_PAYLOAD_START);
    marker_init(&s->end, PANO_PAYLOAD_END);
    s->max_block = max_block;
    s->fn = fn;
    s->user = user;
    return s;
}

void pano_payload_scanner_free(pano_payload_scanner *s)
{
    if (!s)
        return;
    pano_buf_free(&s->block);
    free(s);
}

void pano_payload_feed(pano_payload_scanner *s, const char *data, size_t len)
{
    const char *p = data, *stop = data + len;
    while (p < stop) {
        if (s->state == OUTSIDE) {
            if (s->matched == 0) {
                /* Fast path: nothing can start before the next '@'. */
                const char *at = memchr(p, '@', (size_t)(stop - p));
                if (!at)
                    return;
                p = at;
            }
            if (marker_step(&s->start, &s->matched, *p++)) {
                s->state = INSIDE;
                pano_buf_clear(&s->block);
            }
            continue;
        }
        /* Inside a block: copy up to the next possible end of marker. */
        const char *q = p;
        bool done = false;
        while (q < stop && !done)
            done = marker_step(&s->end, &s->matched, *q++);
        size_t n = (size_t)(q - p);
        if (s->state == INSIDE) {
            if (s->block.len + n > s->max_block + s->end.len) {
                s->state = SKIPPING;
                s->skipped = s->block.len;
                pano_buf_free(&s->block);
            } else
                pano_buf_append(&s->block, p, n);
        }
        if (s->state == SKIPPING)
            s->skipped += n;
        p = q;
        if (!done)
            continue;
        if (s->state == INSIDE) {
            size_t size = s->block.len - s->end.len;
            s->block.data[size] = '\0';
            s->fn(s->user, PANO_PAYLOAD_COMPLETE, s->block.data, size);
            pano_buf_clear(&s->block);
        } else
            s->fn(s->user, PANO_PAYLOAD_OVERSIZED, NULL, s->skipped - s->end.len);
        s->state = OUTSIDE;
        s->matched = 0;
    }
}

void pano_payload_finish(pano_payload_scanner *s)
{
    if (s->state == INSIDE)
        s->fn(s->user, PANO_PAYLOAD_UNTERMINATED, s->block.data ? s->block.data : "",
              s->block.len);
    else if (s->state == SKIPPING)
        s->fn(s->user, PANO_PAYLOAD_UNTERMINATED, NULL, s->skipped);
    s->state = OUTSIDE;
    s->matched = 0;
    pano_buf_clear(&s->block);
}

/* ---- blocks to events -------------------------------------------------------- */

static void error_event(pano_source *src, const char *stream, const char *why,
                        const char *name, const char *block, size_t size,
                        pano_payload_emit_fn emit, void *user)
{
    pano_warn("monitoring payload on %s: %s", stream, why);
    pano_json *ev = pano_event_new(src, "kickstart.payload.error");
    pano_json_set_str(ev, "stream", stream);
    pano_json_set_str(ev, "error", why);
    if (name)
        pano_json_set(ev, "monitoring_event", pano_json_string_len(name, strlen(name)));
    pano_json_set_int(ev, "size", (int64_t)size);
    if (block) {
        size_t n = size < 256 ? size : 256;
        pano_json_set(ev, "excerpt", pano_json_string_len(block, n));
    }
    emit(user, ev);
}

size_t pano_payload_events(pano_source *src, const char *stream, pano_payload_status status,
                           const char *block, size_t size, pano_payload_emit_fn emit,
                           void *user)
{
    char why[512];
    if (status == PANO_PAYLOAD_OVERSIZED) {
        snprintf(why, sizeof why, "block of %zu bytes is larger than pano.monitor.payload_max",
                 size);
        error_event(src, stream, why, NULL, NULL, size, emit, user);
        return 0;
    }
    if (status == PANO_PAYLOAD_UNTERMINATED) {
        error_event(src, stream, "the output ended inside a block (no end marker)", NULL,
                    block, size, emit, user);
        return 0;
    }
    char err[256];
    pano_json *doc = pano_json_parse(block, size, PANO_JSON_DEFAULT_DEPTH, err, sizeof err);
    if (!doc) {
        snprintf(why, sizeof why, "invalid JSON: %s", err);
        error_event(src, stream, why, NULL, block, size, emit, user);
        return 0;
    }
    size_t made = 0;
    const char *name = "monitoring.additional";
    pano_json *items;
    double ts = 0;
    if (doc->type != PANO_JSON_OBJECT) {
        error_event(src, stream, "the payload is not a JSON object", NULL, block, size, emit,
                    user);
        goto done;
    }
    pano_json *n = pano_json_get(doc, "monitoring_event");
    if (n && n->type != PANO_JSON_STRING) {
        error_event(src, stream, "monitoring_event is not a string", NULL, block, size, emit,
                    user);
        goto done;
    }
    if (n)
        name = n->u.string.text;
    if ((n && strlen(name) != n->u.string.len) || !pano_event_name_valid(name)) {
        snprintf(why, sizeof why,
                 "monitoring_event is not a valid event name (dot-separated words of "
                 "letters, digits, '_' and '-')");
        error_event(src, stream, why, name, block, size, emit, user);
        goto done;
    }
    items = pano_json_get_array(doc, "payload");
    if (!items) {
        error_event(src, stream, "no \"payload\" array", name, block, size, emit, user);
        goto done;
    }
    if (pano_json_get_number(doc, "ts", &ts) && !(ts > 0 && ts < 1e11))
        ts = 0;
    for (size_t i = 0; i < pano_json_len(items); i++) {
        pano_json *item = pano_json_at(items, i);
        if (item->type != PANO_JSON_OBJECT) {
            snprintf(why, sizeof why, "item %zu of \"payload\" is not an object", i);
            error_event(src, stream, why, name, block, size, emit, user);
            continue;
        }
        pano_json *ev = pano_event_new(src, name);
        if (ts > 0)
            pano_json_set_double(ev, "ts", ts, 6);
        pano_json_set_str(ev, "monitoring_event", name);
        for (size_t k = 0; k < pano_json_len(item); k++) {
            const char *key = pano_json_key_at(item, k);
            if (strcmp(key, "monitoring_event") == 0)
                continue;
            pano_json *value = pano_json_clone(pano_json_at(item, k));
            if (pano_event_is_envelope_key(key)) {
                /* The envelope is the monitor's; the item's value is kept. */
                char *renamed = pano_asprintf("payload_%s", key);
                pano_json_set(ev, renamed, value);
                free(renamed);
            } else
                pano_json_set(ev, key, value);
        }
        emit(user, ev);
        made++;
    }
done:
    pano_json_free(doc);
    return made;
}
