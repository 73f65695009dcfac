#!/usr/bin/env bash
# pano-transfer copy over HTTP, against a server this test starts on
# 127.0.0.1 (transfer_httpd): success, 404, connection refused, a stalled
# server, a server that drops the connection mid-body (resumed with a
# Range request, restarted when ranges are refused, or failing with the
# error text), uploads (PUT), parallel downloads and --continue.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/transfer_lib.sh"
no_broker

mkdir -p "$TEST_DIR/www" "$TEST_DIR/dl"
head -c $((3 * 1024 * 1024 + 17)) /dev/urandom >"$TEST_DIR/www/data.bin"
start_httpd "$TEST_DIR/www"
base="http://127.0.0.1:$HTTP_PORT"
fast=(--retry-delay 0.05 --connect-timeout 5)

# copy URL DST [options]: events in $TEST_DIR/last.jsonl, exit code in $rc
copy() {
    local url=$1 dst=$2
    shift 2
    rc=0
    "$PT" copy "${fast[@]}" "$@" "$url" "$dst" >"$TEST_DIR/last.jsonl" 2>"$TEST_DIR/last.err" || rc=$?
    ev=$(event_of "$TEST_DIR/last.jsonl" transfer.inv.local.single)
}

# ---- success ------------------------------------------------------------------
copy "$base/files/data.bin" "$TEST_DIR/dl/data.bin" --checksum sha256 --src-site web --dst-site local
[[ $rc == 0 ]] || fail "download exited $rc: $(cat "$TEST_DIR/last.err")"
cmp "$TEST_DIR/www/data.bin" "$TEST_DIR/dl/data.bin" || fail "downloaded bytes differ"
size=$(stat -c %s "$TEST_DIR/www/data.bin")
sha=$(sha256sum "$TEST_DIR/www/data.bin" | cut -d' ' -f1)
check "$ev" ".status == 0 and .bytes_transferred == $size and .sha256 == \"$sha\" and .retries == 0" "download event"
check "$ev" ".source_url == \"$base/files/data.bin\" and .filename == \"$TEST_DIR/dl/data.bin\" and .source_site_name == \"web\"" "download urls"
check "$ev" '.effective_bytes_per_second > 0 and .transfer_duration > 0' "download rate"
log "success: $size bytes, checksum matches"

# ---- 404: not retried, no file --------------------------------------------------
copy "$base/files/nothing" "$TEST_DIR/dl/nothing" --retries 3
[[ $rc == 1 ]] || fail "404 must exit 1, got $rc"
check "$ev" '.status == 1 and .retries == 0 and .bytes_transferred == 0 and (.error | test("404"))' "404 event"
[[ ! -e $TEST_DIR/dl/nothing ]] || fail "404 left a file"
[[ $(grep -c "GET /files/nothing" "$HTTP_LOG") == 1 ]] || fail "404 was retried"
log "404: one request, failure event, no file"

# ---- connection refused: retried, then a failure event ----------------------------
# a port that was free a moment ago
refused=$(free_ports 1)
copy "http://127.0.0.1:$refused/x" "$TEST_DIR/dl/refused" --retries 2
[[ $rc == 1 ]] || fail "refused must exit 1, got $rc"
check "$ev" '.status == 1 and .retries == 2 and (.error | test("onnect"))' "refused event"
grep -q "retry 2 of 2" "$TEST_DIR/last.err" || fail "refused: retries not logged"
log "connection refused: 2 retries, failure event"

# ---- a server that stalls: aborted after --stall-timeout, retried --------------------
copy "$base/stall/200000" "$TEST_DIR/dl/stall" --stall-timeout 1 --retries 1
[[ $rc == 1 ]] || fail "stall must exit 1, got $rc"
check "$ev" '.status == 1 and .retries == 1 and (.error | test("stalled: no data for 1 s")) and .transfer_duration >= 2 and .transfer_duration < 20' "stall event"
check "$ev" '.bytes_transferred == 150000' "stall: bytes moved (100000, then half the rest)"
[[ ! -e $TEST_DIR/dl/stall ]] || fail "stall left a file"
log "stall: aborted after 1 s twice, bytes moved counted"

