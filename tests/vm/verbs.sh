#!/bin/bash
# A real VM uses vrdmad: the Debian 13 guest (guest/image.sh) with our QEMU
# device, virtio_rdma.ko and the rdma-core provider runs unmodified
# rdma-core programs against Linux Soft-RoCE in the Debian 12 guest of the
# interop suite.
#
#   netns vrA-ID                                netns vrC-ID
#   +-------------------------------------+     +----------------------------+
#   | br0 -- vA-ID (vrdmad's port, XDP)   |<--->| vA-IDp -- br0 -- tap vr... |
#   |  |                                  |     +---------------------|------+
#   | tap vv... (the VM's virtio-net)     |                           |
#   | vrdmad (ASan): [vm alpha]           |      QEMU/TCG: Debian 12, rxe0 on
#   |   gid 10.208.0.11, mac of the VM    |      eth0 10.208.0.20
#   +--|---------------|------------------+
#      | vhost-user    | tap
#   QEMU/TCG: Debian 13, vhost-user-rdma-pci + virtio-net, eth0 10.208.0.11,
#   virtio_rdma.ko: vrdma0 on eth0, the vrdma provider
#
# Later a second vrdmad joins C's bridge (netns vrB-ID, port vB-ID, VM beta
# 10.208.0.12) for vrdma-pingpong, and the checks stop vrdmad and power the
# VM off under transfers.
#
# Frames for 10.208.0.11 reach vA-ID: XDP takes RoCE (UDP 4791) into vrdmad
# and passes the rest (ARP, the tools' TCP) to br0 and the VM. vrdmad sends
# the VM's RoCE frames with the VM's MAC.
#
# Environment: VRDMAD, VRDMACTL, BPF_OBJ, VRDMA_PINGPONG (the Makefile's ASan build),
# VRDMA_QEMU_DIR (guest/qemu/build.sh's output). Needs root. Exit 77 (SKIP)
# only when QEMU cannot run here.
set -e
source "$(dirname "$0")/lib.sh"
: "${VRDMA_PINGPONG:?set VRDMA_PINGPONG to the vrdma-pingpong binary}"

vm_pair_up verbs

link_active() {
	local out
	out=$(guest_run 20 rdma link show vrdma0/1)
	echo "    $out"
	echo "$out" | grep -q 'state ACTIVE physical_state LINK_UP netdev eth0'
}
check "rdma link: vrdma0/1 ACTIVE on eth0" link_active

gids_ok() {
	local out
	out=$(guest_run 20 'cat /sys/class/infiniband/vrdma0/ports/1/gids/0 /sys/class/infiniband/vrdma0/ports/1/gids/1')
	echo "$out" | sed 's/^/    /'
	[ "$(echo "$out" | sed -n 1p)" = fe80:0000:0000:0000:5054:00ff:fed0:000b ] &&
		[ "$(echo "$out" | sed -n 2p)" = 0000:0000:0000:0000:0000:ffff:0ad0:000b ]
}
check "GID 0 is the MAC's link-local, GID 1 the VM's address" gids_ok

devinfo_ok() {
	local out
	out=$(guest_run 20 'ibv_devices; ibv_devinfo -d vrdma0 -v') || { echo "$out" | sed 's/^/    /'; return 1; }
	echo "$out" | grep -E 'vrdma0|state:|GID\[ *1\]' | sed 's/^/    /'
	# the node GUID: the EUI-64 of the VM's MAC
	echo "$out" | grep -Eq '^\s+vrdma0\s+505400fffed0000b$' &&
		echo "$out" | grep -q 'state:.*PORT_ACTIVE' &&
		echo "$out" | grep -q 'GID\[  1\]:.*::ffff:10.208.0.11, RoCE v2'
}
check "ibv_devices, ibv_devinfo (unmodified) see vrdma0" devinfo_ok

# sizes across the path MTU (1024 on these 1500-byte links); UD messages
# fit in one
for t in rc uc; do
	for who in vm rxe; do
		check "ibv_${t}_pingpong VM <-> Soft-RoCE, 4 KiB, $who serves" pingpong "$t" 4096 100 "$who"
	done
