#!/usr/bin/env bash
# pano-explorer in a real browser, over the real stack (explorer_browser.sh)
# or the embedded store with no service (explorer_browser.sh --store): a
# workflow run through pano-monitor (a job that fails with exit 3, one whose
# argument is an HTML tag with a script in it, one still running), indexed
# by the real pipeline or written into the store, looked at with headless
# Chromium (tests/browser/explorer.mjs):
# the jobs and exit codes, charts drawn from data, the hostile argument
# shown as text, a job started after the page opened appearing without a
# reload; a workflow of 1,200 jobs: a first paint without a row per job,
# refreshes that back off while nothing changes, the newest 500 listed, more
# at a click, a filter asked of the server, the timeline's overview and a
# drag that zooms into bars; a job's custom metric charted on its page.
# Screenshots of each page land in
# $PANO_BUILD/screenshots/ (store-*.png for the store's).
source "$(dirname "$0")/../integration/lib.sh"
: "${PANO_SOURCE:?}"
STORE=""
if [[ ${1:-} == --store ]]; then
    STORE=$TEST_DIR/store
    export PANO_STORE=$STORE PANO_AMQP_URL= PANO_ES_URL=
else
    require_stack
fi
here=$PANO_SOURCE/tests/browser
command -v chromium >/dev/null || fail "no chromium (deploy/install-deps.sh installs it)"
if [[ ! -d $here/node_modules/puppeteer-core ]]; then
    log "installing puppeteer-core (npm ci)"
    (cd "$here" && npm ci --no-audit --no-fund >"$TEST_DIR/npm.log" 2>&1) ||
        { cat "$TEST_DIR/npm.log" >&2; fail "npm ci failed"; }
fi
MONITOR=$PANO_BUILD/publishers/monitor/pano-monitor
WORKLOAD=$PANO_BUILD/tests/integration/pano-workload
SHOTS=$PANO_BUILD/screenshots
mkdir -p "$SHOTS"

# count WHERE: the events of the store that match (SQL on the embedded
# store's files; a query string query on Elasticsearch)
count() {
    if [[ -n $STORE ]]; then
        local f n=0
        for f in "$STORE"/*.pano.sqlite; do
            [[ -f $f ]] && n=$((n + $(sqlite3 "file:$f?mode=ro" "SELECT count(*) FROM events WHERE $1")))
        done
        echo "$n"
    else
        curl -fsS "$ES/$TEST_ID-*/_count?q=$2" | jq .count
    fi
}

if [[ -z $STORE ]]; then
    start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
    start indexer "$PANO_BUILD/indexer/pano-indexer"
    wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"
fi

WF=$(cat /proc/sys/kernel/random/uuid)
export PEGASUS_WF_UUID=$WF PEGASUS_WF_LABEL=browser-test
HOSTILE='<img src=x onerror=alert(1)>'
job() { PEGASUS_DAG_JOB_ID=$1 "$MONITOR" -i 0.2 -- "${@:2}" >/dev/null 2>>"$TEST_DIR/monitor.log"; }
job burn_ID01 "$WORKLOAD" burn 0.8
job io_ID02 sh -c "head -c 30000000 /dev/urandom >'$TEST_DIR/data' && sleep 0.4 && cat '$TEST_DIR/data' >/dev/null && sleep 0.4"
job fails_ID03 sh -c "$WORKLOAD burn 0.3 >/dev/null; exit 3" || true
# (and sends two values of a custom metric, through the monitor's socket)
EMIT=$PANO_BUILD/publishers/emit/pano-emit
job hostile_ID04 sh -c "'$EMIT' progress 1 && '$EMIT' progress 2.5 && sleep 0.6" "$HOSTILE"
PEGASUS_DAG_JOB_ID=running_ID05 "$MONITOR" -i 0.2 -- "$WORKLOAD" sleep 300 >/dev/null 2>>"$TEST_DIR/monitor.log" &
running=$!
ended() { [[ $(count "wf_uuid = '$WF' AND event = 'kickstart.inv.end'" "wf_uuid:$WF+AND+event:kickstart.inv.end") == 4 ]]; }
wait_until 60 ended || fail "the 4 jobs' end events did not arrive"

