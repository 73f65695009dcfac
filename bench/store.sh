#!/usr/bin/env bash
# Benchmark: the store for years of workflows (docs/indexer.md, layout).
#
#   bench/store.sh            (BUILD=build)
#
# Through the whole pipeline (tests/tools/amqp_load -> RabbitMQ ->
# pano-bridge -> Kafka -> pano-indexer -> Elasticsearch), into indices of
# its own:
# 1. few:  20,000 events over 10 workflows; seconds from the first publish
#          until every one is searchable (a _count of the prefix).
# 2. many: 20,000 events over 5,000 new workflows, the same way. The
#          cluster's metadata (GET _cluster/state/metadata, bytes) before and
#          after: its growth per new workflow.
# 3. query: pano-query status of one workflow of 400 job ends, with the 10
#          workflows of step 1 stored, and again once 50,000 more workflows
#          are (100,000 events produced straight to Kafka by
#          tests/tools/kafka_load): medians of BENCH_REPS (5), and their ratio.
# Baseline in the same run: step 1 for step 2, and the first query for the
# second. Targets: many <= 1.25 x few, <= 40 bytes of cluster state per new
# workflow, query ratio <= 1.2.
#
# Environment: the local stack's ports (PANO_AMQP_PORT, PANO_KAFKA_PORT,
# PANO_ES_PORT, PANO_RABBITMQ_MGMT_PORT), BUILD, BENCH_REPS.
# Last line: RESULT store few_s=... many_s=... state_bytes_per_workflow=... query_ratio=...
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/pipeline.sh
REPS=${BENCH_REPS:-5}
for t in curl jq; do command -v $t >/dev/null || { echo "bench: needs $t" >&2; exit 1; }; done
pipeline_setup store
pipeline_start

count() { curl -fsS "$ES/$ID-*,-$ID-summary-*/_count" | jq .count; }
metadata_bytes() { curl -fsS "$ES/_cluster/state/metadata" | wc -c; }
# searchable N [amqp_load options]: publish N events; seconds until all of
# them (and what was there before) are found
searchable() {
    local n=$1 before t0 want
    shift
    before=$(count)
    want=$((before + n))
    t0=$(date +%s%N)
    "$BUILD/tests/tools/amqp_load" -n "$n" "$@" >"$DIR/load.out" ||
        { cat "$DIR/load.out" >&2; exit 1; }
    for _ in $(seq 3000); do
        [[ $(count) -ge $want ]] && break
        sleep 0.1
    done
    [[ $(count) == "$want" ]] || { echo "bench: $(count) documents, $want expected" >&2; exit 1; }
    awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }'
}
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
query_ms() {
    "$BUILD/query/pano-query" status "$X" --json >/dev/null # warm-up
    for _ in $(seq "$REPS"); do ms "$BUILD/query/pano-query" status "$X" --json; done | median
}

# The workflow asked about, and 1: 10 workflows
X=$(cat /proc/sys/kernel/random/uuid)
"$BUILD/tests/tools/kafka_load" -n 400 --wf "$X" --families kickstart --run-id "$ID-x" >/dev/null
for _ in $(seq 600); do [[ $(count) -ge 400 ]] && break; sleep 0.1; done
few=$(searchable 20000 -w 10 -b 0 -p "$ID-few")
log "few: 20,000 events over 10 workflows searchable in $few s"
query_few=$(query_ms)
log "pano-query status with 11 workflows stored: $query_few ms"

# 2: 5,000 new workflows
state_before=$(metadata_bytes)
many=$(searchable 20000 -w 5000 -b 1000 -p "$ID-many")
state_after=$(metadata_bytes)
per_wf=$(awk -v a="$state_before" -v b="$state_after" 'BEGIN { printf "%.1f", (b - a) / 5000 }')
log "many: 20,000 events over 5,000 new workflows searchable in $many s; cluster metadata $state_before -> $state_after bytes ($per_wf a workflow)"

# 3: 50,000 more workflows
before=$(count)
"$BUILD/tests/tools/kafka_load" -n 100000 -w 50000 --families kickstart --run-id "$ID-bulk" >/dev/null
for _ in $(seq 3000); do
    [[ $(count) -ge $((before + 100000)) ]] && break
    sleep 0.2
done
stored=$(curl -fsS "$ES/$ID-*/_search" -H 'Content-Type: application/json' \
    -d '{"size":0,"aggs":{"w":{"cardinality":{"field":"wf_uuid","precision_threshold":40000}}}}' | jq .aggregations.w.value)
query_many=$(query_ms)
log "pano-query status with about $stored workflows stored: $query_many ms"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
log "many / few: $(ratio "$few" "$many"); query with $stored / with 11 workflows: $(ratio "$query_few" "$query_many")"
printf 'RESULT store few_s=%s many_s=%s state_bytes_per_workflow=%s query_few_ms=%s query_many_ms=%s query_ratio=%s ratio=%s\n' \
    "$few" "$many" "$per_wf" "$query_few" "$query_many" "$(ratio "$query_few" "$query_many")" "$(ratio "$few" "$many")"