# ---- dropped mid-body once: resumed with a Range request -------------------------------
copy "$base/drop/1000000" "$TEST_DIR/dl/drop" --retries 2 --checksum sha256
[[ $rc == 0 ]] || fail "drop once must succeed after a retry: $(cat "$TEST_DIR/last.err")"
check "$ev" ".status == 0 and .retries == 1 and .bytes_transferred == 1000000 and .file_size == 1000000 and .sha256 == \"$(gen_sha256 1000000)\"" "resumed event"
grep -q "GET /drop/1000000 range=bytes=500000-" "$HTTP_LOG" || fail "no Range request after the drop"
log "drop once: resumed from byte 500000, bytes exact"

# ---- dropped mid-body, ranges refused: started over ------------------------------------
copy "$base/norange-drop/1000000" "$TEST_DIR/dl/norange" --retries 3
[[ $rc == 0 ]] || fail "norange-drop must succeed: $(cat "$TEST_DIR/last.err")"
check "$ev" '.status == 0 and .retries == 2 and .bytes_transferred == 1500000 and .file_size == 1000000' "restart event (500000 lost, 1000000 again)"
[[ $(sha256sum <"$TEST_DIR/dl/norange" | cut -d' ' -f1) == $(gen_sha256 1000000) ]] || fail "restarted download differs"
log "drop without ranges: started over, every byte moved counted"

# ---- dropped every time: failure event with the error text ---------------------------
copy "$base/drop/1000000?n=always" "$TEST_DIR/dl/always" --retries 2
[[ $rc == 1 ]] || fail "drop always must exit 1"
check "$ev" '.status == 1 and .retries == 2 and (.error | test("transfer closed with [0-9]+ bytes remaining")) and .bytes_transferred == 875000' "drop always event"
[[ ! -e $TEST_DIR/dl/always && -z $(ls -A "$TEST_DIR/dl" | grep pano-) ]] || fail "drop always left files"
log "drop always: failure event with libcurl's error text, no half file"

# ---- upload (PUT) --------------------------------------------------------------------
copy "$TEST_DIR/www/data.bin" "$base/upload/up.bin" --dst-site web
[[ $rc == 0 ]] || fail "upload exited $rc: $(cat "$TEST_DIR/last.err")"
cmp "$TEST_DIR/www/data.bin" "$TEST_DIR/www/up.bin" || fail "uploaded bytes differ"
check "$ev" ".status == 0 and .bytes_transferred == $size and .filename == \"$TEST_DIR/www/data.bin\" and .destination_site_name == \"web\"" "upload event"
log "upload: $size bytes"
# HTTP has no partial uploads: a PUT cut mid-body is sent again whole,
# even with --continue, and both attempts count
copy "$TEST_DIR/www/data.bin" "$base/upload-drop/again.bin" --retries 2 --continue
[[ $rc == 0 ]] || fail "cut upload exited $rc: $(cat "$TEST_DIR/last.err")"
cmp "$TEST_DIR/www/data.bin" "$TEST_DIR/www/again.bin" || fail "cut upload: bytes differ"
sent1=$(sed -n 's/.* \([0-9]*\) bytes moved in this attempt; retry 1 .*/\1/p' "$TEST_DIR/last.err")
[[ -n $sent1 ]] && ((sent1 >= size / 2)) || fail "cut upload was not retried: $(cat "$TEST_DIR/last.err")"
check "$ev" ".status == 0 and .retries == 1 and .bytes_transferred == $((sent1 + size))" "cut upload: sent again whole"
log "upload cut mid-body: sent again whole ($sent1 + $size bytes counted)"

# ---- third party (remote to remote): relayed through a local file ---------------------------
copy "$base/drop/600000" "$base/upload/relayed.bin" --retries 2 --checksum sha256
[[ $rc == 0 ]] || fail "relay exited $rc: $(cat "$TEST_DIR/last.err")"
[[ $(sha256sum <"$TEST_DIR/www/relayed.bin" | cut -d' ' -f1) == $(gen_sha256 600000) ]] || fail "relayed bytes differ"
check "$ev" ".status == 0 and .retries == 1 and .bytes_received == 600000 and .bytes_transferred == 600000 and .sha256 == \"$(gen_sha256 600000)\" and (.filename == null)" "relay event"
copy "$base/files/nothing" "$base/upload/never.bin"
[[ $rc == 1 && ! -e $TEST_DIR/www/never.bin ]] || fail "relay of a 404 must fail"
check "$ev" '.status == 1 and .bytes_transferred == 0 and (.error | test("404"))' "relay 404 event"
log "third party: received (resumed after a drop), then sent; 404 reported"

