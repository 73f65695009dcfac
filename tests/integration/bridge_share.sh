#!/usr/bin/env bash
# Several bridges on one queue share the load: two bridges drain a backlog
# of 30,000 events together; both take part, nothing is lost, and the two
# together acknowledged every message once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers

N=30000
"$BRIDGE" --setup >"$TEST_DIR/setup.log" 2>&1 || fail "pano-bridge --setup: $(cat "$TEST_DIR/setup.log")"
"$AMQP_LOAD" -n $N -p "$TEST_ID" -w 300 >"$TEST_DIR/load.out" 2>"$TEST_DIR/load.err" ||
    fail "amqp_load: $(cat "$TEST_DIR/load.out" "$TEST_DIR/load.err")"
log "backlog: $(cat "$TEST_DIR/load.out")"

# A small prefetch, so that neither bridge can take the whole backlog at once.
for b in a b; do
    start "bridge_$b" "$BRIDGE" --set pano.bridge.prefetch=200 \
        --set pano.bridge.status_file="$TEST_DIR/$b.prom" --set pano.bridge.stats_interval=0.5
done
for b in a b; do
    wait_until 60 grep -q "consuming '" "$TEST_DIR/bridge_$b.log" || fail "bridge $b did not start"
done
wait_delivered 240 "$TEST_ID" $N ||
    fail "not all delivered: $(queue_ready "$PANO_BRIDGE_QUEUE") waiting in the queue"
acked() { echo $(($(metric "$TEST_DIR/a.prom" pano_bridge_messages_acked_total) + $(metric "$TEST_DIR/b.prom" pano_bridge_messages_acked_total))); }
wait_until 30 bash -c "[[ \$(( \$(awk '\$1 == \"pano_bridge_messages_acked_total\" {print \$2}' '$TEST_DIR/a.prom') + \$(awk '\$1 == \"pano_bridge_messages_acked_total\" {print \$2}' '$TEST_DIR/b.prom') )) -ge $N ]]" ||
    fail "the bridges acked $(acked) of $N"
a=$(metric "$TEST_DIR/a.prom" pano_bridge_messages_acked_total)
b=$(metric "$TEST_DIR/b.prom" pano_bridge_messages_acked_total)
log "bridge a acked $a, bridge b acked $b"
((a > 0 && b > 0)) || fail "one bridge did nothing (a $a, b $b)"
((a + b == N)) || fail "acked $((a + b)) in all, expected $N"
log "every event in Kafka: $(check_all_delivered "$TEST_ID" $N)"
stop_all
log "PASS"
