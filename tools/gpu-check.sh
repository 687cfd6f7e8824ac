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
# shows each stage's outcome. The whole run keeps to BRAID_GPU_CHECK_BUDGET seconds (480): stage
# limits shrink to what is left, and what no longer fits is skipped (most important stages run
# first). LOGDIR/summary.md is rewritten after every stage.
#
# On the device tool only a few files come back from $OUT, so pack the folder, e.g.
#   timeout 560 bash tools/gpu-check.sh /tmp/gc; tar czf $OUT/gpu-check.tgz -C /tmp gc; cp /tmp/gc/summary.md $OUT/
#
# Environment: BRAID_GPU_CHECK_QUICK=1 runs smaller perf sweeps; BRAID_GPU_CHECK_STAGES="a b ..."
# runs only the named stages after the build (a rerun of what failed); GPU_CHECK_DRY=1 stops
# after the configure stage (to test the dependency path on a machine without a GPU). The build is
# made in BRAID_GPU_BUILD (build-gpu); a packed one is unpacked into BRAID_GPU_PACKED_BUILD
# (build-gpu-packed), never over a build tree.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

logs=${1:?usage: tools/gpu-check.sh LOGDIR}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
build=${BRAID_GPU_BUILD:-$root/build-gpu}
deps=${BRAID_GPU_DEPS:-/tmp/braid-gpu-deps}
jobs=${BRAID_GPU_JOBS:-16}
# The whole run's budget: each stage's limit is cut to what is left, and stages that no longer
# fit are skipped, so the table is always written in time (the device tool allows 600 s a call).
budget=${BRAID_GPU_CHECK_BUDGET:-480}
start=$(date +%s)
export root logs build deps jobs

declare -a names results seconds notes
# stage NAME TIMEOUT_SECONDS COMMAND...: runs COMMAND with its output in LOGDIR/NAME.log, then
# rewrites the summary (so a run cut short still leaves the table of what ran).
stage() {
  local name=$1 limit=$2
  shift 2
  local t0 rc left
  if unselected "$name"; then
    note=""
    return 125
  fi
  t0=$(date +%s)
  left=$((budget - (t0 - start) - 5))
  if ((left < 15)); then
    skip "$name" "time budget spent"
    return 125
  fi
  ((limit > left)) && limit=$left
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
  summary
  return $rc
}
# Whether BRAID_GPU_CHECK_STAGES leaves stage $1 out (only stages after the build are chosen).
unselected() {
  [[ -n "${selecting:-}" && -n "${BRAID_GPU_CHECK_STAGES:-}" && " $BRAID_GPU_CHECK_STAGES " != *" $1 "* ]]
}
skip() {
  unselected "$1" && return 0
  names+=("$1"); results+=("SKIP"); seconds+=(0); notes+=("$2")
  echo "== $1: skipped ($2)"
  summary
}

