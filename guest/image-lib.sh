# shellcheck shell=bash
# image-lib.sh: what the guest image scripts share (sourced by
# tests/interop/guest-image.sh, guest/build-root.sh and guest/image.sh).
# The caller sets IMG_TAG (its name in messages) and CACHE, and runs with
# `set -euo pipefail`. A change here changes every image's cache key.
#
#   img_require               root, debootstrap, mke2fs, busybox cpio, flock
#   img_cached OUT FILE...    if OUT has every FILE: print OUT and exit 0; else
#                             img_require, take the lock (img_lock), look again
#   img_lock                  take $CACHE/.lock (waits for another build); drop
#                             the build directories an interrupted build left
#   img_mirror                set MIRROR (VRDMA_GUEST_MIRROR, else apt's own)
#   img_begin KEY [DIR]       B=a new build directory under DIR (default $CACHE),
#                             removed on exit with whatever is mounted below it
#   img_step NAME             say how long the step since the last one took, and
#                             record it in IMG_STEPS (seconds_NAME=N lines)
#   img_debootstrap SUITE R   debootstrap --variant=minbase into R, quiet apt, /proc mounted
#   img_install R PKGS...     apt-get install into R (no recommends)
#   img_kernel R              KVER; vmlinuz, vmlinux, kernel-version into $B
#   img_slim R                drop module trees the tests never need, apt caches
#   img_guest_files R INIT    INIT as /sbin/vrdma-init, hostname, hosts, fstab
#   img_initrd R              $B/initrd.img (busybox, modules to reach /dev/vda)
#   img_ext4 R                $B/rootfs.ext4 from R
#   img_publish OUT           rename $B into place as OUT
#   img_prune PATTERN KEEP    remove unused (14 days) cache entries PATTERN but KEEP
#   bg CMD...                 run CMD in its own process group, so cleanup ends it

say() { echo "$IMG_TAG: $*" >&2; }
die() { say "$*"; exit 1; }

# Modules the initrd loads to reach the root fs (deps are added).
IMG_INITRD_MODS=(virtio_pci virtio_blk ext4 crc32c_generic)
# Kernel module trees the tests never need (saves ~250 MB of image).
IMG_DROP_MODS=(drivers/gpu drivers/media drivers/staging drivers/net/wireless
	drivers/bluetooth drivers/iio drivers/infiniband/hw drivers/input/touchscreen
	drivers/scsi/lpfc drivers/scsi/qla2xxx drivers/net/ethernet/mellanox
	drivers/net/ethernet/intel drivers/net/ethernet/broadcom sound net/wireless
	net/mac80211 net/bluetooth fs/ocfs2 fs/xfs fs/btrfs fs/gfs2 fs/nfs fs/nfsd)

img_require() {
	[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
	_img_need debootstrap debootstrap
	_img_need mke2fs e2fsprogs
	_img_need busybox busybox-static
	_img_need flock util-linux
	case $(busybox cpio --help 2>&1) in *"-o"*) ;; *) die "busybox has no 'cpio -o': apt-get install busybox-static" ;; esac
}
_img_need() { command -v "$1" > /dev/null 2>&1 || die "missing $1: apt-get install $2"; }

