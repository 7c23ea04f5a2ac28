#!/bin/bash
# systemctl restart under a VM that is using RDMA keeps its state (issue 29,
# level 2; docs/restart.md), with a real systemd as the service manager:
# vrdmad.service as `make install` puts it in place runs in a container
# booted with systemd as PID 1 (tests/systemd/container.sh) that shares the
# host side's network namespace and whose /run/vrdmad is a directory of
# ours, where the service makes the VM's socket; QEMU stays outside, on the
# host, as with libvirt. vrdmad is restarted every few seconds while
# perftest's bandwidth tests and a data-checked ibv_rc_pingpong run between
# the VM and Soft-RoCE (each side the requester in turn), then while a data-checked ping-pong runs between the
# VM and a VM of a second vrdmad.service (both restarted, in turn). No
# program may see an error, ibv_asyncwatch no event, the VM's kernel log no
# report; vrdmad must say it restored the VM each time, with the gap. Then
# crashes: SIGKILL, and SIGABRT at points of the save that SIGTERM started:
# each start restores the VM or starts it afresh (its programs then get the
# fatal event, vrdma0 comes back by itself), never anything else.
#
#   host netns vrA-ID (shared)                          vrC-ID               vrB-ID (shared)
#   +----------------------------------------+   +-------------------+   +------------------------+
#   | container vrdv-ID: systemd, vrdmad     |   | br0               |   | container vrdb-ID:     |
#   |  [port] vA-ID, vm alpha 10.208.0.11    |   |  vA-IDp   vB-IDp  |   |  systemd, vrdmad,      |
#   | br0: vA-ID, tap vv-ID <- the VM (QEMU, |---|  tap vr-ID <- the |---|  [port] vB-ID, vm beta |
#   |      2 vCPUs, slub_debug, vrdma0)      |   |  Soft-RoCE guest  |   |  10.208.0.12           |
#   | run-vrdv-ID/ = its /run/vrdmad          |   |  (rxe0 10.208.0.20)|  |  vrdma-pingpong (host) |
#   +----------------------------------------+   +-------------------+   +------------------------+
#
# Environment: as verbs.sh; UPGRADE_RESTARTS (restarts per program, 3).
# Needs root. Exit 77 (SKIP) only when QEMU cannot run here.
set -e
source "$(dirname "$0")/lib.sh"

RESTARTS=${UPGRADE_RESTARTS:-3}
VM_MANAGED=systemd vm_pair_up upgrade
CTA=vrdv-$ID
guest_use vm
guest_run 30 'modprobe ib_uverbs' > /dev/null
guest_save vm

# svc NAME CMD...: CMD in container NAME.
svc() { (ct_use "$1"; shift; ct "$@"); }
# restart_svc NAME: systemctl restart in NAME; the control socket of the
# VM's vrdmad answers after it.
restart_svc() {
	svc "$1" systemctl restart vrdmad || { echo "    systemctl restart vrdmad in $1 failed"; return 1; }
	ctl_up
}
# guest_running NAME: the current guest's program NAME has not ended.
guest_running() { [ ! -e "$GUEST_SHARE/out/$1.rc" ]; }
# vm_start: how vrdmad says VM alpha's device started (vrdmactl status).
vm_start() { ctl status --json | jq -r '.vms[] | select(.name == "alpha") | .start'; }

