# Helpers for the pano-transfer tests. Source it after lib.sh.
#
# The local and HTTP tests need no broker: they unset every broker URL and
# ask for JSON lines on stdout (pano.output "-", else the events would go to
# the embedded store), and give a workflow UUID so that stderr holds only
# what pano-transfer has to say.

PT="$PANO_BUILD/publishers/transfer/pano-transfer"
HTTPD="$PANO_BUILD/tests/integration/transfer_httpd"
[[ -x $PT ]] || fail "pano-transfer is not built ($PT)"
# As transfer_*_valgrind (PANO_TEST_VALGRIND=1) the test runs pano-transfer
# under valgrind, which must then report no memory error and no leak either.
if [[ ${PANO_TEST_VALGRIND:-} == 1 ]]; then
    require_valgrind "$PT"
    PT=$(valgrind_wrapper "$PT")
fi

no_broker() {
    unset PANO_AMQP_URL PEGASUS_AMQP_URL PEGASUS_TRANSFER_PUBLISH PANO_TRANSFER_PUBLISH
    export PANO_OUTPUT=-
    export PANO_WF_UUID=${PANO_WF_UUID:-$(cat /proc/sys/kernel/random/uuid)}
    # events for a broker that is down go to the test's own spool
    export PANO_SPOOL_DIR="$TEST_DIR/spool"
}

# check JSON JQ_EXPR WHAT: fail unless the expression holds.
check() { jq -e "$2" <<<"$1" >/dev/null || fail "$3: $1"; }

# The event of a JSON-lines file with a given name (the Nth, from 1).
event_of() { # FILE NAME [N]
    jq -c --arg n "$2" 'select(.event == $n)' "$1" | sed -n "${3:-1}p"
}

# check_resumed_upload WHAT SRC COPY JSONL ERR SIZE: an upload cut mid-way
# and retried arrived whole, was resumed (the retry sent the rest of what
# the server had), and its event counts the bytes of both attempts. Sets
# RESUMED_AT (what the server had) and MOVED (bytes counted).
check_resumed_upload() {
    local what=$1 src=$2 copy=$3 jsonl=$4 err=$5 size=$6 sent1
    cmp "$src" "$copy" || fail "$what: file differs"
    sent1=$(sed -n 's/.* \([0-9]*\) bytes moved in this attempt; retry 1 .*/\1/p' "$err")
    RESUMED_AT=$(sed -n 's/.*the server has \([0-9]*\) of [0-9]* bytes, sending the rest.*/\1/p' "$err")
    [[ -n $sent1 && -n $RESUMED_AT ]] && ((RESUMED_AT > 0)) || fail "$what was not resumed: $(cat "$err")"
    # the first attempt moved what libcurl counted, or what the server had
    # if more (sftp counts what the server acknowledged)
    MOVED=$(((sent1 > RESUMED_AT ? sent1 : RESUMED_AT) + size - RESUMED_AT))
    check "$(event_of "$jsonl" transfer.inv.local.single)" ".status == 0 and .retries == 1 and .bytes_transferred == $MOVED" \
        "$what: bytes moved (the rest after $RESUMED_AT)"
}

# Start the test HTTP server on ROOT; sets HTTP_PORT and HTTP_LOG.
start_httpd() { # ROOT
    local root=$1
    HTTP_LOG="$TEST_DIR/httpd.log"
    "$HTTPD" "$root" >"$TEST_DIR/httpd.port" 2>"$HTTP_LOG" &
    PIDS+=($!)
    wait_until 10 grep -q PORT "$TEST_DIR/httpd.port" || fail "transfer_httpd did not start"
    HTTP_PORT=$(awk '{print $2}' "$TEST_DIR/httpd.port")
    log "transfer_httpd on 127.0.0.1:$HTTP_PORT"
}

# The bytes /gen/SIZE serves (byte i = i % 251), from the server itself.
gen_sha256() { curl -fsS "http://127.0.0.1:$HTTP_PORT/gen/$1" | sha256sum | cut -d' ' -f1; }

# schema_check FILE...: every event valid against its schema (skipped
# without python3's jsonschema).
schema_check() {
    local rc=0 out
    out=$(python3 "$(dirname "${BASH_SOURCE[0]}")/transfer_schema_check.py" \
        "${PANO_SOURCE:-$(dirname "${BASH_SOURCE[0]}")/../..}/schemas" "$@" 2>&1) || rc=$?
    case $rc in
    0) log "schemas: $out" ;;
    77) log "schemas: python3 jsonschema missing, not checked" ;;
    *) fail "schema check: $out" ;;
    esac
}
