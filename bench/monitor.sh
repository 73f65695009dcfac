#!/usr/bin/env bash
# Overhead of pano-monitor (a benchmark, not a timed test).
#
#   bench/monitor.sh [BUILD_DIR]
#
# Workloads of fixed work (pano-workload from the test build):
#   single  one CPU-bound process burning WORK seconds of CPU
#   tree64  64 processes burning WORK*2 seconds of CPU together (all cores busy)
# each run unmonitored and monitored, alternately, REPS times, at intervals
# of 1 s and 0.1 s, in the same run of this script. Reported per case:
#   cpu_pct     monitor CPU seconds / task wall seconds x 100, where the
#               monitor's CPU time (all its threads) is what it reports in
#               kickstart.inv.end (getrusage RUSAGE_SELF), median of REPS
#   wall_ratio  median monitored wall time / median unmonitored wall time
# Events go to a JSON-lines file, or to a broker with BENCH_AMQP_URL=amqp://...
# Ends with one line:
#   RESULT monitor cpu_pct_1s=<tree64 at 1 s> cpu_pct_100ms=<tree64 at 0.1 s> wall_ratio=<worst case>
# Environment: WORK (default 10), REPS (default 3).
set -euo pipefail

BUILD=${1:-build}
MONITOR="$BUILD/publishers/monitor/pano-monitor"
WORKLOAD="$BUILD/tests/integration/pano-workload"
WORK=${WORK:-10}
REPS=${REPS:-3}
[[ -x $MONITOR && -x $WORKLOAD ]] || { echo "build first: $MONITOR, $WORKLOAD" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }

TMP=$(mktemp -d /tmp/pano-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export PANO_SPOOL_DIR="$TMP/spool"
export PANO_WF_UUID=${PANO_WF_UUID:-pano-bench}
if [[ -n ${BENCH_AMQP_URL:-} ]]; then
    export PANO_AMQP_URL=$BENCH_AMQP_URL
    dest="broker $(sed -E 's#//[^@]*@#//***@#' <<<"$BENCH_AMQP_URL")"
else
    unset PANO_AMQP_URL PEGASUS_AMQP_URL KICKSTART_MON_URL
    dest="JSON lines to a file"
fi

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

task_args() {
    case $1 in
    single) echo "burn $WORK" ;;
    tree64) echo "work 64 $((WORK * 2))" ;;
    esac
}

# run_case WORKLOAD INTERVAL: prints "cpu_pct wall_ratio samples"
run_case() {
    local w=$1 interval=$2 i start end
    local -a args
    read -r -a args <<<"$(task_args "$w")"
    : >"$TMP/plain" && : >"$TMP/mon" && : >"$TMP/pct" && : >"$TMP/samples"
    for ((i = 0; i < REPS; i++)); do
        start=$EPOCHREALTIME
        "$WORKLOAD" "${args[@]}" >/dev/null
        end=$EPOCHREALTIME
        { calc "$end - $start"; echo; } >>"$TMP/plain"

        rm -f "$TMP/events"
        start=$EPOCHREALTIME
        "$MONITOR" -i "$interval" -o "$TMP/events" -- "$WORKLOAD" "${args[@]}" >/dev/null
        end=$EPOCHREALTIME
        local wall
        wall=$(calc "$end - $start")
        echo "$wall" >>"$TMP/mon"
        jq -r --arg wall "$wall" 'select(.event == "kickstart.inv.end")
            | (.monitor_utime + .monitor_stime) / ($wall | tonumber) * 100' "$TMP/events" >>"$TMP/pct"
        jq -r 'select(.event == "kickstart.inv.end") | .samples' "$TMP/events" >>"$TMP/samples"
    done
    local pct plain mon samples
    pct=$(median <"$TMP/pct")
    plain=$(median <"$TMP/plain")
    mon=$(median <"$TMP/mon")
    samples=$(median <"$TMP/samples")
    printf '%s %s %s %s %s\n' "$pct" "$(calc "$mon / $plain")" "$samples" "$plain" "$mon"
}

echo "pano-monitor overhead: WORK=$WORK s, REPS=$REPS, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), events: $dest" >&2
printf '%-8s %8s %12s %10s %8s %10s %10s\n' workload interval cpu_pct wall_ratio samples plain_s monitored_s >&2
declare -A PCT RATIO
for interval in 1 0.1; do
    for w in single tree64; do
        read -r pct ratio samples plain mon < <(run_case "$w" "$interval")
        PCT[$w,$interval]=$pct
        RATIO[$w,$interval]=$ratio
        printf '%-8s %8s %12.4f %10.4f %8s %10.3f %10.3f\n' "$w" "$interval" "$pct" "$ratio" "$samples" \
            "$plain" "$mon" >&2
    done
done
worst=$(printf '%s\n' "${RATIO[@]}" | sort -g | tail -1)
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg) (wall ratios mean little on a loaded machine)" >&2
printf 'RESULT monitor cpu_pct_1s=%.4f cpu_pct_100ms=%.4f wall_ratio=%.4f\n' \
    "${PCT[tree64,1]}" "${PCT[tree64,0.1]}" "$worst"
