#!/usr/bin/env bash
# Metrics from the task through pano-monitor's socket (PANO_METRICS_SOCKET),
# into the embedded store (no service): DogStatsD lines from Python become
# custom.metric events with the job's envelope, exactly as many as sent,
# with their values, tags, levels, kinds and the sender's pid; a grandchild
# of the task is heard; bad lines and lines above the level are counted in
# the end event, never fatal; a process outside the task's tree is refused;
# a sender that never blocks drops what the full socket refuses, and every
# datagram the socket took arrives.
source "$(dirname "$0")/lib.sh"
MONITOR=$PANO_BUILD/publishers/monitor/pano-monitor
STORE=$TEST_DIR/store
export PANO_AMQP_URL= PANO_STORE=$STORE PEGASUS_WF_UUID=$(cat /proc/sys/kernel/random/uuid)
sql() { sqlite3 "file:$(echo "$STORE"/*.pano.sqlite)?mode=ro" "$@"; }

# ---- lines, tags, levels, kinds; a grandchild; bad lines
cat >"$TEST_DIR/send.py" <<'PY'
import os, socket, subprocess, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
path = os.environ["PANO_METRICS_SOCKET"]
for i in range(500):  # two lines a datagram
    s.sendto(f"loss:{i / 1000}|g|#epoch:{i},model:cnn\nbatches:2|c|@0.5".encode(), path)
s.sendto(b"not a metric\nx:1|s\nfine:7|ms|#level:2\ndetail:1|g|#level:3", path)
if len(sys.argv) == 1:  # and once more from a grandchild
    subprocess.run(["sh", "-c", f"{sys.executable} {sys.argv[0]} child"], check=True)
PY
PEGASUS_DAG_JOB_ID=py_ID01 "$MONITOR" --level 2 -- python3 "$TEST_DIR/send.py" 2>"$TEST_DIR/monitor.log" ||
    fail "pano-monitor: $(tail -3 "$TEST_DIR/monitor.log")"
[[ $(sql "SELECT count(*) FROM events WHERE event = 'custom.metric' AND dag_job_id = 'py_ID01'") == 2002 ]] ||
    fail "custom.metric events: $(sql "SELECT count(*) FROM events WHERE event = 'custom.metric'") of 2002"
[[ $(sql "SELECT count(DISTINCT json_extract(doc, '$.pid')) FROM events WHERE event = 'custom.metric'") == 2 ]] ||
    fail "the metrics do not carry their two senders' pids"
# loss: 0 + 0.001 + ... + 0.499, twice; batches: 2 at half the rate, 4 each
[[ $(sql "SELECT round(sum(json_extract(doc, '$.value')), 3) FROM events WHERE event = 'custom.metric' AND json_extract(doc, '$.name') = 'loss'") == 249.5 ]] ||
    fail "the loss values do not add up to 2 x 124.75"
[[ $(sql "SELECT sum(json_extract(doc, '$.value')) FROM events WHERE json_extract(doc, '$.name') = 'batches' AND json_extract(doc, '$.kind') = 'count'") == 4000.0 ]] ||
    fail "the counts were not scaled by their rate"
sql "SELECT doc FROM events WHERE json_extract(doc, '$.name') = 'loss' AND json_extract(doc, '$.tags.epoch') = '7' LIMIT 1" >"$TEST_DIR/one.json"
jq -e --arg wf "$PEGASUS_WF_UUID" '.wf_uuid == $wf and .dag_job_id == "py_ID01" and .tags == {"epoch": "7", "model": "cnn"}
    and .level == 1 and .kind == "gauge" and .value == 0.007' "$TEST_DIR/one.json" >/dev/null ||
    fail "a metric's event: $(cat "$TEST_DIR/one.json")"
[[ $(sql "SELECT json_extract(doc, '$.level') || json_extract(doc, '$.kind') FROM events WHERE json_extract(doc, '$.name') = 'fine' LIMIT 1") == 2timing ]] ||
    fail "the level-2 timing did not come with its level and kind"
end=$(sql "SELECT json_extract(doc, '$.metrics_socket') FROM events WHERE event = 'kickstart.inv.end' AND dag_job_id = 'py_ID01'")
jq -e '. == {"sent": 2002, "above_level": 2, "bad_lines": 4, "refused": 0}' <<<"$end" >/dev/null ||
    fail "the end event's counts: $end"
grep -q "a line from pid [0-9]* refused (not name:value|type): not a metric" "$TEST_DIR/monitor.log" ||
    fail "the first bad line was not reported: $(cat "$TEST_DIR/monitor.log")"
log "2002 metrics from a task and its grandchild, 4 bad lines and 2 above the level counted"

# ---- pano-emit (lib/metric.h) inside the task: through the socket; a tag
# value DogStatsD cannot carry: through the store directly
PEGASUS_DAG_JOB_ID=emit_ID04 "$MONITOR" -- sh -c "
    '$PANO_BUILD/publishers/emit/pano-emit' --tag phase=solve --level 1 residual 1.5e-6 &&
    '$PANO_BUILD/publishers/emit/pano-emit' --tag 'list=a,b' commas 2" 2>"$TEST_DIR/emit.log" ||
    fail "pano-emit inside the task: $(tail -3 "$TEST_DIR/emit.log")"
