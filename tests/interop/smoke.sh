#!/bin/bash
# Smoke test of the interop guest harness (guest-image.sh, guest.sh): boot the
# Soft-RoCE guest on a tap in a fresh network namespace, check the network,
# rxe0, the command channel, and verbs traffic inside the guest.
#
#   netns vrS-ID (host side)                   QEMU/TCG guest (Debian, rdma_rxe)
#   +---------------------------+              +------------------------------+
#   | tap vgID  10.210.0.1/24   |--virtio-net--| eth0 10.210.0.2/24           |
#   |                           |              |  rxe0 port 1, GID 1 = ::ffff:|
#   |                           |              |  10.210.0.2 (RoCEv2)         |
#   +---------------------------+              +------------------------------+
#   /tmp/vrdma-guest.*/share  <----- virtio-9p ----->  /mnt/host (cmd/ out/ files/)
#
# The verbs checks run server and client both in the guest (rxe loopback over
# its own IP). Needs root and qemu-system-x86; the first run builds the guest
# image (~2.5 min, cached in ${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}).
# Exit 77 (SKIP) when QEMU cannot run here.
set -e
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/guest.sh"
. "$HERE/../checks.sh"
guest_require

ID=$(printf '%04x' $(( ($$ ^ RANDOM) & 0xffff )))
NS=vrS-$ID
TAP=vg$ID
HOST_IP=10.210.0.1
GUEST_CIDR=10.210.0.2/24
TMPD=$(mktemp -d /tmp/vrdma-smoke.XXXXXX)

cleanup() {
	guest_stop
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$TMPD"
}
trap cleanup EXIT


T0=$SECONDS
guest_image
echo "smoke: image $GUEST_IMAGE ($((SECONDS - T0)) s)"

ip netns add "$NS"
ip -n "$NS" link set lo up
guest_tap "$NS" "$TAP"
ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP"

booted() { guest_boot "$NS" "$TAP" "$GUEST_CIDR" "$HOST_IP"; }
check "guest boots, rxe0 ACTIVE" booted
[ -n "$GUEST_PID" ] || { summary smoke; exit 1; }
echo "smoke: guest up in $GUEST_BOOT_SECS s (console: $GUEST_CONSOLE)"

host_ping() { ip netns exec "$NS" ping -c 2 -i 0.3 -W 2 "$GUEST_IP" > /dev/null; }
check "host pings guest $GUEST_IP" host_ping

guest_ping() { guest_run 15 ping -c 2 -i 0.3 -W 2 "$HOST_IP" > /dev/null; }
check "guest pings host $HOST_IP" guest_ping

mac_ok() { ip -n "$NS" neigh show "$GUEST_IP" | grep -qi "lladdr $GUEST_MAC"; }
check "guest answers with GUEST_MAC $GUEST_MAC" mac_ok

status_ok() {
	local rc=0
	guest_run 10 'echo "out $(hostname)"; echo err >&2; exit 3' > "$TMPD/status.out" || rc=$?
	[ "$rc" = 3 ] && [ "$(cat "$TMPD/status.out")" = "out vrdma-guest
err" ] && cmp -s "$GUEST_OUT" "$TMPD/status.out"
}
check "command status and output come back" status_ok

argv_ok() { [ "$(guest_run 10 printf '<%s>' 'a b' '$x' "it's")" = "<a b><\$x><it's>" ]; }
check "several arguments arrive as argv" argv_ok

timeout_ok() {
	local rc=0 t=$SECONDS
	guest_run 2 sleep 30 || rc=$?
	[ "$rc" = 124 ] && [ $((SECONDS - t)) -lt 10 ]
}
check "guest command timeout ends it (status 124)" timeout_ok

files_ok() {
	echo 'echo from-host-script' > "$GUEST_FILES/s.sh"
	guest_run 10 'bash s.sh > result.txt' && [ "$(cat "$GUEST_FILES/result.txt")" = from-host-script ]
}
check "scripts and results through GUEST_FILES" files_ok

devinfo_ok() { guest_run 15 ibv_devinfo -d rxe0 | grep -q 'state:[[:space:]]*PORT_ACTIVE'; }
check "ibv_devinfo -d rxe0: PORT_ACTIVE" devinfo_ok

gid_ok() { guest_run 15 ibv_devinfo -d rxe0 -v | grep -q "GID\[  1\]:[[:space:]]*::ffff:$GUEST_IP"; }
check "GID index 1 is ::ffff:$GUEST_IP" gid_ok

pingpong_ok() {
	local rc=0 out
	guest_start pp-srv 40 ibv_rc_pingpong -d rxe0 -g 1 -n 200
	guest_listening 18515 || rc=1
	out=$(guest_run 40 ibv_rc_pingpong -d rxe0 -g 1 -n 200 "$GUEST_IP") || rc=1
	guest_wait pp-srv > /dev/null || rc=1
	grep -q '200 iters' <<< "$out" || rc=1
	[ $rc = 0 ] || echo "$out" | tail -n 5
	return $rc
}
check "ibv_rc_pingpong -g 1 server+client in the guest" pingpong_ok

write_bw_ok() {
	local rc=0 out
	guest_start bw-srv 60 ib_write_bw -d rxe0 -x 1 -F -p 18600 -s 65536 -n 200
	guest_listening 18600 || rc=1
	out=$(guest_run 60 ib_write_bw -d rxe0 -x 1 -F -p 18600 -s 65536 -n 200 --report_gbits "$GUEST_IP") || rc=1
	guest_wait bw-srv > /dev/null || rc=1
	grep -Eq '^ *65536 +200 ' <<< "$out" || rc=1
	BW=$(echo "$out" | awk '$1 == 65536 { print $4 }')
	[ $rc = 0 ] || echo "$out" | tail -n 5
	return $rc
}
check "ib_write_bw -x 1 server+client in the guest" write_bw_ok
[ -z "${BW:-}" ] || echo "smoke: ib_write_bw in the guest: $BW Gb/s (64 KiB writes, rxe loopback, TCG)"

echo "smoke: $((SECONDS - T0)) s in all"
summary smoke
