#!/usr/bin/env bash
# The same answers from both stores: the same events go through the real
# pipeline into Elasticsearch and, with no broker, into the embedded store
# (SQLite); every pano-query command, --json, must give the same document
# from both, apart from the moment of asking.
#
# Workflows: the five real Pegasus runs of tests/data/pegasus (sent as
# pegasus-monitord sends them, through pano-emit --events), and a workflow
# made by pano's own publishers (pano-monitor tasks that succeed, fail, are
# killed, run long; a Darshan log, a transfer, custom metrics) with one task
# still running while both stores are asked. The publishers keep a copy of
# what they send (pano.output), which is then sent into the embedded store.
# And a workflow in Pegasus's kickstart shape (samples without delta: the
# indexer and the store's writer each give them theirs, and close each
# run's gauges at its end), produced straight into Kafka and written into
# the store.
source "$(dirname "$0")/lib.sh"
require_stack
: "${PANO_SOURCE:?}"
QUERY=$PANO_BUILD/query/pano-query
EMIT=$PANO_BUILD/publishers/emit/pano-emit
MONITOR=$PANO_BUILD/publishers/monitor/pano-monitor
WORKLOAD=$PANO_BUILD/tests/integration/pano-workload
DATA=$PANO_SOURCE/tests/data/pegasus
STORE=$TEST_DIR/store
COPY=$TEST_DIR/copy.jsonl

start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

into_store() { # FILE: its events into the embedded store, no broker
    PANO_AMQP_URL= "$EMIT" --set pano.store="$STORE" --events "$1" 2>>"$TEST_DIR/emit.log" ||
        fail "pano-emit --events $1 into the store: $(tail -3 "$TEST_DIR/emit.log")"
}

# ---- the Pegasus runs, into both
samples=(process_wf_success process_wf_failure sample_wf_held hierarchical_wf_success hierarchical_wf_failure)
total=0
for s in "${samples[@]}"; do
    "$EMIT" --events "$DATA/$s/events.jsonl" 2>>"$TEST_DIR/emit.log" || fail "pano-emit --events $s"
    into_store "$DATA/$s/events.jsonl"
    total=$((total + $(wc -l <"$DATA/$s/events.jsonl")))
done

# ---- a message both refuse (no wf_uuid), kept with the same reason
echo '{"event":"stampede.xwf.start","ts":1764000000,"event_id":"refused-1"}' >"$TEST_DIR/refused.jsonl"
"$EMIT" --events "$TEST_DIR/refused.jsonl" 2>>"$TEST_DIR/emit.log" || fail "pano-emit --events refused.jsonl"
PANO_AMQP_URL= "$EMIT" --set pano.store="$STORE" --events "$TEST_DIR/refused.jsonl" 2>>"$TEST_DIR/emit.log" &&
    fail "the embedded store took an event without wf_uuid"
grep -q "refused: missing required field 'wf_uuid'; kept in the dead letters of $STORE/" "$TEST_DIR/emit.log" ||
    fail "pano-emit did not say why the store refused it: $(tail -2 "$TEST_DIR/emit.log")"

# ---- pano's own publishers, one task still running
WF=$(cat /proc/sys/kernel/random/uuid)
export PEGASUS_WF_UUID=$WF PEGASUS_WF_LABEL=differential PEGASUS_XFORMATION=burn PEGASUS_SITE=local
export PANO_OUTPUT=$COPY
job() { # N CMD...
    local n=$1
    shift
    PEGASUS_DAG_JOB_ID=$(printf 'burn_ID%02d' "$n") "$MONITOR" -i 0.2 -- "$@" >/dev/null 2>>"$TEST_DIR/monitor.log"
}
for n in $(seq 1 8); do
    case $n in
        3) job 3 sh -c "$WORKLOAD burn 0.3 >/dev/null; exit 3" || true ;;
        5) job 5 sh -c "$WORKLOAD burn 0.3 >/dev/null; kill -9 \$\$" || true ;;
        7) job 7 "$WORKLOAD" burn 1.2 ;;
        *) job "$n" "$WORKLOAD" burn 0.3 ;;
    esac
