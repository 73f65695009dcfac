#!/usr/bin/env bash
# pano-transfer end to end over the real services, configured the way
# Pegasus jobs are (PEGASUS_AMQP_URL, PEGASUS_TRANSFER_PUBLISH=1):
# pano-transfer -> RabbitMQ -> pano-bridge -> Kafka -> pano-indexer -> Elasticsearch.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/transfer_lib.sh"
require_stack
data=${PANO_SOURCE:-$(dirname "$0")/../..}/tests/data/globus

WF=$(cat /proc/sys/kernel/random/uuid)
start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

mkdir -p "$TEST_DIR/src"
for i in 1 2 3; do head -c $((i * 100000)) /dev/urandom >"$TEST_DIR/src/f$i"; done
printf '%s %s\n' "$TEST_DIR/src/f1" "$TEST_DIR/dst/f1" "$TEST_DIR/src/f2" "$TEST_DIR/dst/f2" \
    "$TEST_DIR/src/f3" "$TEST_DIR/dst/f3" "$TEST_DIR/src/missing" "$TEST_DIR/dst/f4" >"$TEST_DIR/list"

# Pegasus's names for everything: the URL, the switch, the job context.
pegasus_env=(env -u PANO_AMQP_URL PEGASUS_AMQP_URL="$PANO_AMQP_URL" PEGASUS_TRANSFER_PUBLISH=1
    PEGASUS_WF_UUID="$WF" PEGASUS_DAG_JOB_ID=stage_in_local_condorpool_0_0 CONDOR_JOBID=120.0)
rc=0
"${pegasus_env[@]}" "$PT" copy --src-site local --dst-site condorpool --list "$TEST_DIR/list" \
    >"$TEST_DIR/copy.out" 2>"$TEST_DIR/copy.err" || rc=$?
[[ $rc == 1 ]] || fail "one transfer of four fails: expected exit 1, got $rc: $(cat "$TEST_DIR/copy.err")"
[[ ! -s $TEST_DIR/copy.out ]] || fail "publishing: nothing should be written on stdout"
"${pegasus_env[@]}" "$PT" globus "$data/task-failed-events.json" || fail "globus exited $?"
sent=$SECONDS

wait_until 20 es_count_is "wf_uuid:\"$WF\"" 6 ||
    fail "expected 6 events for $WF in Elasticsearch, found $(es_count "wf_uuid:\"$WF\"")"
log "6 events searchable after $((SECONDS - sent)) s"
[[ $(es_count "wf_uuid:\"$WF\" AND event:\"transfer.inv.local.single\"") == 4 ]] || fail "expected 4 single events"
ok=$(es_first "wf_uuid:\"$WF\" AND event:\"transfer.inv.local.single\" AND filename:\"$TEST_DIR/src/f2\"")
check "$ok" '.status == 0 and .bytes_transferred == 200000 and .transfer_duration < 10 and .dag_job_id == "stage_in_local_condorpool_0_0" and .condor_job_id == "120.0"' "single event"
check "$ok" '.source_site_name == "local" and .destination_site_name == "condorpool"' "site labels"
bad=$(es_first "wf_uuid:\"$WF\" AND event:\"transfer.inv.local.single\" AND status:1")
check "$bad" '(.error | test("No such file"))' "failure event"
sum=$(es_first "wf_uuid:\"$WF\" AND event:\"transfer.inv.local\"")
check "$sum" '.total_files == 4 and .failed_files == 1 and .bytes_transferred == 600000' "summary"
go=$(es_first "wf_uuid:\"$WF\" AND event:\"transfer.inv.go\"")
check "$go" '.status == 1 and .globus_status == "FAILED" and (.transfer_events | length) == 3 and .transfer_events[1].mbps == 0.12' "Globus event"
log "PASS"
