#!/usr/bin/env bash
# Delivery when the broker goes away: a private RabbitMQ node is stopped
# while pano-monitor runs and started again; every event must arrive, in
# order, none twice. Then what one process spooled is replayed by the next
# pano-monitor on the node, and by pano-emit --flush-spool.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"

private_rabbitmq_start
export PANO_AMQP_URL=$PRIVATE_URL PANO_AMQP_TIMEOUT=3
queue_setup "$PRIVATE_URL"
spooled() { find "$PANO_SPOOL_DIR" -name '*.ev' 2>/dev/null | wc -l; }
spooled_at_least() { (($(spooled) >= $1)); }
spool_empty() { (($(spooled) == 0)); }

# ---- the broker stops mid-run and comes back
"$MONITOR" -i 0.1 --log-level debug -- "$WORKLOAD" wait-signal 300 >"$TEST_DIR/task.out" \
    2>"$TEST_DIR/monitor.log" &
mon=$!
PIDS+=("$mon")
wait_until 30 grep -q ready "$TEST_DIR/task.out" || fail "the task did not start"
sleep 1 # a few samples go out while the broker is up
private_rabbitmq_stop
wait_until 30 spooled_at_least 10 || fail "nothing spooled while the broker is down"
log "$(spooled) events spooled while the broker is down"
private_rabbitmq_start
# The monitor replays on its own once the broker is back (backoff <= 15 s).
wait_until 60 spool_empty || fail "the monitor did not replay its spool ($(spooled) left)"
log "spool replayed by the monitor itself"
kill -USR1 "$mon"
rc=0
wait "$mon" || rc=$?
[[ $rc == $((100 + 10)) ]] || fail "pano-monitor exited $rc, expected 110 (task got SIGUSR1)"
drain "$TEST_DIR/run1.events" "$PRIVATE_URL"
ev=$TEST_DIR/run1.events
n=$(wc -l <"$ev")
# Publishing is at least once: an event the broker stored while it was
# shutting down, but never confirmed, is sent again after the restart. Such a
# copy is the same event (same event_id, same bytes), which the indexer
# stores once (_id = event_id): by event_id, every seq must arrive exactly
# once, in order, and copies must be rare (at most one per outage).
missing=$(jqf "$ev" '[.[] | .seq] as $s | [range(1; ($s | max) + 1)] - $s | map(tostring) | join(" ")')
twice=$(jqf "$ev" 'unique_by(.event_id) | [.[] | .seq] | group_by(.) | map(select(length > 1) | .[0] | tostring) | join(" ")')
[[ -z $missing && -z $twice ]] || fail "seq missing: [$missing], twice under different ids: [$twice] (of $n events)"
expect "$ev" 'group_by(.event_id) | all(unique | length == 1)' "copies of an event differ"
copies=$(jqf "$ev" 'length - (unique_by(.event_id) | length)')
((copies <= 1)) || fail "$copies events were delivered twice for one outage"
expect "$ev" '[reduce .[] as $e ({seen: {}, seqs: []};
              if .seen[$e.event_id] then . else .seen[$e.event_id] = true | .seqs += [$e.seq] end)
              | .seqs[]] == [range(1; (map(.seq) | max) + 1)]' "events arrived out of order"
expect "$ev" 'max_by(.seq) | .event == "kickstart.inv.end" and .exitcode == 110' "the last event is the end"
expect "$ev" '[.[] | select(.event == "kickstart.inv.online")] | length >= 30' "online samples"
grep -q "kept in spool" "$TEST_DIR/monitor.log" || fail "the monitor did not say it spooled"
log "broker restart: all $((n - copies)) events arrived, in order ($copies resent copy of an event stored but not confirmed before the stop)"

# ---- the next pano-monitor on the node replays what an earlier one left
private_rabbitmq_stop
"$MONITOR" -i 1 -- "$WORKLOAD" exit 0 2>"$TEST_DIR/monitor2.log" || fail "monitor 2 failed"
left=$(spooled)
((left == 4)) || fail "expected the 4 events of the first run in the spool, found $left"
grep -q "undelivered events stay in spool" "$TEST_DIR/monitor2.log" || fail "no warning about the spool"
private_rabbitmq_start
"$MONITOR" -i 1 -- "$WORKLOAD" exit 0 2>"$TEST_DIR/monitor3.log" || fail "monitor 3 failed"
spool_empty || fail "monitor 3 did not replay the spool"
drain "$TEST_DIR/run2.events" "$PRIVATE_URL"
ev=$TEST_DIR/run2.events
expect "$ev" 'length == 8' "expected 8 events (4 replayed, 4 new)"
# The replayed ones come first, with their own ids and seq.
expect "$ev" '[.[0:4][] | .event_id | split("-")[0]] | unique | length == 1' "replayed batch"
expect "$ev" '(.[0].event_id | split("-")[0]) != (.[4].event_id | split("-")[0])' "two sources"
expect "$ev" '[.[] | .seq] == [1,2,3,4,1,2,3,4]' "order of the replayed and new events"
log "the next monitor replayed the spool first"

# ---- pano-emit --flush-spool
private_rabbitmq_stop
"$EMIT" --tag run=3 flushed.metric 42 2>"$TEST_DIR/emit.log" || fail "pano-emit failed with the broker down"
((($(spooled)) == 1)) || fail "pano-emit did not spool its event"
private_rabbitmq_start
"$EMIT" --flush-spool 2>"$TEST_DIR/flush.log" || fail "pano-emit --flush-spool failed: $(cat "$TEST_DIR/flush.log")"
grep -q "1 spooled event(s) delivered" "$TEST_DIR/flush.log" || fail "flush: $(cat "$TEST_DIR/flush.log")"
drain "$TEST_DIR/run3.events" "$PRIVATE_URL"
expect "$TEST_DIR/run3.events" 'length == 1 and .[0].event == "custom.metric" and .[0].value == 42
                                and .[0].tags.run == "3"' "the flushed metric"
log "pano-emit --flush-spool delivered the spooled metric"
no_sanitizer_reports
log "PASS"
