#!/usr/bin/env bash
# A workflow in one file, from and back into the pipeline: the five real
# Pegasus runs of tests/data/pegasus, a 200-job workflow in pano-monitor's
# shape and a refused message go through RabbitMQ, pano-bridge, Kafka and
# pano-indexer into Elasticsearch; pano-query export writes them into one
# file; --store FILE answers as Elasticsearch does; pano-query import sends
# the file through the broker into a second, empty pipeline (an exchange,
# topics and indices of its own), twice, which then answers as the first
# one does, every event once.
source "$(dirname "$0")/lib.sh"
require_stack
: "${PANO_SOURCE:?}"
QUERY=$PANO_BUILD/query/pano-query
EMIT=$PANO_BUILD/publishers/emit/pano-emit
DATA=$PANO_SOURCE/tests/data/pegasus
source "$PANO_SOURCE/tests/tools/same_answers.sh"
export PANO_QUERY_INGEST_DELAY=3600
# SQL over the exported file (zstd-compressed): its decompressed copy
in_file() { # FILE SQL
    zstd -q -dc "$1" >"$TEST_DIR/plain.sqlite" || fail "zstd -d $1"
    sqlite3 "$TEST_DIR/plain.sqlite" "$2"
}

start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"
samples=(process_wf_success process_wf_failure sample_wf_held hierarchical_wf_success hierarchical_wf_failure)
workflows=()
for s in "${samples[@]}"; do
    "$EMIT" --events "$DATA/$s/events.jsonl" 2>>"$TEST_DIR/emit.log" || fail "pano-emit --events $s"
    workflows+=("$(head -n 1 "$DATA/$s/events.jsonl" | jq -r .root_xwf_id)")
done
MWF=$(cat /proc/sys/kernel/random/uuid)
"$PANO_BUILD/tests/tools/kafka_load" --shape monitor --jobs 200 --wf "$MWF" --no-produce \
    --lines "$TEST_DIR/monitor.jsonl" >/dev/null || fail "kafka_load"
"$EMIT" --events "$TEST_DIR/monitor.jsonl" 2>>"$TEST_DIR/emit.log" || fail "pano-emit --events monitor.jsonl"
workflows+=("$MWF")
echo "{\"event\":\"stampede.xwf.start\",\"ts\":1764000000,\"event_id\":\"refused-1\",\"wf_uuid\":\"$MWF\",\"seq\":\"x\"}" \
    >"$TEST_DIR/refused.jsonl"
"$EMIT" --events "$TEST_DIR/refused.jsonl" 2>>"$TEST_DIR/emit.log" || true
want=$(cat "$DATA"/*/events.jsonl "$TEST_DIR/monitor.jsonl" | wc -l)
indexed() { # PREFIX: the events in its indices, the summaries and closing samples aside
    curl -fsS "$ES/$1*,-$1summary-*,-$1dead-letter-*/_count?q=NOT+sample:closing" | jq .count
}
wait_until 120 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*,-$TEST_ID-summary-*,-$TEST_ID-dead-letter-*/_count?q=NOT+sample:closing' | jq .count) -ge $want ]]" ||
    fail "$(indexed "$TEST_ID-") of $want events indexed"
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-dead-letter-*/_count' | jq '.count // 0') -ge 1 ]]" ||
    fail "the refused message is not in the dead-letter partition"
curl -fsS -X POST "$ES/$TEST_ID-*/_refresh" >/dev/null
log "$want events in Elasticsearch"

# ---- export from Elasticsearch; the file answers as Elasticsearch does
FILE=$TEST_DIR/six.pano
"$QUERY" export "${workflows[@]}" -o "$FILE" 2>>"$TEST_DIR/query.log" || fail "export: $(tail -3 "$TEST_DIR/query.log")"
[[ $(in_file "$FILE" "SELECT count(*) FROM events") == "$want" ]] ||
    fail "$(in_file "$FILE" "SELECT count(*) FROM events") of $want events exported"
[[ $(in_file "$FILE" "SELECT count(*) FROM dead_letters WHERE event_id = 'refused-1'") == 1 ]] ||
    fail "the dead letter was not exported"
in_file "$FILE" "SELECT value FROM meta WHERE key = 'source'" | grep -q "Elasticsearch, indices $TEST_ID-" ||
    fail "meta source: $(in_file "$FILE" "SELECT value FROM meta WHERE key = 'source'")"
