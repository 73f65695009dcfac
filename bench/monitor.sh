#!/usr/bin/env bash
# Overhead of pano-monitor (a benchmark, not a timed test).
#
#   bench/monitor.sh [BUILD_DIR]
#
# Workloads of fixed work (pano-workload from the test build):
#   single  one CPU-bound process burning WORK seconds of CPU
#   tree64  64 processes burning WORK*2 seconds of CPU together (all cores busy)
# each run unmonitored, monitored and under the baseline sampler, in turn,
# REPS times, at intervals of 1 s and 0.1 s, in the same run of this script.
# Reported per case (medians of REPS):
#   cpu_pct     monitor CPU seconds / task wall seconds x 100 while the task
#               runs: the growth of the monitor's own CPU time (all its
#               threads, getrusage, which every sample carries) from the
#               first sample WARMUP seconds into the task to the last
#               periodic one, over the wall time between them. What sampling
#               at that interval costs per second, whatever the task's length.
#   run_pct     the same for the whole run of the task of WORK seconds, start
#               and exit included (the monitor's CPU time in kickstart.inv.end)
#   wall_ratio  monitored wall time / unmonitored wall time, of the runs
#               made one after the other (the median of REPS pairs)
#   noise       how much the unmonitored runs' wall times differ among
#               themselves: (slowest - fastest) / median, in %, the
#               resolution of wall_ratio on this machine
#   ms/sample   cpu_pct x interval: what one sample costs
#   once_ms     what the run cost besides sampling at cpu_pct: start, exit,
#               finding and letting go of the task's processes
#   bare_pct    cpu_pct of the baseline, proc_sampler (bench/proc_sampler.c):
#               a bare sampler that only walks the tree and reads every
#               process's stat and io at the same interval, what any monitor
#               that reads /proc pays here (bare_run the same as run_pct)
#   vs_bare     cpu_pct / bare_pct
# and for tree64 (whose 64 processes make the per-process reads count):
#   pss_pct     cpu_pct of the monitor with pano.monitor.pss=true (each
#               process's smaps_rollup read in every sample), pss_vs_bare
#               it over bare_pct
#   ctxt_pct    cpu_pct of the bare sampler reading each process's status
#               file too (PROC_SAMPLER_STATUS=1: what counting context
#               switches costs any sampler), ctxt_vs_bare it over bare_pct;
#               pano-monitor always reads them, so its cpu_pct includes them
# and, for 64 processes, the task length from which the whole run is within
# the target (cpu_pct + once_ms / task length), and, once, the fixed cost of
# a monitored run (a task that exits at once).
# Events go to a JSON-lines file, or to a broker with
# BENCH_AMQP_URL=amqp://USER:PASS@HOST:PORT/VHOST/EXCHANGE, where EXCHANGE is
# the bench's own: it is declared with a queue to read the events back, and
# both are deleted at the end (e.g. .../%2F/pano-bench).
# Ends with two lines (tree64; wall_ratio: the worst case):
#   RESULT monitor cpu_pct_1s=… cpu_pct_100ms=… wall_ratio=… run_pct_1s=… run_pct_100ms=…
#          bare_pct_1s=… bare_pct_100ms=… vs_bare_1s=… vs_bare_100ms=…
#   RESULT monitor-extras pss_pct_1s=… pss_pct_100ms=… pss_vs_bare_1s=… pss_vs_bare_100ms=…
#          ctxt_vs_bare_1s=… ctxt_vs_bare_100ms=…
# Environment: WORK (default 10), REPS (default 5), WARMUP (default 2).
set -euo pipefail

BUILD=${1:-build}
MONITOR="$BUILD/publishers/monitor/pano-monitor"
WORKLOAD="$BUILD/tests/integration/pano-workload"
SAMPLER="$BUILD/bench/proc_sampler"
WORK=${WORK:-10}
REPS=${REPS:-5}
WARMUP=${WARMUP:-2}
[[ -x $MONITOR && -x $WORKLOAD && -x $SAMPLER ]] ||
    { echo "build first: $MONITOR, $WORKLOAD, $SAMPLER" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }
((WORK > WARMUP + 2)) || { echo "WORK must exceed WARMUP + 2 s" >&2; exit 2; }

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
    # The events are read back from a queue of the bench's own.
    QUEUE_TOOL="$BUILD/tests/integration/pano-queue"
    QUEUE="pano-bench-monitor-$$"
    "$QUEUE_TOOL" declare "$BENCH_AMQP_URL" "$QUEUE" ||
        { echo "cannot declare a queue at the broker" >&2; exit 2; }
    export PANO_AMQP_URL=$BENCH_AMQP_URL
    dest="broker $(sed -E 's#//[^@]*@#//***@#' <<<"$BENCH_AMQP_URL")"
else
    unset PANO_AMQP_URL PEGASUS_AMQP_URL KICKSTART_MON_URL
    dest="JSON lines to a file"
fi

