#!/bin/bash
# guest-image.sh [CACHE_DIR]: build, once, the Debian bookworm guest that the
# interop tests boot (Linux Soft-RoCE, rdma-core, perftest), and print the
# directory that holds it:
#
#   vmlinuz  vmlinux (same kernel, uncompressed)  initrd.img  rootfs.ext4
#   packages.txt (dpkg -l of the guest)  kernel-version
#
# CACHE_DIR defaults to ${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}. The image
# is keyed by a hash of this script and guest-init.sh, so changing either
# builds a new one. The build happens in a temporary directory inside the cache
# that is renamed into place at the end, under a lock: an interrupted build
# never leaves a half image, and two tests asking at once build it once.
# Takes ~2.5 min and ~1 GB of temporary space; the result is ~0.5 GB.
#
# Needs root and the packages debootstrap, e2fsprogs, busybox-static.
# Packages come from the Debian mirror that apt on this machine already uses.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${1:-${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}}
SUITE=bookworm
GUEST_PKGS=(linux-image-amd64 rdma-core ibverbs-utils ibverbs-providers perftest
	rdmacm-utils iproute2 kmod iputils-ping procps xz-utils)
# Modules the initrd loads to reach the root fs (deps are added).
INITRD_MODS=(virtio_pci virtio_blk ext4 crc32c_generic)
# Kernel module trees the tests never need (saves ~250 MB of image).
DROP_MODS=(drivers/gpu drivers/media drivers/staging drivers/net/wireless
	drivers/bluetooth drivers/iio drivers/infiniband/hw drivers/input/touchscreen
	drivers/scsi/lpfc drivers/scsi/qla2xxx drivers/net/ethernet/mellanox
	drivers/net/ethernet/intel drivers/net/ethernet/broadcom sound net/wireless
	net/mac80211 net/bluetooth fs/ocfs2 fs/xfs fs/btrfs fs/gfs2 fs/nfs fs/nfsd)

say() { echo "guest-image: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
need() { command -v "$1" > /dev/null 2>&1 || die "missing $1: apt-get install $2"; }
need debootstrap debootstrap
need mke2fs e2fsprogs
need busybox busybox-static
need flock util-linux
case $(busybox cpio --help 2>&1) in *"-o"*) ;; *) die "busybox has no 'cpio -o': apt-get install busybox-static" ;; esac

KEY=$(cat "$HERE/guest-image.sh" "$HERE/guest-init.sh" | sha256sum | cut -c1-16)
NAME=debian-$SUITE-rxe-$KEY
OUT=$CACHE/$NAME

done_already() {
	[ -f "$OUT/rootfs.ext4" ] && [ -f "$OUT/vmlinuz" ] && [ -f "$OUT/initrd.img" ]
}
if done_already; then
	touch "$OUT"
	echo "$OUT"
	exit 0
fi

mkdir -p "$CACHE"
exec 8> "$CACHE/.lock"
flock -n 8 || { say "another build is running; waiting for it"; flock 8; }
if done_already; then
	echo "$OUT"
	exit 0
fi
# Holding the lock, any build directory left is from an interrupted build.
rm -rf "$CACHE"/.build-*

. "$HERE/../debian-mirror.sh"
MIRROR=${VRDMA_GUEST_MIRROR:-$(debian_mirror)}
[ -n "$MIRROR" ] || die "no Debian mirror found in /etc/apt/sources.list*; set VRDMA_GUEST_MIRROR"

T0=$SECONDS
B=$(mktemp -d "$CACHE/.build-$KEY.XXXXXX")
R=$B/root
CHILD=
# bg CMD...: run CMD in its own process group and wait, so that a signal to
# this script stops it at once and cleanup can end the whole group.
bg() {
	local rc=0
	setsid "$@" &
	CHILD=$!
	wait "$CHILD" || rc=$?
	CHILD=
	return "$rc"
}
cleanup() {
	if [ -n "$CHILD" ]; then
		kill -TERM -- "-$CHILD" 2>/dev/null || true
		wait "$CHILD" 2>/dev/null || true
	fi
	[ -n "${B:-}" ] || return 0
	# debootstrap and we mount proc (and maybe more) in the tree: unmount
	# whatever is under it, deepest first, and never delete across a mount.
	awk -v b="$B/" 'index($2, b) == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r m; do umount -l "$m" 2>/dev/null || true; done
	rm -rf --one-file-system "$B"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'say "failed (line $LINENO: $BASH_COMMAND)"' ERR

say "debootstrap $SUITE from $MIRROR into $B"
bg debootstrap --variant=minbase "$SUITE" "$R" "$MIRROR" > "$B/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$B/debootstrap.log" >&2; die "debootstrap failed"; }

