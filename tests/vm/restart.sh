#!/bin/bash
# vrdmad dies and comes back under a VM that is using it (issue 29, level
# 1): the VM's programs get IB_EVENT_DEVICE_FATAL and errors at once, and
# vrdma0 comes back ACTIVE by itself, with nobody in the VM binding the
# driver again (the config's backend field, QEMU's sixth patch, and the
# driver's recovery: docs/guest.md, "Reconnection").
#
# The picture is verbs.sh's: the VM (10.208.0.11, vrdma0, 2 vCPUs,
# slub_debug) and the Debian 12 guest with rxe0 (10.208.0.20).
#
# Each round: ib_write_bw -D from the VM into Soft-RoCE and ibv_asyncwatch
# on vrdma0 run; vrdmad is killed (SIGKILL) and started again after a gap
# (0 to 40 s); the VM's ib_write_bw must end in an error, ibv_asyncwatch
# must have seen DEVICE_FATAL, vrdma0 must be ACTIVE again within
# RESTART_ACTIVE_SECS of vrdmad's return, and a data-checked
# ibv_rc_pingpong -c between the VM and Soft-RoCE must pass. Then vrdmad is
# killed again while the driver probes the device anew, and the VM is
# deleted and added again (vrdmactl del-vm, add-vm). Every check is
# followed by a look at the VM's kernel log (lib.sh's check_after).
#
# Environment: as verbs.sh; VM_RESTARTS (6: each gap class of GAPS once,
# the 40 s one too: the check is to stay under 45 min), RESTART_ACTIVE_SECS (30).
# Needs root. Exit 77 (SKIP) only when QEMU cannot run here.
set -e
source "$(dirname "$0")/lib.sh"

ROUNDS=${VM_RESTARTS:-6}
ACTIVE_SECS=${RESTART_ACTIVE_SECS:-30}
# the back end's absence in each round, seconds: mostly short, as a
# restart or a crash and the watchdog; once 40 s; every class in the first 6
GAPS=(0 1 2 5 40 3 0 0 1 0 2 0 1 0 3 0 5 0 1 0)

vm_pair_up restart
guest_use vm
guest_run 30 'modprobe ib_uverbs' > /dev/null
guest_save vm

# vrdma0_active_within SECS: vrdma0/1 ACTIVE in the VM before SECS pass;
# ACTIVE_AFTER = the seconds it took (as the host counts them).
vrdma0_active_within() {
	local t0=$SECONDS
	guest_use vm
	guest_run $(($1 + 10)) "for i in \$(seq $(($1 * 5))); do
		rdma link show vrdma0/1 2>/dev/null | grep -q 'state ACTIVE' && exit 0; sleep 0.2; done; exit 1" \
		> /dev/null || { guest_save vm; return 1; }
	guest_save vm
	ACTIVE_AFTER=$((SECONDS - t0))
}

# pp_checked: ibv_rc_pingpong -c (each side checks the data it gets), the
# VM the client
pp_checked() {
	local port=$((20000 + NTEST)) rc=0
	guest_use rxe
	guest_start "pps$NTEST" 60 ibv_rc_pingpong -d rxe0 -g 1 -s 4096 -n 50 -c -p "$port"
	guest_listening "$port" 30 || { echo "    the Soft-RoCE server did not listen"; guest_save rxe; return 1; }
	guest_save rxe
	guest_use vm
	guest_run 50 ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 50 -c -p "$port" "$RXE" > "$TMP/client.out" 2>&1 || rc=$?
	guest_save vm
	guest_use rxe
	guest_wait "pps$NTEST" > "$TMP/server.out" 2>&1 || rc=$?
	guest_save rxe
	if [ $rc != 0 ]; then
		tail -n 5 "$TMP/server.out" "$TMP/client.out" | sed 's/^/    /'
		return 1
	fi
	grep -h 'bytes in' "$TMP/client.out" | sed 's/^/    /'
}
check "ibv_rc_pingpong -c VM <-> Soft-RoCE before any restart" pp_checked

# kill_vrdmad: SIGKILL, as a crash; no sanitizer report so far
kill_vrdmad() {
	kill -KILL "$DPID"
	wait "$DPID" 2> /dev/null || true
	no_sanitizer_report "$DLOG" || { echo "    vrdmad's log has a sanitizer report"; return 1; }
}

