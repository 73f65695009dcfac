#!/usr/bin/env bash
# Benchmark: pano-explorer on a big workflow.
#
#   bench/explorer.sh                      (BUILD=build; 10,000 jobs in pano-monitor's shape)
#   BENCH_SHAPE=pegasus bench/explorer.sh  (Pegasus's kickstart + stampede shape)
#
# 1. The workflow of bench/query.sh (bench/workflow.sh: BENCH_SHAPE,
#    BENCH_JOBS), indexed by the real pano-indexer.
# 2. pano-explorer on a free port. The requests the pages make (the
#    workflow with its cpu, rss, read and write series and its timeline's
#    overview; the first page of its jobs; a job with its five series; the
#    workflows list) and a series alone, with curl, each BENCH_REPS times
#    (20) or until it has taken BENCH_API_BUDGET seconds (60): the 99th
#    percentile of all those requests, the median time and the size of the
#    workflow's answer, and the time of the very first request, which reads
#    the workflow's rows (the others share them while its events stay the
#    same).
# 3. The workflow page in headless Chromium (tests/browser/page_load.mjs):
#    from navigation until the timeline and the four charts are drawn, the
#    jobs listed and all of it laid out and painted; the median of
#    BENCH_PAGES loads (5), each in a new tab, and the most bytes a load
#    received (the first: the browser has nothing cached).
# 4. A refresh while the workflow runs: one job started with a sampling
#    interval of 60 s (a kickstart.inv.start produced to Kafka, indexed by
#    the running pano-indexer) keeps it running; with the page open and
#    nothing else changing, the next BENCH_REFRESHES (5) requests the page
#    makes (tests/browser/refresh.mjs): the median time and bytes of one,
#    and the median time from one's start to the next's.
# 5. Live: with the workflow page open, BENCH_LIVE jobs (5) started one
#    after the other (the same kind of start), each timed from the moment
#    it is searchable until the page lists it (tests/browser/live_delay.mjs):
#    on a small running workflow of its own, and on the big one.
# Whatever takes longer than BENCH_TIMEOUT seconds (120) is abandoned and
# reported as "timeout": a request, a page load (and the loads after it),
# the refresh and live measurements once the page was not drawn in time.
# Baseline in the same run: the Elasticsearch _count of the workflow's
#    documents, its 99th percentile over as many requests.
# Targets: page <= 1,500 ms, API p99 <= 300 ms, a refresh with nothing new
#    <= 300 ms and <= 100 KB, live <= 2,000 ms.
#
# Environment: as bench/query.sh, and BENCH_REPS, BENCH_API_BUDGET,
# BENCH_PAGES, BENCH_REFRESHES, BENCH_LIVE, BENCH_TIMEOUT.
# Last line: RESULT explorer shape=... jobs=... events=... page_ms=... page_bytes=...
#   api_p99_ms=... first_ms=... wf_ms=... wf_bytes=... refresh_ms=... refresh_bytes=...
#   refresh_every_ms=... live_small_max_ms=... live_big_max_ms=... count_p99_ms=...
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${BENCH_REPS:-20}
BUDGET=${BENCH_API_BUDGET:-60}
PAGES=${BENCH_PAGES:-5}
REFRESHES=${BENCH_REFRESHES:-5}
LIVE=${BENCH_LIVE:-5}
TIMEOUT=${BENCH_TIMEOUT:-120}
BENCH_NEEDS="node chromium kcat"
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

# req URL [FILE]: "MS BYTES" of one request as curl measures it (the answer
# to FILE), or "timeout"
req() {
    local out rc=0
    out=$(curl -fsS -o "${2:-/dev/null}" --max-time "$TIMEOUT" -w '%{time_total} %{size_download}' "$1") || rc=$?
    ((rc == 28)) && { echo timeout; return; }
    ((rc == 0)) || { echo "bench: $1 failed (curl exit $rc)" >&2; return 1; }
    awk '{printf "%d %d\n", $1 * 1000, $2}' <<<"$out"
}
paths=("workflows/$WF?series=cpu,rss,read,write&bins=1300" "workflows/$WF/jobs?offset=0&limit=500"
       "workflows/$WF/series?metric=cpu" "workflows?since=30d"
       "workflows/$WF/jobs/job_ID$(printf %05d $((JOBS * 42 / 100)))?series=cpu,rss,read,write,threads")
