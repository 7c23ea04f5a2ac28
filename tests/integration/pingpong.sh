#!/bin/bash
# vrdma-pingpong, rdma-core's ibv_{rc,uc,ud,srq}_pingpong on libvrdma: a server
# on VM alpha, a client on VM beta of one daemon (loopback: no NIC on the
# data path), their TCP exchange over the namespace's addresses. RC, UC and
# UD, sizes across the path MTU, -c, -e, the output's form, and the errors.
#
#   netns vrA-ID                                   netns vrB-ID
#   +------------------------------------------+   +-------------+
#   | vrdmad on vA-ID (XDP)                    |   | vB-ID       |
#   |   vm alpha  ::ffff:10.206.0.11 alpha.sock|<->| 10.206.0.2  |
#   |   vm beta   ::ffff:10.206.0.12 beta.sock |   +-------------+
#   |   vrdma-pingpong server (alpha) <-TCP-> client (beta)
#   +------------------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"
need_pingpong

setup_pair "10.206.0.1/24" "10.206.0.2/24"
VMS="[vm alpha]
gid = 10.206.0.11
mac = 52:54:00:00:06:11
socket = $TMP/alpha.sock
max_cq = 4
max_qp = 4
[vm beta]
gid = 10.206.0.12
mac = 52:54:00:00:06:12
socket = $TMP/beta.sock
max_cq = 4
max_qp = 4"

echo "pingpong: vrdma-pingpong between two VMs ($NSA)"
CONF=$(write_conf "" "$VMS" "pingpong.conf")
start_daemon "$CONF"

# Busy-polling runs are short: two spinning processes and the daemon share
# the test machine's cores. The rdma-core lines (ud's local address really has "PSN 0x...: GID").
HEX6='0x[0-9a-f]{6}'
GIDRE='::ffff:10\.206\.0\.1[12]'
LOCAL_RE="^  local address:  LID 0x0000, QPN $HEX6, PSN $HEX6[,:] GID $GIDRE\$"
REMOTE_RE="^  remote address: LID 0x0000, QPN $HEX6, PSN $HEX6, GID $GIDRE\$"
BYTES_RE='^[0-9]+ bytes in [0-9]+\.[0-9]{2} seconds = [0-9]+\.[0-9]{2} Mbit/sec$'
ITERS_RE='^[0-9]+ iters in [0-9]+\.[0-9]{2} seconds = [0-9]+\.[0-9]{2} usec/iter$'

PORT=18515
pp() { ip netns exec "$NSA" timeout 60 "$VRDMA_PINGPONG" "$@"; }

# run_pair NAME "SERVER ARGS" "CLIENT ARGS" [HOST]: server on alpha, client
# on beta; sets SRC and CRC (exit codes), outputs in $TMP/NAME.{srv,cli}.{out,err}.
# The client runs under the command in CLI_WRAP, if any.
CLI_WRAP=()
run_pair() {
	local name=$1 sargs=$2 cargs=$3 host=${4:-127.0.0.1} spid
	PORT=$((PORT + 1))
	# shellcheck disable=SC2086
	pp -d "$TMP/alpha.sock" -p "$PORT" $sargs > "$TMP/$name.srv.out" 2> "$TMP/$name.srv.err" &
	spid=$!
	wait_listen "$NSA" "$PORT" || true
	CRC=0
	# shellcheck disable=SC2086
	ip netns exec "$NSA" "${CLI_WRAP[@]}" timeout 60 "$VRDMA_PINGPONG" -d "$TMP/beta.sock" \
		-p "$PORT" $cargs "$host" > "$TMP/$name.cli.out" 2> "$TMP/$name.cli.err" || CRC=$?
	SRC=0
	wait "$spid" || SRC=$?
}

