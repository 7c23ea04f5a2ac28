# shellcheck shell=bash disable=SC2034,SC2054  # guest.sh's knobs are set for it; QEMU's options have commas
# What every tests/vm script starts with: the netns helpers, the guest
# harness, numbered checks, and our QEMU (VRDMA_QEMU_DIR, guest/qemu/build.sh's
# output) as the guests' QEMU. Exits 77 (SKIP) only when QEMU cannot run here.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$HERE/interop/guest.sh"
source "$HERE/checks.sh"
: "${VRDMA_QEMU_DIR:?set VRDMA_QEMU_DIR to the output of guest/qemu/build.sh}"
GUEST_QEMU=$VRDMA_QEMU_DIR/bin/qemu-system-x86_64
REPO=$(cd "$HERE/.." && pwd)
CT_DIR=$TMP/ct
source "$HERE/systemd/container.sh"
[ -x "$GUEST_QEMU" ] || { echo "no $GUEST_QEMU: guest/qemu/build.sh" >&2; exit 1; }
guest_require

# The VM and the Soft-RoCE guest of verbs.sh and perf.sh (the picture is in
# verbs.sh): vm_pair_up boots both, run_pair runs a server in one and its
# client in the other, guests_off powers both off; clean_exit checks a
# vrdmad's end.
VM=10.208.0.11
RXE=10.208.0.20
VMMAC=52:54:00:d0:00:0b

check_failed() {
	echo "    --- vrdmad's log (last 15 lines)"
	grep -v 'vhost-user [A-Z_]*$' "$DLOG" | tail -n 15 | sed 's/^/    | /'
	kmsg_clean > /dev/null || kmsg_clean_said
}

# The VM runs as the kernel's own tests run drivers: 2 vCPUs, SLUB's
# consistency checks, red zones, poisoning and owner tracking
# (slub_debug=FZPU), and a kernel log that must stay free of reports:
# vm_boot starts a reader of it (kmsg_watch), and check_after fails a check
# that left a report there.
VM_SMP=2
VM_APPEND="slub_debug=FZPU"
# VM_RINGS=0: the driver on ABI v1 (its module parameter rings=0, which
# modprobe takes from the kernel command line at every load); by default it
# takes ABI v2's rings, and a check at boot says it did.
VM_RINGS=${VM_RINGS:-1}
[ "$VM_RINGS" = 1 ] || VM_APPEND+=" virtio_rdma.rings=0"
KMSG=
KMSG_SEEN=0
KMSG_BAD='BUG|WARNING|Oops|general protection|KASAN|UBSAN|[Cc]orrupt|soft lockup|hard LOCKUP|rcu.*stall|blocked for more than|Call Trace|refcount_t'
# What the IB core's MAD and CM layers say when QP1 or its port fails
# (cm.sh wants none of it; hostile.sh's gsi_refused makes them say it),
# less their greetings.
MAD_COMPLAINT='ib_mad|mad.*(err|fail)|ib_cm|rdma_cm|QP1|couldn.t (start|open) port|drain'
MAD_GREETING='registered|loaded|modules linked in'

