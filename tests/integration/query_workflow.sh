#!/usr/bin/env bash
# pano-query over the real pipeline, with known answers: 20 jobs of one
# transformation under pano-monitor, burning a set CPU time (0.4 s); one of
# them five times longer, one exiting 3, one killed by SIGKILL, one still running.
# Every count exactly, times within the sampling interval, the anomalies,
# rate series that integrate to the jobs' totals, gauges, the stampede
# events of a real Pegasus run, alerts published and stored once, a Darshan
# log of a run a year old that must not stretch the workflow's span, and bad
# input (not a UUID, unknown workflow or job, Elasticsearch down).
# As query_workflow_valgrind (PANO_TEST_VALGRIND=1), every pano-query runs
# under valgrind, which must then report no memory error and no leak either.
source "$(dirname "$0")/lib.sh"
require_stack
: "${PANO_SOURCE:?}"
QUERY=$PANO_BUILD/query/pano-query
if [[ ${PANO_TEST_VALGRIND:-} == 1 ]]; then
    require_valgrind "$QUERY"
    QUERY=$(valgrind_wrapper "$QUERY")
fi
MONITOR=$PANO_BUILD/publishers/monitor/pano-monitor
WORKLOAD=$PANO_BUILD/tests/integration/pano-workload

start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

# burn_ID20 runs on: a pipeline slowed for seconds (a sanitizer's, the
# stack just started, a new index made) must not make it look lost, which
# happens once its latest searchable sample is older than three intervals
# plus pano.query.ingest_delay (5 s by default)
export PANO_QUERY_INGEST_DELAY=30
WF=$(cat /proc/sys/kernel/random/uuid)
export PEGASUS_WF_UUID=$WF PEGASUS_WF_LABEL=query-test PEGASUS_XFORMATION=burn PEGASUS_SITE=local
I=0.2 # sampling interval
job() { # N CMD...: burn_IDnn under pano-monitor
    local n=$1
    shift
    PEGASUS_DAG_JOB_ID=$(printf 'burn_ID%02d' "$n") "$MONITOR" -i $I -- "$@" >/dev/null 2>>"$TEST_DIR/monitor.log"
}
for n in $(seq 1 19); do
    case $n in
        7) job 7 "$WORKLOAD" burn 2.0 ;;                                      # five times longer
        3) job 3 sh -c "$WORKLOAD burn 0.4 >/dev/null; exit 3" || true ;;     # fails
        11) job 11 sh -c "$WORKLOAD burn 0.4 >/dev/null; kill -9 \$\$" || true ;; # SIGKILL
        *) job "$n" "$WORKLOAD" burn 0.4 ;;
    esac
done
# burn_ID20 keeps running while the workflow is asked about
PEGASUS_DAG_JOB_ID=burn_ID20 "$MONITOR" -i $I -- "$WORKLOAD" sleep 600 >/dev/null 2>>"$TEST_DIR/monitor.log" &
running=$!
PIDS+=("$running")
# A Darshan log recorded in 2025 published into the workflow (its event's ts is
# the end of that run), and alone into a second workflow.
DARSHAN_LOG=$PANO_SOURCE/tests/data/darshan/mpi-io-test-x86_64-3.5.0.darshan
WF_DARSHAN=$(cat /proc/sys/kernel/random/uuid)
for wf in "$WF" "$WF_DARSHAN"; do
    PEGASUS_WF_UUID=$wf PEGASUS_DAG_JOB_ID=ior_ID21 "$PANO_BUILD/publishers/darshan/pano-darshan" \
        "$DARSHAN_LOG" 2>>"$TEST_DIR/darshan.log" || fail "pano-darshan: $(tail -3 "$TEST_DIR/darshan.log")"
done
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*/_count?q=event:darshan.perf' | jq .count) == 2 ]]" ||
    fail "the Darshan events did not arrive"
# 19 ended runs (4 events each, at least) and the running one's start
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*/_count?q=wf_uuid:$WF+AND+event:kickstart.inv.end' | jq .count) == 19 ]]" ||
    fail "the 19 end events did not arrive"
sleep 2 # a few samples of the running job, and burn_ID20 past its peers' p95

q() { "$QUERY" "$@" 2>>"$TEST_DIR/query.log"; }
# -- status: jobs by state, exactly
q status "$WF" --json >"$TEST_DIR/status.json" || fail "status failed: $(tail -3 "$TEST_DIR/query.log")"
jq -e '.jobs.total == 20 and .jobs.by_state.succeeded == 17 and .jobs.by_state.failed == 1
       and .jobs.by_state.killed == 1 and .jobs.by_state.running == 1 and .jobs.retries == 0
       and .wf_label == "query-test"' "$TEST_DIR/status.json" >/dev/null ||
    fail "status: $(jq -c .jobs "$TEST_DIR/status.json")"
