#!/usr/bin/env bash
# One monitored task, end to end over the real services:
# pano-monitor -> RabbitMQ -> pano-bridge -> Kafka -> pano-indexer -> Elasticsearch.
source "$(dirname "$0")/lib.sh"
require_stack

WF=$(cat /proc/sys/kernel/random/uuid)
start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
# The bridge declares and binds its queue; publishing before that would be
# refused as unroutable (which pano-monitor reports, rather than losing).
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

rc=0
PEGASUS_WF_UUID=$WF PEGASUS_DAG_JOB_ID=exit3_ID0000001 CONDOR_JOBID=12.0 \
    "$PANO_BUILD/publishers/monitor/pano-monitor" -- sh -c 'exit 3' || rc=$?
[[ $rc == 3 ]] || fail "pano-monitor exited $rc, expected the task's 3"
sent=$SECONDS

# start, the samples at start and at exit, end
wait_until 15 es_count_is "wf_uuid:\"$WF\"" 4 ||
    fail "expected 4 events for workflow $WF in Elasticsearch within 15 s, found $(es_count "wf_uuid:\"$WF\"")"
log "all 4 events searchable after $((SECONDS - sent)) s"

start=$(es_first "wf_uuid:\"$WF\" AND event:\"kickstart.inv.start\"")
end=$(es_first "wf_uuid:\"$WF\" AND event:\"kickstart.inv.end\"")
check() { jq -e "$2" <<<"$1" >/dev/null || fail "$3: $1"; }
check "$start" '.argv == ["sh","-c","exit 3"]' "start event argv"
check "$start" '.dag_job_id == "exit3_ID0000001" and .condor_job_id == "12.0"' "start event context"
check "$start" '(.ts|type) == "number" and (."@timestamp"|test("^[0-9-]+T[0-9:.]+Z$"))' "start event time"
check "$end" '.exitcode == 3 and .signal == 0 and .status == 1' "end event exit status"
check "$end" '.duration >= 0 and .duration < 10 and (.utime|type) == "number" and .maxrss > 0' "end event usage"
check "$end" '.seq == 4 and (.event_id|length) > 0' "end event envelope"
check "$end" '.final.procs == 0 and (.final.utime|type) == "number"' "end event final totals"
online=$(es_first "wf_uuid:\"$WF\" AND event:\"kickstart.inv.online\" AND sample:\"end\"")
check "$online" '.seq == 3 and .pid > 0 and (.wchar|type) == "number"' "final online sample"
# @timestamp comes from the event's ts, not from the time of indexing.
ts=$(jq -r .ts <<<"$end")
stamp=$(jq -r '."@timestamp"' <<<"$end")
[[ $(date -u -d "@${ts%.*}" +%Y-%m-%dT%H:%M:%S) == "${stamp%.*}" ]] || fail "@timestamp $stamp does not match ts $ts"
stop_all
log "PASS"
