#!/usr/bin/env bash
# pano-transfer over sftp:// and scp:// against an OpenSSH server this test
# starts on 127.0.0.1 (own config, host key, user key and port; needs root
# and the openssh-server package, else the test is skipped): uploads that
# create remote directories, downloads, a wrong host key, a missing file,
# sftp uploads resumed from what the server has (--continue, and a session
# cut mid-upload).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/transfer_lib.sh"
no_broker
SSHD=/usr/sbin/sshd
SFTP_SERVER=/usr/lib/openssh/sftp-server
if [[ ! -x $SSHD || ! -x $SFTP_SERVER ]] || ((EUID != 0)) || ! command -v ssh-keygen >/dev/null; then
    log "SKIP: needs root and openssh-server (sshd, sftp-server, ssh-keygen)"
    exit 77
fi

d=$TEST_DIR/ssh
mkdir -p "$d" /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$d/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$d/other_key"
ssh-keygen -q -t ed25519 -N '' -f "$d/user_key"
cp "$d/user_key.pub" "$d/authorized_keys"
port=$(free_ports 1)
cat >"$d/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $d/host_key
PidFile $d/sshd.pid
AuthorizedKeysFile $d/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
Subsystem sftp internal-sftp
CFG
start sshd "$SSHD" -D -e -f "$d/sshd_config"
wait_until 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null || fail "sshd did not start"
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$d/host_key.pub")" >"$d/known_hosts"
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$d/other_key.pub")" >"$d/wrong_hosts"
user=$(id -un)
ssh_opts=(--set "pano.transfer.ssh_key=$d/user_key" --set "pano.transfer.ssh_known_hosts=$d/known_hosts"
    --retry-delay 0.05 --retries 1)

head -c 2000003 /dev/urandom >"$TEST_DIR/data.bin"
size=$(stat -c %s "$TEST_DIR/data.bin")
remote=$TEST_DIR/remote

for scheme in sftp scp; do
    url="$scheme://$user@127.0.0.1:$port$remote/$scheme/sub/data.bin"
    # upload, creating the remote directories (sftp; scp needs them there)
    [[ $scheme == scp ]] && mkdir -p "$remote/scp/sub"
    rc=0
    "$PT" copy "${ssh_opts[@]}" "$TEST_DIR/data.bin" "$url" >"$TEST_DIR/up.jsonl" 2>"$TEST_DIR/up.err" || rc=$?
    [[ $rc == 0 ]] || fail "$scheme upload exited $rc: $(cat "$TEST_DIR/up.err") $(tail -5 "$TEST_DIR/sshd.log")"
    cmp "$TEST_DIR/data.bin" "$remote/$scheme/sub/data.bin" || fail "$scheme upload differs"
    check "$(event_of "$TEST_DIR/up.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $size and .destination_url == \"$url\"" "$scheme upload event"
    # download
    rc=0
    "$PT" copy "${ssh_opts[@]}" --checksum sha256 "$url" "$TEST_DIR/back-$scheme.bin" >"$TEST_DIR/down.jsonl" 2>"$TEST_DIR/down.err" || rc=$?
    [[ $rc == 0 ]] || fail "$scheme download exited $rc: $(cat "$TEST_DIR/down.err")"
    cmp "$TEST_DIR/data.bin" "$TEST_DIR/back-$scheme.bin" || fail "$scheme download differs"
    check "$(event_of "$TEST_DIR/down.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $size and .sha256 == \"$(sha256sum <"$TEST_DIR/data.bin" | cut -d' ' -f1)\"" "$scheme download event"
    log "$scheme: upload and download of $size bytes"
done

# third party: an sftp file relayed to another sftp path
rc=0
"$PT" copy "${ssh_opts[@]}" "sftp://$user@127.0.0.1:$port$remote/sftp/sub/data.bin" \
    "sftp://$user@127.0.0.1:$port$remote/relay/data.bin" >"$TEST_DIR/r.jsonl" 2>"$TEST_DIR/r.err" || rc=$?
[[ $rc == 0 ]] || fail "sftp relay exited $rc: $(cat "$TEST_DIR/r.err")"
cmp "$TEST_DIR/data.bin" "$remote/relay/data.bin" || fail "sftp relay differs"
check "$(event_of "$TEST_DIR/r.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $size and .bytes_received == $size" "sftp relay event"
log "sftp to sftp: relayed"

