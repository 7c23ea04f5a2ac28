#!/bin/bash
# Thousands of QPs a VM on ABI v2 (docs/virtio-rdma.md section 8, issue 30):
# VM alpha on daemon A holds 4096 RC QPs, each connected to one of VM beta's
# on daemon B across the link, and each passes data-checked messages
# (qp_scale, VRDMA_RINGS=1). The VMs keep v1's 4-queue limits: every QP past
# them exists only as rings. Then one past ring_max_qp is refused, and a
# quarter as many QPs each get a CQ of their own.
#
#   netns vrA-ID                            netns vrB-ID
#   +---------------------------------+     +---------------------------------+
#   | vrdmad A on vA-ID 10.224.0.1    |<--->| vrdmad B on vB-ID 10.224.0.2    |
#   |   vm alpha 10.224.0.11          |     |   vm beta 10.224.0.12           |
#   |   qp_scale drives alpha.sock and beta.sock (4096 QP pairs)            |
#   +---------------------------------+     +---------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"
: "${QP_SCALE:?set QP_SCALE to the qp_scale binary}"
NQP=${NQP:-4096}

setup_pair "10.224.0.1/24 10.224.0.11/24" "10.224.0.2/24 10.224.0.12/24"
vm() {	# NAME GID
	printf '[vm %s]\ngid = %s\nsocket = %s/%s.sock\nmax_cq = 4\nmax_qp = 4\n' "$1" "$2" "$TMP" "$1"
	printf 'ring_max_cq = %s\nring_max_qp = %s\n' $((NQP + 2)) "$NQP"
}
CONF_A=$(write_conf "" "$(vm alpha 10.224.0.11)" a.conf)
CONF_B=$(CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock write_conf "" "$(vm beta 10.224.0.12)" b.conf)
# debug logs a line per command: 4096 QPs make too many
sed -i 's/^log_level = debug$/log_level = info/' "$CONF_A" "$CONF_B"

echo "qp_scale: $NQP RC QPs between two daemons on rings ($NSA, $NSB)"
start_daemon "$CONF_A"
start_daemon_b "$CONF_B"
export VRDMA_RINGS=1

scale() {	# [--cq-per-qp] NQP MSGS: qp_scale's lines shown, its exit code
	local out=$TMP/scale.$NTEST.out rc=0 opt=()
	[ "$1" != --cq-per-qp ] || { opt=("$1"); shift; }
	ip netns exec "$NSA" timeout 900 "$QP_SCALE" "${opt[@]}" "$TMP/alpha.sock" "$TMP/beta.sock" "$@" \
		> "$out" 2>&1 || rc=$?
	sed 's/^/    /' "$out" | tail -8
	return $rc
}
dev() { "$1" stats --json | jq ".vms[0].device.$2"; }
both_rings() {	# every QP's WQEs came from rings, on both daemons
	local a b
	a=$(dev ctl ring_wqes) b=$(dev ctlb ring_wqes)
	echo "    WQEs taken from rings: A $a, B $b"
	[ "$a" -ge $((NQP * 2)) ] && [ "$b" -ge $((NQP * 2)) ]
}
# One past the VM's ring_max_qp: the CREATE that does not fit is refused
# (qp_scale says which), the daemons go on.
one_too_many() {
	! scale $((NQP + 1)) 1 && grep -q "QP $NQP: vrdma_create_qp: Cannot allocate memory" \
		"$TMP/scale.$NTEST.out"
}

check "$NQP QP pairs, 2 SENDs each, every byte and QP checked" scale "$NQP" 2
check "both daemons took every WQE from rings (stats: ring_wqes)" both_rings
check "one QP past ring_max_qp $NQP: NOMEM" one_too_many
check "the daemons still serve: 64 QP pairs, 4 SENDs each" scale 64 4
check "$((NQP / 4)) QP pairs, each with a CQ of its own (ring CQs past v1's 4)" \
	scale --cq-per-qp $((NQP / 4)) 2
check "no sanitizer report from either daemon" eval '! grep -q "Sanitizer\|runtime error" "$DLOG" "$DLOG_B"'
summary
