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
#   ms/sample   the monitor's CPU time per sample: its CPU time less the fixed
#               cost of a run (start, first and last sample, exit: measured in
#               the same run on a task that exits at once), over the samples taken
#   steady_pct  ms/sample / interval: the cost per second of a long task,
#               which the fixed cost no longer weighs on
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
    : >"$TMP/plain" && : >"$TMP/mon" && : >"$TMP/pct" && : >"$TMP/samples" && : >"$TMP/cpu"
    for ((i = 0; i < REPS; i++)); do
        start=$EPOCHREALTIME
        "$WORKLOAD" "${args[@]}" >/dev/null
        end=$EPOCHREALTIME
        { calc "$end - $start"; echo; } >>"$TMP/plain"

        rm -f "$TMP/events"
        start=$EPOCHREALTIME
        "$MONITOR" -i "$interval" -o "$TMP/events" -- "$WORKLOAD" "${args[@]}" >/dev/null
        end=$EPOCHREALTIME
        local wall cpu_ms
        wall=$(calc "$end - $start")
        echo "$wall" >>"$TMP/mon"
        cpu_ms=$(monitor_cpu_ms "$TMP/events")
        echo "$cpu_ms" >>"$TMP/cpu"
        { calc "$cpu_ms / 10 / $wall"; echo; } >>"$TMP/pct" # ms / (s * 1000) * 100
        jq -r 'select(.event == "kickstart.inv.end") | .samples' "$TMP/events" >>"$TMP/samples"
    done
    local pct plain mon samples cpu
    pct=$(median <"$TMP/pct")
    cpu=$(median <"$TMP/cpu")
    plain=$(median <"$TMP/plain")
    mon=$(median <"$TMP/mon")
    samples=$(median <"$TMP/samples")
    printf '%s %s %s %s %s %s\n' "$pct" "$(calc "$mon / $plain")" "$samples" "$plain" "$mon" \
        "$(calc "($cpu - $FIXED_MS) / $samples")"
}

# The monitor's own CPU time in ms, from the end event of an events file.
monitor_cpu_ms() {
    jq -r 'select(.event == "kickstart.inv.end") | (.monitor_utime + .monitor_stime) * 1000' "$1"
}

# The fixed cost of a monitored run, in ms: the median over 21 runs of a
# task that exits at once (start, two samples, end event, exit).
fixed_cost_ms() {
    local i
    : >"$TMP/fixed"
    for ((i = 0; i < 21; i++)); do
        rm -f "$TMP/events"
        "$MONITOR" -o "$TMP/events" -- "$WORKLOAD" exit 0 >/dev/null
        monitor_cpu_ms "$TMP/events" >>"$TMP/fixed"
    done
    median <"$TMP/fixed"
}

echo "pano-monitor overhead: WORK=$WORK s, REPS=$REPS, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), events: $dest" >&2
FIXED_MS=$(fixed_cost_ms)
printf "fixed cost of a monitored run: %.2f ms of monitor CPU\n" "$FIXED_MS" >&2
printf '%-8s %8s %12s %10s %8s %10s %10s %10s %11s\n' workload interval cpu_pct wall_ratio samples plain_s \
    monitored_s ms/sample steady_pct >&2
declare -A PCT RATIO
for interval in 1 0.1; do
    for w in single tree64; do
        read -r pct ratio samples plain mon per_sample < <(run_case "$w" "$interval")
        PCT[$w,$interval]=$pct
        RATIO[$w,$interval]=$ratio
        printf '%-8s %8s %12.4f %10.4f %8s %10.3f %10.3f %10.3f %11.4f\n' "$w" "$interval" "$pct" "$ratio" \
            "$samples" "$plain" "$mon" "$per_sample" "$(calc "$per_sample / ($interval * 1000) * 100")" >&2
    done
done
worst=$(printf '%s\n' "${RATIO[@]}" | sort -g | tail -1)
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg) (wall ratios mean little on a loaded machine)" >&2
printf 'RESULT monitor cpu_pct_1s=%.4f cpu_pct_100ms=%.4f wall_ratio=%.4f\n' \
    "${PCT[tree64,1]}" "${PCT[tree64,0.1]}" "$worst"