jq -e '[.jobs_not_succeeded[].id] | sort == ["burn_ID03","burn_ID11","burn_ID20"]' "$TEST_DIR/status.json" >/dev/null ||
    fail "status rows: $(jq -c '[.jobs_not_succeeded[].id]' "$TEST_DIR/status.json")"
q status "$WF" | grep -q "20 job(s): 1 running, 17 succeeded, 1 failed, 1 killed" ||
    fail "status table: $(q status "$WF" | head -3)"

# -- jobs: each row as the monitor measured it
q jobs "$WF" --json >"$TEST_DIR/jobs.json" || fail "jobs failed"
row() { jq -c --arg id "$1" '.jobs[] | select(.id == $id)' "$TEST_DIR/jobs.json"; }
check() { jq -e "$2" <<<"$1" >/dev/null || fail "$3: $1"; }
check "$(row burn_ID03)" '.state == "failed" and .exitcode == 3 and .transformation == "burn" and .site == "local"' "burn_ID03"
check "$(row burn_ID11)" '.state == "killed" and .signal == 9 and .exitcode == 137' "burn_ID11"
check "$(row burn_ID07)" '.state == "succeeded" and .exitcode == 0 and (.duration - 2.0 | fabs) < 0.5
                          and (.cpu_time - 2.0 | fabs) < 0.2 and .samples >= 9 and .maxrss > 0' "burn_ID07"
check "$(row burn_ID20)" '.state == "running" and .exitcode == null and .end == null and .samples >= 3
                          and .now.procs == 1 and .duration > 1' "burn_ID20"
check "$(row burn_ID05)" '(.cpu_time - 0.4 | fabs) < 0.1 and .host != "" and .attempt == 1' "burn_ID05"
[[ $(q jobs "$WF" --state failed --tsv | tail -n +2 | cut -f1) == burn_ID03 ]] || fail "jobs --state failed"
[[ $(q jobs "$WF" --transformation burn --tsv | tail -n +2 | wc -l) == 20 ]] || fail "jobs --transformation"

# -- stats: per transformation and host, durations within the interval
q stats "$WF" --json >"$TEST_DIR/stats.json" || fail "stats failed"
jq -e '.transformations | length == 1' "$TEST_DIR/stats.json" >/dev/null || fail "one transformation"
jq -e '.transformations[0] | .transformation == "burn" and .count == 20 and .failed == 2 and .running == 1
       and .duration.count == 19 and (.duration.max - 2.0 | fabs) < 0.5 and (.duration.median - 0.4 | fabs) < 0.25
       and .cpu_time.max > 1.8' "$TEST_DIR/stats.json" >/dev/null ||
    fail "stats: $(jq -c .transformations "$TEST_DIR/stats.json")"
jq -e '(.hosts | map(.count) | add) == 20 and .workflow_wall_time > 5
       and .workflow_cumulative_job_wall_time > 6' "$TEST_DIR/stats.json" >/dev/null ||
    fail "stats totals: $(jq -c '{hosts, workflow_wall_time, workflow_cumulative_job_wall_time}' "$TEST_DIR/stats.json")"
# the old Darshan log neither stretches the span nor counts as a run
now=$(date +%s)
jq -e --argjson now "$now" '.workflow_wall_time < 120 and .first_event > $now - 300' "$TEST_DIR/stats.json" >/dev/null ||
    fail "the Darshan log stretched the workflow: $(jq -c '{first_event, workflow_wall_time}' "$TEST_DIR/stats.json")"
q workflows --json | jq -e --arg wf "$WF" --argjson now "$now" \
    '.[] | select(.wf_uuid == $wf) | .first_event > $now - 300' >/dev/null ||
    fail "the workflows list starts the workflow at its Darshan log"
# a workflow of nothing but the log spans that log's time
q status "$WF_DARSHAN" --json >"$TEST_DIR/darshan-only.json" || fail "status of a Darshan-only workflow failed"
jq -e '.first_event > 1.6e9 and .first_event < '"$((now - 86400))"' and .jobs.total == 0' \
    "$TEST_DIR/darshan-only.json" >/dev/null || fail "Darshan-only workflow: $(jq -c . "$TEST_DIR/darshan-only.json")"

