# Sourced by the benchmarks that write into the local stack under names of
# their own (indexer.sh, workflow.sh, pipeline.sh), so that a run never
# touches another's data and leaves nothing behind.
#
#   bench_names NAME   ID (NAME + random hex), DIR (a fresh scratch
#                      directory), and exports the run's Kafka topic prefix,
#                      dead-letter topic, consumer group and index prefix
#   bench_delete       deletes the run's indices, index templates and topics
#   log MESSAGE...     a timestamped line on stderr
#
# Environment: PANO_KAFKA_PORT, PANO_ES_PORT (or PANO_KAFKA_BROKERS,
# PANO_ES_URL), BUILD (build).
BUILD=${BUILD:-build}
ES=${PANO_ES_URL:-http://127.0.0.1:${PANO_ES_PORT:-9200}}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

bench_names() {
    ID="$1$(od -An -N3 -tx1 /dev/urandom | tr -d ' ')"
    DIR=$(mktemp -d "/tmp/pano-$ID.XXXXXX")
    export PANO_KAFKA_BROKERS=${PANO_KAFKA_BROKERS:-127.0.0.1:${PANO_KAFKA_PORT:-9092}}
    export PANO_ES_URL=$ES
    export PANO_KAFKA_TOPIC_PREFIX="$ID."
    export PANO_KAFKA_DEAD_LETTER_TOPIC="$ID.dead-letter"
    export PANO_INDEXER_GROUP="$ID-indexer"
    export PANO_INDEXER_INDEX_PREFIX="$ID-"
    export PANO_INDEXER_REPLICAS=${PANO_INDEXER_REPLICAS:-0}
}

bench_delete() {
    curl -fsS -X DELETE "$ES/$ID-*" >/dev/null 2>&1 || true
    curl -fsS -X DELETE "$ES/_index_template/$ID-*" >/dev/null 2>&1 || true
    "$BUILD/tests/tools/kafka_load" --delete-topics >/dev/null 2>&1 || true
}