# restart_round GAP: one round (see the top)
restart_round() {
	local gap=$1 port=$((20000 + NTEST)) wrc=0 rc=0
	guest_use rxe
	guest_start "wbs$NTEST" 120 ib_write_bw -d rxe0 -x 1 -F -D 60 -p "$port"
	guest_listening "$port" 30 || { echo "    ib_write_bw did not listen in Soft-RoCE"; guest_save rxe; return 1; }
	guest_save rxe
	guest_use vm
	guest_start "aw$NTEST" 120 stdbuf -oL ibv_asyncwatch -d vrdma0
	guest_start "wbc$NTEST" 120 ib_write_bw -d vrdma0 -x 1 -F -D 60 -p "$port" "$RXE"
	guest_save vm
	sleep 4
	kill_vrdmad || return 1
	sleep "$gap"
	start_daemon "$CONF" || { echo "    vrdmad did not start again"; return 1; }
	guest_use vm
	guest_wait "wbc$NTEST" > "$TMP/wb.out" 2>&1 || wrc=$?
	echo "    ib_write_bw in the VM: exit $wrc: $(grep -m 1 -iE 'fail|error' "$TMP/wb.out")"
	guest_save vm
	[ "$wrc" != 0 ] && [ "$wrc" -lt 124 ] || { tail -n 5 "$TMP/wb.out" | sed 's/^/    /'; rc=1; }
	vrdma0_active_within "$ACTIVE_SECS" || { echo "    vrdma0 not ACTIVE within $ACTIVE_SECS s"; rc=1; }
	[ $rc = 1 ] || echo "    vrdma0 ACTIVE ${ACTIVE_AFTER} s after vrdmad was back (gone $gap s)"
	guest_use vm
	guest_run 10 'pkill -x ibv_asyncwatch' > /dev/null 2>&1 || true
	guest_wait "aw$NTEST" > "$TMP/aw.out" 2>&1 || true
	guest_save vm
	grep -q 'DEVICE_FATAL' "$TMP/aw.out" || { echo "    ibv_asyncwatch saw no DEVICE_FATAL:"; sed 's/^/    /' "$TMP/aw.out"; rc=1; }
	guest_use rxe
	guest_run 10 'pkill -x ib_write_bw' > /dev/null 2>&1 || true
	guest_wait "wbs$NTEST" > /dev/null 2>&1 || true
	guest_save rxe
	[ $rc = 0 ] && pp_checked
}
for i in $(seq "$ROUNDS"); do
	gap=${GAPS[$(((i - 1) % ${#GAPS[@]}))]}
	check "restart $i: vrdmad killed, back after $gap s: fatal event, vrdma0 back, pingpong -c" \
		restart_round "$gap"
done

# killed again while the driver probes the device anew: the probe fails
# (or the new device fails at once), and the device comes back with the
# next vrdmad all the same
during_reprobe() {
	local t0 n
	guest_use vm
	guest_run 10 dmesg -C > /dev/null
	guest_save vm
	kill_vrdmad || return 1
	start_daemon "$CONF" || return 1
	t0=$SECONDS
	guest_use vm
	# the moment the driver starts probing (polling its log), vrdmad dies again
	guest_run 40 'for i in $(seq 400); do dmesg | grep -q "probing the device again" && exit 0; sleep 0.05; done; exit 1' \
		> /dev/null || { guest_save vm; echo "    the driver did not probe again"; return 1; }
	guest_save vm
	kill_vrdmad || return 1
	echo "    vrdmad killed again $((SECONDS - t0)) s after it came back, as the driver probed"
	sleep 3
	start_daemon "$CONF" || return 1
	vrdma0_active_within 90 || { echo "    vrdma0 not ACTIVE within 90 s"; return 1; }
	echo "    vrdma0 ACTIVE ${ACTIVE_AFTER} s after vrdmad was back"
	guest_use vm
	n=$(guest_run 10 'dmesg | grep -cE "probing the device again|probed again" || true')
	guest_save vm
	echo "    the driver's log: $n lines about probing again"
	pp_checked
}
check "vrdmad killed again during the re-probe: vrdma0 back with the next one" during_reprobe

# the VM taken away and given back on the running vrdmad (vrdmactl
# del-vm, add-vm): QEMU connects again, the driver probes again
readd_vm() {
	ctl del-vm alpha > /dev/null || return 1
	sleep 2
	ctl add-vm alpha --gid "$VM" --socket "$TMP/alpha.sock" --mac "$VMMAC" \
		--max-cq "${VM_MAX_CQ:-8}" --max-qp "${VM_MAX_QP:-8}" > /dev/null || return 1
	vrdma0_active_within "$ACTIVE_SECS" || { echo "    vrdma0 not ACTIVE within $ACTIVE_SECS s"; return 1; }
	echo "    vrdma0 ACTIVE ${ACTIVE_AFTER} s after add-vm"
	pp_checked
}
check "vrdmactl del-vm, then add-vm: vrdma0 back by itself" readd_vm

guests_off
check "vrdmad exits 0 after the VM is gone, no sanitizer report" clean_exit "$DPID" "$DLOG"
DAEMON_PIDS=()

summary restart
