#!/usr/bin/env bash
# The per-run summaries pano-indexer keeps, over the real stack:
# - one workflow's events (pano-monitor runs with samples, one still open,
#   one without a DAG job id, a retried job; monitord job instances with
#   their invocations, one failed; Darshan and transfer events) produced
#   straight into Kafka once, in order, and indexed by one indexer; and the
#   same events produced twice, each time in another shuffled order, and
#   indexed by another indexer into another prefix: every summary document
#   is the same in both (the writers' tokens and arrival order aside), and
#   its counts count each event once;
# - pano-query status, stats, jobs, anomalies and series give the same
#   --json read from the summaries and reduced from the events
#   (pano.query.summaries false), and the summaries are what it read (a
#   point in time over them; for a series or jobs --state, those of the
#   jobs not ended, or failed, alone; all of them when the summaries do not
#   say which are open or failed);
# - a store written before summaries existed (the events indexed with
#   pano.indexer.summaries false) is read from its events, with the same
#   answers; so is one whose summaries miss the workflow's first events;
# - a workflow across two partitions (daily ones, around midnight UTC), its
#   runs with a document in each: the same answers both ways.
source "$(dirname "$0")/indexer_lib.sh"
require_stack
command -v kcat >/dev/null || fail "kcat is not installed"
QUERY=$PANO_BUILD/query/pano-query
WF=$(cat /proc/sys/kernel/random/uuid)
T0=$(($(date +%s) - 3600)) # an hour ago: the partitions of now

# The workflow's events from T0, one JSON object a line, each with its event_id.
events_from() { # T0
python3 - "$WF" "$1" <<'EOF'
import json, sys
wf, t0 = sys.argv[1], float(sys.argv[2])
out = []
def ev(name, ts, **f):
    e = {"event": name, "ts": round(ts, 3), "event_id": "%s-%d" % (name, len(out)), "wf_uuid": wf}
    e.update(f)
    out.append(e)
for j in range(12):
    job = "work_ID%02d" % j
    for attempt in range(2 if j == 7 else 1):  # work_ID07 is retried
        host = "node%d" % (j % 3)
        pid = 1000 + 10 * j + attempt
        start = t0 + 60 * j + 30 * attempt + 0.125
        ctx = dict(dag_job_id=job, hostname=host, pid=pid, xformation="work", site="condor", exe="/bin/work")
        ev("kickstart.inv.start", start, interval=1, **ctx)
        n = 3 + j % 4
        for k in range(1, n + 1):
            ev("kickstart.inv.online", start + k, interval=1, rss=1000 * (k + j), rss_peak=1000 * (k + j) + 5,
               utime=0.5 * k, stime=0.25 * k, rchar=4096 * k, wchar=1024 * k, vm=9000, procs=1, threads=2, **ctx)
        if j == 11:
            continue  # still open: no end
        failed = attempt == 0 and j == 7 or j == 5
        ev("kickstart.inv.end", start + n + 0.5, exitcode=2 if failed else 0, signal=0, duration=n + 0.375,
           remote_cpu_time=0.75 * n, maxrss=1000 * (n + j) + 5, samples=n,
           final={"rchar": 4096 * n, "wchar": 1024 * n}, **ctx)
        inst = 2 * j + attempt + 1
        sctx = dict(job_id=job, job_inst_id=inst, site="condor")
        ev("stampede.job_inst.submit.start", start - 2, js_id=1, status=0, **sctx)
        ev("stampede.job_inst.main.start", start - 0.5, js_id=2, status=0, **sctx)
        ev("stampede.job_inst.host.info", start - 0.25, hostname=host, **sctx)
        ev("stampede.inv.end", start + n + 0.75, inv_id=1, dur=n + 0.25, remote_cpu_time=0.7 * n,
           maxrss=900 * n, start_time=start, transformation="work", executable="/bin/work", exitcode=512 if failed else 0, **sctx)
        ev("stampede.inv.end", start + n + 0.8, inv_id=-1, dur=1.5, remote_cpu_time=0.1, **sctx)  # a PRE script
        ev("stampede.job_inst.main.end", start + n + 1, js_id=3, exitcode=str(512 if failed else 0),
           local_dur=n + 0.5, status=-1 if failed else 0, **sctx)
# a run without a DAG job id, and the side events of two jobs
ev("kickstart.inv.start", t0 + 900.5, hostname="node9", pid=77, exe="/usr/bin/solo")
ev("kickstart.inv.end", t0 + 903.5, hostname="node9", pid=77, exe="/usr/bin/solo", exitcode=0, duration=3)
ev("darshan.perf", t0 + 186, dag_job_id="work_ID03", hostname="node0", nprocs=4)
for k in range(3):
    ev("transfer.inv.local.single", t0 + 250 + k, dag_job_id="work_ID04", hostname="node1", bytes_transferred=100)
for e in out:
    print(json.dumps(e))
EOF
}
events_from "$T0" >"$TEST_DIR/events.jsonl"
N=$(wc -l <"$TEST_DIR/events.jsonl")

