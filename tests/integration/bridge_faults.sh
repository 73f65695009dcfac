#!/usr/bin/env bash
# pano-bridge against a broker someone else prepared, and when things break:
#   1. a Panorama-style queue (durable, no arguments, bound with kickstart.#)
#      already exists: declaring it with a dead-letter exchange fails with
#      PRECONDITION_FAILED; the bridge says so and uses the queue as it is;
#   2. passive mode (pano.bridge.declare=false): a missing queue is reported
#      and retried, an existing one consumed;
#   3. the queue is deleted under the consumer: RabbitMQ cancels it, the
#      bridge reconnects and declares the queue again;
#   4. a fatal idempotent-producer error: the producer is replaced, unacked
#      messages are redelivered, nothing is lost;
#   5. the metrics endpoint answers GET /metrics.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers

mgmt_put() { curl -fsS -m 10 -u guest:guest -H 'content-type: application/json' -X "$1" "http://127.0.0.1:$MGMT_PORT/api/$2" -d "$3"; }
Q=$(jq -rn --arg q "$PANO_BRIDGE_QUEUE" '$q|@uri')
consuming_count() { grep -c "consuming '" "$1" || true; }

# 1. Panorama's layout, prepared beforehand.
mgmt_put PUT "exchanges/%2F/$TEST_ID" '{"type":"topic","durable":true}'
mgmt_put PUT "queues/%2F/$Q" '{"durable":true,"arguments":{}}'
mgmt_put POST "bindings/%2F/e/$TEST_ID/q/$Q" '{"routing_key":"kickstart.#"}'
start_bridge bridge --set pano.bridge.bindings=kickstart.#
grep -q "declaring queue '$PANO_BRIDGE_QUEUE': it exists with other settings (.*PRECONDITION_FAILED.*x-dead-letter-exchange" \
    "$TEST_DIR/bridge.log" || fail "no clear message about the queue's arguments"
grep -q "has no dead-letter exchange of the bridge's" "$TEST_DIR/bridge.log" || fail "no warning about the missing DLX"
"$AMQP_LOAD" -n 1000 -p "$TEST_ID-a" >/dev/null || fail "publishing to the prepared queue"
wait_delivered 60 "$TEST_ID-a" 1000 || fail "prepared queue not drained"
log "prepared queue: $(check_all_delivered "$TEST_ID-a" 1000)"
stop_all

# 2. Passive: a queue that does not exist, then one that does.
start passive "$BRIDGE" --set pano.bridge.declare=false --set pano.bridge.queue="$TEST_ID.none"
wait_until 30 grep -q "checking that queue '$TEST_ID.none' exists: .*NOT_FOUND" "$TEST_DIR/passive.log" ||
    fail "passive mode did not report the missing queue"
sleep 2
kill -0 "$(last_pid)" || fail "passive bridge gave up instead of retrying"
stop_all
start_bridge passive2 --set pano.bridge.declare=false
log "passive mode: missing queue reported and retried, existing queue consumed"
stop_all

# 3. The queue deleted under the consumer (the bridge declares it again).
curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$Q" >/dev/null
start_bridge bridge2
curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$Q" >/dev/null
wait_until 30 grep -q "RabbitMQ cancelled the consumer of '$PANO_BRIDGE_QUEUE'" "$TEST_DIR/bridge2.log" ||
    fail "the bridge did not notice its queue was deleted"
wait_until 30 bash -c "[[ \$(grep -c \"consuming '\" '$TEST_DIR/bridge2.log') -ge 2 ]]" ||
    fail "the bridge did not consume again"
"$AMQP_LOAD" -n 1000 -p "$TEST_ID-c" >/dev/null || fail "publishing after the queue came back"
wait_delivered 60 "$TEST_ID-c" 1000 || fail "queue not drained after it came back"
log "queue deleted and declared again: $(check_all_delivered "$TEST_ID-c" 1000)"
stop_all

# 4 and 5. A fatal producer error (test hook), metrics over HTTP.
port=$(free_ports 1) # below the ephemeral range, where outgoing connections take theirs
BRIDGE=$BRIDGE_TEST PANO_BRIDGE_TEST_FATAL_AFTER=1500 start_bridge bridge3 --status-port "$port" \
    --set pano.bridge.prefetch=300
"$AMQP_LOAD" -n 5000 -p "$TEST_ID-d" -r 2000 >/dev/null || fail "publishing for the fatal error"
wait_delivered 120 "$TEST_ID-d" 5000 || fail "not delivered after the fatal error"
grep -q "fatal Kafka producer error" "$TEST_DIR/bridge3.log" || fail "the test hook raised no fatal error"
grep -q "replacing the Kafka producer" "$TEST_DIR/bridge3.log" || fail "the producer was not replaced"
log "fatal producer error: $(check_all_delivered "$TEST_ID-d" 5000)"
metrics=$(curl -fsS -m 5 "http://127.0.0.1:$port/metrics") || fail "GET /metrics failed"
grep -q '^pano_bridge_producer_restarts_total 1$' <<<"$metrics" || fail "metrics: $(grep restarts <<<"$metrics")"
grep -q '^pano_bridge_events_produced_total{family="kickstart"} [0-9]' <<<"$metrics" || fail "metrics: no per-family counts"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nothing")
[[ $code == 404 ]] || fail "GET /nothing answered $code"
log "metrics endpoint answers"
stop_all
log "PASS"
