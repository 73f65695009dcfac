/*
 * table.h - pano-query's output: aligned columns for people, tab-separated
 * values for scripts, and the cell formats of both (a person reads
 * "1h02m" and "3.1 GiB", a script gets seconds and bytes).
 */
#ifndef PANO_QUERY_TABLE_H
#define PANO_QUERY_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *header;
    bool right; /* numbers are right-aligned */
} table_column;

typedef struct table table;

table *table_new(const table_column *columns, size_t n);
/* Add a row of n cells (copied); NULL cells print as "-". */
void table_row(table *t, const char *const *cells);
/* Aligned with two spaces between columns, or TSV with a header line. */
void table_print(const table *t, FILE *out, bool tsv);
void table_free(table *t);

/* Cell formats into buf; raw gives what a script wants. Unknown values
 * (NaN, negative sizes) print as "-" (raw: empty). */
const char *fmt_seconds(char *buf, size_t size, double s, bool raw);  /* 1h02m, 12.3 s */
const char *fmt_bytes(char *buf, size_t size, double bytes, bool raw); /* 3.1 GiB */
const char *fmt_time(char *buf, size_t size, double epoch, bool raw);  /* local 2026-11-25 12:37:40 */
/* The same with decimals (0-3) digits of the second, truncated: 12:37:40.2 */
const char *fmt_time_fraction(char *buf, size_t size, double epoch, bool raw, int decimals);
/* The digits of the second that tell apart times step seconds apart (0 for
 * whole seconds, 1 for 0.2 s, 2 for 0.05 s, at most 3). */
int time_decimals(double step);
const char *fmt_number(char *buf, size_t size, double v, int decimals);


#endif
