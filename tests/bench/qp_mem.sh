#!/bin/bash
# `make bench`: vrdmad's resident memory with 1, 64 and 1024 QPs open
# (through libvrdma, on nine VMs of 127 QPs: a device has at most 256 queues),
# then with 1 to 4096 on one VM on rings (ABI v2, VRDMA_RINGS=1). A benchmark: it reports, and fails only if something
# broke. Target: <= 8 KiB of private memory per QP beyond the fixed UMEM and
# rings.
#
#   netns vrA-ID                                 netns vrB-ID
#   +----------------------------------------+   +-----------+
#   | vrdmad on vA-ID, vms m0..m8 (127 QPs)  |<->| vB-ID     |
#   |   ^ qp_mem (libvrdma) on m0..m8.sock   |   +-----------+
#   +----------------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"
: "${QP_MEM:?set QP_MEM to the qp_mem binary}"

setup_pair "10.221.0.1/24" "10.221.0.2/24"
VMS= SOCKS=
for i in $(seq 0 8); do
	VMS+="[vm m$i]
gid = 10.221.0.$((20 + i))
socket = $TMP/m$i.sock
max_cq = 1
max_qp = 127
"
	SOCKS+=" $TMP/m$i.sock"
done
CONF=$(write_conf "" "$VMS" qp_mem.conf)
sed -i 's/^log_level = debug$/log_level = info/' "$CONF"
start_daemon "$CONF"
echo "== memory per QP (vrdmad pid $DPID)"
# shellcheck disable=SC2086
"$QP_MEM" "$DPID" $SOCKS
stop_daemon
[ "$RC" = 0 ]
# ABI v2: one VM holds them all (ring_max_qp 4096, its default), a fresh
# daemon so that no memory the first run freed is counted again
CONF=$(write_conf "" "[vm r0]
gid = 10.221.0.40
socket = $TMP/r0.sock" qp_mem_rings.conf)
sed -i 's/^log_level = debug$/log_level = info/' "$CONF"
start_daemon "$CONF"
echo "== memory per QP on rings (vrdmad pid $DPID)"
VRDMA_RINGS=1 "$QP_MEM" "$DPID" "$TMP/r0.sock"
stop_daemon
[ "$RC" = 0 ]