# The monitor's own CPU time so far in ms, which its samples and its end
# event carry (a jq definition).
JQ_CPU_MS='def cpu_ms: (.monitor_utime + .monitor_stime) * 1000;'

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
median() {
    sort -g | awk '{ v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# task_args WORKLOAD: the workload's arguments
task_args() {
    case $1 in
    single) echo "burn $WORK" ;;
    tree64) echo "work 64 $((WORK * 2))" ;;
    esac
}

# The steady CPU rate in % from samples on stdin ({elapsed, cpu_ms} per
# line, the periodic ones): from the first at WARMUP s or later to the last.
steady_pct() {
    jq -s -r --argjson warmup "$WARMUP" '[.[] | select(.elapsed >= $warmup)]
        | if length < 2 then error("fewer than 2 samples after \($warmup) s") else . end
        | (.[-1].cpu_ms - .[0].cpu_ms) / (.[-1].elapsed - .[0].elapsed) / 10'
}

# timed OUT COMMAND...: runs COMMAND (stdout discarded), appends its wall
# time in seconds to OUT
timed() {
    local out=$1 start end
    shift
    start=$EPOCHREALTIME
    "$@" >/dev/null
    end=$EPOCHREALTIME
    { calc "$end - $start"; echo; } >>"$out"
}

# monitored INTERVAL ARGS...: runs the task under the monitor; appends its
# wall time, steady CPU %, whole-run CPU ms and samples to $TMP/mon.*
# ($TMP/$MON_AS.*, with MON_SET: a --set for the monitor)
monitored() {
    local interval=$1 as=${MON_AS:-mon}
    shift
    rm -f "$TMP/events"
    timed "$TMP/$as.wall" "$MONITOR" -i "$interval" ${MON_SET:+--set "$MON_SET"} -o "$TMP/events" \
        -- "$WORKLOAD" "$@"
    collect_events
    jq -c "$JQ_CPU_MS"' select(.sample == "periodic") | {elapsed, cpu_ms: cpu_ms}' "$TMP/events" |
        steady_pct >>"$TMP/$as.pct"
    monitor_cpu_ms "$TMP/events" >>"$TMP/$as.cpu"
    jq -r 'select(.event == "kickstart.inv.end") | .samples' "$TMP/events" >>"$TMP/$as.samples"
}

# bare INTERVAL ARGS...: the same under the baseline sampler, to $TMP/bare.*
# ($TMP/$BARE_AS.*, with BARE_ENV: an environment setting for it)
bare() {
    local interval=$1 as=${BARE_AS:-bare}
    shift
    timed "$TMP/$as.wall" env ${BARE_ENV:-} "$SAMPLER" "$interval" "$TMP/bare" "$WORKLOAD" "$@"
    # its periodic samples: every line but the first (start) and the last
    # two (the sample at exit and the end line)
    head -n -2 "$TMP/bare" | tail -n +2 | steady_pct >>"$TMP/$as.pct"
    sed -n 's/^end .*cpu_ms=//p' "$TMP/bare" >>"$TMP/$as.cpu"
}

# run_case WORKLOAD INTERVAL: prints "cpu_pct run_pct wall_ratio noise
#   samples plain_s monitored_s bare_pct bare_run_pct pss_pct ctxt_pct"
#   (the last two "-" but for tree64)
run_case() {
    local w=$1 interval=$2 i
    local -a args
    read -r -a args <<<"$(task_args "$w")"
    rm -f "$TMP"/plain.wall "$TMP"/{mon,bare,pss,ctxt}.*
    for ((i = 0; i < REPS; i++)); do
        timed "$TMP/plain.wall" "$WORKLOAD" "${args[@]}"
        monitored "$interval" "${args[@]}"
        bare "$interval" "${args[@]}"
        if [[ $w == tree64 ]]; then
            MON_AS=pss MON_SET=pano.monitor.pss=true monitored "$interval" "${args[@]}"
            BARE_AS=ctxt BARE_ENV=PROC_SAMPLER_STATUS=1 bare "$interval" "${args[@]}"
        fi
    done
    local plain mon bare_wall
    plain=$(median <"$TMP/plain.wall")
    mon=$(median <"$TMP/mon.wall")
    bare_wall=$(median <"$TMP/bare.wall")
    printf '%s %s %s %s %s %s %s %s %s %s %s\n' "$(median <"$TMP/mon.pct")" \
        "$(calc "$(median <"$TMP/mon.cpu") / 10 / $mon")" \
        "$(paste "$TMP/plain.wall" "$TMP/mon.wall" | awk '{ print $2 / $1 }' | median)" \
        "$(sort -g "$TMP/plain.wall" | sed -n '1p;$p' | paste -s -d' ' |
            awk -v m="$plain" '{ print ($2 - $1) / m * 100 }')" \
        "$(median <"$TMP/mon.samples")" "$plain" "$mon" "$(median <"$TMP/bare.pct")" \
        "$(calc "$(median <"$TMP/bare.cpu") / 10 / $bare_wall")" \
        "$([[ -s $TMP/pss.pct ]] && median <"$TMP/pss.pct" || echo -)" \
        "$([[ -s $TMP/ctxt.pct ]] && median <"$TMP/ctxt.pct" || echo -)"
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
    jq -r "$JQ_CPU_MS"' select(.event == "kickstart.inv.end") | cpu_ms' "$1"
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

