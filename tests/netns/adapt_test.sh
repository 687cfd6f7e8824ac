#!/usr/bin/env bash
# netns_adapt: the network changes under a running job (core/adapt/adapt.h). On an emulated
# 8-host, 2-rack cluster whose ranks alternate racks and whose uplinks start as fast as the host
# links, a loop of 8 MiB AllReduces runs; 5 s in, the uplinks drop to a quarter (netcluster
# --reshape). Every rank must re-plan at the same call: the same call index and plan epoch in
# every rank's log, the racks the probe now finds (0,2,4,6 | 1,3,5,7), and a hierarchical
# algorithm chosen after it; every result stays exact (allreduce_loop checks each one).
# Then one host's link slowed to a tenth instead (host 3: rank 6): every rank names rank 6's
# host as slow at the same call (the log and braidCommStats_t, through BRAID_STATS_FILE), and
# the plan changes once, not back and forth.
# Then the same with BRAID_ADAPT=0 on one rank only: the ranks agree that none adapts.
#
#   adapt_test.sh path/to/tools/netcluster path/to/allreduce_loop
#
# Needs root and `ip netns`; otherwise it skips (exit 77, ctest's SKIP_RETURN_CODE).
NETCLUSTER=$1 LOOP=$2
# shellcheck source=netns_common.sh
source "$(dirname "$0")/netns_common.sh"
STATS=$(mktemp -d /tmp/braid-adapt-stats.XXXXXX)
netns_scratch adapt "$STATS"

cluster=(--prefix "$P" --hosts 8 --racks 2 --placement alternate --rack-gbit 2 --uplink-gbit 2)
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING timeout 240 "$NETCLUSTER" "${cluster[@]}" \
  --reshape 5:uplinks=0.5 -- "$LOOP" -b 8M -s 16 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then tail -40 "$LOG"; echo "FAIL: the adaptive run exited $status"; exit 1; fi

failures=0
switches=$(grep -o '^\[[0-7]\] .*adapt: comm [^ ]* rank [0-7]: call [0-9]*: plan epoch 1: 2 racks (0,2,4,6 | 1,3,5,7)' "$LOG" |
  sed -E 's/^\[([0-7])\].*call ([0-9]+): plan epoch 1.*/\1 \2/' | sort -u)
echo "re-plans (rank, call index):" $switches
ranks=$(awk '{print $1}' <<<"$switches" | sort -u | wc -l)
calls=$(awk '{print $2}' <<<"$switches" | sort -u | wc -l)
if [[ $ranks != 8 ]]; then echo "FAIL: $ranks of 8 ranks logged the re-plan onto 2 racks"; failures=1; fi
if [[ $calls != 1 ]]; then echo "FAIL: the ranks re-planned at different calls"; failures=1; fi
for r in 0 1 2 3 4 5 6 7; do
  grep -q "^\[$r\] .*ncclAllReduce count 2097152 x 4 B, 8 ranks: \(hier\|hierpipe\|rackring\) " "$LOG" ||
    { echo "FAIL: rank $r never chose a hierarchical AllReduce after the uplinks slowed"; failures=1; }
done
if [[ $failures != 0 ]]; then grep "adapt\|netcluster\|count 2097152" "$LOG" | head -40; exit 1; fi

# Host 3 (rank 6) slowed to 0.2 Gbit/s for good.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING BRAID_STATS_FILE="$STATS/%h.%p" timeout 240 \
  "$NETCLUSTER" "${cluster[@]}" --reshape 4:h3=0.2 -- "$LOOP" -b 8M -s 18 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then tail -40 "$LOG"; echo "FAIL: the slow-host run exited $status"; exit 1; fi
named=$(grep -o '^\[[0-7]\] .*adapt: comm [^ ]* rank [0-7]: call [0-9]*: rank 6 (host [^ ]*, pid [0-9]*) is on a slow host' "$LOG" |
  sed -E 's/^\[([0-7])\].*: call ([0-9]+): rank 6 .*/\1 \2/' | sort -u)
echo "slow host named (rank, call index):" $named
if [[ $(awk '{print $1}' <<<"$named" | sort -u | wc -l) != 8 ]]; then echo "FAIL: not every rank named rank 6's host slow"; failures=1; fi
if [[ $(awk '{print $2}' <<<"$named" | sort -u | wc -l) != 1 ]]; then echo "FAIL: the ranks named it at different calls"; failures=1; fi
if grep -q "is on a slow host" <(grep -v "rank 6 (host" "$LOG"); then echo "FAIL: a host other than rank 6's was named slow"; failures=1; fi
epochs=$(grep -o 'rank 0: call [0-9]*: plan epoch [0-9]*' "$LOG" | sort -u)
if [[ $(wc -l <<<"$epochs") != 1 ]]; then echo "FAIL: rank 0 changed plans other than once: $epochs"; failures=1; fi
files=$(ls "$STATS" | wc -l)
slowfiles=$(grep -l '"event":"destroy".*"slowRank":6,' "$STATS"/* | wc -l)
if [[ $files != 8 || $slowfiles != 8 ]]; then echo "FAIL: $slowfiles of $files stats files say slowRank 6 at destroy"; failures=1; fi
if [[ $failures != 0 ]]; then grep "adapt\|netcluster" "$LOG" | head -40; exit 1; fi

# One rank with BRAID_ADAPT=0: a warning from rank 0, and no rank adapts.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING timeout 240 "$NETCLUSTER" "${cluster[@]}" \
  --reshape 4:uplinks=0.5 -- sh -c '[ "$RANK" = 3 ] && export BRAID_ADAPT=0; exec "$0" "$@"' \
  "$LOOP" -b 8M -s 10 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then tail -40 "$LOG"; echo "FAIL: the run with BRAID_ADAPT=0 on rank 3 exited $status"; exit 1; fi
grep -q "^\[0\] .*BRAID_ADAPT is 0 on rank 3 but not on every rank: no rank adapts" "$LOG" ||
  { echo "FAIL: rank 0 did not warn that rank 3 turned adaptation off"; failures=1; }
if grep -q "adapt: comm" "$LOG"; then
  grep "adapt: comm" "$LOG" | head; echo "FAIL: a rank adapted although rank 3 set BRAID_ADAPT=0"; failures=1
fi
if [[ $failures != 0 ]]; then exit 1; fi
echo "PASS: all 8 ranks re-planned at call $(awk '{print $2}' <<<"$switches" | head -1) onto the probe's 2 racks; all named rank 6's host slow at call $(awk '{print $2}' <<<"$named" | head -1) and changed plans once; one rank's BRAID_ADAPT=0 turned it off for all"
