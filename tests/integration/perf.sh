#!/bin/bash
# vrdma-perf (perftest's eight tests on libvrdma) against itself: a server on
# one VM's socket, a client on the other's, both talking perftest's TCP
# exchange over lo of the daemon's namespace; the RDMA traffic is the
# daemon's loopback between the two VMs.
#
#   netns vrA-ID
#   +------------------------------------------------------------+
#   | vrdmad on vA-ID (XDP)                                      |
#   |   vm alpha ::ffff:10.205.0.11 alpha.sock <- vrdma-perf (server)
#   |   vm beta  ::ffff:10.205.0.12 beta.sock  <- vrdma-perf (client 127.0.0.1)
#   +------------------------------------------------------------+
#
# Environment: VRDMA_PERF (default: the ASan build in this tree, else the
# plain one that `make all` builds).
set -e
source "$(dirname "$0")/../lib.sh"
if [ -z "${VRDMA_PERF:-}" ]; then
	VRDMA_PERF=$(cd "$HERE/.." && pwd)/build/asan/vrdma-perf
	[ -x "$VRDMA_PERF" ] || VRDMA_PERF=$(cd "$HERE/.." && pwd)/build/vrdma-perf
fi
[ -x "$VRDMA_PERF" ] || { echo "no $VRDMA_PERF (make build/asan/vrdma-perf)" >&2; exit 1; }

setup_pair "10.205.0.1/24" "10.205.0.2/24"
VMS="[vm alpha]
gid = 10.205.0.11
mac = 52:54:00:00:05:11
socket = $TMP/alpha.sock
max_cq = 8
max_qp = 8
[vm beta]
gid = 10.205.0.12
mac = 52:54:00:00:05:12
socket = $TMP/beta.sock
max_cq = 8
max_qp = 8"

echo "perf: vrdma-perf server and client on two VMs of one daemon ($NSA)"

PORT=18515
N=0
# perf NAME TEST ARGS...: a server on alpha, then a client on beta, same
# arguments; sets SRV and CLI (output files), SRC and CRC (exit codes).
perf() {
	local name=$1 test=$2 i
	shift 2
	N=$((N + 1))
	PORT=$((PORT + 1))	# no TIME_WAIT clash between runs
	SRV=$TMP/$N.$name.server
	CLI=$TMP/$N.$name.client
	ip netns exec "$NSA" timeout 60 "$VRDMA_PERF" "$test" -d "$TMP/alpha.sock" -p "$PORT" "$@" \
		> "$SRV" 2>&1 &
	local spid=$!
	for i in $(seq 100); do
		ip netns exec "$NSA" ss -ltnH "sport = :$PORT" | grep -q . && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	CRC=0
	ip netns exec "$NSA" timeout 60 "$VRDMA_PERF" "$test" -d "$TMP/beta.sock" -p "$PORT" "$@" \
		127.0.0.1 > "$CLI" 2>&1 || CRC=$?
	SRC=0
	wait "$spid" || SRC=$?
}

show() {
	echo "---- server (exit $SRC):"; cat "$SRV"
	echo "---- client (exit $CRC):"; cat "$CLI"
	echo "----"
}

both_ok() { [ "$SRC" = 0 ] && [ "$CRC" = 0 ] || { show; return 1; }; }

# The banner and address lines of perftest, in $1.
banner_ok() {
	local f=$1 sock=$2
	grep -q "^ Dual-port       : OFF"$'\t\t'"Device         : $sock\$" "$f" &&
	grep -q "^ Number of qps   : [0-9]*"$'\t\t'"Transport type : IB\$" "$f" &&
	grep -q "^ Link type       : Ethernet\$" "$f" &&
	grep -Eq '^ local address: LID 0000 QPN 0x[0-9a-f]{4,6} PSN 0x[0-9a-f]{4,6}' "$f" &&
	grep -Eq '^ remote address: LID 0000 QPN 0x[0-9a-f]{4,6} PSN 0x[0-9a-f]{4,6}' "$f" &&
	grep -q '^ GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:205:00:1[12]$' "$f" ||
		{ echo "    banner of $f:"; cat "$f"; return 1; }
}

