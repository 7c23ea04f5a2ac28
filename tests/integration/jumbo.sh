#!/bin/bash
# Path MTU 4096 end to end: two daemons on a 9000-MTU link, AF_XDP
# multi-buffer (frames span two 4 KiB UMEM chunks) on receive and transmit.
#
#   netns vrA-ID              netns vrC-ID (bridge)              netns vrB-ID
#   +---------------------+   +---------------------------+   +---------------------+
#   | vrdmad, MTU 9000    |   |  vA-IDp --- br0 --- vB-IDp|   | vrdmad, MTU 9000,   |
#   |  vm alpha .11       |   |  capture here; impair     |   |  workers = 2        |
#   |                     |   |  relays here at the end   |   |  vm beta .12        |
#   | vA-ID 10.207.0.1/.11|<->|                           |<->| vB-ID 10.207.0.2/.12|
#   +---------------------+   +---------------------------+   +---------------------+
set -e
source "$(dirname "$0")/../lib.sh"
: "${VRDMA_TEST:?set VRDMA_TEST to the vrdma_test binary}"
: "${VRDMA_PINGPONG:=$HERE/../build/asan/vrdma-pingpong}"
: "${VRDMA_PERF:=$HERE/../build/asan/vrdma-perf}"
LOSSY_MIB=${LOSSY_MIB:-64}

# beta is B's second VM, so its worker (1) has no NIC queue: its frames go
# to worker 0 through a ring and are copied into two UMEM chunks there, and
# what arrives for it is handed over, its two buffers made one.
two_daemons 10.207.0
ip -n "$NSA" link set "$IFA" mtu 9000
ip -n "$NSB" link set "$IFB" mtu 9000
ip -n "$NSC" link set "${IFA}p" mtu 9000
ip -n "$NSC" link set "${IFB}p" mtu 9000

echo "jumbo: path MTU 4096 between two daemons on a 9000-MTU link ($NSA, $NSC, $NSB)"
start_daemon "$CONF_A"
start_daemon_b "$CONF_B"

no_sanitizer_report() { ! grep -q "Sanitizer\|runtime error" "$DLOG" "$DLOG_B"; }

# ---- what the port says ----
status_jumbo() {
	local j
	j=$(ctl status --json) && jq -e '.port.mtu == 9000 and .port.roce_mtu == 4096
		and .port.multi_buffer == true and .port.zerocopy == false
		and .port.xdp_mode == "native"' <<< "$j" > /dev/null || { echo "$j"; return 1; }
	ctl status | grep -q "mtu 9000, RoCE path MTU 4096)$" &&
	ctl status | grep -q "^af_xdp    copy mode, .*multi-buffer on, $(tx_budget_taken 256) frames per sendto$" ||
		{ ctl status; return 1; }
}
check "status: MTU 9000, RoCE path MTU 4096, copy mode, multi-buffer on" status_jumbo
# veth has no zero-copy AF_XDP: the default (auto) says why it copies.
check "the log says zero-copy was refused and copy mode is used" \
	grep -q "zero-copy AF_XDP on $IFA queue 0: .*; using copy mode with multi-buffer" "$DLOG"

# ---- vrdma_test's data cases at path MTU 4096 ----
export VRDMA_TEST_PATH_MTU=4096	# vtest (lib.sh): its QPs' path MTU
# 2 QUERY_PORT (offers 4096), 13 QUERY_QP (holds 4096), 20-24 RC SEND, WRITE,
# READ, UC, UD (at the port's MTU), 30 RC bulk checked to the byte.
check "vrdma_test QUERY_PORT, QUERY_QP and data cases at path MTU 4096" \
	vtest_ok 2 13 20 21 22 23 24 30

