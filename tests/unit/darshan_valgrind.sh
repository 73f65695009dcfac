#!/usr/bin/env bash
# pano-darshan under valgrind over every fixture log (and the reference
# text through --text), and as a --watch daemon: no invalid access, no leak.
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
# --watch runs for as long as the jobs do: a watcher under valgrind started
# on a folder with a log in it (recorded, not published: a first start),
# then a new folder and logs arriving while it runs (one written as
# darshan-runtime does, .darshan_partial then renamed), then SIGTERM.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/logs"
logs=("$fixtures"/darshan/*.darshan)
cp "${logs[0]}" "$work/logs/old.darshan"
valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=9 \
    "$program" --watch "$work/logs" --json --state "$work/state" \
    --set pano.darshan.rescan_interval=0.5 >"$work/events" 2>"$work/stderr" &
watcher=$!
published() { grep -c '"darshan.perf"' "$work/events" 2>/dev/null || true; }
wait_for() { # WHAT COMMAND...: until COMMAND succeeds (60 s at most)
    local what=$1
    shift
    for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
    echo "valgrind: --watch: $what did not happen: $(tail -5 "$work/stderr")" >&2
    status=1
}
wait_for "the first scan" grep -q "logs handled so far" "$work/stderr"
mkdir "$work/logs/new"
cp "${logs[1]}" "$work/logs/new/b.darshan"
cp "${logs[2]}" "$work/logs/c.darshan_partial"
mv "$work/logs/c.darshan_partial" "$work/logs/c.darshan"
cp "${logs[3]}" "$work/logs/d.darshan"
three_published() { (($(published) >= 3)); }
wait_for "3 events" three_published
kill -TERM "$watcher"
rc=0
wait "$watcher" || rc=$?
if ((rc != 0)); then
    echo "valgrind: pano-darshan --watch exited $rc: $(tail -20 "$work/stderr")" >&2
    status=1
fi
(($(published) == 3)) || { echo "valgrind: --watch published $(published) events, not 3" >&2; status=1; }
n=$((n + 1))
echo "valgrind: $n runs of pano-darshan, status $status"
exit $status
