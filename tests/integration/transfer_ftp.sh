#!/usr/bin/env bash
# pano-transfer over ftp:// against vsftpd, started by this test on
# 127.0.0.1 with its own configuration (anonymous, a writable incoming/
# directory; needs root and the vsftpd package, else the test is skipped):
# download, upload creating directories, a missing file, resume of a
# partial download (--continue, REST), uploads resumed from what the server
# has (--continue, and a connection cut mid-upload: SIZE, then APPE).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/transfer_lib.sh"
no_broker
VSFTPD=/usr/sbin/vsftpd
if [[ ! -x $VSFTPD ]] || ((EUID != 0)) || ! id ftp >/dev/null 2>&1; then
    log "SKIP: needs root and vsftpd (with its ftp user)"
    exit 77
fi

d=$TEST_DIR/ftp
mkdir -p "$d/root/pub" "$d/root/incoming" "$d/empty"
chmod 755 "$TEST_DIR" "$d" "$d/root" "$d/root/pub"
chown ftp "$d/root/incoming"
head -c 3000007 /dev/urandom >"$d/root/pub/data.bin"
chmod 644 "$d/root/pub/data.bin"
size=$(stat -c %s "$d/root/pub/data.bin")
port=$(free_ports 1)
cat >"$d/vsftpd.conf" <<CFG
listen=YES
listen_ipv6=NO
listen_address=127.0.0.1
listen_port=$port
background=NO
anonymous_enable=YES
no_anon_password=YES
anon_root=$d/root
local_enable=NO
write_enable=YES
anon_upload_enable=YES
anon_mkdir_write_enable=YES
anon_umask=022
# append to (APPE) and replace files: resumed uploads
anon_other_write_enable=YES
pasv_enable=YES
pasv_address=127.0.0.1
seccomp_sandbox=NO
secure_chroot_dir=$d/empty
xferlog_enable=YES
vsftpd_log_file=$d/vsftpd.log
dual_log_enable=YES
CFG
start vsftpd "$VSFTPD" "$d/vsftpd.conf"
wait_until 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null || fail "vsftpd did not start"
base="ftp://127.0.0.1:$port"
opts=(--retry-delay 0.05 --retries 1)

rc=0
"$PT" copy "${opts[@]}" --checksum sha256 "$base/pub/data.bin" "$TEST_DIR/down.bin" >"$TEST_DIR/d.jsonl" 2>"$TEST_DIR/d.err" || rc=$?
[[ $rc == 0 ]] || fail "ftp download exited $rc: $(cat "$TEST_DIR/d.err")"
cmp "$d/root/pub/data.bin" "$TEST_DIR/down.bin" || fail "ftp download differs"
check "$(event_of "$TEST_DIR/d.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $size" "ftp download event"
log "ftp download: $size bytes"

rc=0
"$PT" copy "${opts[@]}" "$TEST_DIR/down.bin" "$base/incoming/a/b/up.bin" >"$TEST_DIR/u.jsonl" 2>"$TEST_DIR/u.err" || rc=$?
[[ $rc == 0 ]] || fail "ftp upload exited $rc: $(cat "$TEST_DIR/u.err")"
cmp "$d/root/pub/data.bin" "$d/root/incoming/a/b/up.bin" || fail "ftp upload differs"
check "$(event_of "$TEST_DIR/u.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $size" "ftp upload event"
log "ftp upload into new directories: $size bytes"

rc=0
"$PT" copy "${opts[@]}" --retries 3 "$base/pub/nothing" "$TEST_DIR/nothing" >"$TEST_DIR/m.jsonl" 2>/dev/null || rc=$?
[[ $rc == 1 && ! -e $TEST_DIR/nothing ]] || fail "missing ftp file: exit $rc"
check "$(event_of "$TEST_DIR/m.jsonl" transfer.inv.local.single)" '.status == 1 and .retries == 0 and (.error | length) > 0' "missing ftp file event"
log "missing file: one attempt, failure event"

head -c 1000000 "$d/root/pub/data.bin" >"$TEST_DIR/partial.bin"
rc=0
"$PT" copy "${opts[@]}" --continue "$base/pub/data.bin" "$TEST_DIR/partial.bin" >"$TEST_DIR/c.jsonl" 2>/dev/null || rc=$?
[[ $rc == 0 ]] || fail "ftp --continue exited $rc"
cmp "$d/root/pub/data.bin" "$TEST_DIR/partial.bin" || fail "ftp --continue: file differs"
check "$(event_of "$TEST_DIR/c.jsonl" transfer.inv.local.single)" ".bytes_transferred == $((size - 1000000))" "ftp --continue moved only the rest"
log "ftp --continue: resumed after 1000000 bytes"