done
# a job named as a number: its name is a keyword in both stores ("0042", not 42)
PEGASUS_DAG_JOB_ID=0042 "$MONITOR" -i 0.2 -- "$WORKLOAD" burn 0.3 >/dev/null 2>>"$TEST_DIR/monitor.log" ||
    fail "pano-monitor: $(tail -3 "$TEST_DIR/monitor.log")"
PEGASUS_DAG_JOB_ID=ior_ID09 "$PANO_BUILD/publishers/darshan/pano-darshan" \
    "$PANO_SOURCE/tests/data/darshan/mpi-io-test-x86_64-3.5.0.darshan" 2>>"$TEST_DIR/darshan.log" ||
    fail "pano-darshan: $(tail -3 "$TEST_DIR/darshan.log")"
head -c 200000 /dev/urandom >"$TEST_DIR/input.dat"
PEGASUS_DAG_JOB_ID=stage_ID10 "$PANO_BUILD/publishers/transfer/pano-transfer" copy "$TEST_DIR/input.dat" \
    "$TEST_DIR/staged.dat" 2>>"$TEST_DIR/transfer.log" || fail "pano-transfer: $(tail -3 "$TEST_DIR/transfer.log")"
for v in 0.5 0.25 0.125; do
    PEGASUS_DAG_JOB_ID=burn_ID02 "$EMIT" --tag model=a loss "$v" 2>>"$TEST_DIR/emit.log" || fail "pano-emit"
done
PEGASUS_DAG_JOB_ID=burn_ID20 "$MONITOR" -i 0.2 -- "$WORKLOAD" sleep 600 >/dev/null 2>>"$TEST_DIR/monitor.log" &
running=$!
PIDS+=("$running")
wait_until 30 bash -c "grep -c '\"burn_ID20\"' '$COPY' | awk '{ exit \$1 < 6 }'" || fail "the running task does not sample"
# It stops sampling without an end (its monitor killed): running still, for
# both stores, with a long pano.query.ingest_delay (lost only after that).
kill -KILL "$running"
pkill -KILL -f "pano-workload sleep 600" || true
forget "$running"
unset PANO_OUTPUT
export PANO_QUERY_INGEST_DELAY=3600

# ---- a workflow in Pegasus's shape (kickstart samples without delta, which
# pano-indexer and the store's writer give theirs; stampede job instances;
# failed and running jobs), the benchmarks' generator
PEG=$(cat /proc/sys/kernel/random/uuid)
"$PANO_BUILD/tests/tools/kafka_load" --shape pegasus --jobs 120 --wf "$PEG" --lines "$TEST_DIR/pegasus.jsonl" \
    >"$TEST_DIR/kafka_load.out" 2>&1 || fail "kafka_load: $(tail -3 "$TEST_DIR/kafka_load.out")"
into_store "$TEST_DIR/pegasus.jsonl"
total=$((total + $(wc -l <"$TEST_DIR/pegasus.jsonl")))
sent=$(wc -l <"$COPY")
EVENTS="$TEST_ID-*,-$TEST_ID-summary-*"
want=$((total + sent))
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$EVENTS/_count' | jq .count) -ge $want ]]" ||
    fail "$(curl -fsS "$ES/$EVENTS/_count" | jq .count) of $want events indexed"
into_store "$COPY"
wait_until 60 bash -c "[[ \$(curl -fsS '$ES/$TEST_ID-dead-letter-*/_count' | jq '.count // 0') -ge 1 ]]" ||
    fail "the refused message is not in the dead-letter partition"
es -X POST "$ES/$TEST_ID-*/_refresh" >/dev/null
log "$want events in both stores"

