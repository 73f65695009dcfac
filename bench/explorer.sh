#!/usr/bin/env bash
# Benchmark: pano-explorer on a big workflow.
#
#   bench/explorer.sh         (BUILD=build; 10,000 jobs, 1,000,000 samples)
#
# 1. The workflow of bench/query.sh (bench/workflow.sh), indexed by the real
#    pano-indexer.
# 2. pano-explorer on a free port. The requests the pages make (the
#    workflow with its cpu, rss, read and write series and its timeline's
#    overview; the first page of its jobs; a job with its five series; the
#    workflows list) and a series alone, each BENCH_REPS times (20) with
#    curl: the 99th percentile of all those requests, and the time of the
#    first of them, which reads the workflow's rows (the others share them
#    while its events stay the same). Then a refresh of the
#    workflow with the cursor of its last answer, nothing having changed,
#    as many times: the p99 of its time and its size.
# 3. The workflow page in headless Chromium (tests/browser/page_load.mjs):
#    from navigation until the timeline and the four charts are drawn, the
#    jobs listed and all of it laid out and painted; the median of
#    BENCH_PAGES loads (5), each in a new tab, and of the bytes of the API's
#    answers it received.
# 4. Live: with the workflow page open, BENCH_LIVE jobs (5) started one
#    after the other (a kickstart.inv.start produced to Kafka, indexed by
#    the running pano-indexer), each timed from the moment it is searchable
#    until the page lists it (tests/browser/live_delay.mjs): on a small
#    running workflow of its own, and on the big one.
# Baseline in the same run: the Elasticsearch _count of the workflow's
#    documents, its 99th percentile over as many requests.
# Targets: page <= 1,500 ms, API p99 <= 300 ms, a refresh with nothing new
#    <= 300 ms and <= 100 KB, live <= 2,000 ms.
#
# Environment: as bench/query.sh, and BENCH_REPS, BENCH_PAGES, BENCH_LIVE.
# Last line: RESULT explorer page_ms=... page_bytes=... first_ms=... api_p99_ms=... refresh_p99_ms=...
#    refresh_bytes=... live_small_max_ms=...
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${BENCH_REPS:-20}
PAGES=${BENCH_PAGES:-5}
LIVE=${BENCH_LIVE:-5}
BENCH_NEEDS="node chromium"
EX_PID=
BENCH_CLEANUP='[[ -n $EX_PID ]] && kill -TERM "$EX_PID" 2>/dev/null && wait "$EX_PID" 2>/dev/null'
source bench/workflow.sh

browser=tests/browser
if [[ ! -d $browser/node_modules/puppeteer-core ]]; then
    log "installing puppeteer-core (npm ci in $browser)"
    (cd "$browser" && npm ci --no-audit --no-fund >/dev/null)
fi

"$BUILD/explorer/pano-explorer" --port 0 >"$DIR/explorer.log" 2>&1 &
EX_PID=$!
for _ in $(seq 100); do grep -q "serving" "$DIR/explorer.log" && break; sleep 0.1; done
port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$DIR/explorer.log")
[[ -n $port ]] || { cat "$DIR/explorer.log" >&2; echo "bench: pano-explorer did not start" >&2; exit 1; }
URL=http://127.0.0.1:$port
paths=("workflows/$WF?series=cpu,rss,read,write&bins=1300" "workflows/$WF/jobs?offset=0&limit=500"
       "workflows/$WF/series?metric=cpu"
       "workflows?since=30d"
       "workflows/$WF/jobs/job_ID$(printf %05d $((JOBS * 42 / 100)))?series=cpu,rss,read,write,threads")
# the workflow's first answer reads its rows from the store; the requests
# after it share them while its events stay the same (jobs_cache.h)
first_ms=$(curl -fsS -o "$DIR/first.json" -w '%{time_total}' "$URL/api/${paths[0]}" | awk '{printf "%d", $1 * 1000}')
jobs=$(jq .runs "$DIR/first.json")
((jobs >= JOBS)) || { echo "bench: the workflow API lists $jobs jobs, not $JOBS" >&2; exit 1; } # more: live jobs of a reused run
log "the workflow's first answer, its rows read: $first_ms ms, $(stat -c %s "$DIR/first.json") bytes"

# seconds of one request, as curl measures it, in milliseconds
req_ms() { curl -fsS -o /dev/null -w '%{time_total}\n' "$1" | awk '{printf "%d\n", $1 * 1000}'; }
for p in "${paths[@]}"; do req_ms "$URL/api/$p" >/dev/null; done # warm-up
for k in "${!paths[@]}"; do
    p=${paths[$k]}
    for _ in $(seq "$REPS"); do req_ms "$URL/api/$p"; done >"$DIR/api.$k"
    log "api/$p: median $(median <"$DIR/api.$k") ms, p99 $(percentile 99 <"$DIR/api.$k") ms"
