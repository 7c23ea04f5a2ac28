#!/bin/bash
# Foundation: XDP steering, AF_XDP port, daemon lifecycle, control socket.
#
#   netns vrA-ID                                  netns vrB-ID
#   +---------------------------------+           +------------------+
#   | vrdmad (XDP + AF_XDP on vA-ID)  |           |                  |
#   | vA-ID  10.201.0.1  served GID   |<--veth--->| vB-ID 10.201.0.2 |
#   |        10.201.0.3  not served   |           |       fd00:c9::2 |
#   |        fd00:c9::1  served GID   |           |                  |
#   |        10.202.0.1  served GID   |           | raw 802.1Q and   |
#   | kernel UDP socket on :4791      |           | IPv4-option frames|
#   +---------------------------------+           +------------------+
set -e
source "$(dirname "$0")/../lib.sh"

setup_pair "10.201.0.1/24 10.201.0.3/24 fd00:c9::1/64" "10.201.0.2/24 fd00:c9::2/64"
MAC_A=$(ip -n "$NSA" -j link show "$IFA" | jq -r '.[0].address')

VMS="[vm alpha]
gid = 10.201.0.1, fd00:c9::1
socket = $TMP/alpha.sock
[vm beta]
gid = 10.202.0.1
socket = $TMP/beta.sock
mac = 52:54:00:00:00:be"
CONF=$(write_conf "" "$VMS" vrdmad.conf)

echo "foundation: XDP steering and the daemon skeleton ($NSA, $NSB)"
check_config_ok() { "$VRDMAD" --check-config -c "$CONF" | grep -q ': OK (2 VMs)$'; }
check "--check-config accepts the test config" check_config_ok
start_daemon "$CONF"

# A sender in B while a kernel socket listens on 4791 in A (listen_while,
# lib.sh); GOT = what that socket received. send_and_listen ADDR PORT COUNT
# [SIZE] sends UDP datagrams; roce_and_listen DST COUNT [OPTS] sends valid
# RoCEv2 frames built by udp.py (zlib ICRC, independent of vrdmad's codec).
send_and_listen() { listen_while send "$@"; }
roce_and_listen() {
	local dst=$1 count=$2 src=10.201.0.2
	shift 2
	case $dst in *:*) src=fd00:c9::2 ;; esac
	listen_while roce "$IFB" "$MAC_A" "$src" "$dst" "$count" "$@"
}
drops() { jstat '[.port.drops[]] | add'; }

vm_rx() { jstat ".vms[] | select(.name == \"$1\") | .rx_frames"; }
xdp() { jstat ".xdp.$1"; }

# (a) the kernel stack keeps everything that is not RoCE to a served GID.
check "ping to the served GID still works" \
	ip netns exec "$NSB" ping -c 2 -i 0.2 -W 2 10.201.0.1 -q
check "ping6 to the served IPv6 GID still works" \
	ip netns exec "$NSB" ping -6 -c 2 -i 0.2 -W 2 fd00:c9::1 -q
ip netns exec "$NSA" "$PY" "$HERE/integration/udp.py" tcp-echo 5000 10 > "$TMP/tcp.out" &
tpid=$!
for _ in $(seq 50); do grep -q ready "$TMP/tcp.out" 2>/dev/null && break; sleep 0.05; done
check "TCP to the served GID still works" \
	ip netns exec "$NSB" "$PY" "$HERE/integration/udp.py" tcp-check 10.201.0.1 5000
wait "$tpid"
out=$TMP/udp5001
ip netns exec "$NSA" "$PY" "$HERE/integration/udp.py" recv 5001 1.5 > "$out" &
rpid=$!
for _ in $(seq 50); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
ip netns exec "$NSB" "$PY" "$HERE/integration/udp.py" send 10.201.0.1 5001 20
wait "$rpid"
check "UDP to another port of the served GID reaches the kernel (20/20)" \
	test "$(tail -1 "$out")" = 20

