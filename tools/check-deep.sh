#!/usr/bin/env bash
# The slow check, run before resolving an issue that touches threads (not part of CI): the
# threaded suites (inproc, mp) under ThreadSanitizer, in a host-only tree of their own
# (tools/check-sanitizers.sh --tsan). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/check-sanitizers.sh --tsan "$@"
