#!/usr/bin/env bash
# pano-indexer under valgrind through a short session: events of several
# workflows, one invalid wf_uuid, a document the mapping rejects, a message
# that is not JSON, and a small workflow in Pegasus's shape (samples without
# delta, which the indexer gives theirs, with a closing sample for each run
# that ended), then SIGTERM. Valgrind must report no error and
# no leak (definite, indirect or possible). Skipped in a sanitizer build
# (valgrind and ASan do not mix).
source "$(dirname "$0")/indexer_lib.sh"
require_stack
require_valgrind "$INDEXER"

"$LOAD" -n 300 -w 5 --bad 2 --invalid-wf '../_all' >/dev/null 2>&1 || fail "kafka_load"
printf 'not json\n' | kcat -P -b "$KAFKA" -t "${PANO_KAFKA_TOPIC_PREFIX}custom"
# "kafka_load: workflow UUID jobs=N events=N failed=N unended=N"
"$LOAD" --shape pegasus --jobs 20 --samples 3 >"$TEST_DIR/pegasus.log" 2>&1 || fail "kafka_load --shape pegasus"
field() { sed -n "s/^kafka_load: workflow .* $1=\([0-9]*\).*/\1/p" "$TEST_DIR/pegasus.log"; }
pegasus=$(field events)
ended=$(($(field jobs) - $(field unended)))
((pegasus > 0 && ended > 0)) || fail "kafka_load: $(cat "$TEST_DIR/pegasus.log")"
export PANO_INDEXER_STATUS_FILE="$TEST_DIR/status.prom"
start vg "${VALGRIND[@]}" "$INDEXER" --set pano.indexer.status_port=-1
wait_until 240 count_is "${P}dead-letter-*" 3 || fail "expected 3 dead letters, found $(count_in "${P}dead-letter-*")"
sent() { es -X POST "$ES/$FAMILY_INDICES/_count" -d '{"query":{"bool":{"must_not":{"term":{"sample":"closing"}}}}}' | jq .count; }
sent_is() { refresh; [[ $(sent) == "$1" ]]; }
wait_until 60 sent_is $((300 + pegasus)) || fail "expected $((300 + pegasus)) events, found $(sent)"
wait_until 30 count_is "$FAMILY_INDICES" $((300 + pegasus + ended)) ||
    fail "expected $ended closing samples, found $(($(count_in "$FAMILY_INDICES") - $(sent)))"
wait_until 30 count_is "${P}unassigned-*" 1 || fail "expected 1 unassigned event"
# Scrape the status port once while running.
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$TEST_DIR/vg.log" | head -n1)
curl -fsS "$port/metrics" | grep '^pano_indexer_indexed_total' >/dev/null || fail "status port did not answer"
stop_all # SIGTERM; fails unless the exit status is 0 (valgrind's would be 99)
log "PASS"
