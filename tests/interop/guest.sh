# shellcheck shell=bash disable=SC2034  # the GUEST_* variables are for the caller
# guest.sh: boot a Debian guest with Linux Soft-RoCE (rxe0 on eth0; or, with
# GUEST_RDMA, the virtio-rdma driver or nothing) under QEMU/TCG on a tap device
# in a network namespace, and run commands in it.
# Source it from a test script (bash, `set -e`, its own `trap cleanup EXIT`
# that calls guest_stop). One guest at a time, or several with guest_save/guest_use (below).
#
#   guest_require                  SKIP (exit 77) unless QEMU/TCG and a tap can work here
#   guest_image                    build or find the cached image ($GUEST_IMAGE_SCRIPT); sets GUEST_IMAGE
#   guest_tap NETNS TAP [BRIDGE]   create tap TAP in NETNS, up (optionally on BRIDGE in NETNS);
#                                  guest_boot does it if TAP does not exist yet
#   guest_boot NETNS TAP GUEST_CIDR [GATEWAY]
#                                  start QEMU on TAP and return once the guest is ready (its
#                                  RDMA device up as GUEST_RDMA says: rxe0 ACTIVE by default)
#                                  (fails with the console tail after $GUEST_BOOT_TIMEOUT s)
#   guest_run TIMEOUT CMD...       run CMD in the guest under `timeout TIMEOUT`, print its
#                                  stdout+stderr, return its exit status (124: timed out).
#                                  One argument is a shell command line; several are argv.
#                                  The output stays in $GUEST_OUT (a host file).
#   guest_start NAME TIMEOUT CMD...  the same, in the background (e.g. a server)
#   guest_wait NAME                wait for it: print its output, return its status
#   guest_listening PORT [SECS]    wait until a TCP server listens on PORT in the guest
#   guest_output NAME              path of NAME's output file (growing while it runs)
#   guest_stop                     power the guest off (kill QEMU), remove the tap and temp files
#
# After guest_boot: GUEST_IP, GUEST_CIDR, GUEST_MAC, GUEST_NETNS, GUEST_TAP, GUEST_PID,
# GUEST_CONSOLE (serial log), GUEST_FILES (host directory the guest sees as its working
# directory /mnt/host/files: put scripts there, read results from there), GUEST_BOOT_SECS.
# Knobs: GUEST_MAC (default 52:54:00 + the guest IP's last 3 bytes), GUEST_MEM (MiB, 768),
# GUEST_SMP (1), GUEST_BOOT_TIMEOUT (120), GUEST_APPEND (more kernel parameters), VRDMA_GUEST_CACHE (image cache dir),
# GUEST_QEMU (the QEMU binary), GUEST_MACHINE (pc), GUEST_QEMU_EXTRA (an array of more QEMU arguments),
# GUEST_IMAGE_SCRIPT (what builds the image: tests/interop/guest-image.sh, bookworm with
# Soft-RoCE, by default; guest/image.sh for Debian 13 with virtio_rdma and the vrdma provider),
# GUEST_RDMA (rxe, vrdma or none: the guest init's vrdma.rdma=, see guest-init.sh; default rxe),
# GUEST_NIC_OPTS (virtio-net-pci options; default: offloads off, so frames on the tap carry
# full checksums), KEEP_TMP or GUEST_KEEP (keep the temp dir and console log).
#
# In the guest: rdma-core, perftest, rdmacm-utils; device rxe0, port 1, use GID index 1
# (IPv4-mapped); or vrdma0 (GUEST_RDMA=vrdma). rxe treats retry_cnt 7 as infinite: always
# give commands a timeout.

GUEST_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${GUEST_MEM:=768}"
: "${GUEST_SMP:=1}"
: "${GUEST_BOOT_TIMEOUT:=120}"
: "${GUEST_NIC_OPTS:=csum=off,gso=off,guest_csum=off,guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off,host_tso4=off,host_tso6=off,host_ecn=off,host_ufo=off}"
GUEST_QEMU=${GUEST_QEMU:-qemu-system-x86_64}
: "${GUEST_MACHINE:=pc}"
: "${GUEST_IMAGE_SCRIPT:=$GUEST_LIB_DIR/guest-image.sh}"
: "${GUEST_RDMA:=rxe}"
[ -n "${GUEST_QEMU_EXTRA+set}" ] || GUEST_QEMU_EXTRA=()
GUEST_PID=
GUEST_DIR=
GUEST_SHARE=
GUEST_TAP_MADE=
GUEST_SEQ=0
declare -A GUEST_TIMEOUTS=()

_guest_say() { echo "guest: $*" >&2; }

