# Helpers for pano-bridge's integration tests. Source it after lib.sh.
#
# Adds: starting bridges and waiting for them, reading Kafka topics with
# kcat, RabbitMQ queue counts from the management API, a private RabbitMQ +
# Kafka (pano-stack --only) for tests that restart them, and cleanup of the
# test's Kafka topics and private stack.

: "${PANO_SOURCE:?PANO_SOURCE must point at the source tree}"
BRIDGE=$PANO_BUILD/broker-bridge/pano-bridge
# The same program with test hooks (PANO_BRIDGE_TEST_FATAL_AFTER).
BRIDGE_TEST=$PANO_BUILD/broker-bridge/pano-bridge-test
AMQP_LOAD=$PANO_BUILD/tests/tools/amqp_load
STACK=$PANO_SOURCE/deploy/local/pano-stack
SHARED_STACK_DIR=${PANO_STACK_DIR:-/var/tmp/pano-stack}
export PANO_BRIDGE_STATS_INTERVAL=${PANO_BRIDGE_STATS_INTERVAL:-1}
PRIVATE_STACK=""

require_brokers() {
    (exec 3<>"/dev/tcp/127.0.0.1/$AMQP_PORT") 2>/dev/null ||
        fail "RabbitMQ is not reachable on port $AMQP_PORT (run deploy/local/pano-stack up)"
    kcat -b "$KAFKA" -L -m 5 >/dev/null 2>&1 ||
        fail "Kafka is not reachable at $KAFKA (run deploy/local/pano-stack up)"
    command -v kcat >/dev/null || fail "kcat is not installed"
}

# start_bridge NAME [ARGS...]: start a pano-bridge and wait until it consumes.
start_bridge() {
    local name=$1
    shift
    start "$name" "$BRIDGE" "$@"
    wait_until 60 grep -q "consuming '" "$TEST_DIR/$name.log" ||
        fail "bridge $name did not start consuming within 60 s"
}

# The pid of the last program started.
last_pid() { echo "${PIDS[-1]}"; }

# kill_hard PID: SIGKILL a program the test started and forget it.
kill_hard() {
    local pid=$1
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    forget "$pid"
}

# stop_one PID: SIGTERM one program and check it exited 0.
stop_one() {
    local pid=$1 rc=0
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    forget "$pid"
    ((rc == 0)) || fail "process $pid exited $rc after SIGTERM"
}

mgmt() { curl -fsS -m 10 -u guest:guest "http://127.0.0.1:$MGMT_PORT/api/$1"; }

# queue_ready QUEUE: messages waiting in the queue, exactly (a passive
# declare; the management API's statistics lag by seconds).
queue_ready() { "$PANO_BUILD/tests/tools/amqp_drain" -c -q "$1" 2>/dev/null; }

# topic_records TOPIC FORMAT: every record of a topic, in kcat's format.
# A read that fails (kcat's errors are kept in kcat.err) gives what it read.
topic_records() {
    kcat -C -b "$KAFKA" -t "$1" -o beginning -e -q -f "$2" 2>>"$TEST_DIR/kcat.err" ||
        log "kcat -t $1 exited $?: $(tail -2 "$TEST_DIR/kcat.err" | tr '\n' ' ')"
}

# The event_ids in the family topics, one per line (with repeats).
family_event_ids() {
    local f
    for f in kickstart darshan transfer stampede custom other; do
        topic_records "$PANO_KAFKA_TOPIC_PREFIX$f" '%s\n'
    done | grep -o '"event_id":"[^"]*"' | cut -d'"' -f4
}

# all_delivered PREFIX N: true once N distinct events PREFIX-* are in Kafka.
all_delivered() {
    [[ $(family_event_ids | grep "^$1-" | sort -u | grep -c . || true) -ge $2 ]]
}

# wait_delivered SECONDS PREFIX N: wait (checking every 2 s, Kafka reads are
# not free) until every event is in Kafka, and nothing waits in the queue.
wait_delivered() {
    local deadline=$((SECONDS + $1))
    until all_delivered "$2" "$3" && [[ $(queue_ready "$PANO_BRIDGE_QUEUE") == 0 ]]; do
        ((SECONDS < deadline)) || return 1
        sleep 2
    done
}

# check_all_delivered PREFIX N: every event PREFIX-0 .. PREFIX-(N-1) is in
# Kafka at least once. Prints "distinct D total T". Read again for up to
# 20 s while some are missing, so that a read of Kafka that failed is not
# taken for a lost event; events repeated are named on stderr.
check_all_delivered() {
    local prefix=$1 n=$2 ids distinct total missing deadline=$((SECONDS + 20))
    while :; do
        ids=$(family_event_ids | grep "^$prefix-" || true)
        total=$(grep -c . <<<"$ids" || true)
        distinct=$(sort -u <<<"$ids" | grep -c . || true)
        ((distinct == n || SECONDS >= deadline)) && break
        log "$distinct of $n events read from Kafka: reading again"
        sleep 2
    done
    if ((distinct != n)); then
        missing=$(comm -23 <(seq 0 $((n - 1)) | sed "s/^/$prefix-/" | sort) <(sort -u <<<"$ids") | head -5 | tr '\n' ' ')
        fail "$distinct of $n events in Kafka ($total records); missing e.g. $missing"
    fi
    ((total == distinct)) ||
        log "events in Kafka more than once, e.g. $(sort <<<"$ids" | uniq -d | head -5 | tr '\n' ' ')"
    echo "distinct $distinct total $total"
}

