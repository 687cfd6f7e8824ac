#!/usr/bin/env bash
# The test command: set up and build (tools/setup.sh), then run every test with ctest.
# Extra arguments go to ctest (e.g. `bash tools/test.sh -L unit`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
ctest --preset release --output-on-failure -j2 "$@"
