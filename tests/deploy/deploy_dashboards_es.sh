#!/usr/bin/env bash
# The dashboards against real data: a small workflow runs through the real
# pipeline (pano-monitor, pano-transfer, pano-darshan -> RabbitMQ ->
# pano-bridge -> Kafka -> pano-indexer -> Elasticsearch), then
#  1. every field the saved objects use is checked against the index
#     templates pano-indexer installed (GET _index_template), and
#  2. the Elasticsearch request behind every panel (deploy/kibana/queries.json,
#     generated from the same source as the saved objects) runs against the
#     test's indices and must return buckets with values.
# A panel whose event has no schema in this tree yet (its publisher is not
# merged) is reported and skipped.
source "$(dirname "$0")/../integration/lib.sh"
: "${PANO_SOURCE:?}"
require_stack

trap 'rc=$?; curl -fsS -X DELETE "$ES/_index_template/$TEST_ID-*" >/dev/null 2>&1 || true; set +e; (exit $rc); cleanup' EXIT

WF=$(cat /proc/sys/kernel/random/uuid)
export PEGASUS_WF_UUID=$WF PEGASUS_WF_LABEL=deploy-demo KICKSTART_MON_INTERVAL=0.2
start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

work=$TEST_DIR/work
mkdir -p "$work"
monitor=$PANO_BUILD/publishers/monitor/pano-monitor
expected=0
# A writer, a reader (a few seconds each, so the samples span several
# one-second buckets) and a job that fails.
PEGASUS_DAG_JOB_ID=write_ID01 CONDOR_JOBID=1.0 "$monitor" -- sh -c \
    "for i in 1 2 3 4; do head -c 8000000 /dev/urandom > '$work/f'\$i; sleep 0.7; done" ||
    fail "the writer failed"
PEGASUS_DAG_JOB_ID=read_ID02 CONDOR_JOBID=2.0 "$monitor" -- sh -c \
    "for i in 1 2 3 4; do cat '$work/f'\$i > /dev/null; sha256sum '$work/f'\$i >/dev/null; sleep 0.7; done" ||
    fail "the reader failed"
rc=0
PEGASUS_DAG_JOB_ID=fail_ID03 CONDOR_JOBID=3.0 "$monitor" -- sh -c 'sleep 1; exit 3' || rc=$?
[[ $rc == 3 ]] || fail "the failing job exited $rc, not 3"
expected=$((expected + 6))

if [[ -x $PANO_BUILD/publishers/transfer/pano-transfer ]]; then
    transfer=$PANO_BUILD/publishers/transfer/pano-transfer
    PEGASUS_DAG_JOB_ID=stage_in_ID04 "$transfer" copy "$work/f1" "$work/copy1" || fail "pano-transfer copy failed"
    PEGASUS_DAG_JOB_ID=stage_in_ID04 "$transfer" copy "$work/f2" "$work/copy2" || fail "pano-transfer copy failed"
    PEGASUS_DAG_JOB_ID=stage_in_ID05 "$transfer" copy -r 0 "$work/missing" "$work/copy3" &&
        fail "copying a missing file succeeded"
    expected=$((expected + 6))
fi
if [[ -x $PANO_BUILD/publishers/darshan/pano-darshan ]]; then
    # two logs with POSIX and STDIO data (tests/data/darshan*)
    n=0
    for name in mpi-io-test-x86_64-3.5.0.darshan nonmpi_workflow_main.darshan; do
        log=$(ls "$PANO_FIXTURES"/darshan*/"$name" 2>/dev/null | head -n1)
        [[ -n $log ]] || fail "fixture $name not found under $PANO_FIXTURES/darshan*"
        PEGASUS_DAG_JOB_ID=mpi_io_ID0$((6 + n)) "$PANO_BUILD/publishers/darshan/pano-darshan" "$log" ||
            fail "pano-darshan $log failed"
        n=$((n + 1))
    done
    expected=$((expected + n))
fi

# Everything indexed (start/end of each job at least; samples arrive with them).
wait_until 60 bash -c "[[ \$(curl -fsS -H 'Content-Type: application/json' -X POST '$ES/$TEST_ID-*/_count' \
    -d '{\"query\":{\"bool\":{\"filter\":[{\"term\":{\"wf_uuid\":\"$WF\"}},{\"query_string\":{\"query\":\"NOT event:kickstart.inv.online\"}}]}}}' | jq .count) -ge $expected ]]" ||
    fail "fewer than $expected events of workflow $WF indexed: $(es_count "wf_uuid:\"$WF\"")"
sleep 2 # the last samples, and one refresh interval
curl -fsS -X POST "$ES/$TEST_ID-*/_refresh" >/dev/null
log "indexed: $(es_count "wf_uuid:\"$WF\"") events of workflow $WF"

