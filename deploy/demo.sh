#!/usr/bin/env bash
# A newcomer's first run: install, build, start the local stack, run a small
# monitored workflow end to end and show what landed in Elasticsearch.
#
#   deploy/demo.sh
#
# Leaves the local stack running (deploy/local/pano-stack down stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "Installing build dependencies"
bash deploy/install-deps.sh

say "Building"
[[ -f build/build.ninja ]] || meson setup build >/dev/null
ninja -C build >/dev/null

say "Starting the local stack (RabbitMQ, Kafka, Elasticsearch)"
bash deploy/local/pano-stack up
eval "$(bash deploy/local/pano-stack env)"

logs=build/demo
mkdir -p "$logs"
say "Starting pano-bridge and pano-indexer (logs in $logs/)"
build/broker-bridge/pano-bridge >"$logs/bridge.log" 2>&1 &
bridge=$!
build/indexer/pano-indexer >"$logs/indexer.log" 2>&1 &
indexer=$!
trap 'kill -TERM $bridge $indexer 2>/dev/null; wait $bridge $indexer 2>/dev/null || true' EXIT
for _ in $(seq 150); do grep -q consuming "$logs/bridge.log" && break; sleep 0.2; done

export PEGASUS_WF_UUID=$(cat /proc/sys/kernel/random/uuid)
export PEGASUS_WF_LABEL=demo
say "Running a three-job workflow $PEGASUS_WF_UUID under pano-monitor"
PEGASUS_DAG_JOB_ID=generate_ID01 build/publishers/monitor/pano-monitor -- \
    sh -c 'head -c 20000000 /dev/urandom > '"$logs"'/data.bin'
PEGASUS_DAG_JOB_ID=checksum_ID02 build/publishers/monitor/pano-monitor -- \
    sha256sum "$logs/data.bin"
PEGASUS_DAG_JOB_ID=fails_ID03 build/publishers/monitor/pano-monitor -- \
    sh -c 'echo "this job fails on purpose" >&2; exit 4' || echo "(exit status $? passed through)"

say "Waiting for the events to be searchable"
query='{"size":100,"sort":[{"@timestamp":"asc"}],"query":{"term":{"wf_uuid":"'$PEGASUS_WF_UUID'"}}}'
for _ in $(seq 75); do
    n=$(curl -fsS "$PANO_ES_URL/pano-*/_count" -H 'Content-Type: application/json' \
        -d '{"query":{"term":{"wf_uuid":"'$PEGASUS_WF_UUID'"}}}' 2>/dev/null | jq -r '.count // 0')
    [[ $n -ge 6 ]] && break
    sleep 0.2
done

say "What Elasticsearch holds for workflow $PEGASUS_WF_UUID"
curl -fsS "$PANO_ES_URL/pano-*/_search" -H 'Content-Type: application/json' -d "$query" |
    jq -r '["@timestamp","event","job","exit","duration_s","cpu_s","maxrss_kB"],
           (.hits.hits[]._source | [."@timestamp", .event, .dag_job_id,
             (.exitcode // ""), (.duration // ""), (.remote_cpu_time // ""), (.maxrss // "")])
           | @tsv' | { command -v column >/dev/null && column -t -s $'\t' || cat; }
echo
echo "Query it yourself:"
echo "  curl -s '$PANO_ES_URL/pano-*/_search?q=wf_uuid:$PEGASUS_WF_UUID' | jq ."
