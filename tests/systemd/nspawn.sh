#!/bin/bash
# vrdmad.service under a real systemd as PID 1: a Debian bookworm container
# booted with systemd-nspawn, vrdmad installed into it with `make install`,
# then enable/start, STATUS=, XDP on the interface, reload (a VM added), stop, the
# watchdog restart, `systemd-analyze security`, and frames and a ping-pong
# through the sandboxed daemon.
#
#   host                       container vrdn-ID: systemd-nspawn -b, systemd as PID 1,
#                              its own netns; root = overlay of the cached root + make install
#   +-------------------+      +--------------------------------------------------+
#   | ve-vrdn-ID (up)   |<---->| host0 10.204.0.1/24                              |
#   |  udp.py sends     | veth |   prog/xdp vrdma_xdp, AF_XDP <- vrdmad.service   |
#   |  RoCEv2 frames    |      |   /run/vrdmad/{control,alpha,beta}.sock          |
#   +-------------------+      |   vrdma-pingpong alpha <-> beta                  |
#    cgroup vrdmad-nspawn-vrdn-ID +--------------------------------------------------+
#
# (--network-veth, not a veth of ours moved in with --network-interface=:
# nspawn refuses an interface udev has not initialized, and there is no udev
# on the host.)
#
# The container comes from tests/systemd/container.sh (the root is built once
# and cached; a run with it cached takes ~20 s).
#
# Needs root, systemd-container (systemd-nspawn), debootstrap, iproute2, and a
# built tree (`make`): this script only runs `make install` into the overlay.
# Exits 77 (SKIP) only when no container can be booted here.
set -eo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WATCHDOG_SEC=3

say() { echo "nspawn: $*" >&2; }
skip() { echo "SKIP: $0: $*" >&2; exit 77; }
die() { say "$*"; exit 1; }

# ---------------------------------------------------------------- this run

ID=$(printf '%04x' $(( ($$ ^ RANDOM) & 0xffff )))
NAME=vrdn-$ID
IFC=host0		# the container's end of the veth: vrdmad's [port]
IFH=ve-$NAME	# the host's end
TMP=$(mktemp -d /tmp/vrdmad-nspawn.XXXXXX)
CT_DIR=$TMP
NTEST=0
NFAIL=0
# shellcheck source=tests/systemd/container.sh
. "$HERE/container.sh"

cleanup() {
	ct_cleanup
	ip link del "$IFH" 2> /dev/null || true
	[ -n "${KEEP_TMP:-}" ] || rm -rf --one-file-system "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rc=0
ct_need || rc=$?
[ $rc = 0 ] || { [ $rc = 77 ] && skip "no container here"; exit $rc; }

# ---------------------------------------------------------------- the root

ct_prepare "$NAME" || die "the container's root could not be made"
write_conf() {
	cat > "$ROOT/etc/vrdmad.conf" <<EOF
[daemon]
log_level = info
[port]
interface = $IFC
[vm alpha]
gid = 10.204.0.1
socket_owner = nobody
socket_group = nogroup
socket_mode = 0660
$1
EOF
}
write_conf ""

rc=0
ct_boot "$NAME" --network-veth || rc=$?
[ $rc = 0 ] || { [ $rc = 77 ] && skip "systemd-nspawn cannot boot a container here"; exit $rc; }
ip link set "$IFH" up
ct ip addr add 10.204.0.1/24 dev "$IFC"
ct ip link set "$IFC" up

# Numbered checks, as in tests/lib.sh.
check() {
	local what=$1
	shift
	NTEST=$((NTEST + 1))
	if ("$@"); then
		printf '  [%2d] %-66s ok\n' "$NTEST" "$what"
	else
		printf '  [%2d] %-66s FAIL\n' "$NTEST" "$what"
		NFAIL=$((NFAIL + 1))
		echo "---- journal of vrdmad.service:"
		ct journalctl -u vrdmad --no-pager -n 25 -o short-monotonic 2>&1 || true
		echo "----"
	fi
}
# why MSG: say why a check fails (to stderr) and fail it (checks run in a subshell).
why() { echo "      $*" >&2; exit 1; }
prop() { ct systemctl show -p "$1" --value vrdmad; }
xdp_on() { ct ip link show dev "$IFC" | grep -q 'prog/xdp'; }
xdp_id() { ct ip -d link show dev "$IFC" | sed -n 's/.*prog\/xdp id \([0-9]*\) .*/\1/p'; }
STATE=/run/vrdmad/xdp-$IFC.state
# wait_for SECONDS CMD...: until CMD succeeds.
wait_for() {
	local n=$(($1 * 10))
	shift
	while [ "$n" -gt 0 ]; do "$@" && return 0; n=$((n - 1)); sleep 0.1; done
	return 1
}

# ---------------------------------------------------------------- checks
echo "nspawn: vrdmad.service under systemd $(ct systemctl --version | awk 'NR == 1 { print $2 }') in $NAME, port $IFC"

# Documentation= is checked too (`man` opens each page) once make install
# puts man pages in place.
MAN=--man=no
ct test -e /usr/share/man/man8/vrdmad.8 && MAN=--man=yes
verify_clean() {
	local out
	out=$(ct systemd-analyze verify "$MAN" /usr/lib/systemd/system/vrdmad.service 2>&1) ||
		why "systemd-analyze verify failed: $out"
	[ -z "$out" ] || why "systemd-analyze verify: $out"
}
check "systemd-analyze verify ($MAN) of the installed unit is clean" verify_clean

start_ok() {
	local st
	ct systemctl enable --now vrdmad > /dev/null 2>&1 || why "systemctl enable --now failed"
	[ "$(ct systemctl is-active vrdmad)" = active ] || why "not active"
	[ "$(ct systemctl is-enabled vrdmad)" = enabled ] || why "not enabled"
	st=$(prop StatusText)
	echo "      StatusText: $st" >&2
	case $st in "serving 1 VM(s) on $IFC "*) ;; *) why "unexpected StatusText" ;; esac
}
check "enable --now: active, StatusText \"serving 1 VM(s) on $IFC ...\"" start_ok

