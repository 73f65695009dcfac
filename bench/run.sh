#!/usr/bin/env bash
# Every benchmark, one after the other, against a baseline measured in the
# same run; each prints its own RESULT line, collected at the end.
#
#   bench/run.sh                 all of them
#   bench/run.sh monitor bridge  some of them (monitor darshan transfer bridge indexer e2e)
#
# Needs a build (meson setup build && ninja -C build) and, for bridge,
# indexer and e2e, the local stack (deploy/local/pano-stack up). Run it on a
# quiet machine: the ratios hold under load, absolute rates do not.
set -uo pipefail
cd "$(dirname "$0")/.."
names=("$@")
((${#names[@]})) || names=(monitor darshan transfer bridge indexer e2e)
results=()
for name in "${names[@]}"; do
    echo "==== bench/$name.sh"
    # -a: when stderr is a log file, tee would otherwise truncate it
    out=$(bash "bench/$name.sh" 2>&1 | tee -a /dev/stderr | grep '^RESULT ' | tail -n 1)
    results+=("${out:-RESULT $name failed}")
done
echo
printf '%s\n' "${results[@]}"
