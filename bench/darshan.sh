#!/usr/bin/env bash
# pano-darshan benchmark: time to convert each fixture log to a darshan.perf
# event against the time merely to inflate its compressed regions (the
# floor), measured in the same run. Target: ratio <= 2. The last line is
#   RESULT darshan ratio_to_inflate=<geometric mean over the logs>
#
#   bench/darshan.sh [BUILD_DIR]     (default: build, configured if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[[ -f $build/build.ninja ]] || meson setup "$build" >/dev/null
ninja -C "$build" bench/darshan_bench >/dev/null
fixtures=${PANO_FIXTURES:-tests/data}
export PANO_WF_UUID=${PANO_WF_UUID:-00000000-0000-4000-8000-000000000000}
exec "$build/bench/darshan_bench" "$fixtures"/darshan/*.darshan "$fixtures"/darshan-more/*.darshan
