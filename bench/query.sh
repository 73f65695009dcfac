#!/usr/bin/env bash
# Benchmark: pano-query on a big workflow.
#
#   bench/query.sh                      (BUILD=build; 10,000 jobs in pano-monitor's shape)
#   BENCH_SHAPE=pegasus bench/query.sh  (Pegasus's kickstart + stampede shape)
#
# 1. A workflow of BENCH_JOBS jobs in the shape BENCH_SHAPE (monitor or
#    pegasus), indexed by the real pano-indexer (bench/workflow.sh); before
#    anything is timed, pano-query must count every job and the failed ones
#    the workflow was written with.
# 2. Each query runs BENCH_REPS times (after one warm-up), as --json to
#    /dev/null: status, stats, anomalies, jobs --state failed, and the
#    series of cpu and rss (step 60 s, whole workflow); the median wall
#    time of each is reported. Elasticsearch answers a repeated aggregation
#    from its request cache until the indices change, as for a finished
#    workflow; the cold figures clear that cache before each run, as every
#    refresh of a running workflow finds it: series_cpu_cold and
#    series_rss_cold.
# 3. The embedded store, beside Elasticsearch: the same events (the ones
#    kafka_load produced) written into a store of their own by pano-emit
#    --events (events/s, the median of BENCH_INGESTS (3) runs, each into
#    an empty store once the disk holds what was written before; and the
#    file's bytes per event), once Elasticsearch merges no segment (so
#    that the two cores are the store's alone); every query of
#    step 2 asked of it too, its answer compared with Elasticsearch's
#    (tests/tools/same_answers.sh: the same but for the moment of asking)
#    and timed the same way (no *_cold: SQLite has no request cache); live:
#    BENCH_LIVE (20) job starts of a small workflow written into that store
#    one after the other by pano-emit, each timed from the moment its
#    publisher returned (the event committed) until pano-query status of
#    that workflow counts it, asked in a loop (the 99th percentile, against
#    the runtime of pano-query status alone); pano-explorer on the store:
#    its first answer for the big workflow, its peak RSS after it and its
#    own memory in it (RssAnon; the rest is the store's pages it maps).
# 4. The workflow in one file: pano-query export from Elasticsearch and
#    from the embedded store (milliseconds each; the file's bytes per event
#    and per sample), and pano-query import of the file into an empty
#    embedded store (events/s).
# Baseline in the same run: the Elasticsearch _count of the workflow's
#    documents (one request, the least a query over this workflow costs).
# Targets (embedded store): ingest >= 100,000 events/s; each query <= 300
#    ms at 10,000 jobs, <= 1 s at 100,000; live p99 <= 100 ms.
#
# Environment: PANO_ES_URL, PANO_KAFKA_BROKERS (default the local stack),
# BENCH_SHAPE, BENCH_JOBS, BENCH_SAMPLES, BENCH_REPS (5), BENCH_LIVE (20), BENCH_INGESTS (3),
# BENCH_QUERIES (the
# names timed, all by default: status stats anomalies jobs_failed series_cpu
# series_rss series_cpu_cold series_rss_cold), BUILD; BENCH_KEEP=1
# leaves the indices in place for profiling, BENCH_REUSE measures them again
# (bench/workflow.sh; without the embedded store, whose events it has not).
# Last line: RESULT query shape=... jobs=... events=... status_ms=... stats_ms=...
#   anomalies_ms=... jobs_failed_ms=... series_cpu_ms=... series_rss_ms=...
#   series_cpu_cold_ms=... series_rss_cold_ms=... count_ms=...
#   store_ingest_per_s=... store_bytes_per_event=... store_same=SAME/ASKED
#   store_status_ms=... (each query) store_live_p99_ms=...
#   store_status_alone_ms=... store_explorer_first_ms=...
#   store_explorer_rss_kb=... store_explorer_anon_kb=... export_es_ms=...
#   export_store_ms=... file_bytes_per_event=... file_bytes_per_sample=...
#   import_per_s=...
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${BENCH_REPS:-5}
LIVE=${BENCH_LIVE:-20}
source bench/workflow.sh
source tests/tools/same_answers.sh

Q=$BUILD/query/pano-query
count_ms=$( for _ in $(seq "$REPS"); do ms curl -fsS "$ES/$ID-*/_count?q=wf_uuid:$WF"; done | median)
"$Q" status "$WF" --json >"$DIR/status.json"
jq -e --argjson n "$JOBS" '.jobs.total == $n' "$DIR/status.json" >/dev/null ||
    { echo "bench: status counts $(jq .jobs.total "$DIR/status.json") jobs, not $JOBS" >&2; exit 1; }
if [[ -n $FAILED ]]; then
    jq -e --argjson n "$FAILED" '.jobs.by_state.failed == $n' "$DIR/status.json" >/dev/null ||
        { echo "bench: status counts $(jq .jobs.by_state.failed "$DIR/status.json") failed jobs, not $FAILED" >&2; exit 1; }
