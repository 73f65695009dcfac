#!/usr/bin/env bash
# pano-explorer's API and its rules, over the real stack: what a workflow's
# answers hold; for a workflow of 450 runs, an answer without them, their
# pages, filters and orders, the timeline's overview and a window's runs,
# a refresh answered "unchanged" until a new event; errors as JSON with
# their status, GET only, the security headers, basic authentication, and
# the addresses and passwords it refuses.
# As explorer_valgrind (PANO_TEST_VALGRIND=1), every explorer it starts runs
# under valgrind, which must then report no memory error and no leak either.
source "$(dirname "$0")/lib.sh"
require_stack
EXPLORER=$PANO_BUILD/explorer/pano-explorer
if [[ ${PANO_TEST_VALGRIND:-} == 1 ]]; then
    require_valgrind "$EXPLORER"
    EXPLORER=$(valgrind_wrapper "$EXPLORER")
fi
MONITOR=$PANO_BUILD/publishers/monitor/pano-monitor

start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"
WF=$(cat /proc/sys/kernel/random/uuid)
export PEGASUS_WF_UUID=$WF PEGASUS_WF_LABEL=api-test
# ok_ID01 stages a file out: its transfer events are its own, not bad_ID02's
head -c 4096 /dev/urandom >"$TEST_DIR/output.dat"
PEGASUS_DAG_JOB_ID=ok_ID01 "$MONITOR" -i 0.2 -- sh -c 'sleep 0.5 && "$1" copy "$2" "$3"' sh \
    "$PANO_BUILD/publishers/transfer/pano-transfer" "$TEST_DIR/output.dat" "$TEST_DIR/staged.dat" \
    2>>"$TEST_DIR/monitor.log" || fail "ok_ID01 failed: $(tail -3 "$TEST_DIR/monitor.log")"
PEGASUS_DAG_JOB_ID=bad_ID02 "$MONITOR" -i 0.2 -- sh -c 'exit 7' 2>>"$TEST_DIR/monitor.log" || true
# A workflow of 450 runs (more than a workflow's answer lists), produced
# straight to Kafka: p_ID0000..0449 started a second apart from T0, each
# ended 0.5 s later on node-(i % 3), of transformation even or odd; every
# fiftieth from the seventh (7, 57, ... 407) failed; the last 10 still run.
PAGE_WF=$(cat /proc/sys/kernel/random/uuid)
T0=$(($(date +%s) - 1000))
# page_event I EVENT EXTRA: one event of run I of PAGE_WF, as kcat's input
page_event() {
    printf '%s\t{"event":"%s","ts":%s,"event_id":"%s-%d-%s","seq":1,"hostname":"node-%d","wf_uuid":"%s","wf_label":"paging","dag_job_id":"p_ID%04d","xformation":"%s","pid":%d,"exe":"/bin/app","interval":600%s}\n' \
        "$PAGE_WF" "$2" "$3" "$PAGE_WF" "$1" "$2" $(($1 % 3)) "$PAGE_WF" "$1" "$( (($1 % 2)) && echo odd || echo even)" $((1000 + $1)) "${4:-}"
}
for ((i = 0; i < 450; i++)); do
    page_event $i kickstart.inv.start $((T0 + i))
    if ((i < 440)); then
        page_event $i kickstart.inv.end "$((T0 + i)).5" ",\"exitcode\":$((i % 50 == 7 ? 1 : 0)),\"duration\":0.5"
    fi
done | kcat -P -l -b "$KAFKA" -t "${PANO_KAFKA_TOPIC_PREFIX}kickstart" -K $'\t' /dev/stdin
wait_until 30 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*/_count?q=wf_uuid:$WF+AND+event:kickstart.inv.end' | jq .count) == 2 ]]" ||
    fail "the jobs' end events did not arrive"
wait_until 30 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*/_count?q=wf_uuid:$WF+AND+event:transfer.inv.local*' | jq .count) == 2 ]]" ||
    fail "ok_ID01's transfer events did not arrive"

# serve NAME [ARGS...]: start an explorer on a free port, wait for it; its
# port in $port (not a subshell: the test must know the process to stop it)
serve() {
    local name=$1
    shift
    start "$name" "$EXPLORER" --port 0 "$@"
    wait_until 60 grep -q "serving" "$TEST_DIR/$name.log" || fail "$name did not start: $(cat "$TEST_DIR/$name.log")"
    port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$TEST_DIR/$name.log")
}
serve explorer
api() { curl -sS -o "$TEST_DIR/body" -w '%{http_code}' "http://127.0.0.1:$port$1"; }
expect() { # PATH STATUS JQ_TEST WHAT
    local code
    code=$(api "$1")
    [[ $code == "$2" ]] || fail "$4: GET $1 gave HTTP $code ($(head -c 300 "$TEST_DIR/body"))"
    jq -e "$3" "$TEST_DIR/body" >/dev/null || fail "$4: GET $1: $(head -c 500 "$TEST_DIR/body")"
}