produce() { # TOPIC_PREFIX FILE: each event to its family's topic, keyed by the workflow
    local family
    while IFS= read -r line; do
        family=$(jq -r '.event | split(".")[0]' <<<"$line")
        printf '%s\t%s\n' "$WF" "$line" >>"$TEST_DIR/to-$family"
    done <"$2"
    for f in "$TEST_DIR"/to-*; do
        family=${f##*/to-}
        kcat -P -b "$KAFKA" -t "$1$family" -K $'\t' <"$f" || fail "kcat $family"
        rm -f "$f"
    done
}
# every summary document, sorted, without what depends on arrival
summaries() { # PREFIX
    es -X POST "$ES/$1summary-*/_search?routing=$WF" -d '{"size":1000,"query":{"term":{"set.wf":"'"$WF"'"}},
        "sort":[{"set.id":"asc"}]}' |
        jq -S '[.hits.hits[]._source | del(.ops) | if .latest then .latest |= map_values(del(.i)) else . end]'
}
events_in() { echo "$1kickstart-*,$1samples-*,$1stampede-*,$1darshan-*,$1transfer-*"; }
# The closing samples pano-indexer writes at the end of runs whose samples
# came without delta (indexer/deltas.h) are stored documents, not events
# sent, and no summary counts them.
events_sent() { # PREFIX: the documents that are not closing samples
    es -X POST "$ES/$(events_in "$1")/_count?ignore_unavailable=true" \
        -d '{"query":{"bool":{"must_not":{"term":{"sample":"closing"}}}}}' | jq -r .count
}
indexed() { # PREFIX N: N events searchable, and summaries that count them all
    refresh
    [[ $(events_sent "$1") == "$2" ]] && [[ $(summaries "$1" | jq '[.[].add.n] | add') == "$2" ]]
}
# reduced PREFIX: pano-query jobs asked the events of the job instances
# (stampede) more than once, the workflow's request aside: it reduced the
# events rather than read the summaries.
reduced() {
    PANO_INDEXER_INDEX_PREFIX=$1 "$QUERY" jobs "$WF" --json --log-level debug >/dev/null 2>"$TEST_DIR/path.log" ||
        fail "jobs: $(tail -3 "$TEST_DIR/path.log")"
    (($(grep -c "POST /.*$1stampede" "$TEST_DIR/path.log") > 1))
}

# A: once, in order. B: twice, in two shuffled orders (duplicates and
# out-of-order delivery), into another prefix, through another group.
"$LOAD" --delete-topics >/dev/null 2>&1 || true
produce "$PANO_KAFKA_TOPIC_PREFIX" "$TEST_DIR/events.jsonl"
start_indexer a
wait_until 60 indexed "$P" "$N" || fail "A: $(events_sent "$P") of $N events, $(summaries "$P" | jq "[.[].add.n] | add") summarized"
B_TOPICS="${PANO_KAFKA_TOPIC_PREFIX}b."
for seed in 1 2; do
    python3 -c "import random, sys; l = sys.stdin.readlines(); random.Random($seed).shuffle(l); sys.stdout.writelines(l)" \
        <"$TEST_DIR/events.jsonl" >"$TEST_DIR/shuffled.jsonl"
    produce "$B_TOPICS" "$TEST_DIR/shuffled.jsonl"
