#!/usr/bin/env bash
# Broker restarts, on a private RabbitMQ and Kafka (pano-stack --only, other
# ports, own data dir; the shared services are never touched):
#   1. RabbitMQ restarted mid-run: the bridge reconnects, nothing is lost;
#   2. Kafka stopped mid-run: the bridge stops taking messages (nothing acked,
#      no more in flight than the prefetch window), hands the unconfirmed
#      ones back to RabbitMQ after pano.bridge.hold_timeout, and consumes
#      again once Kafka is back;
# and every one of the 60,000 events is in Kafka at least once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
private_stack_up

N=60000 PREFETCH=500 HOLD=12
start_bridge bridge --set pano.bridge.status_file="$STATUS" --set pano.bridge.stats_interval=0.5 \
    --set pano.bridge.prefetch=$PREFETCH --set pano.bridge.hold_timeout=$HOLD
"$AMQP_LOAD" -n $N -p "$TEST_ID" -w 100 -r 1500 -t 550 >"$TEST_DIR/load.out" 2>"$TEST_DIR/load.err" &
load=$!

# 1. RabbitMQ
wait_until 120 at_least pano_bridge_messages_acked_total 8000 || fail "bridge too slow: $(m pano_bridge_messages_acked_total)"
log "restarting RabbitMQ after $(m pano_bridge_messages_acked_total) acks"
# Stopped by its own CLI, which returns while the node is still going down:
# 'up' straight after must wait for it and start a new one.
private_stack rabbitmq rabbitmqctl stop
private_stack rabbitmq up
log "RabbitMQ is back"
wait_until 120 at_least pano_bridge_amqp_connections_total 2 || fail "the bridge did not reconnect"
acked=$(m pano_bridge_messages_acked_total)
wait_until 120 at_least pano_bridge_messages_acked_total $((acked + 8000)) ||
    fail "no progress after the RabbitMQ restart"
grep -q "AMQP connection lost\|RabbitMQ closed the connection" "$TEST_DIR/bridge.log" ||
    fail "the bridge did not notice the restart"

# 2. Kafka
log "stopping Kafka after $(m pano_bridge_messages_acked_total) acks"
private_stack kafka down
sleep 4
a1=$(m pano_bridge_messages_acked_total)
sleep 4
a2=$(m pano_bridge_messages_acked_total)
inflight=$(m pano_bridge_messages_in_flight)
((a1 == a2)) || fail "messages acked while Kafka was down ($a1 -> $a2)"
((inflight <= PREFETCH)) || fail "$inflight messages in flight with prefetch $PREFETCH"
log "Kafka down: nothing acked, $inflight in flight (prefetch $PREFETCH)"
wait_until 60 at_least pano_bridge_hold_timeouts_total 1 ||
    fail "unconfirmed messages not handed back after ${HOLD}s"
wait_until 30 bash -c "[[ \$(awk '\$1 == \"pano_bridge_messages_in_flight\" {print \$2}' '$STATUS') == 0 ]]" ||
    fail "messages still held: $(m pano_bridge_messages_in_flight)"
grep -q "Kafka has confirmed nothing" "$TEST_DIR/bridge.log" || fail "no stall warning in the log"
log "handed back to RabbitMQ after ${HOLD}s; starting Kafka again"
private_stack kafka up
log "Kafka is back"

wait "$load" || fail "amqp_load: $(cat "$TEST_DIR/load.out" "$TEST_DIR/load.err")"
log "$(cat "$TEST_DIR/load.out")"
wait_delivered 300 "$TEST_ID" $N ||
    fail "not all delivered: $(queue_ready "$PANO_BRIDGE_QUEUE") waiting in the queue"
log "every event in Kafka: $(check_all_delivered "$TEST_ID" $N)"
stop_all
log "what the bridge said (stats lines left out):"
grep -v ' stats: ' "$TEST_DIR/bridge.log" | cut -c1-240 >&2
log "PASS"
