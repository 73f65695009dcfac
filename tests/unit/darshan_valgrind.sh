#!/usr/bin/env bash
# pano-darshan under valgrind over every fixture log (and the reference
# text through --text): no invalid access, no leak.
set -euo pipefail
program=$1
fixtures=$2
status=0
run() {
    if ! valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
            --error-exitcode=9 "$program" --log-level error "$@" >/dev/null; then
        echo "valgrind: pano-darshan $* failed" >&2
        status=1
    fi
}
n=0
for log in "$fixtures"/darshan/*.darshan "$fixtures"/darshan-more/*.darshan; do
    run --json "$log"
    n=$((n + 1))
done
run --payload "$fixtures"/darshan/*.darshan
for text in "$fixtures"/darshan/*.total-perf*.txt; do
    run --json --text "$text"
    n=$((n + 1))
done
echo "valgrind: $n runs of pano-darshan, status $status"
exit $status
