#!/usr/bin/env bash
# netns_compress: compressed AllReduce across processes over TCP on emulated clusters with a
# cluster map, 4 hosts in 2 racks of 2 and 5 hosts in racks of 3 and 2: the hierarchical
# schedules (c2hier for int8, csparsehier for top-k) are the ones chosen, the runs succeed, and
# int8's error is that of INT8 quantisation.
#
#   compress_test.sh path/to/tools/netcluster path/to/all_reduce_perf
#
# Needs root and `ip netns`; otherwise it skips (exit 77, ctest's SKIP_RETURN_CODE).
NETCLUSTER=$1 PERF=$2
# shellcheck source=netns_common.sh
source "$(dirname "$0")/netns_common.sh"
MAP=$(mktemp /tmp/braid-compress-map.XXXXXX)
netns_scratch compress "$MAP"
# run HOSTS MAP_RACKS: MAP_RACKS lists each rack's hosts, e.g. "0 1|2 3".
run() {
  local hosts=$1 racks=$2 xml="" r=0
  xml='<cluster version="1"><level name="host" bw_gbps="2" latency_us="50"/><level name="rack" bw_gbps="0.6667" latency_us="100"/>'
  IFS='|' read -ra groups <<<"$racks"
  for g in "${groups[@]}"; do
    xml+="<rack name=\"r$r\">"
    for h in $g; do xml+="<host name=\"${P}h$h\"/>"; done
    xml+="</rack>"
    r=$((r + 1))
  done
  echo "$xml</cluster>" >"$MAP"
  timeout 240 "$NETCLUSTER" --prefix "$P" --hosts "$hosts" --racks 2 -- env BRAID_CLUSTER_FILE="$MAP" \
    "$PERF" -b 1M -e 1M -n 1 -w 0 -Z int8,topk:0.05 >"$LOG" 2>&1
  local status=$?
  if [[ $status != 0 ]]; then cat "$LOG"; echo "FAIL: $hosts hosts: the run exited $status"; exit 1; fi
  local failures=0
  grep -q "^\[0\] # Algorithm int8 used: c2hier 1 MiB$" "$LOG" || { echo "FAIL: $hosts hosts: int8 did not run c2hier"; failures=1; }
  grep -q "^\[0\] # Algorithm topk:0.05 used: csparsehier 1 MiB$" "$LOG" || { echo "FAIL: $hosts hosts: topk did not run csparsehier"; failures=1; }
  # The int8 accuracy row: relative L2 error between 1e-3 and 3e-2 (lossy, but only by INT8 steps).
  local err
  err=$(awk '/Accuracy, compression int8/ {on=1} on && /^\[0\] # +1048576/ {print $8; exit}' "$LOG")
  awk -v e="$err" 'BEGIN {exit !(e > 1e-3 && e < 3e-2)}' || { echo "FAIL: $hosts hosts: int8 relative L2 error '$err'"; failures=1; }
  if [[ $failures != 0 ]]; then grep "^\[0\]" "$LOG" | tail -40; exit 1; fi
  echo "ok: $hosts hosts, racks '$racks': c2hier and csparsehier; int8 relative L2 error $err"
}

run 4 "0 1|2 3"
run 5 "0 1 2|3 4"
echo "PASS: c2hier and csparsehier ran across even and uneven racks"
