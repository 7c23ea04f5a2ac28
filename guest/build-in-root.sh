#!/bin/bash
# build-in-root.sh module|provider KVER RDMA_TREE OUTDIR [--install]: run
# inside the guest build root (guest/image.sh copies the sources there as
# /src/guest/kernel, /src/include, /src/guest/rdma-core and this script, and
# chroots). Builds
#   module    guest/kernel with kbuild against /usr/src/linux-headers-KVER
#             (its Kbuild finds the ABI header as ../../include)
#   provider  the vrdma provider inside Debian's rdma-core tree RDMA_TREE,
#             vrdma-wr-test, vrdma-stress, vrdma-ring-liar and
#             vrdma-many-qps (tests/vm/ run them)
# and copies what it built into OUTDIR; with --install, also installs it
# into this root: the module under /lib/modules/KVER/updates (depmod), the
# provider where Debian's libibverbs looks for providers.
set -euo pipefail

WHAT=${1:?} KVER=${2:?} TREE=${3:?} OUT=${4:?} INSTALL=${5:-}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$OUT"

case $WHAT in
module)
	M=$SRC/guest/kernel
	make -C "/usr/src/linux-headers-$KVER" M="$M" -j "$(nproc)" modules
	mapfile -t KOS < <(find "$M" -name '*.ko')
	[ ${#KOS[@]} -gt 0 ] || { echo "kbuild made no .ko in $M" >&2; exit 1; }
	cp "${KOS[@]}" "$OUT/"
	if [ -n "$INSTALL" ]; then
		install -d "/lib/modules/$KVER/updates"
		install -m 644 "${KOS[@]}" "/lib/modules/$KVER/updates/"
		depmod -a "$KVER"
	fi
	;;
provider)
	"$SRC/guest/rdma-core/build.sh" "$TREE" "$OUT"
	if [ -n "$INSTALL" ]; then
		# Debian's provider directory: where its own providers are.
		d=$(dirname "$(find /usr/lib -path '*/libibverbs/librxe-rdmav*.so' | head -n 1)")
		[ "$d" != . ] || { echo "no libibverbs provider directory (rxe's) in /usr/lib" >&2; exit 1; }
		install -m 644 "$OUT"/libvrdma-rdmav*.so "$d/"
		install -m 644 "$OUT/vrdma.driver" /etc/libibverbs.d/
		install -m 755 "$OUT/vrdma-wr-test" "$OUT/vrdma-stress" "$OUT/vrdma-ring-liar" \
			"$OUT/vrdma-many-qps" /usr/local/bin/
		# It loads into Debian's libibverbs: its private ABI symbols resolve
		# (mode 2: RTLD_NOW). (libibverbs loads providers only for devices.)
		python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1], mode=2)' "$d"/libvrdma-rdmav*.so
	fi
	;;
*) echo "build-in-root.sh: what is '$WHAT'? (module or provider)" >&2; exit 2 ;;
esac
