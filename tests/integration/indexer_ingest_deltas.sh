#!/usr/bin/env bash
# pano-indexer gives samples that come without delta (Pegasus's kickstart)
# their delta, over the real Kafka and Elasticsearch. Events are produced
# with kcat straight into the kickstart topic, keyed by workflow, with set
# timestamps (t0 = a multiple of 10 s, 300 s ago), rss in kB, interval 1 s:
#
#   WP  Pegasus's shape (samples without delta):
#       A  start t0; samples at t0+1..t0+4: utime 1 2 3 4, rss 1000 2000
#          1500 1500 (vm twice rss), rchar 100 200 300 400, procs and
#          threads 1; end t0+4.5;
#       B  start t0; samples at t0+1, t0+2: utime 0.5 1.5, rss 3000 3000,
#          rchar 50 150; no end (lost).
#       Produced as A start, B start, A s1, B s1, A s1 again (a replay),
#       A s3 (before s2); then the indexer is killed (SIGKILL: what it had
#       not committed comes again) and a new one, with nothing in its table,
#       gets A s2 (late), B s2, A s4, A end, A end again.
#   WM  the same runs in pano-monitor's shape: samples with delta, in order,
#       A's last one at t0+4.5 with the gauges at zero.
#   WO  a store written before: D's start and two samples indexed with the
#       deltas off (pano.indexer.delta_runs=0), then D's third sample and
#       end, and a new run E (start t0+1, rss 100 at t0+2 and t0+3, utime
#       0.5 and 1, end t0+3.5) with the deltas on.
#   WR  samples with no start before them (C): stored as they came.
#
# By hand: A's stored deltas are s1 (utime 1, rss 1000, rchar 100), s3
# (2, 500, 200), s2 (0: late), s4 (1, 0, 100) and a closing sample at
# t0+4.5 (rss -1500, vm -3000, procs -1, threads -1); B's s1 (0.5, 3000, 50)
# and s2 (1, 0, 100): each run's deltas add up to its latest values. A
# gauge's point is its time-weighted mean over the bucket (query/gauge.h);
# B, lost, stops counting at its last sample (t0+2). At a 2 s step WP's
# series equal WM's but where A's late sample moved its rss:
#   cpu [0.75, 1.5, 0.5]  read [75, 150, 50]  procs [1, 1, 0.25]
#   rss WM [2000, 1750, 375]: (1000 + 3000) over [t0+1, t0+2), then A alone,
#       2000 over [t0+2, t0+3), 1500 to t0+4.5;
#   rss WP [2000, 1250, 375]: A's s2 came late, so A stays at 1000 over
#       [t0+2, t0+3).
# At 1 s: WP rss [0, 4000, 1000, 1500, 750] (WM [0, 4000, 2000, 1500,
# 750]), cpu [0, 1.5, 1, 2, 1]. WO (D by the raw path, to its end at
# t0+3.5; E by the deltas, 100 over [t0+2, t0+3.5)) at 1 s: rss [0, 700,
# 800, 400], cpu [0, 1, 1.5, 1.5].
source "$(dirname "$0")/indexer_lib.sh"
require_stack
command -v kcat >/dev/null || fail "kcat is not installed"
QUERY=$PANO_BUILD/query/pano-query
TOPIC="${TEST_ID}.kickstart"

t0=$(( ($(date +%s) - 300) / 10 * 10 ))
WP=$(cat /proc/sys/kernel/random/uuid)
WM=$(cat /proc/sys/kernel/random/uuid)
WO=$(cat /proc/sys/kernel/random/uuid)
WR=$(cat /proc/sys/kernel/random/uuid)

