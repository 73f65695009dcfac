#!/usr/bin/env bash
# A newcomer's first run: install, build, run a small workflow through every
# publisher into the embedded store (no services: nothing runs but the
# explorer, on loopback) and show what it holds. With --pipeline, the same
# workflow goes through the local stack instead: RabbitMQ, pano-bridge,
# Kafka, pano-indexer, Elasticsearch.
#
#   deploy/demo.sh [--build-dir DIR]                      the embedded store
#   deploy/demo.sh --pipeline [--data-dir DIR] [--build-dir DIR]
#
# The workflow has five jobs under one workflow UUID: three run under
# pano-monitor (one writes data and sends a custom metric with pano-emit, one
# prints a MONITORING_PAYLOAD block, one fails on purpose), one stages its
# output with pano-transfer, and one publishes a real Darshan log with
# pano-darshan. Every publisher also writes what it sends to a file (-o), so
# the demo knows exactly which events must land, waits for each of them and
# fails, naming what is missing, if one does not.
#
# The embedded store is the default one (pano.store, PANO_STORE; else
# $XDG_DATA_HOME/pano/store or ~/.local/share/pano/store), which pano-query
# and pano-explorer read when no service is configured.
#
# Ends with the address of the workflow's page in pano-explorer, which it
# leaves running (on pano.explorer.port, 8095; PANO_EXPLORER_PORT=N picks
# another), like the local stack (deploy/local/pano-stack down stops that).
# Exits non-zero, with the failing component's name and the end of its log,
# when a service or daemon does not start or an event does not land.
#
# With --pipeline, the stack runs where pano-stack's settings say: --data-dir
# (PANO_STACK_DIR) and the ports in PANO_AMQP_PORT, PANO_RABBITMQ_MGMT_PORT,
# PANO_KAFKA_PORT, PANO_KAFKA_CONTROLLER_PORT, PANO_ES_PORT
# (deploy/local/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; }
build=build
pipeline=""
while (($#)); do
    case $1 in
        --pipeline) pipeline=1; shift ;;
        --data-dir) export PANO_STACK_DIR=${2:?--data-dir needs a directory}; shift 2 ;;
        --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# fail COMPONENT MESSAGE [LOG]: say what failed, show the end of its log, exit 1.
fail() {
    printf '\ndemo: FAILED: %s: %s\n' "$1" "$2" >&2
    if [[ -n ${3:-} && -s $3 ]]; then
        printf -- '--- last lines of %s ---\n' "$3" >&2
        tail -n 25 "$3" >&2
    fi
    exit 1
}

say "Installing build dependencies"
bash deploy/install-deps.sh || fail install-deps "deploy/install-deps.sh failed"

say "Building in $build/"
[[ -f $build/build.ninja ]] || meson setup "$build" >/dev/null || fail build "meson setup failed"
ninja -C "$build" >/dev/null || fail build "ninja -C $build failed (run it to see why)"
bin=$build
logs=$(realpath "$build")/demo
# the pano-explorer an earlier demo left running
if [[ -f $logs/pano-explorer.pid ]]; then
    old=$(cat "$logs/pano-explorer.pid")
    [[ $(cat "/proc/$old/comm" 2>/dev/null) == pano-explorer ]] && kill -TERM "$old" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
fi
rm -rf "$logs"
mkdir -p "$logs"

if [[ -n $pipeline ]]; then
    say "Starting the local stack (RabbitMQ, Kafka, Elasticsearch)"
    bash deploy/local/pano-stack up || fail pano-stack "the local stack did not start (its message is above)"
    eval "$(bash deploy/local/pano-stack env)"
else
    # No service: whatever the environment says of brokers and Elasticsearch.
    unset PANO_AMQP_URL PEGASUS_AMQP_URL KICKSTART_MON_URL PANO_ES_URL
    store=${PANO_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/pano/store}
    export PANO_STORE=$store # the publishers write it (and their copies, -o)
fi

