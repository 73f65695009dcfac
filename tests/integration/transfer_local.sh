#!/usr/bin/env bash
# pano-transfer copy, local to local: known sizes (0 B, 1 B, 10 MB, many
# small files), exact bytes and checksums, both engines, failures, output
# modes, the progress display, and the PEGASUS_TRANSFER_PUBLISH toggle.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/transfer_lib.sh"
no_broker

src=$TEST_DIR/src
mkdir -p "$src/many"
: >"$src/zero"
printf x >"$src/one"
head -c $((10 * 1024 * 1024)) /dev/urandom >"$src/ten"
for i in $(seq 1 1000); do head -c $((i * 13 % 5000)) /dev/urandom >"$src/many/f$i"; done

# ---- single files: exact bytes, sha256, events --------------------------
for f in zero one ten; do
    out=$TEST_DIR/single-$f.jsonl
    "$PT" copy --checksum sha256 --src-site local --dst-site scratch "$src/$f" "$TEST_DIR/dst/$f" \
        >"$out" 2>"$TEST_DIR/single-$f.err" || fail "copy $f exited $?"
    [[ ! -s $TEST_DIR/single-$f.err ]] || fail "copy $f was not quiet: $(cat "$TEST_DIR/single-$f.err")"
    cmp "$src/$f" "$TEST_DIR/dst/$f" || fail "$f differs after the copy"
    size=$(stat -c %s "$src/$f")
    sha=$(sha256sum "$src/$f" | cut -d' ' -f1)
    ev=$(event_of "$out" transfer.inv.local.single)
    check "$ev" ".status == 0 and .bytes_transferred == $size and .file_size == $size and .sha256 == \"$sha\"" "$f: event bytes/checksum"
    check "$ev" ".source_url == \"file://$src/$f\" and .destination_url == \"file://$TEST_DIR/dst/$f\" and .filename == \"$src/$f\"" "$f: urls"
    check "$ev" '.source_site_name == "local" and .destination_site_name == "scratch" and .retries == 0 and (.error == null)' "$f: sites"
    check "$ev" '(.transfer_start_time|type) == "number" and .transfer_completion_time >= .transfer_start_time and (.transfer_duration - (.transfer_completion_time - .transfer_start_time) | fabs) < 0.001' "$f: times"
    # sub-second precision, not whole seconds
    check "$ev" '(.transfer_start_time | . != floor) and .transfer_duration < 5' "$f: sub-second times"
    check "$ev" ".wf_uuid == \"$PANO_WF_UUID\" and (.event_id|length) > 0 and .level == \"INFO\"" "$f: envelope"
    sum=$(event_of "$out" transfer.inv.local)
    check "$sum" ".total_files == 1 and .failed_files == 0 and .bytes_transferred == $size and .status == 0" "$f: summary"
done
log "single files: bytes exact, checksums match"