# ev WF EVENT JOB PID DT ID EXTRA_JSON: one line for kcat, "wf<TAB>event".
ev() {
    printf '%s\t%s\n' "$1" "$(jq -cn --arg wf "$1" --arg ev "$2" --arg job "$3" --argjson pid "$4" \
        --argjson ts "$(awk -v a="$t0" -v b="$5" 'BEGIN {printf "%.1f", a + b}')" --arg id "$1-$6" \
        --argjson extra "$7" \
        '{event: $ev, ts: $ts, event_id: $id, hostname: "node-1", wf_uuid: $wf, dag_job_id: $job,
          pid: $pid, xformation: "pegasus::work", interval: 1} + $extra')"
}
# values UTIME RSS RCHAR [PROCS]: a sample's values (vm = 2 rss).
values() {
    local procs=${4:-1}
    echo "{\"utime\": $1, \"stime\": 0, \"iowait\": 0, \"vm\": $((2 * $2)), \"rss\": $2,
           \"procs\": $procs, \"threads\": $procs, \"bread\": 0, \"bwrite\": 0, \"rchar\": $3,
           \"wchar\": 0, \"syscr\": 0, \"syscw\": 0}"
}
# with_delta VALUES DELTA: pano-monitor's shape.
with_delta() { jq -c --argjson d "$2" '. + {delta: $d}' <<<"$1"; }
produce() { kcat -P -b "$KAFKA" -t "$TOPIC" -K $'\t' || fail "kcat could not produce"; }
docs_of() { # WF: documents of a workflow
    refresh
    es "$ES/$P*/_count?q=wf_uuid:$1" | jq -r .count
}
wait_docs() { # WF N
    wait_until 60 bash -c "[[ \$(curl -fsS -X POST '$ES/$P*/_refresh' >/dev/null; \
        curl -fsS '$ES/$P*/_count?q=wf_uuid:$1' | jq .count) == $2 ]]" ||
        fail "workflow $1: $(docs_of "$1") documents, expected $2"
}
ready() { wait_until 60 grep -q "INFO: assigned" "$TEST_DIR/$1.log" || fail "$1 got no partitions"; }
start_go=$(jq -cn '{argv: ["work"]}')

# ---- a store written before: the deltas off --------------------------------------------
PANO_INDEXER_DELTA_RUNS=0 start_indexer old
ready old
{
    ev "$WO" kickstart.inv.start D_ID1 104 0 D-start "$start_go"
    ev "$WO" kickstart.inv.online D_ID1 104 1 D-s1 "$(values 1 700 0)"
    ev "$WO" kickstart.inv.online D_ID1 104 2 D-s2 "$(values 2 700 0)"
} | produce
wait_docs "$WO" 3
[[ $(es "$ES/$P*/_count?q=wf_uuid:$WO%20AND%20_exists_:delta" | jq .count) == 0 ]] ||
    fail "with pano.indexer.delta_runs=0 a sample was given a delta"
stop_all

# ---- the first part, then SIGKILL ---------------------------------------------------------
start_indexer ix1
ready ix1
{
    ev "$WP" kickstart.inv.start A_ID1 101 0 A-start "$start_go"
    ev "$WP" kickstart.inv.start B_ID1 102 0 B-start "$start_go"
    ev "$WP" kickstart.inv.online A_ID1 101 1 A-s1 "$(values 1 1000 100)"
    ev "$WP" kickstart.inv.online B_ID1 102 1 B-s1 "$(values 0.5 3000 50)"
    ev "$WP" kickstart.inv.online A_ID1 101 1 A-s1 "$(values 1 1000 100)"
    ev "$WP" kickstart.inv.online A_ID1 101 3 A-s3 "$(values 3 1500 300)"

    ev "$WM" kickstart.inv.start A_ID1 101 0 A-start "$start_go"
    ev "$WM" kickstart.inv.start B_ID1 102 0 B-start "$start_go"
    ev "$WM" kickstart.inv.online A_ID1 101 1 A-s1 "$(with_delta "$(values 1 1000 100)" "$(values 1 1000 100)")"
    ev "$WM" kickstart.inv.online B_ID1 102 1 B-s1 "$(with_delta "$(values 0.5 3000 50)" "$(values 0.5 3000 50)")"
    ev "$WM" kickstart.inv.online A_ID1 101 2 A-s2 "$(with_delta "$(values 2 2000 200)" "$(values 1 1000 100 0)")"
    ev "$WM" kickstart.inv.online B_ID1 102 2 B-s2 "$(with_delta "$(values 1.5 3000 150)" "$(values 1 0 100 0)")"
    ev "$WM" kickstart.inv.online A_ID1 101 3 A-s3 "$(with_delta "$(values 3 1500 300)" "$(values 1 -500 100 0)")"
    ev "$WM" kickstart.inv.online A_ID1 101 4 A-s4 "$(with_delta "$(values 4 1500 400)" "$(values 1 0 100 0)")"
    ev "$WM" kickstart.inv.online A_ID1 101 4.5 A-s5 "$(with_delta "$(values 4 0 400 0)" "$(values 0 -1500 0 -1)")"
    ev "$WM" kickstart.inv.end A_ID1 101 4.5 A-end '{"exitcode": 0, "signal": 0, "duration": 4.5}'

    ev "$WO" kickstart.inv.online D_ID1 104 3 D-s3 "$(values 3 700 0)"
    ev "$WO" kickstart.inv.end D_ID1 104 3.5 D-end '{"exitcode": 0, "signal": 0, "duration": 3.5}'
    ev "$WO" kickstart.inv.start E_ID1 105 1 E-start "$start_go"
    ev "$WO" kickstart.inv.online E_ID1 105 2 E-s1 "$(values 0.5 100 0)"
    ev "$WO" kickstart.inv.online E_ID1 105 3 E-s2 "$(values 1 100 0)"
    ev "$WO" kickstart.inv.end E_ID1 105 3.5 E-end '{"exitcode": 0, "signal": 0, "duration": 2.5}'

    ev "$WR" kickstart.inv.online C_ID1 106 1 C-s1 "$(values 1 50 0)"
    ev "$WR" kickstart.inv.online C_ID1 106 2 C-s2 "$(values 2 60 0)"
} | produce
wait_docs "$WP" 5  # A-s1 once
wait_docs "$WM" 10
wait_docs "$WO" 10 # with E's closing sample
wait_docs "$WR" 2
kill_indexer ix1

