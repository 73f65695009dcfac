#!/usr/bin/env bash
# Messages Kafka refuses for good never loop: the test's custom topic takes
# at most 4 KB (max.message.bytes), so valid 8 KB events there (random text:
# the bridge compresses with lz4, which cannot shrink them) are refused
# with MSG_SIZE_TOO_LARGE and go to the dead-letter topic with the reason;
# with the dead-letter topic limited too, the bridge rejects them to the
# queue's dead-letter exchange (RabbitMQ keeps them in <queue>.dead).
# Small events of other families flow meanwhile.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers

create_topic() { # NAME MAX_BYTES
    PANO_STACK_DIR=$SHARED_STACK_DIR timeout 120 "$STACK" kafka-class \
        org.apache.kafka.tools.TopicCommand --bootstrap-server "$KAFKA" --create --topic "$1" \
        --partitions 1 --replication-factor 1 --config max.message.bytes="$2" >>"$TEST_DIR/topics.log" 2>&1 ||
        fail "cannot create topic $1: $(tail -3 "$TEST_DIR/topics.log")"
}

# Round 1: custom.* refused, dead-lettered.
create_topic "${PANO_KAFKA_TOPIC_PREFIX}custom" 4096
start_bridge bridge
"$AMQP_LOAD" -n 20 -p "$TEST_ID-big" -e custom.big.sample -P 8000 >/dev/null || fail "publishing big events"
"$AMQP_LOAD" -n 2000 -p "$TEST_ID-small" >/dev/null || fail "publishing small events"
wait_delivered 120 "$TEST_ID-small" 2000 || fail "small events not delivered"
refused() { topic_records "$PANO_KAFKA_DEAD_LETTER_TOPIC" '%k|%h\n' | grep -c "^custom.big.sample|reason=Kafka refused it: Broker: Message size too large" || true; }
wait_until 60 bash -c "[[ \$(kcat -C -b '$KAFKA' -t '$PANO_KAFKA_DEAD_LETTER_TOPIC' -o beginning -e -q -f '%k\n' | grep -c '^custom.big.sample') -ge 20 ]]" ||
    fail "$(refused) of 20 refused events dead-lettered"
log "small events: $(check_all_delivered "$TEST_ID-small" 2000)"
dead=$(topic_records "$PANO_KAFKA_DEAD_LETTER_TOPIC" '%k|%h\n')
n=$(grep -c "^custom.big.sample|reason=Kafka refused it: Broker: Message size too large" <<<"$dead" || true)
((n >= 20)) || fail "$n of 20 refused events dead-lettered: $(head -3 <<<"$dead")"
[[ $(topic_records "${PANO_KAFKA_TOPIC_PREFIX}custom" '%o\n' | grep -c . || true) == 0 ]] ||
    fail "a refused event is in the custom topic"
log "20 events Kafka refused are in the dead-letter topic"
stop_all

# Round 2: the dead-letter topic refuses them as well.
export PANO_KAFKA_DEAD_LETTER_TOPIC="$TEST_ID.dead-letter-small"
create_topic "$PANO_KAFKA_DEAD_LETTER_TOPIC" 4096
start_bridge bridge2
"$AMQP_LOAD" -n 20 -p "$TEST_ID-big2" -e custom.big.sample -P 8000 >/dev/null || fail "publishing big events"
dead_queue() { queue_ready "$PANO_BRIDGE_QUEUE.dead"; }
wait_until 120 bash -c "[[ \$('$PANO_BUILD/tests/tools/amqp_drain' -c -q '$PANO_BRIDGE_QUEUE.dead') == 20 ]]" ||
    fail "expected 20 messages in $PANO_BRIDGE_QUEUE.dead, found $(dead_queue)"
grep -q "rejected the message to the queue's dead-letter exchange" "$TEST_DIR/bridge2.log" ||
    fail "no log line about the rejection"
log "20 events refused even as dead letters are in RabbitMQ's $PANO_BRIDGE_QUEUE.dead"
stop_all

# Round 3: a queue prepared without a dead-letter exchange: such messages
# stay unacknowledged and are tried again (with their headers), never lost.
Q=$(jq -rn --arg q "$PANO_BRIDGE_QUEUE" '$q|@uri')
curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$Q" >/dev/null
curl -fsS -u guest:guest -H 'content-type: application/json' -X PUT \
    "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$Q" -d '{"durable":true,"arguments":{}}' >/dev/null
curl -fsS -u guest:guest -H 'content-type: application/json' -X POST \
    "http://127.0.0.1:$MGMT_PORT/api/bindings/%2F/e/$TEST_ID/q/$Q" -d '{"routing_key":"#"}' >/dev/null
start_bridge bridge3 --set pano.bridge.drain_timeout=1 --set pano.bridge.status_file="$TEST_DIR/b3.prom" \
    --set pano.bridge.stats_interval=0.5
"$AMQP_LOAD" -n 5 -p "$TEST_ID-big3" -e custom.big.sample -P 8000 >/dev/null || fail "publishing big events"
wait_until 60 grep -q "the message stays unacknowledged and is tried again" "$TEST_DIR/bridge3.log" ||
    fail "no log line about keeping the message"
wait_until 10 bash -c "[[ \$(awk '\$1 == \"pano_bridge_messages_in_flight\" {print \$2}' '$TEST_DIR/b3.prom') == 5 ]]" ||
    fail "the 5 messages are not held"
stop_all
# RabbitMQ requeues a closed channel's unacknowledged messages on its own time
wait_until 10 bash -c "[[ \$('$PANO_BUILD/tests/tools/amqp_drain' -c -q '$PANO_BRIDGE_QUEUE') == 5 ]]" ||
    fail "the 5 messages are not back in the queue: $(queue_ready "$PANO_BRIDGE_QUEUE") ready"
log "without a dead-letter exchange the 5 messages were kept and are back in the queue"

# A queue type that is not one: refused at start, with the key named.
rc=0
"$BRIDGE" --set pano.bridge.queue_type=mirrored >"$TEST_DIR/type.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "pano.bridge.queue_type 'mirrored': use classic or quorum" "$TEST_DIR/type.log" ||
    fail "an unknown queue type was not refused (exit $rc): $(cat "$TEST_DIR/type.log")"
log "PASS"
