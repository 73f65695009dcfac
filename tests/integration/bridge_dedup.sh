#!/usr/bin/env bash
# Copies of events whose Kafka delivery the bridge saw confirmed are acked and
# skipped (pano.bridge.dedup_window), as a publisher's resends after a lost
# connection are:
#   1. one event published twice, the copy after the original was acked:
#      Kafka holds it once, pano_bridge_duplicates_skipped_total is 1;
#   2. 2,000 events published, then all of them again: each once in Kafka,
#      2,000 more skipped;
#   3. the window belongs to the process: a new bridge produces a copy again
#      (Elasticsearch's _id = event_id still stores it once).
# bridge_dedup_restart does the same across a RabbitMQ restart.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers

copies() { family_event_ids | grep -c "^$1\$" || true; }
URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f"
body="{\"event\":\"kickstart.load.sample\",\"ts\":1700000000.25,\"event_id\":\"$TEST_ID-once\",\"seq\":1,\"hostname\":\"h\",\"wf_uuid\":\"$TEST_ID-wf\"}"
publish_once() {
    amqp-publish -u "$URL" -e "$TEST_ID" -r kickstart.load.sample -p -b "$body" ||
        fail "cannot publish"
}

start_bridge bridge --set pano.bridge.status_file="$STATUS" --set pano.bridge.stats_interval=0.2
grep -q "skipping copies of the last 100000 events Kafka confirmed ([0-9.]* MB)" "$TEST_DIR/bridge.log" ||
    fail "the window and its memory are not in the log"

# 1. One copy.
publish_once
wait_until 30 at_least pano_bridge_messages_acked_total 1 || fail "the event was not acked"
publish_once
wait_until 30 at_least pano_bridge_messages_acked_total 2 || fail "the copy was not acked"
[[ $(m pano_bridge_duplicates_skipped_total) == 1 ]] ||
    fail "duplicates skipped: $(m pano_bridge_duplicates_skipped_total), expected 1"
[[ $(copies "$TEST_ID-once") == 1 ]] || fail "Kafka holds the event $(copies "$TEST_ID-once") times"
[[ $(m pano_bridge_dedup_window_ids) == 1 ]] || fail "window: $(m pano_bridge_dedup_window_ids) ids"
log "one event published twice: once in Kafka, one copy skipped"

# 2. A whole batch again.
"$AMQP_LOAD" -n 2000 -p "$TEST_ID-b" >"$TEST_DIR/load1.out" || fail "amqp_load: $(cat "$TEST_DIR/load1.out")"
wait_until 60 at_least pano_bridge_messages_acked_total 2002 || fail "the batch was not acked"
"$AMQP_LOAD" -n 2000 -p "$TEST_ID-b" >"$TEST_DIR/load2.out" || fail "amqp_load: $(cat "$TEST_DIR/load2.out")"
wait_until 60 at_least pano_bridge_messages_acked_total 4002 || fail "the copies were not acked"
[[ $(m pano_bridge_duplicates_skipped_total) == 2001 ]] ||
    fail "duplicates skipped: $(m pano_bridge_duplicates_skipped_total), expected 2001"
counts=$(check_all_delivered "$TEST_ID-b" 2000)
[[ $counts == "distinct 2000 total 2000" ]] || fail "Kafka: $counts"
[[ $(m pano_bridge_dedup_window_ids) == 2001 ]] || fail "window: $(m pano_bridge_dedup_window_ids) ids"
grep -q "duplicates skipped 2001" "$TEST_DIR/bridge.log" || fail "no count in the stats line"
log "2,000 events published twice: $counts, 2,000 copies skipped"
stop_all

# 3. A new process starts with an empty window.
STATUS=$TEST_DIR/bridge2.prom
start_bridge bridge2 --set pano.bridge.status_file="$STATUS" --set pano.bridge.stats_interval=0.2
publish_once
wait_until 30 at_least pano_bridge_messages_acked_total 1 || fail "the event was not acked"
[[ $(m pano_bridge_duplicates_skipped_total) == 0 ]] || fail "a new bridge skipped a copy"
[[ $(copies "$TEST_ID-once") == 2 ]] ||
    fail "Kafka holds the event $(copies "$TEST_ID-once") times after a new bridge took a copy"
stop_all
log "PASS"
