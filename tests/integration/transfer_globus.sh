#!/usr/bin/env bash
# pano-transfer globus: Globus Transfer task documents (tests/data/globus)
# into transfer.inv.go events: succeeded, failed, with PROGRESS events, a
# task list, stdin, payload blocks; malformed input is a clear error.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/transfer_lib.sh"
no_broker
data=${PANO_SOURCE:-$(dirname "$0")/../..}/tests/data/globus
[[ -d $data ]] || fail "no test documents in $data"

globus() { # FILE [options]: events in $TEST_DIR/g.jsonl, exit code in $rc
    rc=0
    "$PT" globus "$@" >"$TEST_DIR/g.jsonl" 2>"$TEST_DIR/g.err" || rc=$?
}

globus "$data/task-succeeded.json"
[[ $rc == 0 ]] || fail "succeeded task: exit $rc: $(cat "$TEST_DIR/g.err")"
ev=$(event_of "$TEST_DIR/g.jsonl" transfer.inv.go)
check "$ev" '.task_id == "0f6a3f29-5a2e-4d3c-9a4b-2b8f0c1d2e3f" and .status == 0 and .globus_status == "SUCCEEDED" and .type == "TRANSFER"' "succeeded: task fields"
check "$ev" '.bytes_transferred == 10485760 and .files == 2 and .source_endpoint_display_name == "Globus Tutorial Endpoint 1" and .transfer_duration == 20' "succeeded: numbers"
check "$ev" ".wf_uuid == \"$PANO_WF_UUID\" and (.event_link == null) and (.DATA_TYPE == null) and (.ts|type) == \"number\"" "succeeded: envelope"

PEGASUS_TASK_ID=ID0000007 globus "$data/task-failed-events.json"
[[ $rc == 0 ]] || fail "failed task: exit $rc"
ev=$(event_of "$TEST_DIR/g.jsonl" transfer.inv.go)
check "$ev" '.status == 1 and .globus_status == "FAILED" and .fatal_error.code == "PERMISSION_DENIED"' "failed: status"
check "$ev" '.pegasus_task_id == "ID0000007" and .task_id == "7b3c0e52-2f4e-11ea-b2a1-0e56c063f437"' "failed: Globus task_id, Pegasus task id aside"
check "$ev" '[.transfer_events[].code] == ["STARTED","PROGRESS","FAULT"]' "failed: events oldest first"
check "$ev" '.transfer_events[1] | .bytes_transferred == 1048576 and .duration == 68 and .mbps == 0.12 and (.details|type) == "string"' "failed: PROGRESS numbers"

# a task and its event list, as two documents, from stdin
rc=0
"$PT" globus - <"$data/task-show-then-events.json" >"$TEST_DIR/g.jsonl" 2>"$TEST_DIR/g.err" || rc=$?
[[ $rc == 0 ]] || fail "stdin: exit $rc"
ev=$(event_of "$TEST_DIR/g.jsonl" transfer.inv.go)
check "$ev" '[.transfer_events[] | select(.code == "PROGRESS") | .bytes_transferred] == [0, 1073741824, 2147483648]' "PROGRESS bytes"
check "$ev" '[.transfer_events[] | select(.code == "PROGRESS") | .mbps] == [0, 86.11, 85.68]' "PROGRESS Mbps"

for f in task-succeeded task-failed-events task-show-then-events task-list; do
    "$PT" globus "$data/$f.json" >>"$TEST_DIR/all.jsonl" 2>/dev/null || fail "$f: exit $?"
done
schema_check "$TEST_DIR/all.jsonl"

globus "$data/task-list.json" --payload
[[ $rc == 0 && $(grep -c '^@@@MONITORING_PAYLOAD - START@@@{.*"monitoring_event":"transfer.inv.go".*}@@@MONITORING_PAYLOAD - END@@@$' "$TEST_DIR/g.jsonl") == 2 ]] ||
    fail "task list as payload blocks: $(cat "$TEST_DIR/g.jsonl" "$TEST_DIR/g.err")"

globus "$data/malformed.json"
[[ $rc == 1 && ! -s $TEST_DIR/g.jsonl ]] || fail "malformed: exit $rc, output $(cat "$TEST_DIR/g.jsonl")"
grep -q "malformed JSON at line 5, column" "$TEST_DIR/g.err" || fail "malformed: message $(cat "$TEST_DIR/g.err")"
globus <(printf '{"task_id": "x", "status": "SUCC')
[[ $rc == 1 ]] && grep -q "unexpected end of input at line 1" "$TEST_DIR/g.err" || fail "truncated: $(cat "$TEST_DIR/g.err")"
globus "$TEST_DIR/does-not-exist"
[[ $rc == 2 ]] || fail "missing file: exit $rc"
log "PASS"