attached() {
	local own
	xdp_on || why "no XDP program on $IFC: $(ct ip link show dev "$IFC")"
	ct vrdmactl status > "$TMP/status.txt" 2>&1 || why "vrdmactl status: $(cat "$TMP/status.txt")"
	grep -q alpha "$TMP/status.txt" || why "vm alpha not in vrdmactl status"
	own=$(ct stat -c '%U:%G %a' /run/vrdmad/alpha.sock 2>&1)
	[ "$own" = "nobody:nogroup 660" ] || why "alpha.sock is '$own', not nobody:nogroup 660"
}
check "XDP on $IFC, vrdmactl status, alpha.sock nobody:nogroup 0660" attached

# systemctl reload with a new [vm beta]: beta is served, alpha untouched
# (same socket inode: it was neither closed nor re-made), same process.
reload_applied() {
	local pid ino st
	pid=$(prop MainPID)
	ino=$(ct stat -c %i /run/vrdmad/alpha.sock)
	write_conf "[vm beta]
gid = 10.204.0.3"
	ct systemctl reload vrdmad || why "systemctl reload failed"
	wait_for 5 journal_says '1 VM(s) added, 0 removed, 0 re-created, 1 unchanged, 0 failed' ||
		why "no reload summary in the journal: $(ct journalctl -u vrdmad -o cat | grep reload | tail -3)"
	[ "$(ct systemctl is-active vrdmad)" = active ] || why "$(ct systemctl is-active vrdmad) after the reload"
	[ "$(prop MainPID)" = "$pid" ] || why "the main process changed ($pid -> $(prop MainPID))"
	[ "$(ct vrdmactl list --json | jq -r '[.[].name] | join(" ")')" = "alpha beta" ] ||
		why "vrdmactl list: $(ct vrdmactl list 2>&1)"
	ct test -S /run/vrdmad/beta.sock || why "no beta.sock"
	[ "$(ct stat -c %i /run/vrdmad/alpha.sock)" = "$ino" ] || why "alpha.sock was re-made"
	st=$(prop StatusText)
	case $st in "serving 2 VM(s) on $IFC "*) ;; *) why "StatusText: $st" ;; esac
	xdp_on || why "no XDP program on $IFC after the reload"
}
journal_says() { ct journalctl -u vrdmad -o cat | grep -q "$1"; }
check "reload (a new [vm beta]): beta served, alpha's socket kept, same process" reload_applied
# Whatever the reload did, carry on with a running vrdmad.
if [ "$(ct systemctl is-active vrdmad)" != active ]; then
	ct systemctl reset-failed vrdmad 2> /dev/null || true
	ct systemctl start vrdmad || true
fi

stopped() {
	xdp_on || why "no XDP program on $IFC before the stop"
	ct systemctl stop vrdmad || why "systemctl stop failed"
	[ "$(ct systemctl is-active vrdmad)" = inactive ] ||
		why "$(ct systemctl is-active vrdmad) after stop, not inactive"
	! xdp_on || why "an XDP program is left on $IFC: $(ct ip link show dev "$IFC")"
	! ct test -e "$STATE" || why "$STATE is left: $(ct cat "$STATE")"
}
check "stop: inactive, no XDP program and no xdp-$IFC.state left" stopped

