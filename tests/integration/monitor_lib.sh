# Helpers for pano-monitor's integration tests. Source it after lib.sh.
#
# Most of the monitor's tests need only RabbitMQ: each binds a queue of its
# own ($TEST_ID.events, removed by lib.sh's cleanup) to its own exchange and
# reads the events back from it, exactly as the broker received them. Those
# that need no service write the events into files (run_to_file, below).

MONITOR="$PANO_BUILD/publishers/monitor/pano-monitor"
EMIT="$PANO_BUILD/publishers/emit/pano-emit"
QUEUE_TOOL="$PANO_BUILD/tests/integration/pano-queue"
WORKLOAD="$PANO_BUILD/tests/integration/pano-workload"
QUEUE="$TEST_ID.events"
# The workflow context Pegasus puts in every job's environment.
export PEGASUS_WF_UUID=${PEGASUS_WF_UUID:-$(cat /proc/sys/kernel/random/uuid)}
# A spool of the test's own, so tests never replay each other's events.
export PANO_SPOOL_DIR="$TEST_DIR/spool"

# Extra cleanup steps, run before lib.sh's cleanup.
CLEANUP_HOOKS=()
monitor_cleanup() {
    local rc=$? hook
    set +e
    for hook in "${CLEANUP_HOOKS[@]}"; do "$hook" || true; done
    (exit "$rc")
    cleanup
}
trap monitor_cleanup EXIT

require_rabbitmq() {
    (exec 3<>"/dev/tcp/127.0.0.1/$AMQP_PORT") 2>/dev/null ||
        fail "RabbitMQ is not reachable on port $AMQP_PORT (run deploy/local/pano-stack up)"
}

# Declare the test's queue, bound with '#' to the test's exchange.
queue_setup() { "$QUEUE_TOOL" declare "${1:-$PANO_AMQP_URL}" "$QUEUE" || fail "cannot declare $QUEUE"; }

# drain FILE [URL]: every event waiting in the queue, one JSON per line.
drain() { "$QUEUE_TOOL" drain "${2:-$PANO_AMQP_URL}" "$QUEUE" 1 >"$1" || fail "cannot drain $QUEUE"; }

# jqf FILE FILTER: run jq -s over the events of a file.
jqf() { jq -s -r "$2" "$1"; }

# expect FILE FILTER MESSAGE: the jq filter (over the array of events) holds.
expect() { jq -s -e "$2" "$1" >/dev/null || fail "$3 ($(jq -s -c "$2" "$1" 2>&1 | head -c 300))"; }

# within A B PCT: |A - B| <= PCT % of B.
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= p / 100 * b) }'; }

# ---- a private RabbitMQ node, for tests that stop the broker --------------
# The shared broker is never stopped: such a test starts a node of its own on
# free ports, with its own data directory, Erlang cookie and epmd.

RMQ_BIN=${PANO_RABBITMQ_BIN:-/usr/lib/rabbitmq/bin}

rmq_env() {
    local d=$RMQ_DIR
    env HOME="$d/home" ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$((RMQ_PORT + 2))" \
        RABBITMQ_NODENAME="$RMQ_NODE" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
        RABBITMQ_NODE_PORT="$RMQ_PORT" RABBITMQ_DIST_PORT="$((RMQ_PORT + 1))" \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
        RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
        RABBITMQ_CONF_ENV_FILE="$d/rabbitmq-env.conf" RABBITMQ_CONFIG_FILE="$d/rabbitmq.conf" \
        RABBITMQ_ADVANCED_CONFIG_FILE="$d/advanced.config" \
        RABBITMQ_ENABLED_PLUGINS_FILE="$d/enabled_plugins" RABBITMQ_MNESIA_BASE="$d/mnesia" \
        RABBITMQ_LOG_BASE="$d/log" RABBITMQ_PID_FILE="$d/rabbitmq.pid" "$@"
}

# private_rabbitmq_start: start (or restart) the node; sets PRIVATE_URL.
private_rabbitmq_start() {
    if [[ -z ${RMQ_PORT:-} ]]; then
        command -v "$RMQ_BIN/rabbitmq-server" >/dev/null || fail "no rabbitmq-server in $RMQ_BIN"
        RMQ_PORT=$(free_ports 3) # AMQP, Erlang distribution, epmd
        RMQ_NODE="pano-test-$RMQ_PORT@localhost"
        RMQ_DIR="$TEST_DIR/rabbitmq"
        mkdir -p "$RMQ_DIR/home" "$RMQ_DIR/mnesia" "$RMQ_DIR/log"
        printf 'listeners.tcp.default = 127.0.0.1:%s\nloopback_users.guest = true\n' \
            "$RMQ_PORT" >"$RMQ_DIR/rabbitmq.conf"
        echo '[].' >"$RMQ_DIR/enabled_plugins"
        echo '[].' >"$RMQ_DIR/advanced.config"
        : >"$RMQ_DIR/rabbitmq-env.conf"
        rmq_env epmd -daemon -address 127.0.0.1 -port "$((RMQ_PORT + 2))"
        PRIVATE_URL="amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2F/$TEST_ID"
        CLEANUP_HOOKS+=(private_rabbitmq_cleanup)
    fi
    rmq_env "$RMQ_BIN/rabbitmq-server" >>"$RMQ_DIR/log/console.log" 2>&1 &
    RMQ_PID=$!
    wait_until 120 private_rabbitmq_up || fail "private RabbitMQ did not start (log: $RMQ_DIR/log)"
    log "private RabbitMQ up on port $RMQ_PORT (pid $RMQ_PID)"
}