# The run went through: exit 0 on both sides, nothing on stderr (no
# sanitizer report either), the four rdma-core lines each and the byte
# count of SIZE * ITERS * 2.
run_ok() {
	local name=$1 size=$2 iters=$3 side f
	for side in srv cli; do
		f=$TMP/$name.$side
		if [ -s "$f.err" ]; then echo "    $name $side stderr:"; sed 's/^/      /' "$f.err" | head -20; return 1; fi
		grep -Eq "$LOCAL_RE" "$f.out" && grep -Eq "$REMOTE_RE" "$f.out" &&
			grep -Eq "$BYTES_RE" "$f.out" && grep -Eq "$ITERS_RE" "$f.out" &&
			grep -q "^$((size * iters * 2)) bytes in " "$f.out" &&
			grep -q "^$iters iters in " "$f.out" &&
			! grep -q 'invalid data' "$f.out" &&
			[ "$(wc -l < "$f.out")" = 4 ] ||
			{ echo "    $name $side stdout:"; sed 's/^/      /' "$f.out"; return 1; }
	done
	[ "$SRC" = 0 ] && [ "$CRC" = 0 ] || { echo "    exit codes: server $SRC, client $CRC"; return 1; }
	grep -m1 usec/iter "$TMP/$name.cli.out" | sed 's/^/    /'
}

# pair NAME SIZE ITERS ARGS...: the same ARGS on both sides.
pair() {
	local name=$1 size=$2 iters=$3
	shift 3
	run_pair "$name" "-s $size -n $iters $*" "-s $size -n $iters $*"
	run_ok "$name" "$size" "$iters"
}

# Each side names the other's QPN and GID: the exchange went both ways.
addresses_cross() {
	local s=$TMP/$1.srv.out c=$TMP/$1.cli.out
	[ "$(sed -n 's/^  local address:  LID 0x0000, QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\)[,:] GID \(.*\)$/\1 \2 \3/p' "$s")" = \
	  "$(sed -n 's/^  remote address: LID 0x0000, QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\), GID \(.*\)$/\1 \2 \3/p' "$c")" ] &&
	[ "$(sed -n 's/^  local address:  LID 0x0000, QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\)[,:] GID \(.*\)$/\1 \2 \3/p' "$c")" = \
	  "$(sed -n 's/^  remote address: LID 0x0000, QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\), GID \(.*\)$/\1 \2 \3/p' "$s")" ] &&
	grep -q 'GID ::ffff:10.206.0.11$' "$s" && grep -q 'GID ::ffff:10.206.0.12$' "$c"
}

check "rc: 4096 B (the default size), no MAC for the peer VM" pair rc 4096 300
check "rc: each side has the other's QPN, PSN and GID" addresses_cross rc
check "ud: 1024 B (the port MTU), -c, no MAC for the peer VM" pair ud 1024 300 -T ud -c

# So far libvrdma found no MAC for the other VM's GID (it probes ~1 s, then
# sends with none: the daemon delivers by GID). From here the VMs' GIDs are
# in the neighbour table, as when their own kernels answer ARP.
ip -n "$NSA" neigh replace 10.206.0.11 lladdr 52:54:00:00:06:11 dev "$IFA" nud permanent
ip -n "$NSA" neigh replace 10.206.0.12 lladdr 52:54:00:00:06:12 dev "$IFA" nud permanent
check "rc: 65536 B, -m 1024 (64 packets a message), -c" pair rc64k 65536 100 -m 1024 -c
check "rc: -e (CQ events), 4096 B, -m 512 -l 3" pair rce 4096 500 -e -m 512 -l 3
check "uc: 4096 B, -m 1024" pair uc 4096 300 -m 1024
check "uc: 65536 B, -m 1024, -c, -e" pair uc64k 65536 100 -m 1024 -c -e
check "uc: -e, 1000 B, -r 8" pair uce 1000 500 -e -r 8
check "ud: the local address line as ibv_ud_pingpong's (\"PSN ...: GID\")" \
	grep -Eq "^  local address:  LID 0x0000, QPN $HEX6, PSN $HEX6: GID " "$TMP/ud.srv.out"
check "ud: -e, 100 B, -r 2" pair ude 100 500 -T ud -e -r 2
check "ud: long options (--size --iters --gid-idx --chk --events --rx-depth)" \
	pair udlong 512 300 --type=ud --gid-idx=0 --chk --events --rx-depth=16

