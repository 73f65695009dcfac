#!/usr/bin/env bash
# pano-monitor's network bytes (bsend, brecv), against byte counts known by
# hand (no service: events into a file). The method's rules
# (schemas/events/kickstart.inv.online.schema.json, docs/monitor.md):
#   sock_diag  TCP payload acknowledged / received, both ends of a loopback
#              connection (both are the task's), a connection's SYN and FIN
#              one byte each: a transfer of B bytes one way and B/2 back is
#              1.5 B sent and 1.5 B received, plus at most 4;
#   netns      the namespace's interfaces' counters: loopback's, both ways,
#              headers included: at least the payload, and at most 5 % more.
# The monitor reads them every pano.monitor.net_period at most (here 1 s:
# every other sample at -i 0.5) and in the last sample; each workload holds
# its sockets 3 s, and lives 3 s after closing them.
# Cases:
#   - IPv4 and IPv6, client and accepted server socket, held over samples,
#     then closed before the task ends: the end keeps their figures;
#   - a socket inherited across fork and exec, held by the child alone;
#   - a connection opened and closed between two samples: not counted;
#   - UDP in the monitor's namespace: not counted;
#   - a task in a network namespace of its own (unshare -rn), when this
#     kernel lets users create one: TCP, and UDP too.
source "$(dirname "$0")/lib.sh"
MONITOR=$PANO_BUILD/publishers/monitor/pano-monitor
W=$PANO_BUILD/tests/integration/pano-workload
export PANO_AMQP_URL= PANO_STORE= PEGASUS_WF_UUID=$(cat /proc/sys/kernel/random/uuid)
B=1000000

run() { # NAME MONITOR-ARGS... -- TASK...
    local name=$1
    shift
    PANO_OUTPUT=$TEST_DIR/$name.jsonl "$MONITOR" "$@" >"$TEST_DIR/$name.out" 2>"$TEST_DIR/$name.log" ||
        fail "$name: pano-monitor exited $?: $(tail -3 "$TEST_DIR/$name.log")"
}
samples() { jq -s -c "[.[] | select(.event == \"kickstart.inv.online\") | $2]" "$TEST_DIR/$1.jsonl"; }
final() { jq -r "select(.event == \"kickstart.inv.end\") | .final.$2" "$TEST_DIR/$1.jsonl"; }
within() { # NAME FIELD LOW HIGH
    local v
    v=$(final "$1" "$2")
    ((v >= $3 && v <= $4)) || fail "$1: the end's $2 is $v bytes, not in [$3, $4]"
}
sock_diag_case() { # NAME PAYLOAD: figures in the end and in the samples
    local name=$1 payload=$2
    within "$name" bsend "$payload" $((payload + 4))
    within "$name" brecv "$payload" $((payload + 4))
    [[ $(final "$name" net_method) == sock_diag ]] ||
        fail "$name: net_method is $(final "$name" net_method)"
    jq -e '. == sort and .[-1] >= '"$payload" <<<"$(samples "$name" .bsend)" >/dev/null ||
        fail "$name: bsend of the samples: $(samples "$name" .bsend)"
    jq -e 'all(.[]; . == "sock_diag")' <<<"$(samples "$name" .net_method)" >/dev/null ||
        fail "$name: net_method of the samples: $(samples "$name" .net_method)"
}

# ---- both ends of a loopback connection, held over samples, then closed
for family in 4 6; do
    run "tcp$family" -i 0.5 --set pano.monitor.net_period=1 -- "$W" tcp "$family" "$B" 3
    sent=$(jq -r .sent "$TEST_DIR/tcp$family.out")
    ((sent == B + B / 2)) || fail "tcp$family: the workload sent $sent bytes"
    sock_diag_case "tcp$family" "$sent"
    # the samples while the connection is open count it; those after the
    # close, taken while the task still runs, keep its figures
    jq -e "[.[] | select(.[0] >= $sent and .[1] == 1)] | length >= 2" \
        <<<"$(samples "tcp$family" "[.bsend, .procs]")" >/dev/null ||
        fail "tcp$family: fewer than 2 samples of the live task count its $sent bytes"
done

# ---- a socket inherited across fork and exec, then held by the child alone
run exec -i 0.5 --set pano.monitor.net_period=1 -- "$W" tcp-exec 4 "$B" 3
got=$(jq -r .received "$TEST_DIR/exec.out")
((got == B)) || fail "exec: the server end read $got bytes"
sock_diag_case exec "$B"

# ---- opened and closed between two samples (at start and at exit): unseen
run brief -i 5 -- bash -c "sleep 0.5; '$W' tcp 4 $B 0 >/dev/null; sleep 0.5"
[[ $(final brief bsend) == 0 && $(final brief brecv) == 0 ]] ||
    fail "brief: a connection no sample saw counts $(final brief bsend) / $(final brief brecv)"

# ---- UDP in the monitor's namespace: no byte counts to read
run udp -i 0.5 --set pano.monitor.net_period=1 -- "$W" udp "$B" 1.5
[[ $(final udp bsend) == 0 && $(final udp brecv) == 0 && $(final udp net_method) == sock_diag ]] ||
    fail "udp: $(final udp bsend) / $(final udp brecv) bytes by $(final udp net_method), not 0 by sock_diag"

# ---- a network namespace of its own: its interfaces' counters
if unshare -rn true 2>/dev/null; then
    run netns -i 0.5 --set pano.monitor.net_period=1 -- unshare -rn bash -c "'$W' lo-up && '$W' tcp 4 $B 3"
    payload=$((B + B / 2))
    within netns bsend "$payload" $((payload + payload / 20))
    [[ $(final netns bsend) == $(final netns brecv) ]] ||
        fail "netns: loopback sent $(final netns bsend) and received $(final netns brecv)"
    [[ $(final netns net_method) == *netns* ]] || fail "netns: net_method is $(final netns net_method)"
    # UDP too: 1,000 datagrams of 1,000 bytes, each with 28 bytes of headers
    run netns_udp -i 0.5 --set pano.monitor.net_period=1 -- unshare -rn bash -c "'$W' lo-up && '$W' udp $B 1.5"
    within netns_udp bsend "$B" $((B + B / 20))
    [[ $(final netns_udp bsend) == $(final netns_udp brecv) ]] ||
        fail "netns_udp: loopback sent $(final netns_udp bsend) and received $(final netns_udp brecv)"
    netns="netns $(final netns bsend)"
else
    netns="netns skipped (this kernel does not let users create network namespaces)"
    log "$netns"
fi
log "tcp4 $(final tcp4 bsend)/$(final tcp4 brecv), tcp6 $(final tcp6 bsend), exec $(final exec bsend), brief 0, $netns"
