#!/bin/bash
# guest/qemu/build.sh [CACHE_DIR]: build, once, Debian's QEMU with our
# vhost-user-rdma-pci device (patches/*.patch, in order) and print the
# directory that holds it:
#
#   bin/qemu-system-x86_64   share/qemu/ (the firmware it boots with)
#   BUILD-INFO               source version, patches, build time
#
# CACHE_DIR defaults to ${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}; the
# build is keyed by a hash of the patches, this script and the Debian source
# version (qemu-KEY/), and reused while it exists. It happens in a temporary
# directory renamed into place at the end, under a lock: an interrupted build
# never leaves a half one, two callers at once build it once.
#
# The source is Debian's (apt-get source: the .dsc with Debian's patches
# applied), from the mirror apt already uses on this machine: a deb-src entry
# is added for it (/etc/apt/sources.list.d/vrdmad-deb-src.sources, made from
# the URIs: of debian.sources) when apt has none. Only qemu-system-x86_64 is
# built, with the devices the tests use (~6 min on 2 cores with the source
# and configure). Building needs root (finding a cached build does not) and
# the Makefile's DEB_PACKAGES
# (meson, ninja-build, libglib2.0-dev, libpixman-1-dev, libfdt-dev,
# libcap-ng-dev, dpkg-dev, patch; qemu-system-x86 for the firmware).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${1:-${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}}
SRC_LIST=/etc/apt/sources.list.d/vrdmad-deb-src.sources
# virtfs (virtio-9p, with attr and cap-ng) for the test guests' host share.
# Only the devices the guests are given (configs/devices/.../vrdma.mak, from
# DEVICES): a fifth fewer files to compile than QEMU's default set; and no
# -g (still -O2): a tenth less compiling, on the check's critical path on a
# fresh machine (tests/warm-caches.sh).
CONFIGURE=(--target-list=x86_64-softmmu --without-default-features --enable-vhost-user
	--enable-tcg --enable-fdt=system --disable-docs --disable-install-blobs
	--enable-virtfs --enable-attr --enable-cap-ng
	--without-default-devices --with-devices-x86_64=vrdma --disable-debug-info)
# The boards (q35 for our guest, pc for the Soft-RoCE guest beside it, with
# what they select: ICH9 or PIIX, the serial port), the test guests' virtio
# devices, and intel-iommu for hostile.sh's check that the driver refuses a
# translating IOMMU.
DEVICES=(Q35 I440FX VIRTIO_PCI VIRTIO_NET VIRTIO_BLK VIRTIO_RNG VIRTIO_9P VTD VHOST_USER_RDMA)
# What QEMU loads to boot a guest with -kernel on pc or q35, with the virtio
# NICs' option ROMs: taken from Debian's qemu-system-data, ipxe-qemu and
# seabios (the same QEMU release), since the dfsg source has no blobs.
FIRMWARE=(bios-256k.bin bios.bin linuxboot_dma.bin linuxboot.bin multiboot_dma.bin
	kvmvapic.bin pvh.bin efi-virtio.rom efi-e1000.rom efi-e1000e.rom vgabios-stdvga.bin
	vgabios.bin)
FIRMWARE_DIRS=(/usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu)	# Debian's firmware path

say() { echo "qemu-build: $*" >&2; }
die() { say "$*"; exit 1; }

for c in meson ninja dpkg-source patch sha256sum flock; do
	command -v "$c" > /dev/null 2>&1 || die "missing $c: sudo make deps"
