#!/usr/bin/env bash
# Packs what tools/gpu-check.sh runs from a CUDA build made here, so the lent GPU machine spends
# its few minutes on the checks instead of compiling (its device time counts from its start).
#
#   bash tools/gpu-pack.sh [BUILD]        # BUILD: a CUDA build tree (default build-gpu)
#
# Writes .gpu-prebuilt/ (ignored by git): the library, the launcher, the perf binaries, the GPU
# tests and kernel benchmark, and ctest's files for the GPU tests, with every absolute path of
# this checkout and of BUILD replaced by @ROOT@ and @BUILD@, which gpu-check.sh fills in on the
# device. Carry .gpu-prebuilt and .device-debs; gpu-check.sh uses the packed build when its
# smoke stage runs there, and builds on the device when it does not (other system libraries).
# Configure BUILD as gpu-check.sh does (its `configure` function): sm_90, no hwloc, no verbs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=$(cd "${1:-build-gpu}" && pwd)
out=$root/.gpu-prebuilt

bins=(libnccl.so.2 tools/braidrun bench/cuda/cuda-kernel-bw tests/gpu_kernels_test
      tests/gpu_collectives_test tests/gpu_codec_test)
for b in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
  bins+=("bench/perf/${b}_perf")
done
for b in "${bins[@]}"; do
  [[ -e "$build/$b" ]] || { echo "gpu-pack: $build/$b is missing: build it first" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out"
for b in "${bins[@]}"; do
  mkdir -p "$out/$(dirname "$b")"
  cp -L "$build/$b" "$out/$b"
  strip --strip-debug "$out/$b" 2>/dev/null || true
done
# libnccl.so.2 is a link chain in the build tree; the soname is what the loader looks for.
ln -sf libnccl.so.2 "$out/libnccl.so"
# ctest's files for the GPU tests: the top one, the tests folder's, and the discovered test lists.
cp "$build/CTestTestfile.cmake" "$out/"
cp "$build/tests/CTestTestfile.cmake" "$out/tests/"
cp "$build"/tests/gpu_*_tests.cmake "$out/tests/" 2>/dev/null || true
cp "$build"/tests/gpu_*_include.cmake "$out/tests/" 2>/dev/null || true
# Only the gpu tests' lines: the others name binaries that are not packed.
grep -hE 'gpu_|^#|^$' "$build/tests/CTestTestfile.cmake" >"$out/tests/CTestTestfile.cmake" || true
printf 'subdirs("tests")\n' >"$out/CTestTestfile.cmake"
find "$out" -name '*.cmake' -print0 |
  xargs -0 sed -i -e "s#$build#@BUILD@#g" -e "s#$root#@ROOT@#g"
git -C "$root" rev-parse HEAD >"$out/SOURCE_COMMIT"
git -C "$root" diff --quiet HEAD || echo "(with uncommitted changes)" >>"$out/SOURCE_COMMIT"
du -sh "$out"
