#!/usr/bin/env bash
# Overhead of pano-monitor (a benchmark, not a timed test).
#
#   bench/monitor.sh [BUILD_DIR]
#
# Workloads of fixed work (pano-workload from the test build):
#   single  one CPU-bound process burning WORK seconds of CPU
#   tree64  64 processes burning WORK*2 seconds of CPU together (all cores busy)
# each run unmonitored and monitored, alternately, REPS times, at intervals
# of 1 s and 0.1 s, in the same run of this script, plus REPS monitored runs
# of twice the work. Reported per case (medians of REPS):
#   cpu_pct     monitor CPU seconds / task wall seconds x 100 for the task of
#               WORK seconds, where the monitor's CPU time (all its threads) is
#               what it reports in kickstart.inv.end (getrusage RUSAGE_SELF)
#   wall_ratio  monitored wall time / unmonitored wall time
#   ms/sample   what one more sample costs: the monitor CPU time the task of
#               2*WORK seconds took more than the task of WORK seconds, over
#               the samples it took more (start, exit and the discovery and
#               teardown of the task's processes cancel out)
#   sample_pct  ms/sample / interval: the overhead of sampling at that
#               interval, monitor CPU seconds per task wall second
#   once_ms     what the run of WORK seconds cost besides its samples: start,
#               exit, and finding and letting go of the task's processes
#   bare_pct    the baseline: the same, for proc_sampler (bench/proc_sampler.c),
#               a bare sampler that only walks the tree and reads every
#               process's stat and io at the same interval: what any monitor
#               that reads /proc pays here
#   vs_bare     cpu_pct / bare_pct
# and, for 64 processes, the task length from which the CPU target holds
# (sample_pct + once_ms / task length),
# and, once, the fixed cost of a monitored run (a task that exits at once).
# Events go to a JSON-lines file, or to a broker with
# BENCH_AMQP_URL=amqp://USER:PASS@HOST:PORT/VHOST/EXCHANGE, where EXCHANGE is
# the bench's own: it is declared with a queue to read the events back, and
# both are deleted at the end (e.g. .../%2F/pano-bench).
# Ends with one line:
#   RESULT monitor cpu_pct_1s=<tree64 at 1 s> cpu_pct_100ms=<tree64 at 0.1 s> wall_ratio=<worst case>
#          sample_pct_1s=<tree64 at 1 s> sample_pct_100ms=<tree64 at 0.1 s>
#          bare_pct_1s=… bare_pct_100ms=… vs_bare_1s=… vs_bare_100ms=… (tree64)
# Environment: WORK (default 10), REPS (default 3).
set -euo pipefail

BUILD=${1:-build}
MONITOR="$BUILD/publishers/monitor/pano-monitor"
WORKLOAD="$BUILD/tests/integration/pano-workload"
SAMPLER="$BUILD/bench/proc_sampler"
WORK=${WORK:-10}
REPS=${REPS:-3}
[[ -x $MONITOR && -x $WORKLOAD && -x $SAMPLER ]] ||
    { echo "build first: $MONITOR, $WORKLOAD, $SAMPLER" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }

TMP=$(mktemp -d /tmp/pano-bench.XXXXXX)
QUEUE=""
cleanup() {
    [[ -z $QUEUE ]] || "$QUEUE_TOOL" delete "$BENCH_AMQP_URL" "$QUEUE" >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
export PANO_SPOOL_DIR="$TMP/spool"
export PANO_WF_UUID=${PANO_WF_UUID:-pano-bench}
if [[ -n ${BENCH_AMQP_URL:-} ]]; then
    # The events are read back from a queue of the bench's own (the monitor
    # reports its CPU time in kickstart.inv.end).
    QUEUE_TOOL="$BUILD/tests/integration/pano-queue"
    QUEUE="pano-bench-monitor-$$"
    "$QUEUE_TOOL" declare "$BENCH_AMQP_URL" "$QUEUE" || { echo "cannot declare a queue at the broker" >&2; exit 2; }
    export PANO_AMQP_URL=$BENCH_AMQP_URL
    dest="broker $(sed -E 's#//[^@]*@#//***@#' <<<"$BENCH_AMQP_URL")"
else
    unset PANO_AMQP_URL PEGASUS_AMQP_URL KICKSTART_MON_URL
    dest="JSON lines to a file"
fi

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# task_args WORKLOAD SCALE: the workload's arguments for SCALE times WORK
task_args() {
    case $1 in
    single) echo "burn $((WORK * $2))" ;;
    tree64) echo "work 64 $((WORK * 2 * $2))" ;;
    esac
}

# monitored SCALE INTERVAL ARGS...: runs the task under the monitor; appends
# the wall time to $TMP/mon.SCALE, and the monitor's CPU ms and the samples
# taken to $TMP/cpu.SCALE and $TMP/samples.SCALE
monitored() {
    local scale=$1 interval=$2 start end
    shift 2
    rm -f "$TMP/events"
    start=$EPOCHREALTIME
    "$MONITOR" -i "$interval" -o "$TMP/events" -- "$WORKLOAD" "$@" >/dev/null
    end=$EPOCHREALTIME
    collect_events
    { calc "$end - $start"; echo; } >>"$TMP/mon.$scale"
    monitor_cpu_ms "$TMP/events" >>"$TMP/cpu.$scale"
    jq -r 'select(.event == "kickstart.inv.end") | .samples' "$TMP/events" >>"$TMP/samples.$scale"
}

# bare INTERVAL ARGS...: runs the task under the baseline sampler; appends
# its CPU ms to $TMP/bare.cpu and the task's wall time to $TMP/bare.wall
bare() {
    local interval=$1 start end
    shift
    start=$EPOCHREALTIME
    "$SAMPLER" "$interval" "$TMP/bare" "$WORKLOAD" "$@" >/dev/null
    end=$EPOCHREALTIME
    { calc "$end - $start"; echo; } >>"$TMP/bare.wall"
    sed -n 's/^end .*cpu_ms=//p' "$TMP/bare" >>"$TMP/bare.cpu"
}

