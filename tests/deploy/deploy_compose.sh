#!/usr/bin/env bash
# deploy/docker-compose.yml is valid (docker compose config: no engine
# needed), every long-running service has a healthcheck, ports are bound to
# 127.0.0.1, data lives in named volumes, images match the local stack's
# versions, and the RabbitMQ definitions match what pano-bridge declares.
set -euo pipefail
: "${PANO_BUILD:?}" "${PANO_SOURCE:?}"
cd "$PANO_SOURCE/deploy"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v docker-compose >/dev/null; then
    compose=(docker-compose)
else
    fail "neither 'docker compose' nor docker-compose is installed (deploy/install-deps.sh installs docker-compose)"
fi
echo "validating with: ${compose[*]} ($("${compose[@]}" version --short 2>/dev/null || true))"
"${compose[@]}" -f docker-compose.yml config -q || fail "docker-compose.yml is not valid"
# PANO_BIND etc. from the environment must not change the checks below.
env -u PANO_BIND -u PANO_ES_VERSION -u PANO_KAFKA_VERSION \
    "${compose[@]}" -f docker-compose.yml --profile grafana config >"$tmp/config.yml" ||
    fail "docker-compose.yml with --profile grafana is not valid"
yq . "$tmp/config.yml" >"$tmp/config.json"

services=$(jq -r '.services | keys[]' "$tmp/config.json")
for s in rabbitmq kafka elasticsearch kibana pano-bridge pano-indexer grafana; do
    grep -qx "$s" <<<"$services" || fail "service $s missing"
done
# every service that keeps running has a healthcheck
jq -e '[.services | to_entries[] | select(.value.restart != "no") | select(.value.healthcheck == null) | .key] | length == 0' \
    "$tmp/config.json" >/dev/null || fail "services without a healthcheck: $(jq -c '[.services | to_entries[] | select(.value.restart != "no" and .value.healthcheck == null) | .key]' "$tmp/config.json")"
# published ports only on loopback
bad=$(jq -r '.services[] | (.ports // [])[] | if type == "string" then . else "\(.host_ip // ""):\(.published)" end | select(startswith("127.0.0.1:") | not)' "$tmp/config.json")
[[ -z $bad ]] || fail "ports not bound to 127.0.0.1: $bad"
# data in named volumes
for v in rabbitmq-data kafka-data es-data; do
    jq -e --arg v "$v" '.volumes | has($v)' "$tmp/config.json" >/dev/null || fail "volume $v missing"
done
# pano services: built from deploy/Dockerfile, with the shared properties file
for s in pano-bridge pano-indexer; do
    jq -e --arg s "$s" '.services[$s].build.dockerfile == "deploy/Dockerfile"' "$tmp/config.json" >/dev/null ||
        fail "$s is not built from deploy/Dockerfile"
    jq -e --arg s "$s" '[.services[$s].volumes[] | (if type == "string" then . else "\(.source):\(.target)" end) | select(test("pano.properties:/etc/pano/pano.properties"))] | length == 1' \
        "$tmp/config.json" >/dev/null || fail "$s does not mount deploy/pano.properties"
    # every PANO_* variable names a configuration key
    for var in $(jq -r --arg s "$s" '.services[$s].environment // {} | keys[] | select(startswith("PANO_"))' "$tmp/config.json"); do
        key=$(tr 'A-Z_' 'a-z.' <<<"$var")
        "$PANO_BUILD/tools/pano-config" --keys | tr 'A-Z' 'a-z' | grep -qx "${key}" ||
            fail "$s: $var is not the environment name of any configuration key"
    done
done
grep -q '^FROM .* AS runtime' Dockerfile || fail "Dockerfile has no runtime stage"
for s in pano-bridge pano-indexer pano-explorer; do
    grep -qx "$s" <<<"$services" || fail "service $s missing"
done
jq -e '.services["pano-explorer"].environment.PANO_EXPLORER_PASSWORD_FILE != null' "$tmp/config.json" >/dev/null ||
    fail "pano-explorer listens on every address of its container without a password"

# The Dockerfile installs the Debian packages of every library the build asks
# for (meson's dependency() and find_library(); Check only for the tests,
# which the image does not build; threads and dl are meson's own, in libc),
# and those of every library a program loads.
stage() { sed -n "/^FROM .* AS $1\$/,/^FROM /p" Dockerfile; }
build_stage=$(stage build) runtime_stage=$(stage runtime)
package_of() { dpkg -S "$1" 2>/dev/null | head -n1 | cut -d: -f1; }
while read -r kind name; do
    [[ $name == check || $name == threads || $name == dl ]] && continue
    if [[ $kind == dependency ]]; then
        pkg=$(package_of "$(pkg-config --variable=pcfiledir "$name")/$name.pc")
    else
        pkg=$(package_of "*/lib$name.so")
    fi
    [[ -n $pkg ]] || fail "no Debian package holds the build's library $name"
    grep -qw -- "$pkg" <<<"$build_stage" || fail "the Dockerfile's build stage does not install $pkg (for $name)"
done < <(grep -rhoE "(dependency|find_library)\('[A-Za-z0-9_.+-]+'" "$PANO_SOURCE" --include=meson.build |
         grep -v "^$PANO_SOURCE/tests" | sed -E "s/^(.*)\('(.*)'$/\1 \2/" | sort -u)
