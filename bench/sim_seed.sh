#!/usr/bin/env bash
# The seed's scenarios priced by braid-sim (docs/scale.md, "The seed's claims"): CSVs and plots
# into bench/results/sim_seed/, the tables on stdout. Fabric assumptions, all stated in the docs:
# 8 ranks (GPUs) a host joined at 150 GB/s (--local-gbps 1200, 2 us), reductions at 500 GB/s
# (a GPU's), fp16 gradients, Braid's ring numbering ranks host by host (the best case for a ring).
#   bash bench/sim_seed.sh [BUILD_DIR]
set -euo pipefail
sim=${1:-build/release}/tools/braid-sim
out=bench/results/sim_seed
mkdir -p "$out"
gpu=(--ranks-per-host 8 --local-gbps 1200 --local-us 2 --reduce-gbytes 500 -d half)
limit=${TIMEOUT:-600}
run() {  # name, then braid-sim's arguments; each run cut off after TIMEOUT seconds (default 600)
  local name=$1
  shift
  echo "## $name: braid-sim $*"
  /usr/bin/time -f "# simulator: wall %e s, peak memory %M KiB" timeout "$limit" "$sim" "$@" \
    --csv "$out/$name.csv" | grep -v '^level\|^top:' || echo "# cut off after $limit s"
}

# A. GPT-3-class gradients over 10 GbE: 1,024 ranks (128 hosts, 16 a rack, 8 racks, a
# non-blocking spine), a DDP bucket (25 MiB) and 1 GiB; exact, INT8 and top-k 5%. Compressed:
# the hierarchical forms (the selector's one-shot choice sends n^2 messages, which the
# simulator does not finish at 1,024 ranks in minutes); codecs at Braid's CPU rates.
ten=("${gpu[@]}" --hosts-per-rack 16 --racks-per-pod 8 --pods 1 --nic-gbps 10 --rack-oversub 1)
run gpt3_10gbe_exact "${ten[@]}" -b 25M -e 1G -f 40.96 --algos ring,hier,auto
run gpt3_10gbe_int8 "${ten[@]}" -b 25M -e 1G -f 40.96 --algos c2hier --compress int8
run gpt3_10gbe_topk "${ten[@]}" -b 25M -e 1G -f 40.96 --algos csparsehier --compress topk:0.05

# B. 3,072 ranks on a three-tier Clos whose cross-rack bandwidth is a third of in-rack: 16 hosts
# a rack, 4 racks a pod, 6 pods, 200 Gbit/s NICs, racks 3:1, pods non-blocking. Braid's ring and
# its selector's choice, and a ring in an order that ignores the racks (hosts taken from each
# rack in turn: every hop between hosts crosses racks).
clos=("${gpu[@]}" --hosts-per-rack 16 --racks-per-pod 4 --pods 6 --nic-gbps 200 --rack-oversub 3)
run clos3072 "${clos[@]}" -b 64M -e 1G -f 4 --algos ring,auto
run clos3072_unaware "${clos[@]}" -b 64M -e 1G -f 4 --algos ring --placement alternate

# C. Scaling from 8 to 3,072 ranks, a 256 MiB fp16 gradient, the same hosts and racks as B.
run scale_8 "${gpu[@]}" --hosts-per-rack 1 --nic-gbps 200 -b 256M -e 256M --algos ring,auto
run scale_128 "${gpu[@]}" --hosts-per-rack 16 --nic-gbps 200 -b 256M -e 256M --algos ring,auto
run scale_512 "${gpu[@]}" --hosts-per-rack 16 --racks-per-pod 4 --nic-gbps 200 --rack-oversub 3 \
  -b 256M -e 256M --algos ring,auto
run scale_3072 "${clos[@]}" -b 256M -e 256M --algos ring,auto

"$(dirname "$sim")/braid-sim-plot" "$out/gpt3_10gbe.png" "$out"/gpt3_10gbe_{exact,int8}.csv \
  --title "1,024 ranks over 10 GbE, fp16: exact and INT8"
"$(dirname "$sim")/braid-sim-plot" "$out/clos3072.png" "$out"/clos3072{,_unaware}.csv \
  --title "3,072 ranks, three-tier Clos, racks 3:1, fp16"
