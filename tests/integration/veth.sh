#!/bin/bash
# Two daemons, one at each end of a link: the AF_XDP transmit path, the wire
# between two RoCE stacks, a lossy link, and the host's own traffic beside it.
#
#   netns vrA-ID              netns vrC-ID (bridge)              netns vrB-ID
#   +---------------------+   +---------------------------+   +---------------------+
#   | vrdmad (workers=1)  |   |  vA-IDp --- br0 --- vB-IDp|   | vrdmad (workers=2)  |
#   |  vm alpha .11       |   |  capture here; netem on   |   |  vm beta .12        |
#   | vA-ID 10.206.0.1/.11|<->|  both ports               |<->| vB-ID 10.206.0.2/.12|
#   +---------------------+   +---------------------------+   +---------------------+
#   vrdma_test (libvrdma) drives both VMs; the VMs' GIDs are addresses of the
#   ends too, so the kernels answer ARP for them (as a guest would).
set -e
source "$(dirname "$0")/../lib.sh"
: "${VRDMA_TEST:?set VRDMA_TEST to the vrdma_test binary}"
NETEM_MIB=${NETEM_MIB:-256}

# beta is B's second VM, so its worker (1) has no NIC queue and hands its
# frames to worker 0 (two_daemons, lib.sh).
two_daemons 10.206.0
MAC_A=$(mac_of "$NSA" "$IFA")
MAC_B=$(mac_of "$NSB" "$IFB")

echo "veth: two daemons across a bridge ($NSA, $NSC, $NSB)"
start_daemon "$CONF_A"
start_daemon_b "$CONF_B"

no_sanitizer_report() { ! grep -q "Sanitizer\|runtime error" "$DLOG" "$DLOG_B"; }

# vrdma_test (vtest, lib.sh) in A's namespace drives both VMs: libvrdma
# finds B's MAC in the neighbour table and A's as the MAC of the interface
# holding A's GID (the capture below checks both).

# Every RoCE frame one daemon sent reached the other (a clean link).
port() { jq -r "$2" < "$1"; }
frames_match() {
	local ok=0
	frames_agree || ok=1
	echo "    A sent $ATX, B got $BRX; B sent $BTX, A got $ARX"
	[ $ok = 0 ] && [ "$ATX" -gt 0 ] && [ "$BTX" -gt 0 ]
}
# B's worker 1 owns no NIC queue (veth has one): its frames went to worker 0.
b_handed_over() { [ "$(port "$TMP/sb.json" .port.handed_over)" -gt 0 ]; }

check "vrdma_test 1-29 between two daemons" vtest_ok $(seq 29)
check "every frame sent arrived, both ways" frames_match
check "B's second worker handed its frames to the queue's worker" b_handed_over
# Fast registration and memory windows across the wire: B registers (REG_MR)
# or binds a window (BIND_MW), A reads and writes through the key, B or A
# invalidates it, A's next access is a remote access error.
check "vrdma_test 33-34 (fast registration, memory windows) between two daemons" vtest_ok 33 34

# ---- the perf tools between the daemons ----
: "${VRDMA_PINGPONG:=$HERE/../build/asan/vrdma-pingpong}"
: "${VRDMA_PERF:=$HERE/../build/asan/vrdma-perf}"
pp() {	# TYPE SIZE: vrdma-pingpong both ways with every byte checked
	tool_pair $((19100 + NTEST)) "$VRDMA_PINGPONG" -T "$1" -g 0 -s "$2" -n 200 -c &&
	grep -Eq '^200 iters in [0-9.]+ seconds' "$TMP/cli.out"
}
check "vrdma-pingpong rc 64 KiB (-c) between the daemons" pp rc 65536
check "vrdma-pingpong uc 4 KiB (-c) between the daemons" pp uc 4096
check "vrdma-pingpong ud 1 KiB (-c) between the daemons" pp ud 1024
perf_ok() {	# TEST ARGS...
	tool_pair $((19100 + NTEST)) "$VRDMA_PERF" "$@" -x 0 &&
	grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$TMP/cli.out"
}
for t in write_bw read_bw send_bw; do
	check "vrdma-perf $t 64 KiB between the daemons" perf_ok "$t" -s 65536 -n 500
done
for t in write_lat read_lat send_lat; do
	check "vrdma-perf $t 4 KiB between the daemons" perf_ok "$t" -s 4096 -n 500
done