ls "$TEST_DIR" | grep -q scratch && fail "the export left its scratch store"
log "exported $want events and the dead letter: $(du -b "$FILE" | cut -f1) bytes"
differ=0 n=0
compare() { # NAME ENV-PREFIX-A|- ARGS...: the first pipeline's answer and the other's
    local name=$1 other=$2 why SAME_ASKED_FROM
    shift 2
    # asked once first: the two answers then come close to each other, as
    # the comparison of what runs "so far" needs
    "$QUERY" "$@" --json >/dev/null 2>>"$TEST_DIR/query.log" || true
    SAME_ASKED_FROM=$EPOCHREALTIME
    "$QUERY" "$@" --json >"$TEST_DIR/es-$name.raw" 2>>"$TEST_DIR/query.log" ||
        fail "$name from Elasticsearch: $(tail -3 "$TEST_DIR/query.log")"
    if [[ $other == file ]]; then
        "$QUERY" --store "$FILE" "$@" --json >"$TEST_DIR/sqlite-$name.raw" 2>>"$TEST_DIR/query.log"
    else
        PANO_INDEXER_INDEX_PREFIX=$other "$QUERY" "$@" --json >"$TEST_DIR/sqlite-$name.raw" 2>>"$TEST_DIR/query.log"
    fi || fail "$name from $other: $(tail -3 "$TEST_DIR/query.log")"
    n=$((n + 1))
    if ! why=$(same_answers "$TEST_DIR" "$name"); then
        log "DIFFERS: $name: $why"
        differ=$((differ + 1))
    fi
}
for wf in "${workflows[@]}"; do
    for cmd in status stats jobs anomalies; do compare "file-$cmd-$wf" file "$cmd" "$wf"; done
    for id in $(jq -r '.jobs[].id' "$TEST_DIR/es-file-jobs-$wf.raw" | head -3); do
        compare "file-job-$id-$wf" file job "$wf" "$id"
    done
done
((differ == 0)) || fail "$differ of $n answers differ between Elasticsearch and the file"
log "$n answers from the file the same as from Elasticsearch"

# ---- import into an empty pipeline of its own, twice
COPY=$TEST_ID-copy-
(
    export PANO_AMQP_URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2F/$TEST_ID.copy"
    export PANO_KAFKA_TOPIC_PREFIX="$TEST_ID.copy." PANO_KAFKA_DEAD_LETTER_TOPIC="$TEST_ID.copy.dead-letter"
    export PANO_BRIDGE_QUEUE="$TEST_ID.copy.events" PANO_BRIDGE_DEAD_LETTER_EXCHANGE="$TEST_ID.copy.dlx"
    export PANO_INDEXER_GROUP="$TEST_ID-copy-indexer" PANO_INDEXER_INDEX_PREFIX=$COPY
    "$PANO_BUILD/broker-bridge/pano-bridge" >>"$TEST_DIR/bridge-copy.log" 2>&1 &
    echo $! >"$TEST_DIR/bridge-copy.pid"
    "$PANO_BUILD/indexer/pano-indexer" >>"$TEST_DIR/indexer-copy.log" 2>&1 &
    echo $! >"$TEST_DIR/indexer-copy.pid"
    wait_until 30 grep -q "consuming" "$TEST_DIR/bridge-copy.log" || fail "the second bridge did not start"
    for round in 1 2; do
        "$QUERY" import "$FILE" 2>>"$TEST_DIR/query.log" || fail "import $round: $(tail -3 "$TEST_DIR/query.log")"
    done
)
PIDS+=("$(cat "$TEST_DIR/bridge-copy.pid")" "$(cat "$TEST_DIR/indexer-copy.pid")")
wait_until 120 bash -c "[[ \$(curl -fsS '$ES/$COPY*,-${COPY}summary-*,-${COPY}dead-letter-*/_count?q=NOT+sample:closing' | jq .count) -ge $want ]]" ||
    fail "$(indexed "$COPY") of $want events imported"
sleep 2
curl -fsS -X POST "$ES/$COPY*/_refresh" >/dev/null
[[ $(indexed "$COPY") == "$want" ]] || fail "imported twice: $(indexed "$COPY") events, not $want"
for wf in "${workflows[@]}"; do
    for cmd in status stats jobs anomalies; do compare "copy-$cmd-$wf" "$COPY" "$cmd" "$wf"; done
done
for m in $("$QUERY" metrics --tsv | tail -n +2 | cut -f1); do
    compare "copy-series-$m" "$COPY" series "$MWF" --metric "$m" --step 60s
done
((differ == 0)) || fail "$differ answers differ between the two pipelines"
log "imported twice into an empty pipeline: $want events once each; $n answers the same"
for q in "$TEST_ID.copy.events" "$TEST_ID.copy.events.dead"; do
    curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$q" >/dev/null 2>&1 || true
done
for x in "$TEST_ID.copy" "$TEST_ID.copy.dlx"; do
    curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/exchanges/%2F/$x" >/dev/null 2>&1 || true
done
log "ok"
