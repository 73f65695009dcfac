#!/usr/bin/env bash
# Time-partitioned indices, nothing per workflow, retention, and every
# rejected message findable:
# - workflows A (also sent with an uppercase UUID) and B land in
#   <prefix><stream>-<month of their ts>; a workflow is found by routing and
#   a term on wf_uuid; no alias exists, and every index name is a stream's
#   partition; wf_uuids such as ../_all, * or a,b go to the fallback's
#   partition, counted;
# - an event whose ts lies in an earlier month, sent twice, is stored once
#   in that month's partition; a sample older than its retention (samples
#   kept 30 days, by day, here) goes to the dead-letter index with the reason;
# - each summarized stream's summaries (pano-summary-<stream>-<period>) are
#   in the partitions of their events' periods, made ahead like the others;
# - pano-indexer --retention --dry-run lists exactly the expired partitions
#   (a summary partition with its stream's) and deletes nothing; --retention
#   deletes them and nothing else (not the
#   partitions kept forever, an unpartitioned index (<prefix><stream>) or
#   a name that only looks like a partition);
# - a message pano-bridge dead-lettered (the dead-letter topic, with its
#   headers) is in the dead-letter index once, with its reason and routing
#   key, even when the bridge sent it twice;
# - a store of the unpartitioned layout (<prefix><stream>) is read by
#   pano-query;
# - a configuration whose retention needs more shards than the cluster
#   allows is refused at start.
source "$(dirname "$0")/indexer_lib.sh"
require_stack

export PANO_INDEXER_RETENTION="0,samples=30d,custom=400d" PANO_INDEXER_PARTITION="month,samples=day"
export PANO_INDEXER_STATUS_FILE="$TEST_DIR/status.prom"
A=$(cat /proc/sys/kernel/random/uuid)
B=$(cat /proc/sys/kernel/random/uuid)
FAMS=kickstart,darshan,transfer,stampede,custom,myapp
"$LOAD" -n 60 --wf "$A" --families "$FAMS" --run-id a >/dev/null 2>&1 || fail "kafka_load A"
"$LOAD" -n 12 --wf "${A^^}" --families "$FAMS" --run-id A-upper >/dev/null 2>&1 || fail "kafka_load A upper"
"$LOAD" -n 30 --wf "$B" --families "$FAMS" --run-id b >/dev/null 2>&1 || fail "kafka_load B"
BAD='../_all * a,b _all pano-wf-x ../../etc %2e%2e'
"$LOAD" -n 0 --invalid-wf "$BAD" --run-id bad >/dev/null 2>&1 || fail "kafka_load bad"
NBAD=7
# Events of another time: 40 days ago (an earlier month), twice (a replay);
# a sample of 40 days ago, past the samples' 30 days.
now=$(date +%s)
old=$((now - 40 * 86400))
old_month=$(date -u -d "@$old" +%Y.%m)
ev_old="{\"event\":\"kickstart.inv.end\",\"ts\":$old,\"event_id\":\"$TEST_ID-old\",\"wf_uuid\":\"$A\",\"exitcode\":0}"
sample_old="{\"event\":\"kickstart.inv.online\",\"ts\":$old,\"event_id\":\"$TEST_ID-sample-old\",\"wf_uuid\":\"$A\"}"
for m in "$ev_old" "$ev_old" "$sample_old"; do
    printf '%s\t%s\n' "$A" "$m" | kcat -P -b "$KAFKA" -t "${PANO_KAFKA_TOPIC_PREFIX}kickstart" -K $'\t'
done
# A message the bridge refused, as it writes it (twice: a bridge that died
# before acking dead-letters it again).
for _ in 1 2; do
    printf 'not json at all' | kcat -P -b "$KAFKA" -t "$PANO_KAFKA_DEAD_LETTER_TOPIC" -k "odd.key" \
        -H "reason=invalid JSON: lexical error" -H "routing_key=odd.key" -H "exchange=monitoring" \
        -H "original_size=15"
done

start_indexer ix
wait_until 90 count_is "${P}*,-${P}summary-*" $((72 + 30 + NBAD + 1 + 2)) ||
    fail "$(count_in "${P}*,-${P}summary-*") documents, expected $((72 + 30 + NBAD + 1 + 2))"

# One workflow: routing and a term, whatever the case it was sent with.
r=$(es -X POST "$ES/$FAMILY_INDICES/_search?routing=$A" -d '{"size":0,"query":{"term":{"wf_uuid":"'"$A"'"}},
    "aggs":{"idx":{"terms":{"field":"_index","size":50}}}}')
[[ $(jq .hits.total.value <<<"$r") == 73 ]] || fail "workflow A: $(jq .hits.total.value <<<"$r") events, expected 72 + the old one: $(jq -c .aggregations.idx.buckets <<<"$r")"
jq -e --arg m "$old_month" '[.aggregations.idx.buckets[].key] | any(endswith("kickstart-" + $m))' <<<"$r" >/dev/null ||
    fail "the old event is not in its month's partition: $(jq -c '[.aggregations.idx.buckets[].key]' <<<"$r")"
