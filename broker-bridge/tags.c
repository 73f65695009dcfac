#include "tags.h"

#include "mem.h"

#include <stdlib.h>
#include <string.h>

enum { PENDING = 0, DONE, SETTLED };

static unsigned char *at(const pano_tags *t, uint64_t tag) { return &t->state[tag % t->size]; }

void pano_tags_init(pano_tags *t, size_t size)
{
    memset(t, 0, sizeof *t);
    t->size = size ? size : 1;
    t->state = pano_calloc(t->size, 1);
    t->received_at = pano_calloc(t->size, sizeof *t->received_at);
}

void pano_tags_free(pano_tags *t)
{
    free(t->state);
    free(t->received_at);
    t->state = NULL;
    t->received_at = NULL;
}

void pano_tags_reset(pano_tags *t, double now)
{
    if (t->state)
        memset(t->state, PENDING, t->size);
    t->base = t->received = t->done = t->settled = 0;
    t->head_since = now;
}

bool pano_tags_receive(pano_tags *t, uint64_t tag, double now)
{
    if (tag != t->received + 1 || tag - t->base > t->size)
        return false;
    if (t->received == t->base)
        t->head_since = now; /* it is the new head */
    t->received = tag;
    *at(t, tag) = PENDING;
    t->received_at[tag % t->size] = now;
    return true;
}

bool pano_tags_is_pending(const pano_tags *t, uint64_t tag)
{
    return tag > t->base && tag <= t->received && *at(t, tag) == PENDING;
}

size_t pano_tags_take_expired(pano_tags *t, double before, uint64_t *out, size_t max)
{
    size_t n = 0;
    for (uint64_t tag = t->base + 1; tag <= t->received && n < max; tag++) {
        if (t->received_at[tag % t->size] >= before)
            break; /* received in order: the rest is younger */
        if (*at(t, tag) == PENDING) {
            *at(t, tag) = SETTLED;
            t->settled++;
            out[n++] = tag;
        }
    }
    return n;
}

uint64_t pano_tags_head(const pano_tags *t)
{
    return pano_tags_is_pending(t, t->base + 1) ? t->base + 1 : 0;
}

bool pano_tags_done(pano_tags *t, uint64_t tag)
{
    if (!pano_tags_is_pending(t, tag))
        return false;
    *at(t, tag) = DONE;
    t->done++;
    return true;
}

bool pano_tags_settled(pano_tags *t, uint64_t tag)
{
    if (!pano_tags_is_pending(t, tag))
        return false;
    *at(t, tag) = SETTLED;
    t->settled++;
    return true;
}

uint64_t pano_tags_take_ack(pano_tags *t, double now, uint64_t *count)
{
    uint64_t end = t->base, last_done = 0, n_done = 0, n_settled = 0;
    while (end < t->received) {
        unsigned char s = *at(t, end + 1);
        if (s == PENDING)
            break;
        end++;
        if (s == DONE) {
            last_done = end;
            n_done++;
        } else
            n_settled++;
    }
    if (end == t->base) {
        *count = 0;
        return 0;
    }
    /* Settled tags after the last DONE one need no ack either: forget the
     * whole run. */
    for (uint64_t tag = t->base + 1; tag <= end; tag++)
        *at(t, tag) = PENDING;
    t->base = end;
    t->done -= n_done;
    t->settled -= n_settled;
    t->head_since = now;
    *count = n_done;
    return last_done;
}

size_t pano_tags_take_single(pano_tags *t, uint64_t *out, size_t max)
{
    size_t n = 0;
    for (uint64_t tag = t->base + 1; tag <= t->received && n < max && t->done > 0; tag++)
        if (*at(t, tag) == DONE) {
            *at(t, tag) = SETTLED;
            t->done--;
            t->settled++;
            out[n++] = tag;
        }
    return n;
}

uint64_t pano_tags_outstanding(const pano_tags *t) { return t->received - t->base - t->settled; }

uint64_t pano_tags_pending(const pano_tags *t)
{
    return t->received - t->base - t->settled - t->done;
}

uint64_t pano_tags_room(const pano_tags *t) { return t->size - (t->received - t->base); }
