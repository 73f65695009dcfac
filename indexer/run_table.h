/*
 * run_table.h - a bounded table of keyed entries, the least recently used
 * evicted when it is full: what pano-indexer keeps per job run and per
 * workflow to give samples their delta (deltas.h).
 *
 * Each entry has a string key, the Kafka partition its events come from (so
 * that the entries of a partition taken away can be forgotten) and a value
 * of a fixed size, zeroed when the entry is made, that the caller fills.
 * Finding an entry makes it the most recently used. There are at most
 * `capacity` entries: adding one more first evicts the least recently used,
 * handed to on_evict before it goes. Finding, adding and removing take
 * constant time (chained hashing and a doubly linked list); forgetting a
 * partition walks every entry. It uses nothing of the indexer.
 */
#ifndef PANO_INDEXER_RUN_TABLE_H
#define PANO_INDEXER_RUN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct run_table run_table;

/* Called with an entry about to be evicted (its key and value). */
typedef void (*run_table_evicted)(const char *key, void *value, void *user);

/* A table of at most capacity (>= 1) entries with values of value_size
 * bytes; on_evict may be NULL. */
run_table *run_table_new(size_t capacity, size_t value_size, run_table_evicted on_evict,
                         void *user);
void run_table_free(run_table *t);

/* The value of key, made the most recently used; NULL when absent. */
void *run_table_find(run_table *t, const char *key);
/* Add key (absent), its events from partition: its zeroed value, the most
 * recently used. Evicts the least recently used entry when full. */
void *run_table_add(run_table *t, const char *key, int partition);
/* Remove key; false when it was absent. */
bool run_table_remove(run_table *t, const char *key);
/* Remove every entry of partition; returns how many. */
size_t run_table_forget_partition(run_table *t, int partition);

size_t run_table_count(const run_table *t);

#endif
