#!/usr/bin/env bash
# Benchmark: pano-indexer on a Kafka backlog against Elasticsearch's own
# ceiling for the same documents and index settings.
#
#   bench/indexer.sh                     (BUILD=build, 1,000,000 events)
#   BENCH_SHAPE=monitor bench/indexer.sh (one big workflow, bench/workflow.sh's)
#
# 1. kafka_load fills the topics with BENCH_EVENTS synthetic events of
#    1,000 workflows (kickstart, darshan, transfer, stampede and custom in
#    turn, every fifth event a run of its own: the most summaries a backlog
#    can ask for), or with the BENCH_JOBS jobs (10,000) of one workflow in
#    the shape BENCH_SHAPE (monitor or pegasus: tests/tools/bench_workflow.h,
#    a run's events merged into one summary), and writes the very same
#    documents as bulk bodies (pano-indexer's code builds both).
# 2. Ceiling: those bodies are posted with curl from BENCH_CLIENTS processes
#    into fresh indices with the templates pano-indexer generates (same
#    shards, replicas, refresh interval, mappings). Indices then deleted.
# 3. pano-indexer consumes the backlog into fresh indices; the time runs
#    from when it has its partitions until its status file shows every
#    event indexed.
# 4. The ceiling once more (the load of a shared machine drifts); the ratio
#    is to the mean of the two ceiling runs.
#
# Environment: PANO_ES_URL, PANO_KAFKA_BROKERS (default the local stack),
# BENCH_EVENTS, BENCH_SHAPE, BENCH_JOBS, BENCH_CLIENTS (4), BENCH_BULK_DOCS
# (documents per ceiling body; default batch_docs / concurrency, the size
# of the indexer's requests), BUILD, and any PANO_INDEXER_* setting for
# the indexer run.
# Last line: RESULT indexer shape=synthetic|monitor|pegasus docs_per_s=... ratio_to_ceiling=...
#   cpu_us_per_doc=... (pano-indexer's own CPU, user and system, per event)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
N=${BENCH_EVENTS:-1000000}
SHAPE=${BENCH_SHAPE:-}
CLIENTS=${BENCH_CLIENTS:-4}
bench_names bench
export PANO_INDEXER_STATUS_FILE="$DIR/status.prom"
# The ceiling's bodies are as large as the indexer's requests: a batch of
# pano.indexer.batch_docs split into pano.indexer.concurrency requests.
cfgval() { "$BUILD/indexer/pano-indexer" --show-config | sed -n "s/^$1 *= *\([0-9]*\).*/\1/p"; }
BULK_DOCS=${BENCH_BULK_DOCS:-$(($(cfgval pano.indexer.batch_docs) / $(cfgval pano.indexer.concurrency)))}
IX_PID=

cleanup() {
    [[ -n $IX_PID ]] && kill -TERM "$IX_PID" 2>/dev/null && wait "$IX_PID" 2>/dev/null
    bench_delete
    rm -rf "$DIR"
}
trap cleanup EXIT

install_templates() { # PREFIX: the indexer's templates and shared indices
    local t
    PANO_INDEXER_INDEX_PREFIX=$1 "$BUILD/indexer/pano-indexer" --print-templates >"$DIR/templates.json"
    for t in $(jq -r 'keys[]' "$DIR/templates.json"); do
        jq -c --arg t "$t" '.[$t]' "$DIR/templates.json" |
            curl -fsS -X PUT -H 'Content-Type: application/json' "$ES/_index_template/$t" -d @- >/dev/null
        curl -fsS -X PUT "$ES/$t" >/dev/null
    done
}

mkdir -p "$DIR/bulk"
if [[ -n $SHAPE ]]; then
    events=(--shape "$SHAPE" --jobs "${BENCH_JOBS:-10000}")
    log "$ID: a workflow of ${BENCH_JOBS:-10000} jobs in $SHAPE's shape, ceiling with $CLIENTS curl processes, $BULK_DOCS documents per body"
else
    events=(-n "$N" -w 1000)
    log "$ID: $N events, ceiling with $CLIENTS curl processes, $BULK_DOCS documents per body"
fi
"$BUILD/tests/tools/kafka_load" "${events[@]}" --bulk-dir "$DIR/bulk" --bulk-docs "$BULK_DOCS" \
    --bulk-prefix "$ID-ceil-" >"$DIR/load.log" 2>&1 || { tail "$DIR/load.log"; exit 1; }
[[ -n $SHAPE ]] && N=$(sed -n 's/^kafka_load: workflow .* events=\([0-9]*\) .*/\1/p' "$DIR/load.log")
log "$(tail -n1 "$DIR/load.log") (and $(ls "$DIR/bulk" | wc -l) bulk bodies, $(du -sh "$DIR/bulk" | cut -f1))"

