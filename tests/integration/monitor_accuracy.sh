#!/usr/bin/env bash
# pano-monitor measures what the task does, through the real broker:
# CPU time of a burner, bytes of a writer, a fork tree with a setsid'd
# orphan, a process named "a b) c", and a task shorter than the interval.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"
require_rabbitmq
queue_setup

# run NAME MONITOR-ARGS... -- TASK...: monitor a task, keep its stdout and events.
run() {
    local name=$1
    shift
    "$MONITOR" "$@" >"$TEST_DIR/$name.out" 2>"$TEST_DIR/$name.log" || fail "$name: pano-monitor exited $?"
    drain "$TEST_DIR/$name.events"
    check_schema "$TEST_DIR/$name.events"
    deltas_add_up "$name"
    log "$name: $(wc -l <"$TEST_DIR/$name.events") events"
}

# Every sample's delta is the change since the previous one sent, so a
# run's deltas add up to its last sample, field by field (CPU seconds to
# the printed millisecond, the rest exactly), --on-change or not.
deltas_add_up() {
    local bad
    bad=$(jq -s -r '[.[] | select(.event == "kickstart.inv.online")] as $s
        | ($s[-1]) as $last
        | ["utime","stime","iowait","vm","rss","procs","threads","bread","bwrite","rchar","wchar","syscr","syscw"][]
        | . as $f | ([$s[].delta[$f]] | add) as $sum
        | select(($sum - $last[$f] | fabs) > 0.0015) | "\($f): deltas add up to \($sum), last sample \($last[$f])"' \
        "$TEST_DIR/$1.events")
    [[ -z $bad ]] || fail "$1: $bad"
}

# ---- a CPU burner of known length
run burn -i 0.2 -- "$WORKLOAD" burn 1.5
ev=$TEST_DIR/burn.events
task_cpu=$(jq -r .cpu "$TEST_DIR/burn.out")
# The task reports its own CPU time (user + system, from getrusage).
end_cpu=$(jqf "$ev" '.[] | select(.event=="kickstart.inv.end") | .utime + .stime')
end_utime=$(jqf "$ev" '.[] | select(.event=="kickstart.inv.end") | .utime')
final_utime=$(jqf "$ev" '.[] | select(.event=="kickstart.inv.end") | .final.utime')
within "$end_cpu" "$task_cpu" 5 || fail "burn: end utime+stime $end_cpu vs the task's own $task_cpu s"
within "$final_utime" "$end_utime" 5 || fail "burn: final utime $final_utime vs rusage $end_utime"
expect "$ev" '[.[] | select(.event=="kickstart.inv.online" and .sample=="periodic")] | length >= 4' \
    "burn: periodic samples"
expect "$ev" '[.[] | select(.sample=="periodic") | .utime] | (.[-1] > 0.8) and (. == sort)' \
    "burn: cumulative utime grows"
# cpu_util is the CPU time used over the last interval / its wall time (a
# loaded machine gives the burner less than a whole CPU).
expect "$ev" '[.[] | select(.sample=="periodic")] as $s | [range(1; $s | length) as $i
              | ($s[$i].utime + $s[$i].stime - $s[$i-1].utime - $s[$i-1].stime)
                / ($s[$i].elapsed - $s[$i-1].elapsed) - $s[$i].cpu_util | fabs < 0.1] | all' \
    "burn: cpu_util = delta CPU / delta wall"
expect "$ev" '[.[] | select(.sample=="periodic") | .cpu_util] | max > 0.05' "burn: cpu_util"
expect "$ev" '[.[] | .seq] == [range(1; length + 1)]' "burn: seq 1..n in order"
# Every sample carries what monitoring has cost so far: it grows, and the end
# event's figure is at least the last sample's.
expect "$ev" '[.[] | select(.event=="kickstart.inv.online") | .monitor_utime + .monitor_stime]
              | (length >= 6) and (.[0] > 0) and (. == sort)' "burn: monitor CPU in samples"
expect "$ev" '([.[] | select(.event=="kickstart.inv.online")][-1] | .monitor_utime + .monitor_stime)
              <= (.[] | select(.event=="kickstart.inv.end") | .monitor_utime + .monitor_stime)' \
    "burn: monitor CPU, last sample vs end"
log "burn: task $task_cpu s, end $end_cpu s, final utime $final_utime s"