# guest_require: exit 77 with "SKIP: why" when the guest cannot run here.
guest_require() {
	local why=
	if [ "$(id -u)" != 0 ]; then
		why="needs root (network namespaces, tap devices)"
	elif ! command -v "$GUEST_QEMU" > /dev/null 2>&1; then
		why="$GUEST_QEMU not found (apt-get install qemu-system-x86)"
	elif ! command -v ip > /dev/null 2>&1; then
		why="ip not found (apt-get install iproute2)"
	elif [ ! -c /dev/net/tun ]; then
		why="no /dev/net/tun (tap devices)"
	elif ! echo quit | timeout 30 "$GUEST_QEMU" -accel tcg -machine none -nodefaults -display none \
		-monitor stdio -serial none > /dev/null 2>&1; then
		why="$GUEST_QEMU -accel tcg does not start on this machine"
	fi
	if [ -n "$why" ]; then
		echo "SKIP: ${0##*/}: $why"
		exit 77
	fi
}

# guest_image: build (once) or find the cached guest image; sets GUEST_IMAGE.
guest_image() {
	[ -n "${GUEST_IMAGE:-}" ] && [ -f "$GUEST_IMAGE/rootfs.ext4" ] && return 0
	GUEST_IMAGE=$("$GUEST_IMAGE_SCRIPT") || { _guest_say "cannot build the guest image ($GUEST_IMAGE_SCRIPT)"; return 1; }
}

# guest_tap NETNS TAP [BRIDGE]
guest_tap() {
	local ns=$1 tap=$2 br=${3:-}
	ip -n "$ns" tuntap add dev "$tap" mode tap || return 1
	GUEST_TAP_MADE="$ns $tap"
	[ -z "$br" ] || ip -n "$ns" link set "$tap" master "$br" || return 1
	ip -n "$ns" link set "$tap" up
}

# guest_boot NETNS TAP GUEST_CIDR [GATEWAY]
guest_boot() {
	guest_boot_start "$@" && guest_boot_wait
}

# guest_boot_start NETNS TAP GUEST_CIDR [GATEWAY], guest_boot_wait:
# guest_boot in two halves, so that another guest boots meanwhile (one boot
# keeps about one CPU of two busy: vm_pair_up boots its two at once).
guest_boot_start() {
	GUEST_BOOT_ARGS=("$@")
	_guest_launch "$@"
}
guest_boot_wait() {
	_guest_ready && return 0
	[ -z "$GUEST_PID" ] && _guest_tcg_race || return 1
	_guest_say "QEMU's TCG ran stale code the kernel had patched (an int3 Oops before any"
	_guest_say "module was loaded: the emulator, not the guest under test); booting once more"
	_guest_launch "${GUEST_BOOT_ARGS[@]}" && _guest_ready
}

# _guest_tcg_race: did the boot that just failed meet multi-threaded TCG's
# cross-modifying-code race? The kernel patches a static key (text_poke_bp:
# int3 first, then the rest, each step synchronized on every CPU) while a
# vCPU still runs a translation made before the int3 was removed, and the
# int3 it executes is no longer the kernel's. One in some tens of boots of 2
# vCPUs while another guest runs; always before any module is loaded.
_guest_tcg_race() {
	grep -q 'Oops: int3' "$GUEST_CONSOLE" 2>/dev/null &&
		grep -Eq 'Modules linked in:[[:space:]]*$' "$GUEST_CONSOLE" &&
		! grep -Eq 'Modules linked in: *[a-z]' "$GUEST_CONSOLE"
}

