#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz) for longer than the ctest label does, two at a time
# (the machine's two cores), each from its committed seeds, and prints per target: executions,
# coverage (libFuzzer's cov: edges and ft: features), the inputs it added, and its findings.
#
#   tools/fuzz.sh [seconds] [targets...]     default: 600 s, every target
#
# Needs the fuzz tree: cmake --preset fuzz && cmake --build --preset fuzz. New inputs and
# findings go to a scratch directory (BRAID_FUZZ_OUT, default build/fuzz/fuzz-runs/<time>/),
# never into tests/fuzz/corpus/: a finding becomes a committed corpus entry once it is fixed.
# BRAID_FUZZ_BUILD picks another tree, BRAID_FUZZ_JOBS the number of targets run at once.
# Exits 1 when a target found something (crash-*, leak-*, timeout-*, oom-* in its artifacts).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
shift || true
build=${BRAID_FUZZ_BUILD:-build/fuzz}
jobs=${BRAID_FUZZ_JOBS:-2}
targets=("$@")
((${#targets[@]})) || targets=(fuzz_bootstrap fuzz_tcp fuzz_xml fuzz_env fuzz_compress)
out=${BRAID_FUZZ_OUT:-$build/fuzz-runs/$(date -u +%Y%m%d-%H%M%S)}

for t in "${targets[@]}"; do
  if [[ ! -x $build/tests/fuzz/$t ]]; then
    echo "fuzz.sh: $build/tests/fuzz/$t is not built (cmake --preset fuzz && cmake --build --preset fuzz)" >&2
    exit 2
  fi
done

run() {
  local t=$1 dir=$out/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" "tests/fuzz/corpus/$t" >"$dir/log" 2>&1 || true
}

echo "== fuzzing ${targets[*]} for ${seconds} s each, $jobs at a time; output in $out"
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
  run "$t" &
  running=$((running + 1))
done
wait

found=0
printf '%-16s %12s %8s %8s %8s %8s  %s\n' target executions cov ft corpus new findings
for t in "${targets[@]}"; do
  dir=$out/$t
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$dir/log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  new=$(find "$dir/corpus" -type f | wc -l)
  findings=$(find "$dir/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' -o -name 'slow-unit-*' \) | wc -l)
  printf '%-16s %12s %8s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
    "$new" "$findings"
  if ((findings)); then
    found=1
    find "$dir/artifacts" -type f | sed 's/^/    /'
    grep -m1 -E 'ERROR: |runtime error|fuzz invariant broken' "$dir/log" | sed 's/^/    /' || true
  fi
done
exit "$found"
