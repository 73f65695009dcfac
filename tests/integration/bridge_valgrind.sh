#!/usr/bin/env bash
# pano-bridge under valgrind (memcheck, full leak check) through a short
# session: valid events (fast path), Pegasus samples (normalized, slow path),
# malformed messages including a 10 MB one, a metrics request, a fatal
# producer error (pano-bridge-test's hook; the producer is replaced), then
# SIGTERM. It must exit 0 with no memory error and no leak. Skipped in
# sanitizer builds.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers
require_valgrind "$BRIDGE_TEST"

port=$(free_ports 1) # below the ephemeral range, where outgoing connections take theirs
export PANO_BRIDGE_TEST_FATAL_AFTER=400
start vg "${VALGRIND[@]}" "$BRIDGE_TEST" --status-port "$port" --set pano.bridge.prefetch=200
vg=$(last_pid)
consuming_or_gone() { grep -q "consuming '" "$TEST_DIR/vg.log" || ! kill -0 "$vg" 2>/dev/null; }
wait_until 180 consuming_or_gone || true
grep -q "consuming '" "$TEST_DIR/vg.log" || fail "the bridge did not start under valgrind"

"$AMQP_LOAD" -n 1000 -m 60 --huge 1 -p "$TEST_ID" -r 300 >"$TEST_DIR/load.out" 2>&1 ||
    fail "amqp_load: $(cat "$TEST_DIR/load.out")"
URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f"
for f in "$PANO_FIXTURES"/events/stampede.xwf.*.json "$PANO_FIXTURES"/events/stampede.static.start.json \
    "$PANO_FIXTURES"/events/kickstart.inv.online.rabbitmq-http-publish-body.synthetic.json; do
    amqp-publish -u "$URL" -e "$TEST_ID" -r "$(jq -r '.event // .routing_key' "$f")" -p -b "$(cat "$f")"
done
curl -fsS -m 30 "http://127.0.0.1:$port/metrics" | grep pano_bridge_messages_received_total >/dev/null ||
    fail "no metrics under valgrind"
wait_delivered 240 "$TEST_ID" 1000 || fail "not delivered under valgrind"
grep -q "replacing the Kafka producer" "$TEST_DIR/vg.log" || fail "no producer restart"
log "delivered: $(check_all_delivered "$TEST_ID" 1000)"

kill -TERM "$vg"
rc=0
timeout 120 tail --pid="$vg" -f /dev/null || true
wait "$vg" || rc=$?
PIDS=()
((rc == 0)) || fail "pano-bridge under valgrind exited $rc"
log "PASS"
