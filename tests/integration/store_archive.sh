#!/usr/bin/env bash
# A workflow in one file (no services): pano-query export writes the
# workflows' events from an embedded store into one file; --store FILE
# reads it, read-only (from a read-only directory, as an unprivileged user,
# nothing written beside it, its bytes unchanged), with the same answers as
# the store it came from; pano-query import puts it into an empty store
# with the same answers again, each event once however often it is
# imported; a workflow still running, exported twice, brings the second
# export's new events on import; a file read together with another host's
# store is one workflow, each event once, and exports as one file; a
# redacted export holds none of the
# user's, hosts' and paths' names the runs carry, and pano-query stats of
# it gives every number the original does.
#
# Workflows: the five real Pegasus runs of tests/data/pegasus (a
# hierarchical one exported by its root: its sub-workflows come along) and
# a 200-job workflow in pano-monitor's shape (tests/tools/kafka_load
# --lines, nothing produced).
source "$(dirname "$0")/lib.sh"
: "${PANO_SOURCE:?}"
QUERY=$PANO_BUILD/query/pano-query
EMIT=$PANO_BUILD/publishers/emit/pano-emit
DATA=$PANO_SOURCE/tests/data/pegasus
source "$PANO_SOURCE/tests/tools/same_answers.sh"
unset PANO_AMQP_URL PANO_ES_URL
STORE=$TEST_DIR/store
# SQL over an exported file (zstd-compressed): its decompressed copy
in_file() { # FILE SQL
    zstd -q -dc "$1" >"$TEST_DIR/plain.sqlite" || fail "zstd -d $1"
    sqlite3 "$TEST_DIR/plain.sqlite" "$2"
}

into() { # STORE FILE: FILE's events into STORE
    "$EMIT" --set pano.store="$1" --events "$2" 2>>"$TEST_DIR/emit.log" ||
        fail "pano-emit --events $2: $(tail -3 "$TEST_DIR/emit.log")"
}
samples=(process_wf_success process_wf_failure sample_wf_held hierarchical_wf_success hierarchical_wf_failure)
workflows=()
for s in "${samples[@]}"; do
    into "$STORE" "$DATA/$s/events.jsonl"
    workflows+=("$(head -n 1 "$DATA/$s/events.jsonl" | jq -r .root_xwf_id)")
done
MWF=$(cat /proc/sys/kernel/random/uuid)
"$PANO_BUILD/tests/tools/kafka_load" --shape monitor --jobs 200 --wf "$MWF" --no-produce \
    --lines "$TEST_DIR/monitor.jsonl" >/dev/null || fail "kafka_load"
into "$STORE" "$TEST_DIR/monitor.jsonl"
workflows+=("$MWF")

# ---- lines pano-emit --events cannot send: each told with its line number,
# counted, the file's exit status 1; the valid lines stored, a refused one
# kept as a dead letter
BAD=$TEST_DIR/bad.jsonl
{
    printf '%s\n' 'this is not json' '["event","x"]'
    printf '{"event":"custom.bad","ts":%s,"event_id":"bad-%s","wf_uuid":"%s"}\n' "$(date +%s)" "$TEST_ID" "$MWF"
    printf '{"event":"custom.bad","ts":"soon","event_id":"bad2-%s","wf_uuid":"%s", oops\n' "$TEST_ID" "$MWF"
} >"$BAD"
BADSTORE=$TEST_DIR/badstore
"$EMIT" --set pano.store="$BADSTORE" --events "$BAD" 2>"$TEST_DIR/bad.log" && fail "pano-emit --events of bad lines succeeded"
for n in 1 2 4; do
    grep -q "bad.jsonl:$n: " "$TEST_DIR/bad.log" || fail "line $n not told: $(cat "$TEST_DIR/bad.log")"
