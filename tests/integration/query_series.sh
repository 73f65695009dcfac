#!/usr/bin/env bash
# pano-query series of a gauge (rss, kB) over runs of both shapes, with
# answers known by hand: each bucket's mean (the summed gauge averaged over
# the bucket, each level weighted by the time it held) and peak (its highest
# level). Events are published with set timestamps; t0 is a multiple of 60 s,
# 2 to 3 minutes ago, so that every step below starts a bucket at t0.
#
# Workflow 1, runs of both shapes that end or are lost:
#   A  Pegasus's kickstart shape (samples without delta): start t0, samples
#      of 1000 at t0+1, t0+2, t0+3, end at t0+3.5;
#   B  the same shape, lost: start t0, samples of 2000 at t0+1 and t0+2;
#   C  pano-monitor's shape (samples with delta), lost: start t0, samples of
#      500 at t0+1 (delta 500) and t0+2 (delta 0).
#   So the level is 3500 over [t0+1, t0+2), then 1000 (A alone: B and C stop
#   at their last sample, once each) until t0+3.5, then 0.
#   1 s step:  t0: 0/0   t0+1: 3500/3500   t0+2: 1000/1000   t0+3: 500/1000
#   3 s step:  t0: mean (2 s of A + 1 s of B + 1 s of C) = (2000 + 2000 + 500) / 3
#                  = 1500, peak 3500;
#              t0+3: mean 1000 * 0.5 / 3 = 166.667, peak 1000
# Workflows 2 and 3, a short job beside a long one at a 2 s step: L holds
#   213 MiB (218112 kB) from t0 to t0+4, S 113 MiB (115712 kB) from t0+0.6
#   to t0+1.4, 0.8 s; both of pano-monitor's shape in workflow 2 (their last
#   sample at 0 ends them), L of kickstart's shape in workflow 3 (its end
#   event ends it):
#   t0:   mean 218112 + 115712 * 0.8 / 2 = 264396.8 (258.2 MiB),
#         peak 218112 + 115712 = 333824 (326 MiB)
#   t0+2: 218112/218112   t0+4: 0/0
# Workflow 4, a job of 3.1 MiB (3174 kB) sampled every 0.2 s from t0+0.1 to
#   t0+0.9, ended at t0+1, at a 0.2 s step: half of the first bucket, then
#   whole ones: t0: 1587/3174, t0+0.2 ... t0+0.8: 3174/3174, t0+1: 0/0; the
#   same for T1 (kickstart's shape) and T2 (pano-monitor's). And R, of
#   kickstart's shape, climbing: 0, 1000, 2000, 3000, 4000 at t0+0.1 ... t0+0.9
#   (every 0.2 s), ended at t0+1; at a 1 s step its five samples share a
#   bucket, read as the first, the mean of the three between from the
#   second's time, and the last (exact for samples evenly spaced):
#   t0: mean 1000 * 0.2 + 2000 * 0.2 + 3000 * 0.2 + 4000 * 0.1 = 1600, peak 4000;
#   t0+1: 0/0.
source "$(dirname "$0")/lib.sh"
require_stack
QUERY=$PANO_BUILD/query/pano-query

start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
# The samples are stored as they come (no delta made by the indexer), as a
# store written before: A and B are read by the raw path.
PANO_INDEXER_DELTA_RUNS=0 start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

