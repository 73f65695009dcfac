#!/usr/bin/env bash
# pano-indexer stopped while its group is half-way through a rebalance: its
# JoinGroup answered, its first assignment not yet come. librdkafka before
# 2.3.0 (Debian 12 has 2.0.2) aborts when such a consumer is destroyed
# (librdkafka #4312). A leader that holds the rebalance
# (kafka_stuck_leader.py) puts the indexer in that state, then:
# 1. the leader never sends the assignment: SIGTERM, the indexer exits 0
#    within its grace (5 s) and says why it left without closing;
# 2. the leader sends it 2 s after the SIGTERM: the indexer takes it and
#    closes the consumer normally.
source "$(dirname "$0")/indexer_lib.sh"
require_stack
LEADER="$PANO_SOURCE/tests/integration/kafka_stuck_leader.py"

# rebalance_held CASE LEADER_ARGS...: a group held by the leader, an indexer
# in it waiting for its assignment; its pid in IX_PID[CASE].
rebalance_held() {
    local case=$1
    shift
    export PANO_INDEXER_GROUP="$TEST_ID-$case"
    python3 "$LEADER" "$KAFKA" "$PANO_INDEXER_GROUP" "$@" >"$TEST_DIR/leader-$case.log" 2>&1 &
    PIDS+=($!)
    wait_until 30 grep -q "leading" "$TEST_DIR/leader-$case.log" ||
        fail "the leader did not form the group: $(cat "$TEST_DIR/leader-$case.log")"
    start_indexer "$case" --set pano.indexer.status_port=-1
    wait_until 60 grep -q "holding 2 members" "$TEST_DIR/leader-$case.log" ||
        fail "the indexer did not join: $(tail -n 5 "$TEST_DIR/$case.log")"
    sleep 1 # its JoinGroup answer, sent with the leader's, is in
    grep -q "INFO: assigned" "$TEST_DIR/$case.log" && fail "assigned before the leader synced"
    true
}

# stopped_in SECONDS CASE: SIGTERM; exits 0 within SECONDS, no abort.
stopped_in() {
    local limit=$1 case=$2 rc=0 t0=$SECONDS
    kill -TERM "${IX_PID[$case]}"
    timeout "$limit" tail --pid="${IX_PID[$case]}" -f /dev/null ||
        fail "$case still running $limit s after SIGTERM"
    wait "${IX_PID[$case]}" || rc=$?
    grep -E "Assertion|Sanitizer" "$TEST_DIR/$case.log" >&2 && fail "$case aborted"
    ((rc == 0)) || fail "$case exited $rc after SIGTERM"
    log "$case: exited 0, $((SECONDS - t0)) s after SIGTERM"
    forget "${IX_PID[$case]}"
}

log "librdkafka: $(pkg-config --modversion rdkafka 2>/dev/null || echo unknown)"

rebalance_held never --hold 60
stopped_in 20 never
if grep -q "leaving the consumer group without closing" "$TEST_DIR/never.log"; then
    log "never: left the group to the exit, as librdkafka < 2.3.0 needs"
else
    log "never: closed the consumer (a librdkafka that does not need the workaround)"
fi

rebalance_held late --release-after 3 --hold 60
stopped_in 20 late
grep -q "released" "$TEST_DIR/leader-late.log" || fail "the leader did not release"
grep -q "INFO: assigned 0 partition" "$TEST_DIR/late.log" ||
    fail "late: did not take the assignment that came during its shutdown"
grep -q "without closing" "$TEST_DIR/late.log" && fail "late: did not close the consumer"

stop_all
log "PASS"