done
grep -q "bad.jsonl:3: " "$TEST_DIR/bad.log" && fail "line 3 refused: $(cat "$TEST_DIR/bad.log")"
grep -q "1 event(s) of .* sent to .*, 3 not" "$TEST_DIR/bad.log" || fail "counts: $(cat "$TEST_DIR/bad.log")"
[[ $(sqlite3 "$BADSTORE"/*.pano.sqlite "SELECT count(*) FROM events WHERE event_id = 'bad-$TEST_ID'") == 1 ]] ||
    fail "the valid line is not stored"
[[ $(sqlite3 "$BADSTORE"/*.pano.sqlite "SELECT count(*) FROM dead_letters WHERE reason LIKE 'invalid JSON%'") == 1 ]] ||
    fail "the refused line is not a dead letter: $(sqlite3 "$BADSTORE"/*.pano.sqlite "SELECT reason FROM dead_letters")"

# ---- export: one file of all six, and one of the monitor's workflow alone
ARCHIVE=$TEST_DIR/ro/six.pano
mkdir -p "$TEST_DIR/ro"
"$QUERY" --store "$STORE" export "${workflows[@]}" -o "$ARCHIVE" 2>>"$TEST_DIR/query.log" ||
    fail "export: $(tail -3 "$TEST_DIR/query.log")"
"$QUERY" --store "$STORE" export "${workflows[@]}" -o "$ARCHIVE" 2>"$TEST_DIR/again.log" &&
    fail "export over an existing file succeeded"
grep -q "exists" "$TEST_DIR/again.log" || fail "export over a file: $(cat "$TEST_DIR/again.log")"
unknown=$(cat /proc/sys/kernel/random/uuid)
"$QUERY" --store "$STORE" export "$unknown" -o "$TEST_DIR/none.pano" 2>"$TEST_DIR/none.log" &&
    fail "export of a workflow the store does not hold succeeded"
grep -q "holds no event of $unknown" "$TEST_DIR/none.log" || fail "export of nothing: $(cat "$TEST_DIR/none.log")"
ls "$TEST_DIR"/none.pano* >/dev/null 2>&1 && fail "export of nothing left a file"
stored=$(sqlite3 "$STORE"/*.pano.sqlite "SELECT count(*) FROM events")
exported=$(in_file "$ARCHIVE" "SELECT count(*) FROM events")
[[ $stored == "$exported" ]] || fail "$exported of $stored events exported"
counts=$(in_file "$ARCHIVE" "SELECT value FROM meta WHERE key = 'counts'")
jq -e --argjson n "$stored" --arg m "$MWF" '.events == $n and (.workflows | length) >= 6
    and .workflows[$m].samples == 19000' <<<"$counts" >/dev/null || fail "meta counts: $counts"
[[ $(in_file "$ARCHIVE" "PRAGMA journal_mode") == delete ]] || fail "the file is not in rollback-journal mode"
bytes=$(stat -c %s "$ARCHIVE")
((bytes <= 100 * exported)) || fail "$bytes bytes for $exported events: more than 100 an event"
log "exported $exported events of ${#workflows[@]} workflows: $bytes bytes, $((bytes / exported)) an event"

# ---- open offline: read-only directory, an unprivileged reader, nothing changed
chmod 444 "$ARCHIVE"
chmod 555 "$TEST_DIR/ro"
sum=$(sha256sum <"$ARCHIVE")
as_reader=()
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
    chmod o+x "$TEST_DIR"
    as_reader=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi
differ=0 n=0
compare() { # NAME ARGS...: the store's answer and the file's
    local name=$1 why SAME_ASKED_FROM=$EPOCHREALTIME
    shift
    "$QUERY" --store "$STORE" "$@" --json >"$TEST_DIR/es-$name.raw" 2>>"$TEST_DIR/query.log" ||
        fail "$name from the store: $(tail -3 "$TEST_DIR/query.log")"
    "${as_reader[@]}" "$QUERY" --store "$ARCHIVE" "$@" --json >"$TEST_DIR/sqlite-$name.raw" 2>>"$TEST_DIR/query.log" ||
        fail "$name from the file: $(tail -3 "$TEST_DIR/query.log")"
    n=$((n + 1))
    if ! why=$(same_answers "$TEST_DIR" "$name"); then
        log "DIFFERS: $name: $why"
        differ=$((differ + 1))
    fi
}
for wf in "${workflows[@]}"; do
    for cmd in status stats jobs anomalies; do compare "$cmd-$wf" "$cmd" "$wf"; done
    for id in $(jq -r '.jobs[].id' "$TEST_DIR/es-jobs-$wf.raw" | head -3); do
        compare "job-$id-$wf" job "$wf" "$id"
    done
done
for m in $("$QUERY" metrics --tsv | tail -n +2 | cut -f1); do
    compare "series-$m" series "$MWF" --metric "$m" --step 60s
done
compare workflows workflows --since 3650d --limit 100
((differ == 0)) || fail "$differ of $n answers differ between the store and the exported file"
[[ $(sha256sum <"$ARCHIVE") == "$sum" ]] || fail "reading the file changed it"
[[ $(ls "$TEST_DIR/ro") == six.pano ]] || fail "files beside the archive: $(ls "$TEST_DIR/ro")"
log "$n answers from the file ${as_reader:+(as nobody, read-only) }the same as from the store"

# ---- import: into an empty store, twice; the same answers
IMPORTED=$TEST_DIR/imported
for round in 1 2; do
    "$QUERY" --store "$IMPORTED" import "$ARCHIVE" 2>>"$TEST_DIR/query.log" ||
        fail "import $round: $(tail -3 "$TEST_DIR/query.log")"
done
[[ $(sqlite3 "$IMPORTED"/*.pano.sqlite "SELECT count(*) FROM events") == "$stored" ]] ||
    fail "imported twice: $(sqlite3 "$IMPORTED"/*.pano.sqlite "SELECT count(*) FROM events") events, not $stored"
STORE=$IMPORTED
for wf in "${workflows[@]}"; do compare "imported-status-$wf" status "$wf"; compare "imported-stats-$wf" stats "$wf"; done
((differ == 0)) || fail "$differ answers differ between the imported store and the file"
log "imported twice: $stored events, once each; the same answers"

# ---- a running workflow exported twice: the second export's new events
RUN=$TEST_DIR/running
RWF=$(cat /proc/sys/kernel/random/uuid)
"$PANO_BUILD/tests/tools/kafka_load" --shape monitor --jobs 20 --wf "$RWF" --no-produce \
    --lines "$TEST_DIR/run.jsonl" >/dev/null || fail "kafka_load"
total=$(wc -l <"$TEST_DIR/run.jsonl")
head -n $((total / 2)) "$TEST_DIR/run.jsonl" >"$TEST_DIR/first.jsonl"
into "$RUN" "$TEST_DIR/first.jsonl"
"$QUERY" --store "$RUN" export "$RWF" -o "$TEST_DIR/first.pano" 2>>"$TEST_DIR/query.log" || fail "first export"
into "$RUN" "$TEST_DIR/run.jsonl"
"$QUERY" --store "$RUN" export "$RWF" -o "$TEST_DIR/second.pano" 2>>"$TEST_DIR/query.log" || fail "second export"
TARGET=$TEST_DIR/target
"$QUERY" --store "$TARGET" import "$TEST_DIR/first.pano" 2>>"$TEST_DIR/query.log" || fail "first import"
[[ $(sqlite3 "$TARGET"/*.pano.sqlite "SELECT count(*) FROM events") == $((total / 2)) ]] || fail "first import"
"$QUERY" --store "$TARGET" import "$TEST_DIR/second.pano" 2>>"$TEST_DIR/query.log" || fail "second import"
[[ $(sqlite3 "$TARGET"/*.pano.sqlite "SELECT count(*) FROM events") == "$total" ]] ||
    fail "after the second import $(sqlite3 "$TARGET"/*.pano.sqlite "SELECT count(*) FROM events") events, not $total"
log "a running workflow exported twice: $((total / 2)) events, then all $total"

# ---- merged: the first export read together with a store holding the second
# half (another host's), as one workflow, each event once; exported as one file
OTHER=$TEST_DIR/other-host
tail -n +$((total / 2 + 1)) "$TEST_DIR/run.jsonl" >"$TEST_DIR/second-half.jsonl"
"$EMIT" --set pano.store="$OTHER" --set pano.hostname=other --events "$TEST_DIR/second-half.jsonl" \
    2>>"$TEST_DIR/emit.log" || fail "the other host's store"
SAME_ASKED_FROM=$EPOCHREALTIME
for s in es sqlite; do
    if [[ $s == es ]]; then
        "$QUERY" --store "$RUN" status "$RWF" --json
    else
        "$QUERY" --store "$TEST_DIR/first.pano" --store "$OTHER" status "$RWF" --json
    fi >"$TEST_DIR/$s-merged.raw" 2>>"$TEST_DIR/query.log" || fail "status of the merged view"
done
why=$(same_answers "$TEST_DIR" merged) || fail "the file and the other host's store, read as one, differ from the whole: $why"
"$QUERY" --store "$TEST_DIR/first.pano" --store "$OTHER" --store "$RUN" export "$RWF" -o "$TEST_DIR/merged.pano" \
    2>>"$TEST_DIR/query.log" || fail "export of the merged view"
[[ $(in_file "$TEST_DIR/merged.pano" "SELECT count(*) FROM events") == "$total" ]] ||
    fail "the merged view exported $(in_file "$TEST_DIR/merged.pano" "SELECT count(*) FROM events") events, not $total"
log "a file and another host's store read as one workflow, and exported as one file: $total events once each"

# ---- redacted: the runs' known names nowhere in the file's bytes, the same numbers
STORE=$TEST_DIR/store
RED=$TEST_DIR/redacted.pano
"$QUERY" --store "$STORE" export "${workflows[@]}" --redact -o "$RED" 2>>"$TEST_DIR/query.log" ||
    fail "export --redact: $(tail -3 "$TEST_DIR/query.log")"
# the Pegasus runs' user, submit host and paths; the monitor's hosts and executable
for known in mzalam /home/ hierarchical-workflow example.org node-07 /opt/app; do
    grep -c -a -F "$known" "$DATA"/*/events.jsonl "$TEST_DIR/monitor.jsonl" | grep -qv ':0$' ||
        fail "'$known' is not in the workflows: the test would prove nothing"
    # the file's bytes once decompressed (as written, they are compressed)
    ! in_file "$RED" .dump | grep -q -a -F "$known" || fail "'$known' is in the redacted file"
    zstd -q -dc "$RED" | grep -q -a -F "$known" && fail "'$known' is in the redacted file's pages"
done
[[ $(in_file "$RED" "SELECT count(*) FROM events") == "$stored" ]] || fail "the redacted file lost events"
numbers() { # STORE CMD WF: the answer's numbers, but the moment of asking's, in order
    "$QUERY" --store "$1" "$2" "$3" --json | jq -c "$SAME_NORMALIZE | [.. | numbers] | sort"
}
for wf in "${workflows[@]}"; do
    for cmd in stats status; do
        a=$(numbers "$STORE" "$cmd" "$wf") b=$(numbers "$RED" "$cmd" "$wf")
        [[ $a == "$b" ]] || fail "$cmd $wf: the redacted file's numbers differ: $a and $b"
    done
done
"$QUERY" --store "$RED" stats "$MWF" --json | jq -e '[.transformations[].transformation] | index("xf_3")' >/dev/null ||
    fail "a transformation's name was redacted"
"$QUERY" --store "$STORE" export "$MWF" --redact-transformations -o "$TEST_DIR/red-xf.pano" 2>>"$TEST_DIR/query.log" ||
    fail "export --redact-transformations"
! in_file "$TEST_DIR/red-xf.pano" .dump | grep -q -a -F "xf_3" || fail "--redact-transformations kept xf_3"
log "redacted: none of the known names in the file, every number of stats and status the same"
chmod 755 "$TEST_DIR/ro"
log "ok"
