#!/usr/bin/env bash
# pano's dashboards from their one source, deploy/panels.json:
#
#   deploy/kibana/pano.ndjson    Kibana 8 saved objects (data views, Lens
#                                visualizations, dashboards), for the
#                                saved-objects import API
#   deploy/kibana/queries.json   the Elasticsearch request behind each panel
#                                (what the tests run, and what to run by hand)
#   deploy/grafana/pano.json     the same panels for Grafana (Elasticsearch
#                                data sources of deploy/grafana/provisioning)
#   docs/dashboards.md           what each panel computes
#
#   tools/gen-dashboards.sh [OUT_DIR]   (default: the repository; the tests
#                                        generate into a temporary directory)
# Field types come from schemas/. Needs jq.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src}
mkdir -p "$out/deploy/kibana" "$out/deploy/grafana" "$out/docs"
panels=$src/deploy/panels.json

# Every schema in one array: envelope first.
schemas=$(jq -s '.' "$src/schemas/envelope.schema.json" "$src"/schemas/events/*.schema.json)
hints=$(jq -c '.field_types | del(._comment)' "$src/deploy/panels.json")

common='
  # The JSON Schema type of a dotted field: envelope first, then every event.
  def subschema($s; $name):
    if ($s.properties // {}) | has($name) then $s.properties[$name]
    else ([($s.patternProperties // {}) | to_entries[] as $e | select($name | test($e.key)) | $e.value] | first)
         // (if ($s.additionalProperties | type) == "object" then $s.additionalProperties else null end)
    end
    | if . != null and .type == "array" then .items else . end;
  def walkpath($s; $parts):
    if $s == null then null
    elif ($parts | length) == 0 then $s
    else walkpath(subschema($s; $parts[0]); $parts[1:]) end;
  def schematype($schemas; $field):
    if $field == "@timestamp" then "date"
    elif $hints[$field] and ([ $schemas[] | walkpath(.; $field | split(".")) | select(. != null)] | length) == 0
    then $hints[$field] else
    ([ $schemas[] | walkpath(.; $field | split(".")) | select(. != null)
       | (.type // (if .enum then (.enum[0] | type) else null end))
       | if type == "array" then map(select(. != "null"))[0] else . end ] | first) as $t
    | if $t == "integer" or $t == "number" then "number"
      elif $t == "string" then "string"
      elif $t == "boolean" then "boolean"
      else error("field \($field): no schema gives its type") end
    end;

  # ---- Elasticsearch request of a panel ----
  def es_metric($m; $i):
    if $m.op == "count" then {}
    elif $m.op == "rate" then
      {("m\($i)_max"): {max: {field: $m.field}},
       ("m\($i)"): {derivative: {buckets_path: "m\($i)_max", unit: "1s"}}}
    elif $m.op == "last" then
      {("m\($i)"): {top_hits: {size: 1, sort: [{"@timestamp": {order: "desc"}}], _source: false,
                                fields: [$m.field]}}}
    elif $m.op == "unique_count" then {("m\($i)"): {cardinality: {field: $m.field}}}
    else {("m\($i)"): {($m.op): {field: $m.field}}} end;
  def es_metrics($p): [$p.metrics | to_entries[] | es_metric(.value; .key)] | add // {};
  def es_terms($f; $size): {terms: {field: $f, size: $size, order: {"_key": "asc"}}};
  def es_x($p):
    if $p.x == null then null
    elif $p.x == "date" then {date_histogram: {field: "@timestamp", fixed_interval: "30s", min_doc_count: 1}}
    else es_terms($p.x.field; $p.x.size) end;
  def nest($levels; $leaf):
    if ($levels | length) == 0 then $leaf
    else ($levels[0].agg + (nest($levels[1:]; $leaf) as $in | if ($in | length) > 0 then {aggs: $in} else {} end))
         as $a | {($levels[0].name): $a} end;
  def es_body($p):
    ([($p.split // []) | to_entries[] | {name: "s\(.key)", agg: es_terms(.value.field; .value.size)}]
     + (if es_x($p) then [{name: "x", agg: es_x($p)}] else [] end)) as $levels
    | {size: 0, track_total_hits: true,
       query: {bool: {filter: [{query_string: {query: $p.filter}}]}},
       aggs: (if ($levels | length) > 0 then nest($levels; es_metrics($p))
              else (es_metrics($p) | if length > 0 then . else {all: {value_count: {field: "@timestamp"}}} end) end)};
'


jq --argjson schemas "$schemas" --argjson hints "$hints" "$common"'
  .data_views as $dv
  | [ .panels[] | . as $p
      | { id, title, dashboard, data_view, event,
          index: ([$dv[] | select(.id == $p.data_view) | .title][0]),
          fields: ([ (.split // [])[] | {field, use: "terms"} ]
                   + (if (.x | type) == "object" then [{field: .x.field, use: "terms"}]
                      elif .x == "date" then [{field: "@timestamp", use: "date_histogram"}] else [] end)
                   + [ .metrics[] | select(.field) | {field, use: .op} ]),
          body: es_body(.) } ]
' "$panels" >"$out/deploy/kibana/queries.json"

# ---- Kibana saved objects (one object per line) ----
jq -c --argjson schemas "$schemas" --argjson hints "$hints" "$common"'
  def lens_terms($f; $size): {label: "\($f)", dataType: schematype($schemas; $f), operationType: "terms",
      sourceField: $f, isBucketed: true, scale: "ordinal",
      params: {size: $size, orderBy: {type: "alphabetical", fallback: false}, orderDirection: "asc",
               otherBucket: false, missingBucket: false, parentFormat: {id: "terms"},
               include: [], exclude: [], includeIsRegex: false, excludeIsRegex: false}};
  def lens_date: {label: "@timestamp", dataType: "date", operationType: "date_histogram",
      sourceField: "@timestamp", isBucketed: true, scale: "interval",
      params: {interval: "auto", includeEmptyRows: true, dropPartials: false}};
  def lens_num($op; $f; $lbl): {label: $lbl, customLabel: true, dataType: "number",
      operationType: $op, sourceField: $f, isBucketed: false, scale: "ratio", params: {emptyAsNull: true}};
  def lens_metric($m; $i):
    if $m.op == "count" then
      {("m\($i)"): {label: $m.label, customLabel: true, dataType: "number", operationType: "count",
                    sourceField: "___records___", isBucketed: false, scale: "ratio", params: {emptyAsNull: true}}}
    elif $m.op == "rate" then
      {("m\($i)r"): lens_num("max"; $m.field; "Maximum of \($m.field)"),
       ("m\($i)"): {label: $m.label, customLabel: true, dataType: "number", operationType: "counter_rate",
                    isBucketed: false, scale: "ratio", references: ["m\($i)r"], timeScale: "s"}}
    elif $m.op == "last" then
      schematype($schemas; $m.field) as $t
      | {("m\($i)"): {label: $m.label, customLabel: true, dataType: $t, operationType: "last_value",
                      sourceField: $m.field, isBucketed: false,
                      scale: (if $t == "number" then "ratio" else "ordinal" end),
                      params: {sortField: "@timestamp", showArrayValues: false}}}
    elif $m.op == "unique_count" then
      {("m\($i)"): (lens_num("unique_count"; $m.field; $m.label) | del(.params))}
    else
      {("m\($i)"): lens_num({avg: "average", sum: "sum", max: "max", min: "min"}[$m.op]; $m.field; $m.label)}
    end;
  def layer($p):
    ([($p.split // []) | to_entries[] | {("s\(.key)"): lens_terms(.value.field; .value.size)}] | add // {}) as $splits
    | (if $p.x == "date" then {x: lens_date} elif $p.x then {x: lens_terms($p.x.field; $p.x.size)} else {} end) as $x
    | ([$p.metrics | to_entries[] | lens_metric(.value; .key)] | add) as $metrics
    | {columns: ($splits + $x + $metrics),
       columnOrder: (($splits | keys) + ($x | keys) + ($metrics | keys | sort_by(if endswith("r") then 1 else 0 end))),
       incompleteColumns: {}, sampling: 1};
  def visualization($p):
    if $p.chart == "table" then
      {layerId: "layer1", layerType: "data",
       columns: ([($p.split // []) | keys[] | {columnId: "s\(.)"}]
                 + [$p.metrics | keys[] | {columnId: "m\(.)"}])}
    else
      {legend: {isVisible: true, position: "right"}, valueLabels: "hide", fittingFunction: "None",
       preferredSeriesType: $p.chart,
       axisTitlesVisibilitySettings: {x: true, yLeft: true, yRight: true},
       layers: [({layerId: "layer1", layerType: "data", seriesType: $p.chart, xAccessor: "x",
                  accessors: [$p.metrics | keys[] | "m\(.)"]}
                 + (if ($p.split // []) | length > 0 then {splitAccessor: "s0"} else {} end))]}
    end;
  .data_views as $dv
  | (.data_views[] | {id, type: "index-pattern", managed: false, references: [],
       coreMigrationVersion: "8.8.0", typeMigrationVersion: "8.0.0",
       attributes: {title, name, timeFieldName: "@timestamp", allowNoIndex: true,
                    fieldFormatMap: "{}", runtimeFieldMap: "{}", fieldAttrs: "{}", sourceFilters: "[]", typeMeta: "{}"}}),
    (.panels[] | . as $p
     | {id: $p.id, type: "lens", managed: false,
        coreMigrationVersion: "8.8.0", typeMigrationVersion: "8.9.0",
        references: [{type: "index-pattern", id: $p.data_view, name: "indexpattern-datasource-layer-layer1"}],
        attributes: {title: $p.title, description: $p.computes,
          visualizationType: (if $p.chart == "table" then "lnsDatatable" else "lnsXY" end),
          state: {adHocDataViews: {}, internalReferences: [], filters: [],
                  query: {language: "lucene", query: $p.filter},
                  datasourceStates: {formBased: {layers: {layer1: layer($p)}}},
                  visualization: visualization($p)}}}),
    (.panels as $all | .dashboards[] | . as $d
     | [$all[] | select(.dashboard == $d.id)] as $ps
     | (reduce ($ps | to_entries[]) as $e ({x: 0, y: 0, items: []};
          ($e.value.chart == "table") as $wide
          | (if $wide and .x > 0 then .x = 0 | .y += 15 else . end)
          | .items += [{i: "\($e.key + 1)", id: $e.value.id,
                        grid: {x: .x, y: .y, w: (if $wide then 48 else 24 end), h: 15, i: "\($e.key + 1)"}}]
          | if $wide or .x == 24 then .x = 0 | .y += 15 else .x = 24 end)) as $layout
     | {id: $d.id, type: "dashboard", managed: false,
        coreMigrationVersion: "8.8.0", typeMigrationVersion: "8.9.0",
        references: [$layout.items[] | {type: "lens", id: .id, name: "\(.i):panel_\(.i)"}],
        attributes: {title: $d.title, description: $d.description, version: 1, timeRestore: false,
          optionsJSON: ({useMargins: true, syncColors: false, syncCursor: true, syncTooltips: false,
                         hidePanelTitles: false} | tojson),
          panelsJSON: ([$layout.items[] | {type: "lens", gridData: .grid, panelIndex: .i,
                         embeddableConfig: {enhancements: {}}, panelRefName: "panel_\(.i)"}] | tojson),
          kibanaSavedObjectMeta: {searchSourceJSON: ({query: {query: "", language: "kuery"}, filter: []} | tojson)}}})
' "$panels" >"$out/deploy/kibana/pano.ndjson"

# ---- Grafana ----
jq --argjson schemas "$schemas" --argjson hints "$hints" "$common"'
  def gf_metric($m; $i):
    if $m.op == "count" then [{id: "\(100 + $i)", type: "count"}]
    elif $m.op == "rate" then
      [{id: "\(200 + $i)", type: "max", field: $m.field, hide: true},
       {id: "\(100 + $i)", type: "derivative", field: "\(200 + $i)", pipelineAgg: "\(200 + $i)",
        settings: {unit: "1s"}}]
    elif $m.op == "last" then
      [{id: "\(100 + $i)", type: "top_metrics",
        settings: {order: "desc", orderBy: "@timestamp", metrics: [$m.field]}}]
    elif $m.op == "unique_count" then [{id: "\(100 + $i)", type: "cardinality", field: $m.field}]
    else [{id: "\(100 + $i)", type: $m.op, field: $m.field}] end;
  def gf_terms($f; $size; $id): {id: $id, type: "terms", field: $f,
      settings: {size: "\($size)", order: "asc", orderBy: "_term", min_doc_count: "1"}};
  def gf_panel($p; $n; $pos):
    {id: $n, title: $p.title, description: $p.computes,
     type: (if $p.chart == "table" then "table" elif ($p.x | type) == "object" then "barchart" else "timeseries" end),
     datasource: {type: "elasticsearch", uid: $p.data_view},
     gridPos: $pos,
     targets: [{refId: "A", datasource: {type: "elasticsearch", uid: $p.data_view},
                query: "(\($p.filter)) AND ($filter)", timeField: "@timestamp",
                alias: (if ($p.split // []) | length > 0 then "{{term \($p.split[0].field)}}" else "" end),
                metrics: [$p.metrics | to_entries[] | gf_metric(.value; .key)[]],
                bucketAggs: ([($p.split // []) | to_entries[] | gf_terms(.value.field; .value.size; "\(10 + .key)")]
                             + (if $p.x == "date" then [{id: "2", type: "date_histogram", field: "@timestamp",
                                   settings: {interval: "auto", min_doc_count: "0", trimEdges: "0"}}]
                                elif $p.x then [gf_terms($p.x.field; $p.x.size; "2")] else [] end))}],
     options: (if $p.chart == "table" then {showHeader: true} else {legend: {displayMode: "table", placement: "right", showLegend: true}} end),
     fieldConfig: {defaults: (if $p.chart == "bar_stacked" then
                     {custom: {drawStyle: "bars", fillOpacity: 80, stacking: {mode: "normal", group: "A"}}}
                   elif $p.chart == "bar" then {} elif $p.chart == "line" then
                     {custom: {drawStyle: "line", showPoints: "always", spanNulls: true}} else {} end),
                   overrides: []}};
  .panels as $all
  | {uid: "pano", title: "pano", tags: ["pano"], editable: true, schemaVersion: 39, version: 1,
     description: "pano: workflow, job, transfer and I/O panels (generated from deploy/panels.json; the same panels as the Kibana dashboards).",
     time: {from: "now-24h", to: "now"}, refresh: "30s", graphTooltip: 1,
     templating: {list: [{name: "filter", type: "textbox", label: "Lucene filter",
                          description: "e.g. wf_uuid:\"<uuid>\" AND dag_job_id:\"<job>\"",
                          query: "*", current: {text: "*", value: "*"}, hide: 0}]},
     panels: (reduce (.dashboards | to_entries[]) as $d ({n: 1, y: 0, out: []};
               .out += [{id: .n, type: "row", title: $d.value.title, collapsed: false,
                         gridPos: {x: 0, y: .y, w: 24, h: 1}, panels: []}]
               | .n += 1 | .y += 1
               | reduce ([$all[] | select(.dashboard == $d.value.id)][]) as $p (.;
                   ($p.chart == "table") as $wide
                   | (if $wide and (.x // 0) > 0 then .x = 0 | .y += 8 else . end)
                   | .out += [gf_panel($p; .n; {x: (.x // 0), y: .y, w: (if $wide then 24 else 12 end), h: 8})]
                   | .n += 1
                   | if $wide or (.x // 0) == 12 then .x = 0 | .y += 8 else .x = 12 end)
               | if (.x // 0) > 0 then .x = 0 | .y += 8 else . end) | .out)}
' "$panels" >"$out/deploy/grafana/pano.json"

# ---- docs/dashboards.md ----
{
cat <<'HEAD'
# Dashboards: what each panel computes

**Generated** from [`deploy/panels.json`](../deploy/panels.json) by
`tools/gen-dashboards.sh` (run `tools/regen.sh` after changing it), like the
Kibana saved objects (`deploy/kibana/pano.ndjson`), the Grafana dashboard
(`deploy/grafana/pano.json`) and the Elasticsearch request behind each panel
(`deploy/kibana/queries.json`), so they cannot say different things. Tests
check every field against the index templates and run every request against
Elasticsearch after a real workflow.

Rules every panel follows:

- Time is the event's own time: `@timestamp` is the event's `ts` (set by the
  indexer), never the time of ingestion; a replayed backlog lands where it
  happened.
- Cumulative counters (`utime`, `stime`, `rchar`, `wchar`, `bread`, `bwrite`,
  `syscr`, `syscw`, `iowait` of `kickstart.inv.online`) are charted as
  **rates per job**: the maximum of the counter per job and time bucket, then
  the difference between consecutive buckets per second (Lens `counter_rate`,
  Elasticsearch `derivative` with `unit: 1s`, Grafana "Derivative" with unit
  1s). They are never summed over samples.
- CPU utilisation is Δ(utime + stime) / Δwall per sampling interval
  (`cpu_util`, in CPUs: 1.0 is one CPU busy), not utime / (utime + stime).
- Exit codes are real exit codes (`exitcode`, 128+N after signal N), never
  raw wait statuses.
- Aggregations have no document cap (no `size: 1000` sample lists): a job
  sampled for days is charted in full.
- Narrow any dashboard with the query bar: `wf_uuid : "<uuid>"`,
  `dag_job_id : "<job>"` (Grafana: the `filter` variable, Lucene syntax).
  A workflow has no index or alias of its own: the filter on `wf_uuid` is
  how one is opened, and a link does it, e.g.
  `http://localhost:5601/app/dashboards#/view/pano-dashboard-workflow?_a=(query:(language:kuery,query:'wf_uuid:"<uuid>"'))&_g=(time:(from:now-7d,to:now))`
  in Kibana, or
  `http://localhost:3000/d/pano/pano?var-filter=wf_uuid:"<uuid>"` in
  Grafana. (Saved as a search in Kibana, the same query opens in Discover
  with the workflow's events.)

HEAD
jq -r '
  .data_views as $dv | .panels as $ps
  | .dashboards[] | . as $d
  | "## \(.title)\n", .description, "",
    "| panel | events | chart | what it computes |", "|---|---|---|---|",
    ($ps[] | select(.dashboard == $d.id) | . as $p
     | "| \(.title) | `\(.filter | gsub("\\|"; "\\|"))` in `\([$dv[] | select(.id == $p.data_view)][0] | .title)` | \(.chart)\(if .x == "date" then " over time" elif .x then " by `\(.x.field)`" else "" end)\(if .split then ", per `\(.split | map(.field) | join("`, `"))`" else "" end) | \(.computes) |"),
    ""
' "$panels"
} >"$out/docs/dashboards.md"