done
check "ibv_rc_pingpong VM <-> Soft-RoCE, 64 KiB, vm serves" pingpong rc 65536 30 vm
for who in vm rxe; do
	check "ibv_ud_pingpong VM <-> Soft-RoCE, 1 KiB, $who serves" pingpong ud 1024 100 "$who"
done
# -N: the sends go through the extended QP's ibv_wr_* API
# (ibv_create_qp_ex, ibv_wr_start/send/set_sge/complete)
for who in vm rxe; do
	check "ibv_rc_pingpong -N (ibv_wr_*) VM <-> Soft-RoCE, 4 KiB, $who serves" pingpong rc 4096 100 "$who" -N
done

# shared receive queues (issue 18): ibv_srq_pingpong's N QPs on one SRQ
for who in vm rxe; do
	check "ibv_srq_pingpong -q 4 VM <-> Soft-RoCE, 4 KiB, $who serves" srq_pingpong 4 "$who"
done
check "vrdmad's SRQ took the VM's receives, refused none" srq_used

# vrdma-wr-test (guest/rdma-core/tests/wr_test.c): the rest of the WR
# API, the VM's QPs connected to each other (vrdmad loops the frames
# back): every builder and setter (the atomics too), and the batches that
# must fail whole; an SRQ resized, and QP_LAST_WQE_REACHED of a QP on it
check "vrdma-wr-test: the ibv_wr_* API, QPs of the VM to each other" wr_test

# Kernel verbs as a kernel consumer uses them (guest/kernel/vrdma_selftest.c):
# a PD's DMA MR and global rkey, a CQ polled in softirq after req_notify_cq,
# RC SEND (several packets, and inline), RDMA WRITE and READ, UD with an AH,
# fast registration (alloc_mr, map_mr_sg, REG_MR) and SEND_WITH_INV,
# a bad rkey's REM_ACCESS_ERR and the responder QP's QP_ACCESS_ERR event.
check "kernel verbs (vrdma_selftest.ko): RC, UD, fast reg, SEND_WITH_INV, events" kernel_verbs

