# Whether Elasticsearch and the embedded store gave the same answer (sourced
# by tests/integration/store_differential.sh and bench/query.sh): two
# pano-query --json documents, or two pano-explorer API answers, the same
# apart from the moment of asking.
#
#   same_answers DIR NAME [FILTER]
# compares DIR/es-NAME.raw with DIR/sqlite-NAME.raw (FILTER, a jq filter,
# first removes more of what the moment of asking changes); writes the
# normalized DIR/es-NAME.json and DIR/sqlite-NAME.json; returns 0 when they
# agree, else 1 with the difference on stdout.
#
# The moment of asking differs: what is counted up to it (now, as_of, the
# wall times "so far", a running job's duration and how overdue it is) is
# compared apart, within a second, or within the time since SAME_ASKED_FROM
# (an $EPOCHREALTIME the caller took before its first ask) when that is
# longer, as it is on a loaded machine (the running jobs' wall time so far, a
# sum over them, within that for each); a running workflow's series go on to
# the moment of asking, so only the points both have are compared.
# A gauge's mean in a series' points may differ within 1e-5 of the value:
# the same sums added in another order (Elasticsearch's shards, SQLite's
# rows and seconds) may differ in their last bits, which the mean's
# subtraction of large terms (time-weighted, over epoch milliseconds) brings
# forward; 7e-7 was seen for the terabytes of virtual memory a sanitizer's
# processes reserve, 1.0e-6 for a Pegasus-shaped workflow's memory.
# Everything else must be equal.
SAME_NORMALIZE='walk(if type == "object" then del(.as_of, .now) else . end)
  | walk(if type == "object" and has("wall_time_so_far") then del(.wall_time_so_far, .running_job_wall_time_so_far, .workflow_wall_time) else . end)
  | walk(if type == "object" and .state? == "running" then del(.duration) else . end)
  | walk(if type == "object" and .kind? == "overdue" then del(.value, .score) else . end)'
SAME_SO_FAR='[.. | objects | (.wall_time_so_far?,
          (select(.state? == "running") | .duration?), (select(.kind? == "overdue") | .value?)) | numbers]'
SAME_SUM_SO_FAR='[.. | objects | .running_job_wall_time_so_far? | numbers]'
# how many jobs run: listed, or counted (status and stats count them)
SAME_RUNNING='[([.. | objects | select(.state? == "running") | .duration? | numbers] | length),
  (.. | objects | .by_state?.running? | numbers), (.. | objects | .incomplete? | numbers)] | max'
SAME_SHORTEST='[.[] | .. | objects | .points? | arrays | length] | min // 0'
SAME_CUT='walk(if type == "object" and (.points? | type) == "array" then .points |= .[:$n] else . end)'
SAME_EQUAL='def same($a; $b; $tol):
  if ($a | type) == "number" and ($b | type) == "number" then
    (($a - $b) | fabs) <= $tol * ([($a | fabs), ($b | fabs)] | max)
  elif ($a | type) == "object" and ($b | type) == "object" then
    ($a | keys) == ($b | keys) and all($a | keys[]; . as $k | same($a[$k]; $b[$k]; if $k == "points" then 1e-5 else $tol end))
  elif ($a | type) == "array" and ($b | type) == "array" then
    ($a | length) == ($b | length) and all(range($a | length); . as $i | same($a[$i]; $b[$i]; $tol))
  else $a == $b end;
same($es[0]; $sqlite[0]; 0)'

same_answers() {
    local dir=$1 name=$2 filter=${3:-.} points s a b within=1 us
    if [[ -n ${SAME_ASKED_FROM:-} ]]; then # microseconds since then ($EPOCHREALTIME: s.uuuuuu)
        us=$((10#${EPOCHREALTIME/[.,]/} - 10#${SAME_ASKED_FROM/[.,]/}))
        ((us <= 1000000)) || within=$((us / 1000000)).$(printf '%06d' $((us % 1000000)))
    fi
    points=$(jq -s "$SAME_SHORTEST" "$dir/es-$name.raw" "$dir/sqlite-$name.raw") || return 1
    for s in es sqlite; do
        jq -S --argjson n "$points" "$SAME_NORMALIZE | $filter | $SAME_CUT" "$dir/$s-$name.raw" >"$dir/$s-$name.json" ||
            return 1
    done
    a=$(jq -c "{each: $SAME_SO_FAR, sum: $SAME_SUM_SO_FAR, running: ($SAME_RUNNING)}" "$dir/es-$name.raw")
    b=$(jq -c "{each: $SAME_SO_FAR, sum: $SAME_SUM_SO_FAR, running: ($SAME_RUNNING)}" "$dir/sqlite-$name.raw")
    if ! jq -e -n --argjson a "$a" --argjson b "$b" --argjson w "$within" '
        def near($x; $y; $tol): ($x | length) == ($y | length) and ([range($x | length) | ($x[.] - $y[.]) | fabs < $tol] | all);
        near($a.each; $b.each; $w) and near($a.sum; $b.sum; $w * ([1, $a.running] | max))' >/dev/null; then
        echo "so far $a and $b (asked within $within s)"
        return 1
    fi
    diff -q "$dir/es-$name.json" "$dir/sqlite-$name.json" >/dev/null && return 0
    jq -e -n --slurpfile es "$dir/es-$name.json" --slurpfile sqlite "$dir/sqlite-$name.json" "$SAME_EQUAL" >/dev/null &&
        return 0
    diff "$dir/es-$name.json" "$dir/sqlite-$name.json" | head -10
    return 1
}