done
PANO_KAFKA_TOPIC_PREFIX=$B_TOPICS PANO_KAFKA_DEAD_LETTER_TOPIC="${B_TOPICS}dead-letter" \
    PANO_INDEXER_GROUP="$TEST_ID-b" PANO_INDEXER_INDEX_PREFIX="${P}b-" start_indexer b
wait_until 60 indexed "${P}b-" "$N" || fail "B: $(events_sent "${P}b-") of $N events"
summaries "$P" >"$TEST_DIR/a.json"
summaries "${P}b-" >"$TEST_DIR/b.json"
runs=$(jq '[.[] | select(.set.k == "run")] | length' "$TEST_DIR/a.json")
insts=$(jq '[.[] | select(.set.k == "inst")] | length' "$TEST_DIR/a.json")
sides=$(jq '[.[] | select(.set.k == "side")] | length' "$TEST_DIR/a.json")
[[ $runs == 14 && $insts == 12 && $sides == 2 ]] ||
    fail "A: $runs runs (14), $insts instances (12), $sides side documents (2)"
# each event counted once, in A and in B (sent twice): indexed() waited for it
jq -e '[.[] | select(.set.k == "run" and .set.job == "work_ID11")][0] | .add.sn == 6 and .max.slast > 0
       and .latest.s.v.rss == 17000 and (.max.end | not)' "$TEST_DIR/a.json" >/dev/null ||
    fail "the open run: $(jq -c '.[] | select(.set.job == "work_ID11")' "$TEST_DIR/a.json")"
jq -e '[.[] | select(.set.k == "side")] | map(.add) | sort_by(.n) == [{"d":1,"n":1},{"n":3,"t":3}]' \
    "$TEST_DIR/a.json" >/dev/null || fail "side counts: $(jq -c '[.[] | select(.set.k == "side") | .add]' "$TEST_DIR/a.json")"
diff "$TEST_DIR/a.json" "$TEST_DIR/b.json" >"$TEST_DIR/ab.diff" ||
    fail "the summaries of events sent twice, out of order, differ: $(head -c 2000 "$TEST_DIR/ab.diff")"
log "$runs runs, $insts instances, $sides side documents: the same from $N events once in order and twice shuffled"

# A late sample of a run that ended updates its summary, leaving a deleted
# copy; once no summary of the index was updated for a minute, the indexer
# compacts it (upkeep.h; checked at the end). A's answers below count it.
compactions() { grep -c "summaries: compacting ${P}summary-kickstart-" "$TEST_DIR/a.log" || true; }
compacted_before=$(compactions)
jq -c 'select(.event == "kickstart.inv.online" and .dag_job_id == "work_ID03") | .event_id = "late-sample" | .ts += 0.5' \
    "$TEST_DIR/events.jsonl" | head -1 >"$TEST_DIR/late-sample.jsonl"
produce "$PANO_KAFKA_TOPIC_PREFIX" "$TEST_DIR/late-sample.jsonl"
NA=$((N + 1)) # A's events from now on
wait_until 30 indexed "$P" "$NA" || fail "the late sample: $(events_sent "$P") of $NA events"


