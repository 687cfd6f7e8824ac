#!/usr/bin/env bash
# rdma_smoke / rdma_two_guests: rdma-core's ibv_rc_pingpong, an RC queue pair exchanging 4 KiB
# messages, between a server and a client on rxe0 (GID index 1: RoCEv2 over IPv4), in one guest
# (rxe loops the traffic back inside it) or across two (UDP 4791 over the guests' network).
#   pingpong_test.sh GUESTS ITERATIONS
# Skips (77) where the guest cannot be booted (tests/rdma/guest.sh) or ibv_rc_pingpong is missing.
set -euo pipefail
guests=$1 iters=$2
command -v ibv_rc_pingpong >/dev/null || { echo "SKIPPED: ibv_rc_pingpong not found (apt-get install ibverbs-utils)"; exit 77; }

# The client retries until the server listens (its TCP port for the exchange of QP numbers),
# printing the output of the attempt that connected, or of the last.
pingpong="ibv_rc_pingpong -d rxe0 -g 1 -n $iters"
client="for i in \$(seq 50); do out=\$($pingpong \$GUEST_PEER_ADDR 2>&1) && { echo \"\$out\"; exit 0; }; sleep 0.2; done
        $pingpong \$GUEST_PEER_ADDR"
if ((guests == 1)); then
  cmd="$pingpong & server=\$!; ($client) || exit; wait \$server"
else
  cmd="if ((GUEST_INDEX == 0)); then $pingpong; else $client; fi"
fi
exec "$(dirname "$0")/guest.sh" --guests "$guests" --timeout 240 -- bash -c "$cmd"
