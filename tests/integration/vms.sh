#!/bin/bash
# VMs added and removed while vrdmad runs: vrdmactl add-vm / del-vm and a
# reload (SIGHUP) of the file, each refused cleanly on bad input, and none
# disturbing the VMs that stay: an RC ping-pong between alpha and beta runs
# through all of it.
#
#   netns vrA-ID                                   netns vrB-ID
#   +------------------------------------------+   +--------------+
#   | vrdmad on vA-ID (XDP)   10.212.0.1       |   | vB-ID        |
#   |   vm alpha  10.212.0.11 (config)         |<->| 10.212.0.2   |
#   |   vm beta   10.212.0.12 (config)         |   | RoCE frames  |
#   |   vm eps    10.212.0.15 (config, dropped)|   | from udp.py  |
#   |   + gamma, delta (vrdmactl), zeta (file) |   +--------------+
#   |   vrdma-pingpong alpha <-> beta, all along|
#   +------------------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"
need_pingpong

setup_pair "10.212.0.1/24" "10.212.0.2/24"
MAC_A=$(mac_of "$NSA" "$IFA")
vm() {	# NAME LAST-OCTET: a [vm] section of the test's file
	printf '[vm %s]\ngid = 10.212.0.%s\nsocket = %s/%s.sock\nmax_cq = 4\nmax_qp = 4\n' \
		"$1" "$2" "$TMP" "$1"
}
CONF=$(write_conf "" "$(vm alpha 11; vm beta 12; vm eps 15)" vms.conf)

echo "vms: VMs added and removed at run time ($NSA)"
start_daemon "$CONF"

