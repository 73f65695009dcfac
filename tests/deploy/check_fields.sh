#!/usr/bin/env bash
# check_fields.sh TEMPLATES PREFIX
#
# Every field the Kibana saved objects (deploy/kibana/pano.ndjson) and the
# Grafana dashboard (deploy/grafana/pano.json) use must exist in the index
# templates that apply to the panel's indices, with a type that suits its
# use (numbers for max/avg/rates, aggregatable types for terms, date for
# the time axis; Lens's dataType must agree too).
#
# TEMPLATES: a file in the form of GET _index_template, or of
# pano-indexer --print-templates ({name: body, ...}). PREFIX replaces the
# "pano-" of the data views ("pano-" itself, or a test's own prefix).
# SKIP_EVENTS (space-separated event names): leave out the panels of these.
set -euo pipefail
templates=$1
prefix=$2
src=${PANO_SOURCE:?}

uses=$(
    {
        # Lens: every column with a source field; the data view from the references
        jq -c --slurpfile dv <(jq -c 'select(.type == "index-pattern") | {id, title: .attributes.title}' "$src/deploy/kibana/pano.ndjson") '
          select(.type == "lens") | . as $o
          | ($o.references[] | select(.name | startswith("indexpattern-datasource-layer")) | .id) as $view
          | ($dv[] | select(.id == $view) | .title) as $pattern
          | $o.attributes.state.datasourceStates.formBased.layers[].columns[]
          | select(.sourceField and .sourceField != "___records___")
          | {where: "kibana \($o.id)", pattern: $pattern, field: .sourceField, use: .operationType, dataType,
             event: ($o.attributes.state.query.query | capture("event:\"(?<e>[^\"]+)\"").e)}
        ' "$src/deploy/kibana/pano.ndjson"
        # Grafana: bucket and metric fields; the index from the data source uid
        jq -c --slurpfile dv <(jq -c 'select(.type == "index-pattern") | {id, title: .attributes.title}' "$src/deploy/kibana/pano.ndjson") '
          .panels[] | select(.targets) | . as $p | .targets[]
          | ($dv[] | select(.id == $p.datasource.uid) | .title) as $pattern
          | ((.bucketAggs[] | {field, use: .type}),
             (.metrics[] | select(.type != "count" and .type != "derivative")
              | if .type == "top_metrics" then (.settings.metrics[] | {field: ., use: "top_metrics"})
                else {field, use: .type} end))
          | . + {where: "grafana \($p.title)", pattern: $pattern,
                 event: ($p.targets[0].query | capture("event:\"(?<e>[^\"]+)\"").e)}
        ' "$src/deploy/grafana/pano.json"
    } | jq -sc --arg skip "${SKIP_EVENTS:-}" '($skip | split(" ")) as $s | map(select(.event as $e | $s | index([$e]) | not)) | unique'
)

# Fields the schemas of this tree describe by name (not through patterns):
# these must be in the templates; others may be left to the dynamic rules.
declared=$(jq -s -c '[.[] | paths(type == "object") as $p | select(($p | length) >= 2 and $p[-2] == "properties"
    and (($p | map(tostring) | index("patternProperties")) == null) and (($p | map(tostring) | index("additionalProperties")) == null))
    | $p | map(select(. != "properties" and . != "items" and (type == "string"))) | join(".")] | unique' \
    "$src/schemas/envelope.schema.json" "$src"/schemas/events/*.schema.json)

