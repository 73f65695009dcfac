#!/usr/bin/env bash
# The Python package as a user has it: installed with pip in a virtual
# environment (offline, with Debian's setuptools), imported by a task that
# pano-monitor runs into the embedded store (no service). The task reports
# a metric per iteration through pano.metric, and reads its own job back
# through pano.jobs, pano.status and pano.series while it runs; every
# metric is stored with its value, and what the task read is the store's.
source "$(dirname "$0")/../integration/lib.sh"
: "${PANO_SOURCE:?}"
venv=$TEST_DIR/venv
# Debian 12's Python, whatever else comes first on PATH
/usr/bin/python3 -m venv --system-site-packages "$venv" >"$TEST_DIR/venv.log" 2>&1 ||
    fail "python3 -m venv: $(tail -3 "$TEST_DIR/venv.log")"
cp -r "$PANO_SOURCE/python" "$TEST_DIR/src" # pip builds in the source tree
"$venv/bin/pip" install --no-build-isolation --no-index --no-cache-dir "$TEST_DIR/src" >"$TEST_DIR/pip.log" 2>&1 ||
    fail "pip install ./python: $(tail -5 "$TEST_DIR/pip.log")"
(cd / && "$venv/bin/python" -c 'import pano, sys; sys.exit(not pano.__file__.startswith(sys.prefix))') ||
    fail "the installed package is not the one imported"

export PANO_AMQP_URL= PANO_STORE=$TEST_DIR/store PANO_QUERY=$PANO_BUILD/query/pano-query
export PEGASUS_WF_UUID=$(cat /proc/sys/kernel/random/uuid) PEGASUS_DAG_JOB_ID=train_ID01
cat >"$TEST_DIR/train.py" <<'PY'
import json, os, time, pano
wf, me = os.environ["PEGASUS_WF_UUID"], os.environ["PEGASUS_DAG_JOB_ID"]
for i in range(200):
    predicted, actual = i * 0.5, i * 0.5 + (1 if i % 2 else -1) * 0.25
    assert pano.metric("predicted", predicted, step=i)
    assert pano.metric("error", abs(predicted - actual), step=i, level=2)  # not sent at level 1
    assert pano.metric("iterations", 1, kind="c")
t0 = time.time()
while time.time() < t0 + 0.3:  # work, to be sampled
    pass
time.sleep(1.2)  # two samples, at least
mine = [j for j in pano.jobs(wf) if j["dag_job_id"] == me]
status = pano.status(wf)
cpu = pano.series(wf, "cpu", step="1s")
json.dump({"mine": mine, "running": status["jobs"]["by_state"]["running"],
           "cpu": sum(p["value"] for p in cpu["points"]), "dropped": pano.dropped()},
          open(os.environ["OUT"], "w"))
PY
OUT=$TEST_DIR/read.json "$PANO_BUILD/publishers/monitor/pano-monitor" -i 0.5 -- "$venv/bin/python" "$TEST_DIR/train.py" \
    2>"$TEST_DIR/monitor.log" || fail "the task failed: $(tail -5 "$TEST_DIR/monitor.log")"
jq -e '.mine | length == 1 and .[0].state == "running"' "$TEST_DIR/read.json" >/dev/null ||
    fail "the task did not read itself back running: $(cat "$TEST_DIR/read.json")"
jq -e '.running == 1 and .cpu > 0 and .dropped == 0' "$TEST_DIR/read.json" >/dev/null ||
    fail "what the task read: $(cat "$TEST_DIR/read.json")"
sql() { sqlite3 "file:$(echo "$PANO_STORE"/*.pano.sqlite)?mode=ro" "$@"; }
[[ $(sql "SELECT count(*) FROM events WHERE event = 'custom.metric' AND json_extract(doc, '$.name') = 'predicted'") == 200 ]] ||
    fail "predicted: not 200 metrics stored"
# 0 + 0.5 + ... + 99.5
[[ $(sql "SELECT sum(json_extract(doc, '$.value')) FROM events WHERE json_extract(doc, '$.name') = 'predicted'") == 9950.0 ]] ||
    fail "the predicted values do not add up"
[[ $(sql "SELECT count(*) FROM events WHERE json_extract(doc, '$.name') = 'error'") == 0 ]] ||
    fail "level-2 metrics were sent at level 1"
[[ $(sql "SELECT json_extract(doc, '$.metrics_socket') FROM events WHERE event = 'kickstart.inv.end'") == '{"sent":400,"above_level":200,"bad_lines":0,"refused":0}' ]] ||
    fail "the end event's counts: $(sql "SELECT json_extract(doc, '$.metrics_socket') FROM events WHERE event = 'kickstart.inv.end'")"
log "pip-installed package: 400 metrics through the socket, 200 above the level; the task read itself running"

# ---- examples/ai-in-the-loop: two steps under pano-monitor, 60 iterations each
export PEGASUS_WF_UUID=$(cat /proc/sys/kernel/random/uuid)
PATH=$PANO_BUILD/publishers/monitor:$PANO_BUILD/query:$PATH "$venv/bin/python" \
    "$PANO_SOURCE/examples/ai-in-the-loop/workflow.py" --steps 2 --iterations 60 >"$TEST_DIR/ai.out" 2>"$TEST_DIR/ai.log" ||
    fail "examples/ai-in-the-loop: $(tail -5 "$TEST_DIR/ai.log")"
grep -q "^workflow $PEGASUS_WF_UUID: 2 of 2 steps succeeded" "$TEST_DIR/ai.out" || fail "the example's end: $(cat "$TEST_DIR/ai.out")"
for k in 01 02; do
    grep -qE "^learn_ID$k: half-way, pano reads [0-9.]+ s of CPU for me \([2-9][0-9]* samples\)" "$TEST_DIR/ai.out" ||
        fail "learn_ID$k did not read its CPU back: $(cat "$TEST_DIR/ai.out")"
done
for name in predicted actual error; do
    n=$(sql "SELECT count(*) FROM events WHERE wf_uuid = '$PEGASUS_WF_UUID' AND json_extract(doc, '$.name') = '$name'")
    [[ $n == 120 ]] || fail "the example's $name metrics: $n of 120"
done
"$PANO_BUILD/query/pano-query" job "$PEGASUS_WF_UUID" learn_ID02 --json >"$TEST_DIR/job.json" || fail "pano-query job"
jq -e '.state == "succeeded" and ([.events[] | select(.event == "custom.metric")] | length) > 0' "$TEST_DIR/job.json" >/dev/null ||
    fail "pano-query job does not show the step with its metrics: $(head -c 600 "$TEST_DIR/job.json")"
log "PASS: examples/ai-in-the-loop: 2 steps, 360 metrics, each step read its CPU back"
