#!/bin/bash
# shellcheck disable=SC2034,SC2054  # guest.sh's knobs are set for it; QEMU's options have commas
# A real VM uses vrdmad: the Debian 13 guest (guest/image.sh) with our QEMU
# device, virtio_rdma.ko and the rdma-core provider runs unmodified
# rdma-core programs against Linux Soft-RoCE in the Debian 12 guest of the
# interop suite.
#
#   netns vrA-ID                                netns vrC-ID
#   +-------------------------------------+     +----------------------------+
#   | br0 -- vA-ID (vrdmad's port, XDP)   |<--->| vA-IDp -- br0 -- tap vr... |
#   |  |                                  |     +---------------------|------+
#   | tap vv... (the VM's virtio-net)     |                           |
#   | vrdmad (ASan): [vm alpha]           |      QEMU/TCG: Debian 12, rxe0 on
#   |   gid 10.208.0.11, mac of the VM    |      eth0 10.208.0.20
#   +--|---------------|------------------+
#      | vhost-user    | tap
#   QEMU/TCG: Debian 13, vhost-user-rdma-pci + virtio-net, eth0 10.208.0.11,
#   virtio_rdma.ko: vrdma0 on eth0, the vrdma provider
#
# Frames for 10.208.0.11 reach vA-ID: XDP takes RoCE (UDP 4791) into vrdmad
# and passes the rest (ARP, the tools' TCP) to br0 and the VM. vrdmad sends
# the VM's RoCE frames with the VM's MAC.
#
# Environment: VRDMAD, VRDMACTL, BPF_OBJ (the Makefile's ASan build),
# VRDMA_QEMU_DIR (guest/qemu/build.sh's output). Needs root. Exit 77 (SKIP)
# only when QEMU cannot run here.
set -e
source "$(dirname "$0")/lib.sh"

VM=10.208.0.11
RXE=10.208.0.20
VMMAC=52:54:00:d0:00:0b
SOCK=$TMP/alpha.sock
TAPV=vv$ID
TAPR=vr$ID
trap 'guest_use vm && guest_stop; guest_use rxe && guest_stop; cleanup' EXIT

check_failed() {
	echo "    --- vrdmad's log (last 15 lines)"
	grep -v 'vhost-user [A-Z_]*$' "$DLOG" | tail -n 15 | sed 's/^/    | /'
}

# Both images first (cached after the first run).
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

CONF=$(write_conf "" "[vm alpha]
gid = $VM
mac = $VMMAC
socket = $SOCK
max_cq = 8
max_qp = 8" vm.conf)
start_daemon "$CONF"

echo "vm: booting the Soft-RoCE guest"
guest_use rxe
GUEST_IMAGE=$RXE_IMAGE
guest_tap "$NSC" "$TAPR" br0
guest_boot "$NSC" "$TAPR" "$RXE/24"
echo "vm: rxe guest up in $GUEST_BOOT_SECS s"
guest_save rxe

echo "vm: booting the vrdma guest"
guest_use vm
GUEST_IMAGE=$VM_IMAGE
GUEST_MAC=$VMMAC
GUEST_MACHINE=q35,memory-backend=mem
GUEST_MEM=512
GUEST_RDMA=vrdma
GUEST_QEMU_EXTRA=(-object memory-backend-memfd,id=mem,size=512M,share=on
	-chardev "socket,id=vrdma0,path=$SOCK,reconnect=1"
	-device vhost-user-rdma-pci,id=vrdma0,chardev=vrdma0)
guest_tap "$NSA" "$TAPV" br0
boots() { guest_boot "$NSA" "$TAPV" "$VM/24"; }
check "the VM boots; virtio_rdma registers vrdma0" boots
guest_save vm
[ -n "$GUEST_PID" ] || { summary verbs; exit 1; }
echo "vm: VM up in $GUEST_BOOT_SECS s"

link_active() {
	local out
	out=$(guest_run 20 rdma link show vrdma0/1)
	echo "    $out"
	echo "$out" | grep -q 'state ACTIVE physical_state LINK_UP netdev eth0'
}
check "rdma link: vrdma0/1 ACTIVE on eth0" link_active

gids_ok() {
	local out
	out=$(guest_run 20 'cat /sys/class/infiniband/vrdma0/ports/1/gids/0 /sys/class/infiniband/vrdma0/ports/1/gids/1')
	echo "$out" | sed 's/^/    /'
	[ "$(echo "$out" | sed -n 1p)" = fe80:0000:0000:0000:5054:00ff:fed0:000b ] &&
		[ "$(echo "$out" | sed -n 2p)" = 0000:0000:0000:0000:0000:ffff:0ad0:000b ]
}
check "GID 0 is the MAC's link-local, GID 1 the VM's address" gids_ok

devinfo_ok() {
	local out
	out=$(guest_run 20 'ibv_devices; ibv_devinfo -d vrdma0 -v') || { echo "$out" | sed 's/^/    /'; return 1; }
	echo "$out" | grep -E 'vrdma0|state:|GID\[ *1\]' | sed 's/^/    /'
	# the node GUID: the EUI-64 of the VM's MAC
	echo "$out" | grep -Eq '^\s+vrdma0\s+505400fffed0000b$' &&
		echo "$out" | grep -q 'state:.*PORT_ACTIVE' &&
		echo "$out" | grep -q 'GID\[  1\]:.*::ffff:10.208.0.11, RoCE v2'
}
check "ibv_devices, ibv_devinfo (unmodified) see vrdma0" devinfo_ok

# run_pair WHO SERVER... -- CLIENT...: WHO serves (vm or rxe), the other
# connects to it; both must exit 0.
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
		echo "    -- server ($who):"; tail -15 "$TMP/server.out" | sed 's/^/    /'
		echo "    -- client:"; tail -15 "$TMP/client.out" | sed 's/^/    /'
	fi
	return $rc
}

pingpong() {	# TYPE SIZE ITERS WHO-SERVES
	local t=$1 s=$2 n=$3 who=$4 dev_s dev_c
	if [ "$who" = vm ]; then dev_s=vrdma0; dev_c=rxe0; else dev_s=rxe0; dev_c=vrdma0; fi
	run_pair "$who" "ibv_${t}_pingpong" -d "$dev_s" -g 1 -s "$s" -n "$n" -c -- \
		"ibv_${t}_pingpong" -d "$dev_c" -g 1 -s "$s" -n "$n" -c && pp_lines
}

# sizes across the path MTU (1024 on these 1500-byte links); UD messages
# fit in one
for t in rc uc; do
	for who in vm rxe; do
		check "ibv_${t}_pingpong VM <-> Soft-RoCE, 4 KiB, $who serves" pingpong "$t" 4096 100 "$who"
	done
done
check "ibv_rc_pingpong VM <-> Soft-RoCE, 64 KiB, vm serves" pingpong rc 65536 30 vm
for who in vm rxe; do
	check "ibv_ud_pingpong VM <-> Soft-RoCE, 1 KiB, $who serves" pingpong ud 1024 100 "$who"
done

no_sanitizer_report() { ! grep -q "Sanitizer\|runtime error" "$1"; }
guest_use vm
guest_stop
guest_use rxe
guest_stop
clean_exit() {
	local rc=0
	sleep 0.5
	kill -TERM "$DPID"
	wait "$DPID" || rc=$?
	no_sanitizer_report "$DLOG" && [ $rc = 0 ]
}
check "vrdmad exits 0 after the VM is gone, no sanitizer report" clean_exit
DAEMON_PIDS=()

summary verbs
