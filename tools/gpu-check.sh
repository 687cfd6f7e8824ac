#!/usr/bin/env bash
# The GPU check (issue 6): on a machine with a CUDA GPU, build Braid with CUDA, run the GPU tests,
# the kernel bandwidth against the device's own copy, the perf binaries on device buffers with 1,
# 2 and 4 ranks on the one GPU, and the PyTorch check; print a short table last. Full logs go to
# the folder given as the argument (summary.md there holds the table).
#
#   bash tools/gpu-check.sh LOGDIR
#
# Meant for the lent GPU machine: no network, none of Braid's Debian packages. It builds with what
# travels with the working tree: .device-debs/*.deb (tools/gpu-debs.sh downloads them on a machine
# with apt) are unpacked into a private prefix. Every stage is bounded by a timeout, a failed stage
# does not stop the later ones (those that need the build skip when it failed), and the table
# shows each stage's outcome. Aim: under 8 minutes on 16 cores.
#
# On the device tool only a few files come back from $OUT, so pack the folder, e.g.
#   bash tools/gpu-check.sh /tmp/gc; tar czf $OUT/gpu-check.tgz -C /tmp gc; cp /tmp/gc/summary.md $OUT/
#
# Environment: BRAID_GPU_CHECK_QUICK=1 runs smaller perf sweeps; GPU_CHECK_DRY=1 stops after the
# configure stage (to test the dependency path on a machine without a GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

logs=${1:?usage: tools/gpu-check.sh LOGDIR}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
build=${BRAID_GPU_BUILD:-$root/build-gpu}
deps=${BRAID_GPU_DEPS:-/tmp/braid-gpu-deps}
jobs=${BRAID_GPU_JOBS:-16}
start=$(date +%s)
export root logs build deps jobs

declare -a names results seconds notes
# stage NAME TIMEOUT_SECONDS COMMAND...: runs COMMAND with its output in LOGDIR/NAME.log.
stage() {
  local name=$1 limit=$2
  shift 2
  local t0 rc
  t0=$(date +%s)
  echo "== $name (limit ${limit}s)"
  # Shell functions run through bash -c (timeout runs programs only); they are exported below.
  timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  names+=("$name")
  seconds+=($(($(date +%s) - t0)))
  if ((rc == 0)); then results+=("PASS")
  elif ((rc == 124 || rc == 137)); then results+=("TIMEOUT")
  else results+=("FAIL($rc)"); fi
  notes+=("${note:-}")
  note=""
  tail -n 3 "$logs/$name.log" | sed 's/^/   /'
  return $rc
}
skip() {
  names+=("$1"); results+=("SKIP"); seconds+=(0); notes+=("$2")
  echo "== $1: skipped ($2)"
}

# ---- environment ---------------------------------------------------------------------------
env_info() {
  date -u
  uname -a
  nvidia-smi || true
  command -v nvcc && nvcc --version
  cmake --version | head -1
  command -v ninja && ninja --version
  nproc
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
  git -C "$root" log -1 --oneline 2>/dev/null || true
}
export -f env_info
stage env 60 env_info

