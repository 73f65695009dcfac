#!/usr/bin/env bash
# Benchmark: pano-query on a big workflow.
#
#   bench/query.sh                      (BUILD=build; 10,000 jobs in pano-monitor's shape)
#   BENCH_SHAPE=pegasus bench/query.sh  (Pegasus's kickstart + stampede shape)
#
# 1. A workflow of BENCH_JOBS jobs in the shape BENCH_SHAPE (monitor or
#    pegasus), indexed by the real pano-indexer (bench/workflow.sh); before
#    anything is timed, pano-query must count every job and the failed ones
#    the workflow was written with.
# 2. Each query runs BENCH_REPS times (after one warm-up), as --json to
#    /dev/null: status, stats, anomalies, jobs --state failed, and the
#    series of cpu and rss (step 60 s, whole workflow); the median wall
#    time of each is reported. Elasticsearch answers a repeated aggregation
#    from its request cache until the indices change, as for a finished
#    workflow; the cold figures clear that cache before each run, as every
#    refresh of a running workflow finds it: series_cpu_cold and
#    series_rss_cold.
# Baseline in the same run: the Elasticsearch _count of the workflow's
#    documents (one request, the least a query over this workflow costs).
#
# Environment: PANO_ES_URL, PANO_KAFKA_BROKERS (default the local stack),
# BENCH_SHAPE, BENCH_JOBS, BENCH_SAMPLES, BENCH_REPS (5), BENCH_QUERIES (the
# names timed, all by default: status stats anomalies jobs_failed series_cpu
# series_rss series_cpu_cold series_rss_cold), BUILD; BENCH_KEEP=1
# leaves the indices in place for profiling, BENCH_REUSE measures them again
# (bench/workflow.sh).
# Last line: RESULT query shape=... jobs=... events=... status_ms=... stats_ms=...
#   anomalies_ms=... jobs_failed_ms=... series_cpu_ms=... series_rss_ms=...
#   series_cpu_cold_ms=... series_rss_cold_ms=... count_ms=...
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${BENCH_REPS:-5}
source bench/workflow.sh

Q=$BUILD/query/pano-query
count_ms=$( for _ in $(seq "$REPS"); do ms curl -fsS "$ES/$ID-*/_count?q=wf_uuid:$WF"; done | median)
"$Q" status "$WF" --json >"$DIR/status.json"
jq -e --argjson n "$JOBS" '.jobs.total == $n' "$DIR/status.json" >/dev/null ||
    { echo "bench: status counts $(jq .jobs.total "$DIR/status.json") jobs, not $JOBS" >&2; exit 1; }
if [[ -n $FAILED ]]; then
    jq -e --argjson n "$FAILED" '.jobs.by_state.failed == $n' "$DIR/status.json" >/dev/null ||
        { echo "bench: status counts $(jq .jobs.by_state.failed "$DIR/status.json") failed jobs, not $FAILED" >&2; exit 1; }
fi
log "pano-query sees $(jq -c .jobs.by_state "$DIR/status.json")"

declare -A result
read -ra names <<<"${BENCH_QUERIES:-status stats anomalies jobs_failed series_cpu series_rss series_cpu_cold series_rss_cold}"
# cold CMD...: CMD's milliseconds after Elasticsearch's request cache is cleared
cold() { curl -fsS -X POST "$ES/$ID-*/_cache/clear?request=true" >/dev/null && ms "$@"; }
for name in "${names[@]}"; do
    case $name in
        jobs_failed) args=(jobs "$WF" --state failed) ;;
        series_*) m=${name#series_}; args=(series "$WF" --metric "${m%_cold}" --step 60s) ;;
        *) args=("$name" "$WF") ;;
    esac
    args+=(--json)
    run=ms
    [[ $name == *_cold ]] && run=cold
    $run "$Q" "${args[@]}" >/dev/null # warm-up
    result[$name]=$(for _ in $(seq "$REPS"); do $run "$Q" "${args[@]}"; done | median)
    log "${args[*]}: ${result[$name]} ms (median of $REPS)"
done
log "baseline: _count of the workflow's $total documents, $count_ms ms"
line="RESULT query shape=$SHAPE jobs=$JOBS events=$total"
for name in "${names[@]}"; do line+=" ${name}_ms=${result[$name]}"; done
echo "$line count_ms=$count_ms"
