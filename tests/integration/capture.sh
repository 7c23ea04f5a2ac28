#!/bin/bash
# vrdmactl capture: the daemon's RoCE frames as a pcap file (a capture on
# the interface cannot see them). Frames looped back between two VMs and
# frames received from the peer, --count and Ctrl-C, one capture at a time.
# (veth.sh compares a capture with what crossed the wire.)
#
#   netns vrA-ID                                   netns vrB-ID
#   +------------------------------------------+   +--------------+
#   | vrdmad on vA-ID (XDP)   10.213.0.1       |<->| vB-ID        |
#   |   vm alpha 10.213.0.11, vm beta 10.213.0.12  | 10.213.0.2   |
#   |   vrdma-pingpong alpha <-> beta (loopback)|   | udp.py roce  |
#   |   vrdmactl capture -> $TMP/*.pcap        |   +--------------+
#   +------------------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"
need_pingpong

setup_pair "10.213.0.1/24" "10.213.0.2/24"
MAC_A=$(mac_of "$NSA" "$IFA")
CONF=$(write_conf "" "[vm alpha]
gid = 10.213.0.11
socket = $TMP/alpha.sock
max_cq = 4
max_qp = 4
[vm beta]
gid = 10.213.0.12
socket = $TMP/beta.sock
max_cq = 4
max_qp = 4" capture.conf)

echo "capture: vrdmactl capture ($NSA)"
start_daemon "$CONF"
NO_PAYLOAD_GUESSES=$(no_payload_guesses)
t() { local f=$1; shift; tshark -r "$f" $NO_PAYLOAD_GUESSES "$@" 2>/dev/null | wc -l; }

# bg_capture ARGS...: vrdmactl capture in the background, itself (not a
# subshell, which would ignore SIGINT) as CPID, bounded in time. Without
# LeakSanitizer: its stop-the-world at exit was seen to spin forever in a
# process just interrupted (the --count runs above exit normally and are
# leak-checked).
bg_capture() {
	ip netns exec "$NSA" env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		timeout -s INT 60 "$VRDMACTL" -s "$TMP/ctl.sock" capture "$@" &
	CPID=$!
}

# A ping-pong between alpha and beta, for traffic.
ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/alpha.sock" -p 18630 -s 1500 -n 100000000 -e > "$TMP/pp.srv" 2>&1 &
PSRV=$!
wait_listen "$NSA" 18630
ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/beta.sock" -p 18630 -s 1500 -n 100000000 -e 127.0.0.1 > "$TMP/pp.cli" 2>&1 &
PCLI=$!

counted() {
	ctl capture "$TMP/loop.pcap" --count 200 > "$TMP/loop.out" 2> "$TMP/loop.err" || return 1
	grep -q '^200 frame(s) captured$' "$TMP/loop.err"
}
check "capture FILE --count 200 during a ping-pong: exit 0, 200 frames" counted
loop_ok() {
	local n ib bad ab
	n=$(t "$TMP/loop.pcap")
	ib=$(t "$TMP/loop.pcap" -Y 'infiniband.bth.opcode')
	bad=$(t "$TMP/loop.pcap" -Y _ws.malformed)
	ab=$(t "$TMP/loop.pcap" -Y 'ip.dst == 10.213.0.11 || ip.dst == 10.213.0.12')
	echo "    $n frames: $ib with a BTH, $bad malformed, $ab to alpha or beta"
	[ "$n" = 200 ] && [ "$ib" = 200 ] && [ "$bad" = 0 ] && [ "$ab" = 200 ]
}
check "... tshark reads 200 RoCEv2 frames (1500 B payloads, two segments each), all alpha <-> beta" loop_ok

one_at_a_time() {
	local rc=0
	bg_capture "$TMP/first.pcap" 2> "$TMP/first.err"
	for _ in $(seq 50); do grep -q '^capturing into' "$TMP/first.err" && break; sleep 0.1; done
	ctl capture "$TMP/second.pcap" 2> "$TMP/second.err" || rc=$?
	kill -INT "$CPID"
	wait "$CPID" || return 1
	[ "$rc" = 1 ] && grep -q 'a capture is running already' "$TMP/second.err" &&
		[ ! -e "$TMP/second.pcap" ]
}
check "a second capture while one runs: exit 1, says so, writes no file" one_at_a_time
kill "$PCLI" "$PSRV" 2> /dev/null || true
wait "$PCLI" "$PSRV" 2> /dev/null || true

# Frames from the peer, and Ctrl-C ending a capture without --count.
interrupted() {
	bg_capture "$TMP/rx.pcap" 2> "$TMP/rx.err"
	for _ in $(seq 50); do grep -q '^capturing into' "$TMP/rx.err" && break; sleep 0.1; done
	ip netns exec "$NSB" "$PY" "$HERE/integration/udp.py" roce "$IFB" "$MAC_A" 10.213.0.2 10.213.0.11 25
	sleep 0.3
	kill -INT "$CPID"
	wait "$CPID" && grep -q '^25 frame(s) captured$' "$TMP/rx.err"
}
check "capture FILE, 25 frames from the peer, Ctrl-C: exit 0, 25 frames" interrupted
rx_ok() {
	local n from
	n=$(t "$TMP/rx.pcap")
	from=$(t "$TMP/rx.pcap" -Y "ip.src == 10.213.0.2 && ip.dst == 10.213.0.11 && eth.dst == $MAC_A && infiniband.bth.opcode == 4")
	echo "    $n frames, $from SEND_ONLY from the peer to alpha's GID and the port's MAC"
	[ "$n" = 25 ] && [ "$from" = 25 ]
}
check "... all 25 as sent: peer -> alpha, SEND_ONLY" rx_ok
to_stdout() {
	bg_capture - --count 3 2> /dev/null > "$TMP/stdout.pcap"
	sleep 0.3
	ip netns exec "$NSB" "$PY" "$HERE/integration/udp.py" roce "$IFB" "$MAC_A" 10.213.0.2 10.213.0.12 5
	wait "$CPID" && [ "$(t "$TMP/stdout.pcap")" = 3 ]
}
check "capture - --count 3: a pcap of 3 frames on stdout" to_stdout
usage_err() { local rc=0; ctl capture "$@" 2> /dev/null || rc=$?; [ "$rc" = 2 ]; }
check "--count 0, --count x, no FILE: usage errors (exit 2)" \
	eval 'usage_err x.pcap --count 0 && usage_err x.pcap --count x && usage_err'
no_capture_left() { ! grep -q 'capture: started' <(tail -1 "$DLOG") && [ "$(grep -c 'capture: ended' "$DLOG")" = 4 ]; }
check "each capture ended in the daemon (log), none left running" no_capture_left

stop_daemon
check "vrdmad exits cleanly, no sanitizer report" \
	eval '! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$DLOG"'
summary capture
