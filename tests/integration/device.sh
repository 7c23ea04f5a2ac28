#!/bin/bash
# The virtio-rdma device end to end through libvrdma: two VMs of one daemon
# (loopback, no NIC on the data path), every control command, RC/UC/UD
# traffic, bad WQEs, disconnect and reconnect; with workers = 1 and 2; and an
# idle daemon that sleeps.
#
#   netns vrA-ID                                   netns vrB-ID
#   +------------------------------------------+   +-------------+
#   | vrdmad on vA-ID (XDP)                    |   | vB-ID       |
#   |   vm alpha  ::ffff:10.204.0.11  alpha.sock|<->| 10.204.0.2  |
#   |   vm beta   ::ffff:10.204.0.12  beta.sock |   +-------------+
#   |      ^ vrdma_test (libvrdma) on both sockets
#   +------------------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"
: "${VRDMA_TEST:?set VRDMA_TEST to the vrdma_test binary}"

setup_pair "10.204.0.1/24" "10.204.0.2/24"
VMS="[vm alpha]
gid = 10.204.0.11
mac = 52:54:00:00:04:11
socket = $TMP/alpha.sock
max_cq = 8
max_qp = 8
[vm beta]
gid = 10.204.0.12
mac = 52:54:00:00:04:12
socket = $TMP/beta.sock
socket_owner = nobody
socket_group = nogroup
socket_mode = 0660
max_cq = 8
max_qp = 8"

echo "device: virtio-rdma through libvrdma ($NSA)"

no_sanitizer_report() { ! grep -q "Sanitizer\|runtime error" "$DLOG"; }

# vrdma_test prints "vrdma_test: P passed, F failed"; keep its output. Then
# it holds a connected RC pair idle for 6 s (VRDMA_TEST_HOLD), in the
# background, for idle_cpu_low.
run_vrdma_test() {
	local out=$TMP/vrdma_test.$1.out i
	VRDMA_TEST_HOLD=6 timeout 300 "$VRDMA_TEST" "$TMP/alpha.sock" "$TMP/beta.sock" > "$out" 2>&1 &
	TPID=$!
	for i in $(seq 3000); do
		grep -q '^# holding' "$out" && break
		kill -0 "$TPID" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^vrdma_test: [0-9]* passed, 0 failed$' "$out" || {
		grep -v '^ok ' "$out" | tail -30
		return 1
	}
}

sockets_mode() {
	[ "$(stat -c '%U %G %a' "$TMP/alpha.sock")" = "root root 600" ] &&
	[ "$(stat -c '%U %G %a' "$TMP/beta.sock")" = "nobody nogroup 660" ]
}

# CPU ticks (user + system, 10 ms each) the daemon used over 3 s — what ps reads.
idle_ticks() {
	local a b
	a=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
	sleep 3
	b=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
	echo $((b - a))
}
idle_cpu_low() {
	local t
	t=$(idle_ticks)
	echo "    idle daemon: $t ticks of 10 ms in 3 s"
	[ "$t" -le 9 ]	# under 3 % of one core
}

# vrdmactl list / stats NAME, while vrdma_test holds both VMs connected.
listed() {
	local out
	out=$(ctl list)
	echo "$out" | grep -Eq "^alpha +$1 +$TMP/alpha.sock +10\.204\.0\.11" &&
	echo "$out" | grep -Eq "^beta +$1 +$TMP/beta.sock +10\.204\.0\.12"
}
listed_json_idle() {
	ctl list --json | jq -e '.[0].name == "alpha" and .[0].connected == false and .[0].broken >= 0' > /dev/null
}
stats_alpha() {
	local out
	out=$(ctl stats alpha)
	echo "$out" | grep -Eq '^  connected +true$' && echo "$out" | grep -q '^  transport$' &&
	ctl stats alpha --json | jq -e '.name == "alpha" and .device.transport.tx_packets > 0' > /dev/null
}
stats_nosuch() {
	local rc=0 out
	out=$(ctl stats nosuch 2>&1) || rc=$?
	[ $rc = 1 ] && echo "$out" | grep -q "no VM named 'nosuch'"
}

