#!/bin/sh
# meson install step: write pano-indexer's index templates (generated from
# schemas/) to <datadir>/pano/index-templates.json. An indexer without
# --print-templates is skipped with a note.
set -eu
indexer=$1
dir=${DESTDIR:-}$2
mkdir -p "$dir"
if "$indexer" --print-templates >"$dir/index-templates.json.tmp" 2>/dev/null; then
    mv "$dir/index-templates.json.tmp" "$dir/index-templates.json"
    echo "Installing index templates to $dir/index-templates.json"
else
    rm -f "$dir/index-templates.json.tmp"
    echo "pano-indexer has no --print-templates: index-templates.json not installed"
fi