# ---- dependencies: the carried .deb files, unpacked into a private prefix --------------------
unpack_debs() {
  rm -rf "$deps" && mkdir -p "$deps"
  shopt -s nullglob
  local debs=("$root"/.device-debs/*.deb)
  if ((${#debs[@]} == 0)); then
    echo "no .device-debs/*.deb: relying on the system's pugixml and GoogleTest"
    return 0
  fi
  for d in "${debs[@]}"; do
    echo "unpacking $(basename "$d")"
    if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$d" "$deps" || return 1
    else (cd "$deps" && ar p "$d" "$(ar t "$d" | grep '^data\.tar')" | tar -x -a -f - 2>/dev/null ||
          ar p "$d" "$(ar t "$d" | grep '^data\.tar')" | tar -xJ -C "$deps") || return 1; fi
  done
  ls "$deps/usr/lib/x86_64-linux-gnu" | head -40
}
export -f unpack_debs
stage deps 120 unpack_debs

# ---- configure and build -------------------------------------------------------------------
generator=""
command -v ninja >/dev/null && generator="Ninja"
configure() {
  rm -rf "$build"
  # sm_90 machine code and compute_90 PTX: the H200 only, to keep the build short. hwloc and
  # verbs are optional and off: nothing here provides them.
  cmake -S "$root" -B "$build" ${generator:+-G "$generator"} -DCMAKE_BUILD_TYPE=Release \
    -DBRAID_WITH_CUDA=ON -DBRAID_CUDA_ARCHITECTURES=90 -DBRAID_WITH_HWLOC=OFF \
    -DBRAID_WITH_VERBS=OFF -DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu" \
    -DCMAKE_INCLUDE_PATH="$deps/usr/include"
}
export generator
export -f configure
built=0
stage configure 180 configure
configured=$?
if [[ -n "${GPU_CHECK_DRY:-}" ]]; then
  echo "GPU_CHECK_DRY: stopping after configure"
  exit $configured
fi
perf_bins=(all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf sendrecv_perf)
if ((configured == 0)); then
  # Only what the check runs: the library, the GPU tests, the perf binaries, the launcher.
  stage build 420 cmake --build "$build" -j"$jobs" --target nccl braid gpu_kernels_test \
    gpu_collectives_test cuda-kernel-bw braidrun "${perf_bins[@]}" && built=1
else
  skip build "configure failed"
fi
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Threads as ranks put several streams of one process on the GPU; more hardware queues keep
# their stream waits from queueing behind each other (docs/architecture.md, Device memory).
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}

# ---- GPU tests -------------------------------------------------------------------------------
gpu_tests() {
  local out="$logs/gpu-tests.ctest.txt"
  ctest --test-dir "$build" -L gpu --output-on-failure --timeout 240 2>&1 | tee "$out"
  ((PIPESTATUS[0] == 0)) || return 1
  # On a GPU machine a skipped GPU test is a failure: no device was usable.
  if grep -q "(Skipped)" "$out"; then
    echo "GPU tests were skipped: no usable device"
    return 3
  fi
}
export -f gpu_tests
if ((built)); then stage gpu-tests 240 gpu_tests; else skip gpu-tests "no build"; fi

# ---- kernel bandwidth --------------------------------------------------------------------------
if ((built)); then stage kernel-bw 90 "$build/bench/cuda/cuda-kernel-bw" 256 20; else skip kernel-bw "no build"; fi

# ---- perf binaries on device buffers -----------------------------------------------------------
perf="$build/bench/perf"
run_perf() {  # ranks binary args...
  local n=$1 bin=$2
  shift 2
  "$build/tools/braidrun" -np "$n" --timeout 150 -- "$perf/$bin" -G 1 "$@"
}
export perf
export -f run_perf
if ((built)); then
  # AllReduce: every power of two from 8 B to 1 GiB, checked (-c 1), at 1, 2 and 4 ranks.
  if [[ -n "${BRAID_GPU_CHECK_QUICK:-}" ]]; then ar=(-b 8 -e 64M -f 8 -n 3 -w 1 -c 1)
  else ar=(-b 8 -e 1G -f 2 -n 3 -w 1 -c 1); fi
  for n in 1 2 4; do stage "allreduce-np$n" 170 run_perf "$n" all_reduce_perf "${ar[@]}"; done
  for bin in all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf sendrecv_perf; do
    stage "${bin%_perf}-np4" 60 run_perf 4 "$bin" -b 8 -e 64M -f 8 -n 3 -w 1 -c 1
  done
else
  skip perf "no build"
fi

# ---- PyTorch -------------------------------------------------------------------------------
if ((built)); then
  for n in 2 4; do
    stage "torch-np$n" 170 python3 "$root/tools/torch_check.py" --lib "$build/libnccl.so.2" --world "$n" --timeout 150
  done
else
  skip torch "no build"
fi

# ---- table -----------------------------------------------------------------------------------
# Headline numbers from the logs: the kernel/copy ratio and the largest AllReduce row's busbw.
bw_line=$(grep -h "float sum reduce / cudaMemcpy" "$logs/kernel-bw.log" 2>/dev/null | sed 's/^# //')
ar_row() { grep -hE '^ +[0-9]+ +[0-9]+ +float' "$logs/allreduce-np$1.log" 2>/dev/null | tail -1 | awk '{print $1" B: "$8" GB/s busbw, wrong "$9"/"$13}'; }
{
  echo "# tools/gpu-check.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(($(date +%s) - start)) s"
  echo
  echo "| stage | result | seconds |"
  echo "|---|---|---|"
  for i in "${!names[@]}"; do echo "| ${names[$i]} | ${results[$i]} | ${seconds[$i]} |"; done
  echo
  [[ -n "$bw_line" ]] && echo "- kernel bandwidth: $bw_line"
  for n in 1 2 4; do r=$(ar_row $n); [[ -n "$r" ]] && echo "- AllReduce ${n} ranks, largest size: $r"; done
  grep -h "^torch_check " "$logs"/torch-np*.log 2>/dev/null | sed "s/^/- /"
} >"$logs/summary.md"
echo
cat "$logs/summary.md"
grep -q "| \(FAIL\|TIMEOUT\)" "$logs/summary.md" && exit 1
exit 0
