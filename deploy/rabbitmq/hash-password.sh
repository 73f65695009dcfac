#!/usr/bin/env bash
# Print the password_hash RabbitMQ stores for a password
# (rabbit_password_hashing_sha256: base64 of a 4-byte salt followed by
# SHA-256(salt + password)), for deploy/rabbitmq/definitions.json.
#
#   deploy/rabbitmq/hash-password.sh < password-file
#   deploy/rabbitmq/hash-password.sh --set < password-file   # write it into definitions.json
#
# The password is read from standard input (first line), never from the
# command line, so it does not show in ps.
set -euo pipefail
IFS= read -r password || [[ -n $password ]] || { echo "hash-password: no password on stdin" >&2; exit 2; }
[[ -n $password ]] || { echo "hash-password: empty password" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
head -c 4 /dev/urandom >"$tmp"
salt_hex=$(od -An -tx1 "$tmp" | tr -d ' \n')
{ cat "$tmp"; printf '%s' "$password"; } | openssl dgst -sha256 -binary >>"$tmp"
hash=$(base64 -w0 "$tmp")
if [[ ${1:-} == --set ]]; then
    defs=$(dirname "$0")/definitions.json
    jq --arg h "$hash" '(.users[] | select(.name == "pano") | .password_hash) = $h' "$defs" >"$defs.new"
    mv "$defs.new" "$defs"
    echo "hash-password: user pano's password_hash in $defs replaced (salt $salt_hex)" >&2
else
    echo "$hash"
fi
