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
          | {where: "kibana \($o.id)", pattern: $pattern, field: .sourceField, use: .operationType, dataType}
        ' "$src/deploy/kibana/pano.ndjson"
        # Grafana: bucket and metric fields; the index from the data source uid
        jq -c --slurpfile dv <(jq -c 'select(.type == "index-pattern") | {id, title: .attributes.title}' "$src/deploy/kibana/pano.ndjson") '
          .panels[] | select(.targets) | . as $p | .targets[]
          | ($dv[] | select(.id == $p.datasource.uid) | .title) as $pattern
          | ((.bucketAggs[] | {field, use: .type}),
             (.metrics[] | select(.type != "count" and .type != "derivative")
              | if .type == "top_metrics" then (.settings.metrics[] | {field: ., use: "top_metrics"})
                else {field, use: .type} end))
          | . + {where: "grafana \($p.title)", pattern: $pattern}
        ' "$src/deploy/grafana/pano.json"
    } | jq -sc 'unique'
)

jq -n --argjson uses "$uses" --arg prefix "$prefix" --slurpfile t "$templates" '
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
  # templates as [{patterns, properties}]
  ($t[0] | if .index_templates then [.index_templates[] | .index_template]
           else [to_entries[] | .value] end
   | map({patterns: .index_patterns, props: ([(.template.mappings.properties // {}) | flat("")] | from_entries),
          dynamic: (.template.mappings.dynamic_templates // [])})) as $tpl
  | [ $uses[] | . as $u
      | ($u.pattern | sub("^pano-"; $prefix) | rtrimstr("*")) as $index
      | [$tpl[] | select(any(.patterns[]; . as $g | $index | test($g | globre)))] as $applies
      | ([$applies[] | .props[$u.field] // empty] | first) as $type
      | if ($applies | length) == 0 then "\($u.where): no index template applies to \($index)"
        elif $type == null then "\($u.where): field \($u.field) is not in the templates of \($index)"
        elif (fits($u.use; $type) | not) then "\($u.where): field \($u.field) is \($type) in the templates, unfit for \($u.use)"
        elif $u.dataType and $u.use != "date_histogram" and lens_type($type) != $u.dataType then
          "\($u.where): Lens says \($u.field) is \($u.dataType), the templates map it as \($type)"
        else empty end ]
  | if length > 0 then (.[] | "FAIL: " + .), ("\(length) field uses do not fit the index templates\n" | halt_error(1)) else "checked \($uses | length) field uses: all in the templates with fitting types" end
' -r