# A workflow of 1,200 running jobs, their starts a second apart, produced
# straight to Kafka (or pano-emit --events into the store): more than the
# jobs table shows at once.
BIG_WF=$(cat /proc/sys/kernel/random/uuid)
now=$(date +%s)
for ((i = 0; i < 1200; i++)); do
    printf '%s\t{"event":"kickstart.inv.start","ts":%d,"event_id":"%s-%d","seq":1,"hostname":"node-1","wf_uuid":"%s","wf_label":"big","dag_job_id":"big_ID%04d","xformation":"xf","pid":%d,"exe":"/bin/app","argv":["/bin/app"],"interval":600}\n' \
        "$BIG_WF" $((now - 1200 + i)) "$BIG_WF" "$i" "$BIG_WF" "$i" $((1000 + i))
    if ((i < 1000)); then # the first 1,000 ran 0.5 s each, one after another
        printf '%s\t{"event":"kickstart.inv.end","ts":%d.5,"event_id":"%s-%d-end","seq":2,"hostname":"node-1","wf_uuid":"%s","wf_label":"big","dag_job_id":"big_ID%04d","xformation":"xf","pid":%d,"exe":"/bin/app","exitcode":0,"signal":0,"duration":0.5,"final":{}}\n' \
            "$BIG_WF" $((now - 1200 + i)) "$BIG_WF" "$i" "$BIG_WF" "$i" $((1000 + i))
    fi
done >"$TEST_DIR/big.tsv"
if [[ -n $STORE ]]; then
    cut -f 2 "$TEST_DIR/big.tsv" >"$TEST_DIR/big.jsonl"
    "$PANO_BUILD/publishers/emit/pano-emit" --events "$TEST_DIR/big.jsonl" 2>>"$TEST_DIR/emit.log" ||
        fail "pano-emit --events into the store: $(tail -3 "$TEST_DIR/emit.log")"
else
    kcat -P -l -b "$KAFKA" -t "${PANO_KAFKA_TOPIC_PREFIX}kickstart" -K $'\t' "$TEST_DIR/big.tsv"
fi
big_arrived() { [[ $(count "wf_uuid = '$BIG_WF'" "wf_uuid:$BIG_WF") == 2200 ]]; }
wait_until 60 big_arrived || fail "the big workflow's 1,200 jobs did not arrive"

start explorer "$PANO_BUILD/explorer/pano-explorer" --port 0
wait_until 10 grep -q "serving" "$TEST_DIR/explorer.log" || fail "pano-explorer did not start"
port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$TEST_DIR/explorer.log")

log "opening http://127.0.0.1:$port/ in Chromium"
EARLY_WF=$(cat /proc/sys/kernel/random/uuid) # its page is opened before it has an event
shots=$TEST_DIR/shots
mkdir -p "$shots"
STORE=$STORE ES=$ES INDICES="$TEST_ID-*" BIG_WF=$BIG_WF HOSTILE=$HOSTILE HOSTILE_JOB=hostile_ID04 FAILED_JOB=fails_ID03 \
    NEW_JOB_ID=late_ID06 QUERY="$PANO_BUILD/query/pano-query" EARLY_WF="$EARLY_WF" EARLY_JOB_ID=early_ID01 \
    EARLY_JOB="PEGASUS_WF_UUID=$EARLY_WF PEGASUS_DAG_JOB_ID=early_ID01 '$MONITOR' -i 0.2 -- sleep 0.5 >/dev/null 2>>'$TEST_DIR/monitor.log'" \
    NEW_JOB="PEGASUS_DAG_JOB_ID=late_ID06 '$MONITOR' -i 0.2 -- sleep 1 >/dev/null 2>>'$TEST_DIR/monitor.log'" \
    node "$here/explorer.mjs" "http://127.0.0.1:$port" "$WF" "$shots" 2>&1 | tee "$TEST_DIR/browser.out" >&2
[[ ${PIPESTATUS[0]} == 0 ]] || fail "the browser test failed"
for s in "$shots"/*.png; do
    [[ -s $s ]] || fail "an empty screenshot $s"
    cp "$s" "$SHOTS/${STORE:+store-}$(basename "$s")"
done
for s in workflows workflow job; do
    [[ -s $shots/$s.png ]] || fail "no screenshot $s.png"
done
log "screenshots in $SHOTS"

kill -TERM "$running"
wait "$running" || true # the task's SIGTERM, passed through
keep=()
for p in "${PIDS[@]}"; do [[ $p == "$running" ]] || keep+=("$p"); done
PIDS=("${keep[@]}")
stop_all
log "PASS"