done
api_p99=$(cat "$DIR"/api.* | percentile 99)
count_p99=$(for _ in $(seq $((REPS * ${#paths[@]}))); do req_ms "$ES/$ID-*/_count?q=wf_uuid:$WF"; done | percentile 99)
log "API: p99 $api_p99 ms over $((REPS * ${#paths[@]})) requests; baseline _count p99 $count_p99 ms"
# a refresh with the cursor of the last answer, nothing having changed
cursor=$(curl -fsS "$URL/api/${paths[0]}" | jq -r .cursor)
for _ in $(seq "$REPS"); do
    curl -fsS -o /dev/null -w '%{time_total} %{size_download}\n' "$URL/api/${paths[0]}&since=$cursor"
done | awk '{printf "%d %d\n", $1 * 1000, $2}' >"$DIR/refresh"
refresh_p99=$(awk '{print $1}' "$DIR/refresh" | percentile 99)
refresh_bytes=$(awk '{print $2}' "$DIR/refresh" | sort -n | tail -1)
log "refresh with nothing new: p99 $refresh_p99 ms, $refresh_bytes bytes"

node "$browser/page_load.mjs" "$URL" "$WF" "$PAGES" | tee "$DIR/pages" >&2
page_ms=$(awk '$1 == "page_ms" {print $2}' "$DIR/pages" | median)
page_bytes=$(awk '$1 == "page_ms" {print $4}' "$DIR/pages" | median)
log "workflow page: median $page_ms ms, $page_bytes bytes of answers, over $PAGES loads"

# live: a job's start, as pano-monitor publishes it, produced to the topic the
# running indexer reads ($1: the job id; LIVE_WF: the workflow). Its sampling
# interval of 60 s keeps it running (not lost) for the whole measurement, so
# the page keeps refreshing every second.
[[ -n $IX_PID ]] || start_indexer
export BROKERS=$PANO_KAFKA_BROKERS TOPIC=${PANO_KAFKA_TOPIC_PREFIX}kickstart
ADD_JOB='printf "%s\t{\"event\":\"kickstart.inv.start\",\"ts\":%s,\"event_id\":\"%s\",\"seq\":1,\"hostname\":\"node-00.example.org\",\"wf_uuid\":\"%s\",\"wf_label\":\"live\",\"dag_job_id\":\"%s\",\"xformation\":\"xf_0\",\"site\":\"bench\",\"pid\":1,\"exe\":\"/opt/app/xf\",\"interval\":60.000}\n" \
    "$LIVE_WF" "$(date +%s.%N)" "$LIVE_WF-$1" "$LIVE_WF" "$1" | kcat -P -b "$BROKERS" -t "$TOPIC" -K "$(printf "\t")"'
live() { # WORKFLOW NAME: live_ms lines of LIVE jobs added to WORKFLOW
    # first a running job, so that the page refreshes every second
    LIVE_WF=$1 sh -c "$ADD_JOB" add_job "first_$2"
    for _ in $(seq 300); do
        [[ $(curl -fsS "$ES/$ID-*/_count?q=wf_uuid:$1+AND+dag_job_id:first_$2" | jq .count) -ge 1 ]] && break
        sleep 0.1
    done
    LIVE_WF=$1 ADD_JOB=$ADD_JOB ES=$ES INDICES="$ID-*" node "$browser/live_delay.mjs" "$URL" "$1" "$LIVE" |
        tee "$DIR/live.$2" >&2
    log "live, $2 workflow: median $(awk '{print $2}' "$DIR/live.$2" | median) ms, max $(max_ms "$2") ms over $LIVE jobs"
}
max_ms() { awk '{print $2}' "$DIR/live.$1" | sort -n | tail -1; }
live "$(cat /proc/sys/kernel/random/uuid)" small
live "$WF" big
printf 'RESULT explorer page_ms=%s page_bytes=%s first_ms=%s api_p99_ms=%s refresh_p99_ms=%s refresh_bytes=%s count_p99_ms=%s live_small_max_ms=%s live_big_max_ms=%s jobs=%s samples=%s\n' \
    "$page_ms" "$page_bytes" "$first_ms" "$api_p99" "$refresh_p99" "$refresh_bytes" "$count_p99" "$(max_ms small)" "$(max_ms big)" "$JOBS" "$total"
