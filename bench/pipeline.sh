# Sourced by the benchmarks that run the whole pipeline on the local stack
# (e2e.sh, store.sh): RabbitMQ -> pano-bridge -> Kafka -> pano-indexer ->
# Elasticsearch, under names of the run's own (common.sh), all removed at exit.
#
#   pipeline_setup NAME              ID (NAME + random hex), DIR, and the
#                                    PANO_* names of the run; cleanup at exit
#   pipeline_start [INDEXER ARGS...] start pano-bridge and pano-indexer and
#                                    wait until both consume (logs in DIR)
#
# Environment: the local stack's ports (PANO_AMQP_PORT, PANO_KAFKA_PORT,
# PANO_ES_PORT, PANO_RABBITMQ_MGMT_PORT), BUILD (build).
source bench/common.sh
AMQP_PORT=${PANO_AMQP_PORT:-5672}
MGMT_PORT=${PANO_RABBITMQ_MGMT_PORT:-15672}
PIDS=()

pipeline_setup() {
    bench_names "$1"
    export PANO_AMQP_URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2F/$ID"
    export PANO_BRIDGE_QUEUE="$ID.events"
    export PANO_BRIDGE_DEAD_LETTER_EXCHANGE="$ID.dlx"
    trap pipeline_cleanup EXIT
}

pipeline_cleanup() {
    local pid q
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    for q in "queues/%2F/$ID.events" "queues/%2F/$ID.events.dead" "exchanges/%2F/$ID" "exchanges/%2F/$ID.dlx"; do
        curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/$q" >/dev/null 2>&1 || true
    done
    bench_delete
    rm -rf "$DIR"
}

pipeline_start() {
    "$BUILD/broker-bridge/pano-bridge" >"$DIR/bridge.log" 2>&1 &
    PIDS+=($!)
    "$BUILD/indexer/pano-indexer" "$@" >"$DIR/indexer.log" 2>&1 &
    PIDS+=($!)
    local i
    for ((i = 0; i < 150; i++)); do
        grep -q consuming "$DIR/bridge.log" && grep -q "INFO: assigned" "$DIR/indexer.log" && return 0
        sleep 0.2
    done
    grep -q consuming "$DIR/bridge.log" || { tail "$DIR/bridge.log" >&2; exit 1; }
    tail "$DIR/indexer.log" >&2
    exit 1
}