for k in "${!paths[@]}"; do
    p=${paths[$k]}
    : >"$DIR/api.$k"
    r=$(req "$URL/api/$p" "$DIR/answer.$k") # warm-up
    # the first request reads the workflow's rows from the store; the ones
    # after it share them while its events stay the same (jobs_cache.h)
    ((k == 0)) && first_ms=${r% *}
    spent=0
    for _ in $(seq "$REPS"); do
        [[ $r == timeout ]] && break
        ((spent < BUDGET * 1000)) || break
        r=$(req "$URL/api/$p")
        echo "$r" >>"$DIR/api.$k"
        spent=$((spent + ${r% *}))
    done
    if [[ $r == timeout ]]; then
        echo timeout >"$DIR/api.$k"
        log "api/$p: more than $TIMEOUT s"
    else
        log "api/$p: median $(cut -d' ' -f1 "$DIR/api.$k" | median) ms, p99 $(cut -d' ' -f1 "$DIR/api.$k" | percentile 99) ms over $(wc -l <"$DIR/api.$k") requests, $(cut -d' ' -f2 "$DIR/api.$k" | median) bytes"
    fi
done
if grep -q timeout "$DIR"/api.*; then
    api_p99=timeout
else
    api_p99=$(cut -d' ' -f1 "$DIR"/api.* | percentile 99)
fi
if grep -q timeout "$DIR/api.0"; then
    wf_ms=timeout wf_bytes=timeout
else
    # more than JOBS: the live jobs of a reused run
    jq -e --argjson n "$JOBS" '.stats.jobs.total >= $n' "$DIR/answer.0" >/dev/null ||
        { echo "bench: the workflow API counts $(jq .stats.jobs.total "$DIR/answer.0") jobs, not $JOBS" >&2; exit 1; }
    wf_ms=$(cut -d' ' -f1 "$DIR/api.0" | median) wf_bytes=$(cut -d' ' -f2 "$DIR/api.0" | median)
