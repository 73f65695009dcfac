#!/usr/bin/env bash
# pano-monitor's GPU figures, through a stand-in for NVIDIA's NVML that the
# test suite builds (tests/integration/nvml_stub.c, libnvidia-ml.so.1 in
# the build's tests/integration/, found through LD_LIBRARY_PATH): this
# machine has no GPU. The stub answers from a file that names the devices
# and which processes (by name) use them with how much memory and SM time.
# No service: events into a file.
#   - no library, and a library whose init fails (no driver): the task
#     runs, no GPU field, no GPU event;
#   - the task's two processes on device 0 and one on device 1, and a
#     process outside the task (pid 1) on device 0: the samples count the
#     task's alone (memory summed over processes and devices, SM % summed),
#     one kickstart.inv.gpu.stats per device used and sample, with the
#     device's own figures; the idle device 2 is not reported; the end
#     event and kickstart.inv.gpu.stats.max carry the peaks;
#   - a task in a PID namespace of its own (unshare -rpf) whose pid the
#     driver gives as its namespace sees it: matched through NSpid.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"
W=$PANO_BUILD/tests/integration/pano-workload
STUB_DIR=$PANO_BUILD/tests/integration
[[ -f $STUB_DIR/libnvidia-ml.so.1 ]] || fail "the stub NVML library was not built"
GiB=1073741824

run() { run_to_file "$1" --log-level debug "${@:2}"; }
expect() { # NAME EVENT JQ-ON-THEM WHAT
    jq -e "$3" <<<"$(file_events "$1" "$2" .)" >/dev/null || fail "$1: $4: $(file_events "$1" "$2" .)"
}
no_gpu() { # NAME: no GPU field or event
    expect "$1" kickstart.inv.online 'length >= 2 and all(.[]; .gpu_mem == null and .gpu_util == null)' \
        "GPU fields without a GPU"
    [[ $(jq -s '[.[] | select(.event | startswith("kickstart.inv.gpu"))] | length' "$TEST_DIR/$1.jsonl") == 0 ]] ||
        fail "$1: GPU events without a GPU"
    expect "$1" kickstart.inv.end '.[0].gpu_mem_peak == null and .[0].exitcode == 0' "the end"
}

# ---- no library; a library that finds no driver
run none -i 0.2 -- "$W" sleep 0.5
no_gpu none
grep -q "no NVML" "$TEST_DIR/none.log" || fail "none: the debug log does not say there is no NVML"
LD_LIBRARY_PATH=$STUB_DIR run nodriver -i 0.2 -- "$W" sleep 0.5
no_gpu nodriver
grep -q "nvmlInit_v2 returned 9" "$TEST_DIR/nodriver.log" || fail "nodriver: the debug log does not say why"

# ---- devices used by the task's processes, and by one outside it
cat >"$TEST_DIR/gpus" <<EOF
driver 550.54.15
device GPU-00000000-1111-2222-3333-444444444444 $((40 * GiB)) $((7 * GiB)) 85 40 250000 NVIDIA A100-SXM4-40GB
device GPU-11111111-1111-2222-3333-444444444444 $((40 * GiB)) $((1 * GiB)) 20 5 90000 NVIDIA A100-SXM4-40GB
device GPU-22222222-1111-2222-3333-444444444444 $((40 * GiB)) 0 0 0 50000 NVIDIA A100-SXM4-40GB
proc 0 gpu-train $((2 * GiB)) 30 10
proc 1 gpu-infer $((1 * GiB)) 20 5
pid 0 1 $((3 * GiB)) 25 8
EOF
export PANO_NVML_STUB=$TEST_DIR/gpus
# The stub counts every process by its name. In the ASan build,
# LeakSanitizer's check at a workload's exit clones a tracer process that
# carries the workload's name: a third gpu-train in the task's tree for a
# sample, rightly counted by the monitor. The workloads' leaks are not
# what this test checks, so they do without that check.
no_lsan="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
LD_LIBRARY_PATH=$STUB_DIR run gpus -i 0.2 -- env "$no_lsan" bash -c \
    "'$W' name gpu-train 1.5 0 & '$W' name gpu-train 1.5 0 & '$W' name gpu-infer 1.5 0; wait"
