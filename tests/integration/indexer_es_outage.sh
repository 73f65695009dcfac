#!/usr/bin/env bash
# Elasticsearch unreachable for 30 s in the middle of a run, then flapping
# (reachable for a moment, five times) -> the exact count afterwards,
# nothing lost, nothing twice; every resumed partition the indexer had
# received from goes on after the last message received, never back at its
# committed offset.
#
# The shared Elasticsearch must not be stopped (other tests use it), so the
# indexer reaches it through a TCP relay (socat) of its own, and the outage
# is the relay being killed (every connection reset, then connection
# refused) for 30 s and started again on the same port: from the indexer's
# side the same as Elasticsearch stopping and coming back.
source "$(dirname "$0")/indexer_lib.sh"
require_stack

OUTAGE=${PANO_TEST_OUTAGE:-30}
N=${PANO_TEST_EVENTS:-20000}
RELAY_PORT=$(free_ports 1)
relay_up "$RELAY_PORT" "${ES##*:}"

export PANO_INDEXER_STATUS_FILE="$TEST_DIR/status.prom"
export PANO_INDEXER_MAX_BACKOFF=2
PANO_ES_URL="http://127.0.0.1:$RELAY_PORT" start_indexer ix
# Events keep coming during the outage: about 20 s of load at N/20 per s.
start load "$LOAD" -n "$N" -w 16 --rate $((N / 20))
wait_until 60 bash -c "[[ \$(curl -sS '$ES/$FAMILY_INDICES/_count?ignore_unavailable=true' 2>/dev/null | jq -r .count) -ge $((N / 10)) ]]" ||
    fail "indexing did not start"
relay_down
log "Elasticsearch unreachable for the indexer for $OUTAGE s"
before=$(count_in "$FAMILY_INDICES")
sleep "$OUTAGE"
refresh
during=$(count_in "$FAMILY_INDICES")
log "indexed before the outage: $before; at its end: $during"
grep -q '^pano_indexer_elasticsearch_up 0$' "$PANO_INDEXER_STATUS_FILE" || fail "status does not show Elasticsearch down"
grep -q '^pano_indexer_paused 1$' "$PANO_INDEXER_STATUS_FILE" || fail "partitions not paused during the outage"
# Flapping: a resume is often followed by a pause before anything was
# polled (the batch settles, its summaries do not), where librdkafka has
# forgotten the position (the resume's seek) and may stand past what it
# fetched and dropped.
for _ in 1 2 3 4 5; do
    relay_up "$RELAY_PORT" "${ES##*:}"
    sleep 0.4
    relay_down
    sleep 1.5
done
relay_up "$RELAY_PORT" "${ES##*:}"
log "Elasticsearch reachable again"
wait_until 180 count_is "$FAMILY_INDICES" "$N" ||
    fail "after the outage: $(short_of "$FAMILY_INDICES" "$N")"
sleep 3
check_distinct "$FAMILY_INDICES" "$N"
# Batches went ahead of unsettled ones (before, during and after the outage)
# and nothing of them was lost.
ahead=$(metric "$PANO_INDEXER_STATUS_FILE" batches_sent_ahead_total)
((${ahead:-0} > 0)) || fail "no batch was sent ahead of the one in flight"
log "$ahead batches sent ahead of the one in flight"
[[ $(count_in "${P}dead-letter-*") == 0 ]] || fail "dead letters after the outage"
grep -q "Elasticsearch unavailable" "$TEST_DIR/ix.log" || fail "no sign of the outage in the log"
# One indexer in a group of its own: a partition with a committed offset is
# one it received from, so it resumes after the last message received.
resumes=$(grep -c 'partitions resumed: ' "$TEST_DIR/ix.log" || true)
log "$resumes resumes"
((resumes >= 1)) || fail "the partitions were never resumed"
! grep -E 'partitions resumed: [0-9]+ at the message after the last received, [1-9]' "$TEST_DIR/ix.log" ||
    fail "partitions received from resumed at their committed offset (replayed)"
! grep -E '\([1-9][0-9]* not sought\)|; [1-9][0-9]* left paused' "$TEST_DIR/ix.log" ||
    fail "partitions not sought, or left paused"
stop_all
log "PASS"
