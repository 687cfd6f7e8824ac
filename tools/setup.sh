#!/usr/bin/env bash
# Installs what Braid needs on a fresh Debian/Ubuntu machine (root or sudo), then configures
# and builds it in build/release, OpenMPI (bench/compare's baseline, and mpirun for a test) and
# PyTorch (whose Gloo is the other baseline) included. `--bench` also installs matplotlib for
# bench/compare's --plot and scikit-learn for bench/train's data set; `--rdma` what the rdma
# label's qemu guests need.
set -euo pipefail
cd "$(dirname "$0")/.."

# python3-torch, libtorch-dev, pybind11-dev and python3-dev: the torch.distributed backend
# (frameworks/torch, built when they are present) and its tests (ctest -L torch). clang and its
# runtimes (libclang-rt-dev, only recommended by clang: libFuzzer and the sanitizers): the
# sanitizer trees (tools/check-sanitizers.sh, tools/check-deep.sh) and the fuzz targets.
# openmpi-bin: mpirun, which the netns label's test starts Braid's perf binaries with (and
# libopenmpi-dev beside it: with mpirun and without the headers, CMake's FindMPI fails).
# libipsec-mb-dev: Intel's AES-GCM for the TLS record layer (src/base/net/gcm.h; OpenSSL's
# without it). liburing-dev: sleeping on sockets and shared memory at once
# (src/transport/any_wait.h; yielding without it).
packages=(build-essential cmake ninja-build pkg-config python3 iproute2 openmpi-bin libopenmpi-dev
          libgtest-dev libgmock-dev libbenchmark-dev libhwloc-dev libpugixml-dev libibverbs-dev libssl-dev
          libipsec-mb-dev liburing-dev python3-torch libtorch-dev pybind11-dev python3-dev clang libclang-rt-dev)
for arg in "$@"; do
  case $arg in
    --bench) packages+=(python3-matplotlib python3-sklearn) ;;
    # The rdma label's guests (tests/rdma/guest.sh): qemu, Debian's kernel with rdma_rxe, a
    # static busybox and cpio for their initramfs, rdma-core's and perftest's tools.
    --rdma) packages+=(qemu-system-x86 linux-image-amd64 busybox-static cpio ibverbs-utils perftest) ;;
    *) echo "setup.sh: unknown option $arg (--bench, --rdma)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "== installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)"
