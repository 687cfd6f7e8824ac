#!/usr/bin/env bash
# Starts one job of N client processes on this host and proves they all succeed: each rank
# gets RANK, WORLD_SIZE and NCCL_COMM_ID=127.0.0.1:<free port>, and LD_PRELOAD=<lib> when -p
# is given. Fails as soon as any rank fails (and stops the others), fails if the job is not
# done within the timeout (and kills every rank), and fails unless every rank printed PASS.
# Never leaves a process behind.
#
# usage: run_preload.sh [-n ranks] [-t timeout_s] [-p preload_lib] -- client [args...]
set -u

ranks=4
timeout_s=60
preload=""
while getopts "n:t:p:" opt; do
  case "$opt" in
    n) ranks=$OPTARG ;;
    t) timeout_s=$OPTARG ;;
    p) preload=$OPTARG ;;
    *) echo "usage: $0 [-n ranks] [-t timeout_s] [-p preload_lib] -- client [args...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then
  echo "run_preload: no client given" >&2
  exit 2
fi
if [ -n "$preload" ] && [ ! -f "$preload" ]; then
  echo "run_preload: preload library $preload does not exist" >&2
  exit 2
fi

# A port the kernel just handed out and released is free with high probability; another
# test taking it in between makes rank 0's listen fail loudly, not silently.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
    2>/dev/null || echo $((20000 + RANDOM % 40000))
}
port=$(free_port)

logdir=$(mktemp -d "${TMPDIR:-/tmp}/run_preload.XXXXXX")
declare -a pids status
# Each rank runs in its own process group so that stopping it also stops anything it forked.
stop_all() {
  local signal=$1 r
  for r in "${!pids[@]}"; do
    [ -z "${status[$r]:-}" ] && kill "-$signal" -- "-${pids[$r]}" 2>/dev/null
  done
}
cleanup() {
  stop_all KILL
  wait 2>/dev/null
  rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# After stop_all, collect the stopped ranks so that their logs show how they ended.
reap_stopped() {
  local r
  for r in "${!pids[@]}"; do
    if [ -z "${status[$r]:-}" ]; then
      wait "${pids[$r]}"
      status[$r]="$? (stopped)"
    fi
  done
}
show_logs() {
  local r
  for r in $(seq 0 $((ranks - 1))); do
    echo "---- rank $r (exit ${status[$r]:-still running}) ----"
    cat "$logdir/rank$r.log" 2>/dev/null
  done
}

echo "run_preload: $ranks ranks, NCCL_COMM_ID=127.0.0.1:$port, LD_PRELOAD=${preload:-<none>}, timeout ${timeout_s}s"
for r in $(seq 0 $((ranks - 1))); do
  if [ -n "$preload" ]; then
    RANK=$r WORLD_SIZE=$ranks NCCL_COMM_ID=127.0.0.1:$port LD_PRELOAD=$preload \
      setsid "$@" >"$logdir/rank$r.log" 2>&1 &
  else
    RANK=$r WORLD_SIZE=$ranks NCCL_COMM_ID=127.0.0.1:$port \
      setsid "$@" >"$logdir/rank$r.log" 2>&1 &
  fi
  pids[$r]=$!
done

deadline=$((SECONDS + timeout_s))
running=$ranks
while [ "$running" -gt 0 ]; do
  for r in "${!pids[@]}"; do
    [ -n "${status[$r]:-}" ] && continue
    kill -0 "${pids[$r]}" 2>/dev/null && continue
    wait "${pids[$r]}"
    status[$r]=$?
    running=$((running - 1))
    if [ "${status[$r]}" -ne 0 ]; then
      echo "run_preload: FAIL: rank $r exited with status ${status[$r]}; stopping the others"
      stop_all TERM
      sleep 1
      stop_all KILL
      reap_stopped
      show_logs
      exit 1
    fi
  done
  if [ "$running" -gt 0 ] && [ "$SECONDS" -ge "$deadline" ]; then
    echo "run_preload: FAIL: timeout after ${timeout_s}s with $running rank(s) still running; killing them"
    stop_all KILL
    reap_stopped
    show_logs
    exit 1
  fi
  [ "$running" -gt 0 ] && sleep 0.1
done

for r in $(seq 0 $((ranks - 1))); do
  if ! grep -q "PASS" "$logdir/rank$r.log"; then
    echo "run_preload: FAIL: rank $r exited 0 without printing PASS"
    show_logs
    exit 1
  fi
done
show_logs
echo "run_preload: PASS ($ranks ranks)"
exit 0
