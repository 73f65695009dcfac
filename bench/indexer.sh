#!/usr/bin/env bash
# Benchmark: pano-indexer on a Kafka backlog against Elasticsearch's own
# ceiling for the same documents and index settings.
#
#   bench/indexer.sh            (BUILD=build, 1,000,000 events)
#
# 1. kafka_load fills the topics with BENCH_EVENTS events and writes the
#    very same documents as bulk bodies (pano-indexer's code builds both).
# 2. Ceiling: those bodies are posted with curl from BENCH_CLIENTS processes
#    into fresh indices with the templates pano-indexer generates (same
#    shards, replicas, refresh interval, mappings). Indices then deleted.
# 3. pano-indexer consumes the backlog into fresh indices; the time runs
#    from its start until its status file shows every event indexed.
#
# Environment: PANO_ES_URL, PANO_KAFKA_BROKERS (default the local stack),
# BENCH_EVENTS, BENCH_CLIENTS (4), BENCH_BULK_DOCS (documents per ceiling
# body; default pano.indexer.batch_docs), BUILD, and any PANO_INDEXER_*
# setting for the indexer run.
# Last line: RESULT indexer docs_per_s=... ratio_to_ceiling=...
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${BENCH_EVENTS:-1000000}
CLIENTS=${BENCH_CLIENTS:-4}
ES=${PANO_ES_URL:-http://127.0.0.1:${PANO_ES_PORT:-9200}}
export PANO_KAFKA_BROKERS=${PANO_KAFKA_BROKERS:-127.0.0.1:${PANO_KAFKA_PORT:-9092}}
export PANO_ES_URL=$ES
ID="bench$(od -An -N3 -tx1 /dev/urandom | tr -d ' ')"
DIR=$(mktemp -d "/tmp/pano-$ID.XXXXXX")
export PANO_KAFKA_TOPIC_PREFIX="$ID."
export PANO_KAFKA_DEAD_LETTER_TOPIC="$ID.dead-letter"
export PANO_INDEXER_GROUP="$ID"
export PANO_INDEXER_REPLICAS=${PANO_INDEXER_REPLICAS:-0}
export PANO_INDEXER_STATUS_FILE="$DIR/status.prom"
BULK_DOCS=${BENCH_BULK_DOCS:-$("$BUILD/indexer/pano-indexer" --show-config | sed -n 's/^pano.indexer.batch_docs *= *//p')}
IX_PID=

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
cleanup() {
    [[ -n $IX_PID ]] && kill -TERM "$IX_PID" 2>/dev/null && wait "$IX_PID" 2>/dev/null
    curl -fsS -X DELETE "$ES/$ID-*" >/dev/null 2>&1 || true
    curl -fsS -X DELETE "$ES/_index_template/$ID-*" >/dev/null 2>&1 || true
    "$BUILD/tests/tools/kafka_load" --delete-topics >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT

install_templates() { # PREFIX: the indexer's templates and shared indices
    local t
    PANO_INDEXER_INDEX_PREFIX=$1 "$BUILD/indexer/pano-indexer" --print-templates >"$DIR/templates.json"
    for t in $(jq -r 'keys[]' "$DIR/templates.json"); do
        jq -c --arg t "$t" '.[$t]' "$DIR/templates.json" |
            curl -fsS -X PUT -H 'Content-Type: application/json' "$ES/_index_template/$t" -d @- >/dev/null
        curl -fsS -X PUT "$ES/$t" >/dev/null
    done
}

log "$ID: $N events, ceiling with $CLIENTS curl processes, $BULK_DOCS documents per body"
mkdir -p "$DIR/bulk"
t0=$(date +%s.%N)
"$BUILD/tests/tools/kafka_load" -n "$N" -w 1000 --bulk-dir "$DIR/bulk" --bulk-docs "$BULK_DOCS" \
    --bulk-prefix "$ID-ceil-" >"$DIR/load.log" 2>&1 || { tail "$DIR/load.log"; exit 1; }
log "$(tail -n1 "$DIR/load.log") (and $(ls "$DIR/bulk" | wc -l) bulk bodies, $(du -sh "$DIR/bulk" | cut -f1))"

# ---- ceiling ----
install_templates "$ID-ceil-"
post() { # FILE: one bulk body; fails on any item error
    curl -fsS -H 'Content-Type: application/x-ndjson' -X POST "$ES/_bulk" --data-binary "@$1" |
        head -c 200 | grep -q '"errors":false' || { echo "errors in $1" >&2; return 1; }
}
export -f post
export ES
t0=$(date +%s.%N)
ls "$DIR"/bulk/*.ndjson | xargs -P "$CLIENTS" -n 1 bash -c 'post "$0"'
t1=$(date +%s.%N)
curl -fsS -X POST "$ES/$ID-ceil-*/_refresh" >/dev/null
got=$(curl -fsS "$ES/$ID-ceil-*/_count" | jq .count)
[[ $got == "$N" ]] || { log "ceiling run indexed $got of $N"; exit 1; }
ceiling=$(echo "$N / ($t1 - $t0)" | bc -l)
log "ceiling: $N documents in $(printf %.1f "$(echo "$t1 - $t0" | bc -l)") s = $(printf %.0f "$ceiling") docs/s"
curl -fsS -X DELETE "$ES/$ID-ceil-*" >/dev/null
curl -fsS -X DELETE "$ES/_index_template/$ID-ceil-*" >/dev/null
rm -rf "$DIR/bulk"
sleep 5

# ---- pano-indexer ----
export PANO_INDEXER_INDEX_PREFIX="$ID-"
t0=$(date +%s.%N)
"$BUILD/indexer/pano-indexer" >"$DIR/indexer.log" 2>&1 &
IX_PID=$!
metric() { awk -v m="pano_indexer_$1" '$1 == m {print $2}' "$PANO_INDEXER_STATUS_FILE" 2>/dev/null; }
deadline=$((SECONDS + 3600))
until [[ $(metric indexed_total) == "$N" ]]; do
    ((SECONDS < deadline)) || { log "indexer too slow: $(metric indexed_total) of $N"; exit 1; }
    kill -0 "$IX_PID" 2>/dev/null || { tail "$DIR/indexer.log"; exit 1; }
    sleep 0.2
done
t1=$(date +%s.%N)
kill -TERM "$IX_PID"
wait "$IX_PID"
IX_PID=
curl -fsS -X POST "$ES/$ID-*/_refresh" >/dev/null
got=$(curl -fsS "$ES/$ID-*/_count" | jq .count)
[[ $got == "$N" ]] || { log "indexer run: $got documents in Elasticsearch, expected $N"; exit 1; }
rate=$(echo "$N / ($t1 - $t0)" | bc -l)
grep -E "consumed" "$DIR/indexer.log" | tail -n1 >&2
log "pano-indexer: $N documents in $(printf %.1f "$(echo "$t1 - $t0" | bc -l)") s = $(printf %.0f "$rate") docs/s"
printf 'RESULT indexer docs_per_s=%.0f ratio_to_ceiling=%.2f ceiling_docs_per_s=%.0f events=%d clients=%d\n' \
    "$rate" "$(echo "$rate / $ceiling" | bc -l)" "$ceiling" "$N" "$CLIENTS"
