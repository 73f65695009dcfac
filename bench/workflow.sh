# Shared by bench/query.sh and bench/explorer.sh (sourced, not run): a big
# workflow, indexed by the real pano-indexer into indices of its own.
#
# BENCH_JOBS jobs (default 10,000) of 10 transformations on 50 hosts, each
# with BENCH_SAMPLES samples 1 s apart (start, online samples with their
# delta, end; 3 % fail, the last 20 still run), written by awk as
# pano-monitor would publish them, produced to Kafka keyed by wf_uuid and
# indexed by pano-indexer (the pipeline from Kafka on; the templates,
# routing and mappings are the real ones).
#
# Sets BUILD, ES, ID (the index prefix without its "-"), DIR (scratch), WF
# (the workflow), JOBS, total (events indexed), and exports the
# PANO_* settings that point pano-query and pano-explorer at those indices.
# Timing helpers: ms CMD..., median, percentile P.
# The EXIT trap deletes the indices, unless BENCH_KEEP=1; a script that needs
# its own cleanup sets BENCH_CLEANUP to a command run first.
# BENCH_REUSE="PREFIX WORKFLOW" (as a BENCH_KEEP=1 run prints them) measures
# those indices again instead of writing new ones.
source bench/common.sh
JOBS=${BENCH_JOBS:-10000}
SAMPLES=${BENCH_SAMPLES:-100}
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
        log "kept: BENCH_REUSE=\"$ID- $WF\" measures them again"
        return
    fi
    bench_delete
}
trap cleanup EXIT
for t in kcat jq curl awk ${BENCH_NEEDS:-}; do command -v $t >/dev/null || { echo "bench: needs $t" >&2; exit 1; }; done

# start_indexer: pano-indexer on the bench's indices, in the background (IX_PID)
start_indexer() {
    "$BUILD/indexer/pano-indexer" >>"$DIR/indexer.log" 2>&1 &
    IX_PID=$!
    for _ in $(seq 150); do grep -q "INFO: assigned" "$DIR/indexer.log" && break; sleep 0.2; done
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
    start_indexer
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
fi