# ---- uploads resume from what the server has (sftp) ------------------------------------
up=$remote/resume/data.bin
mkdir -p "$remote/resume"
url="sftp://$user@127.0.0.1:$port$up"
# a partial destination left by an earlier run: --continue sends the rest
head -c 700000 "$TEST_DIR/data.bin" >"$up"
rc=0
"$PT" copy "${ssh_opts[@]}" --continue "$TEST_DIR/data.bin" "$url" >"$TEST_DIR/uc.jsonl" 2>"$TEST_DIR/uc.err" || rc=$?
[[ $rc == 0 ]] || fail "sftp upload --continue exited $rc: $(cat "$TEST_DIR/uc.err")"
cmp "$TEST_DIR/data.bin" "$up" || fail "sftp upload --continue: file differs"
check "$(event_of "$TEST_DIR/uc.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $((size - 700000))" "sftp upload --continue moved only the rest"
# a larger (other) file is replaced, not continued
head -c $((size + 5000)) /dev/urandom >"$up"
"$PT" copy "${ssh_opts[@]}" --continue "$TEST_DIR/data.bin" "$url" >"$TEST_DIR/uc2.jsonl" 2>/dev/null || fail "sftp upload --continue (larger) failed"
cmp "$TEST_DIR/data.bin" "$up" || fail "sftp upload --continue over a larger file: file differs"
check "$(event_of "$TEST_DIR/uc2.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $size" "sftp upload --continue over a larger file"
# without --continue an existing file is replaced whole
head -c 700000 "$TEST_DIR/data.bin" >"$up"
"$PT" copy "${ssh_opts[@]}" "$TEST_DIR/data.bin" "$url" >"$TEST_DIR/uc3.jsonl" 2>/dev/null || fail "sftp upload over a partial file failed"
cmp "$TEST_DIR/data.bin" "$up" || fail "sftp upload over a partial file: file differs"
check "$(event_of "$TEST_DIR/uc3.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $size" "sftp upload without --continue"
log "sftp upload --continue: the rest of a partial file, all of it over a larger one"

# A connection cut mid-upload: a second sshd whose first session's sftp
# server gets only the first 1,000,000 bytes of requests, after which the
# session's sshd process is killed (later sessions are served whole); the
# retry asks for the size (stat) and sends the rest.
cat >"$d/cut-sftp" <<SH
#!/bin/sh
[ -e "$d/cut-done" ] && exec $SFTP_SERVER
: >"$d/cut-done"
dd iflag=count_bytes count=1000000 bs=65536 2>/dev/null | $SFTP_SERVER
kill -KILL \$PPID
SH
chmod +x "$d/cut-sftp"
port2=$(free_ports 1)
sed -e "s/^Port .*/Port $port2/" -e "s|^PidFile .*|PidFile $d/sshd2.pid|" \
    -e "s|^Subsystem .*|Subsystem sftp $d/cut-sftp|" "$d/sshd_config" >"$d/sshd2_config"
start sshd2 "$SSHD" -D -e -f "$d/sshd2_config"
wait_until 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port2" 2>/dev/null || fail "the second sshd did not start"
echo "[127.0.0.1]:$port2 $(cut -d' ' -f1,2 "$d/host_key.pub")" >>"$d/known_hosts"
rc=0
"$PT" copy "${ssh_opts[@]}" --retries 2 "$TEST_DIR/data.bin" \
    "sftp://$user@127.0.0.1:$port2$remote/resume/cut.bin" >"$TEST_DIR/cut.jsonl" 2>"$TEST_DIR/cut.err" || rc=$?
[[ $rc == 0 ]] || fail "cut sftp upload exited $rc: $(cat "$TEST_DIR/cut.err")"
check_resumed_upload "cut sftp upload" "$TEST_DIR/data.bin" "$remote/resume/cut.bin" "$TEST_DIR/cut.jsonl" "$TEST_DIR/cut.err" "$size"
log "sftp upload cut after $RESUMED_AT bytes: the rest sent ($((size - RESUMED_AT)) bytes; $MOVED counted over both attempts)"

# a missing remote file: one attempt, a failure event
rc=0
"$PT" copy "${ssh_opts[@]}" "sftp://$user@127.0.0.1:$port$remote/nothing" "$TEST_DIR/nothing" >"$TEST_DIR/m.jsonl" 2>/dev/null || rc=$?
[[ $rc == 1 && ! -e $TEST_DIR/nothing ]] || fail "missing remote file: exit $rc"
check "$(event_of "$TEST_DIR/m.jsonl" transfer.inv.local.single)" '.status == 1 and .retries == 0 and (.error | length) > 0' "missing remote file event"

# a host key that does not match known_hosts is refused
rc=0
"$PT" copy --set "pano.transfer.ssh_key=$d/user_key" --set "pano.transfer.ssh_known_hosts=$d/wrong_hosts" --retries 0 \
    "sftp://$user@127.0.0.1:$port$remote/sftp/sub/data.bin" "$TEST_DIR/mitm" >"$TEST_DIR/k.jsonl" 2>/dev/null || rc=$?
[[ $rc == 1 && ! -e $TEST_DIR/mitm ]] || fail "wrong host key: exit $rc"
check "$(event_of "$TEST_DIR/k.jsonl" transfer.inv.local.single)" '.status == 1 and (.error | test("known|host|key"; "i"))' "wrong host key event"
log "missing file and wrong host key: failure events"
log "PASS"
