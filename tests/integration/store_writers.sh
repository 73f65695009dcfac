#!/usr/bin/env bash
# Many writers, nothing lost, on the embedded store (no services):
#   - 64 pano-monitor tasks on one host sampling every 0.1 s into one store
#     for 60 s, while pano-query and pano-explorer read it; 8 of the
#     monitors and some of the readers killed with SIGKILL on the way;
#   - two more hosts (own UTS namespaces: unshare -u) writing the same
#     directory, each into its own file, read back as one workflow.
# Every event a writer was told was stored is there, once; a killed writer
# loses at most the one it was sending; the files pass SQLite's integrity
# check.
source "$(dirname "$0")/lib.sh"
MONITOR=$PANO_BUILD/publishers/monitor/pano-monitor
QUERY=$PANO_BUILD/query/pano-query
STORE=$TEST_DIR/store
WRITERS=${STORE_WRITERS:-64}
SECONDS_RUN=${STORE_SECONDS:-60}
unset PANO_AMQP_URL
export PANO_STORE=$STORE
WF=$(cat /proc/sys/kernel/random/uuid)
export PEGASUS_WF_UUID=$WF PEGASUS_XFORMATION=sleeper

monitor() { # N SECONDS: task N under pano-monitor, a copy of its events in copy-N.jsonl
    PEGASUS_DAG_JOB_ID=$(printf 'task_ID%03d' "$1") PANO_OUTPUT="$TEST_DIR/copy-$1.jsonl" \
        exec "$MONITOR" -i 0.1 -- sleep "$2" 2>>"$TEST_DIR/monitor-$1.log"
}
writers=()
for n in $(seq 1 "$WRITERS"); do
    monitor "$n" "$SECONDS_RUN" &
    writers+=($!)
done
log "$WRITERS writers started"
port=$(free_ports 1)
start explorer "$PANO_BUILD/explorer/pano-explorer" --port "$port" --store "$STORE"
wait_until 30 curl -fsS -o /dev/null "http://127.0.0.1:$port/api/metrics" || fail "pano-explorer did not start"