# ---- frames on the wire: 4096-byte payloads, in two UMEM chunks each ----
NO_PAYLOAD_GUESSES=$(no_payload_guesses)
pp_pair() {	# PORT ARGS...: vrdma-pingpong server on beta, client on alpha
	local port=$1
	shift
	tool_pair "$port" "$VRDMA_PINGPONG" -g 0 "$@"
}
wire_4096() {
	local pcap=$TMP/wire.pcap tpid full big bad n
	ip netns exec "$NSC" tshark -i br0 -s 128 -f "udp port 4791" -w "$pcap" > "$TMP/tshark.log" 2>&1 &
	tpid=$!
	for _ in $(seq 100); do grep -q "^Capturing on" "$TMP/tshark.log" && break; sleep 0.1; done
	pp_pair 19201 -s 65536 -n 20 -m 4096 -c || { kill "$tpid"; return 1; }
	sleep 0.5
	kill -INT "$tpid"; wait "$tpid" || true
	# udp.length = UDP 8 + BTH 12 + payload + ICRC 4; SEND_FIRST/MIDDLE carry a full path MTU
	t() { tshark -r "$pcap" $NO_PAYLOAD_GUESSES "$@" 2>/dev/null | wc -l; }
	n=$(t)
	full=$(t -Y "infiniband.bth.opcode == 0 || infiniband.bth.opcode == 1")
	big=$(t -Y "(infiniband.bth.opcode == 0 || infiniband.bth.opcode == 1) && udp.length == 4120")
	bad=$(t -Y "udp.length > 4136")
	echo "    captured $n frames; $full SEND FIRST/MIDDLE, $big of them with 4096 bytes; $bad over 4096 + headers"
	# 40 messages of 64 KiB: 16 frames each, 15 of them FIRST or MIDDLE
	[ "$full" -ge 600 ] && [ "$big" = "$full" ] && [ "$bad" = 0 ]
}
check "on the wire: every SEND FIRST/MIDDLE frame carries 4096 bytes" wire_4096
port_avg() {	# every frame sent went out whole, and most of them big
	local ok=0 bytes bufs
	frames_agree || ok=1
	bytes=$(jq .port.rx_bytes "$TMP/sb.json") bufs=$(jq .port.rx_buffers "$TMP/sb.json")
	echo "    A sent $ATX, B got $BRX ($bytes bytes in $bufs buffers); B sent $BTX, A got $ARX"
	[ $ok = 0 ] && [ "$bufs" -gt "$BRX" ] &&
		[ $((bytes / BRX)) -gt 2048 ] && [ "$(jq .port.handed_over "$TMP/sb.json")" -gt 0 ]
}
check "every frame arrived, both ways; B's in several buffers, handed over" port_avg

# ---- the perf tools, 1 MiB messages ----
perf_4096() {	# TEST: 1 MiB x 50, the banner says Mtu 4096, a result row
	tool_pair $((19300 + NTEST)) "$VRDMA_PERF" "$1" -s 1048576 -n 50 -x 0 &&
	grep -q '^ Mtu             : 4096\[B\]$' "$TMP/cli.out" &&
	grep -Eq '^ *1048576 +50 +[0-9.]+ +[0-9.]+' "$TMP/cli.out" || { cat "$TMP/cli.out"; return 1; }
}
for t in write_bw send_bw read_bw; do
	check "vrdma-perf $t 1 MiB at MTU 4096 (the port's)" perf_4096 "$t"
done
pp_ok() {	# ARGS...: vrdma-pingpong, every byte checked
	pp_pair $((19400 + NTEST)) "$@" -c && grep -Eq '^[0-9]+ iters in [0-9.]+ seconds' "$TMP/cli.out"
}
check "vrdma-pingpong rc 1 MiB -m 4096 (-c)" pp_ok -T rc -s 1048576 -n 20 -m 4096
check "vrdma-pingpong uc 64 KiB -m 4096 (-c)" pp_ok -T uc -s 65536 -n 100 -m 4096
check "vrdma-pingpong ud 4096 B, the port's MTU (-c)" pp_ok -T ud -s 4096 -n 200

# ---- a lossy link at path MTU 4096: retransmission by 4 KiB packets ----
impair_relay
check "RC $LOSSY_MIB MiB at path MTU 4096, bit-exact through loss and corruption" \
	bulk_ok "$LOSSY_MIB"
impair_lost() {
	kill -TERM "$IMPAIR_PID"; wait "$IMPAIR_PID" || true
	ip -n "$NSC" link set "${IFA}p" master br0	# the bridge again, for what follows
	ip -n "$NSC" link set "${IFB}p" master br0
	grep '^impair: forwarded' "$TMP/impair.log" | sed 's/^/    /'
	grep -Eq 'lost=[1-9].* overrun=0$' "$TMP/impair.log"
}
check "frames were lost on the way, as asked, none by the relay's overrun" impair_lost
check "... and the losses recovered by retransmission" recovered

