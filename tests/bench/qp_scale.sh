#!/bin/bash
# `make bench`: what idle QPs cost a busy one (issue 30: 4095 idle QPs beside
# one busy one cost <= 10 % of its message rate). qp_scale --busy: QP 0 of VM
# alpha (daemon A) writes 64-byte RDMA WRITEs to VM beta (daemon B) alone,
# then the other QPs are made, connected and each passes checked messages,
# then QP 0 writes again beside them, idle. Both VMs on rings (VRDMA_RINGS=1).
# A benchmark: it reports, and fails only if something broke. Each round
# measures both rates next to each other; every round's ratio is printed,
# then their median.
#
#   netns vrA-ID                          netns vrB-ID
#   +-------------------------------+     +-------------------------------+
#   | vrdmad A, vm alpha 10.225.0.11|<--->| vrdmad B, vm beta 10.225.0.12 |
#   |   qp_scale on alpha.sock and beta.sock                              |
#   +-------------------------------+     +-------------------------------+
#
# Environment: VRDMAD, VRDMACTL, BPF_OBJ, QP_SCALE (set by the Makefile);
# BENCH_ROUNDS (5), BENCH_QPS (4096), BENCH_BUSY_ITERS (500000).
set -e -o pipefail
source "$(dirname "$0")/../lib.sh"
: "${QP_SCALE:?set QP_SCALE to the qp_scale binary}"
ROUNDS=${BENCH_ROUNDS:-5}
NQP=${BENCH_QPS:-4096}
ITERS=${BENCH_BUSY_ITERS:-500000}

setup_pair "10.225.0.1/24 10.225.0.11/24" "10.225.0.2/24 10.225.0.12/24"
vm() {	# NAME GID
	printf '[vm %s]\ngid = %s\nsocket = %s/%s.sock\nring_max_qp = %s\nring_max_cq = %s\n' \
		"$1" "$2" "$TMP" "$1" "$NQP" $((NQP + 2))
}
CONF_A=$(write_conf "" "$(vm alpha 10.225.0.11)" a.conf)
CONF_B=$(CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock write_conf "" "$(vm beta 10.225.0.12)" b.conf)
sed -i 's/^log_level = debug$/log_level = info/' "$CONF_A" "$CONF_B"
start_daemon "$CONF_A"
start_daemon_b "$CONF_B"
export VRDMA_RINGS=1

echo "== idle QPs beside a busy one: $((NQP - 1)) idle, QP 0 writing $ITERS x 64 B (rings), $ROUNDS rounds"
ip netns exec "$NSA" "$QP_SCALE" --busy "$ITERS" --rounds "$ROUNDS" "$TMP/alpha.sock" "$TMP/beta.sock" \
	"$NQP" 1 | grep -E '^(qp_scale: round|bench:)'
echo "== the same, each idle QP with a CQ of its own"
ip netns exec "$NSA" "$QP_SCALE" --busy "$ITERS" --rounds "$ROUNDS" --cq-per-qp "$TMP/alpha.sock" \
	"$TMP/beta.sock" "$NQP" 1 | grep -E '^(qp_scale: round|bench:)' | sed 's/^bench: idle_\([0-9]*\)qp_/bench: idle_\1qp_own_cq_/'
stop_daemon