# readers while they write; some killed mid-read
killed=()
deadline=$((SECONDS + SECONDS_RUN - 5))
round=0
while ((SECONDS < deadline)); do
    round=$((round + 1))
    "$QUERY" status "$WF" --json >"$TEST_DIR/status.json" 2>>"$TEST_DIR/query.log" ||
        fail "pano-query status while $WRITERS write: $(tail -3 "$TEST_DIR/query.log")"
    curl -fsS "http://127.0.0.1:$port/api/workflows/$WF?series=cpu,rss" -o /dev/null ||
        fail "the explorer while $WRITERS write"
    "$QUERY" series "$WF" --metric rss --step 1s >/dev/null 2>>"$TEST_DIR/query.log" &
    reader=$!
    sleep 0.$((RANDOM % 5))
    kill -KILL "$reader" 2>/dev/null || true
    wait "$reader" 2>/dev/null || true
    if ((${#killed[@]} < WRITERS / 8 && round % 2 == 0)); then # a writer killed at some moment
        n=$((1 + RANDOM % WRITERS))
        if [[ ! " ${killed[*]} " =~ " $n " ]] && kill -KILL "${writers[n - 1]}" 2>/dev/null; then
            killed+=("$n")
            pkill -KILL -f "^sleep $SECONDS_RUN\$" -P "${writers[n - 1]}" 2>/dev/null || true
        fi
    fi
done
log "$round rounds of reading; writers killed: ${killed[*]}"
for n in $(seq 1 "$WRITERS"); do wait "${writers[n - 1]}" 2>/dev/null || true; done 2>/dev/null
pkill -KILL -f "^sleep $SECONDS_RUN\$" 2>/dev/null || true

# ---- two other hosts on the same directory
if unshare -u true 2>/dev/null; then ns=(unshare -u); else ns=(unshare -r -u); fi
for host in node-b node-c; do
    "${ns[@]}" sh -c 'hostname "$1" && shift && exec "$@"' sh "$host" \
        env PEGASUS_DAG_JOB_ID="remote_$host" PANO_OUTPUT="$TEST_DIR/copy-$host.jsonl" \
        "$MONITOR" -i 0.1 -- sleep 1 2>>"$TEST_DIR/monitor-$host.log" ||
        fail "pano-monitor on $host: $(tail -3 "$TEST_DIR/monitor-$host.log")"
done
files=$(cd "$STORE" && ls -- *.pano.sqlite | tr '\n' ' ')
[[ -f $STORE/node-b.pano.sqlite && -f $STORE/node-c.pano.sqlite && $(wc -w <<<"$files") == 3 ]] ||
    fail "store files: $files (one a host)"

# ---- nothing lost, nothing twice
for f in "$STORE"/*.pano.sqlite; do
    [[ $(sqlite3 "file:$f?mode=ro" "PRAGMA integrity_check") == ok ]] || fail "$f is damaged"
done
sqlite3 "$STORE/node-b.pano.sqlite" "SELECT count(*) FROM events" | grep -qv '^0$' || fail "node-b wrote nothing"
stored=$TEST_DIR/stored.txt
for f in "$STORE"/*.pano.sqlite; do sqlite3 "file:$f?mode=ro" "SELECT event_id FROM events"; done | sort >"$stored"
[[ $(uniq -d "$stored" | wc -l) == 0 ]] || fail "events stored twice: $(uniq -d "$stored" | head -3)"
missing=0
for copy in "$TEST_DIR"/copy-*.jsonl; do
    jq -r .event_id "$copy" | sort >"$copy.ids"
    lost=$(comm -23 "$copy.ids" "$stored" | wc -l)
    n=${copy##*/copy-}
    n=${n%.jsonl}
    if [[ " ${killed[*]} " =~ " $n " ]]; then
        # killed: the line written to the copy before the store had it, at most
        ((lost <= 1)) || fail "writer $n, killed, lost $lost events it had sent"
    elif ((lost > 0)); then
        missing=$((missing + lost))
        log "writer $n lost $lost: $(comm -23 "$copy.ids" "$stored" | head -3 | tr '\n' ' ')"
    fi
done
((missing == 0)) || fail "$missing stored events missing"
total=$(wc -l <"$stored")
sent=$(cat "$TEST_DIR"/copy-*.jsonl | wc -l)
log "$total events stored, once each, of $sent sent by $((WRITERS + 2)) writers (${#killed[@]} killed)"
((total >= WRITERS * 10 * (SECONDS_RUN / 2))) || fail "only $total events: the writers did not keep up"

# read back as one workflow: the tasks of every host (a writer killed
# before its first event was stored, as can happen while 64 start at once,
# left no job)
jobs=$(for f in "$STORE"/*.pano.sqlite; do
    sqlite3 "file:$f?mode=ro" "SELECT DISTINCT dag_job_id FROM events WHERE dag_job_id IS NOT NULL"
done | sort -u | wc -l)
((jobs >= WRITERS + 2 - ${#killed[@]})) || fail "the events of $jobs jobs stored, of $((WRITERS + 2))"
"$QUERY" status "$WF" --json >"$TEST_DIR/status.json" 2>>"$TEST_DIR/query.log" || fail "status after"
jq -e --argjson n "$jobs" '.jobs.total == $n' "$TEST_DIR/status.json" >/dev/null ||
    fail "status: $(jq -c .jobs "$TEST_DIR/status.json"), not the $jobs jobs stored"
"$QUERY" jobs "$WF" --json | jq -e '[.jobs[] | select(.dag_job_id | startswith("remote_")) | .host] | sort == ["node-b", "node-c"]' >/dev/null ||
    fail "the other hosts' tasks: $("$QUERY" jobs "$WF" --tsv | grep remote_)"
grep -h "ERROR" "$TEST_DIR"/monitor-*.log | grep -v "Killed" | head -3 | grep . &&
    fail "a writer reported errors"
stop_all
