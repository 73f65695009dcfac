#!/usr/bin/env bash
# Documents that break the mapping, and messages that are not events at all,
# go to the dead-letter index with their reasons; all others are indexed.
# SIGTERM commits; a replay by a new consumer group duplicates nothing.
source "$(dirname "$0")/indexer_lib.sh"
require_stack

export PANO_INDEXER_STATUS_FILE="$TEST_DIR/status.prom"
"$LOAD" -n 2000 -w 8 --bad 20 >"$TEST_DIR/load.log" 2>&1 || fail "kafka_load: $(cat "$TEST_DIR/load.log")"
# Not JSON, and JSON that is not an event, straight into a topic.
printf '%s\n' 'this is not json' '{"event":"kickstart.inv.end","ts":1}' |
    kcat -P -b "$KAFKA" -t "${PANO_KAFKA_TOPIC_PREFIX}kickstart" -k junk
start_indexer ix1
wait_until 120 count_is "${P}dead-letter-*" 22 ||
    fail "expected 22 dead letters, found $(count_in "${P}dead-letter-*")"
wait_until 60 count_is "$FAMILY_INDICES" 2000 ||
    fail "$(short_of "$FAMILY_INDICES" 2000)"

dl=$(es -X POST "$ES/${P}dead-letter-*/_search" -d '{"size":100}')
jq -e '[.hits.hits[]._source | select(.event_id|tostring|endswith("-bad"))
        | select(.reason|test("exitcode")) | select(.status == 400)
        | select(.original|fromjson|.exitcode == "not-a-number")] | length == 20' <<<"$dl" >/dev/null ||
    fail "mapping errors not dead-lettered with reason and original: $(jq -c '.hits.hits[0]._source' <<<"$dl")"
jq -e '[.hits.hits[]._source | select(.original == "this is not json") | select(.reason|test("invalid JSON"))] | length == 1' <<<"$dl" >/dev/null ||
    fail "invalid JSON not dead-lettered with its reason"
jq -e '[.hits.hits[]._source | select(.reason|test("event_id"))] | length == 1' <<<"$dl" >/dev/null ||
    fail "event without event_id not dead-lettered"
jq -e '[.hits.hits[]._source | select((.topic|type) == "string" and (.offset|type) == "number")] | length == 22' <<<"$dl" >/dev/null ||
    fail "dead letters without topic/offset"
# None of the bad events is in a family index.
[[ $(es -X POST "$ES/$FAMILY_INDICES/_count" -d '{"query":{"wildcard":{"event_id":"*-bad"}}}' | jq .count) == 0 ]] ||
    fail "a bad event was indexed"
# Both figures at once: the file is rewritten as batches are counted, so the
# last batch's documents may be counted a rewrite after its dead letters.
wait_until 10 bash -c "grep -q '^pano_indexer_dead_lettered_total 22$' '$PANO_INDEXER_STATUS_FILE' &&
                       grep -q '^pano_indexer_indexed_total 2000$' '$PANO_INDEXER_STATUS_FILE'" ||
    fail "status: $(grep -v '^#' "$PANO_INDEXER_STATUS_FILE")"
stop_all

# SIGTERM committed the offsets: the same group starts at the end.
start_indexer ix2
sleep 8
stop_all
grep -q "consumed 0," "$TEST_DIR/ix2.log" || fail "offsets were not committed at SIGTERM: $(grep consumed "$TEST_DIR/ix2.log" | tail -n1)"

# A new group replays everything: nothing more in any index.
PANO_INDEXER_GROUP="$TEST_ID-replay" start_indexer ix3
wait_until 120 bash -c "grep -q '^pano_indexer_consumed_total 2022$' '$PANO_INDEXER_STATUS_FILE'" ||
    fail "the replay did not consume everything"
sleep 2
stop_all
[[ $(metric "$PANO_INDEXER_STATUS_FILE" duplicates_total) == 2000 ]] || fail "replay: $(grep -v '^#' "$PANO_INDEXER_STATUS_FILE")"
count_is "${P}dead-letter-*" 22 || fail "the replay duplicated dead letters"
check_distinct "$FAMILY_INDICES" 2000
log "PASS"