# ---- a writer of exactly N bytes
N=10485761
run write -i 0.5 -- "$WORKLOAD" write $N "$TEST_DIR/written"
wchar=$(jqf "$TEST_DIR/write.events" '.[] | select(.event=="kickstart.inv.end") | .final.wchar')
((wchar >= N)) || fail "write: wchar $wchar < $N"
log "write: wchar $wchar >= $N"

# ---- a fork tree with many short-lived children and a setsid'd orphan
run tree -i 0.1 -- "$WORKLOAD" tree 60 1.0
ev=$TEST_DIR/tree.events
tree_cpu=$(jq -r .cpu "$TEST_DIR/tree.out")
final_cpu=$(jqf "$ev" '.[] | select(.event=="kickstart.inv.end") | .final.utime + .final.stime')
within "$final_cpu" "$tree_cpu" 2 || fail "tree: final CPU $final_cpu s vs the tree's rusage $tree_cpu s"
expect "$ev" '[.[] | select(.event=="kickstart.inv.online") | .procs] | max >= 2' "tree: processes seen"
log "tree: final CPU $final_cpu s, the tree's own rusage $tree_cpu s"

# ---- a process named "a b) c"
run name -i 0.1 -- "$WORKLOAD" name "a b) c" 1.0 1000000
ev=$TEST_DIR/name.events
task_cpu=$(jq -r .cpu "$TEST_DIR/name.out")
expect "$ev" '[.[] | select(.sample=="periodic" and .procs == 1)] | length >= 3' "name: samples"
# (the last periodic sample may catch the process exiting: its memory
# released, vm and rss 0, before it is a zombie)
bad=$(jq -s -c '[.[] | select(.sample=="periodic" and .procs == 1)] as $p
                | [$p[] | select((.threads == 1 and .vm > 1000 and .rss > 100 and .rss < .vm
                                  and .utime < 2) | not)
                        | select(.seq != $p[-1].seq or .vm != 0 or .rss != 0)]' "$ev")
[[ $bad == "[]" ]] || fail "name: fields of these samples are wrong: ${bad:0:600}"
expect "$ev" '.[] | select(.event=="kickstart.inv.end") | .final.wchar >= 1000000' "name: wchar"
final_utime=$(jqf "$ev" '.[] | select(.event=="kickstart.inv.end") | .final.utime')
within "$final_utime" "$task_cpu" 5 || fail "name: final utime $final_utime vs the task's $task_cpu"
last_periodic=$(jqf "$ev" '[.[] | select(.sample=="periodic") | .utime] | .[-1]')
awk -v u="$last_periodic" 'BEGIN { exit !(u > 0.5 && u <= 1.1) }' ||
    fail "name: utime of the last periodic sample is $last_periodic (fields shifted?)"
log "name: 'a b) c' parsed, utime $last_periodic s while running"

# ---- --on-change: an idle task sends (almost) only its start and end
# samples; a busy one keeps sending
run idle --on-change -i 0.1 -- "$WORKLOAD" sleep 1.5
expect "$TEST_DIR/idle.events" '[.[] | select(.sample == "periodic")] | length <= 3' "on-change: idle task"
expect "$TEST_DIR/idle.events" '[.[] | select(.event == "kickstart.inv.online") | .sample] | (.[0] == "start" and .[-1] == "end")' \
    "on-change: start and end samples"
run busy --on-change -i 0.1 -- "$WORKLOAD" burn 0.8
expect "$TEST_DIR/busy.events" '[.[] | select(.sample == "periodic")] | length >= 3' "on-change: busy task"
log "on-change: $(jqf "$TEST_DIR/idle.events" '[.[] | select(.sample == "periodic")] | length') periodic samples idle, $(jqf "$TEST_DIR/busy.events" '[.[] | select(.sample == "periodic")] | length') busy"

# ---- a 50 ms task with -i 1
run short -i 1 -- "$WORKLOAD" sleep 0.05
ev=$TEST_DIR/short.events
expect "$ev" '[.[] | .event] == ["kickstart.inv.start", "kickstart.inv.online",
                                 "kickstart.inv.online", "kickstart.inv.end"]' "short: events"
expect "$ev" '[.[] | select(.event=="kickstart.inv.online") | .sample] == ["start", "end"]' \
    "short: start and end samples"
no_sanitizer_reports
log "PASS"
