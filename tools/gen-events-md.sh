#!/usr/bin/env bash
# The event catalog (docs/events.md) from the JSON Schemas in schemas/:
# every field of every event with its type, unit, source and meaning.
#
#   tools/gen-events-md.sh [SCHEMA_DIR] > docs/events.md
#
# tests/deploy/deploy_docs.sh fails when docs/events.md is not this
# script's output (regenerate with tools/regen.sh).
set -euo pipefail
dir=${1:-$(dirname "$0")/../schemas}

cat <<'HEAD'
# Event catalog

Every event pano publishes, field by field. **Generated** from the JSON Schemas
in [`schemas/`](../schemas/) by `tools/gen-events-md.sh` (run `tools/regen.sh`
after changing a schema); a test fails when this file and the schemas differ.

Columns: *type* is the JSON type (`a|b` when several are allowed, `[]` an
array of it, `{}` an object); *req* marks required fields; *unit* is the
schema's `x-unit`; *source* its `x-source`: where the value comes from.
Nested fields are written with dots (`final.utime`); `<name>` stands for any
key (`additionalProperties`) and `<pattern>` for keys matching a pattern.

**Time stamps.** `ts` is the time the event happened, in epoch seconds, and becomes
`@timestamp`, which charts, time ranges and the store's time partitions use. An event that
arrives without `ts`, or with one before 2000 or more than a day ahead (real
pegasus-monitord sends `stampede.static.start`, `.static.end` and `rc.pfn` without one, and
the planner's static events, which describe the workflow's jobs and tasks, with about
3,200,000, February 1970), is not refused: pano-bridge sets `ts` to the workflow's own
time stamp `wf_ts` when monitord sent a plausible one (so the static events of a run stay
with the rest of it, replayed years later or not), else to the time it received the event;
`ts_source` says which (`wf_ts`, `received`) and `ts_sent` keeps the original as text. The
event's `event_id`, when pano derives one, comes from the original bytes, so a redelivery
is still stored once. A `ts` that is not a number is refused.

Counters marked *cumulative* only grow during a task: chart them as rates, never
as sums or averages of samples. pano-monitor's samples carry `delta`, the change
since the previous sample: the sum of `delta.<counter>` in a time bucket over its
length is the rate, summed over jobs ([query.md](query.md#time-series-the-rate-math)).
Elasticsearch maps each field from this type (string → keyword, integer →
long, number → double, boolean → boolean); `@timestamp` is the event's `ts`.

HEAD

jq -rs '
  def esc: tostring | gsub("\\|"; "\\|") | gsub("\n"; " ");
  def typ:
    if .type == null then
      (if .enum then (.enum[0] | type | if . == "number" then "number" else . end)
       elif .const != null then (.const | type)
       elif .properties or .additionalProperties or .patternProperties then "object"
       else "any" end)
    elif (.type | type) == "array" then (.type | map(select(. != "null")) | join("|"))
    else .type end
    | if . == "array" then "[]" else . end;
  def arrtyp: if .type == "array" then ((.items // {}) | typ) + "[]" else typ end;
  def extra:
    [ (if .enum then "one of " + (.enum | map(tostring) | join(", ")) else empty end),
      (if .const != null then "always " + (.const | tostring) else empty end),
      (if .format then "format " + .format else empty end),
      (if .minimum != null then "≥ " + (.minimum | tostring) else empty end),
      (if .maximum != null then "≤ " + (.maximum | tostring) else empty end),
      (if .maxLength then "at most " + (.maxLength | tostring) + " characters" else empty end)
    ] | join("; ");
  def rows(prefix; $req):
    ( (.properties // {}) | to_entries[] as $e
      | ($e.value) as $v
      | [prefix + $e.key, ($v | arrtyp), (if ($req | index([$e.key])) != null then "yes" else "" end),
         ($v["x-unit"] // ""), ($v["x-source"] // ""),
         ([($v.description // ""), ($v | extra)] | map(select(. != "")) | join(" — "))],
        ( $v | if .type == "array" then (.items // {}) else . end
          | rows(prefix + $e.key + (if $v.type == "array" then "[]." else "." end); (.required // [])) )
    ),
    ( (.patternProperties // {}) | to_entries[] as $e
      | ($e.value) as $v
      | [prefix + "<" + $e.key + ">", ($v | arrtyp), "", ($v["x-unit"] // ""), ($v["x-source"] // ""),
         ($v.description // "")],
        ($v | rows(prefix + "<" + $e.key + ">."; (.required // [])))
    ),
    ( if (.additionalProperties | type) == "object" then
        (.additionalProperties) as $v
        | if ($v.properties // null) != null then
            [prefix + "<name>", "object", "", "", "", ($v.description // "")],
            ($v | rows(prefix + "<name>."; (.required // [])))
          else empty end
      else empty end );
  def table:
    "| field | type | req | unit | source | description |",
    "|---|---|---|---|---|---|",
    (rows(""; (.required // [])) | map(esc) | "| `\(.[0])` | \(.[1]) | \(.[2]) | \(.[3]) | \(.[4]) | \(.[5]) |");

  # A shared part (alert.schema.json) named by an event'"'"'s allOf $ref adds its
  # fields to that event'"'"'s table; the event'"'"'s own keywords win (kind: const).
  def with_parts($parts):
    reduce ([.allOf[]? | .["$ref"]? // empty | split("/") | last | $parts[.] // empty][]) as $p
      (.; (($p.properties // {}) as $pp | (.properties // {}) as $ep
           | .properties = (($pp + $ep) | with_entries(.value = (($pp[.key] // {}) + .value))))
          | .required = (($p.required // []) + (.required // [])));

  (map(select(.title == "pano event envelope")) | .[0]) as $env
  | (map(select((.["$id"] // "") | test("/(events|families)/") | not) | select(.title != "pano event envelope")
         | {key: (.["$id"] | split("/") | last), value: .}) | from_entries) as $parts
  | (map(select((.["$id"] // "") | test("/families/"))) | sort_by(.title)) as $families
  | (map(select((.["$id"] // "") | test("/events/")) | with_parts($parts)) | sort_by(.title)) as $events
  | "## Contents\n",
    "- [Envelope](#envelope): the fields every event starts with",
    ($events[] | "- [`\(.title)`](#\(.title | gsub("\\."; "")))"),
    ($families[] | "- [`\(.title)`](#\(.title | gsub("[.*]"; ""))): events of other tools"),
    "",
    "## Envelope\n",
    ($env.description // ""),
    "",
    ($env | table),
    "",
    ($events[] |
      "## \(.title)\n",
      (.description // ""),
      "",
      (.title | split(".")[0] | if IN("kickstart","darshan","transfer","stampede","custom") then . else "other" end) as $f
      | (if .title == "kickstart.inv.online" then "samples" else $f end) as $stream
      | "Family `\($f)`: Kafka topic `pano.\($f)`, indices `pano-\($stream)-<period>`. Besides the envelope:",
      "",
      table,
      ""),
    ($families[] |
      "## \(.title)\n",
      (.description // ""),
      "",
      (.title | split(".")[0]) as $f
      | "Family `\($f)`: Kafka topic `pano.\($f)`, indices `pano-\($f)-<period>`. Besides the envelope:",
      "",
      table,
      "")
' "$dir"/*.schema.json "$dir"/events/*.schema.json "$dir"/families/*.schema.json