# No services start in the chroot; no initramfs-tools run (we make our own
# initrd): divert update-initramfs before initramfs-tools is installed.
printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d"
chmod 755 "$R/usr/sbin/policy-rc.d"
chroot "$R" dpkg-divert --local --rename --add /usr/sbin/update-initramfs > /dev/null
printf '#!/bin/sh\nexit 0\n' > "$R/usr/sbin/update-initramfs"
chmod 755 "$R/usr/sbin/update-initramfs"
printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\npath-exclude /usr/share/info/*\n' \
	> "$R/etc/dpkg/dpkg.cfg.d/01-vrdma-nodoc"
mount -t proc proc "$R/proc"

say "installing ${GUEST_PKGS[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! { bg chroot "$R" apt-get -q update &&
	bg chroot "$R" apt-get -q -y --no-install-recommends install "${GUEST_PKGS[@]}"; } > "$B/apt.log" 2>&1; then
	tail -n 30 "$B/apt.log" >&2
	die "apt-get install in the guest failed"
fi
# shellcheck disable=SC2016
chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' > "$B/packages.txt"
umount "$R/proc"

KVER=$(cd "$R/lib/modules" && ls | sort -V | tail -n 1)
[ -f "$R/boot/vmlinuz-$KVER" ] || die "no kernel installed in the guest"
echo "$KVER" > "$B/kernel-version"
cp "$R/boot/vmlinuz-$KVER" "$B/vmlinuz"
# Also the uncompressed ELF kernel: QEMU boots it through its PVH entry point,
# which skips ~6 s of decompression under TCG. Optional (guest.sh falls back).
if grep -qx 'CONFIG_PVH=y' "$R/boot/config-$KVER" 2>/dev/null; then
	off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$B/vmlinuz" | head -n 1 | cut -d: -f1) || true
	if [ -n "$off" ]; then
		tail -c +$((off + 1)) "$B/vmlinuz" | chroot "$R" xz -dc > "$B/vmlinux" 2>/dev/null || true
		if [ "$(head -c 4 "$B/vmlinux" | od -An -tx1 | tr -d ' ')" != 7f454c46 ]; then
			rm -f "$B/vmlinux"
			say "could not extract an ELF kernel; the guest boots the bzImage (slower)"
		fi
	fi
fi

# Slim the tree.
for d in "${DROP_MODS[@]}"; do rm -rf "${R:?}/lib/modules/$KVER/kernel/$d"; done
chroot "$R" depmod "$KVER"
rm -rf "$R"/var/cache/apt/*.bin "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/* \
	"$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/locale/* "$R"/boot/initrd.img* \
	"$R"/var/log/*.log

# The guest's own init and a few files.
install -m 755 "$HERE/guest-init.sh" "$R/sbin/vrdma-init"
echo vrdma-guest > "$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tvrdma-guest\n' > "$R/etc/hosts"
printf '/dev/vda / ext4 rw 0 1\n' > "$R/etc/fstab"

# A small initrd: static busybox, the modules to reach /dev/vda, an /init
# that mounts it and switches to /sbin/vrdma-init.
say "making the initrd"
I=$B/initrd
mkdir -p "$I"/{bin,dev,proc,sys,newroot,lib/modules}
cp "$(command -v busybox)" "$I/bin/busybox"
: > "$I/modules.order"
while read -r kind path _; do
	[ "$kind" = insmod ] || continue
	path=${path#"$R"}
	f=${path##*/}
	case $f in
	*.ko.xz) chroot "$R" xz -dc < "$R$path" > "$I/lib/modules/${f%.xz}"; f=${f%.xz} ;;
	*.ko.zst) zstd -qdc "$R$path" > "$I/lib/modules/${f%.zst}"; f=${f%.zst} ;;
	*) cp "$R$path" "$I/lib/modules/$f" ;;
	esac
	grep -qx "$f" "$I/modules.order" || echo "$f" >> "$I/modules.order"
done < <(for m in "${INITRD_MODS[@]}"; do chroot "$R" modprobe -S "$KVER" --show-depends "$m" 2>/dev/null || true; done)
grep -q '^virtio_blk' "$I/modules.order" || die "virtio_blk module not found for $KVER"
cat > "$I/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules.order); do insmod /lib/modules/$m 2>/dev/null; done
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if ! mount -t ext4 -o rw /dev/vda /newroot; then
	echo "initrd: cannot mount /dev/vda"; cat /proc/partitions
	echo o > /proc/sysrq-trigger
fi
umount /proc /sys /dev
exec switch_root /newroot /sbin/vrdma-init
EOF
chmod 755 "$I/init"
(cd "$I" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 > "$B/initrd.img"
rm -rf "$I"

say "making the ext4 image"
MB=$(du -sm "$R" | cut -f1)
bg mke2fs -q -t ext4 -L vrdma-guest -m 0 -E root_owner=0:0 -d "$R" "$B/rootfs.ext4" "$((MB + MB / 4 + 256))M" >&2
rm -rf "$R"

rm -f "$B"/*.log
chmod 755 "$B"
mv -T "$B" "$OUT"
B=
say "built $OUT in $((SECONDS - T0)) s"

# Images of other versions of these scripts unused for 14 days go.
find "$CACHE" -maxdepth 1 -name "debian-$SUITE-rxe-*" ! -name "$NAME" -mtime +14 -exec rm -rf {} + 2>/dev/null || true
echo "$OUT"