grep -q "GPU: 3 device(s), driver 550.54.15" "$TEST_DIR/gpus.log" || fail "gpus: no NVML found"
# samples that saw all three processes: 2 x 2 GiB + 1 GiB, 30 + 30 + 20 %
expect gpus kickstart.inv.online "[.[] | select(.gpu_mem == $((5 * GiB)) and .gpu_util == 80)] | length >= 3" \
    "the task's 5 GiB and 80 % in the samples"
expect gpus kickstart.inv.online "all(.[]; .gpu_mem <= $((5 * GiB)))" "more than the task's memory"
expect gpus kickstart.inv.gpu.stats '[.[].id] | unique == [0, 1]' "devices other than 0 and 1"
expect gpus kickstart.inv.gpu.stats "[.[] | select(.id == 0 and .task_mem_usage == $((4 * GiB)))][0]
    | .name == \"NVIDIA A100-SXM4-40GB\" and .uuid == \"GPU-00000000-1111-2222-3333-444444444444\"
      and .nvidia_driver_version == \"550.54.15\" and .total_memory == $((40 * GiB))
      and .mem_usage == $((7 * GiB)) and .gpu_utilization == 85 and .mem_utilization == 40
      and .power_usage == 250000 and .task_sm_utilization == 60 and (.compute_procs | length) == 2
      and all(.compute_procs[]; .mem_usage == $((2 * GiB)) and .pid != 1)
      and all(.proc_samples[]; .sm_util == 30 and .mem_util == 10)" "device 0 as the stub gives it"
expect gpus kickstart.inv.gpu.stats "all(.[] | select(.id == 1); .task_mem_usage == $GiB and .power_usage == 90000)" \
    "device 1"
expect gpus kickstart.inv.end ".[0].gpu_mem_peak == $((5 * GiB)) and .[0].gpu_util_peak == 80" "the end's peaks"
expect gpus kickstart.inv.gpu.stats.max "length == 1 and (.[0].devices | map(.id)) == [0, 1]
    and .[0].devices[0].max_power_usage == 250000 and .[0].devices[0].max_task_mem_usage == $((4 * GiB))
    and .[0].devices[0].max_task_sm_utilization == 60 and .[0].devices[1].max_task_mem_usage == $GiB" \
    "the peaks per device"
check_schema "$TEST_DIR/gpus.jsonl"

# ---- a task in a PID namespace of its own, given by the pid it has there
own_pidns=()
if unshare -rpf true 2>/dev/null; then
    own_pidns=(unshare -rpf)
elif unshare -pf true 2>/dev/null; then
    own_pidns=(unshare -pf) # root, where a user namespace is refused (a chroot)
fi
if ((${#own_pidns[@]})); then
    cat >"$TEST_DIR/inner" <<EOF
driver 550.54.15
device GPU-00000000-1111-2222-3333-444444444444 $((40 * GiB)) $((2 * GiB)) 50 10 150000 NVIDIA A100-SXM4-40GB
proc 0 gpu-contained $((2 * GiB)) 45 10 inner
EOF
    PANO_NVML_STUB=$TEST_DIR/inner LD_LIBRARY_PATH=$STUB_DIR run inner -i 0.2 -- \
        env "$no_lsan" "${own_pidns[@]}" bash -c "'$W' name gpu-contained 1.5 0; true"
    expect inner kickstart.inv.online "[.[] | select(.gpu_mem == $((2 * GiB)) and .gpu_util == 45)] | length >= 3" \
        "the contained process's 2 GiB, its pid 2 in its namespace"
    expect inner kickstart.inv.gpu.stats "all(.[]; .compute_procs[0].pid > 2)" \
        "the process is named by its pid inside the namespace, not as the monitor sees it"
    inner="a PID namespace matched"
else
    inner="PID namespace skipped (unshare -rpf and unshare -pf are refused here)"
    log "$inner"
fi
log "no library, no driver: no GPU figures; 3 processes on 2 of 3 devices: 5 GiB, 80 %; $inner"