# -- anomalies: the long job, the two failures, the overdue running one
q anomalies "$WF" --json >"$TEST_DIR/anomalies.json" || fail "anomalies failed"
jq -e '[.[] | select(.kind == "outlier") | .job] | unique == ["burn_ID07"]' "$TEST_DIR/anomalies.json" >/dev/null ||
    fail "outliers: $(jq -c '[.[] | select(.kind == "outlier") | {job, metric, score}]' "$TEST_DIR/anomalies.json")"
jq -e '[.[] | select(.kind == "outlier" and .metric == "duration")] | length == 1' "$TEST_DIR/anomalies.json" >/dev/null ||
    fail "no duration outlier"
jq -e '[.[] | select(.kind == "failed") | .job] | sort == ["burn_ID03","burn_ID11"]' "$TEST_DIR/anomalies.json" >/dev/null ||
    fail "failed: $(jq -c '[.[] | select(.kind == "failed")]' "$TEST_DIR/anomalies.json")"
jq -e '[.[] | select(.kind == "overdue") | .job] == ["burn_ID20"]' "$TEST_DIR/anomalies.json" >/dev/null ||
    fail "overdue: $(jq -c '[.[] | select(.kind == "overdue")]' "$TEST_DIR/anomalies.json")"

# -- series: a job's CPU rate integrates to its final totals (within 2 %), the
# workflow's to the sum of every job's latest CPU time; gauges count what runs
final=$(curl -fsS "$ES/$TEST_ID-*/_search?q=wf_uuid:$WF+AND+event:kickstart.inv.end+AND+dag_job_id:burn_ID07" |
    jq '.hits.hits[0]._source.final | .utime + .stime')
q series "$WF" --metric cpu --step 0.2s --job burn_ID07 --json >"$TEST_DIR/s7.json" || fail "series --job failed"
integral=$(jq '.step as $s | [.points[].value * $s] | add' "$TEST_DIR/s7.json")
awk -v a="$integral" -v b="$final" 'BEGIN { exit !(b > 1 && (a - b) ^ 2 <= (0.02 * b) ^ 2) }' ||
    fail "burn_ID07: CPU rate integrates to $integral s, its final totals say $final s"
q series "$WF" --metric cpu --step 1s --json >"$TEST_DIR/swf.json" || fail "series failed"
wf_integral=$(jq '.step as $s | [.points[].value * $s] | add' "$TEST_DIR/swf.json")
wf_cpu=$(jq '[.jobs[].cpu_time] | add' "$TEST_DIR/jobs.json")
awk -v a="$wf_integral" -v b="$wf_cpu" 'BEGIN { exit !(b > 6 && (a - b) ^ 2 <= (0.03 * b) ^ 2) }' ||
    fail "workflow: CPU rate integrates to $wf_integral s, the jobs' CPU time is $wf_cpu s"
q series "$WF" --metric procs --step 1s --json >"$TEST_DIR/procs.json" || fail "series procs failed"
jq -e '.kind == "gauge" and .points[-1].value == 1 and ([.points[] | .value, .peak] | min) >= 0' "$TEST_DIR/procs.json" >/dev/null ||
    fail "procs: $(jq -c '.points[-5:]' "$TEST_DIR/procs.json"); burn_ID20 now: $(q jobs "$WF" --json |
        jq -c --argjson now "$(date +%s.%N)" '.jobs[] | select(.id == "burn_ID20") | {state, start, last_seen, samples, now, asked: $now}')"
q series "$WF" --metric rss --step 1s --tsv | tail -n +2 | awk -F'\t' '$2 < 0 { exit 1 }' || fail "negative rss"
log "series: burn_ID07 CPU $integral s vs $final s; workflow $wf_integral s vs $wf_cpu s"

# -- one job, with its events
q job "$WF" burn_ID07 --json | jq -e '.id == "burn_ID07" and .events == []' >/dev/null || fail "job burn_ID07"
q job "$WF" burn_ID07 | grep -q "^state  *succeeded" || fail "job table"

# -- alerts: published through the broker, stored once however often they are sent
q anomalies "$WF" --publish >/dev/null || fail "anomalies --publish failed: $(tail -3 "$TEST_DIR/query.log")"
q anomalies "$WF" --publish >/dev/null || fail "anomalies --publish (again) failed"
alerts=$(jq length "$TEST_DIR/anomalies.json")
wait_until 30 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-other-*/_count?q=event:pano.alert.*+AND+wf_uuid:$WF' | jq .count) == $alerts ]]" ||
    fail "expected $alerts alerts in $TEST_ID-other-*, found $(curl -fsS "$ES/$TEST_ID-other-*/_count?q=event:pano.alert.*" | jq .count)"
