/*
 * darshan_summary.c - the summary model (see darshan_summary.h).
 */
#include "darshan_summary.h"

#include "mem.h"

#include <stdlib.h>
#include <string.h>

const char *const pano_darshan_file_category_names[PANO_DARSHAN_FILES_CATEGORIES] = {
    "total", "read_only", "write_only", "read_write", "unique", "shared",
};

pano_darshan_module_summary *pano_darshan_summary_add_module(pano_darshan_summary *s,
                                                             const char *name)
{
    s->modules = pano_reallocarray(s->modules, s->n_modules + 1, sizeof *s->modules);
    pano_darshan_module_summary *m = &s->modules[s->n_modules++];
    memset(m, 0, sizeof *m);
    m->name = pano_strdup(name);
    m->records = -1;
    m->compressed_bytes = -1;
    return m;
}

pano_darshan_module_summary *pano_darshan_summary_find_module(const pano_darshan_summary *s,
                                                              const char *name)
{
    for (size_t i = 0; i < s->n_modules; i++)
        if (strcmp(s->modules[i].name, name) == 0)
            return &s->modules[i];
    return NULL;
}

/* Keys stay unique (the event is written without a tree that would merge
 * them): a repeated key replaces the earlier value, as JSON readers do. */
void pano_darshan_summary_add_metadata(pano_darshan_summary *s, const char *key, const char *value)
{
    for (size_t i = 0; i < s->n_metadata; i++)
        if (strcmp(s->metadata[i].key, key) == 0) {
            free(s->metadata[i].value);
            s->metadata[i].value = pano_strdup(value);
            return;
        }
    s->metadata = pano_reallocarray(s->metadata, s->n_metadata + 1, sizeof *s->metadata);
    s->metadata[s->n_metadata].key = pano_strdup(key);
    s->metadata[s->n_metadata].value = pano_strdup(value);
    s->n_metadata++;
}

void pano_darshan_summary_parse_metadata(pano_darshan_summary *s, const char *text)
{
    while (*text) {
        size_t len = strcspn(text, "\n");
        const char *eq = memchr(text, '=', len);
        if (eq) {
            char *key = pano_strndup(text, (size_t)(eq - text));
            char *value = pano_strndup(eq + 1, len - (size_t)(eq - text) - 1);
            pano_darshan_summary_add_metadata(s, key, value);
            free(key);
            free(value);
        }
        text += len;
        if (*text == '\n')
            text++;
    }
}

pano_darshan_total *pano_darshan_module_add_total(pano_darshan_module_summary *m, const char *name,
                                                  bool copy)
{
    if (m->n_totals == m->totals_cap) {
        m->totals_cap = m->totals_cap ? 2 * m->totals_cap : 128;
        m->totals = pano_reallocarray(m->totals, m->totals_cap, sizeof *m->totals);
    }
    pano_darshan_total *t = &m->totals[m->n_totals++];
    memset(t, 0, sizeof *t);
    t->name = copy ? pano_strdup(name) : name;
    t->owned = copy;
    return t;
}

void pano_darshan_perf_add_legacy(pano_darshan_perf *perf, const char *name, bool shared_files,
                                  double value)
{
    for (size_t i = 0; i < perf->n_legacy; i++) /* unique names, as for metadata */
        if (strcmp(perf->legacy[i].name, name) == 0) {
            perf->legacy[i].shared_files = shared_files;
            perf->legacy[i].value = value;
            return;
        }
    perf->legacy = pano_reallocarray(perf->legacy, perf->n_legacy + 1, sizeof *perf->legacy);
    perf->legacy[perf->n_legacy++] =
        (pano_darshan_legacy_perf){pano_strdup(name), shared_files, value};
}

static void module_free(pano_darshan_module_summary *m)
{
    free(m->name);
    free(m->note);
    for (size_t i = 0; i < m->n_totals; i++)
        if (m->totals[i].owned)
            free((char *)m->totals[i].name);
    free(m->totals);
    for (size_t i = 0; i < m->perf.n_legacy; i++)
        free(m->perf.legacy[i].name);
    free(m->perf.legacy);
}

void pano_darshan_summary_free(pano_darshan_summary *s)
{
    free(s->version);
    free(s->compression);
    free(s->exe);
    for (size_t i = 0; i < s->n_metadata; i++) {
        free(s->metadata[i].key);
        free(s->metadata[i].value);
    }
    free(s->metadata);
    for (size_t i = 0; i < s->n_modules; i++)
        module_free(&s->modules[i]);
    free(s->modules);
    memset(s, 0, sizeof *s);
}