# start NAME READY_PATTERN CMD...: start a daemon, wait until its log shows
# READY_PATTERN; fail with its log if it exits or does not get there in 60 s.
pids=() names=()
trap '((${#pids[@]} == 0)) || { kill -TERM "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; } || true' EXIT
start() {
    local name=$1 ready=$2 log=$logs/$1.log
    shift 2
    "$@" >"$log" 2>&1 &
    pids+=($!) names+=("$name")
    local pid=$! deadline=$((SECONDS + 60))
    until grep -q -- "$ready" "$log"; do
        kill -0 "$pid" 2>/dev/null || fail "$name" "exited at start" "$log"
        ((SECONDS < deadline)) || fail "$name" "not ready after 60 s (no '$ready' in its log)" "$log"
        sleep 0.2
    done
    echo "$name is ready (pid $pid, log $log)"
}
if [[ -n $pipeline ]]; then
    say "Starting pano-bridge and pano-indexer"
    start pano-bridge "consuming" "$bin/broker-bridge/pano-bridge"
    start pano-indexer "assigned [0-9]* partition" "$bin/indexer/pano-indexer"
fi

# The workflow. Every publisher appends a copy of what it sends to sent.jsonl;
# pano-monitor exports -o to its task, so pano-emit and pano-transfer inside a
# job do too.
sent=$logs/sent.jsonl
export PEGASUS_WF_UUID=$(cat /proc/sys/kernel/random/uuid)
export PEGASUS_WF_LABEL=demo
monitor() { # JOB_ID CMD...: run CMD as job JOB_ID under pano-monitor
    local job=$1
    shift
    PEGASUS_DAG_JOB_ID=$job "$bin/publishers/monitor/pano-monitor" -i 0.5 -o "$sent" -- "$@" \
        2>>"$logs/publishers.log"
}
say "Running the workflow $PEGASUS_WF_UUID"
echo "generate_ID01: writes 50 MB, reports a custom metric with pano-emit"
PANO_EMIT=$bin/publishers/emit/pano-emit monitor generate_ID01 sh -c '
    head -c 50000000 /dev/urandom >"$1/data.bin" && sleep 1 &&
    "$PANO_EMIT" demo.records_written 50000 --tag unit=records' sh "$logs" ||
    fail generate_ID01 "the job failed" "$logs/publishers.log"
echo "checksum_ID02: checksums the data, reports the digest in a MONITORING_PAYLOAD block"
monitor checksum_ID02 sh -c '
    sum=$(sha256sum "$1/data.bin" | cut -c1-64) &&
    printf "@@@MONITORING_PAYLOAD - START@@@{\"ts\": %s, \"monitoring_event\": \"demo.checksum\", \"payload\": [{\"sha256\": \"%s\"}]}@@@MONITORING_PAYLOAD - END@@@\n" "$(date +%s)" "$sum"' \
    sh "$logs" || fail checksum_ID02 "the job failed" "$logs/publishers.log"
echo "stage_out_ID03: pano-transfer copies the data to its destination"
PANO_TRANSFER=$bin/publishers/transfer/pano-transfer monitor stage_out_ID03 sh -c '
    mkdir -p "$1/out" && "$PANO_TRANSFER" copy "$1/data.bin" "$1/out/data.bin"' sh "$logs" ||
    fail stage_out_ID03 "the job failed" "$logs/publishers.log"
echo "ior_ID04: the Darshan log of an MPI-IO job, published with pano-darshan"
PEGASUS_DAG_JOB_ID=ior_ID04 "$bin/publishers/darshan/pano-darshan" -o "$sent" \
    tests/data/darshan/mpi-io-test-x86_64-3.5.0.darshan 2>>"$logs/publishers.log" ||
    fail pano-darshan "could not publish tests/data/darshan/mpi-io-test-x86_64-3.5.0.darshan" \
        "$logs/publishers.log"