private_rabbitmq_up() { "$QUEUE_TOOL" probe "amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2F/x" x 2>/dev/null; }

private_rabbitmq_stop() {
    rmq_env "$RMQ_BIN/rabbitmqctl" -n "$RMQ_NODE" -q -t 60 stop >/dev/null 2>&1 ||
        kill -TERM "$RMQ_PID" 2>/dev/null || true
    local i
    for ((i = 0; i < 600; i++)); do
        kill -0 "$RMQ_PID" 2>/dev/null || break
        sleep 0.1
    done
    wait "$RMQ_PID" 2>/dev/null || true
    ! (exec 3<>"/dev/tcp/127.0.0.1/$RMQ_PORT") 2>/dev/null || fail "private RabbitMQ did not stop"
    log "private RabbitMQ stopped"
}

private_rabbitmq_cleanup() {
    [[ -n ${RMQ_PORT:-} ]] || return 0
    if kill -0 "${RMQ_PID:-0}" 2>/dev/null; then
        rmq_env "$RMQ_BIN/rabbitmqctl" -n "$RMQ_NODE" -q -t 30 stop >/dev/null 2>&1 ||
            kill -KILL "$RMQ_PID" 2>/dev/null || true
        wait "$RMQ_PID" 2>/dev/null || true
    fi
    rmq_env epmd -port "$((RMQ_PORT + 2))" -kill >/dev/null 2>&1 || true
}

# check_schema FILE: every event whose name has a schema in schemas/events
# has the schema's required fields and no field the schema (or the
# envelope) does not declare.
SCHEMAS="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../schemas" && pwd)"
check_schema() {
    local name schema
    for name in $(jq -r .event "$1" | sort -u); do
        schema="$SCHEMAS/events/$name.schema.json"
        [[ -f $schema ]] || continue
        jq -e -n --slurpfile ev "$1" --slurpfile s "$schema" --slurpfile env "$SCHEMAS/envelope.schema.json" \
            --arg name "$name" '
            ($s[0].properties + $env[0].properties | keys) as $known
            | ($s[0].required // []) as $req
            | [$ev[] | select(.event == $name)]
            | all((keys - $known | length == 0) and ($req - keys | length == 0))' >/dev/null ||
            fail "$name events do not match $schema: $(jq -c -n --slurpfile ev "$1" \
                --slurpfile s "$schema" --slurpfile env "$SCHEMAS/envelope.schema.json" --arg name "$name" \
                '[$ev[] | select(.event == $name) | keys - ($s[0].properties + $env[0].properties | keys)]
                 | add | unique')"
    done
}

# No sanitizer report in any log the test kept (the ASan build).
no_sanitizer_reports() {
    if grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$TEST_DIR"/*.log "$TEST_DIR"/*.err \
        2>/dev/null; then
        fail "sanitizer report in the logs above"
    fi
}

# The tests that need no service write the events into files of their own:
# run_to_file NAME MONITOR-ARGS... -- TASK... runs pano-monitor with its
# events in $TEST_DIR/NAME.jsonl, the task's output in NAME.out and the
# monitor's log in NAME.log, and fails if the monitor exits non-zero.
run_to_file() {
    local name=$1
    shift
    PANO_AMQP_URL= PANO_STORE= PANO_OUTPUT=$TEST_DIR/$name.jsonl "$MONITOR" "$@" \
        >"$TEST_DIR/$name.out" 2>"$TEST_DIR/$name.log" ||
        fail "$name: pano-monitor exited $?: $(tail -3 "$TEST_DIR/$name.log")"
}
# file_events NAME EVENT JQ: EVENT's events of NAME.jsonl, each through JQ,
# as one JSON array; file_samples NAME JQ the same of its samples;
# file_final NAME FIELD: FIELD of its end event's final totals.
file_events() { jq -s -c "[.[] | select(.event == \"$2\") | $3]" "$TEST_DIR/$1.jsonl"; }
file_samples() { file_events "$1" kickstart.inv.online "$2"; }
file_final() { jq -r "select(.event == \"kickstart.inv.end\") | .final.$2" "$TEST_DIR/$1.jsonl"; }