[[ $(count_in "${P}kickstart-$old_month") -ge 1 ]] || fail "no partition ${P}kickstart-$old_month"
r=$(es -X POST "$ES/${P}*/_search" -d '{"size":0,"query":{"term":{"event_id":"'"$TEST_ID-old"'"}}}')
[[ $(jq .hits.total.value <<<"$r") == 1 ]] || fail "the replayed old event is stored $(jq .hits.total.value <<<"$r") times"
[[ $(count_in "${P}unassigned-*") == "$NBAD" ]] || fail "$(count_in "${P}unassigned-*") unassigned, expected $NBAD"
wait_until 10 bash -c "grep -q '^pano_indexer_unassigned_total $NBAD$' '$PANO_INDEXER_STATUS_FILE'" ||
    fail "unassigned not counted"
# Nothing per workflow: no alias, every name a stream's partition.
[[ -z $(curl -fsS "$ES/_cat/aliases/${P}*?h=alias") ]] || fail "aliases exist: $(curl -fsS "$ES/_cat/aliases/${P}*?h=alias")"
for idx in $(curl -fsS "$ES/_cat/indices/${P}*?h=index"); do
    [[ $idx =~ ^${P}(kickstart|samples|darshan|transfer|stampede|custom|other|unassigned|dead-letter|summary-(kickstart|stampede|darshan|transfer))-[0-9]{4}\.[0-9]{2}(\.[0-9]{2})?$ ]] ||
        fail "unexpected index $idx"
done
# Every stream's partition of now exists, made ahead of its events (the
# first batch of a period does not wait for an index to be created).
month=$(date -u +%Y.%m) day=$(date -u +%Y.%m.%d)
for s in kickstart stampede darshan transfer custom other unassigned dead-letter \
    summary-kickstart summary-stampede summary-darshan summary-transfer; do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "$ES/${P}$s-$month") == 200 ]] || fail "no partition ${P}$s-$month"
done
[[ $(curl -s -o /dev/null -w '%{http_code}' "$ES/${P}samples-$day") == 200 ]] || fail "no partition ${P}samples-$day"
# Where the events' time went, per stage.
for stage in to_kafka to_bulk bulk; do
    grep -Eq "^pano_indexer_stage_seconds_count\{stage=\"$stage\"\} [1-9]" "$PANO_INDEXER_STATUS_FILE" ||
        fail "no $stage histogram: $(grep stage_seconds_count "$PANO_INDEXER_STATUS_FILE")"
done
log "partitions by month, one workflow by routing and term, no alias, the partitions of now made ahead"

# The expired sample and the bridge's dead letter, findable with their reasons.
dl=$(es -X POST "$ES/${P}dead-letter-*/_search" -d '{"size":10}')
jq -e --arg id "$TEST_ID-sample-old" --arg wf "$A" '[.hits.hits[]._source | select(.event_id == $id)] | length == 1 and
      (.[0] | (.reason | startswith("older than the retention of stream samples")) and .wf_uuid == $wf
              and .source == "pano-indexer")' <<<"$dl" >/dev/null ||
    fail "the expired sample is not dead-lettered with its reason: $(jq -c '[.hits.hits[]._source | {event_id, reason}]' <<<"$dl")"
jq -e '[.hits.hits[]._source | select(.source == "pano-bridge")] | length == 1 and
      (.[0] | .reason == "invalid JSON: lexical error" and .routing_key == "odd.key" and .exchange == "monitoring"
              and .original == "not json at all" and .original_size == 15)' <<<"$dl" >/dev/null ||
    fail "the bridge's dead letter: $(jq -c '[.hits.hits[]._source | select(.source == "pano-bridge")]' <<<"$dl")"
wait_until 10 bash -c "grep -q '^pano_indexer_expired_total 1$' '$PANO_INDEXER_STATUS_FILE' &&
                       grep -q '^pano_indexer_bridge_dead_letters_total 2$' '$PANO_INDEXER_STATUS_FILE'" ||
    fail "expired and bridge dead letters not counted: $(grep -E 'expired|bridge' "$PANO_INDEXER_STATUS_FILE")"
log "an expired sample and the bridge's dead letter (sent twice) are in the dead-letter index once"

# Retention: expired partitions go, nothing else.
for idx in "${P}samples-2020.01" "${P}samples-2020.02.03" "${P}kickstart-2020.01" "${P}samples" "${P}samples-old" \
    "${P}summary-kickstart-2020.01" "${P}summary-samples-2020.01" "${P}custom-2020.01"; do
    es -X PUT "$ES/$idx" -d '{"settings":{"number_of_replicas":0}}' >/dev/null || fail "cannot create $idx"
done
listed=$("$INDEXER" --retention --dry-run 2>"$TEST_DIR/dry.log" | sort | tr '\n' ' ') ||
    fail "--retention --dry-run failed: $(cat "$TEST_DIR/dry.log")"