echo "fails_ID05: exits 4 on purpose"
status=0
monitor fails_ID05 sh -c 'echo "this job fails on purpose" >&2; exit 4' 2>/dev/null || status=$?
[[ $status == 4 ]] || fail fails_ID05 "pano-monitor exited $status, not the task's 4" "$logs/publishers.log"
if grep -q 'ERROR' "$logs/publishers.log"; then
    fail publishers "a publisher reported an error" "$logs/publishers.log"
fi

expected=$(wc -l <"$sent")
if [[ -n $pipeline ]]; then
    say "Waiting for the $expected events sent to be searchable"
    count() {
        curl -fsS "$PANO_ES_URL/pano-*/_count" -H 'Content-Type: application/json' \
            -d '{"query":{"term":{"wf_uuid":"'"$PEGASUS_WF_UUID"'"}}}' 2>/dev/null | jq -r '.count // 0'
    }
    deadline=$((SECONDS + 90)) n=0
    while n=$(count) && ((n < expected)); do
        for i in "${!pids[@]}"; do
            kill -0 "${pids[$i]}" 2>/dev/null ||
                fail "${names[$i]}" "exited while the events were on their way" "$logs/${names[$i]}.log"
        done
        if ((SECONDS >= deadline)); then
            landed=$(curl -fsS "$PANO_ES_URL/pano-*/_search" -H 'Content-Type: application/json' \
                -d '{"size":1000,"_source":["event_id"],"query":{"term":{"wf_uuid":"'"$PEGASUS_WF_UUID"'"}}}' |
                jq -r '.hits.hits[]._source.event_id')
            echo "demo: $n of $expected events landed; missing:" >&2
            jq -r '"\(.event_id) \(.event) \(.dag_job_id // "")"' "$sent" | grep -v -F -f <(echo "${landed:-none}") >&2 || true
            echo "--- pano-bridge ---" >&2; tail -n 10 "$logs/pano-bridge.log" >&2
            fail pano-indexer "not every event reached Elasticsearch in 90 s" "$logs/pano-indexer.log"
        fi
        sleep 0.5
    done
    ((n == expected)) || fail pano-indexer "$n events for the workflow, $expected sent (duplicates?)"

    say "What Elasticsearch holds for workflow $PEGASUS_WF_UUID ($n events, all $expected sent)"
    curl -fsS "$PANO_ES_URL/pano-*/_search" -H 'Content-Type: application/json' \
        -d '{"size":1000,"sort":[{"@timestamp":"asc"},{"seq":"asc"}],"query":{"term":{"wf_uuid":"'"$PEGASUS_WF_UUID"'"}}}' |
        jq -r '["@timestamp","event","job","exit","duration_s","cpu_s","maxrss_kB","bytes"],
               (.hits.hits[]._source | [."@timestamp", .event, (.dag_job_id // ""),
                 (.exitcode // ""), (.duration // ""), (.remote_cpu_time // ""), (.maxrss // ""),
                 (.bytes_transferred // "")])
               | @tsv' | column -t -s $'\t'
else
    say "What the embedded store holds for workflow $PEGASUS_WF_UUID"
    # every file of the store, read-only: the events of the workflow, once each
    stored() { # SQL over the workflow's events
        local f
        for f in "$store"/*.pano.sqlite; do
            sqlite3 -separator $'\t' "file:$f?mode=ro" "$1"
        done
    }
    n=$(stored "SELECT event_id FROM events WHERE wf_uuid = '$PEGASUS_WF_UUID'" | sort -u | wc -l)
    if ((n != expected)); then
        echo "demo: $n of $expected events in the store; missing:" >&2
        jq -r '"\(.event_id) \(.event) \(.dag_job_id // "")"' "$sent" |
            grep -v -F -f <(stored "SELECT event_id FROM events WHERE wf_uuid = '$PEGASUS_WF_UUID'"; echo none) >&2 || true
        fail store "not every event sent is in $store" "$logs/publishers.log"
    fi
    echo "$n events, all $expected sent, in $store"
    { printf 'ts\tevent\tjob\texit\tduration_s\tcpu_s\tmaxrss_kB\tbytes\n'
      stored "SELECT printf('%.3f', ts), event, json_extract(doc, '$.dag_job_id'),
                     json_extract(doc, '$.exitcode'), json_extract(doc, '$.duration'),
                     json_extract(doc, '$.remote_cpu_time'), json_extract(doc, '$.maxrss'),
                     json_extract(doc, '$.bytes_transferred')
              FROM events WHERE wf_uuid = '$PEGASUS_WF_UUID' ORDER BY ts, json_extract(doc, '$.seq')"
    } | column -t -s $'\t'
fi
say "pano-query status $PEGASUS_WF_UUID"
"$bin/query/pano-query" status "$PEGASUS_WF_UUID" || fail pano-query "could not read the workflow back"
say "pano-explorer: the workflow in a browser"
# In a session of its own, so that it outlives the demo and its terminal.
setsid "$bin/explorer/pano-explorer" >"$logs/pano-explorer.log" 2>&1 </dev/null &
explorer=$!
deadline=$((SECONDS + 30))
until url=$(sed -n 's|.* on \(http://[^ ]*/\).*|\1|p' "$logs/pano-explorer.log") && [[ -n $url ]]; do
    kill -0 "$explorer" 2>/dev/null ||
        fail pano-explorer "exited at start (another program on its port? PANO_EXPLORER_PORT=N picks another)" \
            "$logs/pano-explorer.log"
    ((SECONDS < deadline)) || fail pano-explorer "not serving after 30 s" "$logs/pano-explorer.log"
    sleep 0.2
done
echo "$explorer" >"$logs/pano-explorer.pid"
jobs=$(curl -fsS "${url}api/workflows/$PEGASUS_WF_UUID" | jq '.jobs | length') ||
    fail pano-explorer "does not serve the workflow" "$logs/pano-explorer.log"
echo "pano-explorer is serving the workflow's $jobs jobs (pid $explorer, log $logs/pano-explorer.log)"

if [[ -n $pipeline ]]; then
    cat <<EOF

Every event of the workflow landed. Look at it yourself:
  eval "\$(deploy/local/pano-stack env)"
  $bin/query/pano-query status $PEGASUS_WF_UUID      # jobs by state, what failed
  $bin/query/pano-query stats $PEGASUS_WF_UUID       # per transformation and host
  $bin/query/pano-query series $PEGASUS_WF_UUID --metric cpu --step 1s
  $bin/query/pano-query job $PEGASUS_WF_UUID stage_out_ID03
  curl -s "\$PANO_ES_URL/pano-*/_search?q=wf_uuid:$PEGASUS_WF_UUID&size=100" | jq '.hits.hits[]._source'
The daemons' logs and the events sent are in $logs/.
The stack keeps running (deploy/local/pano-stack down stops it), and so does
pano-explorer (kill $explorer stops it).
EOF
else
    cat <<EOF

Every event of the workflow is in the embedded store $store. Look at it yourself:
  $bin/query/pano-query --store $store status $PEGASUS_WF_UUID      # jobs by state, what failed
  $bin/query/pano-query --store $store stats $PEGASUS_WF_UUID       # per transformation and host
  $bin/query/pano-query --store $store series $PEGASUS_WF_UUID --metric cpu --step 1s
  $bin/query/pano-query --store $store job $PEGASUS_WF_UUID stage_out_ID03
  sqlite3 $store/*.pano.sqlite "SELECT event, count(*) FROM events GROUP BY 1"
(with no service configured, pano-query and pano-explorer find the default store without
--store). The events sent and the logs are in $logs/. Nothing else runs but
pano-explorer (kill $explorer stops it). deploy/demo.sh --pipeline runs the same
workflow through RabbitMQ, Kafka and Elasticsearch.
EOF
fi
cat <<EOF

The workflow in a browser:
  ${url}#/wf/$PEGASUS_WF_UUID
EOF
