#!/usr/bin/env bash
# deploy/pano.properties is `pano-config --properties` (the key registry,
# lib/config_keys.c), and every default in it is a valid value of its key.
set -euo pipefail
: "${PANO_BUILD:?}" "${PANO_SOURCE:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The configuration must come from the files below only, not from the
# caller's environment (tests/run.sh exports the local stack's PANO_* URLs).
while read -r var; do [[ $var == PANO_BUILD || $var == PANO_SOURCE || $var == PANO_FIXTURES ]] || unset "$var"; done < <(env | sed -n 's/^\(PANO_[A-Z0-9_]*\|PEGASUS_[A-Z0-9_]*\|KICKSTART_[A-Z0-9_]*\|CONDOR_JOBID\)=.*/\1/p')
"$PANO_BUILD/tools/pano-config" --properties >"$tmp/generated"
if ! diff -u "$PANO_SOURCE/deploy/pano.properties" "$tmp/generated"; then
    echo "FAIL: deploy/pano.properties differs from the key registry; run tools/regen.sh" >&2
    exit 1
fi
# Every key of the registry is in the file, once.
"$PANO_BUILD/tools/pano-config" --keys | sort >"$tmp/keys"
grep -oE '^#pano\.[a-z0-9_.]+ =' "$PANO_SOURCE/deploy/pano.properties" | sed 's/^#//; s/ =$//' | sort >"$tmp/documented"
diff -u "$tmp/keys" "$tmp/documented" || { echo "FAIL: keys missing or repeated" >&2; exit 1; }
# Uncommented, the file loads: every default is valid for its key. (Keys
# without a default stay commented: an empty value would mean "set to ''".)
sed -E 's/^#(pano\.[a-z0-9_.]+ = .+)$/\1/' "$PANO_SOURCE/deploy/pano.properties" >"$tmp/all.properties"
n=$(grep -cE '^pano\.' "$tmp/all.properties")
((n > 20)) || { echo "FAIL: only $n keys uncommented" >&2; exit 1; }
"$PANO_BUILD/tools/pano-config" --config "$tmp/all.properties" --show-config >"$tmp/shown" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; echo "FAIL: the uncommented defaults do not load" >&2; exit 1; }
if [[ -s $tmp/err ]]; then cat "$tmp/err" >&2; echo "FAIL: warnings loading the defaults" >&2; exit 1; fi
grep -q "from file" "$tmp/shown" || { echo "FAIL: --show-config does not show values from the file" >&2; exit 1; }
# Pegasus users' properties are understood as they are.
cat >"$tmp/pegasus.properties" <<'PROPS'
pegasus.monitord.encoding = json
pegasus.catalog.workflow.amqp.url = amqp://friend:donatedata@msgs.example.org:5672/prod/workflows
pegasus.catalog.workflow.amqp.events = stampede.*
pegasus.gridstart.arguments = -m 10
PROPS
"$PANO_BUILD/tools/pano-config" --config "$tmp/pegasus.properties" --show-config >"$tmp/shown" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
grep -q '^pano.events = stampede.\*  *# from file' "$tmp/shown" || { cat "$tmp/shown" >&2; echo "FAIL: pegasus.catalog.workflow.amqp.events" >&2; exit 1; }
grep -q '^pano.amqp.url = amqp://friend:\*\*\*@msgs.example.org' "$tmp/shown" || { echo "FAIL: pegasus.catalog.workflow.amqp.url" >&2; exit 1; }
grep -q '^pano.encoding = json  *# from file' "$tmp/shown" || { echo "FAIL: pegasus.monitord.encoding" >&2; exit 1; }
echo "PASS: deploy/pano.properties documents all $(wc -l <"$tmp/keys") keys"
