#!/usr/bin/env bash
# rdma_<mode>: Braid over its ib transport on Soft-RoCE (tests/rdma/guest.sh).
#   braid_test.sh MODE BINARY...
#   contract     BINARY = inproc_endpoint_contract_test: the endpoint contract's ib cases
#   collectives  BINARY = mp_allreduce_sweep_test mp_coll_sweep_test: AllReduce (every type and
#                op, odd counts, in and out of place) at 2 and 4 ranks and every collective at 2
#                and 3 ranks, BRAID_TRANSPORTS=ib (the suites' "Tcp" cases: shared memory off).
#                Not AllReduce at 3 ranks: the coll sweep has an odd rank count over ib, and in
#                the guest the 2-, 3- and 4-rank AllReduce sweeps took 89, 153 and 238 s of the
#                test's 800 s
#   failure      BINARY = mp_failure_test: a rank killed or stopped mid-AllReduce and during a
#                large send/recv; the survivors fail within BRAID_TIMEOUT_MS + 1 s naming it
#   cycles       BINARY = mp_cycles_test: 100 init/destroy cycles leave fds, threads and memory
#                flat (every queue pair, completion queue, registration and channel released)
#   two_guests   BINARY = all_reduce_perf: one rank in each of two guests, so the traffic
#                crosses rxe's UDP path between them; every result checked
#   ktls         BINARY = mp_tls_test inproc_endpoint_contract_test inproc_tls_test: encrypted
#                TCP (BRAID_TLS_PSK) where the kernel has the tls module, so OpenSSL hands the
#                sending side's record layer to the kernel after each handshake (kTLS; OpenSSL
#                3.0 offloads TLS 1.3 sends only) and Braid's record layer opens what arrives
#                (against OpenSSL's in inproc_tls_test); the kernel's counters must show kTLS
#                sockets
# Skips (77) where no guest can be booted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=$1
shift
guest() { exec "$here/guest.sh" "$@"; }
export BRAID_TRANSPORTS=ib
case $mode in
  contract) guest --timeout 300 -- "$1" --gtest_filter='*/ib_*:IbDirect.*' ;;
  collectives)
    guest --timeout 800 -- bash -c '"$0" --gtest_filter="Tcp/*:-*8ranks:*3ranks" && "$1" --gtest_filter="Tcp/*/0:Tcp/*/1"' "$1" "$2" ;;
  failure)
    guest --timeout 300 -- "$1" \
      --gtest_filter='RankFailure.KilledPeerOverTcp:RankFailure.StalledPeerTimesOutOverTcp:*SendRecvKilledTcp*' ;;
  cycles) BRAID_TEST_CYCLES=100 guest --timeout 300 -- "$1" --gtest_filter='*OverTcp' ;;
  two_guests)
    # Ranks by guest; the bootstrap crosses the guests' network over TCP, the data ib.
    guest --guests 2 --timeout 300 -- bash -c 'RANK=$GUEST_INDEX WORLD_SIZE=2 \
      NCCL_COMM_ID=10.77.0.1:29517 NCCL_SOCKET_IFNAME=eth0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET \
      "$0" -b 8 -e 4M -f 8 -n 3 -w 1 -c 1' "$1" ;;
  ktls)
    unset BRAID_TRANSPORTS
    export NCCL_IB_DISABLE=1  # the guest's rxe0 would carry the ranks' traffic otherwise
    guest --timeout 300 -- bash -c '
      grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp || { echo "no tls ULP in the guest"; exit 77; }
      "$0" && "$1" --gtest_filter="*/tcp_tls*" && "$2" --gtest_filter="Tls.BraidsRecordLayer*" || exit 1
      both=$(NCCL_DEBUG=TRACE NCCL_DEBUG_SUBSYS=NET "$1" \
        --gtest_filter="*ManySmallMessagesOverSeveralRounds/tcp_tls_4streams" 2>&1 |
        grep -c "records sealed by the kernel, opened by Braid" || true)
      echo "TLS connections sealed by the kernel and opened by Braid: $both"
      [ "$both" -gt 0 ] || { echo "no connection had kTLS sending and Braid receiving"; exit 1; }
      tx=$(awk "/^TlsTxSw[[:space:]]/{print \$2}" /proc/net/tls_stat)
      rx=$(awk "/^TlsRxSw[[:space:]]/{print \$2}" /proc/net/tls_stat)
      echo "kTLS sockets: ${tx:-?} sending, ${rx:-?} receiving"
      [ "${tx:-0}" -gt 0 ] || { echo "kTLS did not run"; exit 1; }' "$1" "$2" "$3" ;;
  *) echo "braid_test.sh: unknown mode $mode" >&2; exit 2 ;;
esac
