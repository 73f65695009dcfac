#!/usr/bin/env bash
# pano-monitor as a wrapper: exit codes and signals pass through, signals
# sent to the monitor reach the task, stdin/stdout/stderr are the task's,
# a broker that is down or a bad configuration never fail the job, and
# every MPI rank gets its own events.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"
require_rabbitmq
queue_setup

# ---- exit codes and deaths by signal
for code in 0 1 3 42 255; do
    rc=0
    "$MONITOR" -- "$WORKLOAD" exit $code 2>>"$TEST_DIR/monitor.log" || rc=$?
    [[ $rc == "$code" ]] || fail "exit $code: pano-monitor exited $rc"
done
for sig in 9 15 11 6; do
    rc=0
    "$MONITOR" -- "$WORKLOAD" kill $sig 2>>"$TEST_DIR/monitor.log" || rc=$?
    [[ $rc == $((128 + sig)) ]] || fail "signal $sig: pano-monitor exited $rc, expected $((128 + sig))"
done
rc=0
"$MONITOR" -- /nonexistent/command 2>>"$TEST_DIR/monitor.log" || rc=$?
[[ $rc == 127 ]] || fail "a missing command: exit $rc, expected 127"
drain "$TEST_DIR/codes.events"
ev=$TEST_DIR/codes.events
expect "$ev" '[.[] | select(.event=="kickstart.inv.end") | .exitcode] == [0,1,3,42,255,137,143,139,134,127]' \
    "exit codes in the end events"
expect "$ev" '[.[] | select(.event=="kickstart.inv.end" and .signal > 0) | .signal] == [9,15,11,6]' \
    "signals in the end events"
expect "$ev" '[.[] | select(.event=="kickstart.inv.end" and .exitcode == 127)][0].error | test("No such file")' \
    "the error of a missing command"
log "exit codes and signals pass through"

# ---- signals sent to the monitor reach the task
for sig in TERM HUP USR1 USR2 QUIT INT; do
    # A non-interactive shell starts background jobs with SIGINT and SIGQUIT
    # ignored; setsid gives the monitor default dispositions, as under a
    # batch system.
    # (A file per signal: the shell truncates it only when the job starts.)
    setsid "$MONITOR" -- "$WORKLOAD" wait-signal 60 >"$TEST_DIR/sig-$sig.out" 2>>"$TEST_DIR/monitor.log" &
    mon=$!
    wait_until 30 grep -q ready "$TEST_DIR/sig-$sig.out" || fail "SIG$sig: the task did not start"
    kill -s "$sig" "$mon"
    rc=0
    wait "$mon" || rc=$?
    num=$(kill -l "$sig")
    [[ $rc == $((100 + num)) ]] || fail "SIG$sig: exit $rc, the task did not get it (expected $((100 + num)))"
done
drain "$TEST_DIR/signals.events"
log "SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT and SIGINT reach the task"

# ---- stdin, stdout and stderr are the task's, byte for byte
head -c 3000000 /dev/urandom >"$TEST_DIR/random"
"$MONITOR" -- cat <"$TEST_DIR/random" >"$TEST_DIR/copy" 2>>"$TEST_DIR/monitor.log" ||
    fail "cat under the monitor failed"
cmp -s "$TEST_DIR/random" "$TEST_DIR/copy" || fail "stdin -> stdout is not byte for byte"
"$MONITOR" -- sh -c 'cat >&2' <"$TEST_DIR/random" 2>"$TEST_DIR/copy2" >/dev/null ||
    fail "cat >&2 under the monitor failed"
# stderr also carries the monitor's own log lines (none at this level).
cmp -s "$TEST_DIR/random" "$TEST_DIR/copy2" || fail "stdin -> stderr is not byte for byte"
# A reader that goes away: the task gets EPIPE/SIGPIPE as it would without us.
rc=0
"$MONITOR" -- sh -c 'yes | head -c 100000000' 2>>"$TEST_DIR/monitor.log" | head -c 10 >/dev/null || rc=$?
# (rc is head's.) The monitor must not hang: reaching this line is the test.
# A daemon that writes after the task exited: its output still arrives (a
# relay process takes over the pipes after the linger time).
"$MONITOR" --set pano.monitor.linger=0.3 -- sh -c '(sleep 1; echo late; echo late2 >&2) & echo early' \
    >"$TEST_DIR/late.out" 2>"$TEST_DIR/late.err" || fail "late output: monitor failed"