# run_case WORKLOAD INTERVAL: prints
#   "cpu_pct wall_ratio samples plain_s monitored_s ms/sample once_ms bare_pct"
run_case() {
    local w=$1 interval=$2 i start end
    local -a args args2
    read -r -a args <<<"$(task_args "$w" 1)"
    read -r -a args2 <<<"$(task_args "$w" 2)"
    rm -f "$TMP"/plain "$TMP"/{mon,cpu,samples,bare}.*
    for ((i = 0; i < REPS; i++)); do
        start=$EPOCHREALTIME
        "$WORKLOAD" "${args[@]}" >/dev/null
        end=$EPOCHREALTIME
        { calc "$end - $start"; echo; } >>"$TMP/plain"
        monitored 1 "$interval" "${args[@]}"
        monitored 2 "$interval" "${args2[@]}"
        bare "$interval" "${args[@]}"
    done
    local plain mon cpu samples cpu2 samples2 per_sample
    plain=$(median <"$TMP/plain")
    mon=$(median <"$TMP/mon.1")
    cpu=$(median <"$TMP/cpu.1")
    samples=$(median <"$TMP/samples.1")
    cpu2=$(median <"$TMP/cpu.2")
    samples2=$(median <"$TMP/samples.2")
    per_sample=$(calc "($cpu2 - $cpu) / ($samples2 - $samples)")
    printf '%s %s %s %s %s %s %s %s\n' "$(calc "$cpu / 10 / $mon")" "$(calc "$mon / $plain")" \
        "$samples" "$plain" "$mon" "$per_sample" "$(calc "$cpu - $samples * $per_sample")" \
        "$(calc "$(median <"$TMP/bare.cpu") / 10 / $(median <"$TMP/bare.wall")")"
}

# collect_events: the events of the monitor that just ran, in $TMP/events
# (written there by -o, or taken from the bench's queue).
collect_events() {
    if [[ -n $QUEUE ]]; then
        "$QUEUE_TOOL" drain "$BENCH_AMQP_URL" "$QUEUE" 0.3 >"$TMP/events"
    fi
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
        collect_events
        monitor_cpu_ms "$TMP/events" >>"$TMP/fixed"
    done
    median <"$TMP/fixed"
}

echo "pano-monitor overhead: WORK=$WORK s, REPS=$REPS, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), events: $dest" >&2
FIXED_MS=$(fixed_cost_ms)
printf "fixed cost of a monitored run: %.2f ms of monitor CPU\n" "$FIXED_MS" >&2
printf '%-8s %8s %9s %10s %8s %9s %11s %10s %9s %9s %9s %8s\n' workload interval cpu_pct \
    wall_ratio samples plain_s monitored_s ms/sample sample_pct once_ms bare_pct vs_bare >&2
declare -A PCT SAMPLE_PCT RATIO ONCE BARE
for interval in 1 0.1; do
    for w in single tree64; do
        read -r pct ratio samples plain mon per_sample once bare_pct < <(run_case "$w" "$interval")
        sample_pct=$(calc "$per_sample / ($interval * 1000) * 100")
        PCT[$w,$interval]=$pct
        SAMPLE_PCT[$w,$interval]=$sample_pct
        RATIO[$w,$interval]=$ratio
        ONCE[$w,$interval]=$once
        BARE[$w,$interval]=$bare_pct
        printf '%-8s %8s %9.4f %10.4f %8s %9.3f %11.3f %10.3f %9.4f %9.2f %9.4f %8.2f\n' "$w" \
            "$interval" "$pct" "$ratio" "$samples" "$plain" "$mon" "$per_sample" "$sample_pct" \
            "$once" "$bare_pct" "$(calc "$pct / $bare_pct")" >&2
    done
done
# The monitor's CPU over a task of T seconds is about sample_pct plus what
# the run pays once over T: from which task length the target holds.
for interval in 1 0.1; do
    target=$([[ $interval == 1 ]] && echo 0.1 || echo 1)
    awk -v i="$interval" -v t="$target" -v s="${SAMPLE_PCT[tree64,$interval]}" \
        -v o="${ONCE[tree64,$interval]}" 'BEGIN {
        if (s >= t) printf "tree64 at %s s: sampling alone costs %.4f %%, over the %s %% target\n", i, s, t
        else printf "tree64 at %s s: %.4f %% + %.1f ms once; within %s %% for tasks of %.0f s or more\n", i, s, o, t, (o > 0 ? o : 0) / 1000 / ((t - s) / 100)
    }' >&2
done
worst=$(printf '%s\n' "${RATIO[@]}" | sort -g | tail -1)
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg) (wall ratios mean little on a loaded machine)" >&2
printf 'RESULT monitor cpu_pct_1s=%.4f cpu_pct_100ms=%.4f wall_ratio=%.4f sample_pct_1s=%.4f sample_pct_100ms=%.4f' \
    "${PCT[tree64,1]}" "${PCT[tree64,0.1]}" "$worst" "${SAMPLE_PCT[tree64,1]}" "${SAMPLE_PCT[tree64,0.1]}"
printf ' bare_pct_1s=%.4f bare_pct_100ms=%.4f vs_bare_1s=%.2f vs_bare_100ms=%.2f\n' \
    "${BARE[tree64,1]}" "${BARE[tree64,0.1]}" "$(calc "${PCT[tree64,1]} / ${BARE[tree64,1]}")" \
    "$(calc "${PCT[tree64,0.1]} / ${BARE[tree64,0.1]}")"
