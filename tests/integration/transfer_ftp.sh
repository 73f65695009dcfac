#!/usr/bin/env bash
# pano-transfer over ftp:// against vsftpd, started by this test on
# 127.0.0.1 with its own configuration (anonymous, a writable incoming/
# directory; needs root and the vsftpd package, else the test is skipped):
# download, upload creating directories, a missing file, resume of a
# partial download (--continue, REST).
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
port=$(free_port)
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
log "PASS"
