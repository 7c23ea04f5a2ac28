#!/bin/bash
# PID 1 of the test guests (installed as /sbin/vrdma-init by guest-image.sh,
# the bookworm Soft-RoCE image, and guest/image.sh, the trixie image with
# virtio_rdma; no systemd). It brings up eth0 and the RDMA device that
# vrdma.rdma= names, then serves a command queue on the 9p share mounted at
# /mnt/host:
#
#   cmd/NAME.sh   written by the host (atomically, by rename); first line
#                 "# timeout=SECONDS". Picked up, moved to run/NAME.sh and run
#                 in the background with bash under `timeout`, cwd /mnt/host/files,
#                 stdin /dev/null.
#   out/NAME.out  its stdout+stderr (written through 9p as it runs)
#   out/NAME.rc   its exit status, written last (via rename) when it ends
#   ready         written once the RDMA device is up (a few facts about the guest)
#   failed        written instead if bring-up failed (the reason)
#   poweroff      created by the host: the guest kills its jobs and powers off
#
# Kernel command line parameters (set by guest.sh):
#   vrdma.ip=CIDR  vrdma.gw=ADDR  vrdma.share=9P_TAG
#   vrdma.rdma=rxe    (default) Soft-RoCE rxe0 on eth0; ready once it is ACTIVE
#   vrdma.rdma=vrdma  load virtio_rdma (the guest driver of vrdmad's device);
#                     ready once `rdma link` lists vrdma0 (within 20 s)
#   vrdma.rdma=none   no RDMA set-up; ready once eth0 is up
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8
umask 022

log() { echo "vrdma-init: $*"; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
hostname vrdma-guest
ulimit -l unlimited	# verbs memory registration
echo 1 > /proc/sys/kernel/sysrq

IP='' GW='' TAG=vrdma RDMA=rxe
read -r -a args < /proc/cmdline
for arg in "${args[@]}"; do
	case $arg in
	vrdma.ip=*) IP=${arg#*=} ;;
	vrdma.gw=*) GW=${arg#*=} ;;
	vrdma.share=*) TAG=${arg#*=} ;;
	vrdma.rdma=*) RDMA=${arg#*=} ;;
	esac
done

die_off() {
	echo o > /proc/sysrq-trigger
	sleep 5
	exit 1	# PID 1 exiting panics; with panic=-1 and -no-reboot QEMU quits
}

H=/mnt/host
mkdir -p $H
modprobe -a 9pnet_virtio 9p virtio_net virtio_rng 2>&1
if ! mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 "$TAG" $H; then
	log "cannot mount the 9p share '$TAG'"
	die_off
fi
mkdir -p $H/cmd $H/run $H/out $H/files

fail() {
	log "FAILED: $*"
	echo "$*" > $H/failed
	die_off
}

ip link set lo up
[ -n "$IP" ] || fail "no vrdma.ip= on the kernel command line"
ip link set eth0 up || fail "no eth0"
ip addr add "$IP" dev eth0 || fail "cannot set $IP on eth0"
[ -z "$GW" ] || ip route add default via "$GW" || fail "cannot add route via $GW"

# wait_link DEV STATE-REGEX: up to 20 s until `rdma link show` has a line
# for DEV matching the regex.
wait_link() {
	for _ in $(seq 200); do
		rdma link show 2>/dev/null | grep -Eq "^link $1/[0-9]+ $2" && return 0
		sleep 0.1
	done
	return 1
}
case $RDMA in
rxe)
	DEV=rxe0
	modprobe -a ib_uverbs rdma_ucm rdma_rxe 2>&1 || fail "modprobe rdma_rxe failed"
	rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 failed"
	wait_link rxe0 'state ACTIVE' || fail "rxe0 did not become ACTIVE: $(rdma link show 2>&1)"
	log "rxe0 ACTIVE"
	;;
vrdma)
	# As a first step any port state will do: the driver registers vrdma0.
	DEV=vrdma0
	out=$(modprobe -a ib_uverbs rdma_ucm virtio_rdma 2>&1) ||
		fail "modprobe virtio_rdma failed: $out; dmesg: $(dmesg | tail -n 30)"
	wait_link vrdma0 '' ||
		fail "vrdma0 not in 'rdma link show' after 20 s: $(rdma link show 2>&1); dmesg: $(dmesg | tail -n 30)"
	log "vrdma0 registered"
	;;
none) DEV= ;;
*) fail "unknown vrdma.rdma=$RDMA (rxe, vrdma or none)" ;;
esac
{
	echo "ip=$IP"
	echo "mac=$(cat /sys/class/net/eth0/address)"
	echo "kernel=$(uname -r)"
	echo "rdma=$RDMA"
	[ -z "$DEV" ] || rdma link show "$DEV/1"
} > $H/ready.tmp
mv $H/ready.tmp $H/ready

# Serve the command queue. `read -t` on a FIFO opened read-write is a
# fork-free sleep (this runs under TCG, every fork counts).
mkfifo /run/tick
exec 9<>/run/tick
shopt -s nullglob
cd $H/files || fail "no $H/files"
while :; do
	for f in $H/cmd/*.sh; do
		n=${f##*/}
		n=${n%.sh}
		mv "$f" $H/run/"$n".sh || continue
		t=
		read -r t < $H/run/"$n".sh
		t=${t#\# timeout=}
		case $t in '' | *[!0-9.]*) t=60 ;; esac
		log "run $n (timeout $t s)"
		(
			timeout -k 3 "$t" bash $H/run/"$n".sh < /dev/null > $H/out/"$n".out 2>&1
			echo $? > $H/out/"$n".rc.tmp
			mv $H/out/"$n".rc.tmp $H/out/"$n".rc
		) &
	done
	if [ -e $H/poweroff ]; then
		log "powering off"
		kill -TERM -1 2>/dev/null
		sleep 0.5
		kill -KILL -1 2>/dev/null
		cd /
		umount $H 2>/dev/null
		sync
		die_off
	fi
	read -r -t 0.2 -u 9 _
done
