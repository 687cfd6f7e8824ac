#!/usr/bin/env bash
# Runs a command in one or two fresh qemu guests (software emulation: no KVM needed) booting the
# host's Debian kernel, each with a Soft-RoCE device rxe0 ACTIVE on its eth0, and returns the
# command's output and exit status.
#
#   tests/rdma/guest.sh [--guests 1|2] [--timeout S] [--mem MIB] [--smp N] [--env NAME[=VALUE]]...
#                       [--rw DIR]... [--verbose] -- CMD [ARG...]
#
# The guest sees the host's root read-only (9p) under a tmpfs overlay, so host-built binaries run
# unchanged; writes stay in the guest, except under each --rw DIR (a host directory the guest
# sees writable at the same path: results, test reports). CMD runs as root, chrooted there, in the caller's current
# directory, with the caller's BRAID_*, NCCL_*, GTEST_*, *SAN_OPTIONS, PATH, LD_LIBRARY_PATH,
# LD_PRELOAD, PYTHONPATH, HOME, LANG, LC_ALL, TZ and TMPDIR, those given by --env, and
# GUEST_INDEX, GUEST_COUNT, GUEST_ADDR (this guest's IPv4 address on eth0) and GUEST_PEER_ADDR
# (the other guest's; with one guest, its own). Guest i is host guest<i> at 10.77.0.<i+1>/24.
# With --guests 2 the guests' eth0s are joined by a qemu stream socket (Unix, in the run's temp
# directory; TCP on 127.0.0.1 with a qemu older than 7.2) that rxe's UDP port 4791 crosses; CMD
# runs in both, starting once each guest reaches the other, and each line of its output comes
# back prefixed "[i] ". Output comes back as it is written (through a writable 9p share).
#
# Exit status: CMD's (with two guests the worse: a failure over 77 over 0, guest 0's first);
# 124 if a guest did not finish within --timeout seconds (default 600; it is killed); 125 if the
# harness failed (qemu did not start, a guest's setup failed or it died without reporting, e.g.
# a kernel panic: its console is printed); 77, with the reason on stderr, where qemu, busybox,
# cpio, modprobe, rdma (iproute2) or a kernel in /boot with rdma_rxe is missing (ctest's skip).
# BRAID_GUEST_KERNEL=VERSION picks the kernel (default: the newest in /boot with rdma_rxe).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { sed -n '6,7p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2; exit 2; }
skip() { echo "guest.sh: skipped: $*" >&2; exit 77; }
die() { echo "guest.sh: $*" >&2; exit 125; }

guests=1 timeout=600 mem=2048 smp=2 verbose=0
extra_env=() rw_dirs=()
while (($#)); do
  case $1 in
    --guests) guests=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --env) extra_env+=("$2"); shift 2 ;;
    --rw) [[ -d $2 ]] || { echo "guest.sh: --rw $2: no such directory" >&2; exit 2; }
          rw_dirs+=("$(cd "$2" && pwd -P)"); shift 2 ;;
    --verbose) verbose=1; shift ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