# ---- ceiling ----
post() { # FILE: one bulk body; fails on any item error
    curl -fsS -H 'Content-Type: application/x-ndjson' -X POST "$ES/_bulk" --data-binary "@$1" -o "$1.out" &&
        head -c 200 "$1.out" | grep -q '"errors":false' || { echo "errors in $1" >&2; return 1; }
    rm -f "$1.out"
}
export -f post
export ES
ceiling_run() { # prints docs/s
    install_templates "$ID-ceil-"
    local t0 t1 got
    t0=$(date +%s.%N)
    ls "$DIR"/bulk/*.ndjson | xargs -P "$CLIENTS" -n 1 bash -c 'post "$0"'
    t1=$(date +%s.%N)
    curl -fsS -X POST "$ES/$ID-ceil-*/_refresh" >/dev/null
    got=$(curl -fsS "$ES/$ID-ceil-*/_count" | jq .count)
    [[ $got == "$N" ]] || { log "ceiling run indexed $got of $N"; exit 1; }
    curl -fsS -X DELETE "$ES/$ID-ceil-*" >/dev/null
    curl -fsS -X DELETE "$ES/_index_template/$ID-ceil-*" >/dev/null
    log "ceiling: $N documents in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s"
    awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN {print n / (b - a)}'
}
ceiling1=$(ceiling_run)
sleep 5

# ---- pano-indexer ----
# The clock starts when the indexer has its partitions (templates installed,
# indices created, group joined: the setup the ceiling run also gets for
# free); the time from the process start is logged too.
t_start=$(date +%s.%N)
"$BUILD/indexer/pano-indexer" >"$DIR/indexer.log" 2>&1 &
IX_PID=$!
metric() { awk -v m="pano_indexer_$1" '$1 == m {print $2}' "$PANO_INDEXER_STATUS_FILE" 2>/dev/null; }
deadline=$((SECONDS + 3600))
t0=
until (($(metric indexed_total || true) + 0 >= N)); do
    ((SECONDS < deadline)) || { log "indexer too slow: $(metric indexed_total) of $N"; exit 1; }
    kill -0 "$IX_PID" 2>/dev/null || { tail "$DIR/indexer.log"; exit 1; }
    [[ -z $t0 ]] && grep -q "INFO: assigned" "$DIR/indexer.log" && t0=$(date +%s.%N)
    sleep 0.1
done
t1=$(date +%s.%N)
[[ -n $t0 ]] || t0=$t_start
# its own CPU until then (user and system; ticks of /proc/PID/stat fields
# 14 and 15, after the command's parenthesized name), of the two cores it
# shares with Elasticsearch
cpu_s=$(awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); print ($12 + $13) / hz}' "/proc/$IX_PID/stat")
kill -TERM "$IX_PID"
wait "$IX_PID"
IX_PID=
curl -fsS -X POST "$ES/$ID-*/_refresh" >/dev/null
# (the closing samples pano-indexer adds to runs without delta aside)
got=$(curl -fsS "$ES/$ID-*,-$ID-summary-*/_count?q=NOT+sample:closing" | jq .count)
[[ $got == "$N" ]] || { log "indexer run: $got documents in Elasticsearch, expected $N"; exit 1; }
curl -fsS -X DELETE "$ES/$ID-*" >/dev/null
grep -E "consumed" "$DIR/indexer.log" | tail -n1 >&2
rate=$(awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN {print n / (b - a)}')
log "pano-indexer: $N documents in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s from ready ($(awk -v a="$t_start" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s from start) = $(printf %.0f "$rate") docs/s, using $cpu_s s of CPU"

# The ceiling again: the machine's load drifts; compare with the mean.
sleep 5
ceiling2=$(ceiling_run)
ceiling=$(awk -v a="$ceiling1" -v b="$ceiling2" 'BEGIN {print (a + b) / 2}')
log "ceiling $(printf %.0f "$ceiling1") and $(printf %.0f "$ceiling2") docs/s with $CLIENTS curl processes; mean $(printf %.0f "$ceiling")"
printf 'RESULT indexer shape=%s docs_per_s=%.0f ratio_to_ceiling=%.2f cpu_us_per_doc=%.1f\n' "${SHAPE:-synthetic}" \
    "$rate" "$(awk -v r="$rate" -v c="$ceiling" 'BEGIN {print r / c}')" "$(awk -v c="$cpu_s" -v n="$N" 'BEGIN {print c * 1e6 / n}')"
