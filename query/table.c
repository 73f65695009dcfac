#include "table.h"

#include "mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct table {
    const table_column *columns;
    size_t ncols;
    char **cells; /* rows * ncols */
    size_t rows;
};

table *table_new(const table_column *columns, size_t n)
{
    table *t = pano_calloc(1, sizeof *t);
    t->columns = columns;
    t->ncols = n;
    return t;
}

void table_row(table *t, const char *const *cells)
{
    t->cells = pano_reallocarray(t->cells, (t->rows + 1) * t->ncols, sizeof *t->cells);
    for (size_t c = 0; c < t->ncols; c++)
        t->cells[t->rows * t->ncols + c] = pano_strdup(cells[c] && *cells[c] ? cells[c] : "-");
    t->rows++;
}

/* Display width of UTF-8 text: its code points (wide characters are rare here). */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* Tabs and line ends in a cell would break both layouts. */
static void put_cell(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, out);
}

void table_print(const table *t, FILE *out, bool tsv)
{
    size_t *w = pano_calloc(t->ncols, sizeof *w);
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = width(t->columns[c].header);
        for (size_t r = 0; r < t->rows; r++) {
            size_t cw = width(t->cells[r * t->ncols + c]);
            if (cw > w[c])
                w[c] = cw;
        }
    }
    for (size_t r = 0; r <= t->rows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = r == 0 ? t->columns[c].header : t->cells[(r - 1) * t->ncols + c];
            if (tsv) {
                if (c)
                    fputc('\t', out);
                put_cell(out, r > 0 && strcmp(cell, "-") == 0 ? "" : cell);
                continue;
            }
            size_t pad = w[c] - width(cell);
            bool last = c + 1 == t->ncols;
            if (c)
                fputs("  ", out);
            if (t->columns[c].right)
                fprintf(out, "%*s", (int)pad, "");
            put_cell(out, cell);
            if (!t->columns[c].right && !last)
                fprintf(out, "%*s", (int)pad, "");
        }
        fputc('\n', out);
    }
    free(w);
}

void table_free(table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->rows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

const char *fmt_number(char *buf, size_t size, double v, int decimals)
{
    if (isnan(v))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.*f", decimals, v);
    return buf;
}

const char *fmt_seconds(char *buf, size_t size, double s, bool raw)
{
    if (isnan(s) || s < 0)
        snprintf(buf, size, "-");
    else if (raw)
        snprintf(buf, size, "%.3f", s);
    else if (s < 60)
        snprintf(buf, size, "%.1f s", s);
    else if (s < 3600)
        snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else if (s < 86400)
        snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else
        snprintf(buf, size, "%dd%02dh", (int)(s / 86400), (int)fmod(s / 3600, 24));
    return buf;
}

const char *fmt_bytes(char *buf, size_t size, double bytes, bool raw)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (isnan(bytes) || bytes < 0) {
        snprintf(buf, size, "-");
        return buf;
    }
    if (raw) {
        snprintf(buf, size, "%.0f", bytes);
        return buf;
    }
    size_t u = 0;
    while (bytes >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

const char *fmt_time(char *buf, size_t size, double epoch, bool raw)
{
    return fmt_time_fraction(buf, size, epoch, raw, 0);
}

const char *fmt_time_fraction(char *buf, size_t size, double epoch, bool raw, int decimals)
{
    if (isnan(epoch) || epoch <= 0) {
        snprintf(buf, size, "-");
        return buf;
    }
    if (raw) {
        snprintf(buf, size, "%.3f", epoch);
        return buf;
    }
    decimals = decimals < 0 ? 0 : decimals > 3 ? 3 : decimals;
    double scale = pow(10, decimals);
    /* truncated, as whole seconds are; the small addition makes up for
     * the double's precision at today's epoch (about 0.2 us) */
    double whole = floor(epoch), part = floor((epoch - whole) * scale + 1e-3);
    if (part >= scale)
        part = scale - 1;
    time_t t = (time_t)whole;
    struct tm tm;
    localtime_r(&t, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
    if (decimals > 0 && n > 0)
        snprintf(buf + n, size - n, ".%0*.0f", decimals, part);
    return buf;
}

int time_decimals(double step)
{
    for (int d = 0; d < 3; d++) {
        double scaled = step * pow(10, d);
        if (fabs(scaled - round(scaled)) < 1e-6)
            return d;
    }
    return 3;
}