# The table, with the headline numbers from the logs: the kernel/copy ratio, the largest
# AllReduce row's bus bandwidth and wrong counts, the PyTorch verdicts.
summary() {
  local bw_line r n
  bw_line=$(grep -h "float sum reduce / cudaMemcpy" "$logs/kernel-bw.log" 2>/dev/null | sed 's/^# //')
  {
    echo "# tools/gpu-check.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(($(date +%s) - start)) s"
    echo
    echo "| stage | result | seconds | note |"
    echo "|---|---|---|---|"
    for i in "${!names[@]}"; do echo "| ${names[$i]} | ${results[$i]} | ${seconds[$i]} | ${notes[$i]} |"; done
    echo
    [[ -n "$bw_line" ]] && echo "- kernel bandwidth: $bw_line"
    r=$(grep -h "pinned  " "$logs/kernel-bw.log" 2>/dev/null | awk '{printf "%s%s %s GB/s", sep, $2, $4; sep = ", "}')
    [[ -n "$r" ]] && echo "- pinned host copies, 256 MiB: $r"
    r=$(grep -hE "^(int8_block|topk) " "$logs/kernel-bw.log" 2>/dev/null | awk '{printf "%s%s %s %s GB/s", sep, $1, $2, $3; sep = ", "}')
    [[ -n "$r" ]] && echo "- CUDA codecs, fp32 with error feedback, input rate: $r"
    for n in 1 2 4 4-1g; do
      r=$(perf_rows "$logs/allreduce-np$n.log" | tail -1 |
          awk '{print $1" B: busbw "$8" / "$12" GB/s (out of place / in place), wrong "$9" / "$13}')
      [[ -n "$r" ]] && echo "- AllReduce on device buffers, ${n%-1g} ranks, largest size: $r"
      r=$(perf_rows "$logs/allreduce-np$n.log" | awk '{w += $9 + $13; n++} END {if (n) print n" sizes, "w" wrong elements in all"}')
      [[ -n "$r" ]] && echo "- AllReduce on device buffers, ${n%-1g} ranks, every size${n#[0-9]}: $r"
    done
    # Side by side at one rank (NCCL refuses several ranks on one GPU): algbw at the largest size
    # and the time of an 8 B call, Braid's row first.
    for lib in allreduce-np1 nccl-np1; do
      r=$(perf_rows "$logs/$lib.log" | awk 'NR == 1 {t = $6} {s = $1; bw = $7} END {if (NR) print "8 B call "t" us; "s" B: algbw "bw" GB/s"}')
      [[ -n "$r" ]] && echo "- one rank, ${lib/-np1/}: $r"
    done
    # Time per call (us), side by side: device buffers staged against pinned host buffers, and
    # host calls with device support on against BRAID_CUDA=0.
    r=$(side_rows staged-np2 staged-np2-stream pinned-np2)
    [[ -n "$r" ]] && echo "- 2 ranks, us per call, device buffers staged as configured / all staged on the caller's stream / pinned host buffers: $r"
    r=$(side_rows staged-np2 staged-np2-whole)
    [[ -n "$r" ]] && echo "- 2 ranks, us per call, the progress thread's batches piece by piece / whole: $r"
    for s in staged-np2 staged-np2-stream staged-np2-whole; do
      r=$(proxy_line $s)
      [[ -n "$r" ]] && echo "- $s, rank 0's device progress thread: $r"
    done
    r=$(perf_rows "$logs/collectives-np1.log" | awk '{w += $9 + $13; n++} END {if (n) print n" rows of 7 collectives, "w" wrong elements"}')
    [[ -n "$r" ]] && echo "- every collective at one rank on device buffers: $r"
    for s in ipc-np2 ipc-t2 ipc-np4; do
      r=$(perf_rows "$logs/$s.log" | awk '{w += $9 + $13; n++} END {if (n) print n" rows of 7 collectives, "w" wrong elements"}')
      [[ -n "$r" ]] && echo "- $s, every collective over IPC (BRAID_DEVICE_IPC=1): $r"
      r=$(grep -c "device collectives over CUDA IPC" "$logs/$s.log" 2>/dev/null)
      [[ -n "$r" ]] && echo "- $s: $r communicators joined the IPC path"
    done
    r=$(side_rows staged-np2 ipc-allreduce-np2)
    [[ -n "$r" ]] && echo "- 2 ranks, us per call, device buffers staged / over IPC: $r"
    r=$(side_rows allreduce-np1 nccl-np1)
    [[ -n "$r" ]] && echo "- one rank, us per call, Braid / NCCL: $r"
    r=$(side_rows latency-np1 latency-np2 latency-t2 latency-np2-pinned)
    [[ -n "$r" ]] && echo "- small calls, us per call: device buffers 1 rank / 2 ranks as processes / 2 ranks as threads of one process / pinned host buffers 2 ranks: $r"
    for s in allreduce-np1 latency-np1 latency-np2 latency-t2 latency-np2-pinned; do
      r=$(proxy_line $s)
      [[ -n "$r" ]] && echo "- $s, rank 0's device progress thread: $r"
    done
    r=$(side_rows hostcalls-np2 hostcalls-np2-cuda0)
    [[ -n "$r" ]] && echo "- 2 ranks, host memory, us per call, device support on / BRAID_CUDA=0: $r"
    grep -h "^torch_check " "$logs"/torch-np*.log 2>/dev/null | sed "s/^/- /"
  } >"$logs/summary.md"
}

