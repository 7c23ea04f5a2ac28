#!/bin/bash
# guest/image.sh [CACHE_DIR]: build, once, the Debian 13 (trixie) guest with
# vrdmad's guest side — virtio_rdma.ko (guest/kernel) and the vrdma
# rdma-core provider (guest/rdma-core) — and print the directory that holds
# it, laid out as tests/interop/guest-image.sh's (guest.sh boots either):
#
#   vmlinuz  vmlinux (same kernel, uncompressed)  initrd.img  rootfs.ext4
#   packages.txt (dpkg -l of the guest)  kernel-version  BUILD-INFO
#
# guest/image.sh --build-only OUTDIR [module|provider]: build the module
# and the provider (or one of them) against the cached build root and copy
# them, with the build logs, into OUTDIR; no image. For working on either:
# a module build takes seconds.
#
# Two cache levels in CACHE_DIR (${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}):
#   debian-trixie-root-KEY   guest/build-root.sh: the guest's packages, build
#                            tools, kernel headers and Debian's rdma-core
#                            source; keyed by build-root.sh and image-lib.sh
#   debian-trixie-vrdma-KEY  this image: keyed by the build root's key, this
#                            script, guest/kernel, guest/rdma-core, include/,
#                            guest/build-in-root.sh and the guest init
# so changing the driver or the provider rebuilds only the second. The
# builds run on an overlay of the build root, which stays as it was; the
# image is that overlay with the module and provider installed and the
# build tools and sources removed. When guest/kernel has no Kbuild yet the
# image has no module; when it does and the build fails, so does this.
#
# Needs root, and what guest/build-root.sh needs.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
PARTS=(module provider)
BUILD_ONLY=
if [ "${1:-}" = --build-only ]; then
	BUILD_ONLY=${2:?usage: image.sh --build-only OUTDIR [module|provider]}
	[ -z "${3:-}" ] || PARTS=("$3")
	CACHE=${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}
else
	CACHE=${1:-${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}}
fi
IMG_TAG=image
# shellcheck source=guest/image-lib.sh
. "$HERE/image-lib.sh"
[ "$(id -u)" = 0 ] || die "needs root (chroot, overlay mount)"

T0=$SECONDS
ROOT=$("$HERE/build-root.sh" "$CACHE") || die "guest/build-root.sh failed"
KVER=$(cat "$ROOT/kernel-version")
TREE=$(cat "$ROOT/rdma-core")
say "build root $ROOT/root (kernel $KVER, rdma-core $TREE)"

# What the builds read, as one reproducible tar stream: copied into the
# chroot as /src/..., and hashed for the image's key. kbuild's outputs (a
# developer may build in guest/kernel) are left out.
SOURCES=(guest/build-in-root.sh guest/rdma-core include tests/interop/guest-init.sh)
HAVE_MODULE=
if [ -f "$REPO/guest/kernel/Kbuild" ] || [ -f "$REPO/guest/kernel/Makefile" ]; then
	HAVE_MODULE=1
	SOURCES+=(guest/kernel)
fi
sources_tar() {
	tar -C "$REPO" -c --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
		--exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
		--exclude='.*.cmd' --exclude='*.order' --exclude=Module.symvers \
		--exclude='.*.d' --exclude=.tmp_versions "${SOURCES[@]}"
}

# mount_work: the build root under an overlay at $B/root, sources in /src.
mount_work() {
	mkdir -p "$B/upper" "$B/work" "$B/root"
	mount -t overlay overlay -o "lowerdir=$ROOT/root,upperdir=$B/upper,workdir=$B/work" "$B/root"
	mount -t proc proc "$B/root/proc"
	sources_tar | tar -C "$B/root/src" -x
}

