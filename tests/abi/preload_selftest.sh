#!/usr/bin/env bash
# Proves that run_preload.sh judges a job correctly, with shell stand-ins for the client:
# it passes a job whose ranks all print PASS, and fails (quickly, leaving no process behind)
# a job where one rank fails, one that hangs past the timeout, and one that exits 0 silently.
#
# usage: preload_selftest.sh path/to/run_preload.sh
set -u
driver=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/preload_selftest.XXXXXX")
trap 'rm -rf "$work"' EXIT
: >"$work/pids"
failures=0

# expect <want_rc> <max_seconds> <description> -- driver args...
expect() {
  local want=$1 max_s=$2 what=$3
  shift 4
  local start=$SECONDS
  bash "$driver" "$@" >"$work/out.txt" 2>&1
  local rc=$? took=$((SECONDS - start))
  if [ "$rc" -ne "$want" ] || [ "$took" -gt "$max_s" ]; then
    echo "selftest FAIL: $what: exit $rc after ${took}s (want exit $want within ${max_s}s)"
    cat "$work/out.txt"
    failures=$((failures + 1))
  else
    echo "selftest ok: $what (exit $rc, ${took}s)"
  fi
}

# Every stand-in records its pid so that leftovers can be detected afterwards.
record='echo $$ >> '"$work"'/pids;'

expect 0 20 "all ranks pass and see their environment" -- -n 4 -t 20 -- bash -c "$record"'
  [ "$WORLD_SIZE" = 4 ] && [ "$RANK" -ge 0 ] && [ "$RANK" -lt 4 ] &&
  case "$NCCL_COMM_ID" in 127.0.0.1:[0-9]*) echo "rank $RANK PASS" ;; esac'

expect 1 10 "one failing rank fails the job and stops the others" -- -n 4 -t 60 -- bash -c "$record"'
  if [ "$RANK" = 2 ]; then sleep 0.5; exit 3; fi; sleep 120; echo PASS'

expect 1 10 "a hung job is killed at the timeout" -- -n 4 -t 2 -- bash -c "$record"'
  trap "" TERM; sleep 120; echo PASS'

expect 1 10 "a rank exiting 0 without PASS fails the job" -- -n 4 -t 20 -- bash -c "$record"'
  [ "$RANK" = 1 ] || echo PASS'

expect 2 10 "a missing preload library is refused" -- -n 2 -t 5 -p "$work/absent.so" -- true

sleep 0.5
while read -r pid; do
  if kill -0 "$pid" 2>/dev/null; then
    echo "selftest FAIL: stand-in process $pid outlived its job"
    kill -KILL "$pid"
    failures=$((failures + 1))
  fi
done <"$work/pids"

[ "$failures" -eq 0 ] && echo "selftest PASS" && exit 0
exit 1
