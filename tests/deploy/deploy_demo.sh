#!/usr/bin/env bash
# deploy/demo.sh --pipeline, as a newcomer runs it (a clean environment), against
# a private stack of its own (data directory and ports): it exits 0 and every
# event it sent is in Elasticsearch, for every job of its workflow and every
# publisher. Before the demo starts the first pano-bridge that stack ever saw,
# events are published to it: the broker's layout comes from
# deploy/rabbitmq/definitions.json at boot, so they wait in pano.events and
# are indexed once the demo's bridge runs. The demo ends with the address of
# the workflow's page in the pano-explorer it leaves running, which serves it.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/demo_lib.sh"
: "${PANO_SOURCE:?}"
STACK=$PANO_SOURCE/deploy/local/pano-stack
SHARED_STACK_DIR=${PANO_STACK_DIR:-/var/tmp/pano-stack}

base=$(free_ports 5) # AMQP, management, Kafka, its controller, Erlang distribution
es_port=$(free_ports 1)
PRIVATE_STACK=$(mktemp -d "/var/tmp/pano-demo-$TEST_ID.XXXXXX")
chmod 755 "$PRIVATE_STACK"
# The environment a user has: no PANO_* of the test harness.
demo_env=(env -i "PATH=$PATH" "HOME=$HOME" "LANG=C.UTF-8" "TERM=dumb"
          "PANO_STACK_DIR=$PRIVATE_STACK" "PANO_AMQP_PORT=$base" "PANO_RABBITMQ_MGMT_PORT=$((base + 1))"
          "PANO_RABBITMQ_DIST_PORT=$((base + 4))"
          "PANO_KAFKA_PORT=$((base + 2))" "PANO_KAFKA_CONTROLLER_PORT=$((base + 3))"
          "PANO_ES_PORT=$es_port" "PANO_ES_HEAP=512m" "PANO_KAFKA_HEAP=512m"
          "PANO_EXPLORER_PORT=0")
explorer_pid=$PANO_BUILD/demo/pano-explorer.pid
trap 'rc=$?; [[ -f $explorer_pid ]] && kill -TERM "$(cat "$explorer_pid")" 2>/dev/null
      "${demo_env[@]}" "$STACK" down >/dev/null 2>&1 || true; rm -rf "$PRIVATE_STACK"
      set +e; (exit $rc); cleanup' EXIT

# The artifacts of the shared stack, so that nothing is fetched again.
mkdir -p "$PRIVATE_STACK/dist"
for d in "$SHARED_STACK_DIR"/dist/*; do
    [[ -f $d/.complete ]] && cp -a "$d" "$PRIVATE_STACK/dist/"
done

log "starting a private stack in $PRIVATE_STACK (AMQP $base, Kafka $((base + 2)), ES $es_port)"
"${demo_env[@]}" "$STACK" up >"$TEST_DIR/stack.log" 2>&1 ||
    { tail -20 "$TEST_DIR/stack.log" >&2; fail "the private stack did not start"; }
eval "$("${demo_env[@]}" "$STACK" env)"
[[ $PANO_AMQP_URL == amqp://pano:*@127.0.0.1:$base/pano/monitoring ]] ||
    fail "pano-stack env gives $PANO_AMQP_URL, not user pano on vhost pano"

# Published before any bridge ran: they must wait in pano.events.
early_wf=$(cat /proc/sys/kernel/random/uuid)
for i in 1 2 3; do
    "${demo_env[@]}" PANO_AMQP_URL="$PANO_AMQP_URL" PEGASUS_WF_UUID="$early_wf" \
        "$PANO_BUILD/publishers/emit/pano-emit" demo.early "$i" 2>>"$TEST_DIR/early.log" ||
        { cat "$TEST_DIR/early.log" >&2; fail "an event published before the first bridge was refused"; }
done
grep -qiE "refused|rejected|not delivered" "$TEST_DIR/early.log" && fail "early events refused: $(cat "$TEST_DIR/early.log")"
log "3 events published before the first pano-bridge"

"${demo_env[@]}" bash "$PANO_SOURCE/deploy/demo.sh" --pipeline --build-dir "$PANO_BUILD" >"$TEST_DIR/demo.log" 2>&1 ||
    { tail -40 "$TEST_DIR/demo.log" >&2; fail "deploy/demo.sh failed"; }
grep -q "Every event of the workflow landed" "$TEST_DIR/demo.log" || fail "the demo did not say its events landed"
grep -q "4 job(s): 0 running, 3 succeeded, 1 failed" "$TEST_DIR/demo.log" ||
    fail "the demo's pano-query status: $(grep -A3 'pano-query status' "$TEST_DIR/demo.log")"

# It ends with the workflow's page in pano-explorer, left running.
url=$(tail -n 1 "$TEST_DIR/demo.log" | tr -d ' ')
[[ $url =~ ^http://127\.0\.0\.1:[0-9]+/#/wf/[0-9a-f-]{36}$ ]] || fail "the demo's last line is not the workflow's page: $url"
page=$(curl -fsS "${url%%#*}") || fail "pano-explorer, left running by the demo, does not answer at $url"
grep -q "<title>" <<<"$page" || fail "no page at ${url%%#*}"
curl -fsS "${url%%#*}api/workflows/${url##*/}" | jq -e '.jobs | length == 4' >/dev/null ||
    fail "pano-explorer does not show the demo workflow's 4 monitored jobs"

# What the demo sent, event by event, is in Elasticsearch exactly once.
sent=$PANO_BUILD/demo/sent.jsonl
wf=$(jq -r .wf_uuid "$sent" | sort -u)
[[ $(wc -l <<<"$wf") == 1 ]] || fail "the demo's events carry several workflow UUIDs: $wf"
es -X POST "$PANO_ES_URL/pano-*/_refresh" >/dev/null
es -X POST "$PANO_ES_URL/pano-*/_search" -d '{"size":1000,"query":{"term":{"wf_uuid":"'"$wf"'"}}}' |
    jq -c '.hits.hits[]._source' >"$TEST_DIR/landed.jsonl"
check_demo_events "$sent" "$TEST_DIR/landed.jsonl"

# The events published before the first bridge.
wait_until 30 bash -c "[[ \$(curl -fsS '$PANO_ES_URL/pano-*/_count?q=wf_uuid:$early_wf' | jq .count) == 3 ]]" ||
    fail "the 3 events published before the first bridge are not all in Elasticsearch"
log "PASS: $(wc -l <"$sent") demo events and the 3 early ones landed"
