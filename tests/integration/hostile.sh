#!/bin/bash
# A hostile front end costs only its own device (issue 15): on VM gamma,
# hostile (tests/integration/hostile.c) gives a blocking full pipe as the
# control queue's call fd, then a memory table from an unsealed memfd that
# it would shrink. Both are refused and drop gamma's connection, while an
# RC ping-pong between alpha and beta, on the same (only) worker, keeps
# completing; gamma works again after, and the daemon stays up, ASan-clean.
# Then gamma deregisters its MR under a 32 MiB WRITE from delta (vrdma_test's
# case): that WRITE ends in REM_ACCESS_ERR, and alpha goes on completing.
# Then gamma floods 4 GiB of UC WRITEs (UC has no window) at the peer
# namespace, where nobody serves RoCE, and READs 4 GiB from delta, and a
# peer in that namespace repeats a 64 MiB READ from gamma 4000 times: the
# worker must go on serving alpha and the control socket, and never look
# stuck to the watchdog (issue 26).
#
#   netns vrA-ID
#   +---------------------------------------------------------+
#   | vrdmad on vA-ID (XDP), one worker                       |
#   |   vm alpha 10.213.0.11 <- vrdma-pingpong -> vm beta .12 |
#   |   vm gamma 10.213.0.13 <- hostile                       |
#   |   vm gamma <- vrdma_test -> vm delta 10.213.0.14        |
#   |   vm gamma -- 4 GiB of UC WRITEs --------------------------> 10.213.0.2
#   |   vm gamma <-- READ, repeated 4000 times ------------------- (udp.py)
#   +---------------------------------------------------------+    (vB-ID)
set -e
source "$(dirname "$0")/../lib.sh"
need_pingpong
HOSTILE=${HOSTILE:-$HERE/../build/asan/hostile}
[ -x "$HOSTILE" ] || { echo "no $HOSTILE: make build/asan/hostile" >&2; exit 1; }
: "${VRDMA_TEST:?set VRDMA_TEST to the vrdma_test binary}"

setup_pair "10.213.0.1/24" "10.213.0.2/24"
vm() { vm_section "$1" "10.213.0.$2"; }	# NAME LAST-OCTET
CONF=$(write_conf "" "$(vm alpha 11; vm beta 12; vm gamma 13; vm delta 14)" hostile.conf)

echo "hostile: a hostile front end costs only its own device ($NSA)"
# as under systemd with WatchdogSec=2: a worker not polling for 1 s is
# logged as stuck (and would cost the daemon its watchdog ping)
WATCHDOG_USEC=2000000 start_daemon "$CONF"

# alpha's completions; bounded, since a stalled daemon may not answer
cqes() {
	timeout 5 ip netns exec "$NSA" "$VRDMACTL" -s "$TMP/ctl.sock" stats --json |
		jq -e '.vms[] | select(.name == "alpha") | .device.cqes'
}

long_pingpong "$TMP/alpha.sock" "$TMP/beta.sock" 18630
for _ in $(seq 100); do [ "$(cqes)" -gt 100 ] && break; sleep 0.1; done

# attack MODE: hostile MODE on gamma, holding what it gave for 2 s; it must
# be refused, and alpha must complete meanwhile (the old daemon's worker
# blocked in write() on the pipe for as long as it was held).
attack() {
	local hpid c0 c1 rc=0 hrc=0
	ip netns exec "$NSA" timeout 20 "$HOSTILE" "$1" "$TMP/gamma.sock" 2 > "$TMP/$1.out" 2>&1 &
	hpid=$!
	sleep 0.5
	c0=$(cqes) || true
	sleep 1
	c1=$(cqes) || true
	[[ "$c0" =~ ^[0-9]+$ && "$c1" =~ ^[0-9]+$ ]] && [ "$c1" -gt "$((c0 + 20))" ] ||
		{ echo "    alpha's completions in 1 s: $c0 -> $c1"; rc=1; }
	wait "$hpid" || hrc=$?
	[ "$hrc" = 0 ] && grep -q '^refused' "$TMP/$1.out" ||
		{ echo "    hostile exit $hrc:"; sed 's/^/    /' "$TMP/$1.out"; rc=1; }
	kill -0 "$DPID" 2> /dev/null || { echo "    vrdmad died"; rc=1; }
	return $rc
}
logged() { grep -qF "$1" "$DLOG" || { echo "    not in the log: $1"; return 1; }; }
drops() { [ "$(grep -c 'vm gamma: vhost-user connection closed' "$DLOG")" -ge "$1" ]; }

