#!/bin/bash
# The guest driver against its own users (docs/guest.md, "What the driver
# promises"): unprivileged programs in the VM try to turn virtio_rdma.ko
# against the VM's kernel; the kernel must not report anything, and the
# device must serve another user afterwards.
#
#   netns vrA-ID                                netns vrC-ID
#   +-------------------------------------+     +-------------------+
#   | br0 -- vA-ID (vrdmad's port, XDP)   |<--->| vA-IDp -- br0     |
#   |  |                                  |     +-------------------+
#   | tap vv... (the VM's virtio-net)     |
#   | vrdmad (ASan): [vm alpha], max_cq 12, max_qp 16
#   +--|---------------|------------------+
#      | vhost-user    | tap
#   QEMU/TCG: Debian 13, 2 vCPUs, slub_debug=FZPU, vrdma0 on eth0 10.208.0.11
#
# Every check is followed by a look at the VM's kernel log (check_after in
# lib.sh): a BUG, WARNING, Oops, lockup or corruption report fails it.
#
# Then the driver against its device: vrdmad is replaced by vrdmad-liar
# (daemon/device/vdev_lie.c, a test-only build), which tells the guest one
# lie at a time; the driver must catch it, say so, reset the device and
# probe it again by itself, without a kernel report or a program left
# hanging; after a command left unanswered, another user's program must
# work on the device probed again (one timeout does not end it for all).
# The driver is then loaded on ABI v2's rings (rings=1) for the lies about
# ring indexes and events.
#
# Environment: VRDMAD, VRDMAD_LIAR, VRDMACTL, BPF_OBJ (the Makefile's ASan
# build), VRDMA_QEMU_DIR (guest/qemu/build.sh's output). Needs root. Exit 77 (SKIP)
# only when QEMU cannot run here.
set -e
# booted on ABI v1 (the kernel's virtqueue paths), bound again on rings for
# the lies about rings
VM_RINGS=0
source "$(dirname "$0")/lib.sh"
: "${VRDMAD_LIAR:?set VRDMAD_LIAR to the vrdmad-liar binary}"

# as few slots on rings (ABI v2) as on v1, so that the stress there too
# reuses what was just freed
VM_MAX_CQ=12 VM_MAX_QP=16 VM_CONF_EXTRA="ring_max_cq = 12
ring_max_qp = 16" vm_host
vm_boot hostile

# as_user UID TIMEOUT CMD: a shell command line in the VM as that user,
# with Debian's default locked-memory limit (8 MiB), not root's.
as_user() {
	local uid=$1 t=$2
	shift 2
	guest_run "$t" "ulimit -l 8192; exec setpriv --reuid=$uid --regid=$uid --clear-groups -- $*"
}

# vrdma-stress (guest/rdma-core/tests/stress.c) as nobody: all slots but
# six held, threads racing create/destroy of CQs, QPs and SRQs with work
# queued, MRs deregistered under RDMA WRITEs; FLOODERS more threads keep
# the control queue full (it holds 128 commands, 96 of them sleeping ones).
stress() {
	local out rc=0
	guest_use vm
	out=$(as_user 65534 "$((STRESS_SECS + 60))" vrdma-stress -d vrdma0 -g 1 \
		-t "$STRESS_SECS" -n "$STRESS_ROUNDS" -f "$1") || rc=$?
	guest_save vm
	echo "$out" | grep -v '^$' | tail -n 12 | sed 's/^/    /'
	[ $rc = 0 ]
}
STRESS_SECS=${STRESS_SECS:-30}
STRESS_ROUNDS=${STRESS_ROUNDS:-3000}
check "vrdma-stress as nobody: create/destroy races, MRs under WRITEs" stress 2
check "and with 160 threads flooding the control queue" stress 160

