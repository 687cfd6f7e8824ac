#!/usr/bin/env bash
# The main job: set up and build (with the OpenMPI and Gloo baselines), then run the local
# multi-rank AllReduce benchmark side by side (Braid, OpenMPI, Gloo, memcpy) on 2 and 4 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --bench
for np in 2 4; do
  python3 bench/compare.py --np "$np" --build build/release "$@"
done
