#!/usr/bin/env bash
# deploy/demo.sh as a newcomer runs it first (a clean environment, a home of
# its own): the workflow goes into the embedded store, with no service
# started; it exits 0, every event it sent is in the store exactly once, for
# every job and publisher, pano-query reads the workflow back, and the
# pano-explorer it leaves running serves the workflow's page.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/demo_lib.sh"
: "${PANO_SOURCE:?}"
home=$TEST_DIR/home
mkdir -p "$home"
demo_env=(env -i "PATH=$PATH" "HOME=$home" "LANG=C.UTF-8" "TERM=dumb" "PANO_EXPLORER_PORT=0")
explorer_pid=$PANO_BUILD/demo/pano-explorer.pid
trap 'rc=$?; [[ -f $explorer_pid ]] && kill -TERM "$(cat "$explorer_pid")" 2>/dev/null
      set +e; (exit $rc); cleanup' EXIT

"${demo_env[@]}" bash "$PANO_SOURCE/deploy/demo.sh" --build-dir "$PANO_BUILD" >"$TEST_DIR/demo.log" 2>&1 ||
    { tail -40 "$TEST_DIR/demo.log" >&2; fail "deploy/demo.sh failed"; }
store=$home/.local/share/pano/store
grep -q "Every event of the workflow is in the embedded store $store" "$TEST_DIR/demo.log" ||
    fail "the demo did not say its events are in the default store: $(tail -20 "$TEST_DIR/demo.log")"
grep -q "4 job(s): 0 running, 3 succeeded, 1 failed" "$TEST_DIR/demo.log" ||
    fail "the demo's pano-query status: $(grep -A3 'pano-query status' "$TEST_DIR/demo.log")"
grep -qE "pano-bridge|pano-indexer|pano-stack" "$TEST_DIR/demo.log" &&
    fail "the embedded demo started a service: $(grep -E 'pano-bridge|pano-indexer|pano-stack' "$TEST_DIR/demo.log" | head -3)"

# What the demo sent, event by event, is in the store exactly once.
sent=$PANO_BUILD/demo/sent.jsonl
wf=$(jq -r .wf_uuid "$sent" | sort -u)
[[ $(wc -l <<<"$wf") == 1 ]] || fail "the demo's events carry several workflow UUIDs: $wf"
files=("$store"/*.pano.sqlite)
[[ ${#files[@]} == 1 && -f ${files[0]} ]] || fail "the store holds ${#files[@]} files: ${files[*]}"
sqlite3 "file:${files[0]}?mode=ro" "SELECT doc FROM events WHERE wf_uuid = '$wf'" >"$TEST_DIR/stored.jsonl"
check_demo_events "$sent" "$TEST_DIR/stored.jsonl"

# A user's next commands find the default store with no option.
"${demo_env[@]}" "$PANO_BUILD/query/pano-query" stats "$wf" --json >"$TEST_DIR/stats.json" ||
    fail "pano-query stats without --store"
jq -e '.transformations | length >= 1' "$TEST_DIR/stats.json" >/dev/null || fail "stats: $(cat "$TEST_DIR/stats.json")"

# It ends with the workflow's page in pano-explorer, left running.
url=$(tail -n 1 "$TEST_DIR/demo.log" | tr -d ' ')
[[ $url =~ ^http://127\.0\.0\.1:[0-9]+/#/wf/[0-9a-f-]{36}$ ]] || fail "the demo's last line is not the workflow's page: $url"
curl -fsS "${url%%#*}" | grep -q "<title>" || fail "no page at ${url%%#*}"
curl -fsS "${url%%#*}api/workflows/${url##*/}" | jq -e '.jobs | length == 4' >/dev/null ||
    fail "pano-explorer does not show the demo workflow's 4 monitored jobs"
log "PASS: $(wc -l <"$sent") demo events in the embedded store, read back"
