#!/usr/bin/env bash
# The broker stopped mid-run and restarted, and the publisher sends again
# what it had not seen confirmed, although the broker had stored it and the
# bridge had put it in Kafka: every event arrives in Kafka, none twice. On a
# private RabbitMQ + Kafka (pano-stack --only):
#   1. 1,000 events, all in Kafka and acked;
#   2. RabbitMQ restarted; the bridge reconnects;
#   3. the same 1,000 again (the resend) and 1,000 new ones: the copies are
#      acked and skipped, the new events produced; Kafka holds 2,000 records,
#      each event once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
private_stack_up

start_bridge bridge --set pano.bridge.status_file="$STATUS" --set pano.bridge.stats_interval=0.2

"$AMQP_LOAD" -n 1000 -p "$TEST_ID" >"$TEST_DIR/load1.out" || fail "amqp_load: $(cat "$TEST_DIR/load1.out")"
wait_until 60 at_least pano_bridge_messages_acked_total 1000 || fail "the first 1,000 were not acked"

log "restarting RabbitMQ"
private_stack rabbitmq down
private_stack rabbitmq up
wait_until 120 at_least pano_bridge_amqp_connections_total 2 || fail "the bridge did not reconnect"
log "RabbitMQ is back, the bridge consumes again"

"$AMQP_LOAD" -n 1000 -p "$TEST_ID" >"$TEST_DIR/load2.out" || fail "amqp_load: $(cat "$TEST_DIR/load2.out")"
"$AMQP_LOAD" -n 1000 -s 1000 -p "$TEST_ID" >"$TEST_DIR/load3.out" || fail "amqp_load: $(cat "$TEST_DIR/load3.out")"
wait_until 120 at_least pano_bridge_messages_acked_total 3000 || fail "not everything was acked"
[[ $(m pano_bridge_duplicates_skipped_total) == 1000 ]] ||
    fail "duplicates skipped: $(m pano_bridge_duplicates_skipped_total), expected 1000"
counts=$(check_all_delivered "$TEST_ID" 2000)
[[ $counts == "distinct 2000 total 2000" ]] || fail "Kafka: $counts"
log "across the restart: $counts, 1,000 copies skipped"
stop_all
log "PASS"
