#!/usr/bin/env bash
# The main job: set up and build (with the OpenMPI and Gloo baselines), then run the local
# multi-rank AllReduce benchmark side by side (Braid's algorithms, OpenMPI, Gloo, memcpy) on 2
# and 4 ranks: one compare.py run, which prints its tables and writes
# bench/results/allreduce_np2-4_<date>.md with a section per rank count, and beside it
# allreduce_np2-4_<date>.png (busbw against size, a panel per rank count) and its data (.json).
# Extra arguments go to compare.py (e.g. -e 256M for larger sizes).
set -euo pipefail
cd "$(dirname "$0")/.."

# Braid's AllReduce algorithms, one column group each: auto is Braid's own choice, the others are
# forced (BRAID_ALGO). The one place to add an algorithm; a name Braid does not know runs its own
# choice, and the table says so. (tree, hier and rackring only differ from ring across hosts:
# see tools/netcluster for that.)
ALGOS="${BRAID_DEMO_ALGOS:-auto,ring,direct,rhd}"

# Sizes and iterations that keep both rank counts to a few minutes on a 2-core machine: 8 B to
# 128 MiB in steps of 4, 10 timed iterations after 3 warm-up.
SIZES=(-b 8 -e 128M -f 4 -n 10 -w 3)

# Debian's python3, which has python3-torch (Gloo) and python3-matplotlib (--plot) from
# tools/setup.sh --bench; a python3 earlier on PATH (pyenv, a venv) may have neither.
PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON="$(command -v python3)"

bash tools/setup.sh --bench
"$PYTHON" bench/compare.py --np 2,4 --build build/release --algos "$ALGOS" --plot "${SIZES[@]}" "$@"
