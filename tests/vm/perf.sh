#!/bin/bash
# perftest in a real VM: the Debian 13 guest of verbs.sh (vrdma0: our QEMU
# device, virtio_rdma.ko, the vrdma provider) runs ib_write_bw, ib_read_bw,
# ib_send_bw, ib_write_lat, ib_send_lat, ib_atomic_bw and ib_atomic_lat
# (both -A operations), unmodified and with their
# default options, against the same programs on Linux Soft-RoCE in the
# Debian 12 guest of the interop suite, each side serving in turn. The
# topology is verbs.sh's (tests/vm/lib.sh sets it up).
#
# Environment: VRDMAD, VRDMACTL, BPF_OBJ (the Makefile's ASan build),
# VRDMA_QEMU_DIR (guest/qemu/build.sh's output), VRDMA_SYSCOUNT (build/syscount.so); PERF_SHOW=1 prints every
# run's output, PERF_TESTS_BW and PERF_TESTS_LAT choose the tests,
# PERF_TESTS_ATOMIC the atomic operations (empty: none). Needs
# root. Exit 77 (SKIP) only when QEMU cannot run here.
set -e
# booted on ABI v1, then bound again on rings: v1 against v2 in one boot
# (back from rings to v1 needs a new boot: docs/guest.md)
VM_RINGS=0
source "$(dirname "$0")/lib.sh"
: "${VRDMA_SYSCOUNT:?set VRDMA_SYSCOUNT to build/syscount.so}"

vm_pair_up perf

# perf TEST SIZE ITERS WHO-SERVES [FLAG...]: both exit 0 and print their
# result row (GID index 1 on both sides: the IPv4-mapped GID).
# The VM's side runs under "${VM_WRAP[@]}" (empty, or syscount's env).
VM_WRAP=()
perf() {
	local test=$1 s=$2 n=$3 who=$4 dev_s dev_c
	local -a f=("${@:5}") ws=() wc=()
	if [ "$who" = vm ]; then dev_s=vrdma0; dev_c=rxe0; ws=("${VM_WRAP[@]}")
	else dev_s=rxe0; dev_c=vrdma0; wc=("${VM_WRAP[@]}"); fi
	if ! perf_pair "$test" "$who" "${ws[@]}" "ib_$test" -d "$dev_s" -x 1 -s "$s" -n "$n" -F "${f[@]}" -- \
		"${wc[@]}" "ib_$test" -d "$dev_c" -x 1 -s "$s" -n "$n" -F "${f[@]}"; then
		echo "    -- server ($who):"; sed 's/^/    /' "$TMP/server.out"
		echo "    -- client:"; sed 's/^/    /' "$TMP/client.out"
		return 1
	fi
	[ -z "${PERF_SHOW:-}" ] || cat "$TMP/server.out" "$TMP/client.out"
}

for test in ${PERF_TESTS_BW-write_bw read_bw send_bw}; do
	for who in vm rxe; do
		check "ib_$test VM <-> Soft-RoCE, 64 KiB, $who serves" perf "$test" 65536 100 "$who"
	done
done
for test in ${PERF_TESTS_LAT-write_lat send_lat}; do
	for who in vm rxe; do
		check "ib_$test VM <-> Soft-RoCE, 4 KiB, $who serves" perf "$test" 4096 100 "$who"
	done
done
# Atomics (issue 18): 8 bytes, each -A operation.
for at in ${PERF_TESTS_ATOMIC-FETCH_AND_ADD CMP_AND_SWAP}; do
	for who in vm rxe; do
		check "ib_atomic_bw -A $at VM <-> Soft-RoCE, $who serves" perf atomic_bw 8 200 "$who" -A "$at"
	done
	# the latency test (one atomic at a time): the VM serving
	check "ib_atomic_lat -A $at VM <-> Soft-RoCE, vm serves" perf atomic_lat 8 200 vm -A "$at"
done