# names NAME...: the VMs served are exactly these, in this order.
names() { [ "$(ctl list --json | jq -r '[.[].name] | join(" ")')" = "$*" ]; }
origin() { [ "$(ctl list --json | jq -r ".[] | select(.name == \"$1\") | .origin")" = "$2" ]; }
vm_rx() { jstat ".vms[] | select(.name == \"$1\") | .rx_frames"; }
cqes() { jstat ".vms[] | select(.name == \"$1\") | .device.cqes"; }
# roce DST COUNT: valid RoCEv2 frames from B; GOT = what a kernel socket on
# 4791 in A received meanwhile (frames XDP left to the stack).
roce() { listen_while roce "$IFB" "$MAC_A" 10.212.0.2 "$1" "$2"; }

# The ping-pong that must not notice anything, stopped once the changes
# are done.
long_pingpong "$TMP/alpha.sock" "$TMP/beta.sock" 18620
for _ in $(seq 100); do [ "$(cqes alpha)" -gt 100 ] && break; sleep 0.1; done
CQES0=$(cqes alpha)

# (a) add-vm
add_gamma() {
	ctl add-vm gamma --gid 10.212.0.31 --gid fd00:d4::31 --socket "$TMP/gamma.sock" \
		--mac 52:54:00:00:12:31 --owner nobody --group nogroup --mode 0660 --max-cq 4 --max-qp 4 \
		--ring-max-cq 16 --ring-max-qp 512
}
check "add-vm gamma (two GIDs, owner, group, mode): exit 0" add_gamma
sock_is() { [ "$(stat -c '%F %U:%G %a' "$1")" = "socket $2" ]; }
check "... its socket is there, nobody:nogroup 0660" sock_is "$TMP/gamma.sock" "nobody:nogroup 660"
check "... list shows it after the file's VMs, origin runtime" \
	eval 'names alpha beta eps gamma && origin gamma runtime && origin alpha config'
listed_gids() { [ "$(ctl list --json | jq -r '.[] | select(.name == "gamma") | (.gids | join(",")) + " " + .mac')" = "10.212.0.31,fd00:d4::31 52:54:00:00:12:31" ]; }
check "... with its GIDs and MAC" listed_gids
before=$(vm_rx gamma)
roce 10.212.0.31 30
check "30 RoCE frames to gamma's GID: gamma counts 30, the kernel none (XDP map)" \
	test "$(( $(vm_rx gamma) - before ))-$GOT" = "30-0"

# (b) refusals: exit 1, the reason, nothing changed
snapshot() { ctl list --json | jq -c '[.[] | {name, socket, gids, origin}]'; ls "$TMP"/*.sock; }
BEFORE=$(snapshot)
refused() {	# regex, add-vm arguments...: exit 1, the message, nothing changed
	local re=$1 rc=0
	shift
	ctl add-vm "$@" > "$TMP/refused.out" 2> "$TMP/refused.err" || rc=$?
	[ "$rc" = 1 ] || { echo "    exit $rc, not 1"; return 1; }
	grep -Eq "$re" "$TMP/refused.err" || { echo "    said: $(cat "$TMP/refused.err")"; return 1; }
	[ "$(snapshot)" = "$BEFORE" ] || { echo "    something changed"; return 1; }
}
check "an existing name is refused" refused "a VM named 'gamma' exists already" \
	gamma --gid 10.212.0.41 --socket "$TMP/x.sock"
check "a GID another VM serves is refused, naming it" refused "GID 10.212.0.11 is served by VM alpha" \
	x --gid 10.212.0.41,10.212.0.11 --socket "$TMP/x.sock"
check "a GID that is not an address is refused" refused "gid '10.212.0.300' is not an IPv4 or IPv6 address" \
	x --gid 10.212.0.300 --socket "$TMP/x.sock"
check "another VM's socket path is refused" refused "is VM alpha's" \
	x --gid 10.212.0.41 --socket "$TMP/alpha.sock"
check "the daemon's control socket path is refused" refused "is vrdmad's control socket" \
	x --gid 10.212.0.41 --socket "$TMP/ctl.sock"
ip netns exec "$NSA" "$PY" -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(60)" "$TMP/busy.sock" &
BUSY=$!
for _ in $(seq 50); do [ -S "$TMP/busy.sock" ] && break; sleep 0.05; done
BEFORE=$(snapshot)
check "a socket path a live process listens on is refused" refused "in use" \
	x --gid 10.212.0.41 --socket "$TMP/busy.sock"
kill "$BUSY"; wait "$BUSY" 2> /dev/null || true; rm -f "$TMP/busy.sock"
: > "$TMP/plain"
BEFORE=$(snapshot)
check "a path that is not a socket is refused" refused "is not a socket" \
	x --gid 10.212.0.41 --socket "$TMP/plain"
check "an owner that does not exist is refused, no socket left" refused "does not exist" \
	x --gid 10.212.0.41 --socket "$TMP/x.sock" --owner no-such-user-here
check "a bad mode is refused" refused "socket_mode" \
	x --gid 10.212.0.41 --socket "$TMP/x.sock" --mode 0066
check "ring_max_qp past 16384 is refused" refused "ring_max_qp must be an integer from 1 to 16384" \
	x --gid 10.212.0.41 --socket "$TMP/x.sock" --ring-max-qp 16385
usage() { local rc=0; ctl add-vm x --socket "$TMP/x.sock" 2> /dev/null || rc=$?; [ "$rc" = 2 ]; }
check "add-vm without --gid: usage error, exit 2" usage
check "after the refusals: no x.sock, no connection lost" \
	eval '[ ! -e "$TMP/x.sock" ] && kill -0 $LCLI && kill -0 $LSRV'

# (c) a second runtime VM; a ping-pong between the two added VMs
check "add-vm delta: exit 0" ctl add-vm delta --gid 10.212.0.32 --socket "$TMP/delta.sock" --max-cq 4 --max-qp 4
pair() {
	local spid rc=0
	ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/gamma.sock" -p 18621 -s 2000 -n 200 -c > "$TMP/gd.srv" 2>&1 &
	spid=$!
	wait_listen "$NSA" 18621
	timeout 60 ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/delta.sock" -p 18621 -s 2000 \
		-n 200 -c 127.0.0.1 > "$TMP/gd.cli" 2>&1 || rc=$?
	wait "$spid" || rc=$?
	[ "$rc" = 0 ] && grep -q '^800000 bytes in' "$TMP/gd.cli" && ! grep -q invalid "$TMP/gd.cli" "$TMP/gd.srv" ||
		{ cat "$TMP/gd.srv" "$TMP/gd.cli" | sed 's/^/    /'; return 1; }
}
check "RC ping-pong gamma <-> delta (-c, 200 x 2000 B): both added VMs work" pair

# (d) del-vm
check "del-vm gamma: exit 0" ctl del-vm gamma
check "... its socket is gone, list no longer has it" eval '[ ! -e "$TMP/gamma.sock" ] && names alpha beta eps delta'
redirected=$(jstat .xdp.redirected); passed=$(jstat .xdp.passed)
roce 10.212.0.31 20
# (passed also counts the hosts' own ARP and neighbour discovery)
check "... XDP leaves frames to its GID to the kernel again (20 passed, none redirected)" \
	eval '[ $(( $(jstat .xdp.passed) - passed )) -ge 20 ] && [ $(( $(jstat .xdp.redirected) - redirected )) = 0 ]'

del_again() { local rc=0; ctl del-vm gamma 2> "$TMP/del.err" || rc=$?; [ "$rc" = 1 ] && grep -q "no VM named 'gamma'" "$TMP/del.err"; }
check "del-vm of a VM that is not there: exit 1, says so" del_again

# (e) reload: eps leaves the file, zeta joins; alpha, beta unchanged;
# delta (vrdmactl's) stays.
write_conf "" "$(vm alpha 11; vm beta 12; vm zeta 16)" vms.conf > /dev/null
reloaded() {	# wait for the reload's summary line number $1
	for _ in $(seq 50); do [ "$(grep -c 'reload: .*VM(s) added' "$DLOG")" -ge "$1" ] && return 0; sleep 0.1; done
	return 1
}
kill -HUP "$DPID"
check "reload: 1 added, 1 removed, 2 unchanged" eval 'reloaded 1 && grep -q "1 VM(s) added, 1 removed, 0 re-created, 2 unchanged, 0 failed" "$DLOG"'
check "... served: alpha beta delta zeta; eps's socket gone" \
	eval 'names alpha beta zeta delta && [ ! -e "$TMP/eps.sock" ] && origin zeta config && origin delta runtime'
before=$(vm_rx zeta)
roce 10.212.0.16 10
check "... frames to zeta's GID reach zeta" test "$(( $(vm_rx zeta) - before ))-$GOT" = "10-0"

# A changed VM is re-created; a file VM named like vrdmactl's is not served.
write_conf "" "$(vm alpha 11; vm beta 12; vm zeta 17; vm delta 18)" vms.conf > /dev/null
kill -HUP "$DPID"
check "reload with zeta changed and a file 'delta': 1 re-created, 1 failed" \
	eval 'reloaded 2 && grep -q "0 VM(s) added, 0 removed, 1 re-created, 2 unchanged, 1 failed" "$DLOG"'
check "... the error names delta and says what to do" grep -q "vm delta: a VM of that name was added by vrdmactl" "$DLOG"
check "... zeta has its new GID, delta is still vrdmactl's" \
	eval '[ "$(ctl list --json | jq -r ".[] | select(.name == \"zeta\") | .gids[0]")" = 10.212.0.17 ] && origin delta runtime'

# A file that does not parse changes nothing.
cp "$CONF" "$TMP/good.conf"
echo "bogus line" >> "$CONF"
BEFORE=$(snapshot)
kill -HUP "$DPID"
bad_reload() {
	for _ in $(seq 50); do grep -q "reload: .*expected 'key = value'.*; nothing changed" "$DLOG" && break; sleep 0.1; done
	grep -q "reload: .*; nothing changed" "$DLOG" && [ "$(snapshot)" = "$BEFORE" ]
}
check "reload of a broken file: the error with its line, nothing changed" bad_reload
cp "$TMP/good.conf" "$CONF"

# (f) the ping-pong saw none of it
undisturbed() {
	kill -0 "$LCLI" && kill -0 "$LSRV" ||
		{ echo "    the ping-pong ended:"; cat "$TMP"/long.* | sed 's/^/    /'; return 1; }
	[ "$(cqes alpha)" -gt "$((CQES0 + 100))" ] || { echo "    alpha's completions stalled"; return 1; }
	! grep -Eq 'vm (alpha|beta): (vhost-user connection closed|removed)' "$DLOG" ||
		{ echo "    $(grep -E 'vm (alpha|beta)' "$DLOG" | tail -3)"; return 1; }
	[ ! -s "$TMP/long.srv.err" ] && [ ! -s "$TMP/long.cli.err" ] && ! grep -q invalid "$TMP/long.srv" "$TMP/long.cli" ||
		{ echo "    it complained:"; head -5 "$TMP"/long.*; return 1; }
}
check "alpha <-> beta ping-pong ran through all of it: connected, completing, silent" undisturbed
kill "$LCLI" "$LSRV" 2> /dev/null || true
wait "$LCLI" "$LSRV" 2> /dev/null || true

stop_daemon
check "vrdmad exits cleanly, every VM socket removed, no sanitizer report" \
	eval '! ls "$TMP"/*.sock 2> /dev/null | grep -v ctl.sock && ! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$DLOG"'
summary vms
