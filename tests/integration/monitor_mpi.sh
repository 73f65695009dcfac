#!/usr/bin/env bash
# pano-monitor under a real MPI launcher: `mpirun -n 4 pano-monitor -- task`
# runs one monitor per rank, and each publishes its own start, online and
# end events with the rank the launcher gave it (PMI_RANK from MPICH's
# hydra, OMPI_COMM_WORLD_RANK from Open MPI), while mpirun exits with the
# tasks' status. deploy/install-deps.sh installs MPICH.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/monitor_lib.sh"

if ! command -v mpirun >/dev/null; then
    log "SKIP: no mpirun (deploy/install-deps.sh installs MPICH's)"
    exit 77
fi
MPIRUN=(mpirun)
if mpirun --version 2>&1 | grep -q "Open MPI"; then
    # Open MPI refuses root without these, and 4 ranks on fewer cores.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    MPIRUN+=(--oversubscribe)
fi
require_rabbitmq
queue_setup
# Ranks come from the launcher alone.
unset OMPI_COMM_WORLD_RANK PMI_RANK PMI_ID SLURM_PROCID ALPS_APP_PE MPIRUN_RANK PANO_RANK

# check_ranks FILE EXITCODE: four ranks, 0 to 3, each with its own monitor
# and source, a start, at least one online sample and an end event with the
# exit code.
check_ranks() {
    local ev=$1 code=$2
    expect "$ev" '[.[] | .rank] | all(. != null)' "every event has a rank"
    expect "$ev" '[.[] | .rank] | unique == [0,1,2,3]' "ranks 0 to 3"
    expect "$ev" 'group_by(.rank) | all(
                     ([.[] | select(.event == "kickstart.inv.start")] | length == 1)
                     and ([.[] | select(.event == "kickstart.inv.online")] | length >= 1)
                     and ([.[] | select(.event == "kickstart.inv.end")] | length == 1))' \
        "each rank: one start, online samples, one end"
    expect "$ev" "[.[] | select(.event == \"kickstart.inv.end\") | .exitcode] == [$code,$code,$code,$code]" \
        "exit code $code in every end event"
    expect "$ev" '[.[] | select(.event == "kickstart.inv.start") | .monitor_pid] | unique | length == 4' \
        "one monitor per rank"
    expect "$ev" 'group_by(.rank) | all((map(.event_id | sub("-[0-9]+$"; "")) | unique | length == 1)
                                       and (map(.seq) | sort == [range(1; length + 1)]))' \
        "each rank its own source, seq from 1"
    expect "$ev" '[.[] | .event_id | sub("-[0-9]+$"; "")] | unique | length == 4' "four sources"
    check_schema "$ev"
}

# ---- four ranks burning CPU, sampled every 0.2 s
rc=0
"${MPIRUN[@]}" -n 4 "$MONITOR" -i 0.2 -- "$WORKLOAD" burn 0.5 >"$TEST_DIR/mpi.out" 2>"$TEST_DIR/mpi.log" ||
    rc=$?
[[ $rc == 0 ]] || fail "mpirun exited $rc"
[[ $(grep -c '"report"' "$TEST_DIR/mpi.out") == 4 ]] || fail "not every rank ran the task: $(cat "$TEST_DIR/mpi.out")"
drain "$TEST_DIR/run.events"
check_ranks "$TEST_DIR/run.events" 0
expect "$TEST_DIR/run.events" '[.[] | select(.event == "kickstart.inv.end") | .utime] | all(. >= 0.4)' \
    "every rank's CPU time"
log "mpirun -n 4: four ranks, each with its own events"

# ---- the tasks' exit status through the monitors and mpirun
rc=0
"${MPIRUN[@]}" -n 4 "$MONITOR" -- "$WORKLOAD" exit 3 >/dev/null 2>>"$TEST_DIR/mpi.log" || rc=$?
[[ $rc == 3 ]] || fail "mpirun exited $rc, expected the tasks' 3"
drain "$TEST_DIR/exit.events"
check_ranks "$TEST_DIR/exit.events" 3
log "exit status 3 through pano-monitor and mpirun"
no_sanitizer_reports