# build PART [--install]: build (and install) the module or the provider in
# the chroot, into its /out; the log is $B/PART.log.
build() {
	local part=$1 what
	case $part in
	module) what="the kernel module (guest/kernel) against linux-headers-$KVER" ;;
	provider) what="the rdma-core provider (guest/rdma-core) in $TREE" ;;
	*) die "what is '$part'? (module or provider)" ;;
	esac
	if [ "$part" = module ] && [ -z "$HAVE_MODULE" ]; then
		[ -n "$BUILD_ONLY" ] && [ ${#PARTS[@]} = 1 ] && die "no guest/kernel/Kbuild or Makefile: no module to build"
		say "no guest/kernel/Kbuild or Makefile yet: no virtio_rdma.ko"
		return 0
	fi
	say "building $what"
	if ! bg chroot "$B/root" /src/guest/build-in-root.sh "$part" "$KVER" "$TREE" /out "${@:2}" \
		> "$B/$part.log" 2>&1; then
		tail -n 40 "$B/$part.log" | sed 's/^/  | /' >&2
		[ -z "$BUILD_ONLY" ] || cp "$B/$part.log" "$BUILD_ONLY/"
		die "$what FAILED (log above; build root $ROOT/root)"
	fi
	img_step "$part"
}

if [ -n "$BUILD_ONLY" ]; then
	mkdir -p "$BUILD_ONLY"
	BUILD_ONLY=$(cd "$BUILD_ONLY" && pwd)
	img_begin only "${TMPDIR:-/tmp}"
	mount_work
	IMG_TS=$SECONDS
	for p in "${PARTS[@]}"; do build "$p"; done
	cp -r "$B/root/out/." "$B"/*.log "$BUILD_ONLY/" 2>/dev/null || true
	say "built in $((SECONDS - T0)) s into $BUILD_ONLY: $(cd "$BUILD_ONLY" && echo *)"
	exit 0
fi

KEY=$({ echo "${ROOT##*/}"; cat "$HERE/image.sh"; sources_tar; } | sha256sum | cut -c1-16)
NAME=debian-trixie-vrdma-$KEY
OUT=$CACHE/$NAME
img_cached "$OUT" BUILD-INFO rootfs.ext4

img_begin "$KEY"
mount_work
IMG_TS=$SECONDS
R=$B/root
for p in "${PARTS[@]}"; do build "$p" --install; done
img_guest_files "$R" "$REPO/tests/interop/guest-init.sh"
# The image keeps the guest's packages only: the build tools were marked
# auto-installed in the build root, and what they recommend or suggest
# must not keep them.
bg chroot "$R" apt-get -q -y -o APT::AutoRemove::RecommendsImportant=false \
	-o APT::AutoRemove::SuggestsImportant=false autoremove --purge > "$B/autoremove.log" 2>&1 ||
	{ tail -n 20 "$B/autoremove.log" >&2; die "apt-get autoremove in the image failed"; }
rm -rf "${R:?}/src" "$R/out" "$R"/var/log/*.log "$R"/var/cache/apt/*.bin
# shellcheck disable=SC2016
chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' > "$B/packages.txt"
umount "$R/proc"
img_step install
img_ext4 "$R"
umount "$R"
rm -rf "$B/upper" "$B/work" "$R"
img_step ext4
cp "$ROOT"/{vmlinuz,initrd.img,kernel-version} "$B/"
[ ! -f "$ROOT/vmlinux" ] || cp "$ROOT/vmlinux" "$B/"
{
	echo "build_root=$ROOT"
	echo "kernel=$KVER"
	if [ -n "$HAVE_MODULE" ]; then echo "module=virtio_rdma (guest/kernel)"; else echo "module=none (no guest/kernel/Kbuild)"; fi
	echo "provider=vrdma ($TREE)"
	printf '%s\n' "${IMG_STEPS[@]}"
	echo "seconds=$((SECONDS - T0))"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores"
} > "$B/BUILD-INFO"
img_publish "$OUT"
say "built $OUT in $((SECONDS - T0)) s (rootfs.ext4 $(du -m --apparent-size "$OUT/rootfs.ext4" | cut -f1) MB, $(du -sm "$OUT" | cut -f1) MB on disk)"

# Images of other versions unused for 14 days go.
img_prune "debian-trixie-vrdma-*" "$NAME"
echo "$OUT"