wait_until 30 grep -q late2 "$TEST_DIR/late.err" || fail "late output on stderr lost"
[[ $(cat "$TEST_DIR/late.out") == $'early\nlate' ]] || fail "late output: $(cat "$TEST_DIR/late.out")"
drain "$TEST_DIR/stdio.events"
expect "$TEST_DIR/stdio.events" '[.[] | select(.event=="kickstart.inv.end")][-1].final.procs == 2' \
    "the daemon counts in the final sample, the relay does not"
log "stdio passes through byte for byte, late output included"

# ---- the broker is down or the configuration is partly wrong: the task runs
start=$SECONDS
rc=0
PANO_AMQP_URL="amqp://guest:guest@127.0.0.1:1/%2F/x" "$MONITOR" -i 0.1 -- "$WORKLOAD" exit 5 \
    2>"$TEST_DIR/down.log" || rc=$?
[[ $rc == 5 ]] || fail "broker down: exit $rc"
((SECONDS - start < 20)) || fail "broker down: took $((SECONDS - start)) s"
grep -q "spool" "$TEST_DIR/down.log" || fail "broker down: no word about the spool"
rc=0
PANO_AMQP_URL="not a url" "$MONITOR" --interval=-4 --level x --bogus-option -- "$WORKLOAD" exit 6 \
    2>"$TEST_DIR/bad.log" || rc=$?
[[ $rc == 6 ]] || fail "bad configuration: exit $rc"
grep -q "pano.monitor.interval" "$TEST_DIR/bad.log" || fail "bad interval not reported"
rc=0
PANO_AMQP_HEARTBEAT=often KICKSTART_MON_INTERVAL=0.01 "$MONITOR" -- "$WORKLOAD" exit 7 \
    2>"$TEST_DIR/badenv.log" || rc=$?
[[ $rc == 7 ]] || fail "bad environment: exit $rc"
# Kickstart's file:// form of KICKSTART_MON_URL: JSON lines to that file.
env -u PANO_AMQP_URL KICKSTART_MON_URL="file://$TEST_DIR/km.jsonl" "$MONITOR" -- "$WORKLOAD" exit 0 ||
    fail "file:// URL: monitor failed"
expect "$TEST_DIR/km.jsonl" 'map(.event) == ["kickstart.inv.start", "kickstart.inv.online",
    "kickstart.inv.online", "kickstart.inv.end"]' "file:// URL: events"
drain "$TEST_DIR/config.events"
log "the task runs whatever the broker and the configuration"

# ---- MPI: every rank its own events, with its rank
for r in 0 1 2 3; do
    OMPI_COMM_WORLD_RANK=$r "$MONITOR" -i 0.2 -- "$WORKLOAD" sleep 0.3 2>>"$TEST_DIR/monitor.log" &
    PIDS+=($!)
done
for r in 0 1 2 3; do wait "${PIDS[-1 - r]}" || fail "rank monitor failed"; done
PIDS=()
PMI_RANK=7 "$MONITOR" -- "$WORKLOAD" exit 0 2>>"$TEST_DIR/monitor.log"
SLURM_PROCID=9 "$MONITOR" -- "$WORKLOAD" exit 0 2>>"$TEST_DIR/monitor.log"
drain "$TEST_DIR/mpi.events"
ev=$TEST_DIR/mpi.events
expect "$ev" '[.[] | select(.event=="kickstart.inv.end") | .rank] | sort == [0,1,2,3,7,9]' "ranks"
expect "$ev" '[.[] | .rank] | all(. != null)' "every event has a rank"
expect "$ev" 'group_by(.event_id | split("-")[0]) | length == 6 and
              all(map(.seq) | sort == [range(1; length + 1)])' "each rank its own source and seq"
log "MPI ranks"
no_sanitizer_reports
log "PASS"
