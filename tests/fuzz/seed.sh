#!/bin/bash
# seed.sh VECTORS DIR: the golden frames as a starting corpus for fuzz_parse,
# in its input format (tests/fuzz/fuzz_parse.c): control bytes, then the frame.
# Per frame: whole in one buffer; with an 802.1Q tag inserted; split over
# three buffers (headers, 7 bytes, rest); with 6 bytes of Ethernet padding;
# with the fuzzer's length and checksum fix-ups on, as a start for mutations
# of the lengths, the opcode and the other ICRC-covered fields.
set -e
[ $# = 2 ] || { echo "usage: $0 VECTORS DIR" >&2; exit 2; }
VECTORS=$1
DIR=$2
mkdir -p "$DIR"

# put NAME CONTROL_HEX FRAME_HEX
# shellcheck disable=SC2001 # sed splits the hex into \xHH escapes for printf
put() { printf '%b' "$(sed 's/../\\x&/g' <<< "$2$3")" > "$DIR/$1"; }

n=0
while read -r name _ hex; do
	case $name in ''|'#'*) continue ;; esac
	hex=${hex##* }	# the last word
	put "$name" 00 "$hex"
	# 802.1Q, PCP 3 VID 100, between the MAC addresses and the EtherType
	put "$name-vlan" 00 "${hex:0:24}81006064${hex:24}"
	# 3 buffers: 32 + 0x36 = 86 bytes (all headers), 7 bytes, the rest; chunk 4
	put "$name-3frags" 323607 "$hex"
	put "$name-ethpad" 00 "${hex}000000000000"
	put "$name-fixup" 0c "$hex"	# fix lengths and checksums
	# The same over IPv6 (fd00::1 -> fd00::2, hop limit 64; the fix-ups
	# fill in the payload length and the ICRC)
	[ "${hex:24:4}" = 0800 ] && put "$name-ipv6" 0c \
		"${hex:0:24}86dd6000000000001140$(printf 'fd%030x' 1)$(printf 'fd%030x' 2)${hex:68}"
	n=$((n + 1))
done < "$VECTORS"
[ "$n" -gt 0 ] || { echo "seed.sh: no frames in $VECTORS" >&2; exit 1; }
echo "seed.sh: $(find "$DIR" -type f | wc -l) inputs from $n golden frames in $DIR"
