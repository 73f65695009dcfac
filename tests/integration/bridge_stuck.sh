#!/usr/bin/env bash
# A few messages stuck while the others flow. The topic prefix is made so
# long that <prefix>kickstart (250 characters) is not a valid Kafka topic
# while <prefix>custom is: Kafka refuses every kickstart.* event with
# "Invalid topic" — a configuration error, not a fault of the message, so
# the bridge keeps those events and produces them again with a backoff
# instead of dead-lettering them. Events of the other families keep flowing
# and are acked one by one around the stuck ones; after
# pano.bridge.hold_timeout the stuck ones are handed back to RabbitMQ (nack,
# requeue) — the channel stays open, long before RabbitMQ's consumer timeout
# would close it — and nothing is lost: they are still in the queue.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers

prefix="$TEST_ID."
while ((${#prefix} < 241)); do prefix+=x; done
export PANO_KAFKA_TOPIC_PREFIX=$prefix

HOLD=6
status=$TEST_DIR/bridge.prom
start_bridge bridge --set pano.bridge.hold_timeout=$HOLD --set pano.bridge.status_file="$status" \
    --set pano.bridge.stats_interval=0.5 --set pano.bridge.drain_timeout=2
"$AMQP_LOAD" -n 30 -p "$TEST_ID-stuck" -e kickstart.stuck.sample >/dev/null || fail "publishing"
"$AMQP_LOAD" -n 3000 -p "$TEST_ID-ok" -e custom.ok.sample >/dev/null || fail "publishing"
wait_until 60 all_delivered "$TEST_ID-ok" 3000 || fail "the other events did not flow"
wait_until 10 bash -c "[[ \$(awk '\$1 == \"pano_bridge_messages_acked_total\" {print \$2}' '$status') -ge 3000 ]]" ||
    fail "the other events were not acked around the stuck ones"
log "3000 other events delivered and acked around 30 stuck ones"
wait_until 60 grep -q "unconfirmed by Kafka for $HOLD s while others were: handing them back" \
    "$TEST_DIR/bridge.log" || fail "the stuck messages were not handed back"
grep -q -E "(cannot produce to|did not persist a message to) [^ ]*kickstart" "$TEST_DIR/bridge.log" ||
    fail "no log line about Kafka's refusal"
[[ $(metric "$status" pano_bridge_amqp_disconnects_total) == 0 ]] || fail "the channel was closed"
[[ $(metric "$status" pano_bridge_messages_dead_lettered_total) == 0 ]] || fail "stuck events were dead-lettered"
[[ $(metric "$status" pano_bridge_messages_acked_total) == 3000 ]] || fail "a stuck event was acked"
log "stuck messages handed back to RabbitMQ after ${HOLD}s, channel kept, nothing dead-lettered"
stop_all
# Still in RabbitMQ, ready for a bridge with a working configuration.
[[ $(queue_ready "$PANO_BRIDGE_QUEUE") == 30 ]] || fail "expected the 30 stuck events back in the queue"
log "the 30 stuck events are back in the queue"
log "PASS"
