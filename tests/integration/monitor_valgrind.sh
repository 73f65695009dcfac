#!/usr/bin/env bash
# pano-monitor under valgrind (memcheck, full leak check): a monitor wraps a
# task for hours, so what it does per sample and per payload block must not
# leak. A task of a process tree sampled every 0.1 s, MONITORING_PAYLOAD
# blocks (one invalid) and a failing exit; then the broker unreachable (the
# events spooled) and the spool replayed by pano-emit --flush-spool, also
# under valgrind. Each must behave as without valgrind and report no memory
# error and no leak. Skipped in sanitizer builds.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"
require_rabbitmq
require_valgrind "$MONITOR"
queue_setup
# The task itself is not traced (no --trace-children). It lasts 2.5 s or
# more: at least 5 samples however slowly valgrind lets the monitor start.
rc=0
"${VALGRIND[@]}" "$MONITOR" -i 0.1 --log-level error -- \
    sh -c '"$1" tree 3 1 >/dev/null && sleep 1.5 && "$1" payload && exit 3' sh "$WORKLOAD" \
    >"$TEST_DIR/task.out" 2>"$TEST_DIR/task.err" || rc=$?
((rc == 3)) || fail "the monitor exited $rc, not with the task's status 3"
drain "$TEST_DIR/run.events"
check_schema "$TEST_DIR/run.events"
expect "$TEST_DIR/run.events" '[.[] | select(.event == "kickstart.inv.online")] | length >= 5' "online samples"
expect "$TEST_DIR/run.events" '[.[] | select(.event == "custom.payload_test")] | length == 2' "payload events"
expect "$TEST_DIR/run.events" '[.[] | select(.event == "kickstart.payload.error")] | length == 1' "payload error"
expect "$TEST_DIR/run.events" '.[] | select(.event == "kickstart.inv.end") | .exitcode == 3' "the end event"
log "$(jq -s length "$TEST_DIR/run.events") events published under valgrind"

# The broker unreachable: every event into the spool. The monitor reaches
# RabbitMQ through a TCP relay (socat) on a port of its own, started only
# for the replay (the spool keeps events for the broker they were meant for).
RELAY_PORT=$(free_ports 1)
RELAY_URL=${PANO_AMQP_URL/:$AMQP_PORT\//:$RELAY_PORT/}
rc=0
PANO_AMQP_URL=$RELAY_URL "${VALGRIND[@]}" "$MONITOR" -i 0.1 --log-level error -- "$WORKLOAD" sleep 1 \
    2>"$TEST_DIR/spooling.err" || rc=$?
((rc == 0)) || fail "the monitor exited $rc with the broker unreachable: $(cat "$TEST_DIR/spooling.err")"
spooled=$(find "$PANO_SPOOL_DIR" -name '*.ev' | wc -l)
((spooled >= 5)) || fail "expected the run's events in the spool, found $spooled"
relay_up "$RELAY_PORT" "$AMQP_PORT"
PANO_AMQP_URL=$RELAY_URL "${VALGRIND[@]}" "$EMIT" --flush-spool 2>"$TEST_DIR/flush.log" ||
    fail "pano-emit --flush-spool failed: $(cat "$TEST_DIR/flush.log")"
grep -q "$spooled spooled event(s) delivered" "$TEST_DIR/flush.log" || fail "flush: $(cat "$TEST_DIR/flush.log")"
drain "$TEST_DIR/replayed.events"
expect "$TEST_DIR/replayed.events" "length == $spooled and any(.event == \"kickstart.inv.end\")" \
    "the spool replayed"
log "$spooled spooled events replayed under valgrind"
log "PASS"
