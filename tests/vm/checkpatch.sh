#!/bin/bash
# The guest module follows the kernel's coding style: every file of
# guest/kernel passes the kernel's scripts/checkpatch.pl (--strict off, as a
# driver submitted upstream would be read), taken from Debian's
# linux-source-6.1 package and cached in VRDMA_GUEST_CACHE
# (/var/cache/vrdmad-test/checkpatch-VERSION), keyed by the package version.
# Needs root only to write the cache. With --fetch it only fills the cache
# (tests/warm-caches.sh, while the host tests run).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
REPO=$(cd "$HERE/.." && pwd)
source "$HERE/checks.sh"

CACHE=${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}
PKG=linux-source-6.1
VERSION=$(apt-cache policy "$PKG" 2>/dev/null | sed -n 's/^ *Candidate: //p')
if [ -z "$VERSION" ] || [ "$VERSION" = "(none)" ]; then
	apt-get update -qq > /dev/null 2>&1 || true
	VERSION=$(apt-cache policy "$PKG" 2>/dev/null | sed -n 's/^ *Candidate: //p')
fi
[ -n "$VERSION" ] && [ "$VERSION" != "(none)" ] || { echo "checkpatch: apt knows no $PKG" >&2; exit 1; }
DIR=$CACHE/checkpatch-$VERSION
if [ ! -f "$DIR/scripts/checkpatch.pl" ]; then	# one fetch at a time
	mkdir -p "$CACHE"
	exec 8> "$CACHE/.checkpatch.lock"
	flock 8
fi
if [ ! -f "$DIR/scripts/checkpatch.pl" ]; then
	echo "checkpatch: taking scripts/checkpatch.pl from $PKG $VERSION (once)"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	(cd "$work" && apt-get download -q "$PKG=$VERSION" > /dev/null)
	dpkg-deb --fsys-tarfile "$work"/"$PKG"_*.deb |
		tar -x -O "./usr/src/$PKG.tar.xz" |
		tar -xJ -C "$work" --strip-components=1 "$PKG/scripts/checkpatch.pl" \
			"$PKG/scripts/spelling.txt" "$PKG/scripts/const_structs.checkpatch"
	rm -rf "$DIR.tmp" && mkdir -p "$DIR.tmp" && mv "$work/scripts" "$DIR.tmp/" && mv "$DIR.tmp" "$DIR"
fi
[ "${1:-}" != --fetch ] || exit 0

# clean FILE: no error, warning or check of checkpatch's on FILE.
clean() {
	local out
	out=$(perl "$DIR/scripts/checkpatch.pl" --no-tree --terse --show-types -f "$1" 2>&1) || true
	if echo "$out" | grep -q ': \(ERROR\|WARNING\|CHECK\):'; then
		echo "$out" | sed 's/^/    /'
		return 1
	fi
}
cd "$REPO"
for f in guest/kernel/*.c guest/kernel/*.h; do
	check "checkpatch: $f" clean "$f"
done
summary checkpatch
