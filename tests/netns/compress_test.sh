#!/usr/bin/env bash
# netns_compress: compressed AllReduce across processes over TCP on an emulated 4-host, 2-rack
# cluster with a cluster map: the hierarchical schedules (c2hier for int8, csparsehier for
# top-k) are the ones chosen, the run succeeds, and int8's error is that of INT8 quantisation.
#
#   compress_test.sh path/to/tools/netcluster path/to/all_reduce_perf
#
# Needs root and `ip netns`; otherwise it skips (exit 77, ctest's SKIP_RETURN_CODE).
set -u
NETCLUSTER=$1
PERF=$2
if [[ $(id -u) != 0 ]]; then echo "SKIPPED: needs root (network namespaces)"; exit 77; fi
if ! ip netns list >/dev/null 2>&1; then echo "SKIPPED: 'ip netns' is not available"; exit 77; fi

P="bncc$(( $$ % 100000 ))-"
LOG=$(mktemp /tmp/braid-compress-test.XXXXXX)
MAP=$(mktemp /tmp/braid-compress-map.XXXXXX)
trap '"$NETCLUSTER" --cleanup --prefix "$P" >/dev/null 2>&1; rm -f "$LOG" "$MAP"' EXIT
cat >"$MAP" <<XML
<cluster version="1">
  <level name="host" bw_gbps="2" latency_us="50"/>
  <level name="rack" bw_gbps="0.6667" latency_us="100"/>
  <rack name="r0"><host name="${P}h0"/><host name="${P}h1"/></rack>
  <rack name="r1"><host name="${P}h2"/><host name="${P}h3"/></rack>
</cluster>
XML

timeout 240 "$NETCLUSTER" --prefix "$P" --hosts 4 --racks 2 -- env BRAID_CLUSTER_FILE="$MAP" \
  "$PERF" -b 1M -e 1M -n 1 -w 0 -Z int8,topk:0.05 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then cat "$LOG"; echo "FAIL: the run exited $status"; exit 1; fi
failures=0
grep -q "^\[0\] # Algorithm int8 used: c2hier 1 MiB$" "$LOG" || { echo "FAIL: int8 did not run c2hier"; failures=1; }
grep -q "^\[0\] # Algorithm topk:0.05 used: csparsehier 1 MiB$" "$LOG" || { echo "FAIL: topk did not run csparsehier"; failures=1; }
# The int8 accuracy row: relative L2 error between 1e-3 and 3e-2 (lossy, but only by INT8 steps).
awk '/Accuracy, compression int8/ {on=1} on && /^\[0\] # +1048576/ {print $8; exit}' "$LOG" >"$LOG.err"
err=$(cat "$LOG.err"); rm -f "$LOG.err"
awk -v e="$err" 'BEGIN {exit !(e > 1e-3 && e < 3e-2)}' || { echo "FAIL: int8 relative L2 error '$err'"; failures=1; }
if [[ $failures != 0 ]]; then grep "^\[0\]" "$LOG" | tail -40; exit 1; fi
echo "PASS: c2hier and csparsehier ran across racks; int8 relative L2 error $err"
