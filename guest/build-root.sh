#!/bin/bash
# guest/build-root.sh [CACHE_DIR]: build, once, the Debian 13 (trixie) build
# root that guest/image.sh makes the VM image from, and print its directory:
#
#   root/          the tree: the guest's packages, the tools to build the
#                  kernel module and the rdma-core provider, and Debian's
#                  rdma-core source of the installed version in /src,
#                  configured and with libibverbs built (build/)
#   vmlinuz  vmlinux (uncompressed, for PVH boot)  initrd.img  kernel-version
#   packages.txt   dpkg -l of root/
#   rdma-core      the source tree's path in root/ (e.g. /src/rdma-core-56.1)
#   BUILD-INFO     versions and how long each step took
#
# CACHE_DIR defaults to ${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}; the root
# is debian-trixie-root-KEY, KEY a hash of this script and image-lib.sh, so
# changing the guest driver or provider never redoes it. Built in a temporary
# directory renamed into place, under the cache's lock (image-lib.sh). Never
# boot or change root/ itself: guest/image.sh builds on an overlay of it.
#
# Needs root and debootstrap, e2fsprogs, busybox-static; packages come from
# the Debian mirror apt uses on this machine (tests/debian-mirror.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${1:-${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}}
SUITE=trixie
GUEST_PKGS=(linux-image-amd64 rdma-core ibverbs-utils ibverbs-providers perftest
	rdmacm-utils iproute2 kmod iputils-ping procps xz-utils)
# Marked auto-installed, so that `apt-get autoremove` takes them out again.
# rdma-core's CMake needs these with -DNO_PYVERBS=1 -DNO_MAN_PAGES=1;
# dpkg-dev unpacks the source package; zstd unpacks the kernel (vmlinux).
BUILD_PKGS=(gcc make libc6-dev linux-headers-amd64 cmake ninja-build pkg-config
	libnl-3-dev libnl-route-3-dev libudev-dev python3 dpkg-dev zstd)
# -Werror as rdma-core's own CI builds.
RDMA_CMAKE=(-GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 -DENABLE_WERROR=1)
IMG_TAG=build-root
# shellcheck source=guest/image-lib.sh
. "$HERE/image-lib.sh"

KEY=$(cat "$HERE/build-root.sh" "$HERE/image-lib.sh" | sha256sum | cut -c1-16)
NAME=debian-$SUITE-root-$KEY
OUT=$CACHE/$NAME

img_cached "$OUT" BUILD-INFO root
img_mirror

T0=$SECONDS
img_begin "$KEY"
R=$B/root
img_debootstrap "$SUITE" "$R"
img_step debootstrap
img_install "$R" "${GUEST_PKGS[@]}" "${BUILD_PKGS[@]}"
chroot "$R" apt-mark auto "${BUILD_PKGS[@]}" > /dev/null
img_step install
KVER=$(find "$R/lib/modules/" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1)
[ -d "$R/usr/src/linux-headers-$KVER" ] ||
	die "linux-headers-amd64 did not install the headers of the kernel $KVER"

# Debian's rdma-core source of the installed version. If apt-get source fails
# (the .dsc once answered 404), fetch the orig and debian tarballs by the
# URIs apt gives, check them, and unpack them as dpkg-source would.
# shellcheck disable=SC2016
RDMA_VER=$(chroot "$R" dpkg-query -W -f '${source:Version}' rdma-core)
echo "deb-src $MIRROR $SUITE main" > "$R/etc/apt/sources.list.d/vrdma-deb-src.list"
bg chroot "$R" apt-get -q update > "$B/apt.log" 2>&1 ||
	{ tail -n 30 "$B/apt.log" >&2; die "apt-get update (deb-src) failed"; }
mkdir -p "$R/src"
say "rdma-core $RDMA_VER source"
if ! bg chroot "$R" sh -c "cd /src && apt-get -q source --only-source rdma-core=$RDMA_VER" > "$B/source.log" 2>&1; then
	tail -n 5 "$B/source.log" >&2
	say "apt-get source failed; fetching the tarballs by their URIs"
	rm -rf "${R:?}"/src/*
	cat > "$R/src/fetch.sh" <<'EOF'
set -e
v=$1 up=${1%-*}	# rdma-core has no epoch
cd /src
apt-get -q source --print-uris --only-source "rdma-core=$v" | grep "^'" |
	while read -r uri file _ hash; do
		case $file in *.dsc) continue ;; esac
		/usr/lib/apt/apt-helper -q download-file "$(echo "$uri" | tr -d "'")" "$file" "$hash"
	done
mkdir "rdma-core-$up"
tar -C "rdma-core-$up" --strip-components=1 -xf rdma-core_"$up".orig.tar.*
tar -C "rdma-core-$up" -xf rdma-core_"$v".debian.tar.*
cd "rdma-core-$up"
[ -f debian/patches/series ] || exit 0
grep -v '^#' debian/patches/series | while read -r p _; do
	[ -z "$p" ] || patch -p1 -s < "debian/patches/$p"
done
EOF
	bg chroot "$R" sh /src/fetch.sh "$RDMA_VER" >> "$B/source.log" 2>&1 ||
		{ tail -n 20 "$B/source.log" >&2; die "cannot get rdma-core $RDMA_VER's source"; }
	rm -f "$R/src/fetch.sh"
fi
rm -f "$R/etc/apt/sources.list.d/vrdma-deb-src.list"
RDMA_SRC=$(cd "$R" && find src -mindepth 1 -maxdepth 1 -type d -name 'rdma-core-*' | head -n 1)
[ -f "$R/${RDMA_SRC:-none}/CMakeLists.txt" ] || die "no rdma-core source tree in $R/src"
rm -f "$R"/src/rdma-core_*
echo "/$RDMA_SRC" > "$B/rdma-core"
img_step source

# Configure the tree and build libibverbs (what a provider links with), so
# that building the provider later compiles only the provider.
say "configuring /$RDMA_SRC and building libibverbs"
bg chroot "$R" sh -ec "mkdir -p /$RDMA_SRC/build && cd /$RDMA_SRC/build
	cmake ${RDMA_CMAKE[*]} ..
	ninja ibverbs" > "$B/cmake.log" 2>&1 ||
	{ tail -n 30 "$B/cmake.log" >&2; die "rdma-core's configure or libibverbs build failed"; }
img_step configure

# shellcheck disable=SC2016
chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' > "$B/packages.txt"
umount "$R/proc"
img_kernel "$R"
img_slim "$R"
img_initrd "$R"
img_step kernel_initrd
{
	echo "suite=$SUITE"
	echo "kernel=$KVER"
	echo "rdma-core=$RDMA_VER /$RDMA_SRC"
	echo "cmake=${RDMA_CMAKE[*]}"
	printf '%s\n' "${IMG_STEPS[@]}"
	echo "seconds=$((SECONDS - T0))"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores"
} > "$B/BUILD-INFO"
img_publish "$OUT"
say "built $OUT in $((SECONDS - T0)) s ($(du -sm "$OUT/root" | cut -f1) MB)"

# Roots of other versions of this script unused for 14 days go.
img_prune "debian-$SUITE-root-*" "$NAME"
echo "$OUT"