expect /api/workflows 200 "[.[] | select(.wf_uuid == \"$WF\")] | length == 1" "the workflow is listed"
expect "/api/workflows/$WF" 200 '.wf_label == "api-test" and (.jobs | length) == 2 and .runs == 2
    and .stats.jobs.total == 2 and .stats.jobs.failed == 1
    and (.jobs[] | select(.id == "bad_ID02") | .exitcode == 7 and .state == "failed")
    and ([.anomalies[] | select(.kind == "failed")] | length) == 1
    and .io.transfers.files == 1 and .io.transfers.bytes == 4096' "the workflow"
expect "/api/workflows/${WF^^}" 200 '.wf_uuid == "'"$WF"'"' "an upper-case UUID names the same workflow"
expect "/api/workflows/$WF/series?metric=cpu" 200 '.metric == "cpu" and .kind == "rate" and .samples > 0 and (.points | length) > 0' "a series"
expect "/api/workflows/$WF/series?metric=rss&job=ok_ID01&step=0.2" 200 '.step == 0.2 and .samples >= 2
    and all(.points[]; .value >= 0 and .peak >= .value) and any(.points[]; .peak > 0)' \
    "a job's series: a gauge's mean and peak in each point"
expect "/api/workflows/$WF/series?metric=cpu&job=ok_ID01&step=0.2" 200 'all(.points[]; has("value") and (has("peak") | not))' \
    "a rate's points have no peak"
# the workflow with its charts in one request: each series as its own request gives it
api "/api/workflows/$WF/series?metric=rss" >/dev/null && jq -c .points "$TEST_DIR/body" >"$TEST_DIR/rss.alone"
expect "/api/workflows/$WF?series=cpu,rss,read,write" 200 '(.jobs | length) == 2 and (.series | keys) == ["cpu","read","rss","write"]
    and .series.cpu.kind == "rate" and .series.rss.kind == "gauge" and .series.cpu.samples > 0' "the workflow with its series"
[[ $(jq -c .series.rss.points "$TEST_DIR/body") == "$(cat "$TEST_DIR/rss.alone")" ]] ||
    fail "the workflow's rss series differs from the series asked alone"
expect "/api/workflows/$WF/jobs/ok_ID01?series=cpu,threads" 200 '.id == "ok_ID01" and (.series | keys) == ["cpu","threads"]
    and .series.threads.samples >= 2' "a job with its series"
expect "/api/workflows/$WF?series=cpu,bogus" 400 '.error | test("unknown metric .bogus.")' "an unknown metric in a list"
expect "/api/workflows/$WF?series=a,b,c,d,e,f,g,h,i" 400 '.error | test("at most 8")' "too many series"
expect "/api/workflows/$WF/jobs/bad_ID02" 200 '.state == "failed" and .exitcode == 7
    and .start_event.argv == ["sh","-c","exit 7"] and .events == [] and .io.transfers.files == 0' "a job"
expect "/api/workflows/$WF/jobs/ok_ID01" 200 '([.events[].event] | sort) == ["transfer.inv.local","transfer.inv.local.single"]
    and .io.transfers.files == 1 and .io.transfers.bytes == 4096 and .io.transfers.failed == 0' "a job with its transfer"
expect /api/metrics 200 '[.[].metric] | index("cpu") != null' "the metrics"
# what a screen shows of a workflow of 450 runs
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*/_count?q=wf_uuid:$PAGE_WF' | jq .count) == 890 ]]" ||
    fail "the 450 runs of the paging workflow did not arrive"
wait_until 30 es_summarized_is 890 "$PAGE_WF" || fail "the summaries hold $(es_summarized "$PAGE_WF") of its 890 events"
P=/api/workflows/$PAGE_WF
# the workflow: counts and an overview, not its runs
expect "$P?bins=50" 200 '.runs == 450 and (has("jobs") | not) and .stats.jobs.total == 450
    and .stats.jobs.by_state.running == 10 and (.anomalies | length) == 19
    and .anomaly_counts == {"outlier": 0, "overdue": 10, "failed": 9}
    and .overview.bins == 50 and .overview.runs == 450 and .overview.from == '"$T0"'
    and (.overview.alive | keys) == ["failed","running","succeeded"]
    and .overview.alive.running[-1] == 10 and (.overview.alive.failed | max) == 1
    and (.cursor | test("^[0-9]+-[0-9]+-[0-9]+-[0-9]+$"))' "a workflow of 450 runs"
