#!/usr/bin/env bash
# pano on clusters, with their nodes failing. A private stack: RabbitMQ,
# three Kafka brokers (KRaft) and two Elasticsearch nodes
# (pano-stack --kafka-nodes 3 --es-nodes 2), pano with its defaults:
#   - the topics are created with replication factor 3 and
#     min.insync.replicas 2, the indices with a copy of every shard on the
#     other node (green);
#   - during a stream of 50,000 events, Kafka broker 2 is killed with
#     SIGKILL and started again, then Elasticsearch node 2 the same way:
#     every event is in Elasticsearch exactly once (counted by event_id),
#     and the longest stall of indexing is reported;
#   - with pano.bridge.queue_type=quorum the bridge declares a quorum queue;
#     RabbitMQ killed with SIGKILL and started again while events wait in it
#     loses none of them.
source "$(dirname "$0")/indexer_lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_stack

N=50000 RATE=1000
private_stack_up --kafka-nodes 3 --es-nodes 2
export PANO_INDEXER_STATUS_FILE=$TEST_DIR/indexer.prom
export PANO_BRIDGE_QUEUE_TYPE=quorum
# pano's defaults, not indexer_lib.sh's 6 s session: a session shorter than
# the time the group coordinator takes to move off a dead broker expires, and
# the static member that rejoins is fenced (pano-indexer stops; systemd would
# restart it).
unset PANO_INDEXER_KAFKA_PROPERTIES
log "brokers $PANO_KAFKA_BROKERS, Elasticsearch $PANO_ES_URL"

# kill_and_restart SERVICE NODE_DIR WHAT: SIGKILL a node of the private
# stack, start it again 5 s later; prints when it was killed.
kill_and_restart() {
    local pid t
    pid=$(head -c 32 "$PRIVATE_STACK/$2/$1.pid" | tr -dc 0-9)
    kill -KILL "$pid"
    t=$(date +%s.%N)
    log "killed $3 (pid $pid) with SIGKILL"
    sleep 5
    private_stack "$1" up
    log "$3 is back"
    echo "$t"
}
indexed() { # documents indexed so far (0 while Elasticsearch does not say)
    local n
    n=$(curl -s "$ES/$FAMILY_INDICES/_count?ignore_unavailable=true" | jq -r '.count // 0' 2>/dev/null)
    echo "${n:-0}"
}

"$BRIDGE" --setup >"$TEST_DIR/setup.log" 2>&1 || fail "pano-bridge --setup: $(cat "$TEST_DIR/setup.log")"
type=$(curl -fsS -u guest:guest "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$(jq -rn --arg q "$PANO_BRIDGE_QUEUE" '$q|@uri')" | jq -r .type)
[[ $type == quorum ]] || fail "the bridge's queue is $type, not quorum"
start_bridge bridge
bridge_pid=$(last_pid)
wait_until 30 grep -q "created Kafka topic ${PANO_KAFKA_TOPIC_PREFIX}kickstart (replication factor 3, min.insync.replicas 2)" "$TEST_DIR/bridge.log" ||
    fail "topics not created with replication factor 3 and min.insync.replicas 2: $(grep -i topic "$TEST_DIR/bridge.log")"
replicas=$(kcat -b "$KAFKA" -L -t "${PANO_KAFKA_TOPIC_PREFIX}kickstart" | grep -c "replicas: [1-3],[1-3],[1-3],")
[[ $replicas == 4 ]] || fail "not every partition has 3 replicas: $(kcat -b "$KAFKA" -L -t "${PANO_KAFKA_TOPIC_PREFIX}kickstart")"
start_indexer ix
wait_until 60 grep -q "INFO: assigned" "$TEST_DIR/ix.log" || fail "the indexer got no partitions: $(tail -5 "$TEST_DIR/ix.log")"

# Indexed documents every 0.25 s, to find the longest stall.
(while :; do
    printf '%s %s\n' "$(date +%s.%N)" "$(indexed)"
    sleep 0.25
done) >"$TEST_DIR/progress" 2>/dev/null &
sampler=$!
PIDS+=("$sampler")