curl -fsS "$ES/$TEST_ID-other-*/_search?q=event:pano.alert.outlier+AND+metric:duration" |
    jq -e '.hits.hits[0]._source | .dag_job_id == "burn_ID07" and .xformation == "burn" and .score > 3.5
           and .wf_uuid == "'"$WF"'"' >/dev/null || fail "the duration alert of burn_ID07"

# -- the stampede events of a real Pegasus run (blackdiamond, from monitord)
STAMPEDE_WF=ea17e8ac-02ac-4909-b5e3-16e367392556
for f in "$PANO_FIXTURES"/events/stampede.*.json; do
    [[ $f == *composite* || $f == *synthetic* ]] && continue
    amqp-publish -u "amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f" -e "$TEST_ID" -r "$(jq -r .event "$f")" \
        -p -C application/json -b "$(cat "$f")" || fail "cannot publish $f"
done
inv=$PANO_FIXTURES/events/stampede.inv.end.json
# (jq -n and input: no answer at all is a failure, not an empty success)
wait_until 30 bash -c "'$QUERY' jobs $STAMPEDE_WF --json 2>/dev/null | jq -n -e 'input | .jobs[] | select(.id == \"preprocess_j1\") | .state == \"succeeded\"' >/dev/null" ||
    fail "no succeeded preprocess_j1 from the stampede events: $("$QUERY" jobs $STAMPEDE_WF --json 2>&1 | head -c 600)"
"$QUERY" jobs $STAMPEDE_WF --json | jq -e --argjson cpu "$(jq .remote_cpu_time "$inv")" \
    --arg tr "$(jq -r .transformation "$inv")" \
    --argjson dur "$(jq .local_dur "$PANO_FIXTURES/events/stampede.job_inst.main.end.json")" \
    --arg host "$(jq -r .hostname "$PANO_FIXTURES/events/stampede.job_inst.host.info.json")" \
    '.jobs[] | select(.id == "preprocess_j1") | .exitcode == 0 and .cpu_time == $cpu and .transformation == $tr
     and .duration == $dur and .host == $host and .site == "condorpool" and .seen_by == ["pegasus-monitord"]' >/dev/null ||
    fail "preprocess_j1 from stampede: $("$QUERY" jobs $STAMPEDE_WF --json | jq -c '.jobs[] | select(.id == "preprocess_j1")')"

# -- bad input: a clear message and an exit status, never a crash
expect_exit() { # STATUS PATTERN CMD...
    local want=$1 pattern=$2 rc=0
    shift 2
    "$@" >"$TEST_DIR/bad.out" 2>"$TEST_DIR/bad.err" || rc=$?
    [[ $rc == "$want" ]] || fail "$*: exit $rc, expected $want ($(cat "$TEST_DIR/bad.err"))"
    grep -q -- "$pattern" "$TEST_DIR/bad.err" || fail "$*: no '$pattern' in: $(cat "$TEST_DIR/bad.err")"
}
expect_exit 2 "not a workflow UUID" "$QUERY" status "../_all"
expect_exit 2 "not a workflow UUID" "$QUERY" stats "$WF,*"
expect_exit 3 "no events of workflow .* in Elasticsearch at .*, indices $PANO_INDEXER_INDEX_PREFIX\*" \
    "$QUERY" status "$(cat /proc/sys/kernel/random/uuid)"
expect_exit 3 "has no job" "$QUERY" job "$WF" burn_ID99
expect_exit 2 "not a job name" "$QUERY" job "$WF" 'a"b'
expect_exit 2 "unknown metric" "$QUERY" series "$WF" --metric bogus
expect_exit 2 "unknown command" "$QUERY" statsu "$WF"
expect_exit 1 "does not answer" "$QUERY" --es-url http://127.0.0.1:1 status "$WF"
expect_exit 1 "does not answer" "$QUERY" --es-url http://127.0.0.1:1 workflows

# -- workflows: this one, running
q workflows --json | jq -e --arg wf "$WF" '.[] | select(.wf_uuid == $wf) | .state == "running" and .runs == 20
    and .running == 1 and .failed == 2 and .wf_label == "query-test"' >/dev/null ||
    fail "workflows: $(q workflows --json | jq -c --arg wf "$WF" '.[] | select(.wf_uuid == $wf)')"
grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$TEST_DIR/query.log" && fail "sanitizer report from pano-query"
kill -TERM "$running"
wait "$running" || true # the task's SIGTERM, passed through
keep=()
for p in "${PIDS[@]}"; do [[ $p == "$running" ]] || keep+=("$p"); done
PIDS=("${keep[@]}")
stop_all
log "PASS"
