#!/usr/bin/env bash
# The selector above its whole-operation budget, against the whole operations it chooses among:
# for each fabric and size, every candidate's whole-operation price (braid-sim's simulation of
# all ranks, with the symmetric-block shortcut) and `auto`'s choice, with the selector's own
# prices (--why) and each `auto` run's wall time and peak memory (the selector's choice and the
# chosen candidate's simulation, whose time the sim(s) column gives). Optionally a second
# build's `auto` beside it (the selector before a change).
# AllReduce (and at 16,384 ranks, 25 MiB), and ReduceScatter on the 3,072-rank Clos. Results:
# bench/results/selector_scale.md.
#   bash bench/selector_scale.sh [BUILD_DIR] [OTHER_BUILD_DIR]
set -u
sim=${1:-build/release}/tools/braid-sim
other=${2:+$2/tools/braid-sim}
gpu=(--ranks-per-host 8 --local-gbps 1200 --local-us 2 --reduce-gbytes 500 -d half)
# bench/sim_seed.sh's fabrics: B (3,072 ranks, three tiers, racks 3:1) and A (1,024 ranks, 10 GbE).
clos=("${gpu[@]}" --hosts-per-rack 16 --racks-per-pod 4 --pods 6 --nic-gbps 200 --rack-oversub 3)
ten=("${gpu[@]}" --hosts-per-rack 16 --racks-per-pod 8 --pods 1 --nic-gbps 10 --rack-oversub 1)
# B with 32 pods: 16,384 ranks.
big=("${gpu[@]}" --hosts-per-rack 16 --racks-per-pod 4 --pods 32 --nic-gbps 200 --rack-oversub 3)
# bench/sim_scale.sh's fabric: 3,072 ranks, fp32, 100 Gbit/s NICs.
fp32=(--ranks-per-host 8 --hosts-per-rack 16 --racks-per-pod 4 --pods 6 --rack-oversub 3)
row() {  # name, size, then the fabric
  local name=$1 size=$2
  shift 2
  echo "## $name $size"
  "$sim" "$@" -b "$size" -e "$size" --algos ring,hier,hierpipe,tree,rhd 2>&1 | grep -v '^level\|^top:\|^# level\|^# braid\|^#  '
  /usr/bin/time -f '# wall %e s, peak %M KB' "$sim" "$@" -b "$size" -e "$size" --algos auto --why 2>&1 | grep -v '^level\|^top:\|^# level\|^# braid\|^#  \|^# peak'
  [ -n "$other" ] && echo "# before:" &&
    /usr/bin/time -f '# wall %e s, peak %M KB' "$other" "$@" -b "$size" -e "$size" --algos auto --why 2>&1 |
    grep -v '^level\|^top:\|^# level\|^# braid\|^#  \|^# peak'
}
for size in 256K 4M 25M 64M 256M 1G; do row clos3072 "$size" "${clos[@]}"; done
# ReduceScatter on the same fabric (the candidates that serve it: ring and hier).
for size in 64K 1M 16M 256M; do row clos3072_reducescatter "$size" "${clos[@]}" --coll reducescatter; done
row gpt3_10gbe_1024 1G "${ten[@]}"
for size in 64M 1G; do row fp32_3072 "$size" "${fp32[@]}"; done
row clos16384 25M "${big[@]}"
