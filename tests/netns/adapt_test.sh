#!/usr/bin/env bash
# netns_adapt: the network changes under a running job (core/adapt/adapt.h). On an emulated
# 8-host, 2-rack cluster whose ranks alternate racks and whose uplinks start as fast as the host
# links, a loop of 8 MiB AllReduces runs. The init probe, one pair at a time, sees no racks; the
# first calls' connections run at about a quarter of its price (four flows share each uplink), so
# the ranks probe again under load and adopt the racks that finds (0,2,4,6 | 1,3,5,7), choosing a
# hierarchical algorithm, before 9 s in, when the uplinks drop to a quarter (netcluster
# --reshape) and the ranks re-plan again, onto the same racks re-priced. Every plan change and
# the probe under load must come at one call on all 8 ranks. Every result stays exact
# (allreduce_loop checks each one).
# Then one host's link slowed to a tenth instead (host 3: rank 6): every rank names rank 6's
# host as slow at the same call (the log and braidCommStats_t, through BRAID_STATS_FILE), and
# the plan does not change back and forth after it.
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
  --reshape 9:uplinks=0.5 -- "$LOOP" -b 8M -s 18 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then tail -40 "$LOG"; echo "FAIL: the adaptive run exited $status"; exit 1; fi

failures=0
# "rank, call index" of every rank's log line matching $1 (an extended regex after "call N: ").
at_call() {
  grep -oE "^\[[0-7]\] .*adapt: comm [^ ]* rank [0-7]: call [0-9]+: $1" "$LOG" |
    sed -E 's/^\[([0-7])\].*: call ([0-9]+): .*/\1 \2/' | sort -u
}
# Fails unless all 8 ranks logged $2 (a description) and at one call.
same_call() {
  if [[ $(awk '{print $1}' <<<"$1" | sort -u | grep -c .) != 8 ]]; then echo "FAIL: not every rank $2"; failures=1; fi
  if [[ $(awk '{print $2}' <<<"$1" | sort -u | grep -c .) != 1 ]]; then echo "FAIL: the ranks $2 at different calls"; failures=1; fi
}
racks='2 racks \(0,2,4,6 \| 1,3,5,7\)'
# Every plan change, logged by all 8 ranks at one call.
epochs=$(grep -oE '^\[[0-7]\] .*adapt: comm [^ ]* rank [0-7]: call [0-9]+: plan epoch [0-9]+' "$LOG" |
  sed -E 's/.*rank ([0-7]): call ([0-9]+): plan epoch ([0-9]+)/\3 \1 \2/' | sort -u)
for e in $(awk '{print $1}' <<<"$epochs" | sort -un); do
  same_call "$(awk -v e="$e" '$1 == e {print $2, $3}' <<<"$epochs")" "logged plan epoch $e"
done
# The probe under load (rule 8) at one call on every rank (each time it ran), and the 2 racks
# it found adopted before the uplinks slowed: the init probe's prices are off the connections'
# rates on this cluster (a quarter of them; or, where something else loaded the machine while the
# init probe measured, far above them: rule 8 acts either way).
loaded=$(at_call ".*probing the network again under load")
echo "probed under load (rank, call index):" $loaded
[[ -n $loaded ]] || { echo "FAIL: no rank probed under load"; failures=1; }
for c in $(awk '{print $2}' <<<"$loaded" | sort -un); do
  same_call "$(awk -v c="$c" '$2 == c' <<<"$loaded")" "probed under load at call $c"
done
reshaped=$(grep -n -m1 "uplinks now 0.5 Gbit/s" "$LOG" | cut -d: -f1)
found=$(grep -n -m1 -E "^\[0\] .*rank 0: call [0-9]+: plan epoch [0-9]+: $racks" "$LOG")
echo "the 2 racks first adopted at:" $(grep -oE 'call [0-9]+: plan epoch [0-9]+' <<<"$found")
if [[ -z $found || ${found%%:*} -gt ${reshaped:-0} ]]; then
  echo "FAIL: the ranks did not adopt the 2 racks before the uplinks slowed"; failures=1
fi
found=$(grep -oE 'call [0-9]+' <<<"$found")
# A plan change after the uplinks slowed (the same racks re-priced).
grep -n "^\[0\] .*rank 0: call [0-9]*: plan epoch" "$LOG" | awk -F: -v at="${reshaped:-0}" '$1 > at' | grep -q . ||
  { echo "FAIL: no plan change after the uplinks slowed"; failures=1; }
for r in 0 1 2 3 4 5 6 7; do
  grep -q "^\[$r\] .*ncclAllReduce count 2097152 x 4 B, 8 ranks: \(hier\|hierpipe\|rackring\) " "$LOG" ||
    { echo "FAIL: rank $r never chose a hierarchical AllReduce"; failures=1; }
done
if [[ $failures != 0 ]]; then grep "adapt\|netcluster\|count 2097152" "$LOG" | head -40; exit 1; fi

# Host 3 (rank 6) slowed to 0.2 Gbit/s for good.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING BRAID_STATS_FILE="$STATS/%h.%p" timeout 240 \
  "$NETCLUSTER" "${cluster[@]}" --reshape 9:h3=0.2 -- "$LOOP" -b 8M -s 18 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then tail -40 "$LOG"; echo "FAIL: the slow-host run exited $status"; exit 1; fi
named=$(at_call "rank 6 \(host [^ ]*, pid [0-9]*\) is on a slow host")
echo "slow host named (rank, call index):" $named
same_call "$named" "named rank 6's host slow"
if grep -q "is on a slow host" <(grep -v "rank 6 (host" "$LOG"); then echo "FAIL: a host other than rank 6's was named slow"; failures=1; fi
# After the re-plan that named it, at most one more plan change (a revert), and none after that.
namedAt=$(awk '{print $2}' <<<"$named" | head -1)
later=$(grep -oE 'rank 0: call [0-9]+: plan epoch [0-9]+' "$LOG" | awk -v c="${namedAt:-0}" '{sub(":", "", $4); if ($4 + 0 > c + 0) print}')
if [[ $(grep -c . <<<"$later") -gt 1 ]]; then echo "FAIL: rank 0 changed plans back and forth after naming the slow host: $later"; failures=1; fi
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
echo "PASS: all 8 ranks changed plans together (under load at call $(awk '{print $2}' <<<"$loaded" | head -1)), adopted the 2 racks at ${found:-?} and re-planned when the uplinks slowed; all named rank 6's host slow at call $namedAt and did not change plans back and forth; one rank's BRAID_ADAPT=0 turned it off for all"
