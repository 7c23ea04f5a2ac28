#!/bin/bash
# `make codec-interop`: the RoCEv2 codec against scapy (frames scapy builds,
# ICRC included, must parse to the fields scapy set) and tshark (frames the
# codec builds must decode to the fields they were built from; every ICRC is
# recomputed with zlib). No root, no network.
#
# Environment: ROCE_TOOL (roce_tool, built with ASan+UBSan), VECTORS (the
# golden frames); both set by the Makefile.
set -e -o pipefail
: "${ROCE_TOOL:?set ROCE_TOOL to the roce_tool binary}"
: "${VECTORS:?set VECTORS to tests/vectors/roce-frames.txt}"
PY=/usr/bin/python3	# Debian's, with scapy; whatever python3 is first on PATH
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TMP=$(mktemp -d /tmp/vrdmad-codec.XXXXXX)
cleanup() { [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"; }
trap cleanup EXIT
export ROCE_TOOL VECTORS CODEC_TMP=$TMP

command -v tshark > /dev/null || { echo "codec-interop: tshark is missing (make deps)" >&2; exit 1; }
"$PY" -c 'import scapy.contrib.roce' 2> /dev/null ||
	{ echo "codec-interop: $PY has no scapy (make deps: python3-scapy)" >&2; exit 1; }

# run NAME SCRIPT: the script's output, its counts from its closing line.
PASSED=0
FAILED=0
run() {
	local rc=0 line p f
	echo "== $1"
	"$PY" "$HERE/$2" | tee "$TMP/$1.out" || rc=$?
	line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed$" "$TMP/$1.out" | tail -1) || true
	if [ -z "$line" ]; then
		echo "codec-interop: $2 ended without its summary (exit $rc)"
		FAILED=$((FAILED + 1))
		return
	fi
	read -r _ p _ f _ <<< "$line"
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	[ "$rc" = 0 ] || [ "$f" != 0 ] || FAILED=$((FAILED + 1))	# failed without saying so
}

run scapy scapy_check.py
run tshark tshark_check.py
echo "codec-interop: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