# phases N: where the time of alpha's last N restarts went (ms, from the
# journal's monotonic stamps): the old vrdmad from its save to its last
# line, systemd until it starts the next, the next until systemd handed it
# the fds, then until the VM was restored; and where the new vrdmad's own
# start went (its clock, from its "ready" line: load, control, port,
# workers, VMs).
phases() {
	svc "$CTA" journalctl -u vrdmad -o short-monotonic --no-pager | awk -v n="$1" '
		{ t = substr($0, 2, index($0, "]") - 2) + 0 }
		/ saved [0-9]+ of / { s = t }
		/ stopped$/ { e = t }
		/Starting vrdmad.service/ { b = t }
		/fd\(s\) handed over/ { h = t }
		/vm alpha: restored as/ && s {
			out[++k] = sprintf("%.0f+%.0f+%.0f+%.0f", (e - s) * 1000, (b - e) * 1000,
				(h - b) * 1000, (t - h) * 1000); s = 0 }
		/ready: .*started in / && k && out[k] !~ /port/ {
			p = $0; sub(/.*started in /, "", p); sub(/ ms \(/, ": ", p); sub(/\)$/, "", p)
			out[k] = out[k] " (" p ")" }
		END { for (i = k - n + 1; i <= k; i++) if (i > 0) printf "%s ", out[i] }'
}

# restarts_under WHO SERVER... -- CLIENT...: WHO (rxe or vm) serves, the
# other guest is the client, ibv_asyncwatch watches vrdma0; vrdmad is
# restarted RESTARTS times, 3 s apart (three restarts, each 0.1-1.5 s
# under two TCG guests, must fit in a 16 s run: 9-14 s), while they run;
# both must end 0,
# with no asynchronous event, and every restart must restore the VM.
RESTARTS_DONE=0
restarts_under() {
	local who=$1 port=$((20000 + NTEST)) rc=0 n0 n1 i own="" other=vm srv_ip=$RXE
	local -a srv=() cli=()
	shift
	[ "$who" = rxe ] || { other=rxe; srv_ip=$VM; }
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	n0=$(restore_gaps | wc -l)
	guest_use "$who"
	guest_start "srv$NTEST" 240 "${srv[@]}" -p "$port"
	guest_listening "$port" 30 || { echo "    the $who server did not listen"; guest_save "$who"; return 1; }
	guest_save "$who"
	guest_use vm
	guest_start "aw$NTEST" 240 stdbuf -oL ibv_asyncwatch -d vrdma0
	guest_save vm
	guest_use "$other"
	guest_start "cli$NTEST" 240 "${cli[@]}" -p "$port" "$srv_ip"
	guest_save "$other"
	for i in $(seq "$RESTARTS"); do
		sleep 3
		guest_use "$other"
		guest_running "cli$NTEST" || { echo "    the client ended before restart $i"; rc=1; guest_save "$other"; break; }
		guest_save "$other"
		restart_svc "$CTA" || return 1
		RESTARTS_DONE=$((RESTARTS_DONE + 1))
		own+=" $(vm_start | sed -n 's/.*, \([0-9.]*\) ms after this vrdmad started$/\1/p')"
	done
	guest_use "$other"
	guest_wait "cli$NTEST" > "$TMP/client.out" 2>&1 || rc=$?
	guest_save "$other"
	guest_use vm
	guest_run 10 'pkill -x ibv_asyncwatch' > /dev/null 2>&1 || true
	guest_wait "aw$NTEST" > "$TMP/aw.out" 2>&1 || true
	guest_save vm
	guest_use "$who"
	guest_wait "srv$NTEST" > "$TMP/server.out" 2>&1 || rc=$?
	guest_save "$who"
	n1=$(restore_gaps | wc -l)
	echo "    restored $((n1 - n0)) time(s); gaps (ms, saved to restored): $(restore_gaps | tail -n +"$((n0 + 1))" | tr '\n' ' ')"
	echo "    (old vrdmad after its save + systemd + exec to the fds + to the restore: $(phases "$((n1 - n0))"))"
	echo "    (of each gap, the new vrdmad's own start to the restore, by its clock:$own)"
	grep -hE '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+|bytes in' "$TMP/client.out" | head -n 2 | sed 's/^/    /'
	if [ $rc != 0 ]; then
		echo "    -- server:"; tail -n 15 "$TMP/server.out" | sed 's/^/    /'
		echo "    -- client:"; tail -n 15 "$TMP/client.out" | sed 's/^/    /'
		return 1
	fi
	if grep -q 'event_type' "$TMP/aw.out"; then
		echo "    ibv_asyncwatch saw:"; sed 's/^/    /' "$TMP/aw.out"; return 1
	fi
	[ "$((n1 - n0))" = "$RESTARTS" ] || { echo "    restored $((n1 - n0)) times, not $RESTARTS"; return 1; }
}