# ---- the rest, to an indexer that keeps nothing yet ------------------------------------
{
    ev "$WP" kickstart.inv.online A_ID1 101 2 A-s2 "$(values 2 2000 200)"
    ev "$WP" kickstart.inv.online B_ID1 102 2 B-s2 "$(values 1.5 3000 150)"
    ev "$WP" kickstart.inv.online A_ID1 101 4 A-s4 "$(values 4 1500 400)"
    ev "$WP" kickstart.inv.end A_ID1 101 4.5 A-end '{"exitcode": 0, "signal": 0, "duration": 4.5}'
    ev "$WP" kickstart.inv.end A_ID1 101 4.5 A-end '{"exitcode": 0, "signal": 0, "duration": 4.5}'
} | produce
export PANO_INDEXER_STATUS_FILE="$TEST_DIR/ix2.prom"
start_indexer ix2
wait_docs "$WP" 10 # 4 + 2 samples, 2 starts, an end, a closing sample
looked_up() {
    lookups=$(metric "$PANO_INDEXER_STATUS_FILE" delta_lookups_total 2>/dev/null)
    late=$(metric "$PANO_INDEXER_STATUS_FILE" deltas_late_total 2>/dev/null)
    ((${lookups:-0} >= 2 && ${late:-0} >= 1))
}
wait_until 10 looked_up ||
    fail "the new indexer looked up ${lookups:-no} workflows and runs, gave ${late:-no} late samples delta 0"
log "the new indexer: $lookups lookups, $late late samples"
stop_all

# ---- what is stored ----------------------------------------------------------------
search() { es -X POST "$ES/$P*/_search" -d "$1"; }
samples_of() { # WF JOB: its samples, by ts, as [id, ts-t0, delta.utime, delta.rss, delta.rchar, source]
    search "{\"size\":100,\"sort\":[{\"ts\":\"asc\"},{\"event_id\":\"asc\"}],
             \"query\":{\"bool\":{\"filter\":[{\"term\":{\"wf_uuid\":\"$1\"}},{\"term\":{\"dag_job_id\":\"$2\"}},
             {\"term\":{\"event\":\"kickstart.inv.online\"}}]}}}" |
        jq -c --argjson t0 "$t0" --arg wf "$1-" '[.hits.hits[]._source |
            [(.event_id | ltrimstr($wf)), .ts - $t0, .delta.utime, .delta.rss, .delta.rchar, .delta_source]]'
}
got=$(samples_of "$WP" A_ID1)
want='[["A-s1",1,1,1000,100,"indexer"],["A-s2",2,0,0,0,"indexer"],["A-s3",3,2,500,200,"indexer"],["A-s4",4,1,0,100,"indexer"],["A-end-closing",4.5,0,-1500,0,"indexer"]]'
[[ $got == "$want" ]] || fail "A's samples: $got, expected $want"
got=$(samples_of "$WP" B_ID1)
want='[["B-s1",1,0.5,3000,50,"indexer"],["B-s2",2,1,0,100,"indexer"]]'
[[ $got == "$want" ]] || fail "B's samples: $got, expected $want"
log "A and B's deltas as by hand"