(($#)) || usage
[[ $guests == [12] && $timeout =~ ^[0-9]+$ && $mem =~ ^[0-9]+$ && $smp =~ ^[0-9]+$ ]] || usage

# What a guest needs from the host.
qemu=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
tool() { PATH=$PATH:/usr/sbin:/sbin command -v "$1"; }  # modprobe is in sbin, off a user's PATH
for t in busybox cpio modprobe rdma; do
  tool "$t" >/dev/null || skip "$t not found (apt-get install busybox-static cpio kmod iproute2)"
done
busybox=$(tool busybox) modprobe=$(tool modprobe)
! ldd "$busybox" >/dev/null 2>&1 || skip "$busybox is not statically linked (apt-get install busybox-static)"
rxe_ko() { compgen -G "/lib/modules/$1/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null; }
kver=${BRAID_GUEST_KERNEL:-}
if [[ -z $kver ]]; then
  while read -r v; do
    v=${v#/boot/vmlinuz-}
    if rxe_ko "$v"; then kver=$v; break; fi
  done < <(compgen -G '/boot/vmlinuz-*' | sort -rV)
fi
[[ -n $kver ]] || skip "no kernel in /boot with rdma_rxe in /lib/modules (apt-get install linux-image-amd64)"
vmlinuz=/boot/vmlinuz-$kver
[[ -r $vmlinuz ]] || skip "$vmlinuz is missing or not readable"
rxe_ko "$kver" || skip "kernel $kver has no rdma_rxe module"

work=$(mktemp -d "${TMPDIR:-/tmp}/braid-guest.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The initramfs: busybox, the modules (dependencies first, decompressed: busybox's insmod may not
# read .ko.xz or .ko.zst) and guest-init.sh as /init. ib_uverbs: /dev/infiniband/uverbs0 for
# libibverbs. rdma_ucm: rdma_cm for programs like rping.
modules=(virtio_pci virtio_net 9pnet_virtio 9p overlay crc32_generic rdma_rxe ib_uverbs rdma_ucm)
# tls: kernel TLS (kTLS), which the host here lacks, for Braid's encrypted TCP (rdma_ktls), with
# what its AES-GCM needs: without them setting the keys fails (ENOENT) and OpenSSL keeps the
# record layer, since nothing here loads a crypto module on demand.
ktls=(ctr ghash_generic gcm tls)
"$modprobe" --show-depends -S "$kver" -a "${ktls[@]}" >/dev/null 2>&1 && modules+=("${ktls[@]}")
root=$work/initramfs
mkdir -p "$root/bin" "$root/lib/modules"
cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$here/guest-init.sh" "$root/init"
chmod 755 "$root/init"
declare -A seen=()
while read -r verb path _; do
  [[ $verb == insmod && -z ${seen[$path]:-} ]] || continue
  seen[$path]=1
  name=$(basename "$path")
  case $name in
    *.ko.xz) xz -dc "$path" >"$root/lib/modules/${name%.xz}"; name=${name%.xz} ;;
    *.ko.zst) zstd -qdc "$path" >"$root/lib/modules/${name%.zst}"; name=${name%.zst} ;;
    *.ko.gz) gzip -dc "$path" >"$root/lib/modules/${name%.gz}"; name=${name%.gz} ;;
    *) cp "$path" "$root/lib/modules/$name" ;;
  esac
  echo "$name" >>"$root/modules.order"
done < <("$modprobe" --show-depends -S "$kver" -a "${modules[@]}")
grep -q '^rdma_rxe\.ko$' "$root/modules.order" 2>/dev/null ||
  die "modprobe found no rdma_rxe for kernel $kver"
(cd "$root" && find . | cpio -o -H newc --quiet >"$work/initramfs.cpio") || die "cpio failed"

# The command, as a script guest-init.sh runs in the chroot under `env -i`.
keep='^(BRAID_.*|NCCL_.*|GTEST_.*|[A-Z]*SAN_OPTIONS|PATH|LD_LIBRARY_PATH|LD_PRELOAD|PYTHONPATH|HOME|LANG|LC_ALL|TZ|TMPDIR)$'
write_cmd() {  # write_cmd FILE INDEX ADDR PEER CMD...
  local file=$1 index=$2 addr=$3 peer=$4 name e
  shift 4
  {
    echo "# Written by tests/rdma/guest.sh: the command and its environment."
    for name in $(compgen -e); do
      [[ $name =~ $keep ]] && printf 'export %s=%q\n' "$name" "${!name}"
    done
    for e in "${extra_env[@]}"; do
      if [[ $e == *=* ]]; then printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"
      elif [[ -v $e ]]; then printf 'export %s=%q\n' "$e" "${!e}"
      fi
    done
    printf 'export HOME=%q\n' "${HOME:-/root}"
    printf 'export GUEST_INDEX=%d GUEST_COUNT=%d GUEST_ADDR=%s GUEST_PEER_ADDR=%s\n' \
      "$index" "$guests" "$addr" "$peer"
    printf 'cd %q || exit 125\n' "$PWD"
    printf 'exec'
    printf ' %q' "$@"
    echo
  } >"$file"
}

# Guest i's qemu. Its network: with one guest a hub port going nowhere (rxe only needs an
# Ethernet device with an address: it loops traffic to that address back itself); with two, a
# stream socket that guest 0 listens on and guest 1 connects to. A Unix socket where qemu has
# -netdev stream (7.2 and later): qemu's older TCP "socket" backend leaves Nagle's algorithm on,
# and rxe's multi-packet messages then wait for delayed ACKs (ibv_rc_pingpong: 50 ms a round
# trip instead of 5-10). UDP ("socket,udp=") has no such wait but may drop packets under load,
# which rxe's RC retransmission turns into stalls of the QP timeout.
prefix=10.77.0
qopt() { echo "${1//,/,,}"; }  # a path as a qemu option value: commas doubled
# A qemu outliving this script (killed by ctest's timeout, say) is killed with it.
pdeath=()
setpriv --help 2>/dev/null | grep -q pdeathsig && pdeath=(setpriv --pdeathsig KILL)
start_guest() {  # start_guest INDEX NETDEV
  local i=$1 g=$work/g$1
  "${pdeath[@]}" "$qemu" -accel tcg,thread=multi -M pc -cpu max -smp "$smp" -m "$mem" \
    -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$vmlinuz" -initrd "$work/initramfs.cpio" \
    -append "console=ttyS0 panic=1 oops=panic quiet mitigations=off tsc=reliable nowatchdog rdinit=/init" \
    -serial "file:$g/console.log" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$(qopt "$g/xfer"),mount_tag=xfer,security_model=none" \
    "${rw_args[@]}" \
    -netdev "$2" -device "virtio-net-pci,romfile=,netdev=net0,mac=52:54:00:77:00:0$((i + 1))" \
    </dev/null >"$g/qemu.log" 2>&1 &
  pids[i]=$!
}

# --rw directories: 9p tags rw0, rw1...; guest-init.sh mounts each listed in xfer/rw.list.
rw_args=()
for ((j = 0; j < ${#rw_dirs[@]}; j++)); do
  rw_args+=(-virtfs "local,path=$(qopt "${rw_dirs[j]}"),mount_tag=rw$j,security_model=none")
done
for ((i = 0; i < guests; i++)); do
  g=$work/g$i
  mkdir -p "$g/xfer"
  for ((j = 0; j < ${#rw_dirs[@]}; j++)); do echo "rw$j ${rw_dirs[j]}"; done >"$g/xfer/rw.list"
  : >"$g/xfer/out"
  : >"$g/xfer/err"
  addr=$prefix.$((i + 1))
  peer=$prefix.$(((guests - 1 - i) + 1))
  printf 'GUEST_INDEX=%d\nGUEST_COUNT=%d\nGUEST_ADDR=%s\nGUEST_PEER_ADDR=%s\nGUEST_PREFIX=%s\nXFER=%s\n' \
    "$i" "$guests" "$addr" "$peer" "$prefix" "$g/xfer" >"$g/xfer/guest.env"
  write_cmd "$g/xfer/cmd.sh" "$i" "$addr" "$peer" "$@"
done

if ((guests == 1)); then
  start_guest 0 hubport,id=net0,hubid=0
else
  # Guest 1 can connect once guest 0's qemu listens; a TCP port free now may be taken before
  # qemu binds it: then that qemu exits and another port is tried.
  sock=$work/net.sock
  listening=0
  for _ in 1 2 3 4 5; do
    if [[ ${#sock} -lt 100 ]] && "$qemu" -netdev help 2>/dev/null | grep -qx stream; then
      net0="stream,id=net0,server=on,addr.type=unix,addr.path=$(qopt "$sock")"
      net1="stream,id=net0,server=off,addr.type=unix,addr.path=$(qopt "$sock")"
      is_listening() { ss -Hxl | grep -qF " $sock "; }
    else
      port=$((20000 + RANDOM % 40000))
      ss -Htan "sport = :$port" | grep -q . && continue
      net0="socket,id=net0,listen=127.0.0.1:$port"
      net1="socket,id=net0,connect=127.0.0.1:$port"
      is_listening() { ss -Hltn "sport = :$port" | grep -q .; }
    fi
    rm -f "$sock"
    start_guest 0 "$net0"
    for ((n = 0; n < 100; n++)); do
      if is_listening; then listening=1; break; fi
      kill -0 "${pids[0]}" 2>/dev/null || break
      sleep 0.1
    done
    ((listening)) && break
    kill -KILL "${pids[0]}" 2>/dev/null || true
    wait "${pids[0]}" 2>/dev/null || true
  done
  ((listening)) || die "qemu for guest 0 did not listen: $(tail -n 3 "$work/g0/qemu.log")"
  start_guest 1 "$net1"
fi

# CMD's output, as it comes: each tail ends after qemu does, once it has read the file's end.
tails=()
for ((i = 0; i < guests; i++)); do
  g=$work/g$i
  if ((guests == 1)); then
    tail -n +1 -f --pid="${pids[i]}" "$g/xfer/out" &
    tails+=($!)
    tail -n +1 -f --pid="${pids[i]}" "$g/xfer/err" >&2 &
    tails+=($!)
  else
    tail -n +1 -f --pid="${pids[i]}" "$g/xfer/out" | sed -u "s/^/[$i] /" &
    tails+=($!)
    tail -n +1 -f --pid="${pids[i]}" "$g/xfer/err" | sed -u "s/^/[$i] /" >&2 &
    tails+=($!)
  fi
done

# Wait for every guest to power off, up to the deadline. A guest gone without an exit status
# (setup failed, panic, qemu error) takes the others down with it: they would wait for it.
deadline=$((SECONDS + timeout))
timed_out=()
while :; do
  running=0 broken=0
  for ((i = 0; i < guests; i++)); do
    if kill -0 "${pids[i]}" 2>/dev/null; then
      running=1
    elif [[ ! -s $work/g$i/xfer/rc ]]; then
      broken=1
    fi
  done
  ((running)) || break
  if ((broken)); then
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    break
  fi
  if ((SECONDS >= deadline)); then
    for ((i = 0; i < guests; i++)); do
      if kill -0 "${pids[i]}" 2>/dev/null; then
        timed_out+=("$i")
        kill -KILL "${pids[i]}" 2>/dev/null || true
      fi
    done
    break
  fi
  sleep 0.2
done
for ((i = 0; i < guests; i++)); do wait "${pids[i]}" 2>/dev/null || true; done
for p in "${tails[@]}"; do wait "$p" 2>/dev/null || true; done

console() {  # the end of guest $1's console and qemu's own messages, on stderr
  local g=$work/g$1
  echo "guest.sh: guest $1's console (last 40 lines):" >&2
  tail -n 40 "$g/console.log" >&2 2>/dev/null || true
  # (Without the warning of a lone guest's hub, which is meant to go nowhere.)
  if grep -qv 'is not connected to host network' "$g/qemu.log"; then
    echo "guest.sh: qemu for guest $1 said:" >&2
    grep -v 'is not connected to host network' "$g/qemu.log" >&2
  fi
  return 0
}

status=0 worst=0
for ((i = 0; i < guests; i++)); do
  g=$work/g$i
  ((verbose)) && { echo "guest.sh: guest $i's console:" >&2; cat "$g/console.log" >&2 || true; }
  if [[ " ${timed_out[*]} " == *" $i "* ]]; then
    echo "guest.sh: guest $i did not finish within ${timeout} s: killed" >&2
    console "$i"
    rc=124
  elif [[ -s $g/xfer/rc ]]; then
    rc=$(<"$g/xfer/rc")
  elif [[ -s $g/xfer/setup-error ]]; then
    echo "guest.sh: guest $i: setup failed: $(<"$g/xfer/setup-error")" >&2
    console "$i"
    rc=125
  else
    echo "guest.sh: guest $i stopped without reporting an exit status (killed with its peer, a panic or a qemu error)" >&2
    console "$i"
    rc=125
  fi
  # The worse status: a failure over a skip (77) over success; among failures, the first.
  rank=0
  ((rc == 0)) || rank=1
  ((rc != 0 && rc != 77)) && rank=2
  if ((rank > worst)); then worst=$rank status=$rc; fi
done
exit "$status"
