#!/usr/bin/env bash
# pano-transfer against cp and curl doing the same work in the same run.
#
#   bench/transfer.sh [BUILD_DIR]      (default: build)
#
#   big:   one 1 GiB local file, pano-transfer copy vs cp
#   small: 10,000 files of 1-8 KiB, pano-transfer copy --list vs cp -r
#   http:  the 1 GiB file from a local HTTP server (transfer_httpd),
#          pano-transfer copy vs curl -o
#
# Each case runs ROUNDS times (default 5), alternating which tool goes
# first, with caches warm and dirty pages synced before each timed run;
# the median wall time counts. The small files each run copied are moved
# aside, not deleted, until the end: on ext4 without a journal, creating a
# file after many deletions costs a scan past every inode deleted in the
# last minute (longer while that is not written back; recently_deleted() in
# the inode allocator), whichever tool creates it, and that cost, which
# grows from round to round and depends on which run deleted last, would be
# measured instead of the tools. A ratio
# is the baseline's time divided by pano-transfer's (its throughput
# relative to the baseline's: >= 1 means pano-transfer is at least as
# fast). The last line is
#   RESULT transfer big_ratio=... small_ratio=...
# Needs about 3.5 GiB in BENCH_DIR (default /tmp); everything is removed at
# the end.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
PT=$BUILD/publishers/transfer/pano-transfer
HTTPD=$BUILD/tests/integration/transfer_httpd
ROUNDS=${ROUNDS:-5}
SMALL_FILES=${SMALL_FILES:-10000}
[[ -x $PT && -x $HTTPD ]] || { echo "build first: ninja -C $BUILD" >&2; exit 2; }

W=$(mktemp -d "${BENCH_DIR:-/tmp}/pano-bench.XXXXXX")
httpd_pid=
cleanup() {
    [[ -n $httpd_pid ]] && kill "$httpd_pid" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
export PANO_WF_UUID=bench PANO_AMQP_URL= PEGASUS_AMQP_URL=
unset PEGASUS_TRANSFER_PUBLISH

# timed CMD...: "WALL CPU" seconds (CPU = user + system), after syncing
# what earlier runs wrote.
timed() {
    sync
    local TIMEFORMAT='%3R %3U %3S' t
    t=$({ time "$@" >/dev/null 2>&1; } 2>&1)
    awk '{ printf "%s %.3f\n", $1, $2 + $3 }' <<<"$t"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a / b }'; }

echo "preparing $W: 1 GiB file and $SMALL_FILES small files" >&2
head -c $((1024 * 1024 * 1024)) /dev/urandom >"$W/big"
mkdir -p "$W/small" "$W/kept"
# 1-8 KiB files, written in one go
awk -v n="$SMALL_FILES" -v dir="$W/small" 'BEGIN { srand(42); pad = "x"; while (length(pad) < 8192) pad = pad pad;
    for (i = 1; i <= n; i++) { f = dir "/f" i; printf "%s", substr(pad, 1, 1024 + int(rand() * 7168)) > f; close(f) } }'
for i in $(seq 1 "$SMALL_FILES"); do echo "$W/small/f$i $W/small-pt/f$i"; done >"$W/small.list"
bytes_in() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }'; }
small_bytes=$(bytes_in "$W/small")
cat "$W/big" >/dev/null # warm

"$HTTPD" "$W" >"$W/httpd.port" 2>/dev/null &
httpd_pid=$!
for _ in $(seq 50); do grep -q PORT "$W/httpd.port" && break; sleep 0.1; done
port=$(awk '{print $2}' "$W/httpd.port")

