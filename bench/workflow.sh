# Shared by bench/query.sh and bench/explorer.sh (sourced, not run): a big
# workflow, indexed by the real pano-indexer into indices of its own.
#
# BENCH_JOBS jobs (default 10,000) of 10 transformations on 50 hosts, in the
# shape BENCH_SHAPE gives them (tests/tools/bench_workflow.h):
#   monitor  (default) pano-monitor's: per job a start, BENCH_SAMPLES (100)
#            samples 1 s apart WITH their delta, an end; 3 % fail, the last
#            20 never end;
#   pegasus  Pegasus's: per job a kickstart start, BENCH_SAMPLES (12)
#            cumulative samples WITHOUT delta, an end, and
#            pegasus-monitord's stampede.job_inst.main.start and .end; 1 %
#            fail, the last 10 never end; the workflow's stampede.xwf.start.
# kafka_load writes the events into the Kafka topics of their families,
# keyed by wf_uuid, and pano-indexer indexes them (the pipeline from Kafka
# on; the templates, routing and mappings are the real ones); it also writes
# them, one JSON object a line, to $DIR/events.jsonl (what bench/query.sh
# puts into the embedded store). Nothing is
# measured before every event is in Elasticsearch (the workflow's _count
# equals the events written) and none was dead-lettered, and the indexer
# compacted the summaries (up to 3 minutes; as a finished workflow is read).
#
# Sets BUILD, ES, ID (the index prefix without its "-"), DIR (scratch), WF
# (the workflow), SHAPE, JOBS, total (events indexed), FAILED (the jobs that
# fail; empty for BENCH_REUSE), and exports the PANO_* settings that point
# pano-query and pano-explorer at those indices.
# Timing helpers: ms CMD..., median, percentile P.
# The EXIT trap deletes the indices, unless BENCH_KEEP=1; a script that needs
# its own cleanup sets BENCH_CLEANUP to a command run first.
# BENCH_REUSE="PREFIX WORKFLOW" (as a BENCH_KEEP=1 run prints them, with
# BENCH_SHAPE and BENCH_JOBS) measures those indices again instead of
# writing new ones.
source bench/common.sh
SHAPE=${BENCH_SHAPE:-monitor}
JOBS=${BENCH_JOBS:-10000}
FAILED=
[[ $SHAPE == monitor || $SHAPE == pegasus ]] || { echo "bench: BENCH_SHAPE is monitor or pegasus" >&2; exit 2; }
bench_names bench
export PANO_INDEXER_STATUS_FILE="$DIR/status.prom"
WF=$(cat /proc/sys/kernel/random/uuid)
IX_PID=

# time CMD...: milliseconds of one run
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
# percentile P: the P-th percentile (nearest rank) of numbers on stdin
percentile() { sort -n | awk -v p="$1" '{v[NR] = $1} END {r = int((p * NR + 99) / 100); print v[r < 1 ? 1 : r]}'; }
BENCH_CLEANUP=${BENCH_CLEANUP:-}
cleanup() {
    [[ -n $BENCH_CLEANUP ]] && eval "$BENCH_CLEANUP"
    [[ -n $IX_PID ]] && kill -TERM "$IX_PID" 2>/dev/null && wait "$IX_PID" 2>/dev/null
    rm -rf "$DIR"
    if [[ -n ${BENCH_KEEP:-} ]]; then
        log "kept: BENCH_REUSE=\"$ID- $WF\" BENCH_SHAPE=$SHAPE BENCH_JOBS=$JOBS measures them again"
        return
    fi
    bench_delete
}
trap cleanup EXIT
for t in jq curl awk ${BENCH_NEEDS:-}; do command -v $t >/dev/null || { echo "bench: needs $t" >&2; exit 1; }; done

# start_indexer: pano-indexer on the bench's indices, in the background (IX_PID)
start_indexer() {
    "$BUILD/indexer/pano-indexer" >>"$DIR/indexer.log" 2>&1 &
    IX_PID=$!
    for _ in $(seq 150); do grep -qs "INFO: assigned" "$DIR/indexer.log" && break; sleep 0.2; done
}

if [[ -n ${BENCH_REUSE:-} ]]; then
    # indices kept by an earlier run (BENCH_KEEP=1): "PREFIX WORKFLOW"
    read -r ID WF <<<"$BENCH_REUSE"
    ID=${ID%-}
    export PANO_INDEXER_INDEX_PREFIX="$ID-"
    total=$(curl -fsS "$ES/$ID-*/_count?q=wf_uuid:$WF" | jq .count)
    log "reusing $total events of workflow $WF in $ID-*"
    BENCH_KEEP=1
else
    log "writing $JOBS jobs of workflow $WF in $SHAPE's shape"
    start_indexer
    t0=$SECONDS
    "$BUILD/tests/tools/kafka_load" --shape "$SHAPE" --jobs "$JOBS" ${BENCH_SAMPLES:+--samples "$BENCH_SAMPLES"} \
        --wf "$WF" --run-id "$ID" --lines "$DIR/events.jsonl" >"$DIR/load.log" 2>&1 || { tail "$DIR/load.log" >&2; exit 1; }
    # "kafka_load: workflow UUID jobs=N events=N failed=N unended=N"
    total=$(sed -n 's/^kafka_load: workflow .* events=\([0-9]*\) .*/\1/p' "$DIR/load.log")
    FAILED=$(sed -n 's/^kafka_load: workflow .* failed=\([0-9]*\) .*/\1/p' "$DIR/load.log")
    log "$(tail -n1 "$DIR/load.log"); indexing"
    metric() { awk -v m="pano_indexer_$1" '$1 == m {print $2}' "$DIR/status.prom" 2>/dev/null; }
    settled=0
    for _ in $(seq 3600); do
        settled=$(($(metric indexed_total || true) + $(metric dead_lettered_total || true) + 0))
        ((settled >= total)) && break
        kill -0 $IX_PID || { tail "$DIR/indexer.log" >&2; exit 1; }
        sleep 1
    done
    log "indexed $(metric indexed_total) events in $((SECONDS - t0)) s"
    curl -fsS -X POST "$ES/$ID-*/_refresh" >/dev/null
    dead=$(metric dead_lettered_total)
    # (the closing samples pano-indexer adds to runs without delta aside)
    stored=$(curl -fsS "$ES/$ID-*/_count?q=wf_uuid:$WF+AND+NOT+sample:closing" | jq .count)
    [[ ${dead:-0} == 0 && $stored == "$total" ]] ||
        { echo "bench: $stored of $total events stored, ${dead:-0} dead-lettered" >&2; exit 1; }
    curl -fsS -X POST "$ES/$ID-*/_forcemerge?max_num_segments=1" >/dev/null || true
    # read as a finished workflow is: once the indexer, a minute after the
    # last update, compacted the summaries (docs/indexer.md, Compaction)
    t0=$SECONDS
    deleted() { curl -fsS "$ES/_cat/indices/$ID-summary-*?h=docs.deleted&format=json" | jq '[.[]."docs.deleted" | tonumber] | add // 0'; }
    for _ in $(seq 180); do
        (($(deleted) == 0)) && break
        sleep 1
    done
    log "summaries compacted after $((SECONDS - t0)) s, $(deleted) deleted copies left ($(metric summary_compactions_total) compactions)"
fi