jq -n -r --argjson uses "$uses" --argjson declared "$declared" --arg prefix "$prefix" --slurpfile t "$templates" '
  def globre: "^" + (gsub("\\."; "\\.") | gsub("\\*"; ".*")) + "$";
  def flat($p): to_entries[] | .key as $k | .value as $v
    | (if $v.properties then ($v.properties | flat($p + $k + "."))
       else {key: ($p + $k), value: ($v.type // "object")} end),
      ($v.fields // {} | to_entries[] | {key: ($p + $k + "." + .key), value: .value.type});
  def numeric: IN("long", "integer", "short", "byte", "double", "float", "half_float", "scaled_float", "unsigned_long");
  def aggregatable: numeric or IN("keyword", "constant_keyword", "boolean", "date", "date_nanos", "ip");
  def fits($use; $type):
    if IN($use; "date_histogram") then ($type | IN("date", "date_nanos"))
    elif IN($use; "terms", "unique_count", "cardinality", "last_value", "top_metrics") then ($type | aggregatable)
    elif IN($use; "min", "max") then ($type | numeric or IN("date", "date_nanos"))
    else ($type | numeric) end;
  def lens_type($t): if ($t | numeric) then "number" elif ($t | IN("keyword", "constant_keyword", "ip")) then "string"
    elif ($t | IN("date", "date_nanos")) then "date" else $t end;
  # what a field is expected to hold: Lens says it; for Grafana, what Lens says of the same field
  ($uses | map(select(.dataType)) | map({key: .field, value: .dataType}) | from_entries) as $known
  | ($t[0] | if .index_templates then [.index_templates[] | .index_template]
             else [to_entries[] | .value] end
     | map({patterns: .index_patterns, props: ([(.template.mappings.properties // {}) | flat("")] | from_entries),
            dynamic: (.template.mappings.dynamic_templates // [])})) as $tpl
  | [ $uses[] | . as $u
      | ($u.dataType // $known[$u.field] // (if $u.use | IN("terms", "top_metrics", "last_value", "unique_count", "cardinality") then null else "number" end)) as $expect
      # each pattern of the data view ("pano-kickstart*,pano-samples*"), as the
      # name of one of its partitions
      | ($u.pattern | split(",") | map(sub("^pano-"; $prefix) | sub("\\*$"; "-2026.01"))) as $indices
      | ($indices | join(",")) as $index
      | [$tpl[] | select(any(.patterns[]; . as $g | any($indices[]; test($g | globre))))] as $applies
      | ([$applies[] | .props[$u.field] // empty] | first) as $type
      # a field the templates do not describe: what their dynamic rules make of
      # it, when the result fits whatever form the value takes in JSON
      | ($applies[0].dynamic // []) as $dyn
      | ([$dyn[] | to_entries[] | .value | select((.match // .path_match // "*") == "*")
          | {key: (.match_mapping_type // ""), value: .mapping.type}] | from_entries) as $rules
      | (if $type != null then null
         elif $expect == "number" and ($rules.long // "" | numeric) and ($rules.double // "" | numeric) then "long or double"
         elif $expect == "string" and $rules.string == "keyword" then "keyword"
         else null end) as $dynamic
      | if ($applies | length) == 0 then {fail: "\($u.where): no index template applies to \($index)"}
        elif $type == null and ($declared | index([$u.field])) != null then
          {fail: "\($u.where): \($u.field) is in schemas/ but not in the templates of \($index) (are they generated from this tree'"'"'s schemas?)"}
        elif $type == null and $dynamic != null then
          {warn: "\($u.where): \($u.field) is not in the templates of \($index); their dynamic rules map it as \($dynamic)"}
        elif $type == null then {fail: "\($u.where): field \($u.field) is not in the templates of \($index)"}
        elif (fits($u.use; $type) | not) then {fail: "\($u.where): field \($u.field) is \($type) in the templates, unfit for \($u.use)"}
        elif $expect and $u.use != "date_histogram" and lens_type($type) != $expect then
          {fail: "\($u.where): \($u.field) should be a \($expect), the templates map it as \($type)"}
        else empty end ] as $r
  | ($r[] | select(.warn) | "WARN: " + .warn),
    ($r | map(select(.fail)) | if length > 0 then (.[] | "FAIL: " + .fail), ("\(length) field uses do not fit the index templates\n" | halt_error(1))
     else "checked \($uses | length) field uses: all in the templates with fitting types" end)
'
