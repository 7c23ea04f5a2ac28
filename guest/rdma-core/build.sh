#!/bin/bash
# guest/rdma-core/build.sh TREE OUTDIR: build the vrdma provider inside
# Debian's rdma-core source TREE and copy libvrdma-rdmav*.so and
# vrdma.driver (the /etc/libibverbs.d entry) into OUTDIR, with
# vrdma-wr-test (tests/wr_test.c), vrdma-stress (tests/stress.c),
# vrdma-ring-liar (tests/ring_liar.c) and vrdma-many-qps (tests/many_qps.c),
# built against TREE's libibverbs.
#
# Runs where TREE's compiler and libraries are: in the guest build root
# (guest/image.sh calls it there). TREE must be configured already
# (TREE/build, `cmake -GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1
# -DENABLE_WERROR=1`, as guest/build-root.sh does). This copies
# providers/vrdma into TREE, adds it to TREE's CMakeLists.txt after the
# in-tree providers, and builds only its target: ninja re-runs cmake for the
# new directory and compiles the provider alone.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TREE=${1:?usage: build.sh RDMA_CORE_TREE OUTDIR}
OUT=${2:?usage: build.sh RDMA_CORE_TREE OUTDIR}
die() { echo "rdma-core/build.sh: $*" >&2; exit 1; }

[ -f "$TREE/build/build.ninja" ] || die "$TREE is not configured (no build/build.ninja)"
rm -rf "$TREE/providers/vrdma"
cp -r "$HERE/providers/vrdma" "$TREE/providers/vrdma"
# the device's ABI and the udata shared with virtio_rdma.ko
cp "$HERE/../../include/virtio_rdma.h" "$HERE/../../include/vrdma_uverbs.h" \
	"$TREE/providers/vrdma/"
LINE='add_subdirectory(providers/vrdma)'
if ! grep -qxF "$LINE" "$TREE/CMakeLists.txt"; then
	# After the last provider outside `if (HAVE_COHERENT_DMA)`: vrdma maps
	# no device memory.
	grep -qx 'add_subdirectory(providers/siw)' "$TREE/CMakeLists.txt" ||
		die "no 'add_subdirectory(providers/siw)' in $TREE/CMakeLists.txt to add vrdma after"
	sed -i "/^add_subdirectory(providers\/siw)\$/a $LINE" "$TREE/CMakeLists.txt"
fi
PABI=$(sed -n 's/^set(IBVERBS_PABI_VERSION "\([0-9]*\)")$/\1/p' "$TREE/CMakeLists.txt")
[ -n "$PABI" ] || die "cannot find IBVERBS_PABI_VERSION in $TREE/CMakeLists.txt"
ninja -C "$TREE/build" "vrdma-rdmav$PABI"
mkdir -p "$OUT"
cp "$TREE/build/lib/libvrdma-rdmav$PABI.so" "$OUT/"
cp "$TREE/build/providers/vrdma/vrdma.driver" "$OUT/"
# libibverbs.so.1 of TREE's version: the guest's own at run time
cc -O2 -g -Wall -Wextra -Werror -I"$TREE/build/include" -o "$OUT/vrdma-wr-test" \
	"$HERE/tests/wr_test.c" -L"$TREE/build/lib" -libverbs
cc -O2 -g -Wall -Wextra -Werror -pthread -I"$TREE/build/include" -o "$OUT/vrdma-stress" \
	"$HERE/tests/stress.c" -L"$TREE/build/lib" -libverbs
cc -O2 -g -Wall -Wextra -Werror -I"$TREE/build/include" -o "$OUT/vrdma-many-qps" \
	"$HERE/tests/many_qps.c" -L"$TREE/build/lib" -libverbs
# vrdma-ring-liar reaches into the provider's objects (its vrdma.h)
cc -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -pthread \
	-I"$TREE/providers/vrdma" -I"$TREE/build/include" -o "$OUT/vrdma-ring-liar" \
	"$HERE/tests/ring_liar.c" -L"$TREE/build/lib" -libverbs
