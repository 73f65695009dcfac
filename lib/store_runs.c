#include "store_runs.h"

#include "event.h"
#include "mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RUN_STATES 4096 /* a power of two */

typedef struct {
    uint64_t generation; /* kept under this generation; 0: never */
    char *key;
    double latest_ts;
    pano_run_state state;
} entry;

struct store_runs {
    uint64_t generation; /* the entries of another are forgotten */
    entry entries[RUN_STATES];
};

store_runs *store_runs_new(void)
{
    store_runs *sr = pano_calloc(1, sizeof *sr);
    sr->generation = 1;
    return sr;
}

void store_runs_free(store_runs *sr)
{
    if (!sr)
        return;
    for (size_t i = 0; i < RUN_STATES; i++)
        free(sr->entries[i].key);
    free(sr);
}

static entry *entry_of(store_runs *sr, const char *key)
{
    return &sr->entries[pano_hash_str(key) & (RUN_STATES - 1)];
}

/* key's entry, when it holds key's state of this generation. */
static entry *kept(store_runs *sr, const char *key)
{
    entry *e = entry_of(sr, key);
    return e->generation == sr->generation && strcmp(e->key, key) == 0 ? e : NULL;
}

bool store_runs_get(store_runs *sr, const char *key, pano_run_state *r)
{
    const entry *e = kept(sr, key);
    if (e)
        *r = e->state;
    return e != NULL;
}

void store_runs_put(store_runs *sr, const char *key, double latest_ts, const pano_run_state *r)
{
    entry *e = entry_of(sr, key);
    if (!e->key || strcmp(e->key, key) != 0) {
        free(e->key);
        e->key = pano_strdup(key);
    }
    e->generation = sr->generation;
    e->latest_ts = latest_ts;
    e->state = *r;
}

void store_runs_stored(store_runs *sr, const char *key, double ts, const pano_json *doc)
{
    entry *e = kept(sr, key);
    if (!e || ts < e->latest_ts) /* an older row: the latest stays */
        return;
    e->latest_ts = ts;
    memset(&e->state, 0, sizeof e->state);
    pano_run_state_of(doc, "store", &e->state);
}

void store_runs_forget(store_runs *sr)
{
    sr->generation++;
}
