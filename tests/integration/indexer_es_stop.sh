#!/usr/bin/env bash
# Elasticsearch really stopped for 30 s in the middle of a run -> the exact
# count afterwards. The test starts an Elasticsearch of its own
# (deploy/local/pano-stack --only elasticsearch, its own data dir and port),
# stops it with `down`, waits 30 s and starts it again with `up`; the shared
# stack is not touched. (indexer_es_outage does the same with a relay in
# front of the shared Elasticsearch, which costs no second JVM.)
source "$(dirname "$0")/indexer_lib.sh"
require_stack

STACK="$(cd "$(dirname "$0")/../.." && pwd)/deploy/local/pano-stack"
OUTAGE=${PANO_TEST_OUTAGE:-30}
N=${PANO_TEST_EVENTS:-20000}
free_port() { # a port p with p+100 (Elasticsearch's transport) free too
    python3 - <<'PY'
import socket
for _ in range(100):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    if p + 100 < 65536:
        t = socket.socket()
        try:
            t.bind(("127.0.0.1", p + 100)); t.close(); print(p); break
        except OSError:
            pass
PY
}
PORT=$(free_port)
SDIR=$(mktemp -d "/var/tmp/pano-es-$TEST_ID.XXXXXX")
chmod 755 "$SDIR"
export PANO_ES_HEAP=${PANO_ES_HEAP:-512m}
stack() { timeout 300 bash "$STACK" --data-dir "$SDIR" --es-port "$PORT" --only elasticsearch --offline --timeout 240 "$@"; }
stack_cleanup() {
    local rc=$?
    set +e
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    PIDS=()
    stack down >/dev/null 2>&1
    rm -rf "$SDIR"
    (exit "$rc")
    cleanup
}
trap stack_cleanup EXIT

log "starting a private Elasticsearch on port $PORT"
stack up >"$TEST_DIR/stack-up.log" 2>&1 || { tail -n 20 "$TEST_DIR/stack-up.log" >&2; fail "private Elasticsearch did not start"; }
ES="http://127.0.0.1:$PORT" # every check below looks at the private one
export PANO_ES_URL="$ES"
export PANO_INDEXER_STATUS_FILE="$TEST_DIR/status.prom"
export PANO_INDEXER_MAX_BACKOFF=2
start_indexer ix
start load "$LOAD" -n "$N" -w 16 --rate $((N / 20))
wait_until 90 bash -c "[[ \$(curl -sS '$ES/$FAMILY_INDICES/_count?ignore_unavailable=true' 2>/dev/null | jq -r .count) -ge $((N / 10)) ]]" ||
    fail "indexing did not start"
stack down >"$TEST_DIR/stack-down.log" 2>&1 || fail "cannot stop the private Elasticsearch"
log "Elasticsearch stopped; waiting $OUTAGE s"
sleep "$OUTAGE"
grep -q '^pano_indexer_elasticsearch_up 0$' "$PANO_INDEXER_STATUS_FILE" || fail "status does not show Elasticsearch down"
grep -q '^pano_indexer_paused 1$' "$PANO_INDEXER_STATUS_FILE" || fail "partitions not paused"
stack up >"$TEST_DIR/stack-up2.log" 2>&1 || { tail -n 20 "$TEST_DIR/stack-up2.log" >&2; fail "private Elasticsearch did not restart"; }
log "Elasticsearch started again"
# (a failure shows the indexer's pauses, resumes and rebalances: lib.sh)
wait_until 240 count_is "$FAMILY_INDICES" "$N" ||
    fail "after the restart: $(short_of "$FAMILY_INDICES" "$N")"
sleep 3
check_distinct "$FAMILY_INDICES" "$N"
[[ $(count_in "${P}dead-letter-*") == 0 ]] || fail "dead letters after the outage"
stop_all
log "PASS"
