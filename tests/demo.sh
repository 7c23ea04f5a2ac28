#!/bin/bash
# `make demo`: two vrdmads, one at each end of a veth pair, and RDMA between
# their VMs with the perf tools.
#
#   netns vrA-ID                              netns vrB-ID
#   +------------------------------+          +------------------------------+
#   | vrdmad (XDP + AF_XDP on vA)  |          | vrdmad (XDP + AF_XDP on vB)  |
#   |   vm web1: GID 10.210.0.11   |<--veth-->|   vm db1: GID 10.210.0.12    |
#   |   vA-ID 10.210.0.1           |          |   vB-ID 10.210.0.2           |
#   |   vrdma-pingpong/-perf client|          |   vrdma-pingpong/-perf server|
#   +------------------------------+          +------------------------------+
#
# The VMs' GIDs are addresses of the ends too, so the kernels answer ARP for
# them as a guest would. Everything is torn down at the end, and on Ctrl-C.
set -e
source "$(dirname "$0")/lib.sh"
: "${VRDMA_PINGPONG:?set VRDMA_PINGPONG to the vrdma-pingpong binary}"
: "${VRDMA_PERF:?set VRDMA_PERF to the vrdma-perf binary}"
trap 'echo; echo "interrupted: cleaning up"; exit 130' INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "two network namespaces joined by a veth pair ($NSA, $NSB)"
setup_pair "10.210.0.1/24 10.210.0.11/24" "10.210.0.2/24 10.210.0.12/24"
CONF_A=$(write_conf "" "[vm web1]
gid = 10.210.0.11
socket = $TMP/web1.sock" a.conf)
CONF_B=$(CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock write_conf "" "[vm db1]
gid = 10.210.0.12
socket = $TMP/db1.sock" b.conf)
sed -i 's/^log_level = debug/log_level = info/' "$CONF_A" "$CONF_B"
cat "$CONF_A"

step "start one vrdmad in each namespace"
start_daemon "$CONF_A"
start_daemon_b "$CONF_B"
ctl status
ctlb status

# run_pair NAME SERVER_CMD... -- CLIENT_CMD...: the server in B on db1, the
# client in A on web1, towards B's address.
run_pair() {
	local what=$1 spid rc=0
	shift
	local -a srv=() cli=()
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	step "$what"
	ip netns exec "$NSB" timeout 120 "${srv[@]}" -d "$TMP/db1.sock" > "$TMP/server.out" 2>&1 &
	spid=$!
	sleep 0.5
	ip netns exec "$NSA" timeout 120 "${cli[@]}" -d "$TMP/web1.sock" 10.210.0.2 || rc=$?
	wait "$spid" || rc=$?
	if [ $rc != 0 ]; then
		echo "-- server side:"
		cat "$TMP/server.out"
		return $rc
	fi
}

run_pair "vrdma-pingpong, RC, 4 KiB messages with data checked (as ibv_rc_pingpong -c)" \
	"$VRDMA_PINGPONG" -g 0 -s 4096 -n 1000 -c -- "$VRDMA_PINGPONG" -g 0 -s 4096 -n 1000 -c
run_pair "vrdma-perf write_bw (as ib_write_bw -a)" \
	"$VRDMA_PERF" write_bw -x 0 -a -n 200 -- "$VRDMA_PERF" write_bw -x 0 -a -n 200
run_pair "vrdma-perf read_bw, 64 KiB" \
	"$VRDMA_PERF" read_bw -x 0 -s 65536 -n 1000 -- "$VRDMA_PERF" read_bw -x 0 -s 65536 -n 1000
run_pair "vrdma-perf send_bw, 64 KiB" \
	"$VRDMA_PERF" send_bw -x 0 -s 65536 -n 1000 -- "$VRDMA_PERF" send_bw -x 0 -s 65536 -n 1000
run_pair "vrdma-perf send_lat, 64 B" \
	"$VRDMA_PERF" send_lat -x 0 -s 64 -n 2000 -- "$VRDMA_PERF" send_lat -x 0 -s 64 -n 2000

step "what the daemons counted"
ctl stats
ctlb stats

step "stop both daemons (SIGTERM)"
stop_daemon
echo "web1's daemon: exit code $RC after $MS ms"
DPID=$DPID_B stop_daemon
echo "db1's daemon: exit code $RC after $MS ms"
for ns in "$NSA:$IFA" "$NSB:$IFB"; do
	if ip -n "${ns%%:*}" link show "${ns#*:}" | grep -q prog/xdp; then
		echo "XDP program still attached to ${ns#*:}!"
		exit 1
	fi
done
echo "no XDP program left on $IFA or $IFB; namespaces are removed on exit"