# pano-query: the same answers from the summaries and from the events.
compare() { # PREFIX WHAT: the --json of each command, both ways
    local cmd norm='walk(if type == "object" then del(.now) else . end)'
    for cmd in status stats jobs anomalies "jobs --state failed" "jobs --state lost" \
        "series --metric cpu" "series --metric rss --step 2s"; do
        # shellcheck disable=SC2086 # the command's words
        PANO_INDEXER_INDEX_PREFIX=$1 "$QUERY" $cmd "$WF" --json \
            >"$TEST_DIR/new.json" 2>"$TEST_DIR/new.log" || fail "$cmd: $(tail -3 "$TEST_DIR/new.log")"
        # shellcheck disable=SC2086
        PANO_INDEXER_INDEX_PREFIX=$1 "$QUERY" $cmd "$WF" --json --set pano.query.summaries=false \
            >"$TEST_DIR/old.json" 2>"$TEST_DIR/old.log" || fail "$cmd (events): $(tail -3 "$TEST_DIR/old.log")"
        diff <(jq -S "$norm" "$TEST_DIR/old.json") <(jq -S "$norm" "$TEST_DIR/new.json") >"$TEST_DIR/q.diff" ||
            fail "$2: pano-query $cmd differs from the summaries and from the events: $(head -c 2000 "$TEST_DIR/q.diff")"
    done
}
compare "$P" "A"
reduced "$P" && fail "pano-query reduced the events though the summaries cover them: $(grep POST "$TEST_DIR/path.log")"
grep -q "POST /.*${P}summary-kickstart.*_pit" "$TEST_DIR/path.log" ||
    fail "pano-query did not read the summaries: $(grep POST "$TEST_DIR/path.log")"
PANO_INDEXER_INDEX_PREFIX=$P "$QUERY" jobs "$WF" --json >"$TEST_DIR/jobs.json" 2>>"$TEST_DIR/new.log"
jq -e '(.jobs | length) == 14 and ([.jobs[] | select(.id == "work_ID07#2")] | length) == 1
       and ([.jobs[] | select(.state == "failed")] | length) == 2
       and ([.jobs[] | select(.id == "work_ID03")][0].darshan_events == 1)
       and ([.jobs[] | select(.id == "work_ID04")][0].transfer_events == 3)' "$TEST_DIR/jobs.json" >/dev/null ||
    fail "jobs: $(jq -c '[.jobs[] | {id, state, darshan_events, transfer_events}]' "$TEST_DIR/jobs.json")"
compare "${P}b-" "B"
log "status, stats, jobs, anomalies and series: the same from the summaries as from the events"
# A series reads the summaries of the jobs not ended alone: here work_ID11's
# run, one document.
PANO_INDEXER_INDEX_PREFIX=$P "$QUERY" series "$WF" --metric rss --json --log-level debug >/dev/null 2>"$TEST_DIR/series.log" ||
    fail "series: $(tail -3 "$TEST_DIR/series.log")"
grep -q "1 summary document(s) of $WF read, of the jobs not ended" "$TEST_DIR/series.log" ||
    fail "series read other summaries than the open run's: $(grep -i summar "$TEST_DIR/series.log")"
# jobs --state failed, those and the failed jobs': work_ID05's run and
# instance, work_ID07's two of each.
PANO_INDEXER_INDEX_PREFIX=$P "$QUERY" jobs "$WF" --state failed --json --log-level debug >/dev/null 2>"$TEST_DIR/failed.log" ||
    fail "jobs --state failed: $(tail -3 "$TEST_DIR/failed.log")"
grep -q "7 summary document(s) of $WF read, of the jobs not ended or failed" "$TEST_DIR/failed.log" ||
    fail "jobs --state failed read other summaries: $(grep -i summar "$TEST_DIR/failed.log")"
# Summaries written before they said whether they are open or failed count
# as both: the same answers.
es -X POST "$ES/${P}b-summary-*/_search?routing=$WF" -d '{"size":1000,"query":{"term":{"set.wf":"'"$WF"'"}}}' |
    jq -c --arg wf "$WF" '.hits.hits[] | {index: {_index, _id, routing: $wf}}, (._source | del(.set.open, .set.failed))' \
    >"$TEST_DIR/unmarked.ndjson"
curl -fsS -H 'Content-Type: application/x-ndjson' -X POST "$ES/_bulk?refresh=true" --data-binary "@$TEST_DIR/unmarked.ndjson" |
    jq -e '.errors == false and (.items | length) == 28' >/dev/null || fail "cannot take set.open out of B's summaries"
compare "${P}b-" "summaries that do not say whether they are open or failed"
PANO_INDEXER_INDEX_PREFIX=${P}b- "$QUERY" series "$WF" --metric rss --json --log-level debug >/dev/null 2>"$TEST_DIR/series.log"
grep -q "28 summary document(s) of $WF read, of the jobs not ended" "$TEST_DIR/series.log" ||
    fail "series of summaries without set.open: $(grep -i summar "$TEST_DIR/series.log")"