# ABI v2 (VRDMA_RINGS=1): libvrdma's CQs and QPs are rings in its memory,
# posted with a doorbell bit, polled without a message; the same runs,
# data checked, and the daemon took each side's WQEs from rings (a send
# and a receive per message each way, and the receives posted ahead).
ring_wqes() { ctl stats --json | jq -c '[.vms[] | {(.name): .device.ring_wqes}] | add'; }
rings_used() {	# ITERS
	local r
	r=$(ring_wqes)
	echo "    WQEs taken from rings: $r"
	jq -e --argjson n "$1" '.alpha >= 2 * $n and .beta >= 2 * $n' <<< "$r" > /dev/null
}
check "rings: none before VRDMA_RINGS=1" eval '[ "$(ring_wqes)" = "{\"alpha\":0,\"beta\":0}" ]'
export VRDMA_RINGS=1
check "rings: rc 4096 B, -c" pair rrc 4096 300 -c
check "rings: both sides' WQEs came from rings (stats: ring_wqes)" rings_used 300
check "rings: rc 65536 B, -m 1024 (64 packets a message), -c" pair rrc64k 65536 100 -m 1024 -c
check "rings: uc 4096 B, -m 1024, -c" pair ruc 4096 300 -m 1024 -c
check "rings: ud 1024 B, -c" pair rud 1024 300 -T ud -c
# CQ events on rings: the arm word and its bit, the event queue's eventfd
check "rings: rc -e (CQ events), 4096 B, -m 512 -l 3, -c" pair rrce 4096 500 -e -m 512 -l 3 -c
check "rings: uc -e, 1000 B, -r 8" pair ruce 1000 500 -e -r 8
check "rings: ud -e, 100 B, -r 2" pair rude 100 500 -T ud -e -r 2
unset VRDMA_RINGS

# -T srq (ibv_srq_pingpong): -q RC QPs on one SRQ, an address line per QP
# each way, the SRQ's receives taken by whichever QP a message arrives on.
# max_qp 4: 3 QPs and the SRQ's slot.
srq_ok() {	# NAME SIZE ITERS NQP
	local name=$1 size=$2 iters=$3 q=$4 side f
	for side in srv cli; do
		f=$TMP/$name.$side
		if [ -s "$f.err" ]; then echo "    $name $side stderr:"; sed 's/^/      /' "$f.err" | head -20; return 1; fi
		[ "$(grep -Ec "$LOCAL_RE" "$f.out")" = "$q" ] && [ "$(grep -Ec "$REMOTE_RE" "$f.out")" = "$q" ] &&
			grep -q "^$((size * iters * 2)) bytes in " "$f.out" && grep -q "^$iters iters in " "$f.out" &&
			[ "$(wc -l < "$f.out")" = $((2 * q + 2)) ] ||
			{ echo "    $name $side stdout:"; sed 's/^/      /' "$f.out"; return 1; }
	done
	[ "$SRC" = 0 ] && [ "$CRC" = 0 ] || { echo "    exit codes: server $SRC, client $CRC"; return 1; }
	grep -m1 usec/iter "$TMP/$name.cli.out" | sed 's/^/    /'
}
srq_pair() {	# NAME SIZE ITERS NQP ARGS...
	local name=$1 size=$2 iters=$3 q=$4
	shift 4
	run_pair "$name" "-T srq -q $q -s $size -n $iters $*" "-T srq -q $q -s $size -n $iters $*"
	srq_ok "$name" "$size" "$iters" "$q"
}
check "srq: -q 3, 4096 B, 300 iterations" srq_pair srq 4096 300 3
check "srq: -q 1, 65536 B, -m 1024, -e, -r 4" srq_pair srq1 65536 50 1 -m 1024 -e -r 4
# ABI v2: the SRQ a ring of its own (CREATE_SRQ_RING), the QPs' send rings
# beside it; the SRQ's receives were taken from its ring (srq_wqes).
srq_wqes() { ctl stats --json | jq -c '[.vms[] | {(.name): .device.srq_wqes}] | add'; }
srq_ring_used() {	# BEFORE ITERS
	local r
	r=$(srq_wqes)
	echo "    SRQ WQEs: $1 before, $r after"
	jq -e --argjson b "$1" --argjson n "$2" \
		'.alpha - $b.alpha >= $n and .beta - $b.beta >= $n' <<< "$r" > /dev/null
}
SRQ_BEFORE=$(srq_wqes)
export VRDMA_RINGS=1
check "rings: srq -q 3, 4096 B, 300 iterations" srq_pair rsrq 4096 300 3
check "rings: srq -q 1, 65536 B, -m 1024, -e, -r 4" srq_pair rsrq1 65536 50 1 -m 1024 -e -r 4
check "rings: the SRQs' receives came from their rings (stats: srq_wqes)" srq_ring_used "$SRQ_BEFORE" 350
unset VRDMA_RINGS

