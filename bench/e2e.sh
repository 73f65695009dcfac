#!/usr/bin/env bash
# End-to-end benchmark: a steady BENCH_RATE events/s (2,000) for
# BENCH_DURATION s (60) published to RabbitMQ -> pano-bridge -> Kafka ->
# pano-indexer -> Elasticsearch, refresh interval 1 s. Measures, for a sample
# of the events (one in BENCH_PROBE_EVERY, 10), the time from the event's ts
# until a _search finds it, and counts every event at the end.
#
# Environment: the local stack's ports (PANO_AMQP_PORT, PANO_KAFKA_PORT,
# PANO_ES_PORT, PANO_RABBITMQ_MGMT_PORT), BUILD (build), and any
# PANO_INDEXER_* / PANO_BRIDGE_* setting.
# Before it, where the time went: the indexer's stage histograms
# (pano_indexer_stage_seconds: to_kafka, to_bulk, bulk), each quantile given
# as the histogram bucket holding it; the rest, up to the end-to-end figure,
# is the refresh interval and the probe's polling (20 ms).
# Last line: RESULT e2e rate=... p50_ms=... p99_ms=... lost=...
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RATE=${BENCH_RATE:-2000}
DURATION=${BENCH_DURATION:-60}
EVERY=${BENCH_PROBE_EVERY:-10}
AMQP_PORT=${PANO_AMQP_PORT:-5672}
MGMT_PORT=${PANO_RABBITMQ_MGMT_PORT:-15672}
ES=${PANO_ES_URL:-http://127.0.0.1:${PANO_ES_PORT:-9200}}
ID="e2e$(od -An -N3 -tx1 /dev/urandom | tr -d ' ')"
DIR=$(mktemp -d "/tmp/pano-$ID.XXXXXX")
export PANO_AMQP_URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2F/$ID"
export PANO_KAFKA_BROKERS=${PANO_KAFKA_BROKERS:-127.0.0.1:${PANO_KAFKA_PORT:-9092}}
export PANO_ES_URL=$ES
export PANO_KAFKA_TOPIC_PREFIX="$ID."
export PANO_KAFKA_DEAD_LETTER_TOPIC="$ID.dead-letter"
export PANO_BRIDGE_QUEUE="$ID.events"
export PANO_BRIDGE_DEAD_LETTER_EXCHANGE="$ID.dlx"
export PANO_INDEXER_GROUP="$ID-indexer"
export PANO_INDEXER_INDEX_PREFIX="$ID-"
export PANO_INDEXER_REPLICAS=${PANO_INDEXER_REPLICAS:-0}
export PANO_INDEXER_REFRESH_INTERVAL=1s
export PANO_INDEXER_STATS_INTERVAL=${PANO_INDEXER_STATS_INTERVAL:-10}
export PANO_INDEXER_STATUS_FILE="$DIR/indexer.prom"
PIDS=()

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    local q
    for q in "queues/%2F/$ID.events" "queues/%2F/$ID.events.dead" "exchanges/%2F/$ID" "exchanges/%2F/$ID.dlx"; do
        curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/$q" >/dev/null 2>&1 || true
    done
    curl -fsS -X DELETE "$ES/$ID-*" >/dev/null 2>&1 || true
    curl -fsS -X DELETE "$ES/_index_template/$ID-*" >/dev/null 2>&1 || true
    "$BUILD/tests/tools/kafka_load" --delete-topics >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT

"$BUILD/broker-bridge/pano-bridge" >"$DIR/bridge.log" 2>&1 &
PIDS+=($!)
"$BUILD/indexer/pano-indexer" ${BENCH_INDEXER_ARGS:-} >"$DIR/indexer.log" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 150; i++)); do
    grep -q consuming "$DIR/bridge.log" && grep -q "assigned" "$DIR/indexer.log" && break
    sleep 0.2
done
grep -q consuming "$DIR/bridge.log" || { tail "$DIR/bridge.log"; exit 1; }
grep -q assigned "$DIR/indexer.log" || { tail "$DIR/indexer.log"; exit 1; }
log "$ID: $RATE events/s for $DURATION s through RabbitMQ, pano-bridge, Kafka, pano-indexer"
"$BUILD/bench/e2e_probe" --rate "$RATE" --duration "$DURATION" --probe-every "$EVERY" \
    --index "$ID-*" --settle 60 | tee "$DIR/probe.out"
[[ -n ${BENCH_KEEP_LOG:-} ]] && cp "$DIR/indexer.log" "$BENCH_KEEP_LOG"
line=$(tail -n1 "$DIR/probe.out")
{ grep -h "consumed\|received" "$DIR/indexer.log" "$DIR/bridge.log" || true; } | tail -n 2 >&2
# The bucket holding each quantile of each stage, from the cumulative counts.
awk -F'[{}" ]+' '/^pano_indexer_stage_seconds_bucket/ {
        st = $3; le = $5; n[st]++; bound[st, n[st]] = le; cum[st, n[st]] = $NF
        if (le == "+Inf") total[st] = $NF
    }
    function q(st, f,   i) {
        for (i = 1; i <= n[st]; i++) if (cum[st, i] >= f * total[st]) return bound[st, i]
    }
    function ms(b) { return b == "+Inf" ? "more than 10000" : "<= " b * 1000 }
    END {
        split("to_kafka to_bulk bulk", order, " ")
        for (k = 1; k <= 3; k++) if (total[order[k]] > 0)
            printf "stage %-8s p50 %s ms, p99 %s ms (%d events)\n", order[k],
                ms(q(order[k], 0.5)), ms(q(order[k], 0.99)), total[order[k]]
    }' "$DIR/indexer.prom"
p50=$(sed -n 's/.*p50_ms=\([-0-9]*\).*/\1/p' <<<"$line")
p99=$(sed -n 's/.*p99_ms=\([-0-9]*\).*/\1/p' <<<"$line")
lost=$(sed -n 's/.*lost=\([-0-9]*\).*/\1/p' <<<"$line")
echo "RESULT e2e rate=$RATE p50_ms=$p50 p99_ms=$p99 lost=$lost"