# vm_host: the bridges and vrdmad with VM alpha (its config in CONF;
# max_cq and max_qp 8, or VM_MAX_CQ / VM_MAX_QP, and the lines of
# VM_CONF_EXTRA); the VM's socket in VM_SOCK.
vm_host() {
	local ns
	VM_SOCK=$TMP/alpha.sock
	trap 'guests_off; cleanup' EXIT
	# both images first (cached after the first run)
	GUEST_IMAGE_SCRIPT=$HERE/../guest/image.sh guest_image
	VM_IMAGE=$GUEST_IMAGE
	GUEST_IMAGE=
	guest_image
	RXE_IMAGE=$GUEST_IMAGE

	ip netns add "$NSA"
	ip netns add "$NSC"
	ip link add "$IFA" netns "$NSA" type veth peer name "${IFA}p" netns "$NSC"
	for ns in "$NSA" "$NSC"; do
		ip -n "$ns" link add br0 type bridge stp_state 0 forward_delay 0
		ip -n "$ns" link set br0 up
		ip -n "$ns" link set lo up
	done
	ip -n "$NSA" link set "$IFA" master br0 up
	ip -n "$NSC" link set "${IFA}p" master br0 up

	local alpha="[vm alpha]
gid = $VM
mac = $VMMAC
max_cq = ${VM_MAX_CQ:-8}
max_qp = ${VM_MAX_QP:-8}${VM_CONF_EXTRA:+
$VM_CONF_EXTRA}"
	# VM_MANAGED=systemd: vrdmad.service under a real systemd (svc_up)
	if [ "${VM_MANAGED:-}" = systemd ]; then
		trap 'guests_off; ct_cleanup; cleanup' EXIT
		svc_up "vrdv-$ID" "$NSA" "$IFA" "$alpha" || exit
		VM_SOCK=$SVC_RUN/alpha.sock
		CTL_SOCK=$SVC_RUN/control.sock
		DLOG=$SVC_LOG
		return
	fi
	CONF=$(write_conf "" "$alpha
socket = $VM_SOCK" vm.conf)
	start_daemon "$CONF"
}

# svc_up NAME NS IFACE VM-SECTIONS: vrdmad.service (as `make install` puts it
# in place) under a real systemd, in container NAME (tests/systemd/
# container.sh), which shares network namespace NS and sees SVC_RUN
# ($TMP/run-NAME) as its /run/vrdmad, where the service makes its control
# socket and the VMs' (QEMU and the tools stay outside, on the host);
# its [port] is IFACE. Started, with its journal followed into SVC_LOG.
# The container stays current (ct).
svc_up() {
	local name=$1 rc=0
	SVC_RUN=$TMP/run-$name
	SVC_LOG=$TMP/$name.journal
	mkdir -p "$SVC_RUN" "$CT_DIR"
	ct_need || return
	ct_prepare "$name" || return
	cat > "$ROOT/etc/vrdmad.conf" <<EOC
[daemon]
log_level = info
[port]
interface = $3
$4
EOC
	ct_boot "$name" --network-namespace-path="/run/netns/$2" --bind="$SVC_RUN:/run/vrdmad" ||
		return
	ct systemctl start vrdmad || rc=$?
	ct_bg journalctl -u vrdmad -f -n all -o cat < /dev/null > "$SVC_LOG" 2>&1
	DAEMON_PIDS+=("$CT_BG_PID")	# cleanup ends it
	if [ $rc != 0 ]; then
		ct journalctl -u vrdmad --no-pager -n 30 >&2
		return 1
	fi
}

# beta_netns: netns $NSB for a second vrdmad, its port $IFB on C's bridge
# with the address $BETA (10.208.0.12), the VM of that vrdmad's.
BETA=10.208.0.12
beta_netns() {
	ip netns add "$NSB"
	ip link add "$IFB" netns "$NSB" type veth peer name "${IFB}p" netns "$NSC"
	ip -n "$NSC" link set "${IFB}p" master br0 up
	ip -n "$NSB" addr add "$BETA/24" dev "$IFB"
	ip -n "$NSB" link set "$IFB" up
	ip -n "$NSB" link set lo up
}

# vm_boot NAME: the VM, whose boot is the script's first check (then its
# kernel log is watched); if it does not come up, NAME's summary and exit.
vm_boot() {
	echo "vm: booting the vrdma guest"
	guest_use vm
	vm_knobs
	guest_tap "$NSA" "vv$ID" br0
	check "the VM boots (2 vCPUs, slub_debug); virtio_rdma registers vrdma0" guest_boot "$NSA" "vv$ID" "$VM/24"
	[ -n "$GUEST_PID" ] || { guest_save vm; summary "$1"; exit 1; }
	kmsg_watch
	guest_save vm
	echo "vm: VM up in $GUEST_BOOT_SECS s"
	if [ "$VM_RINGS" = 1 ]; then
		check "the driver is on rings (ABI v2)" vm_on_rings
	else
		check "the driver is on ABI v1 (VM_RINGS=0)" vm_on_v1
	fi
}

# vm_reload PARAMS...: virtio_rdma in the VM unloaded and loaded again with
# PARAMS (a fresh device); up to 30 s for vrdma0 to be ACTIVE. Prints what
# went wrong, or `rdma link show`'s line for vrdma0 in VM_RELOAD_OUT.
vm_reload() {
	guest_use vm
	VM_RELOAD_OUT=$(guest_run 90 "modprobe -r virtio_rdma; modprobe virtio_rdma $* &&
		for i in \$(seq 150); do rdma link show vrdma0/1 2>/dev/null | grep -q ACTIVE && break; sleep 0.2; done;
		rdma link show vrdma0/1") || { echo "$VM_RELOAD_OUT" | sed 's/^/    /'; guest_save vm; return 1; }
	guest_save vm
	echo "$VM_RELOAD_OUT" | grep -q 'state ACTIVE' || { echo "    $VM_RELOAD_OUT"; return 1; }
}

# vm_rings_used Y|N: virtio_rdma in the VM took ABI v2's rings (Y) or
# left them alone (N, rings=0), by its parameter and its kernel log.
vm_rings_used() {
	local out took
	guest_use vm
	out=$(guest_run 20 'cat /sys/module/virtio_rdma/parameters/rings; dmesg | grep -c "on rings in guest memory"')
	guest_save vm
	took=$(echo "$out" | sed -n 2p)
	[ "$(echo "$out" | sed -n 1p)" = "$1" ] || return 1
	if [ "$1" = Y ]; then [ "$took" -ge 1 ]; else [ "$took" = 0 ]; fi
}
vm_on_rings() { vm_rings_used Y; }
vm_on_v1() { vm_rings_used N; }

# vm_knobs: the current guest's knobs, the VM's (alpha's device on
# vrdmad's socket).
vm_knobs() {
	GUEST_IMAGE=$VM_IMAGE
	GUEST_MAC=$VMMAC
	GUEST_MACHINE=q35,memory-backend=mem
	GUEST_MEM=512
	GUEST_SMP=$VM_SMP
	GUEST_APPEND=$VM_APPEND
	GUEST_RDMA=vrdma
	GUEST_QEMU_EXTRA=(-object memory-backend-memfd,id=mem,size=512M,share=on
		-chardev "socket,id=vrdma0,path=$VM_SOCK,reconnect=1"
		-device vhost-user-rdma-pci,id=vrdma0,chardev=vrdma0)
}

# vm_pair_up NAME: vm_host, then the Soft-RoCE guest and the VM (vm_boot),
# booting at once (a boot under TCG keeps about one CPU of two busy).
vm_pair_up() {
	vm_host
	echo "vm: booting the Soft-RoCE guest"
	guest_use rxe
	GUEST_IMAGE=$RXE_IMAGE
	guest_tap "$NSC" "vr$ID" br0
	guest_boot_start "$NSC" "vr$ID" "$RXE/24" || { echo "vm: the Soft-RoCE guest did not start"; exit 1; }
	guest_save rxe
	vm_boot "$1"
	guest_use rxe
	guest_boot_wait || { echo "vm: the Soft-RoCE guest did not come up"; summary "$1"; exit 1; }
	echo "vm: rxe guest up in $GUEST_BOOT_SECS s"
	guest_save rxe
	guest_use vm	# the current guest, as vm_boot left it
}

# kmsg_watch: the VM's kernel log, as it grows, into a host file (the
# current guest must be the VM).
kmsg_watch() {
	guest_start kmsg 7200 dmesg --follow
	KMSG=$(guest_output kmsg)
	KMSG_SEEN=0
}

# kmsg_clean: no report in the VM's kernel log since the last look; the
# report's lines, if there is one.
kmsg_clean() {
	local n new
	[ -n "$KMSG" ] && [ -f "$KMSG" ] || return 0
	sleep 0.2
	n=$(wc -l < "$KMSG")
	new=$(tail -n "+$((KMSG_SEEN + 1))" "$KMSG" | head -n "$((n - KMSG_SEEN))")
	KMSG_SEEN=$n
	KMSG_NEW=$new
	if echo "$new" | grep -Eq "$KMSG_BAD"; then
		kmsg_clean_said
		return 1
	fi
}
# kmsg_clean_said: the report kmsg_clean found, as it shows it.
kmsg_clean_said() {
	echo "    the VM's kernel log has a report:"
	echo "$KMSG_NEW" | grep -E -B 2 -A 30 "$KMSG_BAD" | head -n 60 | sed 's/^/    | /'
}
check_after() { kmsg_clean; }

guests_off() {
	guest_use vm
	guest_stop
	guest_use rxe
	guest_stop
}

# perf_pair TEST WHO SERVER... -- CLIENT...: run_pair of perftest's
# ib_TEST, and its result rows (perf_row). perftest times itself by its
# CPU's clock, measured at start against gettimeofday; in a TCG guest on a
# busy host the samples may correlate below r^2 0.9, and it then prints 0
# or inf for a run that went well: such a run goes once more, said.
perf_pair() {
	local test=$1 why
	shift
	run_pair "$@" || return 1
	perf_row "$test" && return 0
	why=$(grep -h 'Correlation coefficient r^2' "$TMP/server.out" "$TMP/client.out" | head -n 1)
	[ -n "$why" ] || return 1
	echo "    perftest could not time itself ($why): once more"
	run_pair "$@" && perf_row "$test"
}

# run_pair WHO SERVER... -- CLIENT...: WHO serves (vm or rxe), the other
# connects to it; both must exit 0. Their output is left in
# $TMP/server.out and $TMP/client.out; on a failure the last PAIR_TAIL
# (40: all of perftest's, whose errors come first) lines of each are shown.
run_pair() {
	local who=$1 other port=$((20000 + NTEST)) rc=0 srv_ip
	shift
	local -a srv=() cli=()
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	if [ "$who" = vm ]; then other=rxe; srv_ip=$VM; else other=vm; srv_ip=$RXE; fi
	guest_use "$who"
	guest_start "srv$NTEST" 120 "${srv[@]}" -p "$port"
	guest_listening "$port" 30 || { echo "    the $who server did not listen"; guest_save "$who"; return 1; }
	guest_save "$who"
	guest_use "$other"
	guest_run 110 "${cli[@]}" -p "$port" "$srv_ip" > "$TMP/client.out" 2>&1 || rc=$?
	guest_save "$other"
	guest_use "$who"
	guest_wait "srv$NTEST" > "$TMP/server.out" 2>&1 || rc=$?
	guest_save "$who"
	if [ $rc != 0 ]; then
		echo "    -- server ($who):"; tail -n "${PAIR_TAIL:-40}" "$TMP/server.out" | sed 's/^/    /'
		echo "    -- client:"; tail -n "${PAIR_TAIL:-40}" "$TMP/client.out" | sed 's/^/    /'
	fi
	return $rc
}

# The VM against Soft-RoCE, as verbs.sh and rings.sh run them. PP_AFTER,
# when set, is a command run after each ping-pong that passed, with the
# number of WQEs the VM posted at least (rings.sh counts what vrdmad took
# from its rings).
#
# pingpong TYPE SIZE ITERS WHO-SERVES [FLAG...]: ibv_TYPE_pingpong -c
pingpong() {
	local t=$1 s=$2 n=$3 who=$4 dev_s dev_c
	if [ "$who" = vm ]; then dev_s=vrdma0; dev_c=rxe0; else dev_s=rxe0; dev_c=vrdma0; fi
	run_pair "$who" "ibv_${t}_pingpong" -d "$dev_s" -g 1 -s "$s" -n "$n" -c "${@:5}" -- \
		"ibv_${t}_pingpong" -d "$dev_c" -g 1 -s "$s" -n "$n" -c "${@:5}" && pp_lines &&
		{ [ -z "$PP_AFTER" ] || $PP_AFTER $((2 * n)); }
}

# srq_pingpong NQP WHO-SERVES: ibv_srq_pingpong's NQP QPs on one SRQ
srq_pingpong() {
	local q=$1 who=$2 dev_s dev_c
	if [ "$who" = vm ]; then dev_s=vrdma0; dev_c=rxe0; else dev_s=rxe0; dev_c=vrdma0; fi
	run_pair "$who" ibv_srq_pingpong -d "$dev_s" -g 1 -q "$q" -s 4096 -n 100 -- \
		ibv_srq_pingpong -d "$dev_c" -g 1 -q "$q" -s 4096 -n 100 && pp_lines &&
		{ [ -z "$PP_AFTER" ] || $PP_AFTER 200; }
}

# wr_test: vrdma-wr-test (guest/rdma-core/tests/wr_test.c), the VM's QPs
# connected to each other; what is not ok is shown
wr_test() {
	local out rc=0
	guest_use vm
	out=$(guest_run 90 vrdma-wr-test -d vrdma0 -g 1) || rc=$?
	guest_save vm
	echo "$out" | grep -v ' ok$' | sed 's/^/    /'
	[ $rc = 0 ]
}

# kernel_verbs: vrdma_selftest.ko (guest/kernel/vrdma_selftest.c) loaded
# and unloaded; its last run must pass
kernel_verbs() {
	local out rc=0
	guest_use vm
	out=$(guest_run 90 'modprobe vrdma_selftest && rmmod vrdma_selftest; dmesg | grep vrdma_selftest') || rc=$?
	guest_save vm
	echo "$out" | tail -n 4 | sed 's/^/    /'
	[ $rc = 0 ] && echo "$out" | tail -n 1 | grep -Eq 'vrdma0: [1-9][0-9]* passed, 0 failed'
}

no_sanitizer_report() { ! grep -q "Sanitizer\|runtime error" "$1"; }

# clean_exit PID LOG: that vrdmad exits 0 on SIGTERM, its log without a
# sanitizer report.
clean_exit() {
	local rc=0
	sleep 0.5
	kill -TERM "$1"
	wait "$1" || rc=$?
	no_sanitizer_report "$2" && [ $rc = 0 ]
}