PANO_INDEXER_INDEX_PREFIX=${P}b- "$QUERY" jobs "$WF" --state failed --json --log-level debug >/dev/null 2>"$TEST_DIR/failed.log"
grep -q "28 summary document(s) of $WF read, of the jobs not ended or failed" "$TEST_DIR/failed.log" ||
    fail "jobs --state failed of summaries without set.failed: $(grep -i summar "$TEST_DIR/failed.log")"

# A store written before summaries: the events alone, read from the events.
C_TOPICS="${PANO_KAFKA_TOPIC_PREFIX}c."
produce "$C_TOPICS" "$TEST_DIR/events.jsonl"
PANO_KAFKA_TOPIC_PREFIX=$C_TOPICS PANO_KAFKA_DEAD_LETTER_TOPIC="${C_TOPICS}dead-letter" \
    PANO_INDEXER_GROUP="$TEST_ID-c" PANO_INDEXER_INDEX_PREFIX="${P}c-" PANO_INDEXER_SUMMARIES=false start_indexer c
sent_are() { # PREFIX N: the events refreshed (not the summaries), N sent
    es -X POST "$ES/$(events_in "$1")/_refresh?ignore_unavailable=true" >/dev/null
    [[ $(events_sent "$1") == "$2" ]]
}
wait_until 60 sent_are "${P}c-" "$N" || fail "C: $(events_sent "${P}c-") of $N events"
[[ $(count_in "${P}c-summary-*") == 0 ]] || fail "summaries written with pano.indexer.summaries false"
compare "${P}c-" "a store without summaries"
reduced "${P}c-" || fail "a store without summaries was not read from its events"
# Summaries that miss the workflow's first events (written, in part, before
# summaries existed): read from the events too.
es -X POST "$ES/${P}b-summary-*/_search?routing=$WF" -d '{"size":1000,"query":{"term":{"set.wf":"'"$WF"'"}}}' |
    jq -c --arg wf "$WF" '.hits.hits[] | select(._source.set.job == "work_ID00") | {delete: {_index, _id, routing: $wf}}' \
    >"$TEST_DIR/delete.ndjson"
[[ -s $TEST_DIR/delete.ndjson ]] || fail "no summary of work_ID00"
curl -fsS -H 'Content-Type: application/x-ndjson' -X POST "$ES/_bulk?refresh=true" \
    --data-binary "@$TEST_DIR/delete.ndjson" | jq -e '.errors == false' >/dev/null || fail "cannot delete a summary"
compare "${P}b-" "summaries without the first runs"
reduced "${P}b-" || fail "summaries missing the first runs were used"
log "stores without (all) summaries: read from the events, the same answers"

# A workflow across two partitions: daily ones, its events 7.5 minutes
# either side of midnight UTC, so that runs have a document in each, read
# sorted by _id and merged.
D_TOPICS="${PANO_KAFKA_TOPIC_PREFIX}d."
events_from $(($(date +%s) / 86400 * 86400 - 450)) >"$TEST_DIR/events-d.jsonl"
produce "$D_TOPICS" "$TEST_DIR/events-d.jsonl"
export PANO_INDEXER_PARTITION=day
PANO_KAFKA_TOPIC_PREFIX=$D_TOPICS PANO_KAFKA_DEAD_LETTER_TOPIC="${D_TOPICS}dead-letter" \
    PANO_INDEXER_GROUP="$TEST_ID-d" PANO_INDEXER_INDEX_PREFIX="${P}d-" start_indexer d
wait_until 60 indexed "${P}d-" "$N" || fail "D: $(events_sent "${P}d-") of $N events"
split=$(summaries "${P}d-" | jq '[group_by(.set.id)[] | select(length == 2)] | length')
((split > 0)) || fail "D: no run has a document in each day"
compare "${P}d-" "a workflow across two partitions"
unset PANO_INDEXER_PARTITION
log "a workflow across two days, $split runs with a document in each: the same answers"

