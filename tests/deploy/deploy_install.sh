#!/usr/bin/env bash
# meson install into a temporary DESTDIR: the programs, a man page for each,
# the example properties file, the schemas, the dashboards, the broker
# layout, the explorer's pages, the systemd units (which systemd-analyze verifies, hardening
# included). Every --help is complete: it lists every long option of the
# program's getopt table, and the man page documents every option --help
# lists; man pages have no roff warnings.
set -euo pipefail
: "${PANO_BUILD:?}" "${PANO_SOURCE:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest

meson install -C "$PANO_BUILD" --destdir "$dest" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "meson install failed"; }
prefix=$(meson introspect "$PANO_BUILD" --buildoptions | jq -r '.[] | select(.name == "prefix") | .value')
root=$dest$prefix
for f in share/pano/pano.properties share/pano/schemas/envelope.schema.json \
    share/pano/kibana/pano.ndjson share/pano/grafana/pano.json share/pano/rabbitmq/definitions.json \
    share/doc/pano/events.md share/pano/explorer/index.html share/pano/explorer/app.js \
    share/pano/explorer/style.css; do
    [[ -f $root/$f ]] || fail "$prefix/$f not installed"
done
cmp -s "$root/share/pano/pano.properties" "$PANO_SOURCE/deploy/pano.properties" || fail "installed pano.properties differs"
for s in "$PANO_SOURCE"/schemas/events/*.schema.json; do
    [[ -f $root/share/pano/schemas/events/$(basename "$s") ]] || fail "schema $(basename "$s") not installed"
done

# programs and their man pages
programs=()
for p in "$root"/bin/pano-*; do programs+=("$(basename "$p")"); done
((${#programs[@]} >= 4)) || fail "only ${#programs[@]} programs installed"
for p in "${programs[@]}"; do
    man=$root/share/man/man1/$p.1
    [[ -f $man ]] || fail "no man page for $p"
    warn=$(groff -man -ww -z "$man" 2>&1) || true
    [[ -z $warn ]] || fail "$p.1: $warn"
    # (leaks at exit are not what is checked here: sanitizer builds run too)
    help=$(ASAN_OPTIONS=detect_leaks=0 "$root/bin/$p" --help 2>&1) || fail "$p --help exited non-zero"
    # every option --help shows is in the man page (roff writes - as \-)
    for o in $(grep -oE -- '(^|[ ,])--[a-z][a-z-]+' <<<"$help" | sed -E 's/^[ ,]*//' | sort -u); do
        grep -qF -- "$(sed 's/-/\\-/g' <<<"$o")" "$man" || fail "$p: $o is in --help but not in $p.1"
    done
    # every long option of the program's getopt table is in --help
    src=$(grep -rlE --include='*.c' "\"$p\"" "$PANO_SOURCE/publishers" "$PANO_SOURCE/broker-bridge" \
        "$PANO_SOURCE/indexer" "$PANO_SOURCE/query" "$PANO_SOURCE/explorer" "$PANO_SOURCE/tools" 2>/dev/null | head -n1) ||
        fail "$p: no source file names the program"
    if [[ -n $src ]]; then
        for o in $(grep -oE '\{"[a-z][a-z-]*", *(no|required|optional)_argument' "$src" | sed -E 's/\{"([a-z-]+)".*/\1/' | sort -u); do
            grep -qE -- "--$o\b" <<<"$help" || fail "$p: option --$o ($src) is not in --help"
        done
    fi
done

# systemd units, checked against the installed programs
units=$root/lib/systemd/system
opt_dir=$(meson introspect "$PANO_BUILD" --buildoptions | jq -r '.[] | select(.name == "systemd_unit_dir") | .value')
[[ -z $opt_dir ]] || units=$dest$opt_dir
for u in pano-bridge.service pano-bridge@.service pano-indexer.service pano-indexer@.service pano-explorer.service; do
    [[ -f $units/$u ]] || fail "systemd unit $u not installed"
    grep -q "^ExecStart=$prefix/bin/pano-[a-z]* --config " "$units/$u" || fail "$u: ExecStart"
    for k in Restart=on-failure KillSignal=SIGTERM TimeoutStopSec= DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict; do
        grep -q "^$k" "$units/$u" || fail "$u: no $k"
    done
done
if command -v systemd-analyze >/dev/null; then
    mkdir -p "$tmp/units"
    for u in pano-bridge pano-indexer; do
        sed "s|^ExecStart=$prefix/bin/|ExecStart=$root/bin/|" "$units/$u.service" >"$tmp/units/$u.service"
        sed "s|^ExecStart=$prefix/bin/|ExecStart=$root/bin/|" "$units/$u@.service" >"$tmp/units/$u@.service"
        cp "$tmp/units/$u@.service" "$tmp/units/$u@1.service"
    done
    sed "s|^ExecStart=$prefix/bin/|ExecStart=$root/bin/|" "$units/pano-explorer.service" >"$tmp/units/pano-explorer.service"
    (cd "$tmp/units" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no ./*.service) >"$tmp/verify" 2>&1 ||
        { cat "$tmp/verify" >&2; fail "systemd-analyze verify"; }
    if grep -v "^$" "$tmp/verify" | grep -q .; then cat "$tmp/verify" >&2; fail "systemd-analyze verify warned"; fi
    for u in pano-bridge pano-indexer pano-explorer; do
        score=$(cd "$tmp/units" && systemd-analyze security --offline=yes "./$u.service" 2>/dev/null |
            sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
        [[ -n $score ]] || fail "systemd-analyze security gave no score for $u"
        awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "$u: exposure $score > 2.0"
        echo "$u.service: exposure $score"
    done
else
    echo "NOTE: no systemd-analyze: units checked for their keys only"
fi
echo "PASS: installed ${#programs[@]} programs with man pages, units, data under $prefix"