fi
log "pano-query sees $(jq -c .jobs.by_state "$DIR/status.json")"

declare -A result
read -ra names <<<"${BENCH_QUERIES:-status stats anomalies jobs_failed series_cpu series_rss series_cpu_cold series_rss_cold}"
# cold CMD...: CMD's milliseconds after Elasticsearch's request cache is cleared
cold() { curl -fsS -X POST "$ES/$ID-*/_cache/clear?request=true" >/dev/null && ms "$@"; }
for name in "${names[@]}"; do
    case $name in
        jobs_failed) args=(jobs "$WF" --state failed) ;;
        series_*) m=${name#series_}; args=(series "$WF" --metric "${m%_cold}" --step 60s) ;;
        *) args=("$name" "$WF") ;;
    esac
    args+=(--json)
    run=ms
    [[ $name == *_cold ]] && run=cold
    $run "$Q" "${args[@]}" >/dev/null # warm-up
    result[$name]=$(for _ in $(seq "$REPS"); do $run "$Q" "${args[@]}"; done | median)
    log "${args[*]}: ${result[$name]} ms (median of $REPS)"
done
log "baseline: _count of the workflow's $total documents, $count_ms ms"
line="RESULT query shape=$SHAPE jobs=$JOBS events=$total"
for name in "${names[@]}"; do line+=" ${name}_ms=${result[$name]}"; done
line+=" count_ms=$count_ms"
if [[ ! -s $DIR/events.jsonl ]]; then
    echo "$line"
    exit 0
fi

# ---- 3. the embedded store, the same events
STORE=$DIR/store
EMIT=(env PANO_AMQP_URL= "$BUILD/publishers/emit/pano-emit" --set pano.store="$STORE")
for _ in $(seq 120); do
    merging=$(curl -fsS "$ES/_nodes/stats/indices/merge" | jq '[.nodes[].indices.merges.current] | add')
    [[ $merging == 0 ]] && break
    sleep 1
done
log "embedded store: written once Elasticsearch merges $merging segments"
ingest_ms=()
for _ in $(seq "${BENCH_INGESTS:-3}"); do
    rm -rf "$STORE"
    sync
    t0=$(date +%s%N)
    "${EMIT[@]}" --events "$DIR/events.jsonl" 2>"$DIR/emit.log" || { tail -3 "$DIR/emit.log" >&2; exit 1; }
    t1=$(date +%s%N)
    ingest_ms+=($(((t1 - t0) / 1000000)))
