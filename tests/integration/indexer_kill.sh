#!/usr/bin/env bash
# 100,000 events; two pano-indexers in one consumer group; indexers killed
# with SIGKILL three times while they work -> Elasticsearch holds exactly the
# 100,000 distinct events: none lost, none twice.
source "$(dirname "$0")/indexer_lib.sh"
require_stack

N=${PANO_TEST_EVENTS:-100000}
"$LOAD" -n "$N" -w 64 >"$TEST_DIR/load.log" 2>&1 || { cat "$TEST_DIR/load.log"; fail "kafka_load"; }
log "$(tail -n1 "$TEST_DIR/load.log")"

start_indexer a1
start_indexer b1
# Kill at about a quarter, a half and three quarters of the way.
victims=(b1 a1 b2)
next=(b2 a2 b3)
for k in 0 1 2; do
    threshold=$((N * (k + 1) / 4))
    wait_until 240 bash -c "[[ \$(curl -sS '$ES/$FAMILY_INDICES/_count?ignore_unavailable=true' 2>/dev/null | jq -r .count) -ge $threshold ]]" ||
        fail "fewer than $threshold events indexed in time"
    kill_indexer "${victims[$k]}"
    start_indexer "${next[$k]}"
done
wait_until 300 count_is "$FAMILY_INDICES" "$N" ||
    fail "not in time: $(short_of "$FAMILY_INDICES" "$N")"
sleep 3 # anything more (a duplicate) would show now
check_distinct "$FAMILY_INDICES" "$N"
[[ $(count_in "${P}dead-letter-*") == 0 ]] || fail "dead letters in a clean run"
[[ $(count_in "${P}unassigned-*") == 0 ]] || fail "unassigned events in a clean run"
# The survivors shared the partitions, and replays were absorbed as 409s.
# (When the events were all indexed before the kills, the survivors join
# only once the group has let the killed members go.)
wait_until 60 bash -c "grep -q 'INFO: assigned' '$TEST_DIR/a2.log' && grep -q 'INFO: assigned' '$TEST_DIR/b3.log'" ||
    fail "an indexer got no partitions"
stop_all
grep -h "duplicates" "$TEST_DIR"/*.log | tail -n 4 >&2
log "PASS"