# ---- every command, both ways (tests/tools/same_answers.sh says what may differ)
source "$PANO_SOURCE/tests/tools/same_answers.sh"
differ=0
compare() { # NAME ARGS...: pano-query ARGS --json from both stores
    local name=$1 why SAME_ASKED_FROM=$EPOCHREALTIME
    shift
    "$QUERY" "$@" --json >"$TEST_DIR/es-$name.raw" 2>>"$TEST_DIR/query.log" ||
        fail "$name from Elasticsearch: $(tail -3 "$TEST_DIR/query.log")"
    "$QUERY" --store "$STORE" "$@" --json >"$TEST_DIR/sqlite-$name.raw" 2>>"$TEST_DIR/query.log" ||
        fail "$name from the embedded store: $(tail -3 "$TEST_DIR/query.log")"
    if ! why=$(same_answers "$TEST_DIR" "$name"); then
        log "DIFFERS: $name: $why"
        differ=$((differ + 1))
    fi
}
metrics=$("$QUERY" metrics --tsv | tail -n +2 | cut -f1)
workflows=("$WF")
for s in "${samples[@]}"; do workflows+=("$(head -n 1 "$DATA/$s/events.jsonl" | jq -r .root_xwf_id)"); done
n=0
for wf in "${workflows[@]}"; do
    for cmd in status stats jobs anomalies; do
        compare "$cmd-$wf" "$cmd" "$wf"
        n=$((n + 1))
    done
    for state in running failed killed succeeded; do
        compare "jobs-$state-$wf" jobs "$wf" --state "$state"
        n=$((n + 1))
    done
    for id in $(jq -r '.jobs[].id' "$TEST_DIR/es-jobs-$wf.json" | head -12); do
        compare "job-$id-$wf" job "$wf" "$id"
        n=$((n + 1))
    done
done
for cmd in status stats anomalies; do
    compare "$cmd-$PEG" "$cmd" "$PEG"
    n=$((n + 1))
done
for state in running failed lost; do
    compare "jobs-$state-$PEG" jobs "$PEG" --state "$state"
    n=$((n + 1))
done
for m in $metrics; do
    compare "series-$m" series "$WF" --metric "$m" --step 1s
    compare "series-$m-job" series "$WF" --metric "$m" --step 0.2s --job burn_ID07
    compare "series-$m-pegasus" series "$PEG" --metric "$m" --step 30s
    compare "series-$m-10s" series "$WF" --metric "$m" --step 10s
    n=$((n + 4))
done
# the embedded store answered those from its figures and seconds (store_figures.h)
PANO_LOG_LEVEL=debug "$QUERY" --store "$STORE" series "$WF" --metric rss --step 10s --json \
    2>"$TEST_DIR/figures.log" >/dev/null || fail "series: $(tail -3 "$TEST_DIR/figures.log")"
grep -q "FROM figures WHERE" "$TEST_DIR/figures.log" || fail "the workflow's span was not read from the figures"
grep -q "FROM seconds WHERE" "$TEST_DIR/figures.log" || fail "the series was not read from the seconds"
if grep -q "pano_bucket(pano_ms(ts)" "$TEST_DIR/figures.log"; then
    fail "a series of whole seconds read the samples: $(grep -m1 "pano_bucket(pano_ms(ts)" "$TEST_DIR/figures.log")"
fi
compare workflows workflows --since 3650d --limit 100
n=$((n + 1))
# rejected: the same message and reason (pano-bridge's, the store's own)
for s in es sqlite; do
    "$QUERY" $([[ $s == sqlite ]] && echo --store "$STORE") rejected --json 2>>"$TEST_DIR/query.log" |
        jq -c '[.[] | {reason, event, event_id, original: (.original | fromjson)}]' >"$TEST_DIR/$s-rejected.json" ||
        fail "rejected from $s: $(tail -3 "$TEST_DIR/query.log")"
done
jq -e '. == [{"reason": "missing required field '"'wf_uuid'"'", "event": "stampede.xwf.start", "event_id": "refused-1",
             "original": {"event": "stampede.xwf.start", "ts": 1764000000, "event_id": "refused-1"}}]' \
    "$TEST_DIR/sqlite-rejected.json" >/dev/null || fail "rejected from the embedded store: $(cat "$TEST_DIR/sqlite-rejected.json")"
