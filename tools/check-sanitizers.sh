#!/usr/bin/env bash
# A sanitized tree of its own, built by clang without CUDA, benchmarks or the torch extension,
# and the suites below run in it; the test presets set the runtimes' options, so any report
# fails its test. Prints the wall times of the build and of the tests.
#
#   bash tools/check-sanitizers.sh [ctest args]         CI's stage (.ci/run): unit, inproc, mp, fuzz
#                                                       under ASan+UBSan (preset asan-host)
#   bash tools/check-sanitizers.sh --tsan [ctest args]  inproc, mp under TSan (preset
#                                                       tsan-host; tools/check-deep.sh)
#
# A test that cannot run under a sanitizer carries the label no-asan or no-tsan, with the reason
# beside it. Extra arguments go to ctest (e.g. `-R shm`).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--tsan" ]]; then
  shift
  name=TSan preset=tsan-host exclude=no-tsan labels=(inproc mp)
  # Only what those suites run is built: their test binaries, braidrun
  # (tests/mp/braidrun_test.cc) and dp_train (example.dp_train, labelled inproc).
  targets=(braidrun dp_train)
  for suite in "${labels[@]}"; do
    for src in tests/"$suite"/*_test.cc; do targets+=("${suite}_$(basename "$src" .cc)"); done
  done
else
  name=ASan+UBSan preset=asan-host exclude=no-asan labels=(unit inproc mp fuzz)
  targets=(all)
fi
label_re="^($(IFS='|'; echo "${labels[*]}"))\$"

start=$(date +%s)
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)" --target "${targets[@]}"
built=$(date +%s)
status=0
ctest --preset "$preset" -L "$label_re" -LE "^${exclude}\$" -j2 "$@" || status=$?
end=$(date +%s)
echo "== $name (${labels[*]}): build $((built - start)) s, tests $((end - built)) s," \
     "total $((end - start)) s"
exit "$status"
