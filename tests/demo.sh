#!/bin/bash
# `make demo`: vrdmad on one end of a veth pair, shown at work.
#
#   netns vrA-ID                                   netns vrB-ID
#   +----------------------------------+           +---------------------+
#   | vrdmad, XDP + AF_XDP on vA-ID    |           |                     |
#   |   vm web1: GID 10.210.0.1        |<--veth--->| vB-ID 10.210.0.2    |
#   |   vm db1:  GID fd00:d2::1        |           |       fd00:d2::2    |
#   +----------------------------------+           +---------------------+
#
# What it shows today: RoCEv2 (UDP 4791) to the VMs' GIDs is taken by vrdmad
# and counted per VM while ping and the rest of the host's traffic carry on.
# Everything is torn down at the end, and on Ctrl-C.
set -e
source "$(dirname "$0")/lib.sh"
trap 'echo; echo "interrupted: cleaning up"; exit 130' INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "two network namespaces joined by a veth pair ($NSA, $NSB)"
setup_pair "10.210.0.1/24 fd00:d2::1/64" "10.210.0.2/24 fd00:d2::2/64"
CONF=$(write_conf "" "[vm web1]
gid = 10.210.0.1
socket = $TMP/web1.sock
[vm db1]
gid = fd00:d2::1
socket = $TMP/db1.sock" vrdmad.conf)
sed -i 's/^log_level = debug/log_level = info/' "$CONF"
cat "$CONF"

step "start vrdmad in $NSA"
start_daemon "$CONF"
cat "$DLOG"
ctl status

step "ping from $NSB to the VM's address still works"
ip netns exec "$NSB" ping -c 3 -i 0.2 10.210.0.1 | tail -2

step "send 1000 RoCEv2 datagrams to web1 and 500 to db1 from $NSB"
udp() { ip netns exec "$NSB" "$PY" "$HERE/integration/udp.py" "$@"; }
udp send 10.210.0.1 4791 1000 256
udp send fd00:d2::1 4791 500 1024
sleep 0.5
ctl stats

step "stop vrdmad (SIGTERM)"
stop_daemon
echo "exit code $RC after $MS ms"
if ip -n "$NSA" link show "$IFA" | grep -q prog/xdp; then
	echo "XDP program still attached!"
	exit 1
fi
echo "no XDP program left on $IFA; namespaces are removed on exit"