# ---- the VM against vrdma-pingpong on a second vrdmad (netns vrB-ID, its
# port vB-ID on C's bridge; VM beta of that daemon, 10.208.0.12)
beta_netns
CONF_B=$(CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock write_conf "" "[vm beta]
gid = $BETA
socket = $TMP/beta.sock" vmb.conf)
start_daemon_b "$CONF_B"

# host_pp ARGS...: vrdma-pingpong on VM beta, in B's namespace.
host_pp() {
	ip netns exec "$NSB" timeout 100 "$VRDMA_PINGPONG" -d "$TMP/beta.sock" -g 0 "$@"
}

# beta_pair WHO TYPE SIZE ITERS: ibv_TYPE_pingpong in the VM and
# vrdma-pingpong on beta; WHO (vm or beta) serves.
beta_pair() {
	local who=$1 t=$2 s=$3 n=$4 port=$((20000 + NTEST)) rc=0 hpid
	local -a pp=(-T "$t" -s "$s" -n "$n" -c -p "$port") ibv=("ibv_${t}_pingpong" -d vrdma0 -g 1 -s "$s" -n "$n" -c -p "$port")
	guest_use vm
	if [ "$who" = vm ]; then
		guest_start "srv$NTEST" 110 "${ibv[@]}"
		guest_listening "$port" 30 || { echo "    the VM's server did not listen"; return 1; }
		host_pp "${pp[@]}" "$VM" > "$TMP/client.out" 2>&1 || rc=$?
		guest_wait "srv$NTEST" > "$TMP/server.out" 2>&1 || rc=$?
	else
		host_pp "${pp[@]}" > "$TMP/server.out" 2>&1 &
		hpid=$!
		wait_listen "$NSB" "$port" 10 || true
		guest_run 100 "${ibv[@]}" "$BETA" > "$TMP/client.out" 2>&1 || rc=$?
		wait "$hpid" || rc=$?
	fi
	guest_save vm
	if [ $rc != 0 ]; then
		echo "    -- server:"; tail -15 "$TMP/server.out" | sed 's/^/    /'
		echo "    -- client:"; tail -15 "$TMP/client.out" | sed 's/^/    /'
	fi
	[ $rc = 0 ] && pp_lines
}
for who in vm beta; do
	check "ibv_rc_pingpong VM <-> vrdma-pingpong on a 2nd vrdmad, 4 KiB, $who serves" beta_pair "$who" rc 4096 100
done
check "ibv_ud_pingpong VM <-> vrdma-pingpong on a 2nd vrdmad, 1 KiB, vm serves" beta_pair vm ud 1024 100

# ended_in_error RC: a program's status that says it failed by itself
# (not killed by its timeout: 124, or a signal)
ended_in_error() { [ "$1" != 0 ] && [ "$1" -lt 124 ]; }

# ---- vrdmad restarts under a transfer: the far side and the VM's program
# end in errors, not hangs; the VM's device comes back when its driver is
# bound again (docs/guest.md)
# long_transfer: an endless ping-pong between beta (serving, pid in HPID)
# and the VM (its run named long$NTEST), 3 s under way.
long_transfer() {
	local port=$((20000 + NTEST))
	host_pp -T rc -s 4096 -n 1000000 -p "$port" > "$TMP/far.out" 2>&1 &
	HPID=$!
	wait_listen "$NSB" "$port" 10 || true
	guest_use vm
	guest_start "long$NTEST" 100 ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 1000000 -p "$port" "$BETA"
	sleep 3
}

restart_under_transfer() {
	local hrc=0 grc=0 hpid t0
	long_transfer
	hpid=$HPID
	t0=$SECONDS
	kill -TERM "$DPID"
	wait "$DPID" || { echo "    vrdmad exited $?"; return 1; }
	no_sanitizer_report "$DLOG" || return 1
	mv "$DLOG" "$TMP/vrdmad.before-restart.log"
	wait "$hpid" || hrc=$?
	echo "    vrdma-pingpong on beta: exit $hrc after $((SECONDS - t0)) s: $(tail -n 1 "$TMP/far.out")"
	guest_wait "long$NTEST" > "$TMP/vm.out" 2>&1 || grc=$?
	echo "    ibv_rc_pingpong in the VM: exit $grc after $((SECONDS - t0)) s: $(grep -m 1 -i 'fail\|error' "$TMP/vm.out")"
	guest_save vm
	ended_in_error "$hrc" && ended_in_error "$grc"
}
check "vrdmad stops under a transfer: both programs end in errors" restart_under_transfer

comes_back() {
	local out
	start_daemon "$CONF" || return 1
	guest_use vm
	out=$(guest_run 60 'dmesg | grep -c "needs a reset"; modprobe -r virtio_rdma && modprobe virtio_rdma &&
		for i in $(seq 100); do rdma link show vrdma0/1 2>/dev/null | grep -q ACTIVE && break; sleep 0.2; done;
		rdma link show vrdma0/1') || { echo "$out" | sed 's/^/    /'; guest_save vm; return 1; }
	guest_save vm
	echo "$out" | sed 's/^/    /'
	[ "$(echo "$out" | head -n 1)" = 1 ] && echo "$out" | grep -q 'state ACTIVE'
}
check "after the restart, the driver bound again brings vrdma0 back" comes_back
check "and ibv_rc_pingpong <-> vrdma-pingpong works again" beta_pair vm rc 4096 50

# ---- the VM powered off under a transfer: the far side ends in an error,
# both daemons stay up and clean
poweroff_under_transfer() {
	local hrc=0 hpid t0
	long_transfer
	hpid=$HPID
	t0=$SECONDS
	kill -KILL "$GUEST_PID"
	guest_stop
	guest_save vm
	wait "$hpid" || hrc=$?
	echo "    vrdma-pingpong on beta: exit $hrc after $((SECONDS - t0)) s: $(tail -n 1 "$TMP/far.out")"
	ended_in_error "$hrc" && kill -0 "$DPID" && kill -0 "$DPID_B" && ctl status > /dev/null &&
		grep -q 'vhost-user connection closed' "$DLOG"
}
check "the VM powered off under a transfer: the far side ends in an error" poweroff_under_transfer

guests_off
check "vrdmad exits 0 after the VM is gone, no sanitizer report" clean_exit "$DPID" "$DLOG"
check "the second vrdmad too" clean_exit "$DPID_B" "$DLOG_B"
DAEMON_PIDS=()

summary verbs