# (b) every UDP 4791 datagram to a served GID is consumed by vrdmad: plain
# datagrams are not RoCE, so the codec drops them, each under a reason.
frames=$(jstat .port.rx_frames); redirected=$(xdp redirected); dropped=$(drops); before=$(vm_rx alpha)
send_and_listen 10.201.0.1 4791 200
check "200 datagrams to UDP 4791 of a served GID: vrdmad takes exactly 200" \
	test "$(( $(jstat .port.rx_frames) - frames ))" = 200
check "... and the kernel socket on 4791 received none of them" test "$GOT" = 0
check "... and the XDP program redirected exactly 200" \
	test "$(( $(xdp redirected) - redirected ))" = 200
check "... not RoCE: all 200 counted as drops, none for vm alpha" \
	test "$(( $(drops) - dropped ))-$(( $(vm_rx alpha) - before ))" = "200-0"

before=$(vm_rx alpha); dropped=$(drops)
roce_and_listen 10.201.0.1 100
check "100 valid RoCEv2 frames to vm alpha's IPv4 GID: alpha counts exactly 100" \
	test "$(( $(vm_rx alpha) - before ))-$GOT-$(( $(drops) - dropped ))" = "100-0-0"
before=$(vm_rx alpha); icrc=$(jstat .port.drops.icrc)
roce_and_listen 10.201.0.1 20 icrc=bad
check "20 frames with a bad ICRC: counted under drops.icrc, not for the VM" \
	test "$(( $(jstat .port.drops.icrc) - icrc ))-$(( $(vm_rx alpha) - before ))" = "20-0"

before=$(vm_rx alpha)
roce_and_listen fd00:c9::1 50
check "IPv6 GID: 50 valid frames, vm alpha counts exactly 50, kernel none" \
	test "$(( $(vm_rx alpha) - before ))-$GOT" = "50-0"

# Hand-built frames: the kernel here has no 802.1Q devices, and Python's
# sockets cannot set IPv4 options.
before=$(vm_rx beta)
roce_and_listen 10.202.0.1 30 vlan=100
check "802.1Q-tagged frames to vm beta's GID: 30 counted" \
	test "$(( $(vm_rx beta) - before ))" = 30
before=$(vm_rx beta)
roce_and_listen 10.202.0.1 12 ihl=15
check "IPv4 with 40 bytes of options (IHL 15) to vm beta's GID: 12 counted" \
	test "$(( $(vm_rx beta) - before ))" = 12

# (c) RoCE to an address we do not serve stays with the kernel.
before=$(vm_rx alpha); passed=$(xdp passed)
send_and_listen 10.201.0.3 4791 40
check "40 datagrams to UDP 4791 of an unserved address reach the kernel socket" \
	test "$GOT" = 40
check "... counted as passed by XDP, not by any VM" \
	test "$(( $(xdp passed) - passed >= 40 ))-$(( $(vm_rx alpha) - before ))" = "1-0"

# A truncated IPv4 header is counted malformed and passed on.
malformed=$(xdp malformed)
ip netns exec "$NSB" "$PY" "$HERE/integration/udp.py" raw "$IFB" "$(echo "$MAC_A" | tr -d :)020000000001080045000014"
sleep 0.2
check "a truncated IPv4 frame is counted as malformed by the XDP program" \
	test "$(( $(xdp malformed) - malformed ))" = 1

