#!/usr/bin/env bash
# The dashboards without a Kibana or Grafana server:
#  - deploy/kibana/*, deploy/grafana/pano.json and docs/dashboards.md are what
#    tools/gen-dashboards.sh makes of deploy/panels.json (they cannot diverge);
#  - the saved objects are well formed: unique ids, every reference resolves,
#    every Lens accessor is a column of its layer;
#  - every field they use is in the index templates pano-indexer generates
#    (pano-indexer --print-templates), with a fitting type;
#  - the type hints of panels.json agree with schemas/.
# The aggregation behind each panel is run against Elasticsearch by the
# integration test deploy_dashboards_es.
set -euo pipefail
: "${PANO_BUILD:?}" "${PANO_SOURCE:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$PANO_SOURCE"

bash tools/gen-dashboards.sh "$tmp" 2>"$tmp/gen.err" || { cat "$tmp/gen.err" >&2; fail "gen-dashboards.sh failed"; }
for f in deploy/kibana/pano.ndjson deploy/kibana/queries.json deploy/grafana/pano.json docs/dashboards.md; do
    diff -u "$f" "$tmp/$f" >&2 || fail "$f is not what deploy/panels.json generates; run tools/regen.sh"
done

nd=deploy/kibana/pano.ndjson
jq -e . "$nd" >/dev/null || fail "$nd: a line is not JSON"
jq -s -e 'map(.id) | length == (unique | length)' "$nd" >/dev/null || fail "$nd: duplicate ids"
bad=$(jq -s -r '(map({key: "\(.type)/\(.id)", value: 1}) | from_entries) as $have
    | .[] | . as $o | .references[] | select($have["\(.type)/\(.id)"] == null) | "\($o.id) -> \(.type)/\(.id)"' "$nd")
[[ -z $bad ]] || fail "$nd: dangling references: $bad"
bad=$(jq -r 'select(.type == "lens") | . as $o | .attributes.state as $s
    | ($s.datasourceStates.formBased.layers.layer1.columns | keys) as $cols
    | ([$s.visualization | .. | objects | (.xAccessor, .splitAccessor, .accessors[]?, .columnId) | strings]
       + $s.datasourceStates.formBased.layers.layer1.columnOrder) | unique
    | map(select(. as $a | $cols | index($a) | not)) | select(length > 0) | "\($o.id): \(.)"' "$nd")
[[ -z $bad ]] || fail "Lens accessors that are not columns: $bad"
bad=$(jq -r 'select(.type == "dashboard") | . as $o | (.attributes.panelsJSON | fromjson)[]
    | .panelRefName as $r | .panelIndex as $i | select([$o.references[] | select(.name == "\($i):\($r)")] | length != 1)
    | "\($o.id): \($r)"' "$nd")
[[ -z $bad ]] || fail "dashboard panels without their reference: $bad"
for d in Workflow Job Transfers "I/O (Darshan)"; do
    jq -s -e --arg t "pano: $d" 'any(.[]; .type == "dashboard" and .attributes.title == $t)' "$nd" >/dev/null ||
        fail "no dashboard 'pano: $d'"
done
# Rates of cumulative counters are counter rates, never sums or averages.
bad=$(jq -r 'select(.type == "lens") | . as $o | .attributes.state.datasourceStates.formBased.layers[].columns[]
    | select((.sourceField // "") | IN("rchar", "wchar", "bread", "bwrite", "utime", "stime", "iowait", "syscr", "syscw"))
    | select(.operationType != "max") | "\($o.id): \(.operationType) of \(.sourceField)"' "$nd")
[[ -z $bad ]] || fail "cumulative counters used other than through counter_rate(max): $bad"
jq -r 'select(.type == "lens") | .attributes.state.datasourceStates.formBased.layers[].columns[]
    | select(.operationType == "counter_rate") | .references[0]' "$nd" >/dev/null

# Grafana: every data source uid the panels name is provisioned.
uids=$(grep -oE 'uid: [a-z-]+' deploy/grafana/provisioning/datasources/pano.yml | sed 's/uid: //' | sort -u)
for u in $(jq -r '.. | objects | select(.type == "elasticsearch") | .uid' deploy/grafana/pano.json | sort -u); do
    grep -qx "$u" <<<"$uids" || fail "Grafana data source $u is not provisioned"
done

# The type hints of panels.json agree with the schemas that exist.
jq -s -r '(.[0].field_types | del(._comment)) as $h
    | .[1:] as $s | $h | to_entries[] | .key as $f | .value as $t
    | ([$s[] | .properties // {} | .[$f] // empty | .type] | first) as $st
    | select($st != null)
    | select(($t == "number" and ($st | IN("integer", "number")) | not) and ($t == "string" and $st == "string" | not))
    | "\($f): panels.json says \($t), the schema \($st)"' \
    deploy/panels.json schemas/envelope.schema.json schemas/events/*.schema.json >"$tmp/hints"
[[ ! -s $tmp/hints ]] || fail "$(cat "$tmp/hints")"

# Fields against the templates the indexer generates from schemas/.
indexer=$PANO_BUILD/indexer/pano-indexer
if "$indexer" --print-templates >"$tmp/templates.json" 2>"$tmp/templates.err" && jq -e 'type == "object"' "$tmp/templates.json" >/dev/null; then
    bash "$PANO_SOURCE/tests/deploy/check_fields.sh" "$tmp/templates.json" pano-
else
    echo "NOTE: $indexer has no --print-templates yet: fields are checked against the installed templates by deploy_dashboards_es only"
fi
echo "PASS: $(jq -s 'map(select(.type == "lens")) | length' "$nd") panels in $(jq -s 'map(select(.type == "dashboard")) | length' "$nd") dashboards"
