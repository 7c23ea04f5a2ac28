#!/bin/bash
# Incast behind a bottleneck (issue 26, docs/congestion.md): two daemons,
# 8 RC QPs each (vrdma-perf write_bw -q 8, 64 KiB WRITEs), into two VMs of a
# third daemon whose link the bridge limits with tbf (no PFC, no ECN marks:
# drops are the only signal). Every QP must finish (no RETRY_EXC), and
# together they must carry at least 80 % of the bottleneck's rate; the
# senders' shares are printed.
#
#   netns vrA-ID                netns vrC-ID (bridge)               netns vrR-ID
#   +-------------------+       +---------------------------+       +-------------------+
#   | vrdmad A, vm a .11|<----->| vA-IDp                    |       | vrdmad R          |
#   |  8 QPs -> r1      |       |         br0 -- vR-IDp ----|------>|  vm r1 .21        |
#   +-------------------+       | vB-IDp    tbf RATE Mbit/s |       |  vm r2 .22        |
#   | vrdmad B, vm b .12|<----->|  (towards R only)         |       |  two perf servers |
#   |  8 QPs -> r2      |       +---------------------------+       +-------------------+
#   netns vrB-ID
set -e
source "$(dirname "$0")/../lib.sh"
: "${VRDMA_PERF:=$HERE/../build/asan/vrdma-perf}"
RATE=${INCAST_MBIT:-400}
SECS=${INCAST_SECONDS:-5}
NSR=vrR-$ID
IFR=vR$ID
trap 'ip netns del "$NSR" 2> /dev/null || true; cleanup' EXIT

setup_bridged_pair "10.216.0.1/24 10.216.0.11/24" "10.216.0.2/24 10.216.0.12/24"
ip netns add "$NSR"
ip link add "$IFR" netns "$NSR" type veth peer name "${IFR}p" netns "$NSC"
ip -n "$NSC" link set "${IFR}p" master br0 up
for a in 10.216.0.3/24 10.216.0.21/24 10.216.0.22/24; do ip -n "$NSR" addr add "$a" dev "$IFR"; done
ip -n "$NSR" link set lo up
ip -n "$NSR" link set "$IFR" up
ip netns exec "$NSC" tc qdisc add dev "${IFR}p" root tbf rate "${RATE}mbit" burst 64kb latency 20ms

# vm NAME GID: a VM with room for 16 QPs
vm() { vm_section "$1" "$2" | sed 's/^max_cq = 4$/max_cq = 16/; s/^max_qp = 4$/max_qp = 16/'; }
CONF_A=$(write_conf "" "$(vm a 10.216.0.11)" a.conf)
CONF_B=$(CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock write_conf "" "$(vm b 10.216.0.12)" b.conf)
CONF_R=$(CONF_IF=$IFR CONF_CTL=$TMP/ctlR.sock write_conf "" "$(vm r1 10.216.0.21; vm r2 10.216.0.22)" \
	r.conf)
ctlr() { ip netns exec "$NSR" "$VRDMACTL" -s "$TMP/ctlR.sock" "$@"; }

echo "incast: 2 x 8 QPs into $RATE Mbit/s ($NSA, $NSB -> $NSC -> $NSR)"
start_daemon "$CONF_A"
start_daemon_b "$CONF_B"
run_vrdmad "$NSR" "$CONF_R" "$TMP/vrdmad-r.log" ctlr
DPID_R=$VPID

perf() {	# NS SOCKET PORT [HOST]: vrdma-perf write_bw -q 8 for SECS
	ip netns exec "$1" timeout $((SECS + 60)) "$VRDMA_PERF" write_bw -d "$2" -q 8 -s 65536 \
		-D "$SECS" -x 0 --report_gbits -p "$3" ${4:+"$4"}
}
bw() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { print v }' "$1"; }

incast() {
	local pids=() p rc=0
	perf "$NSR" "$TMP/r1.sock" 19601 > "$TMP/s1.out" 2>&1 & pids+=($!)
	perf "$NSR" "$TMP/r2.sock" 19602 > "$TMP/s2.out" 2>&1 & pids+=($!)
	wait_listen "$NSR" 19601 10 && wait_listen "$NSR" 19602 10 || true
	perf "$NSA" "$TMP/a.sock" 19601 10.216.0.3 > "$TMP/c1.out" 2>&1 & pids+=($!)
	perf "$NSB" "$TMP/b.sock" 19602 10.216.0.3 > "$TMP/c2.out" 2>&1 & pids+=($!)
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	A=$(bw "$TMP/c1.out") B=$(bw "$TMP/c2.out")
	echo "    a: $A Gb/s, b: $B Gb/s; the bottleneck:" \
		"$(ip netns exec "$NSC" tc -s qdisc show dev "${IFR}p" | grep -o 'Sent.*dropped [0-9]*')"
	[ $rc = 0 ] || { tail -n 3 "$TMP"/[cs][12].out | sed 's/^/    /'; return 1; }
}
check "16 QPs from two daemons into one bottleneck: every one finishes" incast

goodput() {
	awk -v a="$A" -v b="$B" -v r="$RATE" 'BEGIN {
		s = (a + b) * 1000; printf "    together %.0f Mbit/s of %d (%.0f %%); shares %.0f / %.0f %%\n",
			s, r, 100 * s / r, 100 * a * 1000 / s, 100 * b * 1000 / s
		exit !(s >= 0.8 * r) }'
}
check "... carrying at least 80 % of the bottleneck's rate" goodput

RC=dead
if kill -0 "$DPID" 2> /dev/null && kill -0 "$DPID_B" 2> /dev/null && kill -0 "$DPID_R" 2> /dev/null; then
	kill -TERM "$DPID_R"
	wait "$DPID_R" && both_exit_0 && RC=0
fi
check "the three daemons exit 0, no sanitizer report" \
	eval '[ "$RC" = 0 ] && ! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$DLOG" "$DLOG_B" "$TMP/vrdmad-r.log"'
DAEMON_PIDS=()
summary incast