# ---- what is on the wire ----
NO_PAYLOAD_GUESSES=$(no_payload_guesses)
capture_ok() {
	local pcap=$TMP/wire.pcap n bad ib toB toA i tpid cpid
	ip netns exec "$NSC" tshark -i br0 -f "udp port 4791" -w "$pcap" > "$TMP/tshark.log" 2>&1 &
	tpid=$!
	# vrdmactl capture on daemon A at the same time: it must see what the wire does
	# (no LeakSanitizer in an interrupted vrdmactl: see capture.sh)
	ip netns exec "$NSA" env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		timeout -s INT 120 "$VRDMACTL" -s "$TMP/ctl.sock" capture "$TMP/daemon.pcap" 2> "$TMP/dcap.err" &
	cpid=$!
	started() { grep -q "^Capturing on" "$TMP/tshark.log" && grep -q "^capturing into" "$TMP/dcap.err"; }
	for i in $(seq 100); do started && break; sleep 0.1; done
	started || echo "    a capture did not start in 10 s: $(cat "$TMP/tshark.log" "$TMP/dcap.err")"
	vtest 20 21 22 23 24 > "$TMP/cap.out" 2>&1 || { kill "$tpid" "$cpid"; cat "$TMP/cap.out"; return 1; }
	sleep 0.5
	kill -INT "$tpid" "$cpid"
	wait "$tpid" || true
	wait "$cpid" || { echo "    vrdmactl capture failed: $(cat "$TMP/dcap.err")"; return 1; }
	t() { tshark -r "$pcap" $NO_PAYLOAD_GUESSES "$@" 2>/dev/null | wc -l; }
	n=$(t)
	bad=$(t -Y _ws.malformed)
	ib=$(t -Y infiniband)
	toB=$(t -Y "ip.dst == 10.206.0.12 && eth.dst == $MAC_B")
	toA=$(t -Y "ip.dst == 10.206.0.11 && eth.dst == $MAC_A")
	echo "    captured $n frames: $ib InfiniBand, $bad malformed, $toB to B and $toA to A with the right MAC"
	[ "$n" -gt 100 ] && [ "$bad" = 0 ] && [ "$ib" = "$n" ] && [ $((toA + toB)) = "$n" ] &&
		[ "$toA" -gt 0 ] && [ "$toB" -gt 0 ]
}
check "a capture on the bridge: valid RoCEv2, right MACs, both ways" capture_ok
# The same frames, in the same order each way, byte for byte (the bridge's
# capture is pcapng, the daemon's pcap: scapy reads both).
daemon_capture_ok() {
	"$PY" - "$TMP/wire.pcap" "$TMP/daemon.pcap" <<'EOP'
import sys
from scapy.all import rdpcap, IP
def each_way(f):
    ways = {}
    for p in rdpcap(f):
        if IP in p:
            ways.setdefault(p[IP].dst, []).append(bytes(p))
    return ways
wire, daemon = each_way(sys.argv[1]), each_way(sys.argv[2])
print("    wire: %s; daemon A: %s" % ({k: len(v) for k, v in wire.items()},
                                      {k: len(v) for k, v in daemon.items()}))
sys.exit(0 if wire == daemon and len(wire) == 2 else 1)
EOP
}
check "vrdmactl capture on daemon A: the wire's frames each way, byte for byte" daemon_capture_ok

