#!/bin/bash
# shellcheck disable=SC2317  # the lanes' steps are called by name
# tests/warm-caches.sh CMD...: run CMD (make check's steps) while what its
# later suites boot is built beside it, and exit with CMD's status.
#
# On a fresh machine the check builds, once, into VRDMA_GUEST_CACHE: QEMU with
# vhost-user-rdma-pci (guest/qemu/build.sh, ~4 min of compiling on 2 cores),
# the Soft-RoCE guest (tests/interop/guest-image.sh), the Debian 13 build root
# and our guest (guest/image.sh), the systemd container's root
# (tests/systemd/container.sh) and checkpatch (tests/vm/checkpatch.sh). Built one after the other when a suite first
# asked, they would add ~25 min (their BUILD-INFO times). Here they are built
# from the start, while the host tests run, in two lanes (one compiling, one
# downloading) at idle CPU priority: SCHED_IDLE takes only what the tests
# leave (their sleeps and waits). From an empty cache the
# whole check took 43 min 39 s here. Each consumer takes the same lock as its
# builder, so a suite that gets there first waits for the build; if a build
# failed, the suite builds it again and says why. With every cache there,
# each builder only finds it (~1 s).
#
# The lanes' output goes to build/warm-caches.log. When CMD ends, lanes
# still running (CMD failed early) are stopped: the builders leave nothing
# half-built in the cache (they build in a temporary directory renamed into
# place, and remove it when stopped).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}
LOG=$REPO/build/warm-caches.log
[ $# -gt 0 ] || { echo "usage: $0 CMD..." >&2; exit 2; }

lanes=()
say() { echo "warm-caches: $*"; }

# lane NAME STEP...: run the STEPs (functions below) one after the other,
# in the background at idle priority, each step's time in the log.
lane() {
	local name=$1
	shift
	(
		local step t0
		# Before anything is forked: children inherit it.
		chrt --idle -p 0 "$BASHPID" > /dev/null 2>&1 || say "$name: chrt --idle failed; at normal priority"
		for step in "$@"; do
			t0=$SECONDS
			if "$step" > /dev/null; then
				say "$name: $step done in $((SECONDS - t0)) s"
			else
				say "$name: $step FAILED after $((SECONDS - t0)) s (its suite builds it again)"
			fi
		done
	) < /dev/null >> "$LOG" 2>&1 &
	lanes+=($!)
}

# The steps, called by name from lane.
qemu() { "$REPO/guest/qemu/build.sh" "$CACHE"; }
rxe_guest() { "$REPO/tests/interop/guest-image.sh" "$CACHE"; }
vrdma_guest() { "$REPO/guest/image.sh" "$CACHE"; }
checkpatch() { "$REPO/tests/vm/checkpatch.sh" --fetch; }
container_root() {
	local d rc
	d=$(mktemp -d)
	REPO=$REPO CT_DIR=$d VRDMA_GUEST_CACHE=$CACHE \
		bash -c '. "$REPO/tests/systemd/container.sh" && ct_base'
	rc=$?
	rm -rf "$d"
	return "$rc"
}

# Each lane is a process group of its own (set -m): stopping one stops
# its compilers and debootstraps too, and nothing else.
stop_lanes() {
	local p
	for p in "${lanes[@]}"; do
		kill -0 "$p" 2> /dev/null || continue
		say "stopping the cache builds still running (see $LOG)"
		kill -TERM -- "-$p" 2> /dev/null
	done
	wait 2> /dev/null
}

mkdir -p "$REPO/build"
: > "$LOG"
if [ "$(id -u)" = 0 ]; then
	set -m
	lane compile qemu
	lane download rxe_guest vrdma_guest container_root checkpatch
	set +m
fi
trap 'stop_lanes; exit 130' INT TERM
"$@"
rc=$?
stop_lanes
[ ! -s "$LOG" ] || sed 's/^/  /' "$LOG"
exit "$rc"
