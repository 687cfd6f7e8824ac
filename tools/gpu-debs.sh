#!/usr/bin/env bash
# Downloads (does not install) the Debian packages tools/gpu-check.sh builds with on the lent GPU
# machine, which has no network and none of them: pugixml and OpenSSL 3 (required) and
# GoogleTest/GoogleMock (the GPU tests), with their -dev parts, into .device-debs/ (ignored by git). Run it here, where
# apt works, then carry .device-debs to the device machine. hwloc and verbs stay out: optional,
# and gpu-check.sh configures without them.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device-debs
cd .device-debs
rm -f ./*.deb
apt-get download libpugixml-dev libpugixml1v5 libssl-dev libssl3 libgtest-dev libgmock-dev
ls -l
