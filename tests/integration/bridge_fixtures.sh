#!/usr/bin/env bash
# The Pegasus samples in tests/data/events pass through pano-bridge,
# normalized, on a queue bound with Panorama's keys (kickstart.#, stampede.#,
# transfer.#): stampede events get wf_uuid from xwf_id and a deterministic
# event_id, the kickstart management-API body is unwrapped, every record is
# keyed by its wf_uuid. The two 2012 stampede.static.* samples carry no
# workflow id at all, so they go to the dead-letter topic.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bridge_lib.sh"
require_brokers

export PANO_BRIDGE_BINDINGS="kickstart.#,stampede.#,transfer.#"
start_bridge bridge

URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f"
sent=0
for f in "$PANO_FIXTURES"/events/stampede.*.json "$PANO_FIXTURES"/events/transfer.*.json \
    "$PANO_FIXTURES"/events/kickstart.inv.online*.json; do
    key=$(jq -r '.event // .routing_key' "$f")
    amqp-publish -u "$URL" -e "$TEST_ID" -r "$key" -p -C application/json -b "$(cat "$f")" ||
        fail "cannot publish $f"
    sent=$((sent + 1))
done
# Not bound with Panorama's keys: never reaches the bridge.
amqp-publish -u "$URL" -e "$TEST_ID" -r custom.unbound -p \
    -b '{"event":"custom.unbound","ts":1,"wf_uuid":"w","event_id":"u"}'
log "published $sent samples"

count() { topic_records "$PANO_KAFKA_TOPIC_PREFIX$1" '%o\n' | grep -c . || true; }
dead_count() { topic_records "$PANO_KAFKA_DEAD_LETTER_TOPIC" '%o\n' | grep -c . || true; }
all_there() {
    [[ $(count stampede) == 24 && $(count transfer) == 2 && $(count kickstart) == 2 &&
        $(dead_count) == 2 ]]
}
wait_until 90 all_there ||
    fail "expected 24 stampede, 2 transfer, 2 kickstart, 2 dead letters; got $(count stampede), $(count transfer), $(count kickstart), $(dead_count)"

# Every record: keyed by its wf_uuid, with a 32-digit event_id when the
# sample had none.
for family in stampede transfer kickstart; do
    while IFS=$'\t' read -r key body; do
        jq -e --arg key "$key" '.wf_uuid == $key and (.event_id | length) == 32' <<<"$body" >/dev/null ||
            fail "$family record not keyed by wf_uuid or without event_id: key $key $body"
    done < <(topic_records "$PANO_KAFKA_TOPIC_PREFIX$family" '%k\t%s\n')
done
stampede=$(topic_records "${PANO_KAFKA_TOPIC_PREFIX}stampede" '%s\n')
# wf_uuid comes from xwf_id (root_xwf_id for the partial composite sample).
jq -e -s 'all(.[]; .wf_uuid == (.xwf_id // .root_xwf_id))' <<<"$stampede" >/dev/null ||
    fail "stampede wf_uuid does not come from xwf_id"
# Every original field is kept with its value (ts stays an integer).
for sample in job_inst.main.end inv.end job.info wf.plan; do
    jq -e -s --slurpfile orig "$PANO_FIXTURES/events/stampede.$sample.json" \
        'map(select(.event == $orig[0].event and .ts == $orig[0].ts))[0] as $rec |
         $orig[0] | to_entries | all(.[]; $rec[.key] == .value)' <<<"$stampede" >/dev/null ||
        fail "stampede.$sample lost or changed fields"
done
# The 4.9.0dev spelling (xwf__id, job_inst__id) is respelled.
jq -e -s 'map(select(.wf_user == "rynge"))[0] | .xwf_id and .job_inst_id == 115 and (has("xwf__id") | not)' \
    <<<"$stampede" >/dev/null || fail "old stampede key spelling not normalized"
# The management-API body was unwrapped.
kick=$(topic_records "${PANO_KAFKA_TOPIC_PREFIX}kickstart" '%s\n')
[[ $(jq -s 'map(select(.event == "kickstart.inv.online" and .pid == 4242 and .rchar == 52428800)) | length' <<<"$kick") == 2 ]] ||
    fail "kickstart samples: $kick"
jq -e -s 'all(.[]; has("payload") | not)' <<<"$kick" >/dev/null || fail "payload not unwrapped"

dead=$(topic_records "$PANO_KAFKA_DEAD_LETTER_TOPIC" '%k|%h\n')
for key in stampede.static.start stampede.static.end; do
    grep -q "^$key|.*reason=missing required field 'wf_uuid'" <<<"$dead" ||
        fail "$key not dead-lettered with its reason: $dead"
done
[[ $(count custom) == 0 ]] || fail "an unbound routing key reached Kafka"

stop_all
grep -q "stopping" "$TEST_DIR/bridge.log" || fail "no drain on SIGTERM"
log "PASS"