# 1. Fields against the templates the indexer installed.
es "$ES/_index_template/$TEST_ID-*" >"$TEST_DIR/templates.json"
jq -e '.index_templates | length > 0' "$TEST_DIR/templates.json" >/dev/null || fail "pano-indexer installed no index template"
# Panels of events that have no schema in this tree are left out (below too).
skip_events=$(jq -r '.[].event' "$PANO_SOURCE/deploy/kibana/queries.json" | sort -u |
    while read -r e; do [[ -f $PANO_SOURCE/schemas/events/$e.schema.json ]] || printf '%s ' "$e"; done)
if jq -e '[.index_templates[].index_template._meta.generator // "" | test("schemas")] | any' "$TEST_DIR/templates.json" >/dev/null; then
    SKIP_EVENTS=$skip_events PANO_SOURCE=$PANO_SOURCE bash "$PANO_SOURCE/tests/deploy/check_fields.sh" "$TEST_DIR/templates.json" "$TEST_ID-" ||
        fail "dashboard fields do not fit the installed index templates"
else
    log "NOTE: this pano-indexer installs templates that are not generated from schemas/: field check skipped"
fi

# 2. Each panel's request on this workflow's events.
# The integ-test Elasticsearch lacks the aggregations module (derivative):
# there, a derivative becomes serial_diff with lag 1 (the same difference of
# consecutive buckets) divided by the bucket length.
probe='{"size":0,"aggs":{"h":{"date_histogram":{"field":"@timestamp","fixed_interval":"1s"},"aggs":{"m":{"max":{"field":"ts"}},"d":{"derivative":{"buckets_path":"m"}}}}}}'
has_derivative=1
es -X POST "$ES/$TEST_ID-*/_search" -d "$probe" >/dev/null 2>&1 || has_derivative=0
((has_derivative)) || log "this Elasticsearch has no derivative aggregation: rates are checked with serial_diff"

passed=0 skipped=0 failed=0
n=$(jq length "$PANO_SOURCE/deploy/kibana/queries.json")
for ((i = 0; i < n; i++)); do
    q=$(jq -c ".[$i]" "$PANO_SOURCE/deploy/kibana/queries.json")
    id=$(jq -r .id <<<"$q")
    event=$(jq -r .event <<<"$q")
    if [[ ! -f $PANO_SOURCE/schemas/events/$event.schema.json ]]; then
        log "SKIP $id: no schema for $event in this tree (its publisher is not merged)"
        skipped=$((skipped + 1))
        continue
    fi
    index=$(jq -r '.index | split(",") | map(sub("^pano-"; "'"$TEST_ID"'-")) | join(",")' <<<"$q")
    body=$(jq -c --arg wf "$WF" --argjson deriv "$has_derivative" '
        .body
        | .query.bool.filter += [{term: {wf_uuid: $wf}}]
        | (.. | objects | select(has("date_histogram")) | .date_histogram.fixed_interval) |= "1s"
        | if $deriv == 1 then . else
            (.. | objects | select(has("derivative"))) |= {serial_diff: {buckets_path: .derivative.buckets_path, lag: 1}}
          end' <<<"$q")
    if ! answer=$(es -X POST "$ES/$index/_search" -d "$body" 2>&1); then
        log "FAIL $id: the request failed: $answer"
        failed=$((failed + 1))
        continue
    fi
    # Values: every metric of the innermost buckets (doc_count for count-only
    # panels); a panel has data when some bucket has a number for each metric.
    verdict=$(jq -r --argjson body "$body" '
        def leaves: if type == "object" then
            (if has("buckets") then .buckets[] | leaves
             else . as $b | [to_entries[] | select(.value | type == "object" and has("buckets")) | .value] as $subs
                  | if ($subs | length) > 0 then $subs[] | leaves else $b end end)
          else empty end;
        def value: if type != "object" then null
          elif has("hits") then (.hits.hits[0].fields // {} | to_entries[0].value[0] // null)
          elif has("value") then .value else null end;
        [.aggregations | leaves
         | . as $b | [to_entries[] | select(.key | test("^m[0-9]+$")) | .value | value] as $vals
         | {count: $b.doc_count, vals: $vals}
         | select(.count > 0 and (.vals | all(. != null)))] as $good
        # and not only zeros: some bucket has a count or a metric that is not 0
        | ([$good[] | (.vals | map(select(type != "number" or . != 0)) | length > 0) or (.vals == [] and .count > 0)] | any) as $nonzero
        | if ($good | length) == 0 then "no bucket with a value for every metric"
          elif ($nonzero | not) then "every value is 0"
          else "ok \($good | length) buckets, e.g. \([$good[] | select(.vals | any(type != "number" or . != 0))] | (last // $good[-1]) | .vals | map(tostring) | join(", "))" end' <<<"$answer")
    if [[ $verdict == ok* ]]; then
        log "PASS $id: ${verdict#ok }"
        passed=$((passed + 1))
    else
        log "FAIL $id: $verdict; answer: $(head -c 600 <<<"$answer")"
        failed=$((failed + 1))
    fi
done
stop_all
log "panels: $passed with data, $failed without, $skipped skipped"
((failed == 0)) || fail "$failed panel(s) returned no data"
((passed > 0)) || fail "no panel could be checked"
log "PASS"