# bw_rows FILE SIZE_RE ITERS_RE: the table header, then rows with that size
# and a positive message rate and average (the average of a few tiny
# messages may round to 0.00 MB/s); prints how many.
BW_HDR=' #bytes     #iterations    BW peak\[(MB|Gb)/sec\]    BW average\[(MB|Gb)/sec\]   MsgRate\[Mpps\]$'
bw_rows() {
	grep -Eq "$BW_HDR" "$1" || { echo 0; return; }
	awk -v sre="^($2)\$" -v ire="^($3)\$" '
		/^ #bytes/ { on = 1; next }
		on && /^-+$/ { on = 0 }
		on && $1 ~ sre && $2 ~ ire && NF == 5 && $3 >= 0 && ($4 > 0 || $1 < 1024) && $5 > 0 { n++ }
		END { print n + 0 }' "$1"
}
LAT_HDR=' #bytes #iterations    t_min\[usec\]    t_max\[usec\]  t_typical\[usec\]    t_avg\[usec\]    t_stdev\[usec\]   99% percentile\[usec\]   99\.9% percentile\[usec\] $'
lat_rows() {
	grep -Eq "$LAT_HDR" "$1" || { echo 0; return; }
	awk -v sre="^($2)\$" -v ire="^($3)\$" '
		/^ #bytes/ { on = 1; next }
		on && /^-+$/ { on = 0 }
		on && $1 ~ sre && $2 ~ ire && NF == 9 && $3 > 0 && $4 >= $3 && $5 > 0 && $6 > 0 { n++ }
		END { print n + 0 }' "$1"
}

bw_ok() {	# FILE SIZE ITERS [ROWS]
	local n
	n=$(bw_rows "$1" "$2" "$3")
	[ "$n" = "${4:-1}" ] || { echo "    $n rows of $2/$3 in $1:"; cat "$1"; return 1; }
}
lat_ok() {
	local n
	n=$(lat_rows "$1" "$2" "$3")
	[ "$n" = "${4:-1}" ] || { echo "    $n rows of $2/$3 in $1:"; cat "$1"; return 1; }
}
no_table() { ! grep -q '^ #bytes' "$1" || { cat "$1"; return 1; }; }

CONF=$(write_conf "" "$VMS" perf.conf)
start_daemon "$CONF"

# A size that crosses the 1024-byte path MTU 64 times per message.
BIG="-s 65536 -m 1024 -n 200"
for t in send_bw write_bw read_bw; do
	perf "$t" "$t" $BIG
	check "$t: server and client exit 0" both_ok
	check "$t: perftest's banner and addresses" banner_ok "$CLI" "$TMP/beta.sock"
	check "$t: client reports 65536 B x 200 with positive numbers" bw_ok "$CLI" 65536 200
	# write/read: the passive server prints the client's report
	check "$t: server reports too" bw_ok "$SRV" 65536 200
done
check "write_bw: RKey and VAddr in the address lines" \
	grep -Eq '^ remote address: .* RKey 0x[0-9a-f]{6,8} VAddr 0x[0-9a-f]{14,16}$' "$TMP/2.write_bw.client"
check "read_bw: OUT (outstanding reads) in the address lines" \
	grep -Eq '^ local address: .* OUT 0x10 RKey' "$TMP/3.read_bw.client"

for t in send_lat write_lat read_lat; do
	perf "$t" "$t" $BIG
	check "$t: server and client exit 0" both_ok
	check "$t: perftest's banner and addresses" banner_ok "$SRV" "$TMP/alpha.sock"
	check "$t: client reports 65536 B x 200 latencies" lat_ok "$CLI" 65536 200
done
check "send_lat, write_lat: the server measures too" \
	eval 'lat_ok "$TMP/4.send_lat.server" 65536 200 && lat_ok "$TMP/5.write_lat.server" 65536 200'
check "read_lat: the server only waits (no table)" no_table "$TMP/6.read_lat.server"

perf small_lat write_lat -n 1000
check "write_lat, 2 bytes inline: exit 0 and one row" eval 'both_ok && lat_ok "$CLI" 2 1000'

perf all write_bw -a -n 10 -m 1024
check "write_bw -a: exit 0" both_ok
check "write_bw -a: 23 rows, 2 B .. 8 MiB" bw_ok "$CLI" '[0-9]+' 10 23
check "write_bw -a: 8388608 B among them" bw_ok "$CLI" 8388608 10

perf all_lat send_lat -a -n 20 -m 1024
check "send_lat -a: exit 0 and 23 rows" eval 'both_ok && lat_ok "$CLI" "[0-9]+" 20 23'

perf qps send_bw -q 2 -s 4096 -n 1000 --report_gbits
check "send_bw -q 2 --report_gbits: exit 0" both_ok
check "send_bw -q 2: two QPs each side, 2000 messages, Gb/s" \
	eval '[ "$(grep -c "^ local address" "$CLI")" = 2 ] && bw_ok "$CLI" 4096 2000 && grep -q "BW peak\[Gb/sec\]" "$CLI"'

perf bidir write_bw -b -q 2 -s 65536 -n 300
check "write_bw -b -q 2: exit 0, both sides report the sum" \
	eval 'both_ok && bw_ok "$CLI" 65536 600 && bw_ok "$SRV" 65536 600'
