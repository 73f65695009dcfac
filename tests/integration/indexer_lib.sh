# Helpers for pano-indexer's integration tests, on top of lib.sh (source
# this instead).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOAD="$PANO_BUILD/tests/tools/kafka_load"
INDEXER="$PANO_BUILD/indexer/pano-indexer"
P="$PANO_INDEXER_INDEX_PREFIX"
# A dead member's partitions move on after this (the broker's minimum).
export PANO_INDEXER_KAFKA_PROPERTIES=session.timeout.ms=6000,heartbeat.interval.ms=1000
export PANO_INDEXER_STATS_INTERVAL=5

refresh() { es -X POST "$ES/$P*/_refresh" >/dev/null; }

# Documents in an index, alias or pattern (after a refresh).
count_in() { es "$ES/$1/_count?ignore_unavailable=true" | jq -r .count; }

# The partitions of the streams (not the fallback or dead-letter ones).
FAMILY_INDICES="${P}kickstart-*,${P}samples-*,${P}darshan-*,${P}transfer-*,${P}stampede-*,${P}custom-*,${P}other-*"

# count_is TARGET N: refresh, then exactly N documents (for wait_until).
count_is() { refresh; [[ $(count_in "$1") == "$2" ]]; }

# The messages the test's family topics hold (kafka_offsets, the dead
# letters aside).
kafka_held() {
    kafka_offsets | awk -v dead="$PANO_KAFKA_DEAD_LETTER_TOPIC" '$1 != dead {n += $2} END {print n + 0}'
}

# short_of TARGET N: the message of a test that expected N events in
# TARGET, with where they stopped: Kafka's count, and the indexer's when it
# writes a status file.
short_of() {
    local msg="expected $2 events, found $(count_in "$1"); Kafka's topics hold $(kafka_held)"
    [[ -n ${PANO_INDEXER_STATUS_FILE:-} && -f $PANO_INDEXER_STATUS_FILE ]] &&
        msg+=", the indexer consumed $(metric "$PANO_INDEXER_STATUS_FILE" consumed_total), holds $(metric "$PANO_INDEXER_STATUS_FILE" in_hand), paused $(metric "$PANO_INDEXER_STATUS_FILE" paused)"
    echo "$msg"
}

# A metric from a status file.
metric() { awk -v m="pano_indexer_$2" '$1 == m {print $2}' "$1"; }

# check_distinct TARGET N: every event_id exactly once, N in all.
check_distinct() {
    local target=$1 want=$2 after="" total=0 dup=0 page n
    refresh
    while :; do
        page=$(es -X POST "$ES/$target/_search" -d "{\"size\":0,\"aggs\":{\"ids\":{\"composite\":{\"size\":10000,\"sources\":[{\"id\":{\"terms\":{\"field\":\"event_id\"}}}]${after}}}}}")
        n=$(jq '.aggregations.ids.buckets | length' <<<"$page")
        ((n > 0)) || break
        total=$((total + n))
        dup=$((dup + $(jq '[.aggregations.ids.buckets[] | select(.doc_count > 1)] | length' <<<"$page")))
        after=",\"after\":$(jq -c .aggregations.ids.after_key <<<"$page")"
    done
    local docs
    docs=$(count_in "$target")
    log "$target: $docs documents, $total distinct event ids, $dup ids more than once"
    [[ $total == "$want" && $docs == "$want" && $dup == 0 ]] ||
        fail "expected exactly $want distinct events once each, got $docs documents, $total distinct ids, $dup duplicated"
}

# start_indexer NAME [ARGS...]: pano-indexer in the background, a static
# member of the group named after NAME (started again under the same name,
# it is the same member); its pid in IX_PID[NAME], its log in
# $TEST_DIR/NAME.log.
declare -A IX_PID
start_indexer() {
    local name=$1
    shift
    PANO_INDEXER_INSTANCE_ID="$TEST_ID-$name" start "$name" "$INDEXER" "$@"
    IX_PID[$name]=$!
}

# kill_indexer NAME: SIGKILL, and forget it (stop_all checks the others).
kill_indexer() {
    local pid=${IX_PID[$1]}
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
    forget "$pid"
    log "killed $1 (pid $pid) with SIGKILL"
}
