#!/usr/bin/env bash
# Metrics from a task through pano-monitor's metrics socket (a benchmark,
# not a timed test), into an embedded store of its own (no service).
#
#   bench/metrics.sh [BUILD_DIR]
#
# One Python process under pano-monitor sends BENCH_METRICS metrics
# (default 200,000) with the Python package (python/pano: pano.metric, one
# DogStatsD line each, at most RATE a second when BENCH_RATE is set),
# against the baseline measured in the same run: one pano-emit process per
# metric, BENCH_EMITS of them (default 300) into a store.
# Reported:
#   per_s        metrics stored per second of the monitored run (the task's
#                start to the monitor's exit: every metric sent is stored)
#   emit_per_s   metrics stored per second by pano-emit, one process each
#   ratio        per_s / emit_per_s
#   dropped      metrics the package dropped (the socket full, 64 KB waiting)
#   cpu_ms_per_1000  the monitor's CPU (user + system, its end event) per
#                1,000 metrics, over the same task sending none
# Ends with:
#   RESULT metrics per_s=… emit_per_s=… ratio=… dropped=… cpu_ms_per_1000=…
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
N=${BENCH_METRICS:-200000}
EMITS=${BENCH_EMITS:-300}
RATE=${BENCH_RATE:-0}
DIR=$(mktemp -d /tmp/pano-bench-metrics.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
[[ -x $BUILD/publishers/monitor/pano-monitor ]] || { log "no build in $BUILD"; exit 1; }

export PANO_AMQP_URL= PYTHONPATH=$PWD/python PEGASUS_WF_UUID=$(cat /proc/sys/kernel/random/uuid)
cat >"$DIR/send.py" <<'PY'
import os, sys, time, pano
n, rate = int(sys.argv[1]), float(sys.argv[2])
t0 = time.monotonic()
for i in range(n):
    pano.metric("loss", i * 1e-3, step=i)
    if rate and i % 100 == 99:  # at most rate a second
        ahead = t0 + (i + 1) / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
while pano.flush():
    time.sleep(0.001)
print(pano.dropped())
PY
sql() { sqlite3 "file:$(echo "$1"/*.pano.sqlite)?mode=ro" "$2"; }
cpu_of() { # STORE: the monitor's CPU in its end event, ms
    sql "$1" "SELECT round((json_extract(doc, '$.monitor_utime') + json_extract(doc, '$.monitor_stime')) * 1000)
              FROM events WHERE event = 'kickstart.inv.end'"
}

log "one Python process, $N metrics through the socket"
t0=$(date +%s.%N)
dropped=$(PANO_STORE=$DIR/socket PEGASUS_DAG_JOB_ID=send_ID01 \
    "$BUILD/publishers/monitor/pano-monitor" -- python3 "$DIR/send.py" "$N" "$RATE")
t1=$(date +%s.%N)
stored=$(sql "$DIR/socket" "SELECT count(*) FROM events WHERE event = 'custom.metric'")
((stored + dropped == N)) || { log "stored $stored + dropped $dropped is not $N"; exit 1; }
per_s=$(echo "$stored / ($t1 - $t0)" | bc -l)
cpu=$(cpu_of "$DIR/socket")

log "the same task sending none"
PANO_STORE=$DIR/none PEGASUS_DAG_JOB_ID=none_ID01 \
    "$BUILD/publishers/monitor/pano-monitor" -- python3 "$DIR/send.py" 0 0 >/dev/null
cpu0=$(cpu_of "$DIR/none")

log "baseline: $EMITS pano-emit processes, one metric each"
t0=$(date +%s.%N)
for ((i = 0; i < EMITS; i++)); do
    PANO_STORE=$DIR/emit "$BUILD/publishers/emit/pano-emit" --tag "step=$i" loss "$i"
done
t1=$(date +%s.%N)
emitted=$(sql "$DIR/emit" "SELECT count(*) FROM events WHERE event = 'custom.metric'")
((emitted == EMITS)) || { log "pano-emit stored $emitted of $EMITS"; exit 1; }
emit_per_s=$(echo "$emitted / ($t1 - $t0)" | bc -l)

printf 'RESULT metrics per_s=%.0f emit_per_s=%.0f ratio=%.1f dropped=%d cpu_ms_per_1000=%.1f\n' \
    "$per_s" "$emit_per_s" "$(echo "$per_s / $emit_per_s" | bc -l)" "$dropped" \
    "$(echo "($cpu - $cpu0) * 1000 / $stored" | bc -l)"
