#!/bin/bash
# guest-image.sh [CACHE_DIR]: build, once, the Debian bookworm guest that the
# interop tests boot (Linux Soft-RoCE, rdma-core, perftest), and print the
# directory that holds it:
#
#   vmlinuz  vmlinux (same kernel, uncompressed)  initrd.img  rootfs.ext4
#   packages.txt (dpkg -l of the guest)  kernel-version
#
# CACHE_DIR defaults to ${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}. The image
# is keyed by a hash of this script, guest-init.sh and guest/image-lib.sh (the
# steps it shares with guest/image.sh, the Debian 13 image), so changing any
# builds a new one. The build happens in a temporary directory inside the cache
# that is renamed into place at the end, under a lock: an interrupted build
# never leaves a half image, and two tests asking at once build it once.
# Takes ~2.5 min and ~1 GB of temporary space; the result is ~0.5 GB.
#
# Needs root and the packages debootstrap, e2fsprogs, busybox-static.
# Packages come from the Debian mirror that apt on this machine already uses.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=$HERE/../../guest/image-lib.sh
CACHE=${1:-${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}}
SUITE=bookworm
GUEST_PKGS=(linux-image-amd64 rdma-core ibverbs-utils ibverbs-providers perftest
	rdmacm-utils iproute2 kmod iputils-ping procps xz-utils)
IMG_TAG=guest-image
# shellcheck source=guest/image-lib.sh
. "$LIB"

KEY=$(cat "$HERE/guest-image.sh" "$HERE/guest-init.sh" "$LIB" | sha256sum | cut -c1-16)
NAME=debian-$SUITE-rxe-$KEY
OUT=$CACHE/$NAME

img_cached "$OUT" rootfs.ext4 vmlinuz initrd.img
img_mirror

T0=$SECONDS
img_begin "$KEY"
R=$B/root
img_debootstrap "$SUITE" "$R"
img_install "$R" "${GUEST_PKGS[@]}"
# shellcheck disable=SC2016
chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' > "$B/packages.txt"
umount "$R/proc"

img_kernel "$R"
img_slim "$R"
img_guest_files "$R" "$HERE/guest-init.sh"
img_initrd "$R"
img_ext4 "$R"
rm -rf "$R"
img_publish "$OUT"
say "built $OUT in $((SECONDS - T0)) s"

# Images of other versions of these scripts unused for 14 days go.
img_prune "debian-$SUITE-rxe-*" "$NAME"
echo "$OUT"
