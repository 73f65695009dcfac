#!/usr/bin/env bash
# docs/events.md is generated from schemas/ (tools/gen-events-md.sh) and
# says the same; every event schema is in it.
set -euo pipefail
: "${PANO_SOURCE:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$PANO_SOURCE/tools/gen-events-md.sh" "$PANO_SOURCE/schemas" >"$tmp/events.md"
if ! diff -u "$PANO_SOURCE/docs/events.md" "$tmp/events.md"; then
    echo "FAIL: docs/events.md differs from schemas/; run tools/regen.sh" >&2
    exit 1
fi
for f in "$PANO_SOURCE"/schemas/events/*.schema.json; do
    name=$(jq -r .title "$f")
    grep -q "^## $name\$" "$PANO_SOURCE/docs/events.md" || { echo "FAIL: $name not in docs/events.md" >&2; exit 1; }
    # every property of the schema is a row
    for p in $(jq -r '.properties | keys[]' "$f"); do
        grep -qF "| \`$p\` |" "$PANO_SOURCE/docs/events.md" || { echo "FAIL: $name.$p not in docs/events.md" >&2; exit 1; }
    done
done
echo "PASS: docs/events.md is in step with $(ls "$PANO_SOURCE"/schemas/events/*.schema.json | wc -l) event schemas"
