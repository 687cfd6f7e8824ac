#!/usr/bin/env bash
# The commands run across the cluster expand their variables in each rank, not here:
# shellcheck disable=SC2016
# netns_netcluster: tools/netcluster builds a 4-host, 2-rack emulated cluster whose shaping
# holds (in-rack vs cross-rack bandwidth ratio near the configured one, and one uplink shared by
# a rack's hosts), runs a command on every host with the right per-rank environment, stops the
# job when a rank fails, and leaves no namespace or link with its prefix behind.
#
#   netcluster_test.sh [path/to/tools/netcluster [path/to/braid-topo]]
#
# Needs root and `ip netns`; otherwise it skips (exit 77, ctest's SKIP_RETURN_CODE).
set -u
NETCLUSTER=${1:-$(dirname "$0")/../../tools/netcluster}
BRAID_TOPO=${2:-}

# shellcheck source=netns_common.sh
source "$(dirname "$0")/netns_common.sh"

# A prefix of our own, so a developer's cluster (bnc-) and a parallel test never collide.
P="bnct$(( $$ % 100000 ))-"
WORK=$(mktemp -d /tmp/netcluster-test.XXXXXX)
bg=""
cleanup() {
  # A netcluster still running in the background holds its prefix's lock: let it tear down first.
  if [[ -n $bg ]]; then kill -TERM "$bg" 2>/dev/null; wait "$bg" 2>/dev/null; fi
  "$NETCLUSTER" --cleanup --prefix "$P" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Every object with our prefix; empty after a clean teardown.
leftovers() {
  { ip netns list | awk '{print "netns " $1}'; ip -o link show | awk -F': ' '{print "link " $2}'; } |
    grep -F " $P" || true
}

# 1. Shaping and a command across the cluster, in one build. Rates low enough that two shared
#    cores move them easily, so the ratio reflects the shaping and not the CPU: 1 Gbit/s host
#    links, 0.25 Gbit/s uplinks (ratio 4). Queues of 50 ms: tc shows a host link's as the
#    49 ms a full one takes to drain past its bucket.
"$NETCLUSTER" --prefix "$P" --hosts 4 --racks 2 --rack-gbit 1 --uplink-gbit 0.25 --queue-ms 50 \
    --measure --measure-seconds 2 --measure-json "$WORK/measure.json" \
    --write-cluster-map "$WORK/cluster.xml" --placement alternate \
    -- sh -c 'echo "rank=$RANK size=$WORLD_SIZE host=$NCCL_HOSTID uts=$(hostname) if=$NCCL_SOCKET_IFNAME comm=$NCCL_COMM_ID map=${BRAID_CLUSTER_FILE:+yes} $(tc qdisc show dev $NCCL_SOCKET_IFNAME | grep -o "lat [0-9]*ms")"' \
    >"$WORK/out" 2>"$WORK/err"
rc=$?
cat "$WORK/out"
[[ $rc == 0 ]] || { fail "netcluster exited $rc"; cat "$WORK/err"; }

if [[ -s $WORK/measure.json ]]; then
  python3 - "$WORK/measure.json" <<'PY' || failures=$((failures + 1))
import json, sys
m = json.load(open(sys.argv[1]))
bad = []
# Roughly as configured: a loaded machine may slow the in-rack stream, and TCP never quite
# reaches a tbf rate, hence the wide band. Unshaped veths would give ratio ~1.
if not 0.6 * m["configured_ratio"] <= m["ratio"] <= 1.5 * m["configured_ratio"]:
    bad.append(f"in-rack/cross-rack ratio {m['ratio']:.2f}, configured {m['configured_ratio']:.2f}")
if not 0.15 <= m["cross_rack"] <= 0.25 * 1.15:
    bad.append(f"cross-rack {m['cross_rack']:.3f} Gbit/s, uplink 0.25")
# Two hosts of rack 0 sending to rack 1 at once share one uplink: together no more than it.
if not m["cross_rack_shared"] <= 0.25 * 1.15:
    bad.append(f"two cross-rack streams together {m['cross_rack_shared']:.3f} Gbit/s, uplink 0.25")
for b in bad:
    print("FAIL:", b)
print("measured:", {k: round(v, 3) for k, v in m.items()})
sys.exit(1 if bad else 0)
PY
else
  fail "no --measure results"
fi

# alternate placement: ranks 0,1,2,3 on h0 (rack 0), h2 (rack 1), h1, h3.
for want in "rank=0 size=4 host=${P}h0 uts=${P}h0 if=${P}h0 comm=10.77.0.1:29400 map=yes lat 49ms" \
            "rank=1 size=4 host=${P}h2 uts=${P}h2 if=${P}h2 comm=10.77.0.1:29400 map=yes lat 49ms" \
            "rank=2 size=4 host=${P}h1 uts=${P}h1 if=${P}h1 comm=10.77.0.1:29400 map=yes lat 49ms" \
            "rank=3 size=4 host=${P}h3 uts=${P}h3 if=${P}h3 comm=10.77.0.1:29400 map=yes lat 49ms"; do
  r=${want#rank=}; r=${r%% *}
  grep -qxF "[$r] $want" "$WORK/out" || fail "missing line: [$r] $want"
done
# The map is Braid's BRAID_CLUSTER_FILE format: h0 and h1 in rack 0, h2 and h3 in rack 1.
python3 - "$WORK/cluster.xml" "$P" <<'PY' || fail "cluster map does not place the hosts in their racks"
import sys, xml.etree.ElementTree as ET
root, p = ET.parse(sys.argv[1]).getroot(), sys.argv[2]
racks = {r.get("name"): [h.get("name") for h in r.findall("host")] for r in root.findall("rack")}
levels = [(l.get("name"), l.get("bw_gbps")) for l in root.findall("level")]
want = {"rack0": [p + "h0", p + "h1"], "rack1": [p + "h2", p + "h3"]}
# Rates as TCP payload sees them: 1448 of each 1514-byte frame.
ok = racks == want and levels == [("host", "0.9564"), ("rack", "0.2391")]
print("cluster map:", racks, levels)
sys.exit(0 if ok else 1)
PY
if [[ -n $BRAID_TOPO ]]; then
  "$BRAID_TOPO" "$WORK/cluster.xml" --hosts "${P}h0,${P}h2,${P}h1,${P}h3" >"$WORK/topo" 2>&1 ||
    { fail "braid-topo rejects the cluster map"; cat "$WORK/topo"; }
  grep -q "topology from cluster map .*: 4 ranks, 2 levels" "$WORK/topo" ||
    { fail "braid-topo does not see 2 levels in the map"; cat "$WORK/topo"; }
fi
left=$(leftovers); [[ -z $left ]] || fail "left after a clean run: $left"

# 1b. A full queue drops packets, and netcluster says where: rank 0 sends 5.6 MB of UDP to h1
#    (rack 1) faster than rack 0's 0.02 Gbit/s uplink drains its queue (512 KiB: four buckets).
#    A socket's buffer holds its packets until they leave the last shaper, so the sender's
#    (SO_SNDBUFFORCE, 32: above the system's limit) must hold them all for the queue to overflow.
"$NETCLUSTER" --prefix "$P" --hosts 2 --racks 2 --uplink-gbit 0.02 --quiet -- sh -c '[ "$RANK" != 0 ] ||
    python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET, 32, 1 << 24)
for _ in range(4000): s.sendto(bytes(1400), (\"10.77.1.1\", 9))"' >"$WORK/out1b" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "the UDP burst's netcluster exited $rc"
grep -E "the shapers dropped [0-9]+ packets \(.*${P}r0u [0-9]+" "$WORK/out1b" ||
  { fail "no report of the packets rack 0's uplink dropped"; cat "$WORK/out1b"; }

# 1c. One host: its ranks run (there is no pair of hosts whose connectivity to check), and the map
#     it writes carries the CPU figures given, the local one on the link inside a host, and the
#     latency given to the map alone, on both levels.
"$NETCLUSTER" --prefix "$P" --hosts 1 --racks 1 --ranks-per-host 2 --quiet \
    --cpu-ns-per-byte 1.5 --local-cpu-ns-per-byte 0.25 --map-latency-us 12.5 \
    --write-cluster-map "$WORK/map1c.xml" \
    -- sh -c 'echo "rank $RANK of $WORLD_SIZE on $NETCLUSTER_HOST"' >"$WORK/out1c" 2>&1 ||
  { fail "netcluster on one host exited $?"; cat "$WORK/out1c"; }
for r in 0 1; do
  grep -q "rank $r of 2 on ${P}h0" "$WORK/out1c" || { fail "one host: no rank $r"; cat "$WORK/out1c"; }
done
[[ $(grep -c 'latency_us="12.5"' "$WORK/map1c.xml") == 2 ]] ||
  { fail "--map-latency-us 12.5 is not on both of the map's levels"; cat "$WORK/map1c.xml"; }
if [[ -n $BRAID_TOPO ]]; then
  "$BRAID_TOPO" "$WORK/map1c.xml" --hosts "${P}h0,${P}h0" >"$WORK/topo1c" 2>&1 ||
    { fail "braid-topo rejects the one-host map"; cat "$WORK/topo1c"; }
  grep -q "inside one host: .*0.25 ns of CPU per byte" "$WORK/topo1c" ||
    { fail "the one-host map's link inside a host has no CPU figure"; cat "$WORK/topo1c"; }
fi
left=$(leftovers); [[ -z $left ]] || fail "left after one host: $left"

# 2. A failing rank brings the others down at once and its status becomes the job's.
start=$(date +%s)
"$NETCLUSTER" --prefix "$P" --hosts 4 --racks 2 --quiet \
    -- sh -c '[ "$RANK" = 1 ] && exit 7; sleep 60' >"$WORK/out2" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
[[ $rc == 7 ]] || { fail "a rank exiting 7 gave netcluster status $rc"; cat "$WORK/out2"; }
(( took < 40 )) || fail "the other ranks were not stopped (took ${took}s)"
left=$(leftovers); [[ -z $left ]] || fail "left after a failed run: $left"

# 3. SIGINT while ranks run: torn down all the same.
"$NETCLUSTER" --prefix "$P" --hosts 4 --racks 2 --quiet -- sleep 60 >"$WORK/out3" 2>&1 &
pid=$!
bg=$pid
for _ in $(seq 100); do grep -q . <(ip netns pids "${P}h3" 2>/dev/null) && break; sleep 0.2; done
kill -INT $pid
wait $pid
rc=$?
bg=""
[[ $rc == 130 ]] || fail "interrupted netcluster exited $rc, want 130"
left=$(leftovers); [[ -z $left ]] || fail "left after SIGINT: $left"

# 4. --mpi: mpirun's daemons enter the hosts' namespaces; the hostfile order is the placement.
if command -v mpirun >/dev/null; then
  "$NETCLUSTER" --prefix "$P" --hosts 4 --racks 2 --ranks-per-host 2 --placement alternate --quiet \
      --mpi --timeout 120 -- sh -c 'echo "mpi rank=$OMPI_COMM_WORLD_RANK host=$(hostname) id=$NCCL_HOSTID"' \
      >"$WORK/out4" 2>&1
  rc=$?
  [[ $rc == 0 ]] || { fail "--mpi exited $rc"; cat "$WORK/out4"; }
  # alternate with 2 ranks per host: 0,1 on h0; 2,3 on h2; 4,5 on h1; 6,7 on h3.
  for r in 0 1 2 3 4 5 6 7; do
    h=$(( (r / 2 == 1) ? 2 : (r / 2 == 2) ? 1 : r / 2 ))
    grep -qF "mpi rank=$r host=${P}h$h id=${P}h$h" "$WORK/out4" || fail "--mpi: rank $r not on ${P}h$h"
  done
  left=$(leftovers); [[ -z $left ]] || fail "left after --mpi: $left"
else
  echo "mpirun not found: --mpi not checked"
fi

if (( failures )); then echo "netcluster_test: $failures failure(s)"; exit 1; fi
echo "netcluster_test: OK"