# The result rows of a perf log: rank 0's (braidrun prefixes each line with "[rank] "; a run
# without braidrun has no prefix), without the prefix.
perf_rows() {
  sed -n -e 's/^\[0\] //' -e '/^\[[0-9]*\] /d' -e '/^ *[0-9][0-9]* *[0-9][0-9]* *[a-z0-9]* /p' "$1" 2>/dev/null
}
# Perf logs' out-of-place times per size, side by side: "SIZE B T1 / T2 [/ T3...]; ...", the sizes
# all of them have.
side_rows() {
  local tmp n=$(($# + 1)) i=0
  tmp=$(mktemp -d)
  for s in "$@"; do
    perf_rows "$logs/$s.log" | awk -v first=$((i == 0)) '{print first ? $1" "$6 : $6}' >"$tmp/$i"
    i=$((i + 1))
  done
  (cd "$tmp" && paste -d' ' $(seq 0 $(($# - 1)))) |
    awk -v n=$n 'NF == n {printf "%s%s B %s", sep, $1, $2; for (i = 3; i <= n; ++i) printf " / %s", $i; sep = "; "}'
  rm -rf "$tmp"
}
# The device progress thread's line from rank 0's log of a stage (NCCL_DEBUG_SUBSYS=PROXY).
proxy_line() {
  sed -n 's/^\[0\] .*rank 0: device progress thread: //p' "$logs/$1.log" 2>/dev/null | head -1
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
# nvcc where CMake looks for it (PATH, else CUDACXX), and the toolkit's libraries for the tests.
if ! command -v nvcc >/dev/null && [[ -z "${CUDACXX:-}" ]]; then
  for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
    [[ -x "$c" ]] && export CUDACXX=$c && break
  done
fi
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
# The carried build (tools/gpu-pack.sh made here): its paths filled in, then a smoke run of the
# launcher, a test binary and the perf binary. Where the machine's system libraries refuse it,
# the check builds from source instead.
use_prebuilt() {
  rm -rf "$build" && cp -r "$root/.gpu-prebuilt" "$build" || return 1
  find "$build" -name '*.cmake' -print0 | xargs -0 sed -i -e "s#@BUILD@#$build#g" -e "s#@ROOT@#$root#g"
  echo "packed from $(cat "$build/SOURCE_COMMIT")"
  ldd "$build/libnccl.so.2" "$build/bench/perf/all_reduce_perf" | grep -i "not found" && return 1
  "$build/tools/braidrun" -np 1 -- /bin/true || return 1
  "$build/tests/gpu_kernels_test" --gtest_list_tests >/dev/null || return 1
  "$build/bench/perf/all_reduce_perf" -b 8 -e 8 -n 1 -w 0 -c 1
}
export -f use_prebuilt
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
built=0
if [[ -f "$root/.gpu-prebuilt/libnccl.so.2" && "${BRAID_GPU_PREBUILT:-1}" != 0 && -z "${GPU_CHECK_DRY:-}" ]]; then
  # Unpacked beside the source build tree, which it must not replace (a CUDA build made here).
  source_build=$build
  build=${BRAID_GPU_PACKED_BUILD:-$root/build-gpu-packed}
  # The packed binaries find libnccl.so.2 here (their run path names the tree they were built in).
  export LD_LIBRARY_PATH="$build:$LD_LIBRARY_PATH"
  stage prebuilt 60 use_prebuilt && built=1
  ((built)) || build=$source_build
fi
perf_bins=(all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf sendrecv_perf)
if ((!built)); then
  stage configure 180 configure
  configured=$?
  if [[ -n "${GPU_CHECK_DRY:-}" ]]; then
    echo "GPU_CHECK_DRY: stopping after configure"
    exit $configured
  fi
  if ((configured == 0)); then
    # Only what the check runs: the library, the GPU tests, the perf binaries, the launcher.
    stage build 300 cmake --build "$build" -j"$jobs" --target nccl braid gpu_kernels_test \
      gpu_collectives_test gpu_codec_test cuda-kernel-bw braidrun "${perf_bins[@]}" && built=1
  else
    skip build "configure failed"
  fi
fi
# Threads as ranks put several streams of one process on the GPU; more hardware queues keep
# their stream waits from queueing behind each other (docs/architecture.md, Device memory).
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}

selecting=1  # from here on, BRAID_GPU_CHECK_STAGES may choose

# ---- GPU tests -------------------------------------------------------------------------------
gpu_tests() {
  local out="$logs/gpu-tests.ctest.txt"
  ctest --test-dir "$build" -L gpu --output-on-failure -j2 2>&1 | tee "$out"
  ((PIPESTATUS[0] == 0)) || return 1
  # On a GPU machine a skipped GPU test is a failure: no device was usable.
  if grep -q "(Skipped)" "$out"; then
    echo "GPU tests were skipped: no usable device"
    return 3
  fi
}
export -f gpu_tests
if ((built)); then stage gpu-tests 150 gpu_tests; else skip gpu-tests "no build"; fi

# ---- the rest, most important first (a stage the budget no longer fits is skipped) ----------
perf="$build/bench/perf"
run_perf() {  # ranks binary args... (-G 1 device buffers, -G 2 pinned host ones)
  local n=$1 bin=$2
  shift 2
  "$build/tools/braidrun" -np "$n" --timeout 200 -- "$perf/$bin" "$@"
}
torch_check() { python3 "$root/tools/torch_check.py" --lib "$build/libnccl.so.2" --world "$1" --timeout 150; }
export perf
export -f run_perf torch_check
# AllReduce: every power of two from 8 B to 1 GiB, checked (-c 1).
if [[ -n "${BRAID_GPU_CHECK_QUICK:-}" ]]; then ar=(-G 1 -b 8 -e 64M -f 8 -n 3 -w 1 -c 1)
else ar=(-G 1 -b 8 -e 1G -f 2 -n 2 -w 1 -c 1); fi
small=(-G 1 -b 8 -e 64M -f 8 -n 3 -w 1 -c 1)
# Side by side at 2 ranks, 8 B - 256 MiB: device buffers (staged through pinned memory) against
# pinned host buffers (run in place, no staging), so the difference is what staging costs.
staged=(-b 8 -e 256M -f 8 -n 5 -w 2 -c 1)
# Host-memory calls, many small ones: what device support costs a host call (BRAID_CUDA=0 off).
hostcalls=(-G 0 -b 8 -e 64K -f 8 -n 500 -w 50 -c 1)
# The progress thread's INFO line when a communicator goes: where its time went.
proxy_log=(env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=PROXY)
if ((built)); then
  stage kernel-bw 60 "$build/bench/cuda/cuda-kernel-bw" 256 20
  stage allreduce-np2 150 run_perf 2 all_reduce_perf "${ar[@]}"
  stage torch-np2 150 torch_check 2
  stage allreduce-np4 150 run_perf 4 all_reduce_perf "${ar[@]}"
  stage torch-np4 150 torch_check 4
  # The devices running the collectives among themselves (BRAID_DEVICE_IPC=1: CUDA IPC
  # mailboxes, no staging), first run here: every collective checked at 2 ranks as processes, 2
  # as threads of one process and 4; AllReduce side by side with the staged path (staged-np2).
  ipc_log=(env BRAID_DEVICE_IPC=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROXY)
  collectives() {  # ranks perf-arguments...
    local n=$1 bin rc=0
    shift
    for bin in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf \
               alltoall_perf sendrecv_perf; do
      echo "== $bin"
      run_perf "$n" "$bin" "$@" || rc=1
    done
    return $rc
  }
  export -f collectives
  stage ipc-np2 60 "${ipc_log[@]}" bash -c 'collectives 2 "$@"' run "${small[@]}"
  stage ipc-t2 60 "${ipc_log[@]}" bash -c 'collectives 1 -t 2 "$@"' run "${small[@]}"
  stage ipc-np4 60 "${ipc_log[@]}" bash -c 'collectives 4 "$@"' run "${small[@]}"
  stage ipc-allreduce-np2 60 "${ipc_log[@]}" bash -c 'run_perf 2 all_reduce_perf -G 1 "$@"' run "${staged[@]}"
  # One rank, Braid beside NVIDIA's NCCL: every power of two to 1 GiB even in QUICK mode (a
  # communicator of one rank runs as kernels on the stream, as NCCL's does).
  ar1=(-G 1 -b 8 -e 1G -f 2 -n 20 -w 5 -c 1)
  stage allreduce-np1 90 "${proxy_log[@]}" bash -c 'run_perf 1 all_reduce_perf "$@"' run "${ar1[@]}"
  # The same binary on NVIDIA's NCCL (the one PyTorch ships), preloaded: its soname is
  # libnccl.so.2, so the loader takes it for Braid's too.
  nccl_lib=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
for p in site.getsitepackages():
    hits = sorted(glob.glob(os.path.join(p, "nvidia", "**", "libnccl.so.2"), recursive=True))
    if hits:
        print(hits[0])
        break
PY
)
  if [[ -n "$nccl_lib" ]]; then
    note="$nccl_lib"
    stage nccl-np1 90 env LD_PRELOAD="$nccl_lib" NCCL_DEBUG=VERSION "$perf/all_reduce_perf" "${ar1[@]}"
  else
    skip nccl-np1 "no NVIDIA libnccl.so.2 among python3's packages"
  fi
  for bin in all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf sendrecv_perf; do
    stage "${bin%_perf}-np4" 45 run_perf 4 "$bin" "${small[@]}"
  done
  # Every collective on a communicator of one rank (kernels on the stream; sendrecv to itself is
  # staged), each checked.
  stage collectives-np1 60 collectives 1 "${small[@]}"
  # Staging as configured (large batches by the progress thread), against every batch staged on
  # the caller's stream; the progress thread's INFO line says where its time went.
  stage staged-np2 60 "${proxy_log[@]}" bash -c 'run_perf 2 all_reduce_perf -G 1 "$@"' run "${staged[@]}"
  stage staged-np2-stream 60 "${proxy_log[@]}" BRAID_DEVICE_STREAM_COPY_BYTES=$((1 << 34)) \
    bash -c 'run_perf 2 all_reduce_perf -G 1 "$@"' run "${staged[@]}"
  # The progress thread's batches staged whole (its copies before and after the schedule)
  # against piece by piece (as configured, above).
  stage staged-np2-whole 60 "${proxy_log[@]}" BRAID_DEVICE_PIECE_BYTES=0 \
    bash -c 'run_perf 2 all_reduce_perf -G 1 "$@"' run "${staged[@]}"
  stage pinned-np2 60 run_perf 2 all_reduce_perf -G 2 "${staged[@]}"
  # Small calls: where their time goes (the progress thread's line), with one rank, two ranks as
  # processes (a CUDA context each) and as threads of one process, and on pinned host buffers.
  lat=(-b 8 -e 512 -f 8 -n 50 -w 5 -c 1)
  stage latency-np1 30 "${proxy_log[@]}" bash -c 'run_perf 1 all_reduce_perf -G 1 "$@"' run "${lat[@]}"
  stage latency-np2 30 "${proxy_log[@]}" bash -c 'run_perf 2 all_reduce_perf -G 1 "$@"' run "${lat[@]}"
  stage latency-t2 30 "${proxy_log[@]}" bash -c 'run_perf 1 all_reduce_perf -t 2 -G 1 "$@"' run "${lat[@]}"
  stage latency-np2-pinned 30 "${proxy_log[@]}" bash -c 'run_perf 2 all_reduce_perf -G 2 "$@"' run "${lat[@]}"
  # The largest AllReduce at 4 ranks, checked (QUICK's sweep stops at 64 MiB).
  stage allreduce-np4-1g 120 run_perf 4 all_reduce_perf -G 1 -b 1G -e 1G -n 2 -w 1 -c 1
  stage hostcalls-np2 45 run_perf 2 all_reduce_perf "${hostcalls[@]}"
  stage hostcalls-np2-cuda0 45 env BRAID_CUDA=0 bash -c 'run_perf 2 all_reduce_perf "$@"' run "${hostcalls[@]}"
else
  skip kernel-bw "no build"
  skip perf "no build"
  skip torch "no build"
fi

# ---- table -----------------------------------------------------------------------------------
summary
echo
cat "$logs/summary.md"
grep -q "| \(FAIL\|TIMEOUT\)" "$logs/summary.md" && exit 1
exit 0
