#!/usr/bin/env bash
# pano-monitor's context switches and proportional memory, against counts
# known by hand (no service: events into a file):
#   - four threads sleeping 1 ms 300 times each: a sample read while they
#     live counts their switches, as the process's own getrusage does
#     (switches are read every 2.5 s: every 5th sample at -i 0.5, so each
#     workload holds 3 s; a process's own count, taken after its hold, is
#     a few switches above the monitor's last reading of it); two more
#     threads spinning on one CPU make involuntary switches, which the
#     last sample counts;
#   - a process gone, reaped by a live parent: its switches stay in the
#     tree's count while the next one adds its own;
#   - 64 MiB written, then shared by two processes (fork): rss counts it
#     twice, pss once, uss not at all (no page is one process's alone);
#     the processes' other pages (their libraries; a sanitizer's shadow)
#     add to both, so pss is at most half of rss and a few MiB; the end's
#     pss_peak lies at least 32 MiB below its rss_peak; in any sample, pss
#     is at most the half of rss + uss;
#   - without pano.monitor.pss, no sample carries pss and the end event
#     still has the peaks.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"
W=$PANO_BUILD/tests/integration/pano-workload

check() { # NAME JQ-ON-THE-SAMPLES' VALUES WHAT
    jq -e "$2" <<<"$(file_samples "$1" "$3")" >/dev/null || fail "$1: $4: $(file_samples "$1" "$3")"
}

# ---- threads
run_to_file threads -i 0.5 -- "$W" switch 300 4 3
own=$(jq -r .vol_ctxt "$TEST_DIR/threads.out")
((own >= 1200)) || fail "the workload counts $own voluntary switches of its own, not 1200 or more"
check threads ". == sort" .vol_ctxt "vol_ctxt decreases"
check threads "[.[] | select(.[0] >= $own - 10 and .[1] == 5)] | length >= 1" "[.vol_ctxt, .threads]" \
    "no sample of the 5 live threads counts the process's $own switches"
end=$(file_final threads vol_ctxt)
((end >= own && end < own + 100)) || fail "threads: the end counts $end, the process $own"
check threads "all(.[]; . >= 0) and .[-1] > 0" .inv_ctxt "inv_ctxt"

# ---- a process gone, then another: the first's switches stay
run_to_file gone -i 0.5 -- bash -c "'$W' switch 500 1 3 >'$TEST_DIR/first.out'; '$W' switch 200 1 3; sleep 0.3"
first=$(jq -r .vol_ctxt "$TEST_DIR/first.out")
second=$(jq -r .vol_ctxt "$TEST_DIR/gone.out")
check gone ". == sort" .vol_ctxt "vol_ctxt decreases"
check gone "[.[:-1][] | select(. >= $((first + second - 20)))] | length >= 1" .vol_ctxt \
    "no sample counts both workloads ($first + $second), the first gone while the second ran"

# ---- memory shared by a fork
run_to_file shared -i 0.1 --set pano.monitor.pss=true -- "$W" touch 64 1 2
# Samples of the two copies (the child's exit can be caught half-way: two
# processes, the 64 MiB the parent's alone again); and in every sample a
# page mapped by n processes counts 1/n in pss, so pss <= (rss + uss) / 2
# (1 MiB for the moment between reading rss and reading pss).
check shared "[.[] | select(.[3] == 2 and .[0] >= 128 * 1024)] | length >= 3 and
              all(.[]; .[1] >= 64 * 1024 and .[1] <= .[0] / 2 + 4096 and .[2] < 1024)" \
    "[.rss, .pss, .uss, .procs]" "two processes sharing 64 MiB: rss twice, pss once, uss none"
check shared "all(.[]; .[1] <= (.[0] + .[2]) / 2 + 1024)" "[.rss, .pss, .uss]" \
    "pss above the half of rss + uss (a shared page counted whole)"
# The end's pss_peak is the largest pss read: a sample of the two copies, or
# one of the process alone before its fork or after its child's exit, when
# all 64 MiB are its own (pss = rss; under a sanitizer its shadow too, some
# MiB the fork then shares). Either way the shared 64 MiB count once in it,
# twice in rss_peak.
pss_peak=$(file_final shared pss_peak)
rss_peak=$(file_final shared rss_peak)
read_max=$(jq '[.[] | numbers] | max' <<<"$(file_samples shared .pss)")
((pss_peak >= 64 * 1024 && pss_peak >= read_max && pss_peak <= rss_peak - 32 * 1024)) ||
    fail "shared: the end's pss_peak is $pss_peak kB, its samples' largest pss $read_max kB, its rss_peak $rss_peak kB"
run_to_file private -i 0.1 --set pano.monitor.pss=true -- "$W" touch 64 0.8 1
check private "[.[] | select(.[0] >= 64 * 1024 and .[1] >= 64 * 1024 and .[1] <= .[0])] | length >= 3" \
    "[.pss, .uss]" "one process's 64 MiB: pss and uss both"

# ---- not asked: no sample carries pss; the end has the peaks of one sample in 10
run_to_file unasked -i 0.1 -- "$W" touch 64 1.5 1
check unasked "all(.[]; . == null)" ".pss // .uss // .pss_peak" "pss in samples not asked for"
uss_peak=$(file_final unasked uss_peak)
((uss_peak >= 64 * 1024)) || fail "unasked: the end's uss_peak is $uss_peak kB"
log "threads: $own switches, the monitor $end; gone: $first + $second; pss $pss_peak kB of 2 x 64 MiB shared"