# ---- parallel downloads ------------------------------------------------------------------
for i in $(seq 1 40); do echo "$base/gen/$((i * 10007)) $TEST_DIR/par/g$i"; done >"$TEST_DIR/par.list"
echo "$base/drop/300000?n=2 $TEST_DIR/par/dropper" >>"$TEST_DIR/par.list"
"$PT" copy "${fast[@]}" -j 8 --list "$TEST_DIR/par.list" >"$TEST_DIR/par.jsonl" || fail "parallel exited $?"
for i in 1 17 40; do
    [[ $(stat -c %s "$TEST_DIR/par/g$i") == $((i * 10007)) ]] || fail "parallel: g$i has the wrong size"
    [[ $(sha256sum <"$TEST_DIR/par/g$i" | cut -d' ' -f1) == $(gen_sha256 $((i * 10007))) ]] || fail "parallel: g$i differs"
done
check "$(event_of "$TEST_DIR/par.jsonl" transfer.inv.local)" ".total_files == 41 and .failed_files == 0 and .total_retries == 2" "parallel summary"
log "parallel: 41 downloads with -j 8, one retried twice"

# ---- --continue: a partial DST from an earlier run is resumed -------------------------------
curl -fsS -r 0-299999 "$base/gen/800000" >"$TEST_DIR/dl/cont"
copy "$base/gen/800000" "$TEST_DIR/dl/cont" --continue
[[ $rc == 0 ]] || fail "--continue exited $rc"
check "$ev" '.status == 0 and .bytes_transferred == 500000 and .file_size == 800000' "--continue moved only the rest"
[[ $(sha256sum <"$TEST_DIR/dl/cont" | cut -d' ' -f1) == $(gen_sha256 800000) ]] || fail "--continue: file differs"
log "--continue: 500000 of 800000 bytes moved"

# ---- an expected sha256 in the list is checked ------------------------------------------------
good=$(gen_sha256 70000)
{
    jq -cn --arg s "$base/gen/70000" --arg d "$TEST_DIR/sha/good" --arg h "$good" '{src: $s, dst: $d, sha256: $h}'
    jq -cn --arg s "$base/gen/70000" --arg d "$TEST_DIR/sha/bad" --arg h "$(printf '%064d' 0)" '{src: $s, dst: $d, sha256: $h}'
} >"$TEST_DIR/sha.list"
rc=0
"$PT" copy "${fast[@]}" --retries 1 --list "$TEST_DIR/sha.list" >"$TEST_DIR/sha.jsonl" 2>/dev/null || rc=$?
[[ $rc == 1 && -f $TEST_DIR/sha/good && ! -e $TEST_DIR/sha/bad ]] || fail "expected sha256: rc $rc, $(ls "$TEST_DIR/sha")"
check "$(jq -c --arg f "$TEST_DIR/sha/bad" 'select(.filename == $f)' "$TEST_DIR/sha.jsonl")" '.status == 1 and .retries == 1 and (.error | test("checksum mismatch: expected sha256 0+"))' "sha256 mismatch event"
log "expected sha256: verified, a mismatch fails without a file"

# ---- SIGINT: transfers in flight and not started are reported, nothing is left -------------------
for i in 1 2 3 4; do echo "$base/stall/100000 $TEST_DIR/int/d$i"; done >"$TEST_DIR/int.list"
"$PT" copy -j 2 --list "$TEST_DIR/int.list" >"$TEST_DIR/int.jsonl" 2>/dev/null &
pt_pid=$!
wait_until 10 grep -q "GET /stall/100000" "$HTTP_LOG"
sleep 0.5
kill -INT "$pt_pid"
rc=0
wait "$pt_pid" || rc=$?
[[ $rc == 130 ]] || fail "SIGINT: exit $rc, expected 130"
[[ $(jq -c 'select(.event == "transfer.inv.local.single" and .status == 1)' "$TEST_DIR/int.jsonl" | wc -l) == 4 ]] || fail "SIGINT: 4 failure events expected"
[[ $(jq -c 'select(.error == "interrupted before it started")' "$TEST_DIR/int.jsonl" | wc -l) == 2 ]] || fail "SIGINT: 2 not-started transfers expected"
check "$(event_of "$TEST_DIR/int.jsonl" transfer.inv.local)" '.total_files == 4 and .failed_files == 4' "SIGINT summary"
[[ ! -d $TEST_DIR/int || -z $(ls -A "$TEST_DIR/int") ]] || fail "SIGINT left files: $(ls -A "$TEST_DIR/int")"
log "SIGINT: every transfer reported, exit 130, nothing left behind"
log "PASS"
