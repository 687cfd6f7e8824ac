#!/usr/bin/env bash
# CI's sanitizer stage (.ci/run, after tools/test.sh, which installs clang): the suites below
# under AddressSanitizer and UndefinedBehaviorSanitizer, in a tree of their own (preset
# asan-host: clang, no CUDA, no benchmarks, no torch extension; the test preset sets the
# sanitizers' options, so any report fails its test). Prints the stage's wall times.
# Extra arguments go to ctest (e.g. `bash tools/check-sanitizers.sh -R shm`).
set -euo pipefail
cd "$(dirname "$0")/.."

labels=(unit inproc mp)
# Tests that cannot run under ASan carry the label no-asan (tests/CMakeLists.txt says which, and why).
label_re="^($(IFS='|'; echo "${labels[*]}"))\$"

start=$(date +%s)
cmake --preset asan-host >/dev/null
cmake --build --preset asan-host -j"$(nproc)"
built=$(date +%s)
status=0
ctest --preset asan-host -L "$label_re" -LE '^no-asan$' -j2 "$@" || status=$?
end=$(date +%s)
echo "== ASan+UBSan stage (${labels[*]}): build $((built - start)) s, tests $((end - built)) s," \
     "total $((end - start)) s"
exit "$status"