(($(stat -c %s "$TEST_DIR/body") < 32768)) || fail "the answer of 450 runs is $(stat -c %s "$TEST_DIR/body") bytes"
# its runs, a page at a time: newest first, then filtered
expect "$P/jobs" 200 '.total == 450 and .runs == 450 and .offset == 0 and .limit == 500
    and (.jobs | length) == 450 and .jobs[0].id == "p_ID0449" and .jobs[-1].id == "p_ID0000"' "the runs"
expect "$P/jobs?offset=100&limit=50" 200 '.total == 450 and ([.jobs[].id] | length == 50 and .[0] == "p_ID0349" and .[-1] == "p_ID0300")' "a page of the runs"
expect "$P/jobs?offset=440&limit=50" 200 '.total == 450 and (.jobs | length) == 10' "the last page"
expect "$P/jobs?state=failed" 200 '.total == 9 and ([.jobs[].id] == [range(8; -1; -1) | "p_ID\(. * 50 + 7 | tostring | ("0000" + .)[-4:])"])' "the failed runs"
expect "$P/jobs?q=ID004" 200 '.total == 10 and ([.jobs[].id] == [range(49; 39; -1) | "p_ID00\(.)"])' "runs by words"
expect "$P/jobs?q=NODE-1%20&state=running,queued" 200 '.total == 3 and [.jobs[].id] == ["p_ID0448","p_ID0445","p_ID0442"]' "words and states"
expect "$P/jobs?q=odd%20node-2&limit=2" 200 '.total == 75 and .runs == 450 and (.jobs | length) == 2' "words across fields"
expect "$P/jobs?sort=oldest&limit=2" 200 '[.jobs[].id] == ["p_ID0000","p_ID0001"]' "the oldest first"
expect "$P/jobs?sort=id&offset=449" 200 '[.jobs[].id] == ["p_ID0449"]' "by id"
# the timeline: the whole of it is too many runs for bars; a window of it is not
expect "$P/timeline?bins=20" 200 '.overview.runs == 450 and .overview.bins == 20 and (has("jobs") | not)' "the whole timeline"
expect "$P/timeline?from=$((T0 + 100))&to=$((T0 + 110))&bins=10" 200 '.overview.runs == 11
    and [.jobs[].id] == [range(100; 111) | "p_ID0\(.)"] and .overview.alive.succeeded == [1,1,1,1,1,1,1,0,1,2]
    and .overview.alive.failed == [0,0,0,0,0,0,0,1,0,0]' "a window of the timeline"
# a refresh: nothing changed, the answer says so in a few bytes (asked
# twice: a cursor holds a minute at most while runs run, cursor.h)
unchanged() {
    [[ $(api "$P") == 200 ]] && cursor=$(jq -r .cursor "$TEST_DIR/body") && [[ $(api "$P?since=$cursor") == 200 ]] &&
        jq -e '. == {"unchanged": true, "cursor": "'"$cursor"'", "now": .now}' "$TEST_DIR/body" >/dev/null
}
unchanged || unchanged || fail "a refresh with nothing new: $(head -c 300 "$TEST_DIR/body")"
(($(stat -c %s "$TEST_DIR/body") < 100)) || fail "an unchanged answer of $(stat -c %s "$TEST_DIR/body") bytes"
# a cursor the clock may have changed (its time passed) gets the whole answer
expect "$P?since=${cursor%-*}-1000" 200 '.runs == 450 and (.cursor | startswith("'"${cursor%-*}-"'"))' "a cursor past its time"
# a new event: the same cursor gets the new answer
page_event 450 kickstart.inv.start $((T0 + 450)) | kcat -P -b "$KAFKA" -t "${PANO_KAFKA_TOPIC_PREFIX}kickstart" -K $'\t'
wait_until 30 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-*/_count?q=wf_uuid:$PAGE_WF' | jq .count) == 891 ]]" ||
    fail "the new run's event did not arrive"
wait_until 30 es_summarized_is 891 "$PAGE_WF" || fail "the summaries hold $(es_summarized "$PAGE_WF") of its 891 events"
expect "$P?since=$cursor" 200 '(has("unchanged") | not) and .runs == 451 and .cursor != "'"$cursor"'"
    and .stats.jobs.by_state.running == 11' "a refresh after a new event"
expect "$P/jobs?limit=1" 200 '.total == 451 and .jobs[0].id == "p_ID0450"' "the new run listed"
expect "$P?since=nonsense" 400 '.error | test("not a cursor")' "a bad cursor"
expect "$P/jobs?state=bogus" 400 '.error | test("not a state")' "a bad state"
expect "$P/jobs?limit=0" 400 '.error | test("limit")' "a bad limit"
expect "$P/jobs?offset=-1" 400 '.error | test("offset")' "a bad offset"
expect "$P/jobs?sort=up" 400 '.error | test("sort")' "a bad order"
expect "$P/timeline?from=$T0" 400 '.error | test("both or neither")' "a window without its end"
expect "$P/timeline?from=$((T0 + 10))&to=$T0" 400 '.error | test("before")' "a window backwards"
expect "$P/timeline?bins=0" 400 '.error | test("bins")' "no bins"