connected_is() { [ "$(jstat ".vms[0].device.connected")" = "$1" ]; }

# libvrdma finds destination MACs as a guest kernel does: the neighbour
# table, probing an address it does not know yet.
peer_mac=$(ip -n "$NSB" -j link show "$IFB" | jq -r '.[0].address')
ip -n "$NSA" neigh replace 10.204.0.99 lladdr 02:00:00:00:04:99 dev "$IFA" nud permanent
resolves() { ip netns exec "$NSA" "$VRDMA_TEST" --resolve "$1" "$2" > /dev/null; }
check "libvrdma resolves a MAC from the neighbour table" resolves 10.204.0.99 02:00:00:00:04:99
check "libvrdma resolves a peer's MAC by probing it" resolves 10.204.0.2 "$peer_mac"
check "libvrdma finds no MAC for an address nobody answers" resolves 10.204.0.77 none
# a VM's GID that is an address of this host (the host answers ARP for it)
check "libvrdma gives a local address its interface's MAC" resolves 10.204.0.1 "$(mac_of "$NSA" "$IFA")"

# Each worker pinned (worker_cpus): the last CPU, then CPU 0 for a second.
# pinned N CPUS...: worker i's thread (vrdmad-wI) may run on CPU i of CPUS
# only, and status says so.
pinned() {
	local n=$1 i=0 cpu tid j
	shift
	j=$(ctl status --json)
	for cpu in "$@"; do
		tid=$(grep -lx "vrdmad-w$i" /proc/"$DPID"/task/*/comm | cut -d/ -f5)
		[ -n "$tid" ] && grep -q "^Cpus_allowed_list:[[:space:]]*$cpu\$" "/proc/$DPID/task/$tid/status" &&
			jq -e --argjson i "$i" --argjson c "$cpu" '.workers[$i].cpu == $c' <<< "$j" > /dev/null ||
			{ echo "    worker $i: thread ${tid:-missing}, want CPU $cpu"; return 1; }
		i=$((i + 1))
	done
	[ "$i" = "$n" ]
}
LAST_CPU=$(( $(nproc) - 1 ))
for workers in 1 2; do
	CONF=$(write_conf "" "$VMS" "w$workers.conf")
	CPUS=$LAST_CPU
	[ "$workers" = 1 ] || CPUS="$LAST_CPU,0"
	sed -i "s/^\[daemon\]$/[daemon]\nworkers = $workers\nidle_spin_us = 50\nworker_cpus = $CPUS/" "$CONF"
	start_daemon "$CONF"
	check "workers = $workers: each worker runs on its worker_cpus CPU ($CPUS)" \
		pinned "$workers" ${CPUS//,/ }
	check "workers = $workers: the VM sockets have their owner, group and mode" sockets_mode
	check "workers = $workers: every vrdma_test case passes" run_vrdma_test "$workers"
	check "workers = $workers: the VMs' frames stayed off the NIC (loopback)" \
		jstat '.port.loopback_frames > 100 and .port.tx_frames == 0'
	check "workers = $workers: control errors and refused WQEs were counted" \
		jstat '.vms[0].device.ctrl_errors > 0 and .vms[0].device.refused_wqes > 0'
	[ "$workers" = 1 ] || check "workers = 2: frames crossed between the workers' rings" \
		jstat '.port.handed_over > 100'
	check "workers = $workers: VMs connected and idle, the daemon sleeps (< 3 % CPU)" \
		idle_cpu_low
	[ "$workers" = 2 ] || {
		check "vrdmactl list: both VMs connected, with socket and GID" listed connected
		check "vrdmactl stats alpha: its device and transport counters" stats_alpha
		check "vrdmactl stats NAME of no VM: exit 1, says so" stats_nosuch
	}
	wait "$TPID" || true
	[ "$workers" = 2 ] || check "vrdmactl list --json: alpha no longer connected" listed_json_idle
	check "workers = $workers: no front-end connected after the test" connected_is false
	stop_daemon
	check "workers = $workers: exit code 0" test "$RC" = 0
	check "workers = $workers: no sanitizer report" no_sanitizer_report
done
summary
