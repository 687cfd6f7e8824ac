#!/usr/bin/env bash
# netns_link_rate: the path rate in the telemetry (braidPeerStats_t::tcpPathUsPerMiB, from
# TCP_INFO) against a link of known rate. Three emulated hosts with 1 Gbit/s links run a ring
# AllReduce of 8 MiB for a few seconds; each host sends to one peer, so each connection has its
# host's link to itself and the kernel should see it deliver at 1 Gbit/s (8389 us per MiB)
# while it had data queued, whatever the ring waited for. The stats files' last lines must say
# so for every connection that carried the ring, within [0.7, 1.6]x (the shaper's bursts and
# the kernel's 4 ms ticks), and the connections that carried nothing must have no rate.
#
#   link_rate_test.sh path/to/tools/netcluster path/to/allreduce_loop
#
# Needs root and `ip netns`; otherwise it skips (exit 77, ctest's SKIP_RETURN_CODE).
NETCLUSTER=$1 LOOP=$2
# shellcheck source=netns_common.sh
source "$(dirname "$0")/netns_common.sh"
STATS=$(mktemp -d /tmp/braid-link-rate-stats.XXXXXX)
netns_scratch rate "$STATS"

NCCL_ALGO=ring BRAID_STATS_FILE="$STATS/%h.%p" timeout 120 "$NETCLUSTER" --prefix "$P" --hosts 3 \
  --racks 1 --rack-gbit 1 -- "$LOOP" -b 8M -s 4 >"$LOG" 2>&1
status=$?
if [[ $status != 0 ]]; then tail -40 "$LOG"; echo "FAIL: the run exited $status"; exit 1; fi

python3 - "$STATS" <<'PY'
import json, pathlib, sys
expected = 8 * 1048576 / 1e3  # us per MiB at 1 Gbit/s
files = sorted(pathlib.Path(sys.argv[1]).iterdir())
if len(files) != 3:
    sys.exit(f"FAIL: {len(files)} stats files, expected 3")
bad, rates = [], []
for f in files:
    last = json.loads(f.read_text().splitlines()[-1])
    names = last["peerFields"]
    for row in last["peers"]:
        p = dict(zip(names, row))
        link = f"{last['rank']}->{p['peer']}"
        if p["bytesSent"] >= 64 << 20:
            rates.append(f"{link} {p['tcpPathUsPerMiB']:.0f}")
            if not 0.7 * expected <= p["tcpPathUsPerMiB"] <= 1.6 * expected:
                bad.append(f"{link}: {p['tcpPathUsPerMiB']:.0f} us/MiB")
        elif p["bytesSent"] < 1 << 20 and p["tcpPathUsPerMiB"] != 0:
            bad.append(f"{link} carried {p['bytesSent']} B but has a rate")
print("path rates (us/MiB; 1 Gbit/s is %.0f):" % expected, ", ".join(rates))
if len(rates) != 3:
    bad.append(f"{len(rates)} connections carried the ring, expected 3")
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
print("PASS: every ring connection's path rate is its 1 Gbit/s link's")
PY