sql "SELECT doc FROM events WHERE dag_job_id = 'emit_ID04' AND event = 'custom.metric' ORDER BY json_extract(doc, '$.name') DESC" >"$TEST_DIR/emit.jsonl"
jq -se '.[0].name == "residual" and .[0].value == 1.5e-6 and .[0].kind == "gauge" and .[0].tags == {"phase": "solve"}
    and .[1].name == "commas" and (.[1] | has("kind") | not) and .[1].tags == {"list": "a,b"} and length == 2' \
    "$TEST_DIR/emit.jsonl" >/dev/null || fail "pano-emit's metrics: $(cat "$TEST_DIR/emit.jsonl")"
[[ $(sql "SELECT json_extract(doc, '$.metrics_socket.sent') FROM events WHERE event = 'kickstart.inv.end' AND dag_job_id = 'emit_ID04'") == 1 ]] ||
    fail "pano-emit's metric did not come through the socket"
log "pano-emit inside the task: through the socket, and through the store when DogStatsD cannot carry it"

# ---- Fortran, through lib/metric.h by ISO_C_BINDING (examples/fortran)
PEGASUS_DAG_JOB_ID=fortran_ID05 "$MONITOR" -- "$PANO_BUILD/examples/residuals" 10 2>"$TEST_DIR/fortran.log" ||
    fail "the Fortran example: $(tail -3 "$TEST_DIR/fortran.log")"
# 1 + 1/2 + ... + 1/10
[[ $(sql "SELECT count(*) || ' ' || round(sum(json_extract(doc, '$.value')), 9) FROM events WHERE dag_job_id = 'fortran_ID05'
          AND json_extract(doc, '$.name') = 'residual' AND json_extract(doc, '$.tags.solver') = 'cg'") == "10 2.928968254" ]] ||
    fail "the Fortran residuals: $(sql "SELECT doc FROM events WHERE dag_job_id = 'fortran_ID05' AND event = 'custom.metric'")"
log "a Fortran program's 10 metrics through lib/metric.h"

# ---- a process outside the task's tree is refused
PEGASUS_DAG_JOB_ID=outside_ID02 "$MONITOR" -- sh -c 'echo "$PANO_METRICS_SOCKET" >"$0"; sleep 2' "$TEST_DIR/path" \
    2>"$TEST_DIR/outside.log" &
monitor=$!
wait_until 10 test -s "$TEST_DIR/path" || fail "the task did not get PANO_METRICS_SOCKET"
path=$(cat "$TEST_DIR/path")
[[ $(stat -c %a "$(dirname "$path")") == 700 ]] || fail "the socket's directory is not 0700"
# (alive while the monitor reads it: a sender gone by then is taken, as
# docs/monitor.md says, since nothing is left to check)
python3 -c 'import socket, sys, time; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"intruder:1|g", sys.argv[1]); time.sleep(1)' "$path" ||
    fail "cannot send to $path"
wait "$monitor" || fail "pano-monitor: $(tail -3 "$TEST_DIR/outside.log")"
[[ ! -e $path && ! -e $(dirname "$path") ]] || fail "the socket or its directory was left behind"
[[ $(sql "SELECT count(*) FROM events WHERE json_extract(doc, '$.name') = 'intruder'") == 0 ]] ||
    fail "a metric from outside the task was stored"
end=$(sql "SELECT json_extract(doc, '$.metrics_socket.refused') FROM events WHERE event = 'kickstart.inv.end' AND dag_job_id = 'outside_ID02'")
[[ $end == 1 ]] || fail "the refused datagram was not counted: $end"
log "a sender outside the task's tree refused and counted"

# ---- a sender that never blocks: what the socket took, all of it, arrives
cat >"$TEST_DIR/flood.py" <<'PY'
import os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setblocking(False)
path, sent, dropped = os.environ["PANO_METRICS_SOCKET"], 0, 0
for i in range(20000):
    try:
        s.sendto(f"flood:{i}|g".encode(), path)
        sent += 1
    except BlockingIOError:
        dropped += 1
print(sent, dropped)
PY
PEGASUS_DAG_JOB_ID=flood_ID03 "$MONITOR" -- python3 "$TEST_DIR/flood.py" >"$TEST_DIR/flood.out" 2>"$TEST_DIR/flood.log" ||
    fail "pano-monitor: $(tail -3 "$TEST_DIR/flood.log")"
read -r sent dropped <"$TEST_DIR/flood.out"
((sent + dropped == 20000 && sent > 0)) || fail "the sender: $(cat "$TEST_DIR/flood.out")"
stored=$(sql "SELECT count(*) FROM events WHERE dag_job_id = 'flood_ID03' AND event = 'custom.metric'")
((stored == sent)) || fail "$stored metrics stored of the $sent the socket took"
log "PASS: a non-blocking sender: $sent taken and stored, $dropped dropped by the sender"
