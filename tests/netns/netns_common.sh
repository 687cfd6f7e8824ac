# Sourced by the netns tests, after setting NETCLUSTER (the path of tools/netcluster).
# Skips the test (exit 77, ctest's SKIP_RETURN_CODE) where the emulated cluster cannot be built:
# without root, `ip netns`, tc (iproute2) or unshare.
set -u
if [[ $(id -u) != 0 ]]; then echo "SKIPPED: needs root (network namespaces)"; exit 77; fi
if ! ip netns list >/dev/null 2>&1; then echo "SKIPPED: 'ip netns' is not available"; exit 77; fi
if ! command -v tc >/dev/null || ! command -v unshare >/dev/null; then
  echo "SKIPPED: needs tc (iproute2) and unshare (util-linux)"; exit 77
fi

# netns_scratch NAME [FILE...]: this test's own cluster prefix in $P (parallel tests and a
# developer's cluster never collide) and a log file in $LOG; at exit the cluster, the log and
# the FILEs (or folders) given are removed.
netns_scratch() {
  P="bnc${1:0:1}$(( $$ % 100000 ))-"
  LOG=$(mktemp "/tmp/braid-$1-test.XXXXXX")
  NETNS_REMOVE=("$LOG" "${@:2}")
  trap '"$NETCLUSTER" --cleanup --prefix "$P" >/dev/null 2>&1; rm -rf "${NETNS_REMOVE[@]}"' EXIT
}