t0=$((($(date +%s) - 100) / 60 * 60))
n=0
publish() { # EVENT JOB PID TS EXTRA_JSON (into workflow $WF)
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
at() { awk -v t="$t0" -v s="$1" 'BEGIN { printf "%.1f", t + s }'; } # t0 + s seconds
end_event() { publish kickstart.inv.end "$1" "$2" "$(at "$3")" '{"exitcode": 0, "signal": 0, "duration": 1, "final": {}}'; }
# run_raw JOB PID RSS END TIMES...: kickstart's shape, samples of RSS, ended at END
run_raw() {
    local job=$1 pid=$2 rss=$3 end=$4 t
    publish kickstart.inv.start "$job" "$pid" "$t0" '{"argv": ["x"]}'
    for t in "${@:5}"; do publish kickstart.inv.online "$job" "$pid" "$(at "$t")" "$(sample "$rss")"; done
    end_event "$job" "$pid" "$end"
}
# run_delta JOB PID RSS END TIMES...: pano-monitor's shape, its last sample
# (at END) back at 0
run_delta() {
    local job=$1 pid=$2 rss=$3 end=$4 t d=$3
    publish kickstart.inv.start "$job" "$pid" "$t0" '{"argv": ["x"]}'
    for t in "${@:5}"; do publish kickstart.inv.online "$job" "$pid" "$(at "$t")" "$(sample "$rss" $d)"; d=0; done
    publish kickstart.inv.online "$job" "$pid" "$(at "$end")" "$(sample 0 "-$rss")"
    end_event "$job" "$pid" "$end"
}

WF1=$(cat /proc/sys/kernel/random/uuid) WF2=$(cat /proc/sys/kernel/random/uuid)
WF3=$(cat /proc/sys/kernel/random/uuid) WF4=$(cat /proc/sys/kernel/random/uuid)
WF=$WF1
for run in A:101 B:102 C:103; do
    publish kickstart.inv.start "${run%:*}_ID1" "${run#*:}" "$t0" '{"argv": ["x"]}'
done
for k in 1 2 3; do publish kickstart.inv.online A_ID1 101 $((t0 + k)) "$(sample 1000)"; done
end_event A_ID1 101 3.5
for k in 1 2; do publish kickstart.inv.online B_ID1 102 $((t0 + k)) "$(sample 2000)"; done
publish kickstart.inv.online C_ID1 103 $((t0 + 1)) "$(sample 500 500)"
publish kickstart.inv.online C_ID1 103 $((t0 + 2)) "$(sample 500 0)"
WF=$WF2
run_delta L_ID1 201 218112 4 0 1 2 3
run_delta S_ID1 202 115712 1.4 0.6 0.8 1.0 1.2
WF=$WF3
run_raw L_ID1 301 218112 4 0 1 2 3
run_delta S_ID1 302 115712 1.4 0.6 0.8 1.0 1.2
WF=$WF4
run_raw T1_ID1 401 3174 1 0.1 0.3 0.5 0.7 0.9
run_delta T2_ID1 402 3174 1 0.1 0.3 0.5 0.7 0.9
publish kickstart.inv.start R_ID1 403 "$t0" '{"argv": ["x"]}'
for k in 0 1 2 3 4; do publish kickstart.inv.online R_ID1 403 "$(at "0.$((2 * k + 1))")" "$(sample $((1000 * k)))"; done
end_event R_ID1 403 1
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*,-$TEST_ID-summary-*/_count' | jq .count) == $n ]]" ||
    fail "the $n events did not arrive: $(curl -fsS "$ES/$TEST_ID-*,-$TEST_ID-summary-*/_count")"
wait_until 30 es_summarized_is "$n" || fail "the summaries hold $(es_summarized) of the $n events"
dead=$(curl -fsS "$ES/$TEST_ID-dead-letter-*/_search?size=1" | jq -c '[.hits.total.value, .hits.hits[0]._source.reason]')
[[ $dead == '[0,null]' ]] || fail "events refused (count, first reason): $dead"

"$QUERY" jobs "$WF1" --json >"$TEST_DIR/jobs.json" || fail "pano-query jobs"
jq -e '[.jobs[] | {(.id): .state}] | add == {"A_ID1": "succeeded", "B_ID1": "lost", "C_ID1": "lost"}' \
    "$TEST_DIR/jobs.json" >/dev/null || fail "the runs' states: $(jq -c '[.jobs[] | [.id, .state]]' "$TEST_DIR/jobs.json")"

# expect WF STEP WANT [--job JOB]: the rss series, as [seconds after t0, mean,
# peak] per bucket, equals WANT to the kB (the sums of delta x time
# Elasticsearch makes are doubles) and no value is below zero
expect() {
    local wf=$1 step=$2 want=$3 file=$TEST_DIR/rss-$RANDOM.json
    "$QUERY" series "$wf" --metric rss --step "$step" "${@:4}" --json >"$file" || fail "pano-query series $wf --step $step"
    local got
    got=$(jq -c --argjson t0 "$t0" '[.points[] | [(.t - $t0), .value, .peak]]' "$file")
    jq -en --argjson got "$got" --argjson want "$want" '
        def near(a; b; e): (a - b) as $d | ($d < e and $d > -e);
        ($got | length) == ($want | length) and
        ([range(0; $want | length) as $i |
          near($got[$i][0]; $want[$i][0]; 0.001) and near($got[$i][1]; $want[$i][1]; 1) and
          near($got[$i][2]; $want[$i][2]; 1) and $got[$i][1] >= 0 and $got[$i][2] >= $got[$i][1]] | all)' \
        >/dev/null || fail "rss of $wf at $step ${*:4}: $got, expected $want"
    log "rss at $step ${*:4}: $got"
}
expect "$WF1" 1s '[[0,0,0],[1,3500,3500],[2,1000,1000],[3,500,1000]]'
expect "$WF1" 3s '[[0,1500,3500],[3,166.667,1000]]'
expect "$WF2" 2s '[[0,264396.8,333824],[2,218112,218112],[4,0,0]]'
expect "$WF3" 2s '[[0,264396.8,333824],[2,218112,218112],[4,0,0]]'
expect "$WF4" 1s '[[0,1600,4000],[1,0,0]]' --job R_ID1
for job in T1_ID1 T2_ID1; do
    expect "$WF4" 0.2s '[[0,1587,3174],[0.2,3174,3174],[0.4,3174,3174],[0.6,3174,3174],[0.8,3174,3174],[1,0,0]]' --job "$job"
done

# The table: a gauge's mean and its PEAK; a rate has no peak.
"$QUERY" series "$WF2" --metric rss --step 2s >"$TEST_DIR/rss.txt" || fail "pano-query series --step 2s"
head -1 "$TEST_DIR/rss.txt" | grep -q 'MEAN rss (kB) *PEAK rss (kB)' || fail "the table's header: $(head -1 "$TEST_DIR/rss.txt")"
sed -n 2p "$TEST_DIR/rss.txt" | grep -qE ' 26439[67]\.[0-9]{3} +333824\.000$' || fail "the table's first row: $(sed -n 2p "$TEST_DIR/rss.txt")"
"$QUERY" series "$WF2" --metric cpu --step 2s | head -1 | grep -qv PEAK || fail "a rate with a PEAK column"
"$QUERY" series "$WF2" --metric cpu --step 2s --json | jq -e '.points[0] | has("value") and (has("peak") | not)' >/dev/null ||
    fail "a rate's point: $("$QUERY" series "$WF2" --metric cpu --step 2s --json | jq -c '.points[0]')"

# The table's TIME column shows the fractions of a second a step under 1 s needs.
"$QUERY" series "$WF1" --metric rss --step 0.5s >"$TEST_DIR/rss.txt" || fail "pano-query series --step 0.5s"
sed -n '2,3p' "$TEST_DIR/rss.txt" | awk '{print $2}' | tr '\n' ' ' | grep -qE '^[0-9:]{8}\.0 [0-9:]{8}\.5 $' ||
    fail "TIME at a 0.5 s step: $(head -3 "$TEST_DIR/rss.txt")"
"$QUERY" series "$WF1" --metric rss --step 1s | sed -n 2p | grep -qE ' [0-9]{2}:[0-9]{2}:[0-9]{2} ' ||
    fail "TIME at a 1 s step: $("$QUERY" series "$WF1" --metric rss --step 1s | head -2)"
log "TIME: $(sed -n 2p "$TEST_DIR/rss.txt")"
