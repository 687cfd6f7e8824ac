#!/usr/bin/env bash
# braid-sim's own cost against rank count: wall time and peak memory of pricing a 1 GiB
# AllReduce with ring, hier, tree and rhd on a Clos of 8 ranks a host, 16 hosts a rack, racks
# 3:1 oversubscribed: 3,072 ranks (4 racks a pod, 6 pods) and 16,384 (8 racks a pod, 16 pods).
# Each run is cut off after TIMEOUT seconds (default 400). Results: bench/results/braid_sim_scale.md.
#   bash bench/sim_scale.sh [BUILD_DIR]
set -uo pipefail
sim=${1:-build/release}/tools/braid-sim
limit=${TIMEOUT:-400}
for spec in "3072:--racks-per-pod 4 --pods 6" "16384:--racks-per-pod 8 --pods 16"; do
  n=${spec%%:*}
  read -r -a fabric <<< "${spec#*:}"
  for algo in ring hier tree rhd; do
    timeout "$limit" /usr/bin/time -f "$n ranks $algo: wall %e s, peak memory %M KiB" "$sim" \
      --ranks-per-host 8 --hosts-per-rack 16 "${fabric[@]}" --rack-oversub 3 -b 1G -e 1G \
      --algos "$algo" 2>&1 | grep -v '^#\|^level\|^top:'
    [ "${PIPESTATUS[0]}" = 124 ] && echo "$n ranks $algo: cut off after $limit s"
  done
done
