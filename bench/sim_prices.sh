#!/usr/bin/env bash
# The prices of a fixed set of braid-sim runs, without the simulator's own time: run it with two
# builds and diff the output to show that a change to the simulator moves no price (or which).
# Covers every AllReduce algorithm 64 KiB - 256 MiB on a 256-rank Clos, five other collectives,
# INT8, a shaped 8-host fabric with the selector's choice, the 16-rank validation map, and rhd
# and ring at 512 ranks. About 5 s.
#   bash bench/sim_prices.sh [BUILD_DIR] > prices.txt
set -u
sim=${1:-build/release}/tools/braid-sim
map=$(dirname "$0")/results/sim_validate_16ranks_map.xml
run() { "$sim" "$@" 2>&1 | grep -v '^#' | awk '{ $NF = ""; print }'; }
run --ranks-per-host 8 --hosts-per-rack 16 --racks-per-pod 2 --pods 1 --rack-oversub 3 \
  -b 64K -e 256M -f 8 --algos ring,hier,tree,rhd,hierpipe,rackring,direct
for coll in allgather alltoall reducescatter broadcast; do
  run --ranks-per-host 2 --hosts-per-rack 4 --racks-per-pod 2 --pods 2 -b 1M -e 64M -f 8 \
    --coll "$coll"
done
run --ranks-per-host 4 --hosts-per-rack 8 --racks-per-pod 2 --pods 1 -b 1M -e 64M -f 8 \
  --compress int8
run --ranks-per-host 1 --hosts-per-rack 8 --nic-gbps 2 --nic-us 30 --ranks-per-core 4 \
  -b 16M -e 64M -f 4 --algos ring,tree,auto
run --cluster "$map" --ranks-per-host 1 -b 64K -e 64M -f 4 --algos auto,ring,tree,rhd
run --ranks-per-host 8 --hosts-per-rack 16 --racks-per-pod 4 --pods 1 --rack-oversub 3 \
  -b 256M -e 256M --algos rhd,ring
