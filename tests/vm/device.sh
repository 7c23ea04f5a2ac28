#!/bin/bash
# shellcheck disable=SC2034,SC2054  # guest.sh's knobs are set for it; QEMU's options have commas
# The QEMU device vhost-user-rdma-pci (guest/qemu/) against vrdmad: a Debian
# guest under QEMU/TCG gets a virtio-rdma device on a VM socket of vrdmad.
#
#   netns vrA-ID                      QEMU/TCG guest (the Soft-RoCE image of tests/interop)
#   +------------------------+        +------------------------------------+
#   | veth vAID (vrdmad port)|        | virtio device 1af4:106a (ID 42)    |
#   | vrdmad (ASan)          |        |   no driver yet: the guest only    |
#   |   [vm alpha] socket  <-+--------+-- sees it on the PCI bus           |
#   +------------------------+ vhost- | RAM: memory-backend-memfd,share=on |
#                              user   +------------------------------------+
#
# Checks: QEMU refuses the device when guest RAM is not shared, or when
# num-queues disagrees with vrdmad, with a clear message; the guest boots
# with it and sees PCI 1af4:106a; vrdmad logs the vhost-user connection;
# QEMU took the queue count from the back end (HMP info virtio-status); the
# config space, read through the PCI BAR (HMP xp), is vrdmad's; after
# vrdmad restarts, -chardev reconnect=1 connects again; vrdmad exits 0 with
# no sanitizer report.
#
# Environment: VRDMAD, VRDMACTL, BPF_OBJ (the Makefile's ASan build),
# VRDMA_QEMU_DIR (guest/qemu/build.sh's output). Needs root. Exit 77 (SKIP)
# only when QEMU cannot run here.
set -e
source "$(dirname "$0")/lib.sh"

MAX_CQ=8
MAX_QP=12
NUM_QUEUES=$((1 + MAX_CQ + 2 * MAX_QP))
SOCK=$TMP/alpha.sock
MON=$TMP/monitor.sock
TAP=vg$ID
trap 'guest_stop; cleanup' EXIT

check_failed() {
	echo "    --- vrdmad's log (last 15 lines)"
	tail -n 15 "$DLOG" | sed 's/^/    | /'
}

guest_image
ip netns add "$NSA"
ip netns add "$NSB"
ip link add "$IFA" netns "$NSA" type veth peer name "$IFB" netns "$NSB"
pair_addresses "10.209.0.1/24" "10.209.0.2/24"
guest_tap "$NSB" "$TAP"

