#include "dedup.h"

#include "mem.h"

#include <stdlib.h>

/* The ids in a ring, in the order they were remembered, and an index of
 * them: open addressing with linear probing, at most half full, each slot
 * holding a ring position + 1 (0: empty). */
struct pano_dedup {
    uint64_t k0, k1;
    pano_dedup_id *ring;
    size_t capacity, count, oldest;
    uint32_t *slots;
    size_t mask;
};

/* ---- SipHash-2-4 with 128-bit output (Aumasson and Bernstein) ---------- */

static uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

typedef struct {
    uint64_t v0, v1, v2, v3;
} sip_state;

static void sip_rounds(sip_state *s, int n)
{
    for (int i = 0; i < n; i++) {
        s->v0 += s->v1;
        s->v1 = rotl(s->v1, 13);
        s->v1 ^= s->v0;
        s->v0 = rotl(s->v0, 32);
        s->v2 += s->v3;
        s->v3 = rotl(s->v3, 16);
        s->v3 ^= s->v2;
        s->v0 += s->v3;
        s->v3 = rotl(s->v3, 21);
        s->v3 ^= s->v0;
        s->v2 += s->v1;
        s->v1 = rotl(s->v1, 17);
        s->v1 ^= s->v2;
        s->v2 = rotl(s->v2, 32);
    }
}

static void sip_absorb(sip_state *s, uint64_t m)
{
    s->v3 ^= m;
    sip_rounds(s, 2);
    s->v0 ^= m;
}

pano_dedup_id pano_dedup_id_of(const pano_dedup *d, const void *data, size_t len)
{
    const unsigned char *p = data;
    sip_state s = {0x736f6d6570736575ULL ^ d->k0, 0x646f72616e646f6dULL ^ d->k1 ^ 0xee,
                   0x6c7967656e657261ULL ^ d->k0, 0x7465646279746573ULL ^ d->k1};
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8)
        sip_absorb(&s, load_le64(p + i));
    uint64_t last = (uint64_t)len << 56;
    for (size_t i = whole; i < len; i++)
        last |= (uint64_t)p[i] << (8 * (i - whole));
    sip_absorb(&s, last);
    s.v2 ^= 0xee;
    sip_rounds(&s, 4);
    pano_dedup_id id = {.lo = s.v0 ^ s.v1 ^ s.v2 ^ s.v3};
    s.v1 ^= 0xdd;
    sip_rounds(&s, 4);
    id.hi = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
    return id;
}

/* ---- the window -------------------------------------------------------- */

pano_dedup *pano_dedup_new(size_t capacity, const unsigned char key[16])
{
    pano_dedup *d = pano_calloc(1, sizeof *d);
    d->k0 = load_le64(key);
    d->k1 = load_le64(key + 8);
    d->capacity = capacity ? capacity : 1;
    d->ring = pano_reallocarray(NULL, d->capacity, sizeof *d->ring);
    size_t n = 2;
    while (n < 2 * d->capacity)
        n *= 2;
    d->slots = pano_calloc(n, sizeof *d->slots);
    d->mask = n - 1;
    return d;
}

void pano_dedup_free(pano_dedup *d)
{
    if (!d)
        return;
    free(d->ring);
    free(d->slots);
    free(d);
}

static bool same(pano_dedup_id a, pano_dedup_id b) { return a.lo == b.lo && a.hi == b.hi; }

/* The slot holding id, or of the empty slot where it would go. */
static size_t find(const pano_dedup *d, pano_dedup_id id)
{
    size_t i = id.lo & d->mask;
    while (d->slots[i] && !same(d->ring[d->slots[i] - 1], id))
        i = (i + 1) & d->mask;
    return i;
}

bool pano_dedup_seen(const pano_dedup *d, pano_dedup_id id) { return d->slots[find(d, id)] != 0; }

/* Empty slot i, moving later entries of its probe run back so that every
 * entry stays reachable from its home slot. */
static void remove_slot(pano_dedup *d, size_t i)
{
    for (size_t j = (i + 1) & d->mask; d->slots[j]; j = (j + 1) & d->mask) {
        size_t home = d->ring[d->slots[j] - 1].lo & d->mask;
        /* The entry at j may move to i unless its home lies in (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            d->slots[i] = d->slots[j];
            i = j;
        }
    }
    d->slots[i] = 0;
}

void pano_dedup_remember(pano_dedup *d, pano_dedup_id id)
{
    size_t i = find(d, id);
    if (d->slots[i])
        return;
    size_t pos;
    if (d->count < d->capacity)
        pos = d->count++;
    else {
        pos = d->oldest;
        d->oldest = (d->oldest + 1) % d->capacity;
        remove_slot(d, find(d, d->ring[pos]));
        i = find(d, id); /* removing may have moved the empty slot */
    }
    d->ring[pos] = id;
    d->slots[i] = (uint32_t)(pos + 1);
}

size_t pano_dedup_count(const pano_dedup *d) { return d->count; }

size_t pano_dedup_bytes(const pano_dedup *d)
{
    return sizeof *d + d->capacity * sizeof *d->ring + (d->mask + 1) * sizeof *d->slots;
}
