#!/usr/bin/env bash
# bench/bridge.sh - how fast pano-bridge moves a RabbitMQ backlog to Kafka,
# against the broker's own ceiling and a shell pipeline.
#
#   bench/bridge.sh [N]          N events (default 1,000,000)
#
# Needs the local stack (deploy/local/pano-stack up) and a build in
# $PANO_BUILD (default ./build). In one run:
#   1. ceiling: a backlog of N events is drained by tests/tools/amqp_drain, a
#      minimal rabbitmq-c consumer that acks (multiple, every prefetch/10)
#      and discards, with the bridge's prefetch;
#   2. pano-bridge: the same backlog (published again) is moved to Kafka;
#      rate from its first delivery to its last ack; RSS sampled from /proc
#      every 0.1 s for the whole run;
#   3. shell baseline: `amqp-consume -q Q -c M -p P cat | kcat -P -t T`.
#      amqp-consume forks `cat` for every message, so this runs on a sample
#      of M = min(N, $PANO_BENCH_SHELL_SAMPLE or 20000) events (newline-
#      terminated, so that kcat splits them); its rate is M / elapsed time.
# Every phase publishes its backlog first with tests/tools/amqp_load
# (pipelined confirms) into a queue declared by `pano-bridge --setup`.
# The last line is
#   RESULT bridge events_per_s=... ratio_to_ceiling=... ratio_to_shell=... max_rss_mb=...
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-1000000}
SHELL_SAMPLE=${PANO_BENCH_SHELL_SAMPLE:-20000}
M=$((N < SHELL_SAMPLE ? N : SHELL_SAMPLE))
BUILD=${PANO_BUILD:-build}
BRIDGE=$BUILD/broker-bridge/pano-bridge
LOAD=$BUILD/tests/tools/amqp_load
DRAIN=$BUILD/tests/tools/amqp_drain
for f in "$BRIDGE" "$LOAD" "$DRAIN"; do
    [[ -x $f ]] || { echo "bench/bridge.sh: $f missing (ninja -C $BUILD)" >&2; exit 2; }
done
for t in kcat amqp-consume jq curl; do
    command -v "$t" >/dev/null || { echo "bench/bridge.sh: $t is not installed" >&2; exit 2; }
done

AMQP_PORT=${PANO_AMQP_PORT:-5672}
MGMT_PORT=${PANO_RABBITMQ_MGMT_PORT:-15672}
KAFKA=${PANO_KAFKA_BROKERS:-127.0.0.1:9092}
ID="bench$(od -An -N3 -tx1 /dev/urandom | tr -d ' ')"
DIR=$(mktemp -d "/tmp/pano-$ID.XXXXXX")
PREFETCH=$("$BRIDGE" --show-config 2>/dev/null | awk '$1 == "pano.bridge.prefetch" {print $3}')
PREFETCH=${PANO_BRIDGE_PREFETCH:-${PREFETCH:-4000}}

export PANO_AMQP_URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2F/$ID"
export PANO_KAFKA_BROKERS=$KAFKA
export PANO_KAFKA_TOPIC_PREFIX="$ID."
export PANO_KAFKA_DEAD_LETTER_TOPIC="$ID.dead-letter"
export PANO_BRIDGE_QUEUE="$ID.q"
export PANO_BRIDGE_DEAD_LETTER_EXCHANGE="$ID.dlx"
export PANO_BRIDGE_PREFETCH=$PREFETCH

say() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
mgmt() { curl -fsS -m 10 -u guest:guest "http://127.0.0.1:$MGMT_PORT/api/$1"; }