declare -a cp_big pt_big cp_small pt_small curl_http pt_http
declare -A cpu_times
# one_run ARRAY OUTPUT CMD...: time CMD, check, remove OUTPUT (a directory
# of small files is moved aside instead).
one_run() {
    local -n times=$1
    local name=$1 out=$2
    shift 2
    local t
    t=$(timed "$@")
    times+=("${t% *}")
    cpu_times[$name]+=" ${t#* }"
    if [[ -d $out ]]; then
        [[ $(bytes_in "$out") == "$small_bytes" ]] || { echo "$* copied the wrong bytes" >&2; exit 1; }
        mv "$out" "$W/kept/$name.${#times[@]}"
    else
        [[ $(stat -c %s "$out") == $((1024 * 1024 * 1024)) ]] || { echo "$* copied the wrong bytes" >&2; exit 1; }
        rm -f "$out"
    fi
}
for r in $(seq 1 "$ROUNDS"); do
    big_cp() { one_run cp_big "$W/big.cp" cp "$W/big" "$W/big.cp"; }
    big_pt() { one_run pt_big "$W/big.pt" "$PT" copy -o /dev/null "$W/big" "$W/big.pt"; }
    small_cp() { one_run cp_small "$W/small-cp" cp -r "$W/small" "$W/small-cp"; }
    small_pt() { one_run pt_small "$W/small-pt" "$PT" copy -o /dev/null --list "$W/small.list"; }
    http_curl() { one_run curl_http "$W/big.curl" curl -fsS -o "$W/big.curl" "http://127.0.0.1:$port/files/big"; }
    http_pt() { one_run pt_http "$W/big.http" "$PT" copy -o /dev/null "http://127.0.0.1:$port/files/big" "$W/big.http"; }
    if ((r % 2)); then
        big_cp; big_pt; small_cp; small_pt; http_curl; http_pt
    else
        big_pt; big_cp; small_pt; small_cp; http_pt; http_curl
    fi
    echo "round $r: big cp ${cp_big[-1]} pt ${pt_big[-1]} | small cp ${cp_small[-1]} pt ${pt_small[-1]} | http curl ${curl_http[-1]} pt ${pt_http[-1]}" >&2
done

mb() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", a / b / 1048576 }'; }
cpb=$(median "${cp_big[@]}") ptb=$(median "${pt_big[@]}")
cps=$(median "${cp_small[@]}") pts=$(median "${pt_small[@]}")
cuh=$(median "${curl_http[@]}") pth=$(median "${pt_http[@]}")
gib=$((1024 * 1024 * 1024))
printf 'big   (1 GiB local):    cp %6.3f s (%s MiB/s)   pano-transfer %6.3f s (%s MiB/s)\n' "$cpb" "$(mb $gib "$cpb")" "$ptb" "$(mb $gib "$ptb")"
printf 'small (%d files):    cp %6.3f s (%s files/s)   pano-transfer %6.3f s (%s files/s)\n' "$SMALL_FILES" "$cps" "$(awk -v a="$SMALL_FILES" -v b="$cps" 'BEGIN { printf "%d", a / b }')" "$pts" "$(awk -v a="$SMALL_FILES" -v b="$pts" 'BEGIN { printf "%d", a / b }')"
printf 'http  (1 GiB local HTTP): curl %6.3f s (%s MiB/s)   pano-transfer %6.3f s (%s MiB/s)\n' "$cuh" "$(mb $gib "$cuh")" "$pth" "$(mb $gib "$pth")"
echo "http_ratio=$(ratio "$cuh" "$pth")"
# CPU seconds (median): less sensitive to a busy disk or CPU than wall time.
for k in cp_big pt_big cp_small pt_small curl_http pt_http; do
    # shellcheck disable=SC2086
    printf 'cpu %-10s %s s\n' "$k" "$(median ${cpu_times[$k]})"
done
echo "cpu_ratios big=$(ratio "$(median ${cpu_times[cp_big]})" "$(median ${cpu_times[pt_big]})") small=$(ratio "$(median ${cpu_times[cp_small]})" "$(median ${cpu_times[pt_small]})") http=$(ratio "$(median ${cpu_times[curl_http]})" "$(median ${cpu_times[pt_http]})")"
echo "RESULT transfer big_ratio=$(ratio "$cpb" "$ptb") small_ratio=$(ratio "$cps" "$pts")"