# Every run: its deltas add up to its latest values, field by field.
search "{\"size\":0,\"query\":{\"bool\":{\"filter\":[{\"terms\":{\"wf_uuid\":[\"$WP\",\"$WO\"]}},
         {\"term\":{\"delta_source\":\"indexer\"}}]}},
         \"aggs\":{\"runs\":{\"terms\":{\"field\":\"dag_job_id\"},\"aggs\":{
           $(for f in utime stime iowait vm rss procs threads bread bwrite rchar wchar syscr syscw; do
                 printf '"%s":{"sum":{"field":"delta.%s"}},' "$f" "$f"; done)
           \"latest\":{\"top_hits\":{\"size\":1,\"sort\":[{\"ts\":\"desc\"}]}}}}}}" >"$TEST_DIR/sums.json"
jq -e '.aggregations.runs.buckets | length == 3' "$TEST_DIR/sums.json" >/dev/null ||
    fail "runs with the indexer's deltas: $(jq -c '[.aggregations.runs.buckets[].key]' "$TEST_DIR/sums.json")"
bad=$(jq -r '.aggregations.runs.buckets[] | . as $b | $b.latest.hits.hits[0]._source as $l
    | ["utime","stime","iowait","vm","rss","procs","threads","bread","bwrite","rchar","wchar","syscr","syscw"][]
    | select(($b[.].value - $l[.] | fabs) > 0.0005) | "\($b.key) \(.): deltas \($b[.].value), latest \($l[.])"' \
    "$TEST_DIR/sums.json")
[[ -z $bad ]] || fail "deltas that do not add up to the latest values: $bad"
log "each run's deltas add up to its latest values"

[[ $(es "$ES/$P*/_count?q=event_id:%22$WP-A-s1%22" | jq .count) == 1 ]] || fail "A-s1 stored more than once"
[[ $(es "$ES/$P*/_count?q=sample:closing%20AND%20wf_uuid:$WP" | jq .count) == 1 ]] || fail "not one closing sample for WP"
[[ $(es "$ES/$P*/_count?q=wf_uuid:$WO%20AND%20dag_job_id:D_ID1%20AND%20_exists_:delta" | jq .count) == 0 ]] ||
    fail "D, a run of a store written before, was given deltas"
[[ $(es "$ES/$P*/_count?q=wf_uuid:$WO%20AND%20dag_job_id:E_ID1%20AND%20delta_source:indexer" | jq .count) == 3 ]] ||
    fail "E: not two samples and a closing one with the indexer's deltas"
[[ $(es "$ES/$P*/_count?q=wf_uuid:$WR%20AND%20_exists_:delta" | jq .count) == 0 ]] ||
    fail "C, samples without a start, was given deltas"
log "replays stored once, one closing sample, the store written before and C left raw"

# ---- what pano-query answers --------------------------------------------------------
series() { # WF METRIC STEP
    "$QUERY" series "$1" --metric "$2" --step "$3" --json >"$TEST_DIR/series.json" || fail "pano-query series $*"
    # to the thousandth: a gauge's mean comes from sums of delta x time
    # over epoch milliseconds in doubles (query/gauge.h), which leave a few
    # units in the eighth digit (1749.999938 for 1750)
    jq -c '[.points[] | .value * 1000 | round / 1000]' "$TEST_DIR/series.json"
}
expect() { # WF METRIC STEP WANT
    local got
    got=$(series "$1" "$2" "$3")
    [[ $got == "$4" ]] || fail "$2 at $3 of $(case $1 in "$WP") echo WP ;; "$WM") echo WM ;; *) echo WO ;; esac): $got, expected $4"
}
for wf in "$WP" "$WM"; do
    expect "$wf" cpu 2s '[0.75,1.5,0.5]'
    expect "$wf" read 2s '[75,150,50]'
    expect "$wf" procs 2s '[1,1,0.25]'
done
expect "$WM" rss 2s '[2000,1750,375]'
expect "$WP" rss 2s '[2000,1250,375]'
log "WP's series equal WM's at 2 s, but for the rss A's late sample moved"
expect "$WP" rss 1s '[0,4000,1000,1500,750]'
expect "$WM" rss 1s '[0,4000,2000,1500,750]'
expect "$WP" cpu 1s '[0,1.5,1,2,1]'
expect "$WO" rss 1s '[0,700,800,400]'
expect "$WO" cpu 1s '[0,1,1.5,1.5]'
log "at 1 s: the late sample where it came, the store written before by both paths"

# The job rows: the closing sample is not a sample of theirs.
"$QUERY" jobs "$WP" --json >"$TEST_DIR/jobs.json" || fail "pano-query jobs"
jq -e '[.jobs[] | {(.id): [.state, .samples]}] | add == {"A_ID1": ["succeeded", 0], "B_ID1": ["lost", 2]}' \
    "$TEST_DIR/jobs.json" >/dev/null || fail "WP's jobs: $(jq -c '[.jobs[] | [.id, .state, .samples]]' "$TEST_DIR/jobs.json")"
log "jobs: A succeeded, B lost with its 2 samples"
