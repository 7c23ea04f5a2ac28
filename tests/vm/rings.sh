#!/bin/bash
# Both ABIs of the guest driver in one boot (docs/virtio-rdma.md sections 8
# and 9), the VM of verbs.sh (its picture is there). The other VM suites run
# on ABI v2's rings, the driver's default; this one boots it on ABI v1
# (rings=0: every CQ and QP a virtqueue of its own) for rdma-core's
# ping-pongs, the WR API, the kernel selftest and rping, then binds it again
# on rings (rings=1: every CQ, QP and SRQ, the kernel's and programs'
# alike, a ring in guest memory with a doorbell bit; the virtqueues carry
# commands, wake-ups and events only): the same programs, perftest, a kick
# at most once per sleep of the worker, the driver unbound and bound again,
# and vrdmad's ring counters.
#
# Environment: as verbs.sh (VRDMAD, VRDMACTL, BPF_OBJ, VRDMA_QEMU_DIR). Needs
# root. Exit 77 (SKIP) only when QEMU cannot run here.
set -e
VM_RINGS=0
source "$(dirname "$0")/lib.sh"

vm_pair_up rings

# dev_jq FIELD: the VM's device counter FIELD in vrdmactl stats
dev_jq() {
	jstat ".vms[] | select(.name == \"alpha\") | .device.$1"
}

on_rings() {
	local out
	vm_on_rings || return 1
	guest_use vm
	out=$(guest_run 20 'rdma link show vrdma0/1')
	guest_save vm
	echo "    $out"
	echo "    vrdmad: rings $(dev_jq rings)"
	echo "$out" | grep -q 'state ACTIVE physical_state LINK_UP netdev eth0' &&
		[ "$(dev_jq rings)" = true ]
}

# ring_count WQES: what vrdmad took from rings grew by at least WQES
# since the last look (RING_WQES), with no ring error
RING_WQES=$(dev_jq ring_wqes)
ring_count() {
	local now errs
	now=$(dev_jq ring_wqes)
	errs=$(dev_jq ring_errors)
	echo "    ring_wqes +$((now - RING_WQES)) (at least $1), ring_errors $errs"
	[ "$((now - RING_WQES))" -ge "$1" ] && [ "$errs" = 0 ] || return 1
	RING_WQES=$now
}

perf() {	# TEST SIZE ITERS WHO-SERVES
	local test=$1 s=$2 n=$3 who=$4 dev_s dev_c
	if [ "$who" = vm ]; then dev_s=vrdma0; dev_c=rxe0; else dev_s=rxe0; dev_c=vrdma0; fi
	perf_pair "$test" "$who" "ib_$test" -d "$dev_s" -x 1 -s "$s" -n "$n" -F -- \
		"ib_$test" -d "$dev_c" -x 1 -s "$s" -n "$n" -F || { sed 's/^/    /' "$TMP/client.out"; return 1; }
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$TMP/client.out" | sed 's/^/    /'
}
# kicks and the workers' wakeups: a guest kicks once per need_wake number,
# a new one at each sleep of the worker, so the kicks cannot outnumber the
# wakeups but by the control queue's (a few per program)
wake_counts() {
	ctl stats --json | jq -r '[([.workers[].kicks] | add), ([.workers[].wakeups] | add)] | @tsv'
}
ring_send_bw() {
	read -r KICKS0 WAKES0 <<< "$(wake_counts)"
	perf send_bw 64 5000 rxe
}
kick_once() {
	local k w
	read -r k w <<< "$(wake_counts)"
	k=$((k - KICKS0)) w=$((w - WAKES0))
	echo "    $k kicks ($(awk -v k="$k" 'BEGIN { printf "%.3f", k / 5000 }') per WQE), $w wakeups"
	[ "$k" -le $((w + 50)) ]
}

# ---- RDMA CM through QP1, the MAD layer's rings
ucm_loaded() {
	local who rc=0
	for who in vm rxe; do
		guest_use "$who"
		guest_run 30 'modprobe rdma_ucm && test -c /dev/infiniband/rdma_cm' || rc=1
		guest_save "$who"
	done
	return $rc
}

# rping_pair WHO: rping -V, WHO serves; the server must listen with rdma_cm
rping_pair() {
	local who=$1 port=$((20000 + NTEST)) other srv_ip rc=0
	if [ "$who" = vm ]; then other=rxe; srv_ip=$VM; else other=vm; srv_ip=$RXE; fi
	guest_use "$who"
	guest_start "srv$NTEST" 100 rping -s -a "$srv_ip" -p "$port" -C 10 -V -v
	guest_run 40 "for i in \$(seq 300); do rdma resource show cm_id 2>/dev/null | grep -Eq 'LISTEN.*:$port( |\$)' && exit 0; sleep 0.1; done; exit 1" > /dev/null ||
		{ echo "    the $who server did not listen"; rc=1; }
	guest_save "$who"
	if [ $rc = 0 ]; then
		guest_use "$other"
		guest_run 90 rping -c -a "$srv_ip" -p "$port" -C 10 -V -v > "$TMP/client.out" 2>&1 || rc=$?
		guest_save "$other"
	fi
	guest_use "$who"
	[ $rc = 0 ] || guest_run 10 "pkill rping" > /dev/null 2>&1 || true
	guest_wait "srv$NTEST" > "$TMP/server.out" 2>&1 || rc=$?
	guest_save "$who"
	if [ $rc != 0 ]; then
		echo "    -- server:"; tail -n 15 "$TMP/server.out" | sed 's/^/    /'
		echo "    -- client:"; tail -n 15 "$TMP/client.out" | sed 's/^/    /'
		return 1
	fi
	echo "    client ping data lines: $(grep -c 'ping data' "$TMP/client.out")"
	[ "$(grep -c 'ping data' "$TMP/client.out")" -ge 10 ]
}
qp1_counted() {
	local s r
	s=$(dev_jq transport.qp1_sent)
	r=$(dev_jq transport.qp1_received)
	echo "    qp1_sent $s, qp1_received $r"
	[ "$s" -gt 0 ] && [ "$r" -gt 0 ]
}