# ---- uploads resume from what the server has ------------------------------------------
up=$d/root/incoming/resume.bin
# a partial destination left by an earlier run: --continue sends the rest (APPE)
head -c 1000000 "$d/root/pub/data.bin" >"$up"
chown ftp "$up"
rc=0
"$PT" copy "${opts[@]}" --continue "$d/root/pub/data.bin" "$base/incoming/resume.bin" >"$TEST_DIR/uc.jsonl" 2>/dev/null || rc=$?
[[ $rc == 0 ]] || fail "ftp upload --continue exited $rc"
cmp "$d/root/pub/data.bin" "$up" || fail "ftp upload --continue: file differs"
check "$(event_of "$TEST_DIR/uc.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $((size - 1000000))" "ftp upload --continue moved only the rest"
# all of it there already: nothing moves
"$PT" copy "${opts[@]}" --continue "$d/root/pub/data.bin" "$base/incoming/resume.bin" >"$TEST_DIR/uc2.jsonl" 2>/dev/null || fail "ftp upload --continue (complete) failed"
cmp "$d/root/pub/data.bin" "$up" || fail "ftp upload --continue (complete): file differs"
check "$(event_of "$TEST_DIR/uc2.jsonl" transfer.inv.local.single)" '.status == 0 and .bytes_transferred == 0' "ftp upload --continue of a complete file"
# a larger (other) file is not continued but replaced
head -c $((size + 5000)) /dev/urandom >"$up"
"$PT" copy "${opts[@]}" --continue "$d/root/pub/data.bin" "$base/incoming/resume.bin" >"$TEST_DIR/uc3.jsonl" 2>/dev/null || fail "ftp upload --continue (larger) failed"
cmp "$d/root/pub/data.bin" "$up" || fail "ftp upload --continue over a larger file: file differs"
check "$(event_of "$TEST_DIR/uc3.jsonl" transfer.inv.local.single)" ".status == 0 and .bytes_transferred == $size" "ftp upload --continue over a larger file"
log "ftp upload --continue: the rest of a partial file, nothing for a complete one, all of it over a larger one"

# A connection cut mid-upload: a second server, slowed to 1 MB/s, whose
# session processes are killed once 300 kB arrived; the retry asks for
# the size (SIZE) and appends the rest.
port2=$(free_ports 1)
sed -e "s/^listen_port=.*/listen_port=$port2/" -e "s|^vsftpd_log_file=.*|vsftpd_log_file=$d/slow.log|" \
    "$d/vsftpd.conf" >"$d/slow.conf"
echo "anon_max_rate=1000000" >>"$d/slow.conf"
start vsftpd-slow "$VSFTPD" "$d/slow.conf"
slow_pid=${PIDS[-1]}
wait_until 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port2" 2>/dev/null || fail "the second vsftpd did not start"
descendants() { local p; for p in $(pgrep -P "$1"); do echo "$p"; descendants "$p"; done; }
cut=$d/root/incoming/cut.bin
"$PT" copy --retries 2 --retry-delay 0.1 "$d/root/pub/data.bin" "ftp://127.0.0.1:$port2/incoming/cut.bin" \
    >"$TEST_DIR/cut.jsonl" 2>"$TEST_DIR/cut.err" &
pt_pid=$!
wait_until 20 bash -c "[[ -f '$cut' ]] && (( \$(stat -c %s '$cut') >= 300000 ))" || fail "the upload did not start"
sessions=$(descendants "$slow_pid")
[[ -n $sessions ]] || fail "no vsftpd session to cut"
# shellcheck disable=SC2086
kill -KILL $sessions
rc=0
wait "$pt_pid" || rc=$?
[[ $rc == 0 ]] || fail "cut ftp upload exited $rc: $(cat "$TEST_DIR/cut.err")"
check_resumed_upload "cut ftp upload" "$d/root/pub/data.bin" "$cut" "$TEST_DIR/cut.jsonl" "$TEST_DIR/cut.err" "$size"
had=$RESUMED_AT
grep -q "OK UPLOAD: .*\"/incoming/cut.bin\", $((size - had)) bytes" "$d/slow.log" || fail "the server did not receive just the rest: $(grep UPLOAD "$d/slow.log")"
log "ftp upload cut after $had bytes: the rest appended ($((size - had)) bytes; $MOVED counted over both attempts)"
log "PASS"
