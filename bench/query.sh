#!/usr/bin/env bash
# Benchmark: pano-query on a big workflow.
#
#   bench/query.sh            (BUILD=build; 10,000 jobs, 1,000,000 samples)
#
# 1. A workflow of BENCH_JOBS jobs of 10 transformations on 50 hosts, each
#    with BENCH_SAMPLES samples 1 s apart (start, online samples with their
#    delta, end; 3 % fail, the last 20 still run), written by awk as
#    pano-monitor would publish them, produced to Kafka keyed by wf_uuid and
#    indexed by pano-indexer (the pipeline from Kafka on; the templates,
#    routing and mappings are the real ones).
# 2. Each query runs BENCH_REPS times (after one warm-up): status, stats,
#    series (cpu, step 60 s, whole workflow) and anomalies, as --json to
#    /dev/null; the median wall time of each is reported.
# Baseline in the same run: the Elasticsearch _count of the workflow's
#    documents (one request, the least a query over this workflow costs).
#
# Environment: PANO_ES_URL, PANO_KAFKA_BROKERS (default the local stack),
# BENCH_JOBS, BENCH_SAMPLES, BENCH_REPS (5), BUILD; BENCH_KEEP=1 leaves the
# indices in place (their prefix and the workflow are printed) for profiling.
# Last line: RESULT query status_ms=... stats_ms=... series_ms=... anomalies_ms=...
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${BENCH_JOBS:-10000}
SAMPLES=${BENCH_SAMPLES:-100}
REPS=${BENCH_REPS:-5}
ES=${PANO_ES_URL:-http://127.0.0.1:${PANO_ES_PORT:-9200}}
export PANO_KAFKA_BROKERS=${PANO_KAFKA_BROKERS:-127.0.0.1:${PANO_KAFKA_PORT:-9092}}
export PANO_ES_URL=$ES
ID="bench$(od -An -N3 -tx1 /dev/urandom | tr -d ' ')"
DIR=$(mktemp -d "/tmp/pano-$ID.XXXXXX")
export PANO_KAFKA_TOPIC_PREFIX="$ID."
export PANO_KAFKA_DEAD_LETTER_TOPIC="$ID.dead-letter"
export PANO_INDEXER_GROUP="$ID"
export PANO_INDEXER_INDEX_PREFIX="$ID-"
export PANO_INDEXER_REPLICAS=${PANO_INDEXER_REPLICAS:-0}
export PANO_INDEXER_STATUS_FILE="$DIR/status.prom"
WF=$(cat /proc/sys/kernel/random/uuid)
IX_PID=

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
cleanup() {
    [[ -n $IX_PID ]] && kill -TERM "$IX_PID" 2>/dev/null && wait "$IX_PID" 2>/dev/null
    if [[ -n ${BENCH_KEEP:-} ]]; then
        log "kept: PANO_INDEXER_INDEX_PREFIX=$ID- workflow $WF"
        return
    fi
    curl -fsS -X DELETE "$ES/$ID-*" >/dev/null 2>&1 || true
    curl -fsS -X DELETE "$ES/_index_template/$ID-*" >/dev/null 2>&1 || true
    "$BUILD/tests/tools/kafka_load" --delete-topics >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT
for t in kcat jq curl awk; do command -v $t >/dev/null || { echo "bench: needs $t" >&2; exit 1; }; done

log "writing $JOBS jobs x $SAMPLES samples of workflow $WF"
now=$(date +%s)
awk -v jobs="$JOBS" -v samples="$SAMPLES" -v wf="$WF" -v now="$now" -v id="$ID" '
function ev(name, ts, seq, rest) {
    printf "%s\t{\"event\":\"%s\",\"ts\":%.6f,\"event_id\":\"%s-%d-%d\",\"seq\":%d,\"hostname\":\"node-%02d.example.org\",\"wf_uuid\":\"%s\",\"wf_label\":\"bench\",\"dag_job_id\":\"job_ID%05d\",\"xformation\":\"xf_%d\",\"site\":\"bench\",\"pid\":%d%s}\n",
        wf, name, ts, id, j, seq, seq, j % 50, wf, j, j % 10, 10000 + j, rest
}
BEGIN {
    # the jobs start one every 0.35 s so that the workflow lasts a few hours
    t0 = now - (jobs * 0.35 + samples + 60)
    for (j = 0; j < jobs; j++) {
        start = t0 + j * 0.35
        running = j >= jobs - 20
        n = running ? samples / 2 : samples
        cpu_rate = 0.5 + (j % 10) * 0.05
        ev("kickstart.inv.start", start, 1, ",\"exe\":\"/opt/app/xf\",\"interval\":1.000")
        u = 0; rchar = 0; rss = 0
        for (s = 0; s < n; s++) {
            du = s ? cpu_rate : 0; dr = s ? 65536 : 1580; nrss = s ? 20000 + (j % 7) * 1000 : 0
            u += du; rchar += dr
            kind = s == 0 ? "start" : (s == n - 1 && !running ? "end" : "periodic")
            procs = kind == "end" ? 0 : 1; drss = (kind == "end" ? 0 : nrss) - rss; rss += drss
            dprocs = kind == "end" ? -1 : (s == 0 ? 1 : 0)
            ev("kickstart.inv.online", start + s, s + 2, sprintf(",\"exe\":\"/opt/app/xf\",\"utime\":%.3f,\"stime\":0.0,\"iowait\":0.0,\"vm\":%d,\"rss\":%d,\"procs\":%d,\"threads\":%d,\"bread\":0,\"bwrite\":0,\"rchar\":%d,\"wchar\":0,\"syscr\":%d,\"syscw\":0,\"sample\":\"%s\",\"interval\":1.000,\"delta\":{\"utime\":%.3f,\"stime\":0,\"iowait\":0,\"vm\":%d,\"rss\":%d,\"procs\":%d,\"threads\":%d,\"bread\":0,\"bwrite\":0,\"rchar\":%d,\"wchar\":0,\"syscr\":%d,\"syscw\":0}", u, rss * 2, rss, procs, procs, rchar, s + 1, kind, du, drss * 2, drss, dprocs, dprocs, dr, s ? 1 : 1))
        }
        if (!running) {
            code = j % 33 == 5 ? 1 : 0
            dur = n - 1
            ev("kickstart.inv.end", start + dur, n + 2, sprintf(",\"exe\":\"/opt/app/xf\",\"exitcode\":%d,\"signal\":0,\"status\":%d,\"duration\":%.3f,\"utime\":%.3f,\"stime\":0.0,\"remote_cpu_time\":%.3f,\"maxrss\":%d,\"final\":{\"utime\":%.3f,\"stime\":0.0,\"rchar\":%d,\"wchar\":0,\"rss\":0,\"procs\":0},\"samples\":%d", code, code ? 1 : 0, dur, u, u, 20000 + (j % 7) * 1000, u, rchar, n))
        }
    }
}' >"$DIR/events.tsv"
total=$(wc -l <"$DIR/events.tsv")
log "$total events; producing them to $ID.kickstart"
"$BUILD/indexer/pano-indexer" >"$DIR/indexer.log" 2>&1 &
IX_PID=$!
for _ in $(seq 150); do grep -q "assigned" "$DIR/indexer.log" && break; sleep 0.2; done
t0=$SECONDS
kcat -P -l -b "$PANO_KAFKA_BROKERS" -t "$ID.kickstart" -K $'\t' -z lz4 "$DIR/events.tsv"
log "produced in $((SECONDS - t0)) s; indexing"
for _ in $(seq 1800); do
    n=$(awk '$1 == "pano_indexer_indexed_total" {print $2}' "$DIR/status.prom" 2>/dev/null || echo 0)
    [[ ${n:-0} -ge $total ]] && break
    kill -0 $IX_PID || { tail "$DIR/indexer.log" >&2; exit 1; }
    sleep 1
done
log "indexed $n events in $((SECONDS - t0)) s"
curl -fsS -X POST "$ES/$ID-*/_refresh" >/dev/null
curl -fsS -X POST "$ES/$ID-*/_forcemerge?max_num_segments=1" >/dev/null || true

# time CMD...: milliseconds of one run
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
Q=$BUILD/query/pano-query
declare -A result
count_ms=$( for _ in $(seq "$REPS"); do ms curl -fsS "$ES/$ID-*/_count?q=wf_uuid:$WF"; done | median)
"$Q" status "$WF" --json | jq -e '.jobs.total == '"$JOBS"'' >/dev/null || { echo "bench: status does not count $JOBS jobs" >&2; exit 1; }
for cmd in status stats series anomalies; do
    args=("$cmd" "$WF" --json)
    [[ $cmd == series ]] && args+=(--metric cpu --step 60s)
    ms "$Q" "${args[@]}" >/dev/null # warm-up
    result[$cmd]=$(for _ in $(seq "$REPS"); do ms "$Q" "${args[@]}"; done | median)
    log "$cmd: ${result[$cmd]} ms (median of $REPS)"
done
log "baseline: _count of the workflow's $total documents, $count_ms ms"
printf 'RESULT query status_ms=%s stats_ms=%s series_ms=%s anomalies_ms=%s count_ms=%s jobs=%s samples=%s\n' \
    "${result[status]}" "${result[stats]}" "${result[series]}" "${result[anomalies]}" "$count_ms" \
    "$JOBS" "$((total))"