# ---- the driver unbound and bound again: every ring and doorbell page
# goes back after DESTROY's answers, and a new probe takes rings again
rebind() {
	local out
	guest_use vm
	out=$(guest_run 60 'd=$(basename $(readlink /sys/class/infiniband/vrdma0/device)) &&
		echo "$d" > /sys/bus/virtio/drivers/virtio_rdma/unbind && sleep 1 &&
		echo "$d" > /sys/bus/virtio/drivers/virtio_rdma/bind &&
		for i in $(seq 100); do rdma link show vrdma0/1 2>/dev/null | grep -q ACTIVE && break; sleep 0.2; done;
		rdma link show vrdma0/1; dmesg | grep -c "on rings in guest memory"') ||
		{ echo "$out" | sed 's/^/    /'; guest_save vm; return 1; }
	guest_save vm
	echo "$out" | sed 's/^/    /'
	echo "$out" | grep -q 'state ACTIVE' && [ "$(echo "$out" | tail -n 1)" -ge 2 ]
}
no_ring_errors() {
	local e s
	e=$(dev_jq ring_errors)
	s=$(dev_jq broken)
	echo "    ring_errors $e, broken $s, stray_doorbells $(dev_jq stray_doorbells)"
	[ "$e" = 0 ] && [ "$s" = 0 ]
}
# ---- ABI v1 (rings=0): the programs and the kernel's verbs on virtqueues
PP_AFTER=
check "ibv_rc_pingpong VM <-> Soft-RoCE, 4 KiB, vm serves (v1)" pingpong rc 4096 100 vm
check "ibv_ud_pingpong VM <-> Soft-RoCE, 1 KiB, rxe serves (v1)" pingpong ud 1024 100 rxe
check "ibv_srq_pingpong -q 4 VM <-> Soft-RoCE, 4 KiB, vm serves (v1)" srq_pingpong 4 vm
check "vrdmad's SRQ took the VM's receives, refused none" srq_used
check "vrdma-wr-test on v1 (no memory windows: ibv_alloc_mw fails)" wr_test
check "kernel verbs (vrdma_selftest.ko) on v1" kernel_verbs
check "rdma_ucm loads in both guests" ucm_loaded
check "rping -C 10 -V VM <-> Soft-RoCE (RDMA CM through QP1 on v1), vm serves" rping_pair vm

# ---- ABI v2: the driver bound again on rings (from v1 to rings within a
# boot works; back does not: docs/guest.md)
to_rings() { vm_reload rings=1 && on_rings; }
check "virtio_rdma bound again on rings (rings=1), vrdmad says so, vrdma0/1 ACTIVE" to_rings
# each ping-pong's WQEs went through the rings (ring_count)
PP_AFTER=ring_count
RING_WQES=$(dev_jq ring_wqes)
check "ibv_rc_pingpong VM <-> Soft-RoCE, 4 KiB, rxe serves (rings)" pingpong rc 4096 100 rxe
check "ibv_uc_pingpong VM <-> Soft-RoCE, 4 KiB, vm serves (rings)" pingpong uc 4096 100 vm
check "ibv_ud_pingpong VM <-> Soft-RoCE, 1 KiB, vm serves (rings)" pingpong ud 1024 100 vm
check "ibv_srq_pingpong -q 4 VM <-> Soft-RoCE, 4 KiB, rxe serves (rings)" srq_pingpong 4 rxe
check "vrdma-wr-test on rings: the ibv_wr_* API, memory windows, an SRQ resized past its ring" wr_test
check "ib_send_bw -s 64 -n 5000 from the VM to Soft-RoCE" ring_send_bw
check "ring_wqes counts the 5000 sends" ring_count 5000
check "... with at most one kick per sleep of the worker" kick_once
check "ib_write_lat -s 64 -n 500 VM <-> Soft-RoCE, vm serves" perf write_lat 64 500 vm
# the selftest's CQs polled in softirq after req_notify_cq (the arm word),
# 600 receives posted in atomic context
check "kernel verbs (vrdma_selftest.ko) on rings" kernel_verbs
check "rping -C 10 -V VM <-> Soft-RoCE (RDMA CM through QP1 on rings), rxe serves" rping_pair rxe
check "vrdmad counts the VM's QP1 datagrams" qp1_counted
check "the driver unbound and bound again: vrdma0 back ACTIVE, on rings" rebind
check "and ibv_rc_pingpong works again" pingpong rc 4096 100 vm
check "rping works again (a new QP1)" rping_pair vm

check "vrdmad: no ring error, the device never broken" no_ring_errors

guests_off
check "vrdmad exits 0 after the VM is gone, no sanitizer report" clean_exit "$DPID" "$DLOG"
DAEMON_PIDS=()

summary rings
