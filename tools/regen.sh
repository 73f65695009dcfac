#!/usr/bin/env bash
# Regenerate the files that are generated from a single source, after a
# change to that source (tests fail while they differ):
#
#   deploy/pano.properties       <- lib/config_keys.c    (pano-config --properties)
#   docs/events.md               <- schemas/             (tools/gen-events-md.sh)
#   deploy/kibana/pano.ndjson,   <- deploy/panels.json   (tools/gen-dashboards.sh)
#   deploy/grafana/pano.json
#
#   tools/regen.sh [BUILD_DIR]   (default build/; it is built first)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[[ -f $build/build.ninja ]] || meson setup "$build" >/dev/null
ninja -C "$build" tools/pano-config >/dev/null
"$build/tools/pano-config" --properties >deploy/pano.properties
bash tools/gen-events-md.sh schemas >docs/events.md
if [[ -f tools/gen-dashboards.sh ]]; then
    bash tools/gen-dashboards.sh
fi
git status --short deploy/pano.properties docs/events.md deploy/kibana deploy/grafana 2>/dev/null || true