# errors: JSON with their status
expect /api/workflows/not-a-uuid 400 '.error | test("not a workflow UUID")' "a bad UUID"
expect "/api/workflows/$(cat /proc/sys/kernel/random/uuid)" 404 '.error | test("no events")' "an unknown workflow"
expect "/api/workflows/$WF/jobs/nobody" 404 '.error | test("no job")' "an unknown job"
expect "/api/workflows/$WF/jobs/a%22b" 400 '.error | test("not a job name")' "a bad job name"
expect "/api/workflows/$WF/series?metric=bogus" 400 '.error | test("unknown metric")' "an unknown metric"
expect "/api/workflows/$WF/series?metric=cpu&step=-1" 400 '.error | test("step")' "a bad step"
expect "/api/workflows/$WF/elsewhere" 404 '.error | test("no such API")' "an unknown API"
expect "/api/workflows?since=forever" 400 '.error | test("since")' "a bad since"
[[ $(api /etc/passwd) == 404 ]] || fail "a path outside the pages was served"
[[ $(api /../explorer/main.c) == 404 ]] || fail "a path outside the pages was served"
# GET only
for m in POST PUT DELETE; do
    code=$(curl -sS -o /dev/null -w '%{http_code}' -X $m "http://127.0.0.1:$port/api/workflows")
    [[ $code == 405 ]] || fail "$m was answered with $code, not 405"
done
# the pages and their headers
curl -sS -D "$TEST_DIR/headers" -o "$TEST_DIR/index.html" "http://127.0.0.1:$port/" || fail "GET / failed"
grep -qi "^content-security-policy: default-src 'none'; script-src 'self';" "$TEST_DIR/headers" ||
    fail "no Content-Security-Policy without inline script: $(cat "$TEST_DIR/headers")"
grep -qi '^x-content-type-options: nosniff' "$TEST_DIR/headers" || fail "no nosniff"
grep -q '<script src="app.js"' "$TEST_DIR/index.html" || fail "the page does not load app.js"
grep -q '<script>' "$TEST_DIR/index.html" && fail "an inline script in the page"
[[ $(api /vendor/chart.js) == 200 ]] || fail "Chart.js is not served (libjs-chart.js)"
[[ $(api /app.js) == 200 ]] || fail "app.js is not served"

# basic authentication: with a password, nothing without it
printf 's3cret pass\n' >"$TEST_DIR/password"
main_port=$port
PANO_EXPLORER_PASSWORD_FILE=$TEST_DIR/password serve explorer-auth
aport=$port
port=$main_port
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$aport/api/workflows")
[[ $code == 401 ]] || fail "without credentials: HTTP $code, not 401"
code=$(curl -sS -o /dev/null -w '%{http_code}' -u pano:wrong "http://127.0.0.1:$aport/api/workflows")
[[ $code == 401 ]] || fail "with a wrong password: HTTP $code, not 401"
code=$(curl -sS -o /dev/null -w '%{http_code}' -u 'pano:s3cret pass' "http://127.0.0.1:$aport/api/workflows")
[[ $code == 200 ]] || fail "with the password: HTTP $code, not 200"
grep -q "s3cret" "$TEST_DIR"/explorer-auth.log && fail "the password is in the log"
# refused: another address without a password, a password on the command line
rc=0
"$EXPLORER" --bind 0.0.0.0 --port 0 >"$TEST_DIR/open.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "needs a password" "$TEST_DIR/open.log" ||
    fail "listening on 0.0.0.0 without a password was not refused (exit $rc): $(cat "$TEST_DIR/open.log")"
rc=0
"$EXPLORER" --port 0 --set pano.explorer.password=oops >"$TEST_DIR/cli.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "command line" "$TEST_DIR/cli.log" ||
    fail "a password on the command line was not refused (exit $rc): $(cat "$TEST_DIR/cli.log")"
# an empty password file is no password
printf '\n' >"$TEST_DIR/empty-password"
rc=0
PANO_EXPLORER_PASSWORD_FILE=$TEST_DIR/empty-password "$EXPLORER" --bind 0.0.0.0 --port 0 >"$TEST_DIR/empty.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "first line is empty" "$TEST_DIR/empty.log" ||
    fail "an empty password file was not refused (exit $rc): $(cat "$TEST_DIR/empty.log")"
stop_all
if [[ ${PANO_TEST_VALGRIND:-} == 1 ]]; then
    reports=("$TEST_DIR"/valgrind.*)
    ((${#reports[@]} == 5)) || fail "expected 5 valgrind reports (5 explorers), found ${#reports[@]}"
fi
log "PASS"