first_start() {
	local st
	st=$(vm_start)
	echo "    systemd $(svc "$CTA" systemctl --version | awk 'NR == 1 { print $2 }'), $(svc "$CTA" systemctl is-active vrdmad); alpha: $st"
	[ "$st" = new ]
}
check "vrdmad.service under a real systemd: VM alpha on the container's socket" first_start

PERF=(-d rxe0 -x 1 -F -D 16)
VPERF=(-d vrdma0 -x 1 -F -D 16)
# (the VM's SENDs are the data-checked ping-pong's, below)
for t in write read atomic; do
	check "ib_${t}_bw -D 16 VM -> Soft-RoCE, systemctl restart x$RESTARTS: no error" \
		restarts_under rxe "ib_${t}_bw" "${PERF[@]}" -- "ib_${t}_bw" "${VPERF[@]}"
done
check "ibv_rc_pingpong -c (data checked) VM -> Soft-RoCE, systemctl restart x$RESTARTS" \
	restarts_under rxe ibv_rc_pingpong -d rxe0 -g 1 -s 4096 -n 10000 -c -- \
		ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 10000 -c
# Soft-RoCE as the requester: its timers (perftest's timeout 14, retry_cnt
# 7: about 0.5 s) run on while vrdmad restarts, and only its
# retransmissions bridge the gap
for t in write send; do
	check "ib_${t}_bw -D 16 Soft-RoCE -> VM, systemctl restart x$RESTARTS: no error" \
		restarts_under vm "ib_${t}_bw" "${VPERF[@]}" -- "ib_${t}_bw" "${PERF[@]}"
done

# handed_over: the fds systemd handed each start of alpha's vrdmad.
handed_over() { sed -n 's/^\([0-9]*\) fd(s) handed over by the service manager$/\1/p' "$DLOG"; }
same_store() {
	local counts
	counts=$(handed_over | sort | uniq -c)
	echo "    fds handed over, and at how many starts: $(tr -s ' ' <<< "$counts" | tr '\n' ';')"
	[ "$(handed_over | wc -l)" = "$RESTARTS_DONE" ] && [ "$(wc -l <<< "$counts")" = 1 ]
}
check "systemd handed over as many fds at every restart" same_store

# ---- a second vrdmad.service (container vrdb-ID in netns vrB-ID, its port
# vB-ID on C's bridge; VM beta, 10.208.0.12) and vrdma-pingpong on beta
CTB=vrdb-$ID
beta_netns
svc_b_up() {
	svc_up "$CTB" "$NSB" "$IFB" "[vm beta]
gid = $BETA" || return
	RUN_B=$SVC_RUN
	LOG_B=$SVC_LOG
}
svc_b_up || { echo "the second vrdmad.service did not start" >&2; exit 1; }
ct_use "$CTA"
beta_served() {
	ip netns exec "$NSB" "$VRDMACTL" -s "$RUN_B/control.sock" list | grep -q "^beta "
}
check "a second vrdmad.service, VM beta $BETA, in container $CTB" beta_served

