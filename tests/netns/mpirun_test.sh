#!/usr/bin/env bash
# netns_mpirun: OpenMPI's mpirun starts Braid's perf binary across an emulated 4-host, 2-rack
# cluster, two ranks a host (tools/netcluster --mpi: its daemons run in the hosts' namespaces).
# Ranks come from OMPI_COMM_WORLD_*, the unique id through a file keyed by the MPI job; every
# rank must sit on its host, the AllReduce results must check, and the ranks on one host must
# use shared memory and those on two hosts TCP.
#
#   mpirun_test.sh path/to/tools/netcluster path/to/all_reduce_perf
#
# Needs root, `ip netns` and mpirun; otherwise it skips (exit 77).
NETCLUSTER=$1 PERF=$2
# shellcheck source=netns_common.sh
source "$(dirname "$0")/netns_common.sh"
if ! command -v mpirun >/dev/null; then echo "SKIPPED: mpirun not found (openmpi-bin)"; exit 77; fi
netns_scratch mpirun

NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 240 "$NETCLUSTER" --prefix "$P" --hosts 4 \
  --racks 2 --ranks-per-host 2 --mpi --timeout 200 -- "$PERF" -b 64K -e 1M -f 4 -n 2 -w 1 -c 1 \
  >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then cat "$LOG"; echo "FAIL: the run exited $status"; exit 1; fi

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
grep -q "Out of bounds values : 0 OK" "$LOG" || fail "the results did not check"
for r in 0 1 2 3 4 5 6 7; do
  h=$((r / 2))
  grep -Eq "#  Rank +$r Group +$r Pid +[0-9]+ on +${P}h$h " "$LOG" || fail "rank $r is not on ${P}h$h"
done
# Rank 0's peers: rank 1 shares its host, rank 2 does not.
grep -q "rank 0 -> rank 1 via SHM" "$LOG" || fail "rank 0 does not reach rank 1 over shared memory"
grep -q "rank 0 -> rank 2 via TCP" "$LOG" || fail "rank 0 does not reach rank 2 over TCP"
if (( failures )); then grep -E "NCCL|Rank" "$LOG" | head -40; exit 1; fi
echo "PASS: 8 ranks on 4 hosts under mpirun, results checked"