# ---- many small files through a list, both engines --------------------------
list=$TEST_DIR/list
{
    for i in $(seq 1 500); do printf '%s %s\n' "$src/many/f$i" "$TEST_DIR/many-%E/f$i"; done
    for i in $(seq 501 1000); do
        jq -cn --arg s "$src/many/f$i" --arg d "$TEST_DIR/many-%E/f$i" '{src: $s, dst: $d, dst_site: "scratch"}'
    done
} >"$list.tmpl"
total=$(cat "$src"/many/* | wc -c)
for engine in native curl; do
    sed "s/%E/$engine/" "$list.tmpl" >"$list.$engine"
    out=$TEST_DIR/many-$engine.jsonl
    "$PT" copy -j 4 --checksum sha256 --local-engine "$engine" --list "$list.$engine" >"$out" ||
        fail "many files ($engine) exited $?"
    diff -r "$src/many" "$TEST_DIR/many-$engine" || fail "many files ($engine) differ"
    [[ $(jq -c 'select(.event == "transfer.inv.local.single" and .status == 0)' "$out" | wc -l) == 1000 ]] ||
        fail "expected 1000 ok events ($engine)"
    sum=$(event_of "$out" transfer.inv.local)
    check "$sum" ".total_files == 1000 and .failed_files == 0 and .bytes_transferred == $total" "many ($engine): summary"
    # every digest matches the file's own
    jq -r 'select(.event == "transfer.inv.local.single") | "\(.sha256)  \(.filename)"' "$out" | sha256sum -c --quiet ||
        fail "many ($engine): a digest does not match"
done
# Both engines report the same thing.
proj='select(.event == "transfer.inv.local.single") | [.filename, .status, .bytes_transferred, .file_size, .sha256, .retries, .source_site_name, .destination_site_name] | @tsv'
diff <(jq -r "$proj" "$TEST_DIR/many-native.jsonl" | sort) <(jq -r "$proj" "$TEST_DIR/many-curl.jsonl" | sort) ||
    fail "native and curl engines report differently"
log "1000 small files: identical copies and events with both engines"

# ---- failures ------------------------------------------------------------------
rc=0
"$PT" copy --list <(printf '%s %s\n' "$src/missing" "$TEST_DIR/fail/a" "$src/one" "$TEST_DIR/fail/b") \
    >"$TEST_DIR/fail.jsonl" 2>"$TEST_DIR/fail.err" || rc=$?
[[ $rc == 1 ]] || fail "a failed transfer must exit 1, got $rc"
ev=$(jq -c --arg f "$src/missing" 'select(.filename == $f)' "$TEST_DIR/fail.jsonl")
check "$ev" '.status == 1 and .bytes_transferred == 0 and (.error | test("No such file"))' "missing source event"
check "$(jq -c --arg f "$src/one" 'select(.filename == $f)' "$TEST_DIR/fail.jsonl")" '.status == 0' "the other transfer still runs"
check "$(event_of "$TEST_DIR/fail.jsonl" transfer.inv.local)" '.total_files == 2 and .failed_files == 1 and .status == 1' "summary with a failure"
[[ ! -e $TEST_DIR/fail/a ]] || fail "a failed copy left a file"
[[ -z $(ls -A "$TEST_DIR/fail" | grep pano-) ]] || fail "temporary files left behind"
grep -q "1 of 2 transfers failed" "$TEST_DIR/fail.err" || fail "no failure message on stderr"
# A bad list is a usage error.
rc=0
"$PT" copy --list <(echo "only-one-word") >/dev/null 2>"$TEST_DIR/badlist.err" || rc=$?
[[ $rc == 2 ]] && grep -q "line 1" "$TEST_DIR/badlist.err" || fail "bad list: rc $rc, $(cat "$TEST_DIR/badlist.err")"
log "failures: exit 1, error text, no half files"
schema_check "$TEST_DIR"/single-*.jsonl "$TEST_DIR/fail.jsonl" "$TEST_DIR/many-native.jsonl"

# ---- output modes ------------------------------------------------------------
"$PT" copy -o "$TEST_DIR/o.jsonl" "$src/one" "$TEST_DIR/o1" >"$TEST_DIR/o.stdout"
"$PT" copy -o "$TEST_DIR/o.jsonl" "$src/one" "$TEST_DIR/o2" >>"$TEST_DIR/o.stdout"
[[ ! -s $TEST_DIR/o.stdout && $(wc -l <"$TEST_DIR/o.jsonl") == 4 ]] || fail "-o FILE must append, stdout stays empty"
"$PT" copy --payload "$src/one" "$TEST_DIR/p1" >"$TEST_DIR/payload.out"
[[ $(wc -l <"$TEST_DIR/payload.out") == 2 ]] || fail "payload: expected 2 blocks"
while IFS= read -r line; do
    [[ $line == '@@@MONITORING_PAYLOAD - START@@@'*'@@@MONITORING_PAYLOAD - END@@@' ]] || fail "payload markers: $line"
    body=${line#@@@MONITORING_PAYLOAD - START@@@}
    body=${body%@@@MONITORING_PAYLOAD - END@@@}
    check "$body" '(.ts|type) == "number" and (.ts == (.ts|floor)) and (.payload|length) == 1 and (.monitoring_event | startswith("transfer.inv.local"))
        and (.payload[0] | has("bytes_transferred") or has("files"))
        and ([.payload[0] | has("event", "event_id", "seq", "wf_uuid")] | any | not)' "payload block (envelope left to the reader)"
done <"$TEST_DIR/payload.out"
grep -q '"monitoring_event":"transfer.inv.local"' "$TEST_DIR/payload.out" || fail "payload: no summary block"
log "output: -o appends, --payload blocks"

# ---- progress: quiet without a terminal, a line on one -------------------------
"$PT" copy -j 2 --list "$list.native" >/dev/null 2>"$TEST_DIR/quiet.err"
[[ ! -s $TEST_DIR/quiet.err ]] || fail "not a terminal: stderr must stay empty: $(head -c 300 "$TEST_DIR/quiet.err")"
if command -v script >/dev/null; then
    script -qec "$PT copy -j 2 --list $list.native -o /dev/null" /dev/null >"$TEST_DIR/tty.out" </dev/null
    grep -q "1000/1000 files" "$TEST_DIR/tty.out" || fail "terminal: no progress line: $(head -c 300 "$TEST_DIR/tty.out")"
    grep -q $'\r' "$TEST_DIR/tty.out" || fail "terminal: the line is not redrawn in place"
    log "progress: quiet without a terminal, drawn on one"
else
    log "script(1) missing: terminal progress not checked"
fi

# ---- PEGASUS_TRANSFER_PUBLISH -------------------------------------------------------
# A broker that refuses connections: publishing shows as events kept in the
# (test's own) spool for later, not publishing as JSON lines on stdout.
dead="amqp://guest:guest@127.0.0.1:1/%2F/nowhere"
publish_case() { # VALUE EXPECT(publish|stdout)
    local v=$1 expect=$2 out err
    out=$TEST_DIR/pub.out
    err=$TEST_DIR/pub.err
    if [[ $v == unset ]]; then
        env -u PEGASUS_TRANSFER_PUBLISH -u PANO_OUTPUT PEGASUS_AMQP_URL=$dead PANO_AMQP_TIMEOUT=2 "$PT" copy "$src/one" "$TEST_DIR/pub" >"$out" 2>"$err"
    else
        env -u PANO_OUTPUT PEGASUS_TRANSFER_PUBLISH=$v PEGASUS_AMQP_URL=$dead PANO_AMQP_TIMEOUT=2 "$PT" copy "$src/one" "$TEST_DIR/pub" >"$out" 2>"$err"
    fi
    if [[ $expect == publish ]]; then
        [[ ! -s $out ]] && { grep -q "not delivered" "$err" || [[ -n $(find "$PANO_SPOOL_DIR" -name '*.ev' 2>/dev/null) ]]; } ||
            fail "PEGASUS_TRANSFER_PUBLISH=$v should publish: $(cat "$err")"
        rm -rf "$PANO_SPOOL_DIR"
    else
        [[ $(wc -l <"$out") == 2 ]] || fail "PEGASUS_TRANSFER_PUBLISH=$v should write JSON lines: $(cat "$err")"
    fi
}
for v in 1 true TRUE yes Yes; do publish_case "$v" publish; done
for v in 0 false no ""; do publish_case "$v" stdout; done
publish_case maybe stdout
grep -q "not 1, true or yes" "$TEST_DIR/pub.err" || fail "an unknown value is warned about"
publish_case unset publish # a configured URL is used, as by every publisher
# --no-publish beats the URL; --publish without a URL warns and writes lines.
PEGASUS_AMQP_URL=$dead "$PT" copy --no-publish "$src/one" "$TEST_DIR/pub" >"$TEST_DIR/np.out"
[[ $(wc -l <"$TEST_DIR/np.out") == 2 ]] || fail "--no-publish must write JSON lines"
"$PT" copy --publish "$src/one" "$TEST_DIR/pub" >"$TEST_DIR/p.out" 2>"$TEST_DIR/p.err"
[[ $(wc -l <"$TEST_DIR/p.out") == 2 ]] && grep -q "no broker URL" "$TEST_DIR/p.err" || fail "--publish without a URL"
log "PEGASUS_TRANSFER_PUBLISH: on for 1/true/yes only"
log "PASS"
