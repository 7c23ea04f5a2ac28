#!/bin/bash
# `make bench`: vrdmad's resident memory with 1, 64 and 1024 QPs open on one
# VM (through libvrdma). A benchmark: it reports, and fails only if something
# broke. Target: <= 8 KiB of private memory per QP beyond the fixed UMEM and
# rings.
#
#   netns vrA-ID                                 netns vrB-ID
#   +----------------------------------------+   +-----------+
#   | vrdmad on vA-ID, vm mem (max_qp 1024)  |<->| vB-ID     |
#   |   ^ qp_mem (libvrdma) on mem.sock      |   +-----------+
#   +----------------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"
: "${QP_MEM:?set QP_MEM to the qp_mem binary}"

setup_pair "10.221.0.1/24" "10.221.0.2/24"
CONF=$(write_conf "" "[vm mem]
gid = 10.221.0.11
socket = $TMP/mem.sock
max_cq = 4
max_qp = 1024" qp_mem.conf)
sed -i 's/^log_level = debug$/log_level = info/' "$CONF"
start_daemon "$CONF"
echo "== memory per QP (vrdmad pid $DPID)"
"$QP_MEM" "$TMP/mem.sock" "$DPID"
stop_daemon
[ "$RC" = 0 ]