# -c on the server only: the client sent its buffer as it was (0x7b, no
# zero at each page's start), so every page is reported as rdma-core does,
# and (unlike rdma-core) the exit code says so.
chk_catches() {
	run_pair chkbad "-s 10000 -n 10 -c" "-s 10000 -n 10"
	[ "$SRC" = 1 ] && [ "$CRC" = 0 ] && [ ! -s "$TMP/chkbad.srv.err" ] &&
	[ "$(grep -c '^invalid data in page [0-2]$' "$TMP/chkbad.srv.out")" = 3 ] ||
		{ echo "    exit codes $SRC $CRC"; sed 's/^/    /' "$TMP/chkbad.srv.out" "$TMP/chkbad.srv.err"; return 1; }
}
check "-c on the server alone: \"invalid data in page N\" x 3, exit 1" chk_catches

# TCP over the netns's own address, not loopback.
run_pair addr "-n 100" "-n 100" 10.206.0.1
check "rc: exchange over 10.206.0.1" run_ok addr 4096 100

# Polling yields: an empty poll gives the core up (sched_yield) unless
# VRDMA_POLL_YIELD=0, and the daemon's workers yield while they spin. strace
# counts the calls: the client's own, and the daemon's while it serves them
# (LeakSanitizer cannot run under ptrace: no leak check for the traced client).
# poll_yields NAME VALUE: a 4096 B RC run, the client under strace with
# VRDMA_POLL_YIELD=VALUE; YIELDS = its sched_yield calls, DYIELDS the daemon's.
poll_yields() {
	local name=$1 tpid
	strace -f -qq -e trace=sched_yield -o "$TMP/$name.dstrace" -p "$DPID" &
	tpid=$!
	sleep 0.5	# attached to every thread
	CLI_WRAP=(strace -f -qq -e trace=sched_yield -o "$TMP/$name.strace"
		env VRDMA_POLL_YIELD="$2" ASAN_OPTIONS=detect_leaks=0)
	run_pair "$name" "-n 300" "-n 300"
	CLI_WRAP=()
	kill -INT "$tpid" 2>/dev/null || true
	wait "$tpid" || true
	YIELDS=$(grep -c 'sched_yield(' "$TMP/$name.strace" || true)
	DYIELDS=$(grep -c 'sched_yield(' "$TMP/$name.dstrace" || true)
	echo "    client sched_yield calls: $YIELDS, daemon's: $DYIELDS"
}
yields_by_default() {
	poll_yields yield ""
	run_ok yield 4096 300 && [ "$YIELDS" -gt 0 ] && [ "$DYIELDS" -gt 0 ]
}
spins_with_zero() {
	poll_yields spin 0
	run_ok spin 4096 300 && [ "$YIELDS" = 0 ]
}
check "rc: an empty poll yields the CPU; the daemon's workers yield as they spin" \
	yields_by_default
check "rc: VRDMA_POLL_YIELD=0: the client never yields" spins_with_zero

# Errors: a clear line on stderr, exit 1, no hang.
fails() {	# fails NAME PATTERN ARGS...: exit 1 and PATTERN on stderr
	local name=$1 pat=$2 rc=0
	shift 2
	pp "$@" > "$TMP/$name.out" 2> "$TMP/$name.err" || rc=$?
	[ "$rc" = 1 ] && grep -q "$pat" "$TMP/$name.err" && ! grep -q 'Sanitizer\|runtime error' "$TMP/$name.err" ||
		{ echo "    exit $rc; stderr:"; sed 's/^/      /' "$TMP/$name.err" | head; return 1; }
}
check "a socket that does not exist: exit 1, \"Couldn't get context\"" \
	fails nosock "Couldn't get context for $TMP/nothere.sock: No such file or directory" \
	-d "$TMP/nothere.sock"
check "no -d: exit 1, says to give the socket" fails nodev "with -d SOCKET"
check "-T xx: exit 1" fails badtype "invalid transport 'xx'" -d "$TMP/alpha.sock" -T xx
check "-m 1000: exit 1" fails badmtu "invalid MTU '1000'" -d "$TMP/alpha.sock" -m 1000
check "-s abc: exit 1" fails badsize "invalid value 'abc' for -s" -d "$TMP/alpha.sock" -s abc
check "an unknown flag: exit 1 and the usage" fails badflag "Usage:" -d "$TMP/alpha.sock" -Z
check "-m 4096 above the port's MTU (1500-byte NIC: 1024): exit 1" \
	fails bigmtu "above the port's maximum MTU 1024" -d "$TMP/alpha.sock" -m 4096