needed() {
    for prog in "$PANO_BUILD"/{publishers/*,broker-bridge,indexer,query,explorer,tools}/pano-*; do
        if [[ -f $prog && -x $prog ]]; then objdump -p "$prog" | awk '$1 == "NEEDED" {print $2}'; fi
    done | sort -u
}
while read -r soname; do
    pkg=$(package_of "*/$soname")
    case $pkg in libc6 | libgcc-s1 | libasan* | libubsan* | "") continue ;; esac
    grep -qw -- "$pkg" <<<"$runtime_stage" || fail "the Dockerfile's runtime stage does not install $pkg (for $soname)"
done < <(needed)

# KRaft formats its storage with CLUSTER_ID: a Base64 (URL-safe) UUID, 22 characters
jq -e '.services.kafka.environment.CLUSTER_ID | test("^[A-Za-z0-9_-]{22}$")' "$tmp/config.json" >/dev/null ||
    fail "kafka CLUSTER_ID is not a Base64 UUID"

# same versions as the local stack (deploy/local/pom.xml)
pom_es=$(sed -n 's:.*<es.version>\(.*\)</es.version>.*:\1:p' local/pom.xml)
pom_kafka=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' local/pom.xml)
jq -e --arg v "$pom_es" '.services.elasticsearch.image | endswith(":" + $v)' "$tmp/config.json" >/dev/null ||
    fail "elasticsearch image is not $pom_es (deploy/local/pom.xml)"
jq -e --arg v "$pom_es" '.services.kibana.image | endswith(":" + $v)' "$tmp/config.json" >/dev/null ||
    fail "kibana image is not $pom_es"
jq -e --arg v "$pom_kafka" '.services.kafka.image == "apache/kafka:" + $v' "$tmp/config.json" >/dev/null ||
    fail "kafka image is not apache/kafka:$pom_kafka"

# RabbitMQ definitions: what pano-bridge declares with its defaults
defs=rabbitmq/definitions.json
keys=$("$PANO_BUILD/tools/pano-config" --properties)
default() { sed -n "s/^#$1 = //p" <<<"$keys"; }
queue=$(default pano.bridge.queue)
dlx=$(default pano.bridge.dead_letter_exchange)
bindings=$(default pano.bridge.bindings)
vhost=$(jq -r '.vhosts[0].name' "$defs")
jq -e --arg q "$queue" --arg d "$dlx" '.queues[] | select(.name == $q) | .durable and (.auto_delete | not) and .arguments == {"x-dead-letter-exchange": $d}' "$defs" >/dev/null ||
    fail "queue $queue must be durable with exactly x-dead-letter-exchange=$dlx (as pano-bridge declares it)"
jq -e --arg q "$queue.dead" '.queues[] | select(.name == $q) | .durable and .arguments == {}' "$defs" >/dev/null ||
    fail "queue $queue.dead missing or with arguments pano-bridge does not declare"
jq -e --arg d "$dlx" '.exchanges[] | select(.name == $d) | .type == "fanout" and .durable and (.auto_delete | not) and (.internal | not)' "$defs" >/dev/null ||
    fail "exchange $dlx must be a durable fanout"
jq -e '.exchanges[] | select(.name == "monitoring") | .type == "topic" and .durable and (.auto_delete | not)' "$defs" >/dev/null ||
    fail "exchange monitoring must be a durable topic exchange"
jq -e --arg q "$queue" --arg k "$bindings" '.bindings[] | select(.source == "monitoring" and .destination == $q and .routing_key == $k)' "$defs" >/dev/null ||
    fail "binding monitoring -> $queue ($bindings) missing"
jq -e --arg q "$queue.dead" --arg d "$dlx" '.bindings[] | select(.source == $d and .destination == $q)' "$defs" >/dev/null ||
    fail "binding $dlx -> $queue.dead missing"
jq -e '[.queues[], .exchanges[], .bindings[], .permissions[], .policies[]] | all(.vhost == "'"$vhost"'")' "$defs" >/dev/null ||
    fail "definitions use more than one vhost"
jq -e '.services["pano-bridge"].environment.PANO_AMQP_URL | test("^amqp://pano@rabbitmq:5672/'"$vhost"'/monitoring$")' "$tmp/config.json" >/dev/null ||
    fail "pano-bridge's URL does not name vhost $vhost, exchange monitoring, user pano"
# the user's password hash is the one of the password file the services read
password=$(head -n1 rabbitmq/pano-password)
hash=$(jq -r '.users[] | select(.name == "pano") | .password_hash' "$defs")
base64 -d <<<"$hash" >"$tmp/hash"
head -c 4 "$tmp/hash" >"$tmp/salt"
expect=$({ cat "$tmp/salt"; printf '%s' "$password"; } | openssl dgst -sha256 -binary | od -An -tx1 | tr -d ' \n')
got=$(tail -c +5 "$tmp/hash" | od -An -tx1 | tr -d ' \n')
[[ $expect == "$got" ]] || fail "the password hash in $defs is not that of rabbitmq/pano-password"
echo "PASS: compose file valid, $(wc -l <<<"$services") services, definitions match pano-bridge"
