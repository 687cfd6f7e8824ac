#!/bin/sh
# /init of the guest's initramfs, run by busybox sh as PID 1 (tests/rdma/guest.sh builds the
# initramfs: busybox, the modules it names and their dependencies, in load order in
# /modules.order, and this script).
#
# It loads the modules, mounts the host's root (9p tag "hostroot", read-only) under a tmpfs
# overlay, brings up eth0 and Soft-RoCE device rxe0 on it, then runs the command guest.sh wrote
# (its xfer directory, 9p tag "xfer": guest.env, cmd.sh) chrooted into the host's root, appending
# its stdout and stderr to xfer/out and xfer/err and writing its exit status to xfer/rc; the
# host directories in xfer/rw.list are mounted writable at their own paths. A setup
# step that fails writes its reason to xfer/setup-error instead. Then it powers the guest off.
export PATH=/bin

say() { echo "guest-init: $*" >/dev/console; }
poweroff_now() {
  sync
  poweroff -f
  sleep 10  # poweroff -f does not return; this only keeps PID 1 from exiting (a panic) meanwhile
}
fail() {
  say "setup failed: $*"
  [ -d /xfer/. ] && [ -n "$XFER_MOUNTED" ] && echo "$*" >/xfer/setup-error
  poweroff_now
}

/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /xfer /lower /rw /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# crc32_generic comes before rdma_rxe in the list: rxe asks the crypto API for "crc32", which
# is a module in Debian's kernels, and nothing in this initramfs would load it on demand.
while read -r m; do
  insmod "/lib/modules/$m" || fail "insmod $m"
done </modules.order

# msize: 9p's default (8 KiB in 6.1) makes every read of a binary or library a round trip per
# 8 KiB. cache=loose on the read-only root: the host's files do not change under a test.
p9="trans=virtio,version=9p2000.L,msize=512000"
mount -t 9p -o "$p9" xfer /xfer || fail "mount 9p xfer"
XFER_MOUNTED=1
. /xfer/guest.env  # GUEST_INDEX, GUEST_COUNT, GUEST_ADDR, GUEST_PEER_ADDR, GUEST_PREFIX, XFER
mount -t 9p -o "$p9,ro,cache=loose" hostroot /lower || fail "mount 9p hostroot"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot ||
  fail "mount overlay"
# The host's /proc, /sys and /dev show through 9p as whatever the host has there: the guest's own
# are mounted over them. /dev/shm is where the shm transport puts its rings.
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mkdir -p "/newroot$XFER"
mount --bind /xfer "/newroot$XFER" || fail "bind xfer at $XFER"
while read -r tag dir; do
  mount -t 9p -o "$p9" "$tag" "/newroot$dir" || fail "mount 9p $tag at $dir (--rw)"
done </xfer/rw.list

hostname "guest$GUEST_INDEX"
echo "guest$GUEST_INDEX" >/newroot/etc/hostname
i=0
while [ "$i" -lt "$GUEST_COUNT" ]; do
  echo "$GUEST_PREFIX.$((i + 1)) guest$i" >>/newroot/etc/hosts
  i=$((i + 1))
done
ip link set lo up
ip addr add "$GUEST_ADDR/24" dev eth0 || fail "no eth0 (virtio_net)"
ip link set eth0 up

# rdma link add needs rdma (iproute2) from the host's root; GID index 1 is the RoCEv2 one of
# eth0's IPv4 address, so the address comes first.
chroot /newroot /bin/sh -c 'PATH=/usr/sbin:/usr/bin:/sbin:/bin exec rdma link add rxe0 type rxe netdev eth0' ||
  fail "rdma link add rxe0 type rxe netdev eth0"
state=/sys/class/infiniband/rxe0/ports/1/state
n=0
until grep -q ACTIVE "$state" 2>/dev/null; do
  n=$((n + 1))
  [ "$n" -gt 100 ] && fail "rxe0 port 1 not ACTIVE after 10 s: $(cat "$state" 2>&1)"
  sleep 0.1
done

# With two guests, the command starts once the peer answers: both ends of a test can then
# connect at once, whichever guest booted first.
if [ "$GUEST_COUNT" -gt 1 ]; then
  n=0
  until ping -c 1 -W 1 "$GUEST_PEER_ADDR" >/dev/null 2>&1; do
    n=$((n + 1))
    [ "$n" -gt 120 ] && fail "peer $GUEST_PEER_ADDR unreachable after 120 tries"
  done
fi

# Verbs programs register memory: no locked-memory limit, as on an RDMA cluster.
ulimit -l unlimited
chroot /newroot /usr/bin/env -i /bin/bash "$XFER/cmd.sh" >>/xfer/out 2>>/xfer/err </dev/null
echo "$?" >/xfer/rc
while read -r tag dir; do umount "/newroot$dir"; done </xfer/rw.list
umount "/newroot$XFER" 2>/dev/null
umount /xfer
poweroff_now