restarted_since() {
	[ "$(prop NRestarts)" -gt "$1" ] && [ "$(ct systemctl is-active vrdmad)" = active ]
}
restarted_by_watchdog() {
	local n0 pid t id0 id1
	mkdir -p "$ROOT/etc/systemd/system/vrdmad.service.d"
	printf '[Service]\nWatchdogSec=%s\n' "$WATCHDOG_SEC" > "$ROOT/etc/systemd/system/vrdmad.service.d/watchdog.conf"
	ct systemctl daemon-reload
	ct systemctl start vrdmad || why "start failed"
	[ "$(prop WatchdogUSec)" = "${WATCHDOG_SEC}s" ] || why "WatchdogUSec is $(prop WatchdogUSec)"
	n0=$(prop NRestarts)
	pid=$(prop MainPID)
	[ "${pid:-0}" -gt 1 ] || why "no main process ($pid)"
	# No ExecStopPost= cleans up after a killed vrdmad: the next one does,
	# from the record in /run/vrdmad.
	[ -z "$(prop ExecStopPost)" ] || why "the unit has ExecStopPost=$(prop ExecStopPost)"
	id0=$(xdp_id)
	[ -n "$id0" ] || why "no XDP program on $IFC before the kill"
	[ "$(ct cat "$STATE" 2>&1 | cut -d' ' -f2)" = "$id0" ] ||
		why "$STATE does not record program $id0: $(ct cat "$STATE" 2>&1)"
	ct kill -STOP "$pid"
	t=$SECONDS
	# systemd kills it after WatchdogSec, restarts it RestartSec (1 s) later.
	wait_for $((WATCHDOG_SEC + 10)) restarted_since "$n0" ||
		why "not restarted: NRestarts $n0 -> $(prop NRestarts), $(ct systemctl is-active vrdmad), Result $(prop Result)"
	echo "      stopped pid $pid: restarted after $((SECONDS - t)) s as pid $(prop MainPID), NRestarts $n0 -> $(prop NRestarts)" >&2
	[ "$(prop MainPID)" != "$pid" ] || why "same MainPID"
	ct journalctl -u vrdmad -o cat | grep -q 'Watchdog timeout' || why "no 'Watchdog timeout' in the journal"
	# The new vrdmad removed the program the killed one left, and attached its own.
	journal_says "removing the XDP program vrdma_xdp (id $id0) that a vrdmad which did not exit cleanly left on $IFC" ||
		why "the restarted vrdmad did not say it removed program $id0"
	id1=$(xdp_id)
	[ -n "$id1" ] && [ "$id1" != "$id0" ] || why "XDP program on $IFC after the restart: '$id1' (before: $id0)"
	echo "      XDP program $id0 of the killed vrdmad removed at the restart, $id1 attached" >&2
	ct vrdmactl status > /dev/null || why "vrdmactl status fails after the restart"
}
check "watchdog: killed, restarted; the new vrdmad removed the old XDP" restarted_by_watchdog

# The score of the unit as loaded: 10 is fully exposed, 0 fully sandboxed.
EXPOSURE=$(ct systemd-analyze security vrdmad.service 2>&1 |
	sed -n 's/.*Overall exposure level for vrdmad.service: \([0-9.]*\).*/\1/p')
exposure_ok() {
	[ -n "$EXPOSURE" ] || why "no exposure level: $(ct systemd-analyze security vrdmad.service 2>&1 | tail -n 3)"
	awk -v e="$EXPOSURE" 'BEGIN { exit !(e <= 3.0) }' || why "exposure $EXPOSURE > 3.0"
}
check "systemd-analyze security vrdmad.service: exposure ${EXPOSURE:-?} (<= 3.0)" exposure_ok

# The data path under the unit's sandbox (both need a running vrdmad with
# alpha and beta: the config of check 4, the service restarted if needed).
ct systemctl restart vrdmad || true

# RoCEv2 frames sent from the host's end to alpha's GID: the XDP program
# redirects them to vrdmad's AF_XDP socket, which receives them.
rx_frames_at_least() {
	ct vrdmactl stats | awk -v n="$1" '$1 == "rx_frames" && $2 >= n { ok = 1 } END { exit !ok }'
}
wire_rx() {
	local mac n=20
	mac=$(ct cat "/sys/class/net/$IFC/address")
	/usr/bin/python3 "$REPO/tests/integration/udp.py" roce "$IFH" "$mac" 10.204.0.2 10.204.0.1 "$n" ||
		why "could not send frames on $IFH"
	wait_for 3 rx_frames_at_least "$n" ||
		why "vrdmad did not receive the $n frames: $(ct vrdmactl stats | grep -E 'redirected|rx_frames|unknown_gid|icrc')"
	ct vrdmactl stats | awk '$1 == "redirected" || $1 == "rx_frames" { printf "      %s %s\n", $1, $2 }' >&2
}
check "RoCEv2 frames from the host's end reach vrdmad via XDP, AF_XDP" wire_rx