# ibv_rc_pingpong of another user (uid 1000), server and client in the VM
# on vrdma0 (vrdmad loops the frames back): the device still serves.
other_user_pp() {
	local port=$((20000 + NTEST)) rc=0
	guest_use vm
	guest_start "srv$NTEST" 60 setpriv --reuid=1000 --regid=1000 --clear-groups -- \
		ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 200 -p "$port"
	guest_listening "$port" 30 || { echo "    the server did not listen"; guest_save vm; return 1; }
	as_user 1000 50 ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 200 -p "$port" 127.0.0.1 \
		> "$TMP/client.out" 2>&1 || rc=$?
	guest_wait "srv$NTEST" > "$TMP/server.out" 2>&1 || rc=$?
	guest_save vm
	grep -h 'bytes in' "$TMP/server.out" "$TMP/client.out" | sed 's/^/    /'
	if [ $rc != 0 ]; then
		tail -n 5 "$TMP/server.out" "$TMP/client.out" | sed 's/^/    /'
	fi
	[ $rc = 0 ]
}
check "then another user's ibv_rc_pingpong works" other_user_pp

# Every slot free again: nothing leaked by a create that failed half-way
# or a destroy under load; a new process gets all max_cq CQs and max_qp QPs
# but the MAD layer's (QP1 and its CQ, kernel-owned: rdma resource shows them)
all_slots() {
	local out rc=0 kqp kcq
	guest_use vm
	kqp=$(guest_run 20 "rdma resource show qp link vrdma0/1 | grep -c 'comm \[' || true")
	kcq=$(guest_run 20 "rdma resource show cq dev vrdma0 | grep -c 'comm \[' || true")
	echo "    the kernel holds $kqp QP(s) and $kcq CQ(s)"
	[ "$kqp" = 1 ] && [ "$kcq" = 1 ] || rc=1
	out=$(as_user 1000 60 vrdma-stress -d vrdma0 -g 1 -H -k 1) || rc=$?
	guest_save vm
	echo "$out" | grep holding | sed 's/^/    /'
	[ $rc = 0 ]
}
check "every CQ and QP slot can be had again" all_slots

# ---- the device lies ----
# rebind TIMEOUT_MS: the driver bound again (a fresh device), its commands
# given TIMEOUT_MS (and REBIND_PARAMS); vrdma0 ACTIVE.
REBIND_PARAMS=
LIE_ENV=
rebind() { vm_reload "cmd_timeout_ms=$1" $REBIND_PARAMS; }

# daemon_swap [LIE]: the running vrdmad ends cleanly and the liar telling
# LIE (or, without one, the honest vrdmad) takes the VM's socket.
daemon_swap() {
	clean_exit "$DPID" "$DLOG" || { echo "    vrdmad did not end cleanly"; return 1; }
	if [ -n "${1:-}" ]; then
		VRDMAD=$VRDMAD_LIAR VRDMAD_LIE=$1 start_daemon "$CONF" || return 1
	else
		start_daemon "$CONF" || return 1
	fi
	# QEMU connects again within a second (reconnect=1); a driver bound
	# before that would wait on a device with no back end
	for _ in $(seq 100); do
		grep -q 'vhost-user front-end connected' "$DLOG" && return 0
		sleep 0.1
	done
	echo "    QEMU did not connect to the new vrdmad"
	return 1
}