check "a blocking full pipe as call fd: refused, alpha completes meanwhile" attack call-pipe
check "... logged as not an eventfd, gamma's connection dropped" \
	eval 'logged "vm gamma: vhost-user: SET_VRING_CALL: the fd is a pipe, not an eventfd" && drops 1'
check "an unsealed memfd as memory: refused, alpha completes meanwhile" attack unsealed
check "... logged with what to do, gamma's connection dropped" \
	eval 'logged "vm gamma: vhost-user: SET_MEM_TABLE: region 0: its fd is not sealed with F_SEAL_SHRINK; give a sealed memfd" && drops 2'
check "gamma works again with a well-behaved front end" \
	eval 'ip netns exec "$NSA" timeout 20 "$HOSTILE" ok "$TMP/gamma.sock" > "$TMP/ok.out" 2>&1'

# vrdma_test's "MR deregistered under a WRITE" between gamma and delta, while
# alpha must go on completing.
dereg_under_write() {
	local n c0 c1 rc=0
	n=$("$VRDMA_TEST" 2>&1 | sed -n 's/^ *\([0-9]*\)  MR deregistered under a WRITE.*/\1/p')
	[ -n "$n" ] || { echo "    vrdma_test has no such test"; return 1; }
	c0=$(cqes) || true
	ip netns exec "$NSA" timeout 120 "$VRDMA_TEST" "$TMP/gamma.sock" "$TMP/delta.sock" "$n" \
		> "$TMP/dereg.out" 2>&1 || { sed 's/^/    /' "$TMP/dereg.out"; rc=1; }
	c1=$(cqes) || true
	[[ "$c0" =~ ^[0-9]+$ && "$c1" =~ ^[0-9]+$ ]] && [ "$c1" -gt "$((c0 + 20))" ] ||
		{ echo "    alpha's completions meanwhile: $c0 -> $c1"; rc=1; }
	kill -0 "$DPID" 2> /dev/null || { echo "    vrdmad died"; rc=1; }
	return $rc
}
check "gamma's MR deregistered under delta's 32 MiB WRITE: REM_ACCESS_ERR, alpha completes" \
	dereg_under_write

# vm_tx WHO: the frames WHO's device sent so far (its transport counters)
vm_tx() {
	timeout 5 ip netns exec "$NSA" "$VRDMACTL" -s "$TMP/ctl.sock" stats --json |
		jq -e ".vms[] | select(.name == \"$1\") | .device.transport.tx_packets"
}
# flood MODE ARG WHO: hostile MODE on gamma (ARG: its target) posts 4 GiB of
# work at once; the worker, which used to send it all in one eng_poll (tens
# of seconds), must keep alpha completing, and stats must answer, while
# WHO's frames go out.
flood() {
	local hpid c0 c1 g0 g1 rc=0 hrc=0
	ip netns exec "$NSA" timeout 60 "$HOSTILE" "$1" "$TMP/gamma.sock" "$2" 3 \
		> "$TMP/flood.out" 2>&1 &
	hpid=$!
	for _ in $(seq 100); do grep -q '^posted' "$TMP/flood.out" && break; sleep 0.1; done
	sleep 0.5
	c0=$(cqes) || true
	g0=$(vm_tx "$3") || true
	sleep 1
	c1=$(cqes) || true
	g1=$(vm_tx "$3") || true
	echo "    in 1 s: alpha's completions $c0 -> $c1, $3's frames $g0 -> $g1"
	[[ "$c0" =~ ^[0-9]+$ && "$c1" =~ ^[0-9]+$ ]] && [ "$c1" -gt "$((c0 + 20))" ] || rc=1
	[[ "$g0" =~ ^[0-9]+$ && "$g1" =~ ^[0-9]+$ ]] && [ "$g1" -gt "$((g0 + 1000))" ] ||
		{ echo "    the flood did not flow"; rc=1; }
	wait "$hpid" || hrc=$?
	[ "$hrc" = 0 ] && grep -q '^posted 64' "$TMP/flood.out" ||
		{ echo "    hostile exit $hrc:"; sed 's/^/    /' "$TMP/flood.out"; rc=1; }
	! grep -q 'worker is stuck' "$DLOG" || { echo "    $(grep 'worker is stuck' "$DLOG")"; rc=1; }
	kill -0 "$DPID" 2> /dev/null || { echo "    vrdmad died"; rc=1; }
	return $rc
}
check "gamma floods 4 GiB of UC WRITEs: alpha completes, stats answer, no stuck worker" \
	flood uc-flood 10.213.0.2 gamma
