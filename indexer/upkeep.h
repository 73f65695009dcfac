/*
 * upkeep.h - pano-indexer's upkeep of its indices in Elasticsearch: the
 * partitions of now and of the next hour made ahead of their events, the
 * deletion of partitions past their stream's retention (retention.h
 * decides which), the refusal of a configuration over the cluster's shard
 * budget, and the compaction of summary indices. Requests go through the
 * indexer's client (ix->es) and note whether Elasticsearch answered
 * (ix->es_up). docs/indexer.md says when each runs.
 */
#ifndef PANO_INDEXER_UPKEEP_H
#define PANO_INDEXER_UPKEEP_H

#include "indexer.h"

#include <stdbool.h>

/* A valid index name (prefix_only: a prefix of one). */
bool upkeep_index_name_ok(const char *name, bool prefix_only);
/* Create the partitions of now and of the next hour ahead of their events,
 * and note when (ix->last_prepared). */
void upkeep_prepare_partitions(indexer *ix);
/* Whether any stream has a retention (else nothing is ever deleted). */
bool upkeep_any_retention(const indexer *ix);
/* Delete the partitions past their stream's retention (a dry run lists
 * them); how many, or -1 when Elasticsearch did not answer. */
long upkeep_retention_pass(indexer *ix, bool dry_run);
/* Refuse (-1) a configuration needing more shards than the cluster allows. */
int upkeep_check_shard_budget(indexer *ix);

/* Summary indices compacted. Elasticsearch reads a page of documents whose
 * numbers in the index follow one another about ten times faster than one
 * with a gap, and each update of a summary leaves a deleted copy, a gap.
 * note: index had a summary updated (written over an existing one).
 * compact: those quiet for UPKEEP_COMPACT_QUIET seconds, or updated for
 * UPKEEP_COMPACT_EVERY seconds since their last compaction, are
 * force-merged without their deleted documents, in the background (every
 * one at once when all); none while Elasticsearch does not answer. A merge
 * keeps the copies deleted after the last commit (the index is flushed
 * first) and those the shard's retention lease, renewed every 30 s, has
 * not passed yet: hence a quiet minute. */
#define UPKEEP_COMPACT_QUIET 60.0
#define UPKEEP_COMPACT_EVERY 600.0
void upkeep_note_update(indexer *ix, const char *index, double now);
void upkeep_compact_summaries(indexer *ix, double now, bool all);

#endif