done
rm -f "$DIR/events.jsonl"
took=$(printf '%s\n' "${ingest_ms[@]}" | median)
ingest=$(awk -v n="$total" -v ms="$took" 'BEGIN { printf "%d", n / (ms / 1000) }')
bytes=$(du -cb "$STORE"/*.pano.sqlite* | tail -n1 | cut -f1)
per_event=$(awk -v b="$bytes" -v n="$total" 'BEGIN { printf "%d", b / n }')
log "embedded store: $total events written by pano-emit --events in ${ingest_ms[*]} ms: $ingest events/s (the median); $bytes bytes, $per_event a event"
SQ=("$Q" --store "$STORE")
"${SQ[@]}" status "$WF" --json >"$DIR/store-status.json"
jq -e --argjson n "$JOBS" '.jobs.total == $n' "$DIR/store-status.json" >/dev/null ||
    { echo "bench: the embedded store's status counts $(jq .jobs.total "$DIR/store-status.json") jobs, not $JOBS" >&2; exit 1; }
same=0 asked=0
for name in "${names[@]}"; do
    [[ $name == *_cold ]] && continue
    case $name in
        jobs_failed) args=(jobs "$WF" --state failed) ;;
        series_*) args=(series "$WF" --metric "${name#series_}" --step 60s) ;;
        *) args=("$name" "$WF") ;;
    esac
    args+=(--json)
    SAME_ASKED_FROM=$EPOCHREALTIME
    "$Q" "${args[@]}" >"$DIR/es-$name.raw"
    "${SQ[@]}" "${args[@]}" >"$DIR/sqlite-$name.raw"
    asked=$((asked + 1))
    if why=$(same_answers "$DIR" "$name"); then
        same=$((same + 1))
    else
        log "DIFFERS: ${args[*]}: $why"
    fi
    result[store_$name]=$(for _ in $(seq "$REPS"); do ms "${SQ[@]}" "${args[@]}"; done | median)
    log "embedded store: ${args[*]}: ${result[store_$name]} ms (median of $REPS; Elasticsearch ${result[$name]} ms)"
done
log "embedded store: $same of $asked answers the same as Elasticsearch's"

# live: a job's start written, then pano-query status of its workflow until it counts it
LWF=$(cat /proc/sys/kernel/random/uuid)
start_line() { # JOB: a job's start, as pano-monitor writes it
    printf '{"event":"kickstart.inv.start","ts":%s,"event_id":"%s-%s","seq":1,"hostname":"node-00.example.org","wf_uuid":"%s","wf_label":"live","dag_job_id":"%s","xformation":"xf_0","site":"bench","pid":1,"exe":"/opt/app/xf","argv":["/opt/app/xf"],"interval":60.000}\n' \
        "$(date +%s.%N)" "$LWF" "$1" "$LWF" "$1"
}
start_line live_0 | "${EMIT[@]}" --events - 2>>"$DIR/emit.log"
: >"$DIR/live"
for i in $(seq "$LIVE"); do
    start_line "live_$i" | "${EMIT[@]}" --events - 2>>"$DIR/emit.log"
    t0=$(date +%s%N)
    for _ in $(seq 1000); do
        n=$("${SQ[@]}" status "$LWF" --json | jq .jobs.total)
        ((n > i)) && break
    done
    ((n > i)) || { echo "bench: live job $i never counted" >&2; exit 1; }
    echo $((($(date +%s%N) - t0) / 1000000)) >>"$DIR/live"
done
live_p99=$(percentile 99 <"$DIR/live")
alone=$(for _ in $(seq "$REPS"); do ms "${SQ[@]}" status "$LWF" --json; done | median)
log "embedded store: live, a job's start counted by pano-query $live_p99 ms (p99 of $LIVE) after its publisher wrote it; pano-query status alone $alone ms"

# pano-explorer on the store: the big workflow's first answer, and its peak RSS
"$BUILD/explorer/pano-explorer" --port 0 --store "$STORE" >"$DIR/explorer.log" 2>&1 &
EX_PID=$!
for _ in $(seq 100); do grep -q "serving" "$DIR/explorer.log" && break; sleep 0.1; done
port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$DIR/explorer.log")
[[ -n $port ]] || { cat "$DIR/explorer.log" >&2; echo "bench: pano-explorer did not start" >&2; exit 1; }
explorer_ms=$(ms curl -fsS "http://127.0.0.1:$port/api/workflows/$WF?series=cpu,rss,read,write&bins=1300")
# the file's pages it maps count in its resident set too (shared, the kernel's
# page cache): its own memory is RssAnon
explorer_rss=$(awk '/^VmHWM/ {print $2}' "/proc/$EX_PID/status")
explorer_anon=$(awk '/^RssAnon/ {print $2}' "/proc/$EX_PID/status")
kill -TERM "$EX_PID" && wait "$EX_PID" || true
log "embedded store: pano-explorer's first answer for the workflow $explorer_ms ms; its peak RSS $explorer_rss kB, $explorer_anon kB its own (not the store's mapped pages)"

# ---- 4. the workflow in one file
export_es_ms=$(ms "$Q" export "$WF" -o "$DIR/es.pano")
export_store_ms=$(ms "${SQ[@]}" export "$WF" -o "$DIR/store.pano")
file_bytes=$(stat -c %s "$DIR/store.pano")
samples=$(sqlite3 "$STORE"/*.pano.sqlite "SELECT count(*) FROM events WHERE stream = 'samples'")
file_per_event=$(awk -v b="$file_bytes" -v n="$total" 'BEGIN { printf "%d", b / n }')
file_per_sample=$(awk -v b="$file_bytes" -v n="$samples" 'BEGIN { printf "%d", b / n }')
t0=$(date +%s%N)
env PANO_AMQP_URL= "$Q" --store "$DIR/imported" import "$DIR/store.pano" 2>>"$DIR/emit.log" ||
    { tail -3 "$DIR/emit.log" >&2; exit 1; }
t1=$(date +%s%N)
import_per_s=$(awk -v n="$total" -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", n / ((b - a) / 1e9) }')
log "one file: export from Elasticsearch $export_es_ms ms, from the embedded store $export_store_ms ms; $file_bytes bytes ($file_per_event an event, $file_per_sample a sample; Elasticsearch's: $(stat -c %s "$DIR/es.pano")); import into an empty store $import_per_s events/s"

line+=" store_ingest_per_s=$ingest store_bytes_per_event=$per_event store_same=$same/$asked"
for name in "${names[@]}"; do [[ -n ${result[store_$name]:-} ]] && line+=" store_${name}_ms=${result[store_$name]}"; done
echo "$line store_live_p99_ms=$live_p99 store_status_alone_ms=$alone store_explorer_first_ms=$explorer_ms store_explorer_rss_kb=$explorer_rss store_explorer_anon_kb=$explorer_anon export_es_ms=$export_es_ms export_store_ms=$export_store_ms file_bytes_per_event=$file_per_event file_bytes_per_sample=$file_per_sample import_per_s=$import_per_s"
