#!/usr/bin/env bash
# Every message that enters pano can be found in Elasticsearch exactly once,
# indexed or dead-lettered with its reason. Hostile messages published to
# RabbitMQ by an outside client (amqp-publish) go through the real
# pano-bridge and pano-indexer: not JSON, empty, nested 200,000 deep, 5 MB,
# path-like and wildcard wf_uuids, invalid UTF-8, 1e400, duplicate keys,
# 5,000 fields, an unusable ts, no ts, 1,000 copies of one event. Message i is
# published with routing key hostile.k<i> and, where it has one, event_id
# hostile-<i>-<TEST_ID>; each is then found once: as an event (by event_id),
# or as a dead letter (by its routing key or event_id), with a reason.
source "$(dirname "$0")/lib.sh"
require_stack
: "${PANO_SOURCE:?}"

start bridge "$PANO_BUILD/broker-bridge/pano-bridge"
start indexer "$PANO_BUILD/indexer/pano-indexer"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "bridge did not start"

URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f"
WF=$(cat /proc/sys/kernel/random/uuid)
now=$(date +%s)
M=$TEST_DIR/messages
mkdir -p "$M"
event() { # I EXTRA-FIELDS: a valid event of message I, with more fields
    printf '{"event":"custom.hostile","ts":%s,"event_id":"hostile-%s-%s","wf_uuid":"%s"%s}' \
        "$now" "$1" "$TEST_ID" "$WF" "$2"
}
printf 'this is not json' >"$M/1"
: >"$M/2"                                                     # empty
{ head -c 200000 /dev/zero | tr '\0' '['; head -c 200000 /dev/zero | tr '\0' ']'; } >"$M/3"
event 4 ",\"pad\":\"$(head -c 5000000 /dev/zero | tr '\0' 'x')\"" >"$M/4"   # 5 MB
event 5 "" | sed "s/\"wf_uuid\":\"$WF\"/\"wf_uuid\":\"..\/..\/_all\"/" >"$M/5"
event 6 "" | sed "s/\"wf_uuid\":\"$WF\"/\"wf_uuid\":\"pano-*,*\"/" >"$M/6"
{ event 7 ',"note":"'; printf '\xff\xfe bad \xc3\x28'; printf '"}'; } | tr -d '\n' >"$M/7" # invalid UTF-8
event 8 ',"value":1e400' >"$M/8"
event 9 ',"value":1,"value":2' >"$M/9"                        # duplicate keys
{ event 10 ""; } | sed 's/}$//' >"$M/10"
for k in $(seq 5000); do printf ',"f%d":%d' "$k" "$k"; done >>"$M/10"
printf '}' >>"$M/10"                                          # 5,000 fields
event 11 "" | sed "s/\"ts\":$now/\"ts\":\"yesterday\"/" >"$M/11" # unusable ts
event 12 ',"copy":true' >"$M/12"                              # 1,000 copies
event 13 "" | sed "s/\"ts\":$now,//" >"$M/13"                      # no ts at all
N=13

for i in $(seq $N); do
    copies=1
    ((i == 12)) && copies=1000
    for _ in $(seq $copies); do
        amqp-publish -u "$URL" -e "$TEST_ID" -r "hostile.k$i" -p <"$M/$i" ||
            fail "cannot publish message $i"
    done
done
log "published $N hostile messages (the last 1,000 times)"

# where message i is: events and dead letters naming it
found() { # I -> the documents that are message i, as JSON lines
    es -X POST "$ES/$TEST_ID-*/_search" -d '{"size":5,"query":{"bool":{"should":[
        {"term":{"event_id":"hostile-'"$1-$TEST_ID"'"}},{"term":{"routing_key":"hostile.k'"$1"'"}}],
        "minimum_should_match":1}}}' | jq -c '.hits.hits[] | {index: ._index, source: ._source.source,
            reason: ._source.reason, event: ._source.event, ts_source: ._source.ts_source,
            original_size: ._source.original_size, truncated: ._source.truncated}'
}
all_found() {
    es -X POST "$ES/$TEST_ID-*/_refresh" >/dev/null
    local i
    for i in $(seq $N); do [[ -n $(found "$i") ]] || return 1; done
}
wait_until 120 all_found || {
    for i in $(seq $N); do [[ -n $(found "$i") ]] || log "message $i not found"; done
    fail "not every message is in Elasticsearch"
}
sleep 3 # time for a second copy of anything to show
es -X POST "$ES/$TEST_ID-*/_refresh" >/dev/null
for i in $(seq $N); do
    docs=$(found "$i")
    [[ $(wc -l <<<"$docs") == 1 ]] || fail "message $i is there $(wc -l <<<"$docs") times: $docs"
    if jq -e '.index | test("-dead-letter-")' <<<"$docs" >/dev/null; then
        jq -e '.reason | length > 0' <<<"$docs" >/dev/null || fail "message $i dead-lettered without a reason"
        log "message $i: dead letter ($(jq -r '.source + ": " + .reason' <<<"$docs" | head -c 120))"
    else
        log "message $i: indexed in $(jq -r .index <<<"$docs")"
    fi
done
# a few outcomes that matter
jq -e '.truncated == true and .original_size > 5000000' <<<"$(found 4)" >/dev/null ||
    fail "the 5 MB message's dead letter does not say it was cut: $(found 4)"
jq -e '.reason | test("out of range")' <<<"$(found 8)" >/dev/null || fail "1e400: $(found 8)"
jq -e '.reason | test("duplicate")' <<<"$(found 9)" >/dev/null || fail "duplicate keys: $(found 9)"
jq -e '.index | test("-unassigned-")' <<<"$(found 5)" >/dev/null || fail "the path-like wf_uuid: $(found 5)"
jq -e '.index | test("-unassigned-")' <<<"$(found 6)" >/dev/null || fail "the wildcard wf_uuid: $(found 6)"
jq -e '.reason | test("ts")' <<<"$(found 11)" >/dev/null || fail "the unusable ts: $(found 11)"
jq -e '.ts_source == "received"' <<<"$(found 13)" >/dev/null || fail "no ts: not stamped when received: $(found 13)"
stop_all # both daemons survived, and stop cleanly
log "PASS: each of $N hostile messages is in Elasticsearch once"