# _img_unmount_under DIR: unmount whatever is mounted below DIR, deepest first.
_img_unmount_under() {
	awk -v b="$1/" 'index($2, b) == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

img_cached() {
	local out=$1
	shift
	if _img_has "$out" "$@"; then
		touch "$out" 2>/dev/null || true	# its age says when it was last used
		echo "$out"
		exit 0
	fi
	img_require
	img_lock
	if _img_has "$out" "$@"; then
		echo "$out"
		exit 0
	fi
}
_img_has() {
	local out=$1 f
	shift
	for f; do [ -e "$out/$f" ] || return 1; done
}

img_lock() {
	local d
	mkdir -p "$CACHE"
	exec 8> "$CACHE/.lock"
	flock -n 8 || { say "another build is running; waiting for it"; flock 8; }
	# Holding the lock, any build directory left is from an interrupted build
	# (maybe killed with its mounts: never delete across one).
	for d in "$CACHE"/.build-*; do
		[ -e "$d" ] || continue
		_img_unmount_under "$d"
		rm -rf --one-file-system "$d"
	done
}

img_mirror() {
	# shellcheck source=tests/debian-mirror.sh
	. "$IMG_LIB_DIR/../tests/debian-mirror.sh"
	MIRROR=${VRDMA_GUEST_MIRROR:-$(debian_mirror)}
	[ -n "$MIRROR" ] || die "no Debian mirror found in /etc/apt/sources.list*; set VRDMA_GUEST_MIRROR"
}

CHILD=
B=
bg() {
	local rc=0
	setsid "$@" &
	CHILD=$!
	wait "$CHILD" || rc=$?
	CHILD=
	return "$rc"
}
_img_cleanup() {
	if [ -n "$CHILD" ]; then
		kill -TERM -- "-$CHILD" 2>/dev/null || true
		wait "$CHILD" 2>/dev/null || true
	fi
	[ -n "${B:-}" ] || return 0
	_img_unmount_under "$B"
	rm -rf --one-file-system "$B"
}

img_begin() {
	B=$(mktemp -d "${2:-$CACHE}/.build-$1.XXXXXX")
	trap _img_cleanup EXIT
	trap 'exit 130' INT TERM
	trap 'say "failed (line $LINENO: $BASH_COMMAND)"' ERR
}

IMG_STEPS=()
IMG_TS=$SECONDS
img_step() {
	IMG_STEPS+=("seconds_$1=$((SECONDS - IMG_TS))")
	say "$1: $((SECONDS - IMG_TS)) s"
	IMG_TS=$SECONDS
}

img_debootstrap() {
	local suite=$1 r=$2
	say "debootstrap $suite from $MIRROR into $r"
	bg debootstrap --variant=minbase "$suite" "$r" "$MIRROR" > "$B/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$B/debootstrap.log" >&2; die "debootstrap failed"; }
	# No services start in the chroot; no initramfs-tools run (we make our own
	# initrd): divert update-initramfs before initramfs-tools is installed.
	printf '#!/bin/sh\nexit 101\n' > "$r/usr/sbin/policy-rc.d"
	chmod 755 "$r/usr/sbin/policy-rc.d"
	chroot "$r" dpkg-divert --local --rename --add /usr/sbin/update-initramfs > /dev/null
	printf '#!/bin/sh\nexit 0\n' > "$r/usr/sbin/update-initramfs"
	chmod 755 "$r/usr/sbin/update-initramfs"
	printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\npath-exclude /usr/share/info/*\n' \
		> "$r/etc/dpkg/dpkg.cfg.d/01-vrdma-nodoc"
	mount -t proc proc "$r/proc"
	export DEBIAN_FRONTEND=noninteractive
	bg chroot "$r" apt-get -q update > "$B/apt.log" 2>&1 ||
		{ tail -n 30 "$B/apt.log" >&2; die "apt-get update in the guest failed"; }
}

img_install() {
	local r=$1
	shift
	say "installing $*"
	bg chroot "$r" apt-get -q -y --no-install-recommends install "$@" > "$B/apt.log" 2>&1 ||
		{ tail -n 30 "$B/apt.log" >&2; die "apt-get install in the guest failed"; }
}

img_kernel() {
	local r=$1 off magic unpack
	KVER=$(find "$r/lib/modules/" -mindepth 1 -maxdepth 1 -printf "%f\n" | sort -V | tail -n 1)
	[ -f "$r/boot/vmlinuz-$KVER" ] || die "no kernel installed in the guest"
	echo "$KVER" > "$B/kernel-version"
	cp "$r/boot/vmlinuz-$KVER" "$B/vmlinuz"
	# Also the uncompressed ELF kernel: QEMU boots it through its PVH entry
	# point, which skips ~6 s of decompression under TCG. Optional (guest.sh
	# falls back). bookworm's kernel is xz-compressed, trixie's zstd (the
	# caller installs zstd in the tree).
	grep -qx 'CONFIG_PVH=y' "$r/boot/config-$KVER" 2>/dev/null || return 0
	if grep -qx 'CONFIG_KERNEL_XZ=y' "$r/boot/config-$KVER"; then
		magic='\xfd7zXZ\x00' unpack=(xz -dc)
	elif grep -qx 'CONFIG_KERNEL_ZSTD=y' "$r/boot/config-$KVER"; then
		magic='\x28\xb5\x2f\xfd' unpack=(zstd -qdc)
	else
		say "the kernel is neither xz- nor zstd-compressed; the guest boots the bzImage (slower)"
		return 0
	fi
	off=$(LC_ALL=C grep -obUaP "$magic" "$B/vmlinuz" | head -n 1 | cut -d: -f1) || true
	[ -n "$off" ] || return 0
	# (zstd complains about what follows the payload, after writing it all)
	tail -c +$((off + 1)) "$B/vmlinuz" | chroot "$r" "${unpack[@]}" > "$B/vmlinux" 2>/dev/null || true
	if [ "$(head -c 4 "$B/vmlinux" | od -An -tx1 | tr -d ' ')" != 7f454c46 ]; then
		rm -f "$B/vmlinux"
		say "could not extract an ELF kernel; the guest boots the bzImage (slower)"
	fi
}

img_slim() {
	local r=$1 d
	for d in "${IMG_DROP_MODS[@]}"; do rm -rf "${r:?}/lib/modules/$KVER/kernel/$d"; done
	chroot "$r" depmod "$KVER"
	rm -rf "$r"/var/cache/apt/*.bin "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* \
		"$r"/usr/share/doc/* "$r"/usr/share/man/* "$r"/usr/share/locale/* "$r"/boot/initrd.img* \
		"$r"/var/log/*.log
}

img_guest_files() {
	local r=$1 init=$2
	install -m 755 "$init" "$r/sbin/vrdma-init"
	echo vrdma-guest > "$r/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tvrdma-guest\n' > "$r/etc/hosts"
	printf '/dev/vda / ext4 rw 0 1\n' > "$r/etc/fstab"
}

# A small initrd: static busybox, the modules to reach /dev/vda, an /init
# that mounts it and switches to /sbin/vrdma-init.
img_initrd() {
	local r=$1 i=$B/initrd kind path f
	say "making the initrd"
	mkdir -p "$i"/{bin,dev,proc,sys,newroot,lib/modules}
	cp "$(command -v busybox)" "$i/bin/busybox"
	: > "$i/modules.order"
	while read -r kind path _; do
		[ "$kind" = insmod ] || continue
		path=${path#"$r"}
		f=${path##*/}
		case $f in
		*.ko.xz) chroot "$r" xz -dc < "$r$path" > "$i/lib/modules/${f%.xz}"; f=${f%.xz} ;;
		*.ko.zst) zstd -qdc "$r$path" > "$i/lib/modules/${f%.zst}"; f=${f%.zst} ;;
		*) cp "$r$path" "$i/lib/modules/$f" ;;
		esac
		grep -qx "$f" "$i/modules.order" || echo "$f" >> "$i/modules.order"
	done < <(for m in "${IMG_INITRD_MODS[@]}"; do chroot "$r" modprobe -S "$KVER" --show-depends "$m" 2>/dev/null || true; done)
	grep -q '^virtio_blk' "$i/modules.order" || die "virtio_blk module not found for $KVER"
	cat > "$i/init" <<'EOF'
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
	chmod 755 "$i/init"
	(cd "$i" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 > "$B/initrd.img"
	rm -rf "$i"
}

img_ext4() {
	local r=$1 mb
	say "making the ext4 image"
	mb=$(du -sm "$r" | cut -f1)
	bg mke2fs -q -t ext4 -L vrdma-guest -m 0 -E root_owner=0:0 -d "$r" "$B/rootfs.ext4" "$((mb + mb / 4 + 256))M" >&2
}

img_publish() {
	rm -f "$B"/*.log
	chmod 755 "$B"
	mv -T "$B" "$1"
	B=
}

img_prune() {
	find "$CACHE" -maxdepth 1 -name "$1" ! -name "$2" -mtime +14 \
		-exec rm -rf --one-file-system {} + 2>/dev/null || true
}

IMG_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
