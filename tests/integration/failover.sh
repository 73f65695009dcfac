#!/usr/bin/env bash
# Fast failover: during a steady stream (RabbitMQ -> pano-bridge -> Kafka ->
# pano-indexer -> Elasticsearch), pano-indexer is killed with SIGKILL and
# started again at once, then pano-bridge the same way. A restarted indexer
# is the same static member of its group (pano.indexer.instance_id) and takes
# its partitions back without waiting for its session to time out; a
# restarted bridge consumes at once (RabbitMQ gives the dead connection's
# unacked messages back when it closes). Each must be working again within
# 15 s of its restart (the figures are logged), and at the end every event
# is in Elasticsearch exactly once. A second indexer started with the same
# instance id fences the first, which exits 1 and says why.
source "$(dirname "$0")/indexer_lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_stack

N=24000 RATE=600 LIMIT=15
# the broker's default session timeout (45 s): what a restart must not wait for
export PANO_INDEXER_KAFKA_PROPERTIES=session.timeout.ms=45000
export PANO_INDEXER_STATUS_FILE=$TEST_DIR/indexer.prom
bridge_status=$TEST_DIR/bridge.prom
bridge_args=(--set pano.bridge.status_file="$bridge_status" --set pano.bridge.stats_interval=0.2)

"$BRIDGE" --setup >"$TEST_DIR/setup.log" 2>&1 || fail "pano-bridge --setup: $(cat "$TEST_DIR/setup.log")"
start_bridge bridge "${bridge_args[@]}"
bridge_pid=$(last_pid)
start_indexer ix
wait_until 60 grep -q "INFO: assigned" "$TEST_DIR/ix.log" || fail "the indexer got no partitions"
"$AMQP_LOAD" -n $N -p "$TEST_ID" -w 50 -r $RATE -t 300 >"$TEST_DIR/load.out" 2>"$TEST_DIR/load.err" &
load=$!

# seconds_until CMD...: how long until CMD succeeds (at most 60 s), to 0.1 s
seconds_until() {
    local t0 t1
    t0=$(date +%s%N)
    wait_until 60 "$@" || return 1
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) / 1e9 }'
}
grows() { # FILE METRIC: the metric is above 0 in that (new) status file
    [[ $(awk -v m="$2" '$1 == m {print $2}' "$1" 2>/dev/null || echo 0) -gt 0 ]]
}

# The indexer.
wait_until 60 grows "$PANO_INDEXER_STATUS_FILE" pano_indexer_indexed_total || fail "nothing indexed"
sleep 3
kill_indexer ix
rm -f "$PANO_INDEXER_STATUS_FILE"
start_indexer ix
ix_s=$(seconds_until grows "$PANO_INDEXER_STATUS_FILE" pano_indexer_indexed_total) ||
    fail "the restarted indexer indexed nothing in 60 s: $(tail -5 "$TEST_DIR/ix.log")"
log "the restarted indexer indexed again after $ix_s s"

# The bridge.
sleep 3
kill_hard "$bridge_pid"
log "killed the bridge with SIGKILL"
rm -f "$bridge_status"
start_bridge bridge2 "${bridge_args[@]}"
bridge_s=$(seconds_until grows "$bridge_status" pano_bridge_messages_acked_total) ||
    fail "the restarted bridge acked nothing in 60 s"
log "the restarted bridge acked again after $bridge_s s"

wait "$load" || fail "amqp_load: $(cat "$TEST_DIR/load.out" "$TEST_DIR/load.err")"
wait_until 120 count_is "$FAMILY_INDICES" $N || fail "$(count_in "$FAMILY_INDICES") of $N events in Elasticsearch"
check_distinct "$FAMILY_INDICES" $N
awk -v a="$ix_s" -v b="$bridge_s" -v l=$LIMIT 'BEGIN { exit !(a <= l && b <= l) }' ||
    fail "working again after $ix_s s (indexer) and $bridge_s s (bridge), more than $LIMIT s"

# A second indexer with the same instance id fences the first, which stops
# and says why.
first=${IX_PID[ix]}
PANO_INDEXER_INSTANCE_ID="$TEST_ID-ix" start twin "$INDEXER"
twin=$!
wait_until 60 bash -c "! kill -0 $first 2>/dev/null" || fail "the fenced indexer kept running"
rc=0
wait "$first" || rc=$?
[[ $rc == 1 ]] || fail "the fenced indexer exited $rc, not 1"
grep -q "uses the same pano.indexer.instance_id" "$TEST_DIR/ix.log" || fail "the fenced indexer did not say why"
forget "$first"
kill -0 "$twin" || fail "the new indexer stopped too"
log "PASS: failover in $ix_s s (indexer) and $bridge_s s (bridge); $N events, each once; a twin fences with a message"
