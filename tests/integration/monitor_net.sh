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
source "$(dirname "$0")/monitor_lib.sh"
W=$PANO_BUILD/tests/integration/pano-workload
B=1000000

within() { # NAME FIELD LOW HIGH
    local v
    v=$(file_final "$1" "$2")
    ((v >= $3 && v <= $4)) || fail "$1: the end's $2 is $v bytes, not in [$3, $4]"
}
sock_diag_case() { # NAME PAYLOAD: figures in the end and in the samples
    local name=$1 payload=$2
    within "$name" bsend "$payload" $((payload + 4))
    within "$name" brecv "$payload" $((payload + 4))
    [[ $(file_final "$name" net_method) == sock_diag ]] ||
        fail "$name: net_method is $(file_final "$name" net_method)"
    jq -e '. == sort and .[-1] >= '"$payload" <<<"$(file_samples "$name" .bsend)" >/dev/null ||
        fail "$name: bsend of the samples: $(file_samples "$name" .bsend)"
    jq -e 'all(.[]; . == "sock_diag")' <<<"$(file_samples "$name" .net_method)" >/dev/null ||
        fail "$name: net_method of the samples: $(file_samples "$name" .net_method)"
}

# ---- both ends of a loopback connection, held over samples, then closed
for family in 4 6; do
    run_to_file "tcp$family" -i 0.5 --set pano.monitor.net_period=1 -- "$W" tcp "$family" "$B" 3
    sent=$(jq -r .sent "$TEST_DIR/tcp$family.out")
    ((sent == B + B / 2)) || fail "tcp$family: the workload sent $sent bytes"
    sock_diag_case "tcp$family" "$sent"
    # the samples while the connection is open count it; those after the
    # close, taken while the task still runs, keep its figures
    jq -e "[.[] | select(.[0] >= $sent and .[1] == 1)] | length >= 2" \
        <<<"$(file_samples "tcp$family" "[.bsend, .procs]")" >/dev/null ||
        fail "tcp$family: fewer than 2 samples of the live task count its $sent bytes"
done

# ---- a socket inherited across fork and exec, then held by the child alone
run_to_file exec -i 0.5 --set pano.monitor.net_period=1 -- "$W" tcp-exec 4 "$B" 3
got=$(jq -r .received "$TEST_DIR/exec.out")
((got == B)) || fail "exec: the server end read $got bytes"
sock_diag_case exec "$B"

# ---- opened and closed between two samples (at start and at exit): unseen
run_to_file brief -i 5 -- bash -c "sleep 0.5; '$W' tcp 4 $B 0 >/dev/null; sleep 0.5"
[[ $(file_final brief bsend) == 0 && $(file_final brief brecv) == 0 ]] ||
    fail "brief: a connection no sample saw counts $(file_final brief bsend) / $(file_final brief brecv)"

# ---- UDP in the monitor's namespace: no byte counts to read
run_to_file udp -i 0.5 --set pano.monitor.net_period=1 -- "$W" udp "$B" 1.5
[[ $(file_final udp bsend) == 0 && $(file_final udp brecv) == 0 && $(file_final udp net_method) == sock_diag ]] ||
    fail "udp: $(file_final udp bsend) / $(file_final udp brecv) bytes by $(file_final udp net_method), not 0 by sock_diag"

# ---- a network namespace of its own: its interfaces' counters. Any user
# makes one inside a user namespace of its own (unshare -r); root needs none
# (and a chroot refuses one).
own_netns=()
if unshare -rn true 2>/dev/null; then
    own_netns=(unshare -rn)
elif unshare -n true 2>/dev/null; then
    own_netns=(unshare -n)
fi
if ((${#own_netns[@]})); then
    run_to_file netns -i 0.5 --set pano.monitor.net_period=1 -- "${own_netns[@]}" bash -c "'$W' lo-up && '$W' tcp 4 $B 3"
    payload=$((B + B / 2))
    within netns bsend "$payload" $((payload + payload / 20))
    [[ $(file_final netns bsend) == $(file_final netns brecv) ]] ||
        fail "netns: loopback sent $(file_final netns bsend) and received $(file_final netns brecv)"
    [[ $(file_final netns net_method) == *netns* ]] || fail "netns: net_method is $(file_final netns net_method)"
    # UDP too: 1,000 datagrams of 1,000 bytes, each with 28 bytes of headers
    run_to_file netns_udp -i 0.5 --set pano.monitor.net_period=1 -- "${own_netns[@]}" bash -c "'$W' lo-up && '$W' udp $B 1.5"
    within netns_udp bsend "$B" $((B + B / 20))
    [[ $(file_final netns_udp bsend) == $(file_final netns_udp brecv) ]] ||
        fail "netns_udp: loopback sent $(file_final netns_udp bsend) and received $(file_final netns_udp brecv)"
    netns="netns $(file_final netns bsend)"
else
    netns="netns skipped (unshare -rn and unshare -n are refused here)"
    log "$netns"
fi
log "tcp4 $(file_final tcp4 bsend)/$(file_final tcp4 brecv), tcp6 $(file_final tcp6 bsend), exec $(file_final exec bsend), brief 0, $netns"