diff "$TEST_DIR/es-rejected.json" "$TEST_DIR/sqlite-rejected.json" >&2 || fail "rejected differs between the stores"
n=$((n + 1))

# pano-explorer's API, one explorer on each store
port=$(free_ports 2)
start explorer-es "$PANO_BUILD/explorer/pano-explorer" --port "$port"
start explorer-sqlite "$PANO_BUILD/explorer/pano-explorer" --port "$((port + 1))" --store "$STORE"
wait_until 30 curl -fsS -o /dev/null "http://127.0.0.1:$port/api/metrics" || fail "pano-explorer (Elasticsearch) did not start"
wait_until 30 curl -fsS -o /dev/null "http://127.0.0.1:$((port + 1))/api/metrics" || fail "pano-explorer (store) did not start"
# The cursor of a refresh counts what each store holds (Elasticsearch's
# summaries too); a running workflow's overview ends at the moment of asking.
api_filter='if type == "object" then del(.cursor) else . end
  | if type == "object" and ([.. | objects | select(.state? == "running")] | length > 0) then del(.overview) else . end'
api() { # NAME PATH
    local name=$1 p=$2 s why SAME_ASKED_FROM=$EPOCHREALTIME
    for s in es sqlite; do
        curl -fsS "http://127.0.0.1:$([[ $s == es ]] && echo "$port" || echo "$((port + 1))")$p" >"$TEST_DIR/$s-$name.raw" ||
            fail "GET $p from the explorer on $s"
    done
    if ! why=$(same_answers "$TEST_DIR" "$name" "$api_filter"); then
        log "DIFFERS: GET $p: $why"
        differ=$((differ + 1))
    fi
    n=$((n + 1))
}
root=$(head -n 1 "$DATA/hierarchical_wf_failure/events.jsonl" | jq -r .root_xwf_id)
for wf in "$WF" "$root"; do
    api "api-$wf" "/api/workflows/$wf?series=cpu,rss,read,write"
    api "api-jobs-$wf" "/api/workflows/$wf/jobs?limit=100"
    api "api-failed-$wf" "/api/workflows/$wf/jobs?state=failed"
    span=$(jq -r '"from=\(.first_event)&to=\(.last_event + 1)"' "$TEST_DIR/es-status-$wf.raw")
    api "api-timeline-$wf" "/api/workflows/$wf/timeline?bins=50&$span"
done
api api-series "/api/workflows/$WF/series?metric=rss&step=1s"
api api-job "/api/workflows/$WF/jobs/burn_ID07"
compare job-0042 job "$WF" 0042
n=$((n + 1))
for s in es sqlite; do
    rc=0
    "$QUERY" $([[ $s == sqlite ]] && echo --store "$STORE") job "$WF" 42 >/dev/null 2>"$TEST_DIR/job42.log" || rc=$?
    ((rc == 3)) && grep -q "has no job 42" "$TEST_DIR/job42.log" ||
        fail "job 42 from $s (the workflow has 0042): exit $rc, $(cat "$TEST_DIR/job42.log")"
done
rc=0
"$QUERY" --store "$STORE" status "$(cat /proc/sys/kernel/random/uuid)" >/dev/null 2>"$TEST_DIR/unknown.log" || rc=$?
((rc == 3)) && grep -q "no events of workflow .* in the embedded store $STORE" "$TEST_DIR/unknown.log" ||
    fail "an unknown workflow in the store: exit $rc, $(cat "$TEST_DIR/unknown.log")"
api api-workflows "/api/workflows?since=3650d&limit=100"
((differ == 0)) || fail "$differ of $n answers differ between Elasticsearch and the embedded store"
log "$n answers, the same from both stores"

# the answers are not empty: the figures a user would look for are there
jq -e '.jobs.total == 10 and .jobs.by_state.running == 1 and .jobs.by_state.failed == 1 and .jobs.by_state.killed == 1' \
    "$TEST_DIR/sqlite-status-$WF.json" >/dev/null || fail "status: $(jq -c .jobs "$TEST_DIR/sqlite-status-$WF.json")"