# _guest_launch NETNS TAP GUEST_CIDR [GATEWAY]: QEMU started (GUEST_PID).
_guest_launch() {
	local ns=$1 tap=$2 cidr=$3 gw=${4:-} o2 o3 o4
	[ -z "$GUEST_PID" ] || { _guest_say "a guest is already running (pid $GUEST_PID)"; return 1; }
	guest_image || return 1
	GUEST_NETNS=$ns
	GUEST_TAP=$tap
	GUEST_CIDR=$cidr
	GUEST_IP=${cidr%/*}
	if [ -z "${GUEST_MAC:-}" ]; then
		IFS=. read -r _ o2 o3 o4 <<< "$GUEST_IP"
		GUEST_MAC=$(printf '52:54:00:%02x:%02x:%02x' "$o2" "$o3" "$o4")
	fi
	GUEST_DIR=$(mktemp -d /tmp/vrdma-guest.XXXXXX)
	GUEST_SHARE=$GUEST_DIR/share
	GUEST_FILES=$GUEST_SHARE/files
	GUEST_CONSOLE=$GUEST_DIR/console.log
	mkdir -p "$GUEST_SHARE"/{cmd,run,out,files}
	chmod 755 "$GUEST_DIR"
	: > "$GUEST_CONSOLE"
	ip -n "$ns" link show "$tap" > /dev/null 2>&1 || guest_tap "$ns" "$tap" || return 1

	local append="console=ttyS0 root=/dev/vda rw net.ifnames=0 panic=-1 mitigations=off loglevel=4"
	# virtio_net's transmit completions without NAPI: with it, a 6.1 guest
	# under TCG that sends flat out (rxe answering big READs) lost its
	# transmit queue for good about once in twenty `ib_read_bw -a` (its TX
	# watchdog, rxe.sh's guest_tx_stalled); without it, none in 40.
	append+=" virtio_net.napi_tx=0"
	append+=" vrdma.ip=$cidr vrdma.share=vrdma vrdma.rdma=$GUEST_RDMA"
	[ -z "$gw" ] || append+=" vrdma.gw=$gw"
	append+=" ${GUEST_APPEND:-}"
	local kernel=$GUEST_IMAGE/vmlinux	# PVH boot, no decompression
	[ -f "$kernel" ] || kernel=$GUEST_IMAGE/vmlinuz
	# QEMU dies with the test script even when that is SIGKILLed (no trap).
	local reaper=()
	setpriv --pdeathsig KILL true 2> /dev/null && reaper=(setpriv --pdeathsig KILL)
	GUEST_BOOT_T0=$SECONDS
	"${reaper[@]}" ip netns exec "$ns" "$GUEST_QEMU" -accel tcg -machine "$GUEST_MACHINE" -cpu max \
		-m "$GUEST_MEM" -smp "$GUEST_SMP" "${GUEST_QEMU_EXTRA[@]}" \
		-nodefaults -no-user-config -display none -monitor none -no-reboot \
		-serial "file:$GUEST_CONSOLE" \
		-kernel "$kernel" -initrd "$GUEST_IMAGE/initrd.img" -append "$append" \
		-drive "file=$GUEST_IMAGE/rootfs.ext4,format=raw,if=virtio,cache=unsafe" -snapshot \
		-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,mac=$GUEST_MAC,$GUEST_NIC_OPTS" \
		-fsdev "local,id=fs0,path=$GUEST_SHARE,security_model=none" \
		-device virtio-9p-pci,fsdev=fs0,mount_tag=vrdma \
		-device virtio-rng-pci \
		< /dev/null > "$GUEST_DIR/qemu.log" 2>&1 &
	GUEST_PID=$!
	disown "$GUEST_PID" 2>/dev/null || true
}

# _guest_ready: the launched guest says it is ready (GUEST_BOOT_SECS), or it
# failed, said why, and is gone (GUEST_PID empty).
_guest_ready() {
	local why= t0=$GUEST_BOOT_T0
	while :; do
		if [ -e "$GUEST_SHARE/ready" ]; then break; fi
		if [ -e "$GUEST_SHARE/failed" ]; then why="bring-up failed: $(cat "$GUEST_SHARE/failed")"; break; fi
		if ! kill -0 "$GUEST_PID" 2>/dev/null; then why="QEMU exited: $(tail -n 5 "$GUEST_DIR/qemu.log")"; break; fi
		if [ $((SECONDS - t0)) -ge "$GUEST_BOOT_TIMEOUT" ]; then why="the guest not ready after $GUEST_BOOT_TIMEOUT s (vrdma.rdma=$GUEST_RDMA)"; break; fi
		sleep 0.2
	done
	GUEST_BOOT_SECS=$((SECONDS - t0))
	if [ -n "$why" ]; then
		_guest_say "$why"
		_guest_say "serial console ($GUEST_CONSOLE), last lines:"
		tail -n 40 "$GUEST_CONSOLE" | sed 's/^/  | /' >&2
		[ -s "$GUEST_CONSOLE" ] || _guest_say "  (empty; GUEST_APPEND=loglevel=7 shows more)"
		[ ! -s "$GUEST_DIR/qemu.log" ] || { _guest_say "QEMU said:"; sed 's/^/  | /' "$GUEST_DIR/qemu.log" >&2; }
		kill -KILL "$GUEST_PID" 2>/dev/null || true
		GUEST_PID=
		return 1
	fi
}

# _guest_submit NAME TIMEOUT CMD...
_guest_submit() {
	local name=$1 t=$2 f
	shift 2
	[[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || { _guest_say "bad command name '$name'"; return 2; }
	[[ $t =~ ^[0-9]+$ ]] || { _guest_say "bad timeout '$t' (whole seconds)"; return 2; }
	[ $# -gt 0 ] || { _guest_say "no command"; return 2; }
	if [ -z "$GUEST_PID" ] || ! kill -0 "$GUEST_PID" 2>/dev/null; then
		_guest_say "the guest is not running"
		return 2
	fi
	rm -f "$GUEST_SHARE/out/$name".{out,rc}
	f=$GUEST_SHARE/cmd/.$name.tmp
	{
		echo "# timeout=$t"
		if [ $# = 1 ]; then printf '%s\n' "$1"; else printf '%q ' "$@"; echo; fi
	} > "$f"
	mv "$f" "$GUEST_SHARE/cmd/$name.sh"
	GUEST_TIMEOUTS[$name]=$t
}

guest_output() { echo "$GUEST_SHARE/out/$1.out"; }

# guest_wait NAME: print NAME's output, return its status (124 timed out; 125 lost).
guest_wait() {
	local name=$1 t=${GUEST_TIMEOUTS[$1]:-60} rc=125 t0=$SECONDS
	local rcf=$GUEST_SHARE/out/$name.rc
	GUEST_OUT=$GUEST_SHARE/out/$name.out
	while [ ! -e "$rcf" ]; do
		if ! kill -0 "$GUEST_PID" 2>/dev/null; then _guest_say "the guest died while '$name' ran"; break; fi
		if [ $((SECONDS - t0)) -gt $((t + 15)) ]; then _guest_say "no status for '$name' after $((t + 15)) s"; break; fi
		sleep 0.05
	done
	[ -e "$rcf" ] && rc=$(cat "$rcf")
	[ ! -e "$GUEST_OUT" ] || cat "$GUEST_OUT"
	return "$rc"
}

# guest_start NAME TIMEOUT CMD...
guest_start() { _guest_submit "$@"; }

# guest_listening PORT [SECONDS]: wait until something listens on TCP PORT in the
# guest (a server started with guest_start is ready for its client).
guest_listening() {
	guest_run "${2:-20}" "until ss -Hltn 'sport = :$1' | grep -q .; do sleep 0.1; done" > /dev/null
}

# guest_run TIMEOUT CMD...
guest_run() {
	local name=run-$BASHPID-$((++GUEST_SEQ))
	_guest_submit "$name" "$@" || return
	guest_wait "$name"
}

guest_stop() {
	if [ -n "$GUEST_PID" ]; then
		touch "$GUEST_SHARE/poweroff" 2>/dev/null || true
		for _ in $(seq 30); do kill -0 "$GUEST_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$GUEST_PID" 2>/dev/null || true
		GUEST_PID=
	fi
	if [ -n "$GUEST_TAP_MADE" ]; then
		ip -n "${GUEST_TAP_MADE% *}" link del "${GUEST_TAP_MADE#* }" 2>/dev/null || true
		GUEST_TAP_MADE=
	fi
	if [ -n "$GUEST_DIR" ]; then
		# After a failed check, what the guest's kernel said: a guest that
		# stops answering is otherwise invisible from here.
		if [ "${NFAIL:-0}" != 0 ] && [ -s "${GUEST_CONSOLE:-}" ]; then
			_guest_say "$NFAIL check(s) failed: serial console ($GUEST_CONSOLE), last lines:"
			tail -n 60 "$GUEST_CONSOLE" | sed 's/^/  | /' >&2
		fi
		if [ -n "${KEEP_TMP:-}${GUEST_KEEP:-}" ]; then
			_guest_say "kept $GUEST_DIR (console.log, share/out/)"
		else
			rm -rf "$GUEST_DIR"
		fi
		GUEST_DIR=
	fi
}

# Several guests in one script: the state above is one guest's. guest_save
# NAME keeps it, guest_use NAME makes NAME's current (a NAME never saved
# starts as no guest, with the knobs as they were when this file was sourced), e.g.
#   guest_use a; guest_boot ...; guest_save a; guest_use b; guest_boot ...
_GUEST_STATE_VARS=(GUEST_PID GUEST_DIR GUEST_SHARE GUEST_FILES GUEST_CONSOLE GUEST_TAP_MADE
	GUEST_SEQ GUEST_TIMEOUTS GUEST_IMAGE GUEST_IP GUEST_CIDR GUEST_MAC GUEST_NETNS GUEST_TAP
	GUEST_BOOT_SECS GUEST_OUT GUEST_MACHINE GUEST_MEM GUEST_SMP GUEST_APPEND GUEST_QEMU_EXTRA
	GUEST_RDMA GUEST_IMAGE_SCRIPT GUEST_BOOT_ARGS GUEST_BOOT_T0)
declare -A _GUEST_SAVED=()
guest_save() {
	local v
	_GUEST_SAVED[$1]=$(for v in "${_GUEST_STATE_VARS[@]}"; do
		declare -p "$v" 2>/dev/null | sed 's/^declare -\([-aAix]*\) /declare -g\1 /; s/^declare -g- /declare -g /'
	done)
}
guest_use() {
	local v
	for v in "${_GUEST_STATE_VARS[@]}"; do unset "$v"; done
	if [ -n "${_GUEST_SAVED[$1]+set}" ]; then
		eval "${_GUEST_SAVED[$1]}"
	else
		eval "${_GUEST_SAVED[.defaults]}"
	fi
}
guest_save .defaults	# as this file set them up