# What the data path costs the VM in notifications and interrupts (issue
# 30's measures; ABI v2 aims at <= 0.01 of each per WQE and per completion
# while the worker polls): the device's and the worker's counters around a
# 64-byte ib_send_bw from the VM, the run that counts 10 system calls per
# message with v1.
counters() {
	ctl stats --json | jq -r '[(.vms[] | select(.name == "alpha") | .device |
		.send_wqes, .recv_wqes, .cqes, .interrupts, .cq_interrupts),
		([.workers[].kicks] | add), ([.workers[].wakeups] | add)] | @tsv'
}
# syscount.so (tests/vm/syscount.c) in the VM's share: the system calls a
# program makes on its RDMA fds, one line per process in the share's sc.txt.
guest_use vm
cp "$VRDMA_SYSCOUNT" "$GUEST_FILES/syscount.so"
guest_save vm
SC_WRAP=(env LD_PRELOAD=/mnt/host/files/syscount.so SYSCOUNT_OUT=/mnt/host/files/sc.txt)
# syscalls TEST SIZE ITERS [FLAG...]: the VM's client of TEST under the shim;
# SC = its ioctl + write + read calls on RDMA fds.
syscalls() {
	guest_use vm
	rm -f "$GUEST_FILES/sc.txt"
	guest_save vm
	VM_WRAP=("${SC_WRAP[@]}")
	perf "$@" || { VM_WRAP=(); return 1; }
	VM_WRAP=()
	guest_use vm
	SC_LINE=$(grep "comm=ib_$1" "$GUEST_FILES/sc.txt" || true)
	guest_save vm
	echo "    $SC_LINE"
	[ -n "$SC_LINE" ] || { echo "    syscount wrote nothing"; return 1; }
	SC=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^(ioctl|write|read)=/) {
		split($i, kv, "="); n += kv[2] } } END { print n + 0 }' <<< "$SC_LINE")
}
# notifications: the counts around the run; KICKS and WAKES (the workers'
# wakeups), RATE (the VM's message rate, Mpps) for the callers
notifications() {
	local -a a b
	read -r -a a <<< "$(counters)"
	syscalls send_bw 64 20000 rxe || return 1
	read -r -a b <<< "$(counters)"
	local wqes=$(( b[0] - a[0] + b[1] - a[1] )) cqes=$(( b[2] - a[2] ))
	local irq=$(( b[3] - a[3] )) cqirq=$(( b[4] - a[4] ))
	KICKS=$(( b[5] - a[5] )) WAKES=$(( b[6] - a[6] ))
	RATE=$(awk '$1 == 64 && NF >= 5 { r = $5 } END { print r + 0 }' "$TMP/client.out")
	grep -E '^ *64 ' "$TMP/client.out" | sed 's/^ */    the VM: /'	# the row RATE is from
	echo "    $wqes WQEs, $cqes CQEs: $KICKS kicks ($(awk -v k="$KICKS" -v w="$wqes" \
		'BEGIN { printf "%.3f", k / w }') per WQE, $WAKES wakeups of the worker), $irq interrupts:" \
		"$cqirq for CQs ($(awk -v i="$cqirq" -v c="$cqes" 'BEGIN { printf "%.3f", i / c }') per CQE;" \
		"perftest arms none), the rest the control queue's,"
	echo "    $SC system calls on RDMA fds: $(awk -v s="$SC" 'BEGIN { printf "%.2f", s / 20000 }')" \
		"per message; $RATE Mpps"
	# the VM sent 20000 messages (perftest signals one WQE in 100); on
	# unarmed CQs at most one interrupt per 100 completions
	[ "$wqes" -ge 20000 ] && [ "$cqes" -ge 200 ] && [ $((cqirq * 100)) -le "$cqes" ]
}
# on v1 every post is a system call (the shim must see at least those)
v1_counts() { notifications && [ "$SC" -ge 20000 ] && RATE_V1=$RATE; }
check "ib_send_bw -s 64 -n 20000 from the VM: kicks per WQE, interrupts per CQE, system calls (v1)" \
	v1_counts
# ib_write_lat -s 64: a post and a poll loop per round trip (perftest's
# latency tests poll the CQ busily: on v1 each empty poll is a system call)
lat_syscalls() {
	syscalls write_lat 64 2000 rxe || return 1
	echo "    $(awk -v s="$SC" 'BEGIN { printf "%.2f", s / 2000 }') system calls per round trip"
	[ "$SC" -ge 2000 ]
}
check "ib_write_lat -s 64 -n 2000 from the VM: system calls per round trip (v1)" lat_syscalls

# The same run on ABI v2's rings, the driver bound again with rings=1 (from
# v1 to rings within a boot works; back does not: docs/guest.md): the VM's
# message rate against v1's in one run (TCG: the ratio, not the times), and
# a kick at most once per sleep of the worker (need_wake's number).
rings_rebind() {
	vm_reload rings=1 || return 1
	echo "    $VM_RELOAD_OUT"
	guest_use vm
	vm_on_rings
}
check "the driver bound again on rings (rings=1): vrdma0 ACTIVE" rings_rebind
# On rings the program posts and polls in its own memory (docs/virtio-rdma.md
# section 9): its system calls are the control path's (under 100) and its
# kicks, which are at most one per sleep of the worker.
rings_counts() {
	notifications || return 1
	# Once in the runs on record perftest printed a row of zeros (peak too) for
	# a run that moved all its messages: its cycle samples, not a rate.
	# Said as such, not as a ratio of 0.
	echo "    the VM's 64 B message rate on rings against v1: $RATE / ${RATE_V1:-?} Mpps =" \
		"$(awk -v a="$RATE" -v b="${RATE_V1:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b
			else print "? (perftest reported no rate)" }')"
	[ "$KICKS" -le $((WAKES + 50)) ] && [ "$SC" -le $((KICKS + 100)) ]
}
check "ib_send_bw -s 64 -n 20000 on rings: no system call per post or poll, a kick at most once per sleep; the rate against v1" \
	rings_counts
# the latency test's busy polls: each one a system call on v1, none here
rings_lat() {
	local -a a b
	read -r -a a <<< "$(counters)"
	syscalls write_lat 64 2000 rxe || return 1
	read -r -a b <<< "$(counters)"
	echo "    $(awk -v s="$SC" 'BEGIN { printf "%.2f", s / 2000 }') system calls per round trip," \
		"$(( b[5] - a[5] )) kicks"
	[ "$SC" -le $(( b[5] - a[5] + 100 )) ]
}
check "ib_write_lat -s 64 -n 2000 on rings: system calls per round trip" rings_lat

guests_off
check "vrdmad exits 0 after the VM is gone, no sanitizer report" clean_exit "$DPID" "$DLOG"
DAEMON_PIDS=()
summary perf
