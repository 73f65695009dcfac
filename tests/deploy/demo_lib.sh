# What every run of deploy/demo.sh must leave in its store. Source it after
# lib.sh.

# check_demo_events SENT STORED: the events stored (JSON lines) are the ones
# the demo sent, each once, and every part of the system is there: each
# monitored job's start, samples and end, the custom metric, the payload
# event, the transfers, the Darshan log.
check_demo_events() {
    local sent=$1 stored=$2 job ev
    diff <(jq -r .event_id "$sent" | sort) <(jq -r .event_id "$stored" | sort) ||
        fail "the events stored are not the events the demo sent"
    expect() { # EVENT JQ_CONDITION WHAT
        jq -s -e --arg e "$1" "any(.[]; .event == \$e and ($2))" "$stored" >/dev/null || fail "no $3"
    }
    for job in generate_ID01 checksum_ID02 stage_out_ID03 fails_ID05; do
        for ev in kickstart.inv.start kickstart.inv.online kickstart.inv.end; do
            expect "$ev" ".dag_job_id == \"$job\"" "$ev of $job"
        done
    done
    expect kickstart.inv.end '.dag_job_id == "fails_ID05" and .exitcode == 4' "end event of the failed job with exit code 4"
    expect custom.metric '.dag_job_id == "generate_ID01" and .value == 50000' "custom metric from pano-emit"
    expect demo.checksum '.dag_job_id == "checksum_ID02" and (.sha256 | length) == 64' "event from the MONITORING_PAYLOAD block"
    expect transfer.inv.local.single '.dag_job_id == "stage_out_ID03" and .bytes_transferred == 50000000' "per-file transfer event"
    expect transfer.inv.local '.dag_job_id == "stage_out_ID03"' "transfer summary event"
    expect darshan.perf '.dag_job_id == "ior_ID04" and .nprocs == 4' "darshan.perf event of the public log"
}
