# Shared helpers for the integration tests. Source it from a test script.
#
# Every test runs against the real local stack (deploy/local/pano-stack up)
# with names of its own: a random exchange, queue, Kafka topic prefix,
# consumer group and index prefix, all removed when the test ends, so tests
# never see each other's events and leave nothing behind.
set -euo pipefail

: "${PANO_BUILD:?PANO_BUILD must point at the meson build directory}"
AMQP_PORT=${PANO_AMQP_PORT:-5672}
MGMT_PORT=${PANO_RABBITMQ_MGMT_PORT:-15672}
KAFKA=${PANO_KAFKA_BROKERS:-127.0.0.1:${PANO_KAFKA_PORT:-9092}}
ES=${PANO_ES_URL:-http://127.0.0.1:${PANO_ES_PORT:-9200}}

TEST_ID="t$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
TEST_DIR=$(mktemp -d "/tmp/pano-$TEST_ID.XXXXXX")
PIDS=()

# Configuration shared by every pano program the test starts.
export PANO_AMQP_URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2F/$TEST_ID"
export PANO_KAFKA_BROKERS="$KAFKA"
export PANO_KAFKA_TOPIC_PREFIX="$TEST_ID."
export PANO_KAFKA_DEAD_LETTER_TOPIC="$TEST_ID.dead-letter"
export PANO_BRIDGE_QUEUE="$TEST_ID.events"
export PANO_BRIDGE_DEAD_LETTER_EXCHANGE="$TEST_ID.dlx"
export PANO_INDEXER_GROUP="$TEST_ID-indexer"
export PANO_INDEXER_INDEX_PREFIX="$TEST_ID-"
export PANO_INDEXER_LINGER=0.1
export PANO_ES_URL="$ES"

# free_ports N: the first of N consecutive TCP ports on 127.0.0.1 with
# nothing listening on them, below the kernel's ephemeral range (32768 and
# up), from which outgoing connections take their local ports.
free_ports() {
    local n=$1 p i
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % 12000))
        for ((i = 0; i < n; i++)); do
            (exec 3<>"/dev/tcp/127.0.0.1/$((p + i))") 2>/dev/null && continue 2
        done
        echo "$p"
        return
    done
    fail "no $n free ports in a row"
}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

require_stack() {
    curl -fsS "$ES/_cluster/health" >/dev/null 2>&1 ||
        fail "Elasticsearch is not reachable at $ES (run deploy/local/pano-stack up)"
    (exec 3<>"/dev/tcp/127.0.0.1/$AMQP_PORT") 2>/dev/null ||
        fail "RabbitMQ is not reachable on port $AMQP_PORT (run deploy/local/pano-stack up)"
}

# Start a long-running pano program in the background, logging to TEST_DIR.
start() {
    local name=$1
    shift
    "$@" >"$TEST_DIR/$name.log" 2>&1 &
    PIDS+=($!)
    log "started $name (pid $!)"
}

# forget PID: no longer one of the programs stop_all stops (it was killed,
# or stopped and checked by the test itself).
forget() {
    local i
    for i in "${!PIDS[@]}"; do [[ ${PIDS[$i]} == "$1" ]] && unset 'PIDS[i]'; done
    PIDS=("${PIDS[@]}")
}

# Stop every program the test started with SIGTERM and check that each one
# exited 0 and that no sanitizer complained in its log.
stop_all() {
    local i pid rc
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for i in "${!PIDS[@]}"; do
        rc=0
        wait "${PIDS[$i]}" || rc=$?
        ((rc == 0)) || fail "process ${PIDS[$i]} exited $rc after SIGTERM"
    done
    PIDS=()
    if grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$TEST_DIR"/*.log 2>/dev/null; then
        fail "sanitizer report in the logs above"
    fi
}

