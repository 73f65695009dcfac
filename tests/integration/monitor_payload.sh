#!/usr/bin/env bash
# MONITORING_PAYLOAD blocks in the task's output become events, once, even
# when a block is split across many writes and lines; the output reaches
# its destination unchanged, byte for byte.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"
require_rabbitmq
queue_setup

# The reference: the task alone.
"$WORKLOAD" payload >"$TEST_DIR/direct.out" 2>"$TEST_DIR/direct.err"

# stdout and stderr to separate files. (The monitor logs to stderr too, here
# the invalid block's warning: --log-level error keeps it out of the way.)
"$MONITOR" --log-level error -- "$WORKLOAD" payload >"$TEST_DIR/mon.out" 2>"$TEST_DIR/mon.err" || fail "monitor failed"
cmp "$TEST_DIR/direct.out" "$TEST_DIR/mon.out" || fail "stdout changed"
cmp "$TEST_DIR/direct.err" "$TEST_DIR/mon.err" || fail "stderr changed"
drain "$TEST_DIR/split.events"
ev=$TEST_DIR/split.events
check_schema "$ev"
expect "$ev" '[.[] | select(.event=="custom.payload_test")] | length == 2' "two payload items, once each"
expect "$ev" '[.[] | select(.event=="custom.payload_test")] | map(.bytes) == [1024, 2048]' "item fields"
expect "$ev" '[.[] | select(.event=="custom.payload_test")] | all(.monitoring_event == "custom.payload_test"
              and .ts == 1700000000 and (.event_id | length) > 0 and .wf_uuid == env.PEGASUS_WF_UUID)' \
    "payload envelope"
expect "$ev" '[.[] | select(.event=="kickstart.payload.error")] | length == 1 and .[0].stream == "stderr"
              and (.[0].error | test("not a valid event name"))' "the invalid block became an error event"
expect "$ev" '.[] | select(.event=="kickstart.inv.end") | .payload_events == 2 and .payload_errors == 1' \
    "payload counts in the end event"
log "payload blocks split across writes: captured once, output unchanged"

# stdout and stderr into one file (2>&1): one pipe keeps their order exactly
"$WORKLOAD" payload >"$TEST_DIR/direct.both" 2>&1
"$MONITOR" --log-level error -- "$WORKLOAD" payload >"$TEST_DIR/mon.both" 2>&1 || fail "monitor failed"
cmp "$TEST_DIR/direct.both" "$TEST_DIR/mon.both" || fail "2>&1 output changed"
drain "$TEST_DIR/merged.events"
expect "$TEST_DIR/merged.events" '[.[] | select(.event=="custom.payload_test")] | length == 2' "merged: items"

# Into a pipe, with the workflow context: the events carry it.
PEGASUS_WF_UUID=wf-payload PEGASUS_DAG_JOB_ID=job_ID1 "$MONITOR" -- "$WORKLOAD" payload 2>/dev/null |
    cat >"$TEST_DIR/piped.out"
cmp "$TEST_DIR/direct.out" "$TEST_DIR/piped.out" || fail "stdout through a pipe changed"
drain "$TEST_DIR/piped.events"
expect "$TEST_DIR/piped.events" '[.[] | select(.event=="custom.payload_test")] |
    length == 2 and all(.wf_uuid == "wf-payload" and .dag_job_id == "job_ID1")' "context"

# An oversized block: an error event, bounded memory, output unchanged.
big() { printf 'x @@@MONITORING_PAYLOAD - START@@@'; head -c 3000000 /dev/zero | tr '\0' a
        printf '@@@MONITORING_PAYLOAD - END@@@ y\n'; }
big >"$TEST_DIR/big.direct"
"$MONITOR" --set pano.monitor.payload_max=1M -- sh -c "cat '$TEST_DIR/big.direct'" >"$TEST_DIR/big.out" ||
    fail "monitor failed"
cmp "$TEST_DIR/big.direct" "$TEST_DIR/big.out" || fail "oversized block: output changed"
drain "$TEST_DIR/big.events"
expect "$TEST_DIR/big.events" '[.[] | select(.event=="kickstart.payload.error")] | length == 1
    and (.[0].size == 3000000)' "oversized block error"
# pano-emit inside a monitored task, with the monitor's --level
"$MONITOR" --level 2 -- sh -c "'$EMIT' --level 2 inner.metric 1 && '$EMIT' --level 3 hidden.metric 1" ||
    fail "pano-emit under the monitor failed"
drain "$TEST_DIR/emit.events"
check_schema "$TEST_DIR/emit.events"
expect "$TEST_DIR/emit.events" '[.[] | select(.event=="custom.metric") | .name] == ["inner.metric"]' \
    "levels: the level 2 metric is sent, the level 3 one is not"
# Without any workflow context, the UUID the monitor makes up is the task's too.
env -u PEGASUS_WF_UUID "$MONITOR" -- "$EMIT" made.up 1 2>/dev/null || fail "monitor failed"
drain "$TEST_DIR/madeup.events"
expect "$TEST_DIR/madeup.events" '(map(.wf_uuid) | unique | length == 1) and
    (.[0].wf_uuid != env.PEGASUS_WF_UUID) and any(.event == "custom.metric")' "one made-up workflow"
no_sanitizer_reports
log "PASS"