echo "pano-monitor overhead: WORK=$WORK s, REPS=$REPS, WARMUP=$WARMUP s, $(nproc) CPUs," \
    "load $(cut -d' ' -f1-3 /proc/loadavg), events: $dest" >&2
FIXED_MS=$(fixed_cost_ms)
printf "fixed cost of a monitored run: %.2f ms of monitor CPU\n" "$FIXED_MS" >&2
printf '%-8s %8s %8s %8s %10s %6s %8s %8s %11s %9s %8s %8s %8s %8s\n' workload interval \
    cpu_pct run_pct wall_ratio noise samples plain_s monitored_s ms/sample once_ms bare_pct \
    bare_run vs_bare >&2
declare -A PCT RUN RATIO ONCE BARE PSS CTXT
for interval in 1 0.1; do
    for w in single tree64; do
        read -r pct run ratio noise samples plain mon bare_pct bare_run pss_pct ctxt_pct \
            < <(run_case "$w" "$interval")
        PSS[$w,$interval]=$pss_pct
        CTXT[$w,$interval]=$ctxt_pct
        PCT[$w,$interval]=$pct
        RUN[$w,$interval]=$run
        RATIO[$w,$interval]=$ratio
        ONCE[$w,$interval]=$(calc "($run - $pct) / 100 * $mon * 1000")
        BARE[$w,$interval]=$bare_pct
        printf '%-8s %8s %8.4f %8.4f %10.4f %5.1f%% %8s %8.3f %11.3f %9.3f %8.2f %8.4f %8.4f' \
            "$w" "$interval" "$pct" "$run" "$ratio" "$noise" "$samples" "$plain" "$mon" \
            "$(calc "$pct / 100 * $interval * 1000")" "${ONCE[$w,$interval]}" "$bare_pct" \
            "$bare_run" >&2
        printf ' %8.2f\n' "$(calc "$pct / $bare_pct")" >&2
    done
    printf 'tree64 at %s s: with pano.monitor.pss=true %.4f %% (%.2fx bare);' "$interval" \
        "${PSS[tree64,$interval]}" "$(calc "${PSS[tree64,$interval]} / ${BARE[tree64,$interval]}")" >&2
    printf ' the bare sampler reading status too %.4f %% (%.2fx bare)\n' "${CTXT[tree64,$interval]}" \
        "$(calc "${CTXT[tree64,$interval]} / ${BARE[tree64,$interval]}")" >&2
done
# The monitor's CPU over a task of T seconds is about cpu_pct plus what the
# run pays once over T: from which task length the whole run is within target.
for interval in 1 0.1; do
    target=$([[ $interval == 1 ]] && echo 0.1 || echo 1)
    awk -v i="$interval" -v t="$target" -v s="${PCT[tree64,$interval]}" \
        -v o="${ONCE[tree64,$interval]}" 'BEGIN {
        printf "tree64 at %s s: %.4f %% + %.1f ms once; ", i, s, o
        if (s >= t) printf "sampling alone is over the %s %% target\n", t
        else printf "the whole run is within %s %% for tasks of %.0f s or more\n",
            t, (o > 0 ? o : 0) / 1000 / ((t - s) / 100)
    }' >&2
done
worst=$(printf '%s\n' "${RATIO[@]}" | sort -g | tail -1)
printf 'RESULT monitor cpu_pct_1s=%.4f cpu_pct_100ms=%.4f wall_ratio=%.4f' \
    "${PCT[tree64,1]}" "${PCT[tree64,0.1]}" "$worst"
printf ' run_pct_1s=%.4f run_pct_100ms=%.4f' "${RUN[tree64,1]}" "${RUN[tree64,0.1]}"
printf ' bare_pct_1s=%.4f bare_pct_100ms=%.4f vs_bare_1s=%.2f vs_bare_100ms=%.2f\n' \
    "${BARE[tree64,1]}" "${BARE[tree64,0.1]}" "$(calc "${PCT[tree64,1]} / ${BARE[tree64,1]}")" \
    "$(calc "${PCT[tree64,0.1]} / ${BARE[tree64,0.1]}")"
printf 'RESULT monitor-extras pss_pct_1s=%.4f pss_pct_100ms=%.4f pss_vs_bare_1s=%.2f pss_vs_bare_100ms=%.2f' \
    "${PSS[tree64,1]}" "${PSS[tree64,0.1]}" "$(calc "${PSS[tree64,1]} / ${BARE[tree64,1]}")" \
    "$(calc "${PSS[tree64,0.1]} / ${BARE[tree64,0.1]}")"
printf ' ctxt_vs_bare_1s=%.2f ctxt_vs_bare_100ms=%.2f\n' \
    "$(calc "${CTXT[tree64,1]} / ${BARE[tree64,1]}")" "$(calc "${CTXT[tree64,0.1]} / ${BARE[tree64,0.1]}")"