jq -e 'length >= 6' "$TEST_DIR/sqlite-workflows.json" >/dev/null || fail "workflows: $(jq -c . "$TEST_DIR/sqlite-workflows.json")"

# ---- the store's own summaries: the answers above came from them, and a
# store written before it kept any (its summaries table dropped, on a copy)
# answers the same from its events
for wf in "${workflows[@]}" "$PEG"; do
    "$QUERY" --store "$STORE" --log-level debug status "$wf" --json 2>"$TEST_DIR/debug.log" >/dev/null ||
        fail "status $wf: $(tail -3 "$TEST_DIR/debug.log")"
    grep -q "summary row(s) of $wf read" "$TEST_DIR/debug.log" ||
        fail "the embedded store did not answer status $wf from its summaries: $(grep -i summar "$TEST_DIR/debug.log")"
done
OLD=$TEST_DIR/old-store
mkdir "$OLD"
for f in "$STORE"/*.pano.sqlite; do
    sqlite3 "$f" ".backup '$OLD/$(basename "$f")'" || fail "copying $f"
    sqlite3 "$OLD/$(basename "$f")" "DROP TABLE summaries" || fail "dropping the summaries of the copy"
done
old_differ=0 old_n=0
for wf in "${workflows[@]}" "$PEG"; do
    for cmd in status stats jobs anomalies "jobs --state failed"; do
        name="old-${cmd// /-}-$wf"
        SAME_ASKED_FROM=$EPOCHREALTIME
        "$QUERY" --store "$STORE" $cmd "$wf" --json >"$TEST_DIR/es-$name.raw" 2>>"$TEST_DIR/query.log" &&
            "$QUERY" --store "$OLD" --log-level debug $cmd "$wf" --json >"$TEST_DIR/sqlite-$name.raw" 2>"$TEST_DIR/debug.log" ||
            fail "$cmd $wf: $(tail -3 "$TEST_DIR/query.log" "$TEST_DIR/debug.log")"
        ! grep -q "summary row(s)" "$TEST_DIR/debug.log" || fail "a store without summaries read some"
        if ! why=$(same_answers "$TEST_DIR" "$name"); then
            log "DIFFERS: $cmd $wf, from the summaries and from the events: $why"
            old_differ=$((old_differ + 1))
        fi
        old_n=$((old_n + 1))
    done
done
((old_differ == 0)) || fail "$old_differ of $old_n answers differ between the store's summaries and its events"
log "$old_n answers the same from the store's summaries and, without them, from its events"

# a damaged summary: said so, and the events read instead, with the same answer
BAD=$TEST_DIR/damaged-store
mkdir "$BAD"
for f in "$STORE"/*.pano.sqlite; do
    sqlite3 "$f" ".backup '$BAD/$(basename "$f")'" || fail "copying $f"
    sqlite3 "$BAD/$(basename "$f")" "UPDATE summaries SET doc = '{\"set\":' WHERE wf_uuid = '$PEG'" ||
        fail "damaging the summaries of the copy"
done
SAME_ASKED_FROM=$EPOCHREALTIME
"$QUERY" --store "$STORE" status "$PEG" --json >"$TEST_DIR/es-damaged.raw" 2>>"$TEST_DIR/query.log" &&
    "$QUERY" --store "$BAD" status "$PEG" --json >"$TEST_DIR/sqlite-damaged.raw" 2>"$TEST_DIR/damaged.log" ||
    fail "status from a store with a damaged summary: $(tail -3 "$TEST_DIR/damaged.log")"
grep -q "is damaged (not a summary's JSON): its events are read instead" "$TEST_DIR/damaged.log" ||
    fail "a damaged summary was not reported: $(cat "$TEST_DIR/damaged.log")"
why=$(same_answers "$TEST_DIR" damaged) || fail "status with a damaged summary differs: $why"
log "a damaged summary: $(grep -o 'summary .* read instead' "$TEST_DIR/damaged.log" | head -1); the same status"

stop_all
