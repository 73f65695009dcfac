# Helpers for pano-monitor's integration tests. Source it after lib.sh.
#
# The monitor's tests need only RabbitMQ: each binds a queue of its own
# ($TEST_ID.events, removed by lib.sh's cleanup) to its own exchange and
# reads the events back from it, exactly as the broker received them.

MONITOR="$PANO_BUILD/publishers/monitor/pano-monitor"
EMIT="$PANO_BUILD/publishers/emit/pano-emit"
QUEUE_TOOL="$PANO_BUILD/tests/integration/pano-queue"
WORKLOAD="$PANO_BUILD/tests/integration/pano-workload"
QUEUE="$TEST_ID.events"
# A spool of the test's own, so tests never replay each other's events.
export PANO_SPOOL_DIR="$TEST_DIR/spool"

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