# The control socket: documented JSON, and bad requests answered, not fatal.
status_fields() {
	local j
	j=$(ctl status --json) && [ -n "$j" ] && jq -e --arg ifname "$IFA" --arg tmp "$TMP" \
		--argjson budget "$(tx_budget_taken 256)" '
	(.version|type) == "string" and (.pid|type) == "number" and (.uptime_s|type) == "number"
	and (.config|type) == "string"
	and .port.interface == $ifname and .port.xdp_mode == "native"
	and (.port.xdp_attach|test("^(single|dispatcher)$")) and (.port.xdp_program_id > 0)
	and (.port.zerocopy|type) == "boolean" and .port.multi_buffer == false
	and (.port.tx_budget == $budget or .port.zerocopy)
	and .port.queues == [0] and .port.rx_queues == 1 and (.port.ifindex > 0)
	and .port.mtu == 1500 and .port.roce_mtu == 1024 and (.port.mac|test("^([0-9a-f]{2}:){5}[0-9a-f]{2}$"))
	and (.workers|length) == 1 and .workers[0].id == 0 and .workers[0].queues == [0]
	and .workers[0].cpu == null
	and .vms[0].name == "alpha" and .vms[0].gids == ["10.201.0.1", "fd00:c9::1"]
	and .vms[0].socket == ($tmp + "/alpha.sock") and .vms[0].mac == .port.mac
	and .vms[1].mac == "52:54:00:00:00:be"' <<< "$j" > /dev/null
}
stats_fields() {
	local j
	j=$(ctl stats --json) && [ -n "$j" ] && jq -e '
	(.xdp | keys) == ["ip_fragment", "malformed", "no_xsk", "passed", "redirected"]
	and ([.xdp[]] | all(type == "number"))
	and (.port | keys) == ["capture_lost", "drops", "handed_over", "loopback_frames", "rx_buffers", "rx_bytes",
			       "rx_frames", "tx_bytes", "tx_frames", "xsk"]
	and (.port.xsk | keys) == ["rx_dropped", "rx_fill_ring_empty", "rx_invalid_descs",
				   "rx_ring_full", "tx_invalid_descs", "tx_ring_empty"]
	and ([.port.xsk[]] | all(type == "number"))
	and (.port.drops | keys) == (["bth_version", "ethertype", "header_length", "icrc",
		"ip_checksum", "ip_fragment", "ip_header", "ip_length", "not_udp", "opcode",
		"pad", "short", "udp_length", "udp_port", "unknown_gid", "handover_full", "tx_full",
		"tx_too_big"] | sort)
	and (.workers[0] | keys) == ["id", "kicks", "rx_bytes", "rx_frames", "wakeups"]
	and .workers[0].wakeups > 0	# an idle worker wakes at least every 250 ms
	and [.vms[].name] == ["alpha", "beta"]
	and (.vms[0] | keys) == ["device", "name", "rx_bytes", "rx_frames"]
	and (.vms[0].device | keys) == ["bad_messages", "broken", "connected", "cq_interrupts", "cqes",
		"ctrl_cmds", "ctrl_errors", "events", "events_late", "events_lost", "interrupts",
		"paths", "recv_wqes",
		"refused_db_pages", "refused_mrs", "refused_mws", "refused_srq_wqes", "refused_wqes",
		"ring_errors", "ring_wqes", "rings", "send_wqes", "srq_wqes", "stray_doorbells",
		"transport"]
	and (.vms[0].device.paths | type) == "object"
	and (.vms[0].device.transport | length) > 30' <<< "$j" > /dev/null
}
tables() {
	ctl status | grep -q '^alpha .*10.201.0.1, fd00:c9::1' && ctl stats | grep -q '^beta '
}
raw_request() {	# send $1 as the request, print the answer
	printf '%s' "$1" | ip netns exec "$NSA" "$PY" -c "
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read())
s.shutdown(socket.SHUT_WR); print(s.makefile().read())" "$TMP/ctl.sock"
}
answer_is_error() {	# request, regex the error must match
	local a
	a=$(raw_request "$1") && [ -n "$a" ] && jq -e --arg re "$2" '.ok == false and (.error|test($re))' <<< "$a" > /dev/null
}
exit_code_is() {	# expected, command...
	local want=$1 rc=0
	shift
	"$@" > /dev/null 2>&1 || rc=$?
	[ "$rc" = "$want" ]
}
check "status --json has the documented fields" status_fields
check "stats --json has the documented fields" stats_fields
check "status and stats print readable tables" tables
check "a control request that is not JSON gets an error answer" answer_is_error $'not json\n' 'not JSON'
check "an unknown control command gets an error answer" \
	answer_is_error $'{"command": "frobnicate"}\n' "unknown command 'frobnicate'"
