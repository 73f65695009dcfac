#!/usr/bin/env bash
# Benchmark: pano-query on a big workflow.
#
#   bench/query.sh            (BUILD=build; 10,000 jobs, 1,000,000 samples)
#
# 1. A workflow of BENCH_JOBS jobs with BENCH_SAMPLES samples each, indexed
#    by the real pano-indexer (bench/workflow.sh).
# 2. Each query runs BENCH_REPS times (after one warm-up): status, stats,
#    series of a rate (cpu) and of a gauge (rss, with its peaks), both at a
#    step of 60 s over the whole workflow, and anomalies, as --json to
#    /dev/null; the median wall time of each is reported. Elasticsearch
#    answers a repeated aggregation from its request cache until the indices
#    change, as for a finished workflow; the cold figures clear that cache
#    before each run, as every refresh of a running workflow finds it:
#    series_cold (cpu) and series_rss_cold.
# Baseline in the same run: the Elasticsearch _count of the workflow's
#    documents (one request, the least a query over this workflow costs).
#
# Environment: PANO_ES_URL, PANO_KAFKA_BROKERS (default the local stack),
# BENCH_JOBS, BENCH_SAMPLES, BENCH_REPS (5), BUILD; BENCH_KEEP=1 leaves the
# indices in place for profiling, BENCH_REUSE measures them again
# (bench/workflow.sh).
# Last line: RESULT query status_ms=... stats_ms=... series_ms=... series_rss_ms=...
# series_cold_ms=... series_rss_cold_ms=... anomalies_ms=...
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${BENCH_REPS:-5}
source bench/workflow.sh

Q=$BUILD/query/pano-query
declare -A result
count_ms=$( for _ in $(seq "$REPS"); do ms curl -fsS "$ES/$ID-*/_count?q=wf_uuid:$WF"; done | median)
"$Q" status "$WF" --json | jq -e '.jobs.total == '"$JOBS"'' >/dev/null || { echo "bench: status does not count $JOBS jobs" >&2; exit 1; }
# cold CMD...: CMD's milliseconds after Elasticsearch's request cache is cleared
cold() { curl -fsS -X POST "$ES/$ID-*/_cache/clear?request=true" >/dev/null && ms "$@"; }
for cmd in status stats series series_rss series_cold series_rss_cold anomalies; do
    args=("${cmd%%_*}" "$WF" --json)
    [[ $cmd == series* ]] && args+=(--metric "$([[ $cmd == *rss* ]] && echo rss || echo cpu)" --step 60s)
    run=ms
    [[ $cmd == *cold ]] && run=cold
    $run "$Q" "${args[@]}" >/dev/null # warm-up
    result[$cmd]=$(for _ in $(seq "$REPS"); do $run "$Q" "${args[@]}"; done | median)
    log "$cmd: ${result[$cmd]} ms (median of $REPS)"
done
log "baseline: _count of the workflow's $total documents, $count_ms ms"
printf 'RESULT query status_ms=%s stats_ms=%s series_ms=%s series_rss_ms=%s series_cold_ms=%s series_rss_cold_ms=%s anomalies_ms=%s count_ms=%s jobs=%s samples=%s\n' \
    "${result[status]}" "${result[stats]}" "${result[series]}" "${result[series_rss]}" \
    "${result[series_cold]}" "${result[series_rss_cold]}" "${result[anomalies]}" "$count_ms" \
    "$JOBS" "$((total))"