# Two VMs of this vrdmad, alpha and beta: vrdma-pingpong between them (the
# vhost-user sockets, guest memory, the workers, in the sandbox).
pingpong() {
	# shellcheck disable=SC2016
	ct sh -c 'vrdma-pingpong -d /run/vrdmad/alpha.sock -g 0 -n 100 > /tmp/pp-server.log 2>&1 &
		sleep 0.3
		timeout 20 vrdma-pingpong -d /run/vrdmad/beta.sock -g 0 -n 100 127.0.0.1 > /tmp/pp-client.log 2>&1
		rc=$?; wait; exit $rc' || why "vrdma-pingpong failed: $(ct cat /tmp/pp-client.log /tmp/pp-server.log)"
	ct grep -h 'iters in' /tmp/pp-client.log | sed 's/^/      /' >&2
	[ "$(ct systemctl is-active vrdmad)" = active ] || why "vrdmad is $(ct systemctl is-active vrdmad) after it"
}
check "vrdma-pingpong between its VMs alpha and beta (RC, 100 iters)" pingpong

# systemctl restart every 2 s under a data-checked ping-pong: the store
# keeps both VMs' connections and state, the ping-pong never sees it (a
# lost connection would end it), the journal says each VM was restored.
# The ping-pong lasts ~25 s at the rate a short one has here
# (tests/pp-iters.sh): the three restarts fall in its first half.
restart_under_pingpong() {
	local i n0 n1 gaps iters bytes cal
	n0=$(ct journalctl -u vrdmad -o cat | grep -c 'restored as vrdmad' || true)
	# shellcheck disable=SC2016
	ct sh -c 'vrdma-pingpong -d /run/vrdmad/alpha.sock -g 0 -s 4096 -n 5000 -c -e > /dev/null 2>&1 &
		sleep 0.3
		vrdma-pingpong -d /run/vrdmad/beta.sock -g 0 -s 4096 -n 5000 -c -e 127.0.0.1 > /tmp/cal-client.log 2>&1
		rc=$?; wait; exit $rc' || why "the short ping-pong failed: $(ct cat /tmp/cal-client.log)"
	cal=$(ct cat /tmp/cal-client.log)
	iters=$("$REPO/tests/pp-iters.sh" 25 20000 600000 <<< "$cal")
	bytes=$((iters * 4096 * 2))
	# shellcheck disable=SC2016
	ct sh -c 'vrdma-pingpong -d /run/vrdmad/alpha.sock -g 0 -s 4096 -n '"$iters"' -c -e > /tmp/rp-server.log 2>&1 &
		echo $! > /tmp/rp-server.pid
		sleep 0.3
		vrdma-pingpong -d /run/vrdmad/beta.sock -g 0 -s 4096 -n '"$iters"' -c -e 127.0.0.1 > /tmp/rp-client.log 2>&1 &
		echo $! > /tmp/rp-client.pid'
	for i in 1 2 3; do
		sleep 2
		# shellcheck disable=SC2016
		ct sh -c 'kill -0 $(cat /tmp/rp-client.pid)' ||
			why "the ping-pong ended before restart $i: $(ct cat /tmp/rp-client.log)"
		ct systemctl restart vrdmad || why "systemctl restart $i failed"
	done
	# shellcheck disable=SC2016
	ct sh -c 'while kill -0 $(cat /tmp/rp-client.pid) 2> /dev/null; do sleep 0.2; done
		grep -q "^'"$bytes"' bytes in" /tmp/rp-client.log &&
		grep -q "^'"$bytes"' bytes in" /tmp/rp-server.log' ||
		why "the ping-pong did not outlive the restarts: $(ct cat /tmp/rp-client.log /tmp/rp-server.log)"
	echo "      $(grep 'iters in' <<< "$cal"); then $(ct cat /tmp/rp-client.log | grep 'iters in')" >&2
	n1=$(ct journalctl -u vrdmad -o cat | grep -c 'restored as vrdmad' || true)
	[ "$((n1 - n0))" = 6 ] || why "$((n1 - n0)) VM(s) restored in 3 restarts, not 6"
	gaps=$(ct journalctl -u vrdmad -o cat | sed -n 's/.*restored as vrdmad [^ ]* left it \([0-9.]*\) ms ago/\1/p' |
		tail -n 6 | tr '\n' ' ')
	echo "      gaps (ms, saved to restored): $gaps" >&2
	ct journalctl -u vrdmad -o cat | grep 'fd(s) handed over' | tail -n 3 | sed 's/^/      /' >&2
	[ "$(ct systemctl is-active vrdmad)" = active ] || why "vrdmad is $(ct systemctl is-active vrdmad)"
}
check "systemctl restart x3 under a data-checked RC ping-pong: both VMs restored" \
	restart_under_pingpong

ct systemctl stop vrdmad || true
echo "nspawn: $((NTEST - NFAIL)) passed, $NFAIL failed"
[ "$NFAIL" = 0 ]