check "both daemons exit 0 on SIGTERM" both_exit_0
check "no sanitizer report" no_sanitizer_report

# ---- zero-copy asked for: veth refuses it, with multi-buffer as without ----
no_xdp() { ! ip -n "$NSA" link show "$IFA" | grep -q 'prog/xdp'; }
zc_refused() {
	local conf rc=0
	conf=$(write_conf "zerocopy = on" "[vm alpha]
gid = 10.207.0.11
socket = $TMP/alpha.sock" zc.conf)
	ip netns exec "$NSA" "$VRDMAD" -c "$conf" > "$TMP/zc.log" 2>&1 || rc=$?
	[ $rc != 0 ] && grep -q "zero-copy AF_XDP with multi-buffer (MTU 9000) is not supported on $IFA queue 0: .*(set zerocopy = auto or off, or an MTU of at most 3822)" "$TMP/zc.log" ||
		{ cat "$TMP/zc.log"; return 1; }
}
check "zerocopy = on at MTU 9000: refused, the message names multi-buffer" zc_refused
check "... and no XDP program is left on $IFA" no_xdp

# ---- no multi-buffer (multi_buffer = off, as where the kernel refuses it):
# path MTU 2048, said once, and RoCE still works with a peer that has it.
# A's worker sleeps whenever a poll finds nothing (idle_spin_us = 0): each
# frame for it must wake it, not its 250 ms timer. Its sockets send 64
# frames per sendto (tx_budget) ----
sed 's/^xdp_object = .*/&\nmulti_buffer = off\ntx_budget = 64/; s/^\[daemon\]$/&\nidle_spin_us = 0/' \
	"$CONF_A" > "$TMP/a-single.conf"
start_daemon "$TMP/a-single.conf"
start_daemon_b "$CONF_B"
single_status() {
	local j
	j=$(ctl status --json) && jq -e --argjson b "$(tx_budget_taken 64)" '.port.mtu == 9000
		and .port.multi_buffer == false and .port.roce_mtu == 2048 and .port.tx_budget == $b' \
		<<< "$j" > /dev/null || { echo "$j" | jq .port; return 1; }
	grep -q "MTU 9000, $(tx_budget_taken 64) frames per sendto$" "$DLOG" || return 1
	grep -q "$IFA: multi_buffer = off: frames over 3840 bytes (MTU 3822) are not received, so RoCE runs at path MTU 2048 instead of the 4096 that MTU 9000 carries" "$DLOG"
}
check "multi_buffer = off at MTU 9000: status and a warning say path MTU 2048 (and tx_budget = 64)" \
	single_status
mtu_refused() {
	local out rc=0
	out=$(ip netns exec "$NSA" timeout 20 "$VRDMA_PINGPONG" -d "$TMP/alpha.sock" -m 4096 2>&1) || rc=$?
	[ $rc != 0 ] && grep -q "Path MTU 4096 is above the port's maximum MTU 2048" <<< "$out" ||
		{ echo "$out (exit $rc)"; return 1; }
}
check "... QUERY_PORT offers 2048: vrdma-pingpong -m 4096 is refused" mtu_refused
check "... vrdma-pingpong rc 64 KiB -m 2048 (-c) with the multi-buffer peer" \
	pp_ok -T rc -s 65536 -n 100 -m 2048
# 500 round trips: a worker left to its timer would take over a minute.
woken() {
	pp_pair $((19400 + NTEST)) -T rc -s 64 -n 500 &&
	grep '^500 iters in' "$TMP/cli.out" | sed 's/^/    /' &&
	awk '/^500 iters in/ { ok = $4 < 10 } END { exit !ok }' "$TMP/cli.out" ||
		{ cat "$TMP/cli.out"; return 1; }
}
check "... A's worker asleep whenever idle: 500 rc ping-pongs in under 10 s" woken
check "... and it slept and was woken (wakeups counted)" \
	eval 'ctl stats --json | jq -e ".workers[0].wakeups > 500" > /dev/null'
check "... both daemons exit 0, no sanitizer report" eval 'both_exit_0 && no_sanitizer_report'
summary
