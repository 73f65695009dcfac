#!/usr/bin/env bash
# The whole test suite: unit and integration tests, in a normal build and in
# a sanitizer build (ASan + UBSan), against the real local stack. The
# fault-injection integration tests (suite 'slow': SIGKILLs, broker and
# Elasticsearch restarts) and the browser over the embedded store run in
# the normal build only.
#
#   tests/run.sh            everything (installs what is missing, starts the stack)
#   tests/run.sh --unit     unit tests only (no services needed)
#
# Ends with one line "N passed, N failed[, N skipped]".
set -euo pipefail
cd "$(dirname "$0")/.."

suites=(unit integration)
[[ ${1:-} == --unit ]] && suites=(unit)

bash deploy/install-deps.sh
if [[ " ${suites[*]} " == *" integration "* ]]; then
    bash deploy/local/pano-stack up
    eval "$(bash deploy/local/pano-stack env)"
fi

configure() { # DIR [meson options...]
    local dir=$1
    shift
    if [[ -f $dir/build.ninja ]]; then
        meson configure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@" >/dev/null
    fi
    ninja -C "$dir"
}

configure build
configure build-asan -Db_sanitize=address,undefined -Db_lundef=false

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
# a failed integration test's files, whole (tests/README.md)
export PANO_TEST_KEEP_LOGS=${PANO_TEST_KEEP_LOGS:-$PWD/build/failed-tests}

status=0
for dir in build build-asan; do
    for suite in "${suites[@]}"; do
        echo "==== $dir: $suite tests"
        skip=()
        # The fault-injection runs take minutes each; their code paths are the
        # same in both builds, so the sanitizer build skips them.
        [[ $dir == build-asan ]] && skip=(--no-suite slow)
        meson test -C "$dir" --suite "$suite" "${skip[@]}" --print-errorlogs --num-processes 2 || status=1
        cp "$dir/meson-logs/testlog.json" "$dir/meson-logs/testlog-$suite.json"
    done
done

# One closing line over every test run above.
jq -rs '
  [.[] | .result] as $r
  | ($r | map(select(. == "OK" or . == "EXPECTEDFAIL")) | length) as $ok
  | ($r | map(select(. == "SKIP")) | length) as $skip
  | (($r | length) - $ok - $skip) as $bad
  | "\($ok) passed, \($bad) failed" + (if $skip > 0 then ", \($skip) skipped" else "" end)
' build/meson-logs/testlog-*.json build-asan/meson-logs/testlog-*.json
exit $status
