#!/usr/bin/env bash
# netns_link_cut: a link that stops carrying traffic is named. On an emulated 4-host cluster
# (ranks 0-3 on hosts h0-h3 in that order, so a ring passes h1 -> h2) a loop of 8 MiB
# AllReduces runs with BRAID_TIMEOUT_MS=4000; 4 s in, everything between h1 and h2 is dropped
# (netcluster --reshape cut: both hosts stay reachable from the others). Every rank's call must
# fail within the timeout (plus the loss grace) with an error that names the link's ends with
# their hosts: the ranks that heard both ends name both and say the link between them stopped
# (a message one sent never reached the other, or each awaits the other);
# each end, which cannot hear the other, names the other and says it or the link to it stopped.
#
#   link_cut_test.sh path/to/tools/netcluster path/to/allreduce_loop
#
# Needs root and `ip netns`; otherwise it skips (exit 77, ctest's SKIP_RETURN_CODE).
NETCLUSTER=$1 LOOP=$2
# shellcheck source=netns_common.sh
source "$(dirname "$0")/netns_common.sh"
netns_scratch cut

# Each rank reports and exits 0, so that netcluster does not stop the others before they fail
# on their own. Adaptation is on (four hosts: the probe runs), and votes come every third call:
# where the cut lands as one end still awaits the other's last message of a call and the rest
# have gone on to the vote, the vote's waits give up with the data path's and name the link too.
# The ring is forced: the selector, pricing what the probe measured, may otherwise choose
# recursive halving and doubling, whose pairs on four ranks (r XOR 1, r XOR 2) leave h1-h2
# unused, and the calls go on unharmed (seen under load, when the probe's figures move).
NCCL_ALGO=ring BRAID_TIMEOUT_MS=4000 timeout 240 "$NETCLUSTER" --prefix "$P" --hosts 4 --racks 1 --rack-gbit 2 \
  --reshape 4:cut=h1-h2 -- sh -c '"$0" "$@"; echo "loop exited $?"' "$LOOP" -b 8M -s 40 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then tail -40 "$LOG"; echo "FAIL: the run exited $status"; exit 1; fi

failures=0
for r in 0 1 2 3; do
  err=$(grep -E "^\[$r\] (start|AllReduce): " "$LOG" | head -1)  # the loop's two calls
  if [[ -z $err ]]; then echo "FAIL: rank $r's AllReduce did not fail"; failures=1; continue; fi
  # The two ends name each other (an error is this rank's own); the others name both.
  case $r in 1) ends="2" ;; 2) ends="1" ;; *) ends="1 2" ;; esac
  for end in $ends; do
    grep -q "rank $end (host ${P}h$end, pid [0-9]*)" <<<"$err" ||
      { echo "FAIL: rank $r's error does not name rank $end and its host: $err"; failures=1; }
  done
  case $r in
    0|3) pattern="the link from the one to the other stopped carrying traffic\|each awaits the other: the link between them stopped" ;;
    *) pattern="it stopped or died, or the link to it did" ;;
  esac
  grep -q "$pattern" <<<"$err" || { echo "FAIL: rank $r's error does not say \"$pattern\": $err"; failures=1; }
done
if [[ $failures != 0 ]]; then grep -v "call [0-9]" "$LOG" | tail -30; exit 1; fi
grep -E "^\[0\] (start|AllReduce): " "$LOG" | head -1 | cut -c1-600
echo "PASS: every rank's error names the cut link between ranks 1 and 2"