[[ $listed == "${P}custom-2020.01 ${P}samples-2020.01 ${P}samples-2020.02.03 " ]] || fail "--dry-run listed '$listed'"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$ES/${P}samples-2020.01") == 200 ]] || fail "--dry-run deleted an index"
"$INDEXER" --retention >"$TEST_DIR/retention.log" 2>&1 || fail "--retention failed: $(cat "$TEST_DIR/retention.log")"
for idx in "${P}samples-2020.01" "${P}samples-2020.02.03" "${P}custom-2020.01"; do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "$ES/$idx") == 404 ]] || fail "$idx not deleted"
done
for idx in "${P}kickstart-2020.01" "${P}samples" "${P}samples-old" "${P}kickstart-$old_month" \
    "${P}summary-kickstart-2020.01" "${P}summary-kickstart-$old_month" "${P}summary-samples-2020.01"; do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "$ES/$idx") == 200 ]] || fail "$idx deleted"
done
grep -q "3 indices deleted" "$TEST_DIR/retention.log" || fail "--retention: $(cat "$TEST_DIR/retention.log")"
log "--retention deleted exactly the expired partitions"

# pano-query reads only the partitions of the workflow's span (September and
# October here), not the other ones of the stream (2020.01 made above): its
# events (read without the summaries here).
# Its summaries likewise (the summaries of the span's months, by name).
"$PANO_BUILD/query/pano-query" jobs "$A" --log-level debug >/dev/null 2>"$TEST_DIR/query.log" ||
    fail "pano-query jobs: $(tail -3 "$TEST_DIR/query.log")"
pit=$(grep -o 'POST /[^ ]*summary-kickstart-[^ ]*_pit[^ ]*' "$TEST_DIR/query.log" | head -n 1 | cut -d' ' -f2)
[[ $pit == *"${P}summary-kickstart-$old_month"* && $pit != *2020* && $pit != *-\** ]] ||
    fail "pano-query's summaries outside the span, or none: '$pit'"
"$PANO_BUILD/query/pano-query" jobs "$A" --log-level debug --set pano.query.summaries=false >/dev/null \
    2>"$TEST_DIR/query.log" || fail "pano-query jobs: $(tail -3 "$TEST_DIR/query.log")"
path=$(grep -o 'POST /[^ ]*kickstart-[0-9][^ ]*' "$TEST_DIR/query.log" | head -n 1 | cut -d' ' -f2)
[[ -n $path ]] || fail "pano-query named no kickstart partition: $(grep POST "$TEST_DIR/query.log")"
grep -q "${P}kickstart-2020\|kickstart-\*" <<<"$path" && fail "pano-query read partitions outside the span: $path"
shards=$(es -X POST "$ES$path" -d '{"size":0}' | jq ._shards.total)
[[ $shards == 2 ]] || fail "the span's request touched $shards shards, not 2 (one per month): $path"
all=$(es -X POST "$ES/${P}kickstart-*/_search?routing=$A" -d '{"size":0}' | jq ._shards.total)
((all > shards)) || fail "the stream has no other partition to leave out ($all shards)"
log "pano-query touched $shards shards for the workflow's two months ($all for every partition of the stream)"
stop_all

# A store of the unpartitioned layout (<prefix><stream>): pano-query reads it.
OLD=$(cat /proc/sys/kernel/random/uuid)
es -X PUT "$ES/${P}stampede" -d '{"settings":{"number_of_replicas":0},"mappings":{"properties":{
    "wf_uuid":{"type":"keyword"},"event":{"type":"keyword"},"ts":{"type":"double"},
    "event_id":{"type":"keyword"},"@timestamp":{"type":"date"}}}}' >/dev/null || fail "cannot make an old index"
es -X PUT "$ES/${P}stampede/_doc/old-1?routing=$OLD&refresh=true" -d '{"event":"stampede.xwf.start","ts":1600000000,
    "event_id":"old-1","wf_uuid":"'"$OLD"'","@timestamp":"2020-09-13T12:26:40Z"}' >/dev/null || fail "cannot index an old document"
"$PANO_BUILD/query/pano-query" status "$OLD" --json >"$TEST_DIR/old.json" 2>"$TEST_DIR/old.err" ||
    fail "pano-query cannot read the unpartitioned layout: $(cat "$TEST_DIR/old.err")"
jq -e '.first_event == 1600000000' "$TEST_DIR/old.json" >/dev/null || fail "old workflow: $(cat "$TEST_DIR/old.json")"
log "an unpartitioned store: read by pano-query"

# More shards than the cluster allows within the retention: refused.
rc=0
PANO_INDEXER_RETENTION="10y" PANO_INDEXER_PARTITION=day PANO_INDEXER_GROUP="$TEST_ID-big" \
    timeout 60 "$INDEXER" >"$TEST_DIR/big.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "more than the .* the cluster allows" "$TEST_DIR/big.log" ||
    fail "a retention beyond the shard limit was not refused (exit $rc): $(tail -3 "$TEST_DIR/big.log")"
# Replicas that are neither auto nor a number: refused at start.
rc=0
PANO_INDEXER_REPLICAS=two timeout 60 "$INDEXER" >"$TEST_DIR/replicas.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "pano.indexer.replicas 'two': use auto or a number" "$TEST_DIR/replicas.log" ||
    fail "replicas 'two' not refused (exit $rc): $(tail -3 "$TEST_DIR/replicas.log")"
log "PASS"
