# shellcheck shell=bash disable=SC2034  # GUEST_QEMU is guest.sh's
# What every tests/vm script starts with: the netns helpers, the guest
# harness, numbered checks, and our QEMU (VRDMA_QEMU_DIR, guest/qemu/build.sh's
# output) as the guests' QEMU. Exits 77 (SKIP) only when QEMU cannot run here.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$HERE/interop/guest.sh"
source "$HERE/checks.sh"
: "${VRDMA_QEMU_DIR:?set VRDMA_QEMU_DIR to the output of guest/qemu/build.sh}"
GUEST_QEMU=$VRDMA_QEMU_DIR/bin/qemu-system-x86_64
[ -x "$GUEST_QEMU" ] || { echo "no $GUEST_QEMU: guest/qemu/build.sh" >&2; exit 1; }
guest_require