CONF=$(write_conf "" "[vm alpha]
gid = 10.209.0.11
socket = $SOCK
max_cq = $MAX_CQ
max_qp = $MAX_QP" vm.conf)
start_daemon "$CONF"

connections() { grep -c 'vm alpha: vhost-user front-end connected' "$1" || true; }

# refused MESSAGE DEVICE-OPTIONS MEMORY-ARGS...: QEMU with the device and
# this memory must exit at once with the device's MESSAGE (a regex).
refused() {
	local rc=0 msg=$1 opts=$2
	shift 2
	timeout 60 "$GUEST_QEMU" -accel tcg -nodefaults -no-user-config -display none \
		-monitor none -serial none "$@" \
		-chardev "socket,id=vrdma0,path=$SOCK" -device "vhost-user-rdma-pci,chardev=vrdma0$opts" \
		> "$TMP/refused.log" 2>&1 || rc=$?
	sed 's/^/    | /' "$TMP/refused.log"
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -Eq "$msg" "$TMP/refused.log"
}
NOT_SHARED="is not shared with the back end.*share=on"
SHARED=(-object memory-backend-memfd,id=mem,size=512M,share=on -machine q35,memory-backend=mem)
check "QEMU refuses the device on anonymous RAM (-m 512)" refused "$NOT_SHARED" "" -machine q35 -m 512
check "QEMU refuses it on a private memfd (share=off)" refused "$NOT_SHARED" "" \
	-object memory-backend-memfd,id=mem,size=512M,share=off -machine q35,memory-backend=mem
check "QEMU refuses num-queues=$((NUM_QUEUES + 2)): vrdmad has $NUM_QUEUES" refused \
	"num-queues=$((NUM_QUEUES + 2)) but the back end has $NUM_QUEUES queues \\(max_cq $MAX_CQ, max_qp $MAX_QP\\)" \
	",num-queues=$((NUM_QUEUES + 2))" "${SHARED[@]}"

GUEST_MACHINE=q35,memory-backend=mem
GUEST_MEM=512
GUEST_QEMU_EXTRA=(-object memory-backend-memfd,id=mem,size=512M,share=on
	-chardev "socket,id=vrdma0,path=$SOCK,reconnect=1"
	-device vhost-user-rdma-pci,id=vrdma0,chardev=vrdma0
	-chardev "socket,id=mon0,path=$MON,server=on,wait=off" -mon chardev=mon0,mode=readline)
# (the refused QEMUs connected too: their chardev opens before the device)
BEFORE=$(connections "$DLOG")
echo "vm: booting the guest with vhost-user-rdma-pci ($GUEST_QEMU)"
boots() { guest_boot "$NSB" "$TAP" 10.209.0.20/24; }
check "the guest boots with the device on vrdmad's socket" boots
[ -n "$GUEST_PID" ] || { summary vm; exit 1; }
echo "vm: guest up in $GUEST_BOOT_SECS s"

connected_once() { [ "$(connections "$DLOG")" = $((BEFORE + 1)) ]; }
check "vrdmad logs one vhost-user connection" connected_once

pci_ok() {
	local out
	# shellcheck disable=SC2016  # the guest's shell expands it
	out=$(guest_run 20 'for d in /sys/bus/pci/devices/*; do
		echo "${d##*/} $(cat "$d/vendor") $(cat "$d/device") $(cat "$d/revision") $(cat "$d/class")" \
			"$(sed -n 5p "$d/resource")"; done')
	echo "$out" | grep -i ' 0x1af4 0x106a ' | sed 's/^/    guest: /'
	echo "$out" | grep -qi ' 0x1af4 0x106a 0x01 0x028000 ' || return 1
	# BAR 4: virtio-pci's modern regions; the device config at 0x2000
	BAR4=$(echo "$out" | awk 'tolower($0) ~ / 0x1af4 0x106a / { print $6 }')
	[ -n "$BAR4" ]
}
check "the guest sees PCI 1af4:106a rev 1, class 0280 (virtio ID 42)" pci_ok

# hmp CMD: one human-monitor command, its output.
hmp() {
	"$PY" - "$MON" "$1" << 'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
def upto_prompt():
    buf = b""
    while not buf.endswith(b"(qemu) "):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf.decode(errors="replace")
upto_prompt()
s.sendall(sys.argv[2].encode() + b"\n")
out = upto_prompt().replace("\r", "")
print("\n".join(out.split("\n")[1:-1]))
EOF
}
queues_ok() {
	local out
	out=$(hmp "info virtio-status /machine/peripheral/vrdma0/virtio-backend")
	echo "$out" | grep -E 'device_name|device_id|num_vqs' | sed 's/^/    /'
	echo "$out" | grep -Eq "device_id: +42$" && echo "$out" | grep -Eq "num_vqs: +$NUM_QUEUES$"
}
check "the device has 1 + max_cq + 2 * max_qp = $NUM_QUEUES queues, from vrdmad" queues_ok

# The guest's reads of the config space, as a driver would do them (HMP xp
# reads guest-physical memory, here the device's config region): each goes
# to vrdmad with GET_CONFIG. max_qp @48, max_cq @76, GID 0 @144 (RFC
# layout, docs/virtio-rdma.md section 3), the last word @652.
config_ok() {
	local base out
	base=$((BAR4 + 0x2000))
	out=$(hmp "xp /1wd $((base + 48))"; hmp "xp /1wd $((base + 76))"; hmp "xp /16bx $((base + 144))";
		hmp "xp /1wx $((base + 652))")
	echo "$out" | sed 's/^/    /'
	echo "$out" | sed -n 1p | grep -Eq ": +$MAX_QP\\b" &&
		echo "$out" | sed -n 2p | grep -Eq ": +$MAX_CQ\\b" &&
		echo "$out" | grep -Eqi "0xff 0xff 0x0a 0xd1 0x00 0x0b" &&
		echo "$out" | tail -n 1 | grep -Eq ": 0x00000000"
}
check "config space via the PCI BAR: max_qp, max_cq, GID 0 of vrdmad" config_ok

# backend @416, the device's own field (QEMU's sixth patch): the number of
# the back end's connection, never 0 while one is there; vrdmad serves 0
backend_is() {
	local out
	out=$(hmp "xp /1wx $((BAR4 + 0x2000 + 416))")
	echo "    backend: $out"
	echo "$out" | grep -Eq ": $1"
}
check "config backend (offset 416) is 1: the first connection" backend_is 0x00000001

# stop_daemon: SIGTERM, and its exit status (ASan reports leaks at exit).
stop_daemon() {
	local rc=0
	kill -TERM "$DPID"
	wait "$DPID" || rc=$?
	return $rc
}
no_sanitizer_report() { ! grep -q "Sanitizer\|runtime error" "$1"; }

reconnects() {
	local first=$DLOG
	stop_daemon || { echo "    vrdmad exited $?"; return 1; }
	no_sanitizer_report "$first" || return 1
	mv "$first" "$TMP/vrdmad.first.log"
	start_daemon "$CONF"
	for _ in $(seq 100); do
		[ "$(connections "$DLOG")" = 0 ] || break
		sleep 0.1
	done
	[ "$(connections "$DLOG")" = 1 ] && kill -0 "$GUEST_PID" &&
		guest_run 10 true
}
check "after vrdmad restarts, QEMU (reconnect=1) connects again" reconnects
check "config backend is 2 now: the guest can tell a back end is there again" backend_is 0x00000002

guest_stop
clean_exit() {
	local rc=0
	sleep 0.5
	stop_daemon || rc=$?
	no_sanitizer_report "$DLOG" && [ $rc = 0 ] && grep -q 'vhost-user connection closed' "$DLOG"
}
check "vrdmad sees QEMU go, exits 0, no sanitizer report" clean_exit
DAEMON_PIDS=()

summary device
