#!/usr/bin/env bash
# End-to-end benchmark: a steady BENCH_RATE events/s (2,000) for
# BENCH_DURATION s (60) published to RabbitMQ -> pano-bridge -> Kafka ->
# pano-indexer -> Elasticsearch, refresh interval 1 s. Measures, for a sample
# of the events (one in BENCH_PROBE_EVERY, 10), the time from the event's ts
# until a _search finds it, and counts every event at the end.
#
# Environment: the local stack's ports (PANO_AMQP_PORT, PANO_KAFKA_PORT,
# PANO_ES_PORT, PANO_RABBITMQ_MGMT_PORT), BUILD (build), and any
# PANO_INDEXER_* / PANO_BRIDGE_* setting.
# Before it, where the time went: the indexer's stage histograms
# (pano_indexer_stage_seconds: to_kafka, to_bulk, bulk), each quantile given
# as the histogram bucket holding it; the rest, up to the end-to-end figure,
# is the refresh interval and the probe's polling (20 ms).
# The baseline, in the same run: documents written straight into the run's
# indices ten times a second, timed the same way (es_alone_p99_ms); the
# difference (added_p99_ms) is what pano and the brokers add to the tail.
# And Elasticsearch's own share: how often it refreshed each index
# (refresh_every_p99_ms, the refresh interval plus the wait for the refresh
# thread) and how long a refresh took (refresh_p99_ms), read off its
# refresh statistics every 50 ms.
# Last line: RESULT e2e rate=... p50_ms=... p99_ms=... lost=...
#            es_alone_p99_ms=... added_p99_ms=... refresh_every_p99_ms=...
#            refresh_p99_ms=...
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/pipeline.sh
RATE=${BENCH_RATE:-2000}
DURATION=${BENCH_DURATION:-60}
EVERY=${BENCH_PROBE_EVERY:-10}
pipeline_setup e2e
export PANO_INDEXER_REFRESH_INTERVAL=1s
export PANO_INDEXER_STATS_INTERVAL=${PANO_INDEXER_STATS_INTERVAL:-10}
export PANO_INDEXER_STATUS_FILE="$DIR/indexer.prom"

# shellcheck disable=SC2086 # BENCH_INDEXER_ARGS: words, on purpose
pipeline_start ${BENCH_INDEXER_ARGS:-}
log "$ID: $RATE events/s for $DURATION s through RabbitMQ, pano-bridge, Kafka, pano-indexer"
"$BUILD/bench/e2e_probe" --rate "$RATE" --duration "$DURATION" --probe-every "$EVERY" \
    --index "$ID-*" --settle 60 | tee "$DIR/probe.out"
[[ -n ${BENCH_KEEP_LOG:-} ]] && cp "$DIR/indexer.log" "$BENCH_KEEP_LOG"
line=$(tail -n1 "$DIR/probe.out")
{ grep -h "consumed\|received" "$DIR/indexer.log" "$DIR/bridge.log" || true; } | tail -n 2 >&2
# The bucket holding each quantile of each stage, from the cumulative counts.
awk -F'[{}" ]+' '/^pano_indexer_stage_seconds_bucket/ {
        st = $3; le = $5; n[st]++; bound[st, n[st]] = le; cum[st, n[st]] = $NF
        if (le == "+Inf") total[st] = $NF
    }
    function q(st, f,   i) {
        for (i = 1; i <= n[st]; i++) if (cum[st, i] >= f * total[st]) return bound[st, i]
    }
    function ms(b) { return b == "+Inf" ? "more than 10000" : "<= " b * 1000 }
    END {
        split("to_kafka to_bulk bulk", order, " ")
        for (k = 1; k <= 3; k++) if (total[order[k]] > 0)
            printf "stage %-8s p50 %s ms, p99 %s ms (%d events)\n", order[k],
                ms(q(order[k], 0.5)), ms(q(order[k], 0.99)), total[order[k]]
    }' "$DIR/indexer.prom"
# The value of " NAME=" in the probe's last line.
field() { sed -n "s/.* $1=\([-0-9]*\).*/\1/p" <<<"$line"; }
p50=$(field p50_ms)
p99=$(field p99_ms)
lost=$(field lost)
alone=$(field es_alone_p99_ms)
every=$(field refresh_every_p99_ms)
took=$(field refresh_p99_ms)
echo "RESULT e2e rate=$RATE p50_ms=$p50 p99_ms=$p99 lost=$lost es_alone_p99_ms=$alone" \
    "added_p99_ms=$((p99 - alone)) refresh_every_p99_ms=$every refresh_p99_ms=$took"