done
mapfile -t PATCHES < <(find "$HERE/patches" -name '*.patch' | sort)
[ ${#PATCHES[@]} -gt 0 ] || die "no patches in $HERE/patches"

# The source version apt would fetch; a deb-src entry for this machine's
# mirror first if apt has none.
src_version() {
	local v best=
	for v in $(apt-cache showsrc qemu 2>/dev/null | sed -n 's/^Version: //p'); do
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
	done
	echo "$best"
}
VERSION=$(src_version)
if [ -z "$VERSION" ]; then
	[ "$(id -u)" = 0 ] || die "apt has no deb-src entry for qemu; run as root to add one"
	[ -f /etc/apt/sources.list.d/debian.sources ] ||
		die "no /etc/apt/sources.list.d/debian.sources to take the mirror from: add a deb-src line for qemu"
	say "adding deb-src entries for this machine's mirror ($SRC_LIST)"
	sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > "$SRC_LIST.tmp"
	mv "$SRC_LIST.tmp" "$SRC_LIST"
	apt-get update -qq
	VERSION=$(src_version)
	[ -n "$VERSION" ] || die "apt knows no source package qemu"
fi

KEY=$( { cat "${PATCHES[@]}" "$HERE/build.sh"; echo "$VERSION"; } | sha256sum | cut -c1-16)
OUT=$CACHE/qemu-$KEY
done_already() { [ -x "$OUT/bin/qemu-system-x86_64" ] && [ -f "$OUT/BUILD-INFO" ]; }
if done_already; then
	touch "$OUT" 2> /dev/null || true	# its age says when it was last used
	echo "$OUT"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "$OUT is not built yet: run as root (sudo make qemu)"
mkdir -p "$CACHE"
exec 8> "$CACHE/.qemu.lock"
flock -n 8 || { say "another build is running; waiting for it"; flock 8; }
if done_already; then
	echo "$OUT"
	exit 0
fi

# Holding the lock, a build directory left is an interrupted build's.
rm -rf "$CACHE"/.qemu-build.*
WORK=$(mktemp -d "$CACHE/.qemu-build.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM	# stopped (tests/warm-caches.sh): the EXIT trap too

t0=$SECONDS
say "QEMU $VERSION from Debian's source, with ${#PATCHES[@]} patches, into $OUT"
(cd "$WORK" && apt-get source -q --only-source "qemu=$VERSION" > "$WORK/source.log" 2>&1) ||
	{ tail -n 20 "$WORK/source.log" >&2; die "apt-get source qemu=$VERSION failed"; }
SRC=$(find "$WORK" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -n 1)
[ -n "$SRC" ] || die "apt-get source left no qemu-* directory"
for p in "${PATCHES[@]}"; do
	say "applying ${p##*/}"
	patch -d "$SRC" -p1 -s --no-backup-if-mismatch < "$p" || die "${p##*/} does not apply to $VERSION"
done

for d in "${DEVICES[@]}"; do echo "CONFIG_$d=y"; done > "$SRC/configs/devices/x86_64-softmmu/vrdma.mak"
mkdir -p "$WORK/build"
(cd "$WORK/build" && "$SRC/configure" "${CONFIGURE[@]}" > "$WORK/configure.log" 2>&1) ||
	{ tail -n 30 "$WORK/configure.log" >&2; die "configure failed"; }
say "compiling qemu-system-x86_64 (~5 min on 2 cores)"
ninja -C "$WORK/build" -j "$(nproc)" qemu-system-x86_64 > "$WORK/ninja.log" 2>&1 ||
	{ grep -B2 -A12 -m3 'error' "$WORK/ninja.log" >&2 || tail -n 40 "$WORK/ninja.log" >&2; die "compile failed"; }

STAGE=$WORK/out
mkdir -p "$STAGE/bin" "$STAGE/share/qemu"
install -m 0755 "$WORK/build/qemu-system-x86_64" "$STAGE/bin/"
for f in "${FIRMWARE[@]}"; do
	for d in "${FIRMWARE_DIRS[@]}"; do
		[ -e "$d/$f" ] || continue
		cp -L "$d/$f" "$STAGE/share/qemu/"
		break
	done
done
[ -f "$STAGE/share/qemu/bios-256k.bin" ] || die "no bios-256k.bin in ${FIRMWARE_DIRS[*]}: apt-get install qemu-system-x86"
"$STAGE/bin/qemu-system-x86_64" -device help 2>&1 | grep -q '"vhost-user-rdma-pci"' ||
	die "the binary has no vhost-user-rdma-pci"
secs=$((SECONDS - t0))
{
	echo "source=qemu $VERSION (Debian, apt-get source)"
	for p in "${PATCHES[@]}"; do echo "patch=${p##*/}"; done
	echo "configure=${CONFIGURE[*]}"
	echo "devices=${DEVICES[*]}"
	echo "build_seconds=$secs"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores"
} > "$STAGE/BUILD-INFO"
rm -rf "$OUT"
mv "$STAGE" "$OUT"
say "built in $secs s: $OUT"
echo "$OUT"
