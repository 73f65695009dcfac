#!/usr/bin/env bash
# 1,000 malformed messages mixed into 20,000 valid events: bad JSON, invalid
# UTF-8, missing wf_uuid, wrong types, nesting 10,000 deep, not an object, a
# bad event name and a 10 MB body. Each one lands in the dead-letter topic
# with its reason, routing key and original bytes (the 10 MB one cut at the
# size limit); every valid event is delivered; the bridge never stops.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers

N=20000 BAD=1000
start_bridge bridge --set pano.bridge.status_file="$TEST_DIR/bridge.prom"
"$AMQP_LOAD" -n $N -m $BAD --huge 1 -p "$TEST_ID" -w 50 \
    -e kickstart.load.sample,stampede.load.sample,transfer.load.sample,darshan.load.sample,custom.load.sample,load.sample \
    >"$TEST_DIR/load.out" 2>"$TEST_DIR/load.err" || fail "amqp_load: $(cat "$TEST_DIR/load.out" "$TEST_DIR/load.err")"
log "$(cat "$TEST_DIR/load.out")"

wait_delivered 240 "$TEST_ID" $N || fail "not all delivered: $(queue_ready "$PANO_BRIDGE_QUEUE") waiting in the queue"
dead_keys() { topic_records "$PANO_KAFKA_DEAD_LETTER_TOPIC" '%k\n' | sort -u | grep -c '^malformed\.' || true; }
wait_until 60 bash -c "[[ \$(kcat -C -b '$KAFKA' -t '$PANO_KAFKA_DEAD_LETTER_TOPIC' -o beginning -e -q -f '%k\n' | sort -u | grep -c '^malformed\.') -ge $BAD ]]" ||
    fail "$(dead_keys) of $BAD malformed messages in the dead-letter topic"
log "delivered: $(check_all_delivered "$TEST_ID" $N)"

# key|headers|size of every dead letter
dead=$(topic_records "$PANO_KAFKA_DEAD_LETTER_TOPIC" '%k|%h|%S\n')
keys=$(cut -d'|' -f1 <<<"$dead" | sort -u | grep -c '^malformed\.' || true)
((keys == BAD)) || fail "$keys of $BAD malformed messages in the dead-letter topic"

expect() { # KIND REASON-REGEX
    local kind=$1 re=$2 n bad
    n=$(grep -c "^malformed\.$kind\." <<<"$dead" || true)
    ((n > 0)) || fail "no dead letter of kind $kind"
    bad=$(grep "^malformed\.$kind\." <<<"$dead" | grep -v -E "\|reason=$re," | head -2 || true)
    [[ -z $bad ]] || fail "kind $kind: wrong reason: $bad"
    log "$n x $kind: ${re//\\/}"
}
expect bad_json "invalid JSON: parse error: premature EOF"
expect bad_utf8 "invalid UTF-8 at byte [0-9]+"
expect no_wf_uuid "missing required field 'wf_uuid'"
expect wrong_types "'seq' must be an integer"
expect deep "invalid JSON: nested deeper than 64 levels"
expect not_object "the event must be an object"
expect bad_event_name "'event' does not match the pattern .*"
expect huge "message too large \(10485760 bytes, limit 1024000\)"
grep "^malformed\.huge\." <<<"$dead" | grep -q "original_size=10485760,truncated=true|1024000$" ||
    fail "the 10 MB message was not cut at the limit: $(grep '^malformed\.huge\.' <<<"$dead" | cut -c1-300)"
grep -q "routing_key=malformed\.bad_json\.7,exchange=$TEST_ID," <<<"$dead" ||
    fail "routing key or exchange missing from the dead-letter headers"

# Original bytes: a bad-JSON body comes back as it was sent.
body=$(kcat -C -b "$KAFKA" -t "$PANO_KAFKA_DEAD_LETTER_TOPIC" -o beginning -e -q -f '%k %s\n' |
    grep '^malformed\.bad_json\.7 ' | head -1 | cut -d' ' -f2-)
[[ $body =~ ^\{\"event\":\"malformed\.bad_json\",\"ts\":1\.5,\"wf_uuid\":\"[0-9a-f-]{36}\",$ ]] ||
    fail "dead letter body is not the original: $body"

# The status file counts them.
wait_until 10 grep -q "^pano_bridge_messages_dead_lettered_total $BAD$" "$TEST_DIR/bridge.prom" ||
    fail "status file: $(grep dead_lettered "$TEST_DIR/bridge.prom")"
grep -q '^pano_bridge_events_produced_total{family="custom"} [1-9]' "$TEST_DIR/bridge.prom" ||
    fail "status file has no per-family counts"
stop_all
log "PASS"