check "ud: -s 2048 above the port MTU: exit 1, rdma-core's words" \
	fails udbig "Requested size larger than port MTU (1024)" -d "$TMP/alpha.sock" -T ud -s 2048
check "-g 5 (an empty GID entry): exit 1" \
	fails badgid "can't read sgid of index 5" -d "$TMP/alpha.sock" -g 5
check "srq: -q 3 -r 2 (fewer receives than QPs): exit 1, rdma-core's words" \
	fails srqdepth "rx_depth 2 is too small for 3 QPs" -d "$TMP/alpha.sock" -T srq -q 3 -r 2
check "-q without -T srq: exit 1" fails qnosrq "is an option of -T srq only" -d "$TMP/alpha.sock" -q 2
check "srq: -q 4 (the SRQ needs a slot of max_qp 4): exit 1" \
	fails srqslots "Couldn't create QP\[3\]" -d "$TMP/alpha.sock" -T srq -q 4
check "a client with no server: exit 1, \"Couldn't connect\"" \
	fails noserver "Couldn't connect to 127.0.0.1:17999" -d "$TMP/beta.sock" -p 17999 127.0.0.1
help_ok() { pp -h | grep -q -- '--ib-dev=<socket>'; }
check "-h: the usage on stdout, exit 0" help_ok

# running OUT: the client's exchange is done (its remote address is out),
# then a moment of ping-pong.
running() {
	local i
	for i in $(seq 100); do
		grep -q '^  remote address:' "$1" && break
		sleep 0.05
	done
	sleep 0.5
}

# The client dies in the middle: the server gives up (RC: retries run out;
# UC: no completion for --timeout) with exit 1, and does not hang.
peer_dies() {
	local type=$1 spid cpid rc=0 t0 t1
	PORT=$((PORT + 1))
	pp -d "$TMP/alpha.sock" -p "$PORT" -T "$type" -n 100000000 --timeout 2 \
		> "$TMP/die.$type.srv.out" 2> "$TMP/die.$type.srv.err" &
	spid=$!
	wait_listen "$NSA" "$PORT"
	# no timeout(1) in between: $! is the client itself
	ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/beta.sock" -p "$PORT" -T "$type" \
		-n 100000000 127.0.0.1 > "$TMP/die.$type.cli.out" 2>&1 &
	cpid=$!
	running "$TMP/die.$type.cli.out"
	kill -KILL "$cpid"
	{ wait "$cpid"; } 2> /dev/null || true
	t0=$(date +%s)
	wait "$spid" || rc=$?
	t1=$(date +%s)
	sed 's/^/    server: /' "$TMP/die.$type.srv.err"
	[ "$rc" = 1 ] && [ $((t1 - t0)) -le 5 ] && grep -q 'Failed status\|No completion in 2 s' "$TMP/die.$type.srv.err"
}
check "rc: the client is killed mid-run: the server fails within 5 s" peer_dies rc
check "uc: the client is killed mid-run: the server fails within 5 s" peer_dies uc

# rdma-core's exchange, byte for byte, against a stand-in for the other
# side: 52 bytes "LID:QPN:PSN:GID" (the GID's 16 bytes in hex, in order)
# with the NUL each way, then the client's 5 bytes "done" with the NUL. The
# stand-in has no QP, so the run then fails (exit 1) without a hang.
cat > "$TMP/peer.py" <<'EOP'
import re, socket, sys
role, port = sys.argv[1], int(sys.argv[2])
mine = b"0000:000011:abcdef:00000000000000000000ffff0ace000c\0"
form = re.compile(rb"[0-9a-f]{4}:[0-9a-f]{6}:[0-9a-f]{6}:[0-9a-f]{32}\0")
def exactly(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            sys.exit("short read: %r" % b)
        b += c
    return b
if role == "client":
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(mine)
    theirs = exactly(s, 52)
    s.sendall(b"done\0")
    s.close()
else:
    l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port))
    l.listen(1)
    print("listening", flush=True)
    s, _ = l.accept()
    s.settimeout(10)
    theirs = exactly(s, 52)
    s.sendall(mine)
    if exactly(s, 5) != b"done\0":
        sys.exit("no done")
    s.settimeout(2)
    if s.recv(1) != b"":
        sys.exit("more than done")
