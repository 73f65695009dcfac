#!/usr/bin/env bash
# pano-query series of a gauge over runs of both shapes, with answers known by
# hand. Events are published with set timestamps (t0 = a whole second, 100 s
# ago), rss in kB, a 1 s step:
#   A  Pegasus's kickstart shape (samples without delta): start t0, samples
#      of 1000 at t0+1, t0+2, t0+3, end at t0+3.5;
#   B  the same shape, lost: start t0, samples of 2000 at t0+1 and t0+2, no end;
#   C  pano-monitor's shape (samples with delta), lost: start t0, samples of
#      500 at t0+1 (delta 500) and t0+2 (delta 0), no end.
# Every bucket holds each run's value at its last sample up to the bucket's
# end, a run counting until its last sample only:
#   t0: 0   t0+1: 3500   t0+2: 3500   t0+3: 1000   (A alone)
# and no value below zero: B and C stop counting after their last sample,
# once each, whatever their shape.
source "$(dirname "$0")/lib.sh"
require_stack
QUERY=$PANO_BUILD/query/pano-query

start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
# The samples are stored as they come (no delta made by the indexer), as a
# store written before: A and B are read by the raw path.
PANO_INDEXER_DELTA_RUNS=0 start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

WF=$(cat /proc/sys/kernel/random/uuid)
t0=$(($(date +%s) - 100))
n=0
publish() { # EVENT JOB PID TS EXTRA_JSON
    n=$((n + 1))
    local body
    body=$(jq -cn --arg ev "$1" --arg job "$2" --argjson pid "$3" --argjson ts "$4" --arg wf "$WF" \
        --arg id "$WF-$n" --argjson extra "$5" \
        '{event: $ev, ts: $ts, event_id: $id, wf_uuid: $wf, dag_job_id: $job, hostname: "node-1",
          pid: $pid, interval: 1} + $extra')
    amqp-publish -u "amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f" -e "$TEST_ID" -r "$1" -p \
        -C application/json -b "$body" || fail "cannot publish $body"
}
sample() { # RSS [DELTA]
    local s='{"utime": 0, "stime": 0, "iowait": 0, "vm": 0, "rss": '$1', "procs": 1, "threads": 1,
              "bread": 0, "bwrite": 0, "rchar": 0, "wchar": 0, "syscr": 0, "syscw": 0}'
    [[ -n ${2:-} ]] && s=$(jq -c --argjson d "$2" '. + {delta: {rss: $d}}' <<<"$s")
    echo "$s"
}
for run in A:101 B:102 C:103; do
    publish kickstart.inv.start "${run%:*}_ID1" "${run#*:}" "$t0" '{"argv": ["x"]}'
done
for k in 1 2 3; do publish kickstart.inv.online A_ID1 101 $((t0 + k)) "$(sample 1000)"; done
publish kickstart.inv.end A_ID1 101 "$((t0 + 3)).5" '{"exitcode": 0, "signal": 0, "duration": 3.5, "final": {}}'
for k in 1 2; do publish kickstart.inv.online B_ID1 102 $((t0 + k)) "$(sample 2000)"; done
publish kickstart.inv.online C_ID1 103 $((t0 + 1)) "$(sample 500 500)"
publish kickstart.inv.online C_ID1 103 $((t0 + 2)) "$(sample 500 0)"
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*/_count?q=wf_uuid:$WF' | jq .count) == $n ]]" ||
    fail "the $n events did not arrive: $(curl -fsS "$ES/$TEST_ID-*/_count?q=wf_uuid:$WF")"

"$QUERY" jobs "$WF" --json >"$TEST_DIR/jobs.json" || fail "pano-query jobs"
jq -e '[.jobs[] | {(.id): .state}] | add == {"A_ID1": "succeeded", "B_ID1": "lost", "C_ID1": "lost"}' \
    "$TEST_DIR/jobs.json" >/dev/null || fail "the runs' states: $(jq -c '[.jobs[] | [.id, .state]]' "$TEST_DIR/jobs.json")"
"$QUERY" series "$WF" --metric rss --step 1s --json >"$TEST_DIR/rss.json" || fail "pano-query series"
got=$(jq -c '[.points[] | [.[0] - '"$t0"', .[1]]]' "$TEST_DIR/rss.json")
[[ $got == '[[0,0],[1,3500],[2,3500],[3,1000]]' ]] || fail "rss series: $got, expected [[0,0],[1,3500],[2,3500],[3,1000]]"
log "rss by hand and by pano-query: $got"

# The table's TIME column shows the fractions of a second a step under 1 s needs.
"$QUERY" series "$WF" --metric rss --step 0.5s >"$TEST_DIR/rss.txt" || fail "pano-query series --step 0.5s"
sed -n '2,3p' "$TEST_DIR/rss.txt" | awk '{print $2}' | tr '\n' ' ' | grep -qE '^[0-9:]{8}\.0 [0-9:]{8}\.5 $' ||
    fail "TIME at a 0.5 s step: $(head -3 "$TEST_DIR/rss.txt")"
"$QUERY" series "$WF" --metric rss --step 1s | sed -n 2p | grep -qE ' [0-9]{2}:[0-9]{2}:[0-9]{2} ' ||
    fail "TIME at a 1 s step: $("$QUERY" series "$WF" --metric rss --step 1s | head -2)"
log "TIME: $(sed -n 2p "$TEST_DIR/rss.txt")"
