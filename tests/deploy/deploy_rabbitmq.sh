#!/usr/bin/env bash
# deploy/rabbitmq/definitions.json on the real broker: imported under a
# vhost and user of the test's own (removed afterwards), the user logs in
# with the password whose hash deploy/rabbitmq/hash-password.sh made,
# pano-bridge with its default queue and exchange names accepts the
# broker's layout (its declarations match: same arguments, permissions
# allow them), and an event published by pano-monitor is routed to the queue.
source "$(dirname "$0")/../integration/lib.sh"
: "${PANO_SOURCE:?}"
require_stack
MGMT=http://127.0.0.1:$MGMT_PORT
vhost=$TEST_ID-vhost
user=$TEST_ID-user
password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
trap 'rc=$?; curl -fsS -u guest:guest -X DELETE "$MGMT/api/vhosts/$vhost" >/dev/null 2>&1 || true
      curl -fsS -u guest:guest -X DELETE "$MGMT/api/users/$user" >/dev/null 2>&1 || true
      set +e; (exit $rc); cleanup' EXIT

hash=$(printf '%s\n' "$password" | bash "$PANO_SOURCE/deploy/rabbitmq/hash-password.sh")
jq --arg v "$vhost" --arg u "$user" --arg h "$hash" '
    .vhosts[].name = $v
    | .users |= map(.name = $u | .password_hash = $h)
    | .permissions |= map(.vhost = $v | .user = $u)
    | (.queues, .exchanges, .bindings, .policies) |= map(.vhost = $v)' \
    "$PANO_SOURCE/deploy/rabbitmq/definitions.json" >"$TEST_DIR/definitions.json"
curl -fsS -u guest:guest -H 'Content-Type: application/json' -X POST "$MGMT/api/definitions" \
    --data-binary @"$TEST_DIR/definitions.json" >/dev/null || fail "the broker refused the definitions"
log "imported the definitions as vhost $vhost, user $user"
# disable_stats: RabbitMQ 3.10's management database can crash (badkey) when
# asked for the statistics of a queue created a moment ago, and then fails
# every later request until the node restarts.
curl -fsS -u guest:guest "$MGMT/api/queues/$vhost/pano.events?disable_stats=true" | jq -e '.arguments["x-dead-letter-exchange"] == "pano.dlx"' >/dev/null ||
    fail "queue pano.events without its dead-letter exchange"
curl -fsS -u guest:guest "$MGMT/api/policies/$vhost" | jq -e 'length == 1' >/dev/null || fail "policy missing"

# The user logs in with the password (the hash is right), and pano-bridge
# declares its layout over the imported one without a channel error.
url="amqp://$user@127.0.0.1:$AMQP_PORT/$vhost/monitoring"
printf '%s\n' "$password" >"$TEST_DIR/password"
chmod 600 "$TEST_DIR/password"
# (the password in the URL: pano-bridge reads pano.amqp.password_file only from
# the bridge branch on)
start bridge env -u PANO_BRIDGE_QUEUE -u PANO_BRIDGE_DEAD_LETTER_EXCHANGE \
    PANO_AMQP_URL="amqp://$user:$password@127.0.0.1:$AMQP_PORT/$vhost/monitoring" "$PANO_BUILD/broker-bridge/pano-bridge"
wait_until 30 grep -q "consuming" "$TEST_DIR/bridge.log" || fail "pano-bridge did not start on the imported layout"
grep -E "ERROR|PRECONDITION|ACCESS_REFUSED" "$TEST_DIR/bridge.log" && fail "pano-bridge reported errors"
# Stopped, so that what pano-monitor publishes stays in the queue to be read.
stop_all

# An event goes through the exchange into pano.events (mandatory publishing:
# pano-monitor says so when no queue takes it). The messages are read from
# the queue itself: the management statistics (message_stats) come every
# 5 s, and with the whole suite running on two CPUs they have lagged a minute.
PANO_AMQP_URL=$url PANO_AMQP_PASSWORD_FILE=$TEST_DIR/password PEGASUS_WF_UUID=$(cat /proc/sys/kernel/random/uuid) \
    "$PANO_BUILD/publishers/monitor/pano-monitor" -- true 2>"$TEST_DIR/monitor.log" || fail "pano-monitor failed"
grep -qiE "not delivered|unroutable|refused" "$TEST_DIR/monitor.log" && { cat "$TEST_DIR/monitor.log" >&2; fail "events not routed"; }
curl -fsS -u guest:guest -H 'Content-Type: application/json' -X POST "$MGMT/api/queues/$vhost/pano.events/get" \
    --data '{"count":10,"ackmode":"ack_requeue_false","encoding":"auto"}' >"$TEST_DIR/messages.json" ||
    fail "could not read the queue pano.events"
jq -e '[.[].payload | fromjson | .event] | index("kickstart.inv.start") != null and index("kickstart.inv.end") != null' \
    "$TEST_DIR/messages.json" >/dev/null || { jq -c '.[].payload' "$TEST_DIR/messages.json" >&2; fail "the events did not reach pano.events"; }
log "PASS"
