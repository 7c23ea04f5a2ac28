#!/bin/bash
# `make bench`: RoCEv2 datagrams steered by XDP into vrdmad, against the same
# datagrams delivered by the kernel UDP stack. A benchmark, not a test: no
# thresholds; it exits non-zero only if something broke.
#
#   netns vrA-ID                                   netns vrB-ID
#   +----------------------------------+           +---------------------+
#   | vrdmad, XDP + AF_XDP on vA-ID    |           |                     |
#   | vA-ID 10.220.0.1  served GID     |<--veth--->| vB-ID 10.220.0.2    |
#   |       10.220.0.3  not served:    |           | udp_blast (sendmmsg)|
#   |       a kernel socket drains 4791|           |                     |
#   +----------------------------------+           +---------------------+
#
# steered: blast to 10.220.0.1:4791, received = port.rx_frames delta: frames
#          the daemon took from its sockets and ran through the codec. The
#          payload is zeros (a BTH for RC SEND_FIRST), so each parses up to
#          the ICRC, which it fails (the kernel picks the IP ID, which the
#          ICRC covers): the full receive-side parse cost, counted as a drop.
# kernel:  blast to 10.220.0.3:4791, received = UdpInDatagrams + UdpRcvbufErrors
#          delta (what reached the socket, read or dropped for a full buffer).
# Both divide by the sender's own elapsed time.
#
# The machine has 2 cores. The sender, the veth NAPI softirq (XDP and the UDP
# stack run there, mostly on the sender's core) and the daemon's worker or the
# drain all share them, so these numbers are a same-run comparison, not line
# rate. Nothing is pinned: that keeps it simple and equally unfair to both.
#
# Environment: VRDMAD, VRDMACTL, BPF_OBJ, UDP_BLAST (set by the Makefile);
# BENCH_SECONDS (3) and BENCH_SIZES ("64 1024 3000") to vary the run.
set -e
source "$(dirname "$0")/../lib.sh"
: "${UDP_BLAST:?set UDP_BLAST to the udp_blast binary}"
SECS=${BENCH_SECONDS:-3}
SIZES=${BENCH_SIZES:-64 1024 3000}
SERVED=10.220.0.1
UNSERVED=10.220.0.3

setup_pair "$SERVED/24 $UNSERVED/24" "10.220.0.2/24"
# 3000 B payloads must not fragment (XDP passes fragments to the kernel), and
# MTU 3100 still fits one frame in one 4 KiB UMEM chunk: no multi-buffer.
ip -n "$NSA" link set "$IFA" mtu 3100
ip -n "$NSB" link set "$IFB" mtu 3100
CONF=$(write_conf "" "[vm bench]
gid = $SERVED
socket = $TMP/bench.sock" vrdmad.conf)
sed -i 's/^log_level = debug/log_level = info/' "$CONF"
start_daemon "$CONF"

# The drain only has to read: the kernel counts UdpInDatagrams at recvmsg.
ip netns exec "$NSA" "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 4791))
print("ready", flush=True)
buf = bytearray(65536)
while True:
    s.recv_into(buf)' "$UNSERVED" > "$TMP/drain.out" &
DRAIN=$!
disown	# no "Killed" notice when the trap ends it
trap 'kill -KILL $DRAIN 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 50); do grep -q ready "$TMP/drain.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$TMP/drain.out" || { echo "bench: the UDP drain did not start" >&2; exit 1; }
# Resolve ARP first, so no blast starts with a neighbour queue.
ip netns exec "$NSB" ping -c 1 -W 2 -q "$SERVED" > /dev/null
ip netns exec "$NSB" ping -c 1 -W 2 -q "$UNSERVED" > /dev/null

kernel_in() {
	ip netns exec "$NSA" nstat -asz UdpInDatagrams UdpRcvbufErrors |
		awk '/^Udp/ { n += $2 } END { print n + 0 }'
}
steer_in() { jstat '.port.rx_frames'; }
xdp() { jstat ".xdp.$1"; }

# run PATH SIZE ADDR COUNTER XDP_STAT: one blast; sets SENT_PPS RX_PPS XDP_PPS.
run() {
	local size=$2 addr=$3 c0 x0 out secs
	c0=$($4); x0=$(xdp "$5")
	out=$(ip netns exec "$NSB" "$UDP_BLAST" "$addr" 4791 "$size" "$SECS")
	sleep 0.3	# let the worker and the drain empty their rings
	secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<< "$out")
	SENT_PPS=$(sed -n 's/.*pps=\([0-9]*\).*/\1/p' <<< "$out")
	RX_PPS=$(awk -v d="$(( $($4) - c0 ))" -v s="$secs" 'BEGIN { printf "%.0f", d / s }')
	XDP_PPS=$(awk -v d="$(( $(xdp "$5") - x0 ))" -v s="$secs" 'BEGIN { printf "%.0f", d / s }')
	ROWS+=("$(awk -v p="$1" -v b="$size" -v t="$SENT_PPS" -v r="$RX_PPS" -v x="$XDP_PPS" \
		'BEGIN { printf "%-8s %9d %11.3f %13.3f %15.2f %10.3f", p, b,
			t / 1e6, r / 1e6, r * b * 8 / 1e9, x / 1e6 }')")
}

echo "bench: XDP steering into vrdmad vs the kernel UDP stack, ${SECS} s per run ($NSA, $NSB)"
ROWS=()
LINES=()
for size in $SIZES; do
	run steered "$size" "$SERVED" steer_in redirected
	steer=$RX_PPS
	run kernel "$size" "$UNSERVED" kernel_in passed
	kernel=$RX_PPS
	LINES+=("bench: steer_${size}B_pps=$steer"
		"bench: kernel_${size}B_pps=$kernel"
		"bench: steer_vs_kernel_${size}B ratio=$(awk -v s="$steer" -v k="$kernel" \
			'BEGIN { printf "%.2f", (k > 0 ? s / k : 0) }')")
done

echo
printf '%-8s %9s %11s %13s %15s %10s\n' path "payload B" "sender Mpps" "received Mpps" \
	"received Gb/s" "XDP Mpps"
printf '%s\n' "${ROWS[@]}"
echo "(XDP Mpps: redirected for steered, passed for kernel; Gb/s counts UDP payload only)"
echo
printf '%s\n' "${LINES[@]}"

stop_daemon
[ "$RC" = 0 ] || { echo "bench: vrdmad exited with $RC; its log:" >&2; cat "$DLOG" >&2; exit 1; }