# metric FILE NAME: a value from a bridge's status file.
metric() { awk -v m="$2" '$1 == m {print $2}' "$1"; }

# The status file of the bridge a test watches (start_bridge NAME --set
# pano.bridge.status_file="$STATUS"): m NAME is a value from it, at_least
# NAME N says whether it reached N (for wait_until).
STATUS=$TEST_DIR/bridge.prom
m() { metric "$STATUS" "$1"; }
at_least() { [[ $(m "$1" 2>/dev/null || echo 0) -ge $2 ]]; }

# ---- a private RabbitMQ and Kafka, for tests that restart them -----------

# private_stack_up [--kafka-nodes N] [--es-nodes N]: start them on ports of
# their own (and Elasticsearch too when --es-nodes is given: clusters of
# Kafka and Elasticsearch nodes); exports PRIV_* and points the test's
# programs at them.
PRIVATE_SERVICES=rabbitmq,kafka
private_stack_up() {
    local kafka_nodes=1 es_nodes=0
    while (($#)); do
        case $1 in
        --kafka-nodes) kafka_nodes=$2 ;;
        --es-nodes) es_nodes=$2 ;;
        *) fail "private_stack_up: unknown option $1" ;;
        esac
        shift 2
    done
    local base
    base=$(free_ports $((3 + 2 * kafka_nodes + es_nodes)))
    PRIVATE_STACK=$(mktemp -d "/var/tmp/pano-bridge-$TEST_ID.XXXXXX")
    chmod 755 "$PRIVATE_STACK"
    PRIV_AMQP=$base PRIV_MGMT=$((base + 1)) PRIV_KAFKA=$((base + 2)) PRIV_KCTL=$((base + 3))
    PRIV_ES=$((base + 2 + 2 * kafka_nodes))
    # Erlang's distribution port too, or pano-stack puts it at AMQP + 20000,
    # in the ephemeral range that outgoing connections take theirs from.
    PRIV_DIST=$((base + 2 + 2 * kafka_nodes + es_nodes))
    local -a es_args=()
    if ((es_nodes > 0)); then
        PRIVATE_SERVICES+=,elasticsearch
        es_args=(--es-port "$PRIV_ES" --es-nodes "$es_nodes")
    fi
    # The jars come from the shared stack when it has them (else pano-stack
    # fetches them from the local Maven cache).
    local jars
    for jars in "$SHARED_STACK_DIR"/dist/kafka-* "$SHARED_STACK_DIR"/dist/elasticsearch-*; do
        if [[ -f $jars/.complete ]]; then
            mkdir -p "$PRIVATE_STACK/dist"
            cp -a "$jars" "$PRIVATE_STACK/dist/"
        fi
    done
    log "starting a private $PRIVATE_SERVICES ($kafka_nodes Kafka node(s) from $PRIV_KAFKA) in $PRIVATE_STACK"
    PANO_STACK_DIR=$PRIVATE_STACK PANO_KAFKA_HEAP=512m PANO_ES_HEAP=512m PANO_KAFKA_PARTITIONS=4 \
        "$STACK" --only "$PRIVATE_SERVICES" --offline --timeout 240 \
        --amqp-port "$PRIV_AMQP" --rabbitmq-mgmt-port "$PRIV_MGMT" --rabbitmq-dist-port "$PRIV_DIST" \
        --kafka-port "$PRIV_KAFKA" --kafka-controller-port "$PRIV_KCTL" \
        --kafka-nodes "$kafka_nodes" "${es_args[@]}" up \
        >"$TEST_DIR/private-stack.log" 2>&1 ||
        { tail -20 "$TEST_DIR/private-stack.log" >&2; fail "private stack did not start"; }
    AMQP_PORT=$PRIV_AMQP MGMT_PORT=$PRIV_MGMT
    KAFKA=$(PANO_STACK_DIR=$PRIVATE_STACK "$STACK" env | sed -n 's/^export PANO_KAFKA_BROKERS=//p')
    export PANO_AMQP_URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2F/$TEST_ID"
    export PANO_KAFKA_BROKERS=$KAFKA
    if ((es_nodes > 0)); then
        ES=http://127.0.0.1:$PRIV_ES
        export PANO_ES_URL=$ES
    fi
}

# private_stack SERVICE COMMAND [ARGS...]: pano-stack's down, up, rabbitmqctl ...
private_stack() {
    PANO_STACK_DIR=$PRIVATE_STACK "$STACK" --only "$1" --offline --timeout 240 "${@:2}" \
        >>"$TEST_DIR/private-stack.log" 2>&1 ||
        { tail -20 "$TEST_DIR/private-stack.log" >&2; fail "private stack: $* failed"; }
}

bridge_cleanup() {
    if [[ -n $PRIVATE_STACK ]]; then
        PANO_STACK_DIR=$PRIVATE_STACK "$STACK" --only "$PRIVATE_SERVICES" down >/dev/null 2>&1 || true
        rm -rf "$PRIVATE_STACK"
    fi
}
trap 'rc=$?; bridge_cleanup; set +e; (exit $rc); cleanup' EXIT