deleted_in() { es "$ES/_cat/indices/$1?h=docs.deleted&format=json" | jq '[.[]."docs.deleted" | tonumber] | add'; }
compacted() { (($(compactions) > compacted_before)) && refresh && [[ $(deleted_in "${P}summary-*") == 0 ]]; }
wait_until 100 compacted || {
    es "$ES/_cat/indices/${P}summary-*?v&h=index,docs.count,docs.deleted" >&2
    es "$ES/${P}summary-*/_stats?level=shards&filter_path=**.retention_leases,**.seq_no" >&2
    date >&2
    fail "A: $(($(compactions) - compacted_before)) compactions, $(deleted_in "${P}summary-*") deleted summaries left"
}
es "$ES/${P}summary-*/_settings/index.merge.policy.expunge_deletes_allowed" |
    jq -e '[.[].settings.index.merge.policy.expunge_deletes_allowed] | all(. == "0")' >/dev/null ||
    fail "the summary indices do not drop every deleted document when compacted"
log "A's updated summary index compacted once quiet: no deleted copy left"

# Summaries not yet searchable when their events are: pano-query refreshes
# them. Refreshes of A's summaries are turned off; the open run's end is
# indexed, its summary written (a real-time GET sees it) but not
# searchable; pano-query must still show the run ended.
doc=$(es -X POST "$ES/${P}summary-kickstart-*/_search?routing=$WF" -d '{"size":1000,"query":{"term":{"set.wf":"'"$WF"'"}}}' |
    jq -c '[.hits.hits[] | select(._source.set.job == "work_ID11")][0] | {_index, _id}')
[[ $doc != null ]] || fail "no summary of work_ID11"
es -X PUT "$ES/${P}summary-*/_settings" -d '{"index":{"refresh_interval":"-1"}}' >/dev/null
start=$(jq -r 'select(.event == "kickstart.inv.start" and .dag_job_id == "work_ID11") | .ts' "$TEST_DIR/events.jsonl")
jq -cn --arg wf "$WF" --argjson t "$start" '{event: "kickstart.inv.end", ts: ($t + 6.5), event_id: "late-end",
    wf_uuid: $wf, dag_job_id: "work_ID11", hostname: "node2", pid: 1110, xformation: "work", site: "condor",
    exe: "/bin/work", exitcode: 0, signal: 0, duration: 6.375, remote_cpu_time: 4.5, maxrss: 17005, samples: 6}' \
    >"$TEST_DIR/late.jsonl"
produce "$PANO_KAFKA_TOPIC_PREFIX" "$TEST_DIR/late.jsonl"
realtime() { es "$ES/$(jq -r ._index <<<"$doc")/_doc/$(jq -r ._id <<<"$doc")?routing=$WF"; }
wait_until 30 sent_are "$P" $((NA + 1)) || fail "the late end was not indexed"
wait_until 30 bash -c "$(declare -f es realtime); doc='$doc' ES='$ES' WF='$WF'; realtime | jq -e '._source.max.end == 1' >/dev/null" ||
    fail "the late end's summary was not written: $(realtime)"
[[ $(summaries "$P" | jq '[.[].add.n] | add') == "$NA" ]] || fail "the summaries were refreshed on their own"
PANO_INDEXER_INDEX_PREFIX=$P "$QUERY" jobs "$WF" --json --log-level debug >"$TEST_DIR/late.json" 2>"$TEST_DIR/late.log" ||
    fail "jobs: $(tail -3 "$TEST_DIR/late.log")"
jq -e '[.jobs[] | select(.id == "work_ID11")][0] | .state == "succeeded" and .exitcode == 0' "$TEST_DIR/late.json" >/dev/null ||
    fail "the run whose summary was not searchable: $(jq -c '.jobs[] | select(.id == "work_ID11")' "$TEST_DIR/late.json")"
grep -q "POST /.*${P}summary-.*_refresh" "$TEST_DIR/late.log" || fail "pano-query did not refresh the summaries"
log "summaries written after their events: refreshed by pano-query when they hold fewer events"


stop_all
log "PASS"
