#!/usr/bin/env bash
# Real Pegasus runs through the real pipeline (tests/data/pegasus: five runs
# replayed by the real pegasus-monitord), published as monitord's AMQP sink
# publishes (the JSON body, the event name as routing key): every event is
# accepted (none dead-lettered), the static events stay with their workflow
# whatever their ts, and pano-query's figures equal those pegasus-statistics
# and pegasus-status printed for the same runs.
source "$(dirname "$0")/lib.sh"
require_stack
: "${PANO_SOURCE:?}"
QUERY=$PANO_BUILD/query/pano-query
DATA=$PANO_SOURCE/tests/data/pegasus
URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f"

start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

samples=(process_wf_success process_wf_failure sample_wf_held hierarchical_wf_success hierarchical_wf_failure)
total=0
for s in "${samples[@]}"; do
    while IFS= read -r line; do
        amqp-publish -u "$URL" -e "$TEST_ID" -r "$(jq -r .event <<<"$line")" -p -C application/json \
            -b "$line" || fail "cannot publish an event of $s"
    done <"$DATA/$s/events.jsonl"
    total=$((total + $(wc -l <"$DATA/$s/events.jsonl")))
done
log "published $total events of ${#samples[@]} runs"
EVENTS="$TEST_ID-*,-$TEST_ID-summary-*" # every event, not the summaries
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$EVENTS/_count' | jq .count) -ge $total ]]" ||
    fail "$(curl -fsS "$ES/$EVENTS/_count" | jq .count) of $total events indexed; dead letters: $(curl -fsS "$ES/$TEST_ID-dead-letter-*/_search?size=3" | jq -c '[.hits.hits[]?._source.reason]')"
es -X POST "$ES/$TEST_ID-*/_refresh" >/dev/null
dead=$(curl -fsS "$ES/$TEST_ID-dead-letter-*/_count" | jq '.count // 0')
[[ $dead == 0 ]] || fail "$dead events dead-lettered: $(curl -fsS "$ES/$TEST_ID-dead-letter-*/_search?size=5" | jq -c '[.hits.hits[]._source.reason]')"
[[ $(curl -fsS "$ES/$EVENTS/_count" | jq .count) == "$total" ]] || fail "not every event indexed exactly once"
grep -q "dead-lettering" "$TEST_DIR/bridge.log" && fail "the bridge dead-lettered Pegasus events: $(grep dead-lettering "$TEST_DIR/bridge.log" | head -3)"

# The static events, whatever their ts, are stored with their workflow, at
# the time their (sub-)workflow was planned.
for s in "${samples[@]}"; do
    root=$(head -n 1 "$DATA/$s/events.jsonl" | jq -r .root_xwf_id)
    n_static=$(jq -c 'select(.ts == null or .ts < 946684800)' "$DATA/$s/events.jsonl" | wc -l)
    found=$(curl -fsS "$ES/$TEST_ID-*/_count?q=root_xwf_id:$root+AND+_exists_:ts_source" | jq .count)
    [[ $found == "$n_static" ]] || fail "$s: $found events with ts_source, $n_static sent without a usable ts"
    curl -fsS "$ES/$TEST_ID-*/_search?q=root_xwf_id:$root+AND+_exists_:ts_source&size=500" |
        jq -e '[.hits.hits[]._source | .ts == .wf_ts and .ts_source == "wf_ts"] | all' >/dev/null ||
        fail "$s: static events not at their workflow's planning time (wf_ts)"
done