check "write_bw -b: Bidirectional in the title" grep -q "RDMA_Write Bidirectional BW Test" "$CLI"

perf bidir_send send_bw -b -s 8192 -n 500
check "send_bw -b: exit 0, both sides report" eval 'both_ok && bw_ok "$CLI" 8192 500 && bw_ok "$SRV" 8192 500'

perf dur read_bw -D 2 -s 16384
check "read_bw -D 2: exit 0, a row with a positive average" eval 'both_ok && bw_ok "$CLI" 16384 "[0-9]+"'

perf dur_lat write_lat -D 2
dur_lat_ok() {
	grep -q '^ #bytes        #iterations       t_avg\[usec\]    tps average$' "$1" &&
	awk '/^ #bytes/ { on = 1; next } on && NF == 4 && $1 == 2 && $2 > 0 && $3 > 0 && $4 > 0 { n++ }
		END { exit n == 1 ? 0 : 1 }' "$1" || { cat "$1"; return 1; }
}
check "write_lat -D 2: exit 0, perftest's duration table on both sides" \
	eval 'both_ok && dur_lat_ok "$CLI" && dur_lat_ok "$SRV"'

perf uc write_bw -c UC -s 4096 -n 500
check "write_bw -c UC: exit 0 and a row" eval 'both_ok && bw_ok "$CLI" 4096 500'

perf ud send_lat -c UD -s 512 -n 500
check "send_lat -c UD: exit 0 and a row" eval 'both_ok && lat_ok "$CLI" 512 500'

# Atomics: ib_atomic_bw / ib_atomic_lat with both -A types (8 bytes, fixed).
for at in FETCH_AND_ADD CMP_AND_SWAP; do
	perf "atomic_bw_$at" atomic_bw -A "$at" -n 2000
	check "atomic_bw -A $at: exit 0, 8 B x 2000 on both sides" \
		eval 'both_ok && bw_ok "$CLI" 8 2000 && bw_ok "$SRV" 8 2000'
	check "atomic_bw -A $at: perftest's title and outstanding atomics" \
		eval 'grep -q "Atomic $at BW Test" "$CLI" && grep -q "^ Outstand reads  : 16$" "$CLI"'
	perf "atomic_lat_$at" atomic_lat -A "$at" -n 500
	check "atomic_lat -A $at: exit 0, 8 B x 500 latencies, the server waits" \
		eval 'both_ok && lat_ok "$CLI" 8 500 && no_table "$SRV"'
done

# Errors: perftest's messages and a nonzero exit.
bad_socket() {
	local out rc=0
	out=$(ip netns exec "$NSA" timeout 20 "$VRDMA_PERF" write_bw -d "$TMP/nope.sock" 127.0.0.1 2>&1) || rc=$?
	[ "$rc" = 1 ] && grep -q "Couldn't get context for the device" <<< "$out" || { echo "$out (exit $rc)"; return 1; }
}
check "a socket nobody serves: error and exit 1" bad_socket
bad_args() {
	local out rc=0 want=$1
	shift
	out=$(timeout 20 "$VRDMA_PERF" "$@" 2>&1) || rc=$?
	[ "$rc" = 1 ] && grep -q -- "$want" <<< "$out" || { echo "$out (exit $rc)"; return 1; }
}
check "read_bw -c UC: refused as perftest does" \
	bad_args "UC connection not possible in READ/ATOMIC verbs" read_bw -d "$TMP/alpha.sock" -c UC
check "send_lat -q 2: refused as perftest does" \
	bad_args "Multiple QPs only available on bw tests" send_lat -d "$TMP/alpha.sock" -q 2
check "an unknown test name: refused" bad_args "Unknown test" ping_bw
check "atomic_bw -s 16: refused as perftest does" \
	bad_args "Message size cannot be changed for Atomic tests" atomic_bw -d "$TMP/alpha.sock" -s 16
check "atomic_lat -c UC: refused as perftest does" \
	bad_args "UC connection not possible in READ/ATOMIC verbs" atomic_lat -d "$TMP/alpha.sock" -c UC
check "read_bw -A CMP_AND_SWAP: refused as perftest does" \
	bad_args "You are not running the atomic_lat/bw test" read_bw -d "$TMP/alpha.sock" -A CMP_AND_SWAP
check "atomic_bw -A ADD: refused as perftest does" \
	bad_args "Invalid Atomic type" atomic_bw -d "$TMP/alpha.sock" -A ADD

no_sanitizer_report() {
	! grep -l "Sanitizer\|runtime error" "$DLOG" "$TMP"/*.server "$TMP"/*.client
}
check "no sanitizer report (daemon, servers, clients)" no_sanitizer_report
stop_daemon
check "the daemon exits 0" test "$RC" = 0
summary