# two_vrdmads N: ibv_rc_pingpong -c in the VM against vrdma-pingpong -c on
# beta (serving), while both vrdmads are restarted in turn, N times in all,
# 3 s apart; both ends must finish clean and each restart restore its VM.
# (50000 messages take ~26 s here; the four restarts are over in 12-18 s.)
two_vrdmads() {
	local port=$((20000 + NTEST)) rc=0 hpid i who a0 b0 a1 b1
	a0=$(restore_gaps | wc -l)
	b0=$(grep -c 'restored as vrdmad' "$LOG_B" || true)
	ip netns exec "$NSB" timeout 200 "$VRDMA_PINGPONG" -d "$RUN_B/beta.sock" -g 0 -s 4096 -n 50000 -c -e \
		-p "$port" > "$TMP/server.out" 2>&1 &
	hpid=$!
	wait_listen "$NSB" "$port" 10 || true
	guest_use vm
	guest_start "cli$NTEST" 200 ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 50000 -c -p "$port" "$BETA"
	for i in $(seq "$1"); do
		sleep 3
		guest_running "cli$NTEST" || { echo "    the ping-pong ended before restart $i"; rc=1; break; }
		if [ $((i % 2)) = 1 ]; then who=$CTA; else who=$CTB; fi
		restart_svc "$who" || rc=1
	done
	guest_wait "cli$NTEST" > "$TMP/client.out" 2>&1 || rc=$?
	guest_save vm
	wait "$hpid" || rc=$?
	a1=$(restore_gaps | wc -l)
	b1=$(grep -c 'restored as vrdmad' "$LOG_B" || true)
	echo "    alpha restored $((a1 - a0)), beta $((b1 - b0)) time(s); gaps (ms): alpha $(restore_gaps |
		tail -n +"$((a0 + 1))" | tr '\n' ' ')beta $(sed -n 's/.*restored as vrdmad [^ ]* left it \([0-9.]*\) ms ago/\1/p' "$LOG_B" |
		tail -n +"$((b0 + 1))" | tr '\n' ' ')"
	if [ $rc != 0 ]; then
		echo "    -- server (beta):"; tail -n 15 "$TMP/server.out" | sed 's/^/    /'
		echo "    -- client (VM):"; tail -n 15 "$TMP/client.out" | sed 's/^/    /'
		return 1
	fi
	pp_lines || { echo "    the ping-pong did not finish"; return 1; }
	grep -h 'bytes in\|iters in' "$TMP/server.out" "$TMP/client.out" | sed 's/^/    /'
	if [ "$((a1 - a0))" != "$(( ($1 + 1) / 2 ))" ] || [ "$((b1 - b0))" != "$(($1 / 2))" ]; then
		echo "    not every restart restored its VM"; return 1
	fi
}
check "ibv_rc_pingpong -c VM <-> vrdma-pingpong on beta: both vrdmads restarted, x4" two_vrdmads 4

