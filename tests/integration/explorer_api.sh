#!/usr/bin/env bash
# pano-explorer's API and its rules, over the real stack: what a workflow's
# answers hold, errors as JSON with their status, GET only, the security
# headers, basic authentication, and the addresses and passwords it refuses.
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
expect "/api/workflows/$WF" 200 '.wf_label == "api-test" and (.jobs | length) == 2
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
