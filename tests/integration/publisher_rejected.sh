#!/usr/bin/env bash
# An event the broker refuses (here: unroutable, as no queue is bound to the
# exchange yet) is not lost: pano-emit and pano-monitor put it aside, with the
# reason, in the spool's rejected/ folder, and it goes out as it was once it
# is moved back into the spool and the spool is flushed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"
require_rabbitmq
rejected() { find "$PANO_SPOOL_DIR" -path '*/rejected/*.ev' | sort; }
body() { sed '1,/^$/d' "$1"; } # an entry's event, after its header

rc=0
"$EMIT" --tag run=1 refused.metric 7 2>"$TEST_DIR/emit.log" || rc=$?
[[ $rc == 1 ]] || fail "pano-emit exited $rc for a refused event, expected 1"
grep -q "no queue is bound.*kept in .*/rejected" "$TEST_DIR/emit.log" ||
    fail "pano-emit did not say why and where: $(cat "$TEST_DIR/emit.log")"
mapfile -t kept < <(rejected)
((${#kept[@]} == 1)) || fail "expected 1 rejected entry, found ${#kept[@]}"
grep -q '^why=.*no queue is bound' "${kept[0]}" || fail "no reason in ${kept[0]}: $(cat "${kept[0]}")"
body "${kept[0]}" | jq -e '.event == "custom.metric" and .value == 7' >/dev/null ||
    fail "the rejected entry does not hold the event: $(cat "${kept[0]}")"
log "pano-emit: the refused event is kept aside with the reason"

"$MONITOR" -i 1 -- "$WORKLOAD" exit 0 >/dev/null 2>"$TEST_DIR/monitor.log" ||
    fail "pano-monitor failed the task: $(cat "$TEST_DIR/monitor.log")"
grep -q "4 refused by the broker (kept aside), 0 lost" "$TEST_DIR/monitor.log" ||
    fail "pano-monitor's summary: $(grep events: "$TEST_DIR/monitor.log")"
mapfile -t kept < <(rejected)
((${#kept[@]} == 5)) || fail "expected 5 rejected entries, found ${#kept[@]}"
log "pano-monitor: its 4 refused events are kept aside too"

# Once the exchange has a queue, moving the entries back queues them again.
ids=$(for f in "${kept[@]}"; do sed -n 's/^id=//p' "$f"; done)
queue_setup
for f in "${kept[@]}"; do mv "$f" "$(dirname "$(dirname "$f")")/"; done
"$EMIT" --flush-spool 2>"$TEST_DIR/flush.log" || fail "pano-emit --flush-spool: $(cat "$TEST_DIR/flush.log")"
grep -q "5 spooled event(s) delivered" "$TEST_DIR/flush.log" || fail "flush: $(cat "$TEST_DIR/flush.log")"
[[ -z $(rejected) ]] || fail "entries left in rejected/"
drain "$TEST_DIR/events"
expect "$TEST_DIR/events" '[.[].event] == ["custom.metric", "kickstart.inv.start", "kickstart.inv.online",
                            "kickstart.inv.online", "kickstart.inv.end"]' "the events, in the order they were refused"
[[ $(jq -r .event_id "$TEST_DIR/events") == "$ids" ]] || fail "the events were not resent with their ids"
log "moved back and flushed, all 5 arrive as they were"
no_sanitizer_reports
log "PASS"
