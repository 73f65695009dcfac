#!/usr/bin/env bash
# Every benchmark, one after the other, against a baseline measured in the
# same run; each prints its own RESULT line, collected at the end.
#
#   bench/run.sh                 all of them
#   bench/run.sh monitor bridge  some of them (monitor metrics darshan transfer
#                                bridge indexer e2e query query-pegasus
#                                explorer explorer-pegasus store)
#
# e2e runs twice: 2,000 events/s for 60 s and 10,000 events/s for 30 s.
# query and explorer measure a workflow in pano-monitor's shape,
# query-pegasus and explorer-pegasus the same jobs in Pegasus's (kickstart
# samples without delta, stampede job instances: BENCH_SHAPE=pegasus);
# BENCH_JOBS (10,000) sets the size of both.
#
# Needs a build (meson setup build && ninja -C build) and, for bridge,
# indexer, e2e, query, explorer and store, the local stack
# (deploy/local/pano-stack up). Run it on a quiet machine: the ratios hold
# under load, absolute rates do not.
#
# Between two benchmarks it waits (up to PANO_BENCH_SETTLE seconds, default
# 120) for the 1-minute load average to fall below half the CPU count: the
# services keep working after a benchmark (Elasticsearch merges the segments
# of a million documents), and the next benchmark would measure that too.
set -uo pipefail
cd "$(dirname "$0")/.."
names=("$@")
((${#names[@]})) || names=(monitor metrics darshan transfer bridge indexer e2e query query-pegasus
                           explorer explorer-pegasus store)
settle_max=${PANO_BENCH_SETTLE:-120}
tmp=$(mktemp -d /tmp/pano-bench-run.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

load1() { cut -d' ' -f1 /proc/loadavg; }
settle() {
    local waited=0
    while ((waited < settle_max)) && awk -v l="$(load1)" -v n="$(nproc)" 'BEGIN { exit !(l >= n / 2) }'; do
        sleep 5
        waited=$((waited + 5))
    done
    echo "(waited ${waited} s for the machine to settle: load $(load1))" >&2
}

results=()
run() { # NAME [VAR=VALUE...]
    local name=$1
    shift
    echo "==== bench/$name.sh $*" >&2
    env "$@" bash "bench/$name.sh" 2>&1 | tee "$tmp/$name.log" >&2
    out=$(grep '^RESULT ' "$tmp/$name.log" | tail -n 1)
    results+=("${out:-RESULT $name failed $*}")
}
for i in "${!names[@]}"; do
    name=${names[$i]}
    ((i == 0)) || settle
    case $name in
        e2e)
            run e2e BENCH_RATE=2000 BENCH_DURATION=60
            settle
            run e2e BENCH_RATE=10000 BENCH_DURATION=30
            ;;
        *-pegasus) run "${name%-pegasus}" BENCH_SHAPE=pegasus ;;
        *) run "$name" ;;
    esac
done
echo
printf '%s\n' "${results[@]}"