check "gamma READs 4 GiB from delta (its responder's turn): alpha completes, no stuck worker" \
	flood read-flood "$TMP/delta.sock" delta

# gamma's transport counter NAME
vm_cnt() {
	timeout 5 ip netns exec "$NSA" "$VRDMACTL" -s "$TMP/ctl.sock" stats --json |
		jq -e ".vms[] | select(.name == \"gamma\") | .device.transport.$1"
}
# A peer (the other namespace: no vrdmad, udp.py's frames) READs 64 MiB from
# gamma and asks again 3000 times, as a requester that keeps retrying
# would: each repeat starts the responses again (IBA 9.7.5.1.x), each time
# from the same place. Then 1000 repeats that ask for twice as much, which
# the daemon used to take as new work (4 GiB for a 60-byte frame): dropped,
# counted. alpha must go on completing and the worker never look stuck.
dup_reads() {
	local hpid c0 c1 g0 g1 qpn rkey va rc=0 hrc=0
	ip netns exec "$NSA" timeout 60 "$HOSTILE" read-target "$TMP/gamma.sock" 10.213.0.2 5 \
		> "$TMP/target.out" 2>&1 &
	hpid=$!
	for _ in $(seq 100); do grep -q '^target' "$TMP/target.out" && break; sleep 0.1; done
	read -r _ qpn rkey va < <(grep '^target' "$TMP/target.out") ||
		{ sed 's/^/    /' "$TMP/target.out"; return 1; }
	c0=$(cqes) || true
	g0=$(vm_tx gamma) || true
	ip netns exec "$NSB" "$PY" "$HERE/integration/udp.py" roce-read "$IFB" \
		"$(mac_of "$NSA" "$IFA")" 10.213.0.2 10.213.0.13 "$qpn" "$rkey" "$va" $((64 << 20)) \
		3000 bad=1000 || rc=1
	sleep 1
	c1=$(cqes) || true
	g1=$(vm_tx gamma) || true
	echo "    alpha's completions $c0 -> $c1, gamma's frames $g0 -> $g1;" \
		"repeats served $(vm_cnt duplicate_read), refused $(vm_cnt drop_duplicate_read)"
	[[ "$c0" =~ ^[0-9]+$ && "$c1" =~ ^[0-9]+$ ]] && [ "$c1" -gt "$((c0 + 20))" ] || rc=1
	[[ "$g0" =~ ^[0-9]+$ && "$g1" =~ ^[0-9]+$ ]] && [ "$g1" -gt "$((g0 + 1000))" ] ||
		{ echo "    gamma did not answer"; rc=1; }
	[ "$(vm_cnt duplicate_read)" -gt 0 ] && [ "$(vm_cnt drop_duplicate_read)" -gt 0 ] || rc=1
	wait "$hpid" || hrc=$?
	[ "$hrc" = 0 ] || { echo "    hostile exit $hrc:"; sed 's/^/    /' "$TMP/target.out"; rc=1; }
	! grep -q 'worker is stuck' "$DLOG" || { echo "    $(grep 'worker is stuck' "$DLOG")"; rc=1; }
	kill -0 "$DPID" 2> /dev/null || { echo "    vrdmad died"; rc=1; }
	return $rc
}
check "a peer repeats a 64 MiB READ 4000 times: served within the budget, alpha completes" \
	dup_reads

undisturbed() {
	kill -0 "$LCLI" 2> /dev/null && kill -0 "$LSRV" 2> /dev/null ||
		{ echo "    the ping-pong ended:"; cat "$TMP"/long.* | sed 's/^/    /'; return 1; }
	! grep -Eq 'vm (alpha|beta): vhost-user connection closed' "$DLOG" ||
		{ echo "    $(grep -E 'vm (alpha|beta)' "$DLOG" | tail -3)"; return 1; }
	[ ! -s "$TMP/long.srv.err" ] && [ ! -s "$TMP/long.cli.err" ] ||
		{ echo "    it complained:"; head -5 "$TMP"/long.*.err; return 1; }
}
check "alpha <-> beta ping-pong ran through it all: connected, silent" undisturbed
kill "$LCLI" "$LSRV" 2> /dev/null || true
wait "$LCLI" "$LSRV" 2> /dev/null || true

RC=dead
kill -0 "$DPID" 2> /dev/null && stop_daemon
check "vrdmad exits 0, no sanitizer report" \
	eval '[ "$RC" = 0 ] && ! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$DLOG"'
summary hostile