if not form.fullmatch(theirs):
    sys.exit("not rdma-core's form: %r" % theirs)
print(theirs[:-1].decode())
EOP

# wire_matches NAME GIDHEX: what went on the wire is the local address
# printed, and the stand-in's address is printed as the remote one.
wire_matches() {
	local out=$TMP/$1.out wire
	wire=$(cat "$TMP/$1.wire")
	grep -q "^  local address:  LID 0x${wire:0:4}, QPN 0x${wire:5:6}, PSN 0x${wire:12:6}[,:] GID " "$out" &&
	[ "${wire:19}" = "$2" ] &&
	grep -q '^  remote address: LID 0x0000, QPN 0x000011, PSN 0xabcdef, GID ::ffff:10.206.0.12$' "$out" ||
		{ echo "    wire: $wire"; sed 's/^/    /' "$out" "$TMP/$1.err"; return 1; }
}
wire_server() {	# our server, the stand-in client
	local spid rc=0
	PORT=$((PORT + 1))
	pp -d "$TMP/alpha.sock" -p "$PORT" -T "$1" --timeout 1 > "$TMP/ws$1.out" 2> "$TMP/ws$1.err" &
	spid=$!
	wait_listen "$NSA" "$PORT"
	ip netns exec "$NSA" "$PY" "$TMP/peer.py" client "$PORT" > "$TMP/ws$1.wire" || return 1
	wait "$spid" || rc=$?
	[ "$rc" = 1 ] && wire_matches "ws$1" 00000000000000000000ffff0ace000b
}
wire_client() {	# our client, the stand-in server
	local ppid rc=0
	PORT=$((PORT + 1))
	ip netns exec "$NSA" "$PY" "$TMP/peer.py" server "$PORT" > "$TMP/wc$1.wire" &
	ppid=$!
	wait_listen "$NSA" "$PORT"
	pp -d "$TMP/beta.sock" -p "$PORT" -T "$1" --timeout 1 127.0.0.1 > "$TMP/wc$1.out" 2> "$TMP/wc$1.err" || rc=$?
	wait "$ppid" || return 1
	sed -i 1d "$TMP/wc$1.wire"	# "listening"
	[ "$rc" = 1 ] && wire_matches "wc$1" 00000000000000000000ffff0ace000c
}
check "rc server: the exchange is rdma-core's, byte for byte" wire_server rc
check "rc client: the exchange is rdma-core's, byte for byte" wire_client rc
check "ud server: the exchange is rdma-core's, byte for byte" wire_server ud
check "ud client: the exchange is rdma-core's, byte for byte" wire_client ud

# The daemon goes away under a running pair: both sides fail at once.
daemon_dies() {
	local spid cpid src=0 crc=0
	PORT=$((PORT + 1))
	pp -d "$TMP/alpha.sock" -p "$PORT" -n 100000000 > "$TMP/dd.srv.out" 2> "$TMP/dd.srv.err" &
	spid=$!
	wait_listen "$NSA" "$PORT"
	pp -d "$TMP/beta.sock" -p "$PORT" -e -n 100000000 127.0.0.1 > "$TMP/dd.cli.out" 2> "$TMP/dd.cli.err" &
	cpid=$!
	running "$TMP/dd.cli.out"
	stop_daemon
	wait "$spid" || src=$?
	wait "$cpid" || crc=$?
	sed 's/^/    server: /' "$TMP/dd.srv.err"
	sed 's/^/    client: /' "$TMP/dd.cli.err"
	[ "$src" = 1 ] && [ "$crc" = 1 ] && grep -q 'vrdmad closed the connection' "$TMP/dd.srv.err" &&
		grep -q 'vrdmad closed the connection' "$TMP/dd.cli.err"
}
check "the daemon stops under a running pair (poll and -e): both exit 1" daemon_dies
check "the daemon exited 0" test "$RC" = 0
no_sanitizer_report() { ! grep -l "Sanitizer\|runtime error" "$DLOG" "$TMP"/*.out "$TMP"/*.err; }
check "no sanitizer report from the daemon or any vrdma-pingpong" no_sanitizer_report
summary