fi
count_p99=$(for _ in $(seq $((REPS * ${#paths[@]}))); do req "$ES/$ID-*/_count?q=wf_uuid:$WF"; done | cut -d' ' -f1 | percentile 99)
log "API: p99 $api_p99 ms; the first request $first_ms ms; the workflow's answer $wf_ms ms, $wf_bytes bytes; baseline _count p99 $count_p99 ms"

node "$browser/page_load.mjs" "$URL" "$WF" "$PAGES" "$TIMEOUT" | tee "$DIR/pages" >&2
if grep -q timeout "$DIR/pages"; then
    page_ms=timeout
else
    page_ms=$(awk '$1 == "page_ms" {print $2}' "$DIR/pages" | median)
fi
page_bytes=$(awk '$1 == "page_ms" {print $4}' "$DIR/pages" | sort -n | tail -n1)
log "workflow page: $page_ms ms (median of the loads), $page_bytes bytes (the first load)"

# A job's start, as pano-monitor publishes it, produced to the topic the
# running indexer reads ($1: the job id; LIVE_WF: the workflow). Its sampling
# interval of 60 s keeps it running (not lost) for the whole measurement, so
# the page keeps refreshing every second.
[[ -n $IX_PID ]] || start_indexer
export BROKERS=$PANO_KAFKA_BROKERS TOPIC=${PANO_KAFKA_TOPIC_PREFIX}kickstart
ADD_JOB='printf "%s\t{\"event\":\"kickstart.inv.start\",\"ts\":%s,\"event_id\":\"%s\",\"seq\":1,\"hostname\":\"node-00.example.org\",\"wf_uuid\":\"%s\",\"wf_label\":\"live\",\"dag_job_id\":\"%s\",\"xformation\":\"xf_0\",\"site\":\"bench\",\"pid\":1,\"exe\":\"/opt/app/xf\",\"interval\":60.000}\n" \
    "$LIVE_WF" "$(date +%s.%N)" "$LIVE_WF-$1" "$LIVE_WF" "$1" | kcat -P -b "$BROKERS" -t "$TOPIC" -K "$(printf "\t")"'
running() { # WORKFLOW NAME: a running job first_NAME in WORKFLOW, once searchable
    LIVE_WF=$1 sh -c "$ADD_JOB" add_job "first_$2"
    for _ in $(seq 300); do
        [[ $(curl -fsS "$ES/$ID-*/_count?q=wf_uuid:$1+AND+dag_job_id:first_$2" | jq .count) -ge 1 ]] && return
        sleep 0.1
    done
    echo "bench: first_$2 never became searchable" >&2
    return 1
}
running "$WF" big

refresh_ms=timeout refresh_bytes=timeout refresh_every=timeout
if [[ $page_ms != timeout ]]; then
    node "$browser/refresh.mjs" "$URL" "$WF" "$REFRESHES" "$TIMEOUT" | tee "$DIR/refresh" >&2
    if ! grep -q 'refresh timeout' "$DIR/refresh"; then
        refresh_ms=$(awk '$1 == "refresh_ms" {print $2}' "$DIR/refresh" | median)
        refresh_bytes=$(awk '$1 == "refresh_ms" {print $4}' "$DIR/refresh" | median)
        # from one request's start to the next's
        refresh_every=$(awk '$1 == "refresh_ms" {if (n++) print $6 - last; last = $6}' "$DIR/refresh" | median)
        refresh_every=${refresh_every:-none} # one request only
    fi
fi
log "refresh while running: $refresh_ms ms, $refresh_bytes bytes, one every $refresh_every ms (medians of $(cat "$DIR/refresh" 2>/dev/null | grep -c '^refresh_ms' || true))"

live() { # WORKFLOW NAME: live_ms lines of LIVE jobs added to WORKFLOW (running already)
    local rc=0
    LIVE_WF=$1 ADD_JOB=$ADD_JOB ES=$ES INDICES="$ID-*" node "$browser/live_delay.mjs" "$URL" "$1" "$LIVE" \
        2>"$DIR/live.$2.err" | tee "$DIR/live.$2" >&2 || rc=$?
    cat "$DIR/live.$2.err" >&2
    if ((rc != 0)); then # a job not listed within live_delay.mjs's 30 s is a timeout
        grep -q "appearing on the page took more than" "$DIR/live.$2.err" || exit 1
        echo "live_ms timeout" >>"$DIR/live.$2"
    fi
    log "live, $2 workflow: max $(max_ms "$2") ms over $LIVE jobs"
}
max_ms() {
    if grep -q timeout "$DIR/live.$1"; then echo timeout; else awk '{print $2}' "$DIR/live.$1" | sort -n | tail -1; fi
}
small=$(cat /proc/sys/kernel/random/uuid)
running "$small" small
live "$small" small
if [[ $page_ms == timeout ]]; then
    live_big=timeout
else
    live "$WF" big
    live_big=$(max_ms big)
fi
printf 'RESULT explorer shape=%s jobs=%s events=%s page_ms=%s page_bytes=%s api_p99_ms=%s first_ms=%s wf_ms=%s wf_bytes=%s refresh_ms=%s refresh_bytes=%s refresh_every_ms=%s live_small_max_ms=%s live_big_max_ms=%s count_p99_ms=%s\n' \
    "$SHAPE" "$JOBS" "$total" "$page_ms" "$page_bytes" "$api_p99" "$first_ms" "$wf_ms" "$wf_bytes" \
    "$refresh_ms" "$refresh_bytes" "$refresh_every" "$(max_ms small)" "$live_big" "$count_p99"