# ---- crashes. A crash leaves the store as it was: empty while vrdmad runs
# (it empties it once its VMs are up), part of a VM if it died while saving,
# all of it if it died after. Each must end in a restore or a fresh start.
# vrdma0_active SECS: vrdma0/1 ACTIVE in the VM within SECS.
vrdma0_active() {
	guest_use vm
	guest_run "$(($1 + 5))" "for i in \$(seq $(($1 * 5))); do
		rdma link show vrdma0/1 2>/dev/null | grep -q 'state ACTIVE' && exit 0; sleep 0.2; done; exit 1" \
		> /dev/null
}
# pp_rxe N: a data-checked ibv_rc_pingpong of N messages, the VM against
# Soft-RoCE, in the background (each on a port and names of its own);
# pp_rxe_end waits for both: 0 if both ended 0.
PP=21000
pp_rxe() {
	PP=$((PP + 1))
	guest_use rxe
	guest_start "srv$PP" 120 ibv_rc_pingpong -d rxe0 -g 1 -s 4096 -n "$1" -c -p "$PP"
	guest_listening "$PP" 30 || { guest_save rxe; return 1; }
	guest_save rxe
	guest_use vm
	guest_start "pp$PP" 120 ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n "$1" -c -p "$PP" "$RXE"
	guest_save vm
}
pp_rxe_end() {
	local rc=0
	guest_use vm
	guest_wait "pp$PP" > "$TMP/client.out" 2>&1 || rc=$?
	guest_save vm
	guest_use rxe
	# a server whose client is gone waits for a message forever
	[ $rc = 0 ] || guest_run 10 'pkill -x ibv_rc_pingpong' > /dev/null 2>&1 || true
	guest_wait "srv$PP" > "$TMP/server.out" 2>&1 || rc=1
	guest_save rxe
	return $rc
}
journal_a() { svc "$CTA" journalctl -u vrdmad -o cat --no-pager; }
# crash HOW: under a data-checked ping-pong, vrdmad crashes (HOW: kill, or
# abort-S: SIGTERM, then SIGABRT S seconds later, or at once with
# abort-now, which lands before, in or after the save, or after the
# exit); systemd starts it again (or, if
# it had exited by then, we do). If the VM was restored the ping-pong must
# finish clean; else it must fail (the fatal event), vrdma0 must come back
# and a new ping-pong pass. Nothing else may happen.
crash() {
	local n0 l0 st rc=0 pid
	n0=$(svc "$CTA" systemctl show -p NRestarts --value vrdmad)
	pid=$(svc "$CTA" systemctl show -p MainPID --value vrdmad)
	pp_rxe 3000 || { echo "    the ping-pong did not start"; return 1; }
	sleep 2
	l0=$(journal_a | wc -l)
	case $1 in
	kill) svc "$CTA" kill -KILL "$pid" ;;
	abort-now) svc "$CTA" sh -c "kill -TERM $pid; kill -ABRT $pid" ;;
	abort-*) svc "$CTA" sh -c "kill -TERM $pid; sleep ${1#abort-}; kill -ABRT $pid" 2> /dev/null || true ;;
	esac
	# systemd restarts a crashed vrdmad after RestartSec (1 s); one that
	# saved and exited before the SIGABRT is inactive: start it.
	for _ in $(seq 100); do
		st=$(svc "$CTA" systemctl is-active vrdmad || true)
		case $st in active|inactive|failed) break ;; esac
		sleep 0.1
	done
	if [ "$st" != active ]; then
		echo "    vrdmad exited cleanly before the SIGABRT ($st): started again"
		svc "$CTA" systemctl start vrdmad || { echo "    and would not start"; return 1; }
	fi
	ctl_up || { echo "    vrdmad does not answer"; return 1; }
	st=$(vm_start)
	echo "    NRestarts $n0 -> $(svc "$CTA" systemctl show -p NRestarts --value vrdmad); the journal:"
	journal_a | tail -n +"$((l0 + 1))" | grep -E 'saved [0-9]|dumped core|Main process exited|fd\(s\)|not used' |
		sed 's/^/    | /'
	echo "    alpha: $st"
	case $st in
	restored*)
		pp_rxe_end || { echo "    restored, yet the ping-pong failed"; tail -n 5 "$TMP/client.out" | sed 's/^/    /'; rc=1; } ;;
	new*)
		if pp_rxe_end; then echo "    started afresh, yet the ping-pong passed"; rc=1; fi
		vrdma0_active 60 || { echo "    vrdma0 not ACTIVE within 60 s"; return 1; }
		{ pp_rxe 200 && pp_rxe_end; } || { echo "    no ping-pong after vrdma0 came back"; rc=1; } ;;
	*) echo "    vrdmactl status says '$st'"; rc=1 ;;
	esac
	return $rc
}
check "SIGKILL under a ping-pong: started afresh (empty store), vrdma0 back, ping-pong" crash kill
for s in now 0 0.002 0.03 0.08; do
	check "SIGTERM, SIGABRT ${s/now/0 (no fork between)} s later: restored or afresh, ping-pong" \
		crash "abort-$s"
done

guests_off
svc "$CTA" systemctl stop vrdmad
svc "$CTB" systemctl stop vrdmad
stopped_clean() {
	! grep -q 'Sanitizer\|runtime error' "$DLOG" "$LOG_B" &&
		[ "$(svc "$CTA" systemctl is-active vrdmad)" = inactive ]
}
check "both vrdmad.service stopped" stopped_clean

summary upgrade