# wait_until SECONDS COMMAND...: retry COMMAND every 0.2 s until it succeeds.
wait_until() {
    local limit=$1
    shift
    local deadline=$((SECONDS + limit))
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

es() { curl -fsS -H 'Content-Type: application/json' "$@"; }

# jq 1.6 (Debian 12) exits 0 under -e when its input is empty, so an
# assertion on an answer that never came would pass. Here -e on empty input
# (no JSON in stdin or in the files named) fails with a message.
jq() {
    local a check=false null_input=false filter_seen=false
    local -a files=()
    local skip=0
    for a in "$@"; do
        if ((skip)); then skip=$((skip - 1)); continue; fi
        case $a in
            --arg | --argjson | --slurpfile | --rawfile) skip=2 ;;
            --exit-status) check=true ;;
            --null-input) null_input=true ;;
            --*) ;;
            -[a-zA-Z]*)
                [[ $a == *e* ]] && check=true
                [[ $a == *n* ]] && null_input=true ;;
            *) if $filter_seen; then files+=("$a"); else filter_seen=true; fi ;;
        esac
    done
    if ! $check || $null_input; then
        command jq "$@"
        return
    fi
    local input
    if ((${#files[@]})); then
        input=$(cat "${files[@]}" 2>/dev/null)
    else
        input=$(cat)
    fi
    if [[ -z ${input//[[:space:]]/} ]]; then
        echo "jq: nothing to check (empty input)" >&2
        return 5
    fi
    if ((${#files[@]})); then command jq "$@"; else command jq "$@" <<<"$input"; fi
}

# Number of documents matching a query string in the test's indices.
es_count() {
    es -X POST "$ES/$TEST_ID-*/_count" -d "{\"query\":{\"query_string\":{\"query\":$(jq -Rn --arg q "$1" '$q')}}}" |
        jq -r .count
}

# es_count_is QUERY N: succeeds when exactly N documents match (for wait_until).
es_count_is() { [[ $(es_count "$1") == "$2" ]]; }

# es_summarized [WF]: how many events pano-indexer's per-run summaries in the
# test's indices hold (of the workflow WF, or of all). They are written after
# the events themselves: a test that reads runs waits for them too.
es_summarized() {
    local query='{"match_all":{}}' routing=
    [[ -n ${1:-} ]] && query="{\"term\":{\"set.wf\":\"$1\"}}" routing="&routing=$1"
    es -X POST "$ES/$TEST_ID-summary-*/_search?size=0&filter_path=aggregations$routing" \
        -d "{\"query\":$query,\"aggs\":{\"n\":{\"sum\":{\"field\":\"add.n\"}}}}" |
        jq -r '.aggregations.n.value // 0 | floor'
}

# es_summarized_is N [WF]: succeeds when the summaries hold exactly N events.
es_summarized_is() { [[ $(es_summarized "${2:-}") == "$1" ]]; }

# The first document (its _source) matching a query string.
es_first() {
    es -X POST "$ES/$TEST_ID-*/_search" -d "{\"size\":1,\"query\":{\"query_string\":{\"query\":$(jq -Rn --arg q "$1" '$q')}}}" |
        jq -c '.hits.hits[0]._source'
}

# ---- a TCP relay, for outages; a server that hangs ----------------------------------
# relay_up PORT TARGET_PORT: socat relaying 127.0.0.1:PORT to 127.0.0.1:TARGET_PORT,
# in a process group of its own; relay_down kills it and every connection it
# carries (to the program on the other side: the service is gone).
RELAY_PID=
relay_up() {
    command -v socat >/dev/null || fail "socat is needed (deploy/install-deps.sh)"
    setsid socat "TCP-LISTEN:$1,bind=127.0.0.1,reuseaddr,fork" "TCP:127.0.0.1:$2" &
    RELAY_PID=$!
    wait_until 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null || fail "the relay did not start"
}
# silent_up PORT: a server on 127.0.0.1:PORT that accepts connections and
# never answers (a service that hangs); relay_down stops it, as a relay.
silent_up() {
    command -v socat >/dev/null || fail "socat is needed (deploy/install-deps.sh)"
    setsid socat "TCP-LISTEN:$1,bind=127.0.0.1,reuseaddr,fork" SYSTEM:'sleep 3600' &
    RELAY_PID=$!
    wait_until 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null || fail "the silent server did not start"
}
relay_down() {
    [[ -n $RELAY_PID ]] || return 0
    kill -TERM -- "-$RELAY_PID" 2>/dev/null || true
    wait "$RELAY_PID" 2>/dev/null || true
    RELAY_PID=
}

# ---- valgrind ---------------------------------------------------------------
# The valgrind tests run pano's programs under memcheck with a full leak
# check. An error or a leak turns a program's exit status into 99; each
# process writes its report to $TEST_DIR/valgrind.PID, and a test fails at
# its end if any report names an error.
VALGRIND=(valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 --num-callers=30
    --log-file="$TEST_DIR/valgrind.%p")

# require_valgrind PROGRAM: skip the test (exit 77) if PROGRAM is a
# sanitizer build (valgrind and ASan do not mix); fail without valgrind.
require_valgrind() {
    command -v valgrind >/dev/null || fail "valgrind is needed (deploy/install-deps.sh)"
    # (grep -q would stop reading early: ldd's SIGPIPE then fails the pipeline.)
    if ldd "$1" | grep -E 'libasan|libubsan' >/dev/null; then
        log "sanitizer build: skipped (valgrind runs in the normal build)"
        exit 77
    fi
}

# valgrind_wrapper PROGRAM: the path of a script that runs PROGRAM under
# valgrind, for tests that take a program's path.
valgrind_wrapper() {
    local w="$TEST_DIR/valgrind-$(basename "$1")"
    printf '#!/bin/sh\nexec %s %q "$@"\n' "$(printf '%q ' "${VALGRIND[@]}")" "$1" >"$w"
    chmod +x "$w"
    echo "$w"
}

# valgrind_clean: fail if a valgrind report so far names an error or a leak.
valgrind_clean() {
    local r
    for r in "$TEST_DIR"/valgrind.*; do
        [[ -f $r ]] || continue
        if grep -q "ERROR SUMMARY: [1-9]" "$r"; then
            sed -n '/HEAP SUMMARY/,$p' "$r" | sed 's/^==[0-9]*== //' | head -n 60 >&2
            fail "valgrind found errors in process ${r##*.} (report above)"
        fi
    done
}

# kafka_offsets: "TOPIC N" for each of the test's topics (those of its
# pano.kafka.topic_prefix, and its dead-letter topic), N the messages it
# holds: the sum of its partitions' end offsets (its own topics, begun at 0).
kafka_offsets() {
    local spec=() topic part
    while read -r topic part; do spec+=(-t "$topic:$part:-1"); done < <(
        kcat -b "$KAFKA" -L -J | jq -r --arg prefix "$PANO_KAFKA_TOPIC_PREFIX" --arg dead "$PANO_KAFKA_DEAD_LETTER_TOPIC" '
          .topics[] | select((.topic | startswith($prefix)) or .topic == $dead)
          | .topic as $t | .partitions[] | "\($t) \(.partition)"')
    ((${#spec[@]} > 0)) || return 0
    kcat -b "$KAFKA" -Q "${spec[@]}" | awk '{n[$1] += $NF} END {for (t in n) print t, n[t]}' | sort
}

cleanup() {
    local rc=$?
    (valgrind_clean) || rc=1 # also shows the report when the test failed already
    relay_down
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if ((rc != 0)); then
        for f in "$TEST_DIR"/*.log; do
            [[ -f $f ]] || continue
            # what a program said besides its periodic statistics, which
            # fill the last lines of a program left idle
            local notable="(WARN|ERROR):|partitions (resumed|paused)|assigned|revoked"
            if grep -q -E "$notable" "$f"; then
                log "---- $(basename "$f") (warnings, errors, pauses and rebalances; first 40)"
                grep -E "$notable" "$f" | head -n 40 >&2
            fi
            log "---- $(basename "$f") (last 30 lines)"
            tail -n 30 "$f" >&2
        done
        # what Kafka holds of the test, before its topics go: whether a
        # missing event was lost before the log or after it
        local first=${PANO_KAFKA_BROKERS%%,*} held
        if (exec 3<>"/dev/tcp/${first%:*}/${first##*:}") 2>/dev/null && held=$(kafka_offsets 2>&1) && [[ -n $held ]]; then
            log "---- Kafka: the messages each of the test's topics holds"
            echo "$held" >&2
        fi
        if [[ -n ${PANO_TEST_KEEP_LOGS:-} ]]; then # a failed test's files, whole
            mkdir -p "$PANO_TEST_KEEP_LOGS/$TEST_ID" && cp -r "$TEST_DIR"/. "$PANO_TEST_KEEP_LOGS/$TEST_ID/" 2>/dev/null &&
                log "logs kept in $PANO_TEST_KEEP_LOGS/$TEST_ID"
        fi
    fi
    curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$TEST_ID.events" >/dev/null 2>&1 || true
    curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$TEST_ID.events.dead" >/dev/null 2>&1 || true
    curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/exchanges/%2F/$TEST_ID" >/dev/null 2>&1 || true
    curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/exchanges/%2F/$TEST_ID.dlx" >/dev/null 2>&1 || true
    curl -fsS -X DELETE "$ES/$TEST_ID-*" >/dev/null 2>&1 || true
    curl -fsS -X DELETE "$ES/_index_template/$TEST_ID-*" >/dev/null 2>&1 || true
    # Kafka keeps one open file and two memory maps per partition: a
    # suite's worth of leftover topics would exhaust the broker.
    local first=${PANO_KAFKA_BROKERS%%,*}
    if (exec 3<>"/dev/tcp/${first%:*}/${first##*:}") 2>/dev/null; then
        "$PANO_BUILD/tests/tools/kafka_load" --delete-topics >/dev/null 2>&1 || true
    fi
    rm -rf "$TEST_DIR"
    exit "$rc"
}
trap cleanup EXIT
