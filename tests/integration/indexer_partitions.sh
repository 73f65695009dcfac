#!/usr/bin/env bash
# The alias <prefix>wf-<uuid> returns exactly one workflow's events from
# every family, whatever the case of its wf_uuid; the per-workflow layout
# too; a wf_uuid such as ../_all, * or a,b never reaches an index or alias
# name (those events are in the fallback index, counted).
source "$(dirname "$0")/indexer_lib.sh"
require_stack

A=$(cat /proc/sys/kernel/random/uuid)
B=$(cat /proc/sys/kernel/random/uuid)
FAMS=kickstart,darshan,transfer,stampede,custom,myapp
"$LOAD" -n 60 --wf "$A" --families "$FAMS" --run-id a >/dev/null 2>&1 || fail "kafka_load A"
"$LOAD" -n 12 --wf "${A^^}" --families "$FAMS" --run-id A-upper >/dev/null 2>&1 || fail "kafka_load A upper"
"$LOAD" -n 30 --wf "$B" --families "$FAMS" --run-id b >/dev/null 2>&1 || fail "kafka_load B"
BAD='../_all * a,b _all pano-wf-x ../../etc %2e%2e'
"$LOAD" -n 0 --invalid-wf "$BAD" --run-id bad >/dev/null 2>&1 || fail "kafka_load bad"
NBAD=7

check_layout() { # PREFIX
    local p=$1 idx
    wait_until 90 count_is "${p}wf-$A" 72 || fail "$p: alias of A has $(count_in "${p}wf-$A"), expected 72"
    wait_until 30 count_is "${p}wf-$B" 30 || fail "$p: alias of B has $(count_in "${p}wf-$B"), expected 30"
    wait_until 30 count_is "${p}unassigned" "$NBAD" || fail "$p: $(count_in "${p}unassigned") unassigned, expected $NBAD"
    # Only A's events, from every family (six indices).
    local r
    r=$(es -X POST "$ES/${p}wf-$A/_search" -d '{"size":0,"aggs":{"wf":{"terms":{"field":"wf_uuid"}},"idx":{"terms":{"field":"_index","size":50}}}}')
    jq -e --arg a "$A" '.aggregations.wf.buckets | length == 1 and .[0].key == $a and .[0].doc_count == 72' <<<"$r" >/dev/null ||
        fail "$p: alias of A: $(jq -c .aggregations.wf <<<"$r")"
    [[ $(jq '.aggregations.idx.buckets | length' <<<"$r") == 6 ]] || fail "$p: alias of A spans $(jq -c '[.aggregations.idx.buckets[].key]' <<<"$r")"
    # Every name in the cluster that starts with the prefix is one we expect.
    for idx in $(curl -fsS "$ES/_cat/indices/${p}*?h=index") $(curl -fsS "$ES/_cat/aliases/${p}*?h=alias"); do
        [[ $idx =~ ^${p}(kickstart|darshan|transfer|stampede|custom|other|unassigned|dead-letter)(-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?$ ||
           $idx =~ ^${p}wf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] ||
            fail "$p: unexpected name $idx"
    done
    [[ $(curl -fsS "$ES/_cat/aliases/${p}*?h=alias" | sort -u | wc -l) == 2 ]] || fail "$p: not exactly two aliases"
}

export PANO_INDEXER_STATUS_FILE="$TEST_DIR/status.prom"
start_indexer shared
check_layout "$P"
[[ $(curl -fsS "$ES/_cat/indices/${P}*-*-*?h=index" | grep -c -- "-$A") == 0 ]] || fail "shared layout made per-workflow indices"
wait_until 10 bash -c "grep -q '^pano_indexer_unassigned_total $NBAD$' '$PANO_INDEXER_STATUS_FILE'" ||
    fail "unassigned not counted: $(grep unassigned "$PANO_INDEXER_STATUS_FILE")"
log "shared layout OK"

# The per-workflow layout: a second prefix and group over the same topics.
PANO_INDEXER_LAYOUT=per-workflow PANO_INDEXER_INDEX_PREFIX="${P}pw-" PANO_INDEXER_GROUP="$TEST_ID-pw" \
    PANO_INDEXER_STATUS_FILE="$TEST_DIR/pw.prom" start_indexer perwf
check_layout "${P}pw-"
for f in kickstart darshan transfer stampede custom other; do
    [[ $(count_in "${P}pw-$f-$A") -gt 0 ]] || fail "no index ${P}pw-$f-$A"
    [[ $(count_in "${P}pw-$f-$B") -gt 0 ]] || fail "no index ${P}pw-$f-$B"
done
log "per-workflow layout OK"
stop_all
log "PASS"