check "an error writes the request's control characters as '?'" \
	answer_is_error $'{"command": "x\\u001b[2J"}\n' "unknown command 'x\\?\\[2J'"
check "a request without a newline, closed by the client, is answered" \
	answer_is_error '{"command": 42}' 'command'
check "an unknown vrdmactl command fails with exit code 2" exit_code_is 2 ctl frobnicate
check "vrdmactl without a daemon fails with exit code 1" \
	exit_code_is 1 "$VRDMACTL" -s "$TMP/nothing.sock" status
check "the daemon is still running after bad requests" kill -0 "$DPID"
check "control socket is mode 0600" test "$(stat -c %a "$TMP/ctl.sock")" = 600

# (d) SIGTERM: exit 0 within 2 s, nothing left behind.
no_xdp() { ! ip -n "$NSA" link show "$IFA" | grep -q 'prog/xdp'; }
clean_log() { ! grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error' "$DLOG"; }
stop_daemon
check "SIGTERM: exit code 0 (was $RC)" test "$RC" = 0
check "SIGTERM: exited within 2 s (${MS} ms)" test "$MS" -lt 2000
check "no XDP program remains on $IFA" no_xdp
check "the control socket is removed" test ! -e "$TMP/ctl.sock"
check "no sanitizer report in the daemon log" clean_log

# (e) failures are clear, exit non-zero, and leave nothing attached.
fails_with() {	# message regex, vrdmad arguments...
	local re=$1 rc=0
	shift
	ip netns exec "$NSA" "$VRDMAD" "$@" > "$TMP/fail.log" 2>&1 || rc=$?
	[ "$rc" != 0 ] && grep -q -- "$re" "$TMP/fail.log"
}
sed "s/^interface = .*/interface = nosuchif0/" "$CONF" > "$TMP/noif.conf"
check "a missing interface: non-zero exit and a message naming it" \
	fails_with "interface 'nosuchif0' does not exist" -c "$TMP/noif.conf"
printf '[daemon]\nworkers = 0\n[port]\ninterface = %s\n' "$IFA" > "$TMP/bad.conf"
check "a bad config: non-zero exit and a 'file:line: what' message" \
	fails_with "$TMP/bad.conf:2: workers must be an integer from 1 to 64" -c "$TMP/bad.conf"
check "a missing config file: non-zero exit and a message" \
	fails_with "none.conf: cannot open: No such file or directory" -c "$TMP/none.conf"
# worker_cpus naming a CPU this machine does not have (one past its last)
NOCPU=$(nproc --all)
sed "s/^\[daemon\]$/&\nworker_cpus = $NOCPU/" "$CONF" > "$TMP/cpu.conf"
check "worker_cpus with a CPU vrdmad cannot run on: non-zero exit, the message says so" \
	fails_with "cannot start worker 0 on CPU $NOCPU (worker_cpus): vrdmad may not run there" \
	-c "$TMP/cpu.conf"
check "an unknown option: usage and non-zero exit" fails_with "Usage: vrdmad" --frobnicate
check "after the failed starts no XDP program is attached" no_xdp

# A program already on the interface: refused with what to do, and left alone.
ip -n "$NSA" link set dev "$IFA" xdpgeneric obj "$BPF_OBJ" sec xdp.frags
check "a foreign XDP program: start refused, the message says how to remove it" \
	fails_with "ip link set dev $IFA xdp off" -c "$CONF"
has_xdp() { ! no_xdp; }
check "... and the foreign program is still attached" has_xdp
ip -n "$NSA" link set dev "$IFA" xdpgeneric off

# (f) A vrdmad killed with SIGKILL leaves its program attached; it recorded
# the program in xdp-IFACE.state beside the control socket, and the next start
# with that control socket removes exactly that program and attaches anew.
STATE=$TMP/xdp-$IFA.state
xdp_id() { ip -n "$NSA" -j link show "$IFA" | jq -r '.[0].xdp.prog.id // empty'; }
state_id() { awk '{ print $2 }' "$STATE" 2> /dev/null; }
kill_daemon() { kill -KILL "$DPID"; wait "$DPID" 2> /dev/null || true; }
reclaimed() { grep -q "removing the XDP program vrdma_xdp (id $1) that a vrdmad which did not exit cleanly left on $IFA" "$DLOG"; }
start_daemon "$CONF"
id1=$(xdp_id)
check "the state file records the attached program (id $id1)" \
	test -n "$id1" -a "$(state_id)" = "$id1" -a "$(ctl status --json | jq .port.xdp_program_id)" = "$id1"
kill_daemon
check "SIGKILL: the program stays attached, and its record" test "$(xdp_id)-$(state_id)" = "$id1-$id1"
CONF_CTL2=$(CONF_CTL=$TMP/ctl2.sock write_conf "" "$VMS" ctl2.conf)
check "another control socket: refused, the record is not its own" \
	fails_with "ip link set dev $IFA xdp off" -c "$CONF_CTL2"
check "... and the killed vrdmad's program is still attached" test "$(xdp_id)" = "$id1"
start_daemon "$CONF"
id2=$(xdp_id)
check "restart with the same config: warns that it removes program $id1" reclaimed "$id1"
check "... and attaches its own, with a new id ($id2), recorded" \
	test -n "$id2" -a "$id2" != "$id1" -a "$(state_id)" = "$id2"
before=$(vm_rx alpha)
roce_and_listen 10.201.0.1 20
check "... and serves: 20 RoCE frames counted for vm alpha, kernel none" \
	test "$(( $(vm_rx alpha) - before ))-$GOT" = "20-0"
stop_daemon
check "SIGTERM after the reclaim: exit 0, no program and no record left" \
	test "$RC-$(no_xdp && echo clean)-$(test -e "$STATE" || echo gone)" = "0-clean-gone"
check "... no sanitizer report" clean_log

# A record that does not name what is attached: the program is someone else's
# (here the same object, so the same name, attached by hand after the operator
# removed the killed vrdmad's): refused, and left alone.
start_daemon "$CONF"
id1=$(xdp_id)
kill_daemon
ip -n "$NSA" link set dev "$IFA" xdp off
ip -n "$NSA" link set dev "$IFA" xdpdrv obj "$BPF_OBJ" sec xdp.frags
id3=$(xdp_id)
check "a stale record, a foreign vrdma_xdp on $IFA: start refused" \
	fails_with "ip link set dev $IFA xdp off" -c "$CONF"
check "... the foreign program is still attached, nothing was removed" \
	test "$(xdp_id)" = "$id3" -a -n "$id3" -a "$id3" != "$id1" -a "$(state_id)" = "$id1"
no_reclaim() { ! grep -q 'removing the XDP program' "$TMP/fail.log"; }
check "... and no reclaim was attempted" no_reclaim
ip -n "$NSA" link set dev "$IFA" xdpdrv off

# A failure after the program is attached must detach it again: veth has no
# zero-copy AF_XDP, so zerocopy = on fails at the socket.
CONF_ZC=$(write_conf "zerocopy = on" "$VMS" zc.conf)
check "zerocopy = on on veth: refused, and the message says what to set" \
	fails_with "set zerocopy = auto or off" -c "$CONF_ZC"
check "... and the XDP program attached before the failure is gone" no_xdp
CONF_Q=$(write_conf "queues = 2" "$VMS" q2.conf)
check "queues = 2 on a one-queue interface: refused with a message" \
	fails_with "queues = 2, but $IFA has only 1 receive queue" -c "$CONF_Q"

# xdp_mode = skb, and multi-buffer at MTU 9000.
port_is() { local j; j=$(ctl status --json) && [ -n "$j" ] && jq -e "$1" <<< "$j" > /dev/null; }
CONF_SKB=$(write_conf "xdp_mode = skb" "$VMS" skb.conf)
start_daemon "$CONF_SKB"
check "xdp_mode = skb: status says skb" port_is '.port.xdp_mode == "skb"'
before=$(vm_rx alpha)
roce_and_listen 10.201.0.1 25
check "skb mode: 25 RoCE frames counted for vm alpha, kernel none" \
	test "$(( $(vm_rx alpha) - before ))-$GOT" = "25-0"
stop_daemon
check "skb mode: exit code 0" test "$RC" = 0
check "skb mode: no program left" no_xdp
check "skb mode: no sanitizer report" clean_log

ip -n "$NSA" link set "$IFA" mtu 9000
ip -n "$NSB" link set "$IFB" mtu 9000
start_daemon "$CONF"
check "MTU 9000: native attach with multi-buffer on" \
	port_is '.port.xdp_mode == "native" and .port.multi_buffer == true'
before=$(vm_rx alpha); bytes=$(jstat '.vms[0].rx_bytes'); bufs=$(jstat '.port.rx_buffers')
roce_and_listen 10.201.0.1 10 size=8000
check "MTU 9000: ten 8000-byte RoCE frames arrive whole and valid, kernel none" \
	test "$(( $(vm_rx alpha) - before ))-$(( $(jstat '.vms[0].rx_bytes') - bytes ))-$GOT" = "10-$(( 10 * (14 + 20 + 8 + 12 + 8000 + 4) ))-0"
check "... each in more than one buffer" test "$(( $(jstat '.port.rx_buffers') - bufs ))" -gt 10
stop_daemon
check "MTU 9000: exit code 0" test "$RC" = 0
check "MTU 9000: no sanitizer report" clean_log

# Two receive queues, two workers: each worker owns one queue's socket.
ip netns del "$NSA"; ip netns del "$NSB"
ip netns add "$NSA"; ip netns add "$NSB"
ip link add "$IFA" netns "$NSA" numrxqueues 2 numtxqueues 2 type veth \
	peer name "$IFB" netns "$NSB" numrxqueues 2 numtxqueues 2
ip -n "$NSA" addr add 10.201.0.1/24 dev "$IFA"
ip -n "$NSB" addr add 10.201.0.2/24 dev "$IFB"
ip -n "$NSA" link set "$IFA" up; ip -n "$NSB" link set "$IFB" up
CONF_W2=$(write_conf "" "$VMS" w2.conf)
sed -i 's/^\[daemon\]$/[daemon]\nworkers = 2/' "$CONF_W2"
start_daemon "$CONF_W2"
check "2 queues, workers = 2: one XSK per queue, one queue per worker" \
	port_is '.port.queues == [0, 1] and .port.rx_queues == 2 and [.workers[].queues] == [[0], [1]]'
MAC_A=$(ip -n "$NSA" -j link show "$IFA" | jq -r '.[0].address')
before=$(vm_rx alpha)
roce_and_listen 10.201.0.1 300
check "2 workers: 300 RoCE frames counted exactly once, kernel none" \
	test "$(( $(vm_rx alpha) - before ))-$GOT" = "300-0"
check "... the per-worker counters add up to the port's" \
	test "$(jstat '[.workers[].rx_frames] | add')" = "$(jstat '.port.rx_frames')"
stop_daemon
check "2 workers: exit code 0, no program left" test "$RC-$(no_xdp && echo clean)" = "0-clean"
check "2 workers: no sanitizer report" clean_log

summary