# lie LIE REGEX [kernel] [then_pp]: under LIE, vrdma-stress runs as
# nobody, 10 s or until the reset takes its device away (in the environment
# LIE_ENV; or, with "kernel", vrdma_selftest.ko
# loads: a kernel consumer,
# whose CQs ib_free_cq frees whatever the driver says); it must end by
# itself (not by its timeout), the driver must have said REGEX, reset the
# device and probed it again: vrdma0 ACTIVE again without anyone binding
# the driver. With then_pp, another user's ibv_rc_pingpong (which the lie
# does not touch) must then work.
lie() {
	local out rc=0 log what=vrdma-stress back
	daemon_swap "$1" && rebind 3000 || return 1
	guest_use vm
	guest_run 10 dmesg -C > /dev/null	# the swap's own reset is not the lie's
	if [ "${3:-}" = kernel ]; then
		what=vrdma_selftest
		out=$(guest_run 60 'modprobe vrdma_selftest; rc=$?; rmmod vrdma_selftest 2>/dev/null; exit $rc') || rc=$?
		[ "$rc" -lt 124 ] && rc=0	# its checks may fail: the device is dead
	else
		out=$(as_user 65534 60 env $LIE_ENV vrdma-stress -d vrdma0 -g 1 -t 10 -n 200) || rc=$?
	fi
	log=$(guest_run 20 "dmesg | grep -E 'virtio_rdma|vrdma' | grep -v vrdma_selftest | tail -n 16")
	guest_save vm
	echo "    $what exit $rc$(echo "$out" | sed -n 's/^vrdma-stress: the device is gone .* after \(.*\)$/, the device gone after \1/p'); the driver said:"
	echo "$log" | sed 's/^/    | /'
	[ "$rc" -lt 124 ] && echo "$log" | grep -Eq "$2" && echo "$log" | grep -q 'device reset' || return 1
	back=$(guest_run 60 "for i in \$(seq 200); do rdma link show vrdma0/1 2>/dev/null | grep -q ACTIVE && break; sleep 0.2; done;
		dmesg | grep -E 'probed again|probing the device' | tail -n 2; rdma link show vrdma0/1") || true
	echo "$back" | sed 's/^/    | /'
	echo "$back" | grep -q 'probing the device again' && echo "$back" | grep -q 'state ACTIVE' || return 1
	[ "${4:-}" != then_pp ] || other_user_pp
}
check "lie: every destroy answered BUSY" lie destroy_busy 'DESTROY_[A-Z]+ [0-9]+ refused|DEREG_MR [0-9]+ refused'
check "lie: every destroy answered BUSY, to a kernel consumer" lie destroy_busy \
	'DESTROY_[A-Z]+ [0-9]+ refused|DEREG_MR [0-9]+ refused' kernel
check "lie: CREATE answers name slots in use" lie slot_used 'which is in use'
check "lie: CREATE answers name slots out of range" lie slot_range 'device gave (QP|SRQ|CQ).* slot [0-9]+ of|gave CQ slot'
check "lie: CQEs name a QP of another CQ" lie cqe_qp 'which is not on it'
check "lie: CQ buffers come back empty, endlessly" lie cqe_empty 'a used buffer of 0 bytes'
check "lie: REG_USER_MR never answered (its pages held to the reset)" lie mute_reg_mr 'got no answer'
check "lie: a kernel CQ's REQ_NOTIFY_CQ never answered (the spin ends); then a pingpong works" \
	lie mute_notify 'got no answer' kernel then_pp

# slow_ctrl: an honest device that answers one control command per
# millisecond, so 320 flooding threads keep its control queue full (256
# entries; the old driver put up to 256 requests there, one indirect
# descriptor each, and failed when it was full); a
# full queue is a busy device, not an error: no destroy may fail (each
# failure fails vrdma-stress), and the device is not reset. Every thread
# must make progress too: a churn round takes tens of commands, about 4
# rounds in 20 s here, and one thread in eight runs made none, so 40 s.
slow_flood() {
	local out rc=0 log
	daemon_swap slow_ctrl && rebind 30000 || return 1
	guest_use vm
	guest_run 10 dmesg -C > /dev/null
	out=$(as_user 65534 150 vrdma-stress -d vrdma0 -g 1 -t 40 -n 400 -f 320) || rc=$?
	log=$(guest_run 20 "dmesg | grep -E 'virtio_rdma|vrdma' | tail -n 4")
	guest_save vm
	# every thread's line that vrdma-stress printed (the first six, and any
	# that made no round or had a destroy fail), and its summary
	echo "$out" | grep -E 'thread|threads:|passed' | sed 's/^/    /'
	[ -n "$log" ] && echo "$log" | sed 's/^/    | /'
	[ $rc = 0 ] && ! echo "$log" | grep -q 'device reset'
}
check "a slow device, its control queue kept full by 320 threads: no destroy fails" slow_flood

# swap_fresh LIE: the liar telling LIE serves a driver bound again, whose
# log starts empty; the VM is the current guest.
swap_fresh() {
	daemon_swap "$1" || return 1
	guest_use vm
	guest_run 10 dmesg -C > /dev/null
	rebind 30000 || return 1
	guest_use vm
}

# no_gsi: a vrdmad from before QP1 (its config says no GSI): the driver
# offers no MAD port (as it did before), says nothing about MADs, and the
# verbs work as ever; rdma_cm finds no port for the VM's address, at once
no_mad_port() {
	local out rc=0
	swap_fresh no_gsi || return 1
	out=$(guest_run 60 "modprobe ib_umad; modprobe rdma_ucm; ls /sys/class/infiniband_mad/;
		cat /sys/class/infiniband_mad/umad*/ibdev 2>/dev/null; echo ---;
		dmesg | grep -E 'QP1|ib_mad|MAD|[Cc]ouldn.t (start|open) port'; echo ---;
		timeout 20 rping -c -a $VM -p 19997 -C 1 2>&1; echo \"rping exit \$?\"") || rc=1
	guest_save vm
	echo "$out" | sed 's/^/    | /'
	[ $rc = 0 ] && ! echo "$out" | sed -n '1,/^---$/p' | grep -qw vrdma0 &&
		[ "$(echo "$out" | sed -n '/^---$/,/^---$/p' | grep -vc '^---$')" = 0 ] &&
		echo "$out" | grep -Eq '^rping exit [0-9]+$' &&
		! echo "$out" | grep -Eq '^rping exit (0|124|137)$' && other_user_pp
}
check "an older vrdmad (no QP1 offered): no MAD port, verbs work" no_mad_port

# gsi_refused: a device that offers QP1 and then refuses to create it: the
# MAD layer cannot open the port and says so (what cm.sh's last VM check
# looks for), the driver registers all the same, nothing is reset, and the
# verbs work
gsi_refused() {
	local out rc=0
	swap_fresh gsi_refused || return 1
	out=$(guest_run 60 "dmesg | grep -iE '$MAD_COMPLAINT' | grep -viE '$MAD_GREETING'; echo ---;
		dmesg | grep -c 'device reset' || true") || rc=1
	guest_save vm
	echo "$out" | sed 's/^/    | /'
	[ $rc = 0 ] && [ "$(echo "$out" | sed -n '1,/^---$/p' | grep -vc '^---$')" -gt 0 ] &&
		[ "$(echo "$out" | tail -n 1)" = 0 ] && other_user_pp
}
check "a vrdmad that offers QP1 but refuses it: the MAD layer says so, verbs work" gsi_refused

honest_again() { daemon_swap && rebind 30000 && other_user_pp; }
check "the honest vrdmad back, the driver bound again: ibv_rc_pingpong works" honest_again

# ---- ABI v2: the driver on rings (rings=1) checks every index and event
# the device writes; the liar writes a ring's taken past prod, a CQ ring's
# written more than a ring past cons, events naming no CQ. The kernel
# consumer's CQs are armed (the selftest's), so events flow for them. The
# stress program runs on the kernel's rings (VRDMA_USER_RINGS=0): the
# driver's checks are what is tried.
REBIND_PARAMS=rings=1
LIE_ENV=VRDMA_USER_RINGS=0
check "lie (rings): a ring's taken runs past prod" lie ring_taken "a ring's taken went from"
check "lie (rings): a CQ ring's written runs a ring past cons" lie ring_written \
	'CQ [0-9]+: written went from'
LIE_ENV=
check "lie (rings): events name a CQ that does not exist; then a pingpong works" \
	lie ring_event 'an event for CQ [0-9]+, which does not exist' kernel then_pp

# The same lies to programs on rings of their own (docs/virtio-rdma.md
# section 9): the provider checks taken and written where it reads them,
# so the program's post or poll fails (EIO) and it ends by itself; the
# kernel reads neither, says nothing and keeps the device; vrdma0 stays
# ACTIVE.
user_lie() {
	local out rc=0 log
	daemon_swap "$1" && rebind 3000 || return 1
	guest_use vm
	guest_run 10 dmesg -C > /dev/null
	guest_start "lsrv$NTEST" 40 setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 200 -p 19999
	if guest_listening 19999 10; then
		out=$(as_user 65534 40 ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 200 -p 19999 \
			127.0.0.1 2>&1) || rc=$?
		guest_run 10 "pkill -f 'ibv_rc_pingpong.*19999'" > /dev/null 2>&1 || true
		guest_wait "lsrv$NTEST" > /dev/null 2>&1 || true
	else
		# its receives, posted before it listens, failed
		out=$(guest_wait "lsrv$NTEST" 2>&1) || rc=$?
	fi
	log=$(guest_run 20 "dmesg | grep -E 'virtio_rdma|vrdma' | tail -n 8; rdma link show vrdma0/1")
	guest_save vm
	echo "    the program (exit $rc): $(echo "$out" | grep -iE 'fail|error' | head -n 2 | tr '\n' ' ')"
	echo "$log" | sed 's/^/    | /'
	[ "$rc" != 0 ] && [ "$rc" -lt 124 ] && ! echo "$log" | grep -q 'device reset' &&
		echo "$log" | grep -q 'state ACTIVE'
}
check "lie (rings, a program's own): taken past prod: its post fails, the kernel untouched" \
	user_lie ring_taken
check "lie (rings, a program's own): written past cons: its poll fails, the kernel untouched" \
	user_lie ring_written
# the honest vrdmad back, the driver still on rings (not back on v1 in the
# same boot: QEMU 7.2's vhost_ack_features only adds bits, so vrdmad would
# stay on rings; the next check boots a new VM)
check "the honest vrdmad back, the driver bound again on rings: ibv_rc_pingpong works" \
	honest_again

# A program that lies in its own rings (guest/rdma-core/tests/ring_liar.c),
# as nobody: each lie costs its own queue only (QP_FATAL, CQ_ERR for its
# objects, forged event CQEs never delivered to a QP of another CQ); then
# another user's pingpong works.
ring_liar() {
	local out rc=0
	guest_use vm
	out=$(as_user 65534 90 vrdma-ring-liar -d vrdma0 -g 1) || rc=$?
	guest_save vm
	echo "$out" | sed 's/^/  /'
	[ $rc = 0 ] && other_user_pp
}
check "a program lying in its own rings (as nobody): only its queues fail; another user's pingpong works" \
	ring_liar
# the stress on rings: each CQ, QP and SRQ of the program rings of its own
# memory (pinned under nobody's 8 MiB), its slots those of the device's
# ring tables (ring_max_cq 12, ring_max_qp 16, as above)
STRESS_SECS=$((STRESS_SECS * 2 / 3))
check "vrdma-stress as nobody on rings of its own: create/destroy races, MRs under WRITEs" stress 2
check "then every CQ and QP slot on rings can be had again" all_slots
REBIND_PARAMS=

# ---- DMA addresses: the same VM behind an emulated Intel IOMMU
# (intel_iommu=on), where the PCI device's DMA mapping gives I/O virtual
# addresses, not the guest-physical ones the device reads: the driver must
# refuse the device and say why (the other virtio devices, without
# VIRTIO_F_ACCESS_PLATFORM, bypass the IOMMU and work).
iommu_refused() {
	local out rc=0
	guest_use vm
	guest_stop
	guest_save vm
	guest_use iommu
	vm_knobs
	GUEST_APPEND="$VM_APPEND intel_iommu=on iommu.passthrough=0"
	GUEST_RDMA=none
	GUEST_QEMU_EXTRA=(-device intel-iommu "${GUEST_QEMU_EXTRA[@]}")
	guest_tap "$NSA" "vi$ID" br0
	if guest_boot "$NSA" "vi$ID" "$VM/24"; then
		out=$(guest_run 60 'modprobe -a ib_uverbs virtio_rdma; sleep 1;
			dmesg | grep -E "virtio_rdma|DMAR: IOMMU enabled" | tail -n 4') || rc=$?
	else
		rc=1
	fi
	guest_stop
	guest_save iommu
	echo "$out" | sed 's/^/    /'
	[ $rc = 0 ] && echo "$out" | grep -q 'are not guest-physical'
}
check "behind a translating IOMMU the driver refuses the device, saying why" iommu_refused

guests_off
check "vrdmad exits 0 after the VM is gone, no sanitizer report" clean_exit "$DPID" "$DLOG"
DAEMON_PIDS=()

summary hostile