# pano-query against pegasus-statistics and pegasus-status
csv() { grep -v '^#' "$1" | tr -d '\r' | awk -F, -v row="$2" -v col="$3" 'NR > 0 && $1 == row { print $col }'; }
for s in "${samples[@]}"; do
    root=$(head -n 1 "$DATA/$s/events.jsonl" | jq -r .root_xwf_id)
    "$QUERY" stats "$root" --json >"$TEST_DIR/$s.json" 2>>"$TEST_DIR/query.log" ||
        fail "$s: pano-query stats failed: $(tail -2 "$TEST_DIR/query.log")"
    summary=$DATA/$s/expected/summary.csv
    for row in Jobs Tasks Sub-Workflows; do
        key=$(tr 'A-Z-' 'a-z_' <<<"$row")
        want=$(printf '%s,%s,%s,%s,%s,%s' "$(csv "$summary" "$row" 2)" "$(csv "$summary" "$row" 3)" \
            "$(csv "$summary" "$row" 4)" "$(csv "$summary" "$row" 5)" "$(csv "$summary" "$row" 6)" \
            "$(csv "$summary" "$row" 7)")
        got=$(jq -r --arg k "$key" '.[$k] | [.succeeded, .failed, .incomplete, .total, .retries, .total_with_retries] | map(tostring) | join(",")' "$TEST_DIR/$s.json")
        [[ $got == "$want" ]] || fail "$s $row (succeeded,failed,incomplete,total,retries,total+retries): pano-query $got, pegasus-statistics $want"
    done
    times=$DATA/$s/expected/summary-time.csv
    for stat in workflow_wall_time workflow_cumulative_job_wall_time cumulative_job_walltime_from_submit_side \
        workflow_cumulative_badput_time cumulative_job_badput_walltime_from_submit_side; do
        want=$(csv "$times" "$stat" 2)
        got=$(jq -r --arg k "$stat" '.[$k] // "none"' "$TEST_DIR/$s.json")
        awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(a != "none" && d * d < 1e-6) }' ||
            fail "$s $stat: pano-query $got, pegasus-statistics $want"
    done
    status=$DATA/$s/expected/status.json
    jq -e --slurpfile want "$status" '.status as $g | $want[0].totals as $w
        | $g.succeeded == $w.succeeded and $g.failed == $w.failed and $g.total == $w.total
          and $g.percent_done == $w.percent_done and $g.state == $want[0].dags.root.state' "$TEST_DIR/$s.json" >/dev/null ||
        fail "$s status: pano-query $(jq -c .status "$TEST_DIR/$s.json"), pegasus-status $(jq -c '.totals + {state: .dags.root.state}' "$status")"
    # the transformation breakdown (the "ALL" table: the workflow and its sub-workflows),
    # to the 3 decimals pegasus-statistics prints
    while IFS=, read -r _ _ tr type count min max mean total mmin mmax mmean cmin cmax cmean; do
        jq -e --arg tr "$tr" --arg type "$type" --argjson count "$count" \
            --arg rt "$min $max $mean $total" --arg mem "$mmin $mmax $mmean" --arg cpu "$cmin $cmax $cmean" '
            def near($a; $b; $d): ($b == "-" and $a == null) or ($a != null and $b != "-" and (($a - ($b | rtrimstr("%") | tonumber)) | fabs) <= $d);
            ($rt | split(" ")) as $r | ($mem | split(" ")) as $m | ($cpu | split(" ")) as $c
            | [.breakdown[] | select(.transformation == $tr and .type == $type)] | length == 1 and (.[0] |
                .count == $count and near(.runtime.min; $r[0]; 0.0011) and near(.runtime.max; $r[1]; 0.0011)
                and near(.runtime.mean; $r[2]; 0.0011) and near(.runtime.total; $r[3]; 0.0011)
                and near(.memory_mib.min; $m[0]; 0.0011) and near(.memory_mib.max; $m[1]; 0.0011)
                and near(.memory_mib.mean; $m[2]; 0.0011) and near(.avg_cpu_percent.min; $c[0]; 0.011)
                and near(.avg_cpu_percent.max; $c[1]; 0.011) and near(.avg_cpu_percent.mean; $c[2]; 0.011))' \
            "$TEST_DIR/$s.json" >/dev/null ||
            fail "$s breakdown $tr $type: pano-query $(jq -c --arg tr "$tr" --arg type "$type" '.breakdown[] | select(.transformation == $tr and .type == $type)' "$TEST_DIR/$s.json"), pegasus-statistics $count $min $max $mean $total $mmin $mmax $mmean $cmin $cmax $cmean"
    done < <(grep '^ALL,' "$DATA/$s/expected/breakdown.csv" | tr -d '\r')
    [[ $(jq '.breakdown | length' "$TEST_DIR/$s.json") == $(grep -c '^ALL,' "$DATA/$s/expected/breakdown.csv") ]] ||
        fail "$s breakdown: $(jq '.breakdown | length' "$TEST_DIR/$s.json") rows, pegasus-statistics $(grep -c '^ALL,' "$DATA/$s/expected/breakdown.csv")"
    log "$s: as pegasus-statistics and pegasus-status"
done

# The workflows list: each run's state from its end event; no run counts for
# workflows known only from monitord (they take the per-job reading above).
"$QUERY" workflows --since 3650d --json >"$TEST_DIR/workflows.json" 2>>"$TEST_DIR/query.log" ||
    fail "pano-query workflows failed"
for s in "${samples[@]}"; do
    root=$(head -n 1 "$DATA/$s/events.jsonl" | jq -r .root_xwf_id)
    want=$(jq -r '.dags.root.state | if . == "Success" then "succeeded" else "failed" end' "$DATA/$s/expected/status.json")
    jq -e --arg wf "$root" --arg state "$want" '.[] | select(.wf_uuid == $wf)
        | .state == $state and .runs == null and .succeeded == null and .failed == null' \
        "$TEST_DIR/workflows.json" >/dev/null ||
        fail "$s in the workflows list: $(jq -c --arg wf "$root" '.[] | select(.wf_uuid == $wf)' "$TEST_DIR/workflows.json")"
done
"$QUERY" workflows --since 3650d | grep -q -- "failed .* -  *-  *-  *-$" || fail "the workflows table does not show - for unknown counts"
stop_all
log "PASS"