"$AMQP_LOAD" -n $N -p "$TEST_ID" -w 50 -r $RATE -t 600 >"$TEST_DIR/load.out" 2>"$TEST_DIR/load.err" &
load=$!
more_than() { (($(indexed) > $1)); }
wait_until 60 more_than 2000 || fail "nothing indexed: $(tail -3 "$TEST_DIR/ix.log")"

t_kafka=$(kill_and_restart kafka kafka-2 "Kafka broker 2") || fail "Kafka broker 2 did not come back"
sleep 5
[[ $(curl -s "$ES/_cluster/health" | jq -r .status) == green ]] || fail "the Elasticsearch cluster is not green before the node is killed"
t_es=$(kill_and_restart elasticsearch elasticsearch-2 "Elasticsearch node 2") ||
    fail "Elasticsearch node 2 did not come back"

wait "$load" || fail "amqp_load: $(cat "$TEST_DIR/load.out" "$TEST_DIR/load.err")"
wait_until 240 count_is "$FAMILY_INDICES" $N || fail "$(count_in "$FAMILY_INDICES") of $N events in Elasticsearch"
check_distinct "$FAMILY_INDICES" $N
kill "$sampler"
# The longest time the count stood still between the first document and the
# last, from a kill until the next one (or the end).
stall() { # FROM UNTIL
    awk -v n=$N -v from="$1" -v until="$2" 'NF == 2 && $2 > 0 {
            if ($2 != last) {
                if (since && since >= from && since < until && $1 - since > worst) worst = $1 - since
                since = $1; last = $2
            }
            if ($2 >= n) exit
        } END { printf "%.1f\n", worst }' "$TEST_DIR/progress"
}
stall_kafka=$(stall "$t_kafka" "$t_es") stall_es=$(stall "$t_es" 1e12) stall=$(stall 0 1e12)
log "every event once through a Kafka broker's and an Elasticsearch node's SIGKILL; longest stall $stall s (after the broker's kill $stall_kafka s, after the node's $stall_es s)"
wait_until 120 bash -c "[[ \$(curl -s '$ES/_cluster/health' | jq -r .status) == green ]]" ||
    fail "the cluster did not become green again: $(curl -s "$ES/_cluster/health")"
jq -e '[.[] | .settings.index.auto_expand_replicas == "0-1"] | all' \
    <(es "$ES/${P}kickstart-*/_settings") >/dev/null || fail "the indices have no auto-expanded replicas"
shards=$(curl -fsS "$ES/_cat/shards/${P}*?h=prirep,state")
[[ $(grep -c '^p STARTED' <<<"$shards") -gt 0 && $(grep -c '^p STARTED' <<<"$shards") == $(grep -c '^r STARTED' <<<"$shards") &&
    $(wc -l <<<"$shards") == $((2 * $(grep -c '^p' <<<"$shards"))) ]] ||
    fail "not a started replica of every primary: $shards"
log "green again, a replica of every shard on the other node"

# RabbitMQ killed with SIGKILL while events wait in the quorum queue.
M=5000
kill_hard "$bridge_pid"
"$AMQP_LOAD" -n $M -p "$TEST_ID-q" >"$TEST_DIR/load2.out" 2>&1 || fail "amqp_load: $(cat "$TEST_DIR/load2.out")"
wait_until 30 bash -c "[[ \$(curl -s -u guest:guest 'http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$PANO_BRIDGE_QUEUE' | jq -r '.messages // 0') == $M ]]" ||
    fail "the $M events are not waiting in the queue"
pid=$(head -c 32 "$PRIVATE_STACK/rabbitmq/rabbitmq-node.pid" | tr -dc 0-9)
kill -KILL "$pid"
log "killed RabbitMQ (pid $pid) with SIGKILL, $M events in the quorum queue"
wait_until 30 bash -c "! kill -0 $pid 2>/dev/null" || fail "RabbitMQ did not die"
private_stack rabbitmq up
start_bridge bridge2
wait_until 120 count_is "$FAMILY_INDICES" $((N + M)) || fail "$(count_in "$FAMILY_INDICES") of $((N + M)) events after RabbitMQ's restart"
check_distinct "$FAMILY_INDICES" $((N + M))
log "PASS: $N events once each through the failure of a Kafka broker and an Elasticsearch node (longest stall $stall_kafka s after the broker's kill, $stall_es s after the node's); $M in a quorum queue through RabbitMQ's SIGKILL"