BRIDGE_PID=""
cleanup() {
    [[ -z $BRIDGE_PID ]] || kill -TERM "$BRIDGE_PID" 2>/dev/null || true
    for q in "$ID.q" "$ID.q.dead"; do
        curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/queues/%2F/$q" >/dev/null 2>&1 || true
    done
    for x in "$ID" "$ID.dlx"; do
        curl -fsS -u guest:guest -X DELETE "http://127.0.0.1:$MGMT_PORT/api/exchanges/%2F/$x" >/dev/null 2>&1 || true
    done
    timeout 60 deploy/local/pano-stack kafka-class org.apache.kafka.tools.TopicCommand \
        --bootstrap-server "$KAFKA" --delete --topic "$ID\\..*" >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT

"$BRIDGE" --setup >"$DIR/setup.log" 2>&1 || { cat "$DIR/setup.log" >&2; exit 1; }

fill() { # COUNT [amqp_load options]: a backlog in the queue
    local n=$1
    shift
    "$LOAD" -n "$n" -w 1000 -i 2000 -p "$ID-$RANDOM" "$@" >"$DIR/fill.out" || {
        cat "$DIR/fill.out" >&2
        exit 1
    }
    say "backlog: $(cat "$DIR/fill.out")"
}

# ---- 1. ceiling
say "ceiling: $N events, amqp_drain with prefetch $PREFETCH"
fill "$N"
"$DRAIN" -q "$ID.q" -p "$PREFETCH" -n "$N" -i 30 >"$DIR/drain.out"
CEILING=$(awk '{print $8}' "$DIR/drain.out")
say "ceiling: $(cat "$DIR/drain.out")"

# ---- 2. pano-bridge
say "pano-bridge: $N events"
fill "$N"
status=$DIR/bridge.prom
"$BRIDGE" --set pano.bridge.status_file="$status" --set pano.bridge.stats_interval=0.1 \
    >"$DIR/bridge.log" 2>&1 &
BRIDGE_PID=$!
value() { awk -v m="$1" '$1 == m {print $2}' "$status" 2>/dev/null || true; }
max_rss=0 t_first="" t_last="" deadline=$((SECONDS + 1800))
while ((SECONDS < deadline)); do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$BRIDGE_PID/status" 2>/dev/null || echo 0)
    ((rss > max_rss)) && max_rss=$rss
    received=$(value pano_bridge_messages_received_total)
    acked=$(value pano_bridge_messages_acked_total)
    now=$(date +%s.%N)
    [[ -z $t_first && ${received:-0} -gt 0 ]] && t_first=$now
    if [[ ${acked:-0} -ge $N ]]; then
        t_last=$now
        break
    fi
    kill -0 "$BRIDGE_PID" 2>/dev/null || { cat "$DIR/bridge.log" >&2; exit 1; }
    sleep 0.1
done
[[ -n $t_last ]] || { echo "bench/bridge.sh: the bridge did not finish" >&2; exit 1; }
read -r utime stime < <(awk '{print $14, $15}' "/proc/$BRIDGE_PID/stat")
kill -TERM "$BRIDGE_PID"
wait "$BRIDGE_PID" || { echo "bench/bridge.sh: pano-bridge exited $?" >&2; exit 1; }
BRIDGE_PID=""
# t_first was seen up to one status interval late: count from the
# bridge's own "consuming" time when that is earlier.
secs=$(echo "$t_last - $t_first + 0.1" | bc -l)
RATE=$(echo "$N / $secs" | bc -l)
ticks=$(getconf CLK_TCK)
cpu_us=$(echo "($utime + $stime) / $ticks * 1000000 / $N" | bc -l)
produced=$(value pano_bridge_messages_received_total)
dead=$(value pano_bridge_messages_dead_lettered_total)
say "pano-bridge: $N events in $(printf %.2f "$secs") s, $(printf %.0f "$RATE")/s, $(printf %.1f "$cpu_us") us CPU per event, max RSS $((max_rss / 1024)) MB (received $produced, dead-lettered $dead)"

# ---- 3. shell baseline
say "shell: amqp-consume ... cat | kcat -P, on $M events"
fill "$M" --newline
t0=$(date +%s.%N)
amqp-consume -u "amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f" -q "$ID.q" -c "$M" -p "$PREFETCH" cat |
    kcat -P -b "$KAFKA" -t "$ID.shell" -X queue.buffering.max.ms=5
t1=$(date +%s.%N)
SHELL_RATE=$(echo "$M / ($t1 - $t0)" | bc -l)
in_kafka=$(kcat -C -b "$KAFKA" -t "$ID.shell" -o beginning -e -q -f '%o\n' | grep -c . || true)
say "shell: $M events in $(printf %.2f "$(echo "$t1 - $t0" | bc -l)") s, $(printf %.0f "$SHELL_RATE")/s ($in_kafka in Kafka)"

printf 'RESULT bridge events_per_s=%.0f ratio_to_ceiling=%.2f ratio_to_shell=%.1f max_rss_mb=%.1f\n' \
    "$RATE" "$(echo "$RATE / $CEILING" | bc -l)" "$(echo "$RATE / $SHELL_RATE" | bc -l)" \
    "$(echo "$max_rss / 1024" | bc -l)"
