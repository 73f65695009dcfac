#!/usr/bin/env bash
# pano-explorer gives up a request nobody waits for, and stops within about
# a second whatever it is answering. Its "Elasticsearch" here is a socket
# that accepts connections and never answers (pano.es.timeout 60 s), so
# without abandoning, each request would hold a thread for a minute:
# - a client that gives up after 1 s: the request is abandoned ("the client
#   went away" in the log) within 3 s of the client leaving;
# - SIGTERM while a request waits: the request is abandoned ("the explorer
#   is stopping") and the explorer exits 0 within 3 s.
source "$(dirname "$0")/lib.sh"
EXPLORER=$PANO_BUILD/explorer/pano-explorer
silent=$(free_ports 1)
silent_up "$silent"

PANO_ES_TIMEOUT=60 start explorer "$EXPLORER" --port 0 --es-url "http://127.0.0.1:$silent"
explorer=${PIDS[-1]}
wait_until 30 grep -q "serving" "$TEST_DIR/explorer.log" || fail "the explorer did not start: $(cat "$TEST_DIR/explorer.log")"
port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$TEST_DIR/explorer.log")
WF=$(cat /proc/sys/kernel/random/uuid)

# A client that gives up.
curl -sS -m 1 -o /dev/null "http://127.0.0.1:$port/api/workflows/$WF" 2>/dev/null && fail "the silent server answered"
left=$SECONDS
wait_until 3 grep -q "abandoned /api/workflows/$WF: the client went away" "$TEST_DIR/explorer.log" ||
    fail "the request of a client gone was not abandoned: $(cat "$TEST_DIR/explorer.log")"
log "abandoned $((SECONDS - left)) s after its client left"

# SIGTERM while a request waits.
curl -sS -o "$TEST_DIR/body" -w '%{http_code}' "http://127.0.0.1:$port/api/workflows/$WF/series?metric=rss" \
    >"$TEST_DIR/code" 2>/dev/null &
client=$!
sleep 1
kill -0 "$client" 2>/dev/null || fail "the request did not wait for the silent server"
t0=$(date +%s.%N)
kill -TERM "$explorer"
rc=0
timeout 10 tail --pid="$explorer" -f /dev/null || fail "the explorer still runs 10 s after SIGTERM"
wait "$explorer" || rc=$?
forget "$explorer"
took=$(echo "$(date +%s.%N) - $t0" | bc)
((rc == 0)) || fail "the explorer exited $rc after SIGTERM: $(tail -5 "$TEST_DIR/explorer.log")"
(($(echo "$took <= 3" | bc))) || fail "the explorer took $took s to stop"
grep -q "abandoned /api/workflows/$WF/series: the explorer is stopping" "$TEST_DIR/explorer.log" ||
    fail "the waiting request was not abandoned: $(cat "$TEST_DIR/explorer.log")"
wait "$client" || true
log "stopped ${took} s after SIGTERM; the waiting client got HTTP $(cat "$TEST_DIR/code")"
if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$TEST_DIR/explorer.log"; then
    fail "sanitizer report above"
fi
log "OK"