# ---- the hosts' own traffic while RDMA runs ----
# A TCP transfer checked by SHA-256, and ping both ways, beside a bulk run.
tcp_transfer() {
	ip netns exec "$NSB" "$PY" -c '
import hashlib, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.206.0.2", 15201)); s.listen(1); s.settimeout(60)
c, _ = s.accept(); h = hashlib.sha256()
while True:
    d = c.recv(1 << 16)
    if not d: break
    h.update(d)
print(h.hexdigest())' > "$TMP/tcp.got" &
	local spid=$! want
	wait_listen "$NSB" 15201 || { echo "    the TCP receiver did not listen in 5 s"; return 1; }
	want=$(ip netns exec "$NSA" "$PY" -c '
import hashlib, os, socket
data = os.urandom(32 << 20); s = socket.create_connection(("10.206.0.2", 15201), timeout=60)
s.sendall(data); s.close(); print(hashlib.sha256(data).hexdigest())')
	wait "$spid"
	[ "$want" = "$(cat "$TMP/tcp.got")" ]
}
host_traffic_ok() {
	# enough to outlast the host traffic (1 GiB: ~7 s here under ASan)
	VRDMA_TEST_BULK_MIB=1024 vtest 30 > "$TMP/bulk.out" 2>&1 &
	local vpid=$! pa pb ok=0 drops0 drops lost
	drops0=$(link_drops)
	sleep 0.3
	ip netns exec "$NSA" ping -q -c 40 -i 0.02 10.206.0.2 > "$TMP/pingA" & pa=$!
	ip netns exec "$NSB" ping -q -c 40 -i 0.02 10.206.0.1 > "$TMP/pingB" & pb=$!
	tcp_transfer || { echo "    TCP transfer corrupted or failed"; ok=1; }
	wait "$pa" || true
	wait "$pb" || true
	kill -0 "$vpid" 2>/dev/null || { echo "    the RDMA run ended before the host traffic did"; ok=1; }
	wait "$vpid" || { tail "$TMP/bulk.out"; ok=1; }
	drops=$(($(link_drops) - drops0))
	grep -h 'packet loss' "$TMP/pingA" "$TMP/pingB" | sed 's/^/    /'
	lost=$(awk '/packets transmitted/ { l += $1 - $4 } END { print l + 0 }' "$TMP/pingA" "$TMP/pingB")
	echo "    $lost ping(s) lost; the veths and bridge ports dropped $drops frame(s) meanwhile"
	# The bulk run can fill the 256-frame ring of a veth with an XDP
	# program (the bridge port's peer), which then drops whatever comes,
	# as a full link would: a lost ping must be one of those drops, and
	# no more than 4 of a side's 40 (XDP passing the kernel's traffic).
	[ $ok = 0 ] && [ "$lost" -le "$drops" ] &&
		awk '/packets transmitted/ { if ($1 - $4 > 4) bad = 1 } END { exit bad }' "$TMP/pingA" "$TMP/pingB"
}
# frames the two ends and the two bridge ports dropped so far (rx + tx)
link_drops() {
	local ns dev n=0 d
	for ns_dev in "$NSA $IFA" "$NSB $IFB" "$NSC ${IFA}p" "$NSC ${IFB}p"; do
		read -r ns dev <<< "$ns_dev"
		d=$(ip -n "$ns" -s -j link show "$dev" | jq '.[0].stats64 | .rx.dropped + .tx.dropped')
		n=$((n + d))
	done
	echo "$n"
}
check "ping both ways and 32 MiB of TCP, intact, beside RDMA" host_traffic_ok

# ---- a bad link ----
# Each direction loses 1 %, duplicates 1 %, reorders 1 % and corrupts 0.1 % of
# frames: with netem on both bridge ports where the kernel has sch_netem;
# where it has not (this machine's), the bridge makes way for impair, a relay
# between the two ports that does the same. RC must still deliver every byte.
have_netem() {
	ip netns exec "$NSC" tc qdisc add dev lo root netem delay 0 2> /dev/null &&
		ip netns exec "$NSC" tc qdisc del dev lo root
}
IMPAIR_PID=
impair_on() {
	local dev
	if have_netem; then
		for dev in "${IFA}p" "${IFB}p"; do
			ip netns exec "$NSC" tc qdisc add dev "$dev" root netem limit 10000 \
				delay 1ms reorder 99% loss 1% duplicate 1% corrupt 0.1%
		done
		echo "    netem on ${IFA}p and ${IFB}p"
		return
	fi
	impair_relay
	echo "    no sch_netem in this kernel: impair relays ${IFA}p <-> ${IFB}p"
}
impair_on
check "RC $NETEM_MIB MiB bit-exact through loss, duplication, reordering, corruption" \
	bulk_ok "$NETEM_MIB"
check "the losses were recovered by retransmission" recovered
impair_counted() {
	[ -n "$IMPAIR_PID" ] || return 0
	kill -TERM "$IMPAIR_PID"
	wait "$IMPAIR_PID" || true
	grep '^impair: forwarded' "$TMP/impair.log" | sed 's/^/    /'
	grep -Eq 'forwarded=[1-9].* lost=[1-9].* duplicated=[1-9].* reordered=[1-9].* corrupted=[1-9]' \
		"$TMP/impair.log"
}
check "frames were lost, duplicated, reordered and corrupted on the way" impair_counted
dropped_bad() {
	local a b
	a=$(ctl stats --json | jq '.port.drops | .icrc + .udp_length + .ip_checksum + .ip_header + .ip_length + .short + .pad + .opcode + .header_length + .bth_version')
	b=$(ctlb stats --json | jq '.port.drops | .icrc + .udp_length + .ip_checksum + .ip_header + .ip_length + .short + .pad + .opcode + .header_length + .bth_version')
	echo "    corrupted frames dropped: $a at A, $b at B"
	[ $((a + b)) -gt 0 ]
}
check "corrupted frames were counted and dropped" dropped_bad

check "both daemons exit 0 on SIGTERM" both_exit_0
check "no sanitizer report" no_sanitizer_report
summary
