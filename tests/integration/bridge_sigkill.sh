#!/usr/bin/env bash
# 100,000 events while pano-bridge is killed with SIGKILL three times in the
# middle of the stream (each time once that instance has handled a few
# thousand messages, so some are always in flight): every event is in Kafka
# at least once afterwards. Redelivered messages may be there twice.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers

N=100000 KILLS=3
status=$TEST_DIR/bridge.prom
bridge_args=(--set pano.bridge.status_file="$status" --set pano.bridge.stats_interval=0.3)
"$BRIDGE" --setup >"$TEST_DIR/setup.log" 2>&1 || fail "pano-bridge --setup: $(cat "$TEST_DIR/setup.log")"

# Publish at a bounded rate so that the run outlasts the kills.
"$AMQP_LOAD" -n $N -p "$TEST_ID" -w 200 -r 4000 -t 500 >"$TEST_DIR/load.out" 2>"$TEST_DIR/load.err" &
load=$!

received() { metric "$status" pano_bridge_messages_received_total; }
for ((k = 1; k <= KILLS; k++)); do
    rm -f "$status"
    start_bridge "bridge$k" "${bridge_args[@]}"
    pid=$(last_pid)
    wait_until 120 bash -c "[[ \$(awk '\$1 == \"pano_bridge_messages_received_total\" {print \$2}' '$status' 2>/dev/null || echo 0) -ge 3000 ]]" ||
        fail "bridge $k handled too little: $(received)"
    inflight=$(metric "$status" pano_bridge_messages_in_flight)
    kill_hard "$pid"
    log "killed bridge $k with SIGKILL after $(received) messages, ${inflight:-?} in flight"
done
start_bridge final "${bridge_args[@]}"

wait "$load" || fail "amqp_load: $(cat "$TEST_DIR/load.out" "$TEST_DIR/load.err")"
log "$(cat "$TEST_DIR/load.out")"
wait_delivered 300 "$TEST_ID" $N ||
    fail "not all delivered: $(queue_ready "$PANO_BRIDGE_QUEUE") waiting in the queue"
result=$(check_all_delivered "$TEST_ID" $N)
log "every event in Kafka: $result"
[[ $(metric "$status" pano_bridge_messages_redelivered_total) -gt 0 ]] ||
    log "note: the last bridge saw no redelivered message"
stop_all
log "PASS"
