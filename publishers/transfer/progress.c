#include "progress.h"

#include "event.h"
#include "mem.h"

#include <stdlib.h>

struct pano_progress {
    FILE *out;
    bool enabled, drawn;
    double started;
};

pano_progress *pano_progress_new(FILE *out, bool enabled)
{
    pano_progress *p = pano_calloc(1, sizeof *p);
    p->out = out;
    p->enabled = enabled;
    p->started = pano_now();
    return p;
}

void pano_progress_bytes(char *out, size_t size, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, size, "%.0f B", bytes);
    else
        snprintf(out, size, "%.1f %s", bytes, units[u]);
}

void pano_progress_format(char *out, size_t size, const pano_copy_stats *s, double elapsed)
{
    char moved[32], rate[32];
    pano_progress_bytes(moved, sizeof moved, (double)s->bytes);
    pano_progress_bytes(rate, sizeof rate, elapsed > 0 ? (double)s->bytes / elapsed : 0);
    int n = snprintf(out, size, "%zu/%zu files  %s  %s/s  %zu active", s->done, s->total, moved,
                     rate, s->active);
    if (s->failed && n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, "  %zu failed", s->failed);
}

static void draw(pano_progress *p, const pano_copy_stats *s)
{
    char line[256];
    pano_progress_format(line, sizeof line, s, pano_now() - p->started);
    /* \r and "erase to end of line": redraw in place. */
    fprintf(p->out, "\r%s\033[K", line);
    fflush(p->out);
    p->drawn = true;
}

void pano_progress_update(pano_progress *p, const pano_copy_stats *s)
{
    if (p && p->enabled)
        draw(p, s);
}

void pano_progress_finish(pano_progress *p, const pano_copy_stats *s)
{
    if (!p || !p->enabled)
        return;
    draw(p, s);
    fputc('\n', p->out);
    fflush(p->out);
}

void pano_progress_free(pano_progress *p) { free(p); }
