#!/usr/bin/env bash
# netns_probe: with no cluster map, a communicator's init probe groups the hosts of an emulated
# 8-host, 2-rack cluster (uplinks at a third of the host links) into the right two racks, also
# when rank order alternates racks, and every rank reports the same racks.
#
#   probe_test.sh path/to/tools/netcluster path/to/all_reduce_perf
#
# Needs root and `ip netns`; otherwise it skips (exit 77, ctest's SKIP_RETURN_CODE).
NETCLUSTER=$1 PERF=$2
# shellcheck source=netns_common.sh
source "$(dirname "$0")/netns_common.sh"
netns_scratch probe

NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=GRAPH timeout 240 "$NETCLUSTER" --prefix "$P" --hosts 8 --racks 2 \
  --placement alternate -- "$PERF" -b 8 -e 8 -n 1 -w 0 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then cat "$LOG"; echo "FAIL: the run exited $status"; exit 1; fi

failures=0
for r in 0 1 2 3 4 5 6 7; do
  grep -q "^\[$r\] .*rack rack0: ranks 0,2,4,6$" "$LOG" || { echo "FAIL: rank $r does not put ranks 0,2,4,6 in one rack"; failures=1; }
  grep -q "^\[$r\] .*rack rack1: ranks 1,3,5,7$" "$LOG" || { echo "FAIL: rank $r does not put ranks 1,3,5,7 in one rack"; failures=1; }
done
grep "probe:" "$LOG" | head -1
if [[ $failures != 0 ]]; then grep "NCCL" "$LOG" | head -40; exit 1; fi
echo "PASS: 8 hosts grouped into the right 2 racks on every rank"
