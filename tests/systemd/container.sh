# shellcheck shell=bash disable=SC2034  # ROOT, LEADER: for the caller
# Containers with a real systemd as PID 1 and vrdmad installed, for the tests
# that need a real service manager: tests/systemd/nspawn.sh (the unit) and
# tests/vm/upgrade.sh (restarts under a VM).
#
# The root (debootstrap --variant=minbase bookworm with systemd and vrdmad's
# runtime libraries) is built once and cached in
# ${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}/nspawn-bookworm-KEY (KEY: a hash
# of what goes into it), like tests/interop/guest-image.sh: under a lock, in a
# temporary directory renamed into place. Building it takes ~1 min (175 MB).
# Each container boots an overlay of it with `make install` on top, which
# keeps it clean.
#
# Source it with REPO (the built tree) and CT_DIR (a directory of the
# caller's for the overlays and consoles) set, then:
#   ct_prepare NAME          the overlay of container NAME, vrdmad installed:
#                            its root in ROOT (write /etc there before booting)
#   ct_boot NAME OPTION...   boot it with those systemd-nspawn options (the
#                            network: --network-veth, or
#                            --network-namespace-path=/run/netns/NS; binds)
#                            until systemd says it is up; it becomes the
#                            current container. 77: no container boots here.
#   ct_use NAME              make NAME the current container (ROOT, LEADER)
#   ct CMD...                CMD in the current container, a plain environment
#   ct_cleanup               power every container off, take down what they
#                            left (cgroups, mounts); the caller's EXIT trap
#                            calls it, then removes CT_DIR
# Needs root, systemd-container (systemd-nspawn), debootstrap, nsenter.
: "${REPO:?}" "${CT_DIR:?}"
CT_CACHE=${VRDMA_GUEST_CACHE:-/var/cache/vrdmad-test}
SUITE=bookworm
# systemd as init, dbus for systemctl, iproute2 for `ip`, procps for /bin/kill
# (ExecReload), man-db for `systemd-analyze verify` to open Documentation=,
# and what `ldd build/vrdmad` needs.
ROOT_PKGS=(systemd systemd-sysv dbus iproute2 procps man-db
	libxdp1 libbpf1 libsystemd0 libjson-c5 libinih1 libisal2)
declare -A CT_LEADER CT_NSPAWN CT_CGDIRS
CT_BUILD_DIR=	# the root being built, if interrupted
ROOT=
LEADER=

ct_say() { echo "container: $*" >&2; }

# ct_need: 0 if containers can be made here, else says why and returns 77.
ct_need() {
	[ "$(id -u)" = 0 ] || { ct_say "needs root (systemd-nspawn, veth, XDP)"; return 77; }
	command -v systemd-nspawn > /dev/null ||
		{ ct_say "no systemd-nspawn: apt-get install systemd-container"; return 77; }
	command -v debootstrap > /dev/null || { ct_say "no debootstrap: apt-get install debootstrap"; return 77; }
	command -v nsenter > /dev/null || { ct_say "no nsenter: apt-get install util-linux"; return 77; }
	local f
	for f in vrdmad vrdmactl vrdma_xdp.bpf.o; do
		[ -e "$REPO/build/$f" ] || { ct_say "$REPO/build/$f is missing: run make first"; return 1; }
	done
}

# build_root DIR: debootstrap the container's root into DIR.
# (Its text is part of the cache key: a change builds a new root.)
build_root() {
	local r=$1 inc
	inc=$(IFS=,; echo "${ROOT_PKGS[*]}")
	debootstrap --variant=minbase --include="$inc" "$SUITE" "$r" "$MIRROR" \
		> "$r.debootstrap.log" 2>&1 ||
		{ tail -n 30 "$r.debootstrap.log" >&2; return 1; }
	# No login prompts on the console, nothing that waits for a network.
	chroot "$r" systemctl mask -q console-getty.service getty@.service \
		systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer \
		e2scrub_all.timer fstrim.timer 2> /dev/null || true
	# Each boot gets its own machine id.
	: > "$r/etc/machine-id"
	echo vrdmad-test > "$r/etc/hostname"
	rm -rf "$r"/var/cache/apt/*.bin "$r"/var/cache/apt/archives/*.deb \
		"$r"/var/lib/apt/lists/* "$r"/var/log/*.log
	rm -f "$r.debootstrap.log"
}

# ct_base: CT_BASE, the cached root, built if it is not there.
ct_base() {
	local key t0
	key=$({ declare -f build_root; echo "$SUITE ${ROOT_PKGS[*]}"; } | sha256sum | cut -c1-16)
	CT_BASE=$CT_CACHE/nspawn-$SUITE-$key
	if [ ! -d "$CT_BASE/root/usr/lib/systemd" ]; then
		mkdir -p "$CT_CACHE"
		exec 8> "$CT_CACHE/.lock"
		flock -n 8 || { ct_say "another build is running; waiting for it"; flock 8; }
		if [ ! -d "$CT_BASE/root/usr/lib/systemd" ]; then
			# shellcheck source=tests/debian-mirror.sh
			. "$REPO/tests/debian-mirror.sh"
			MIRROR=${VRDMA_GUEST_MIRROR:-$(debian_mirror)}
			[ -n "$MIRROR" ] ||
				{ ct_say "no Debian mirror in /etc/apt/sources.list*; set VRDMA_GUEST_MIRROR"; return 1; }
			rm -rf --one-file-system "$CT_CACHE"/.build-nspawn-*
			CT_BUILD_DIR=$(mktemp -d "$CT_CACHE/.build-nspawn-$key.XXXXXX")
			ct_say "building the container root from $MIRROR into $CT_BUILD_DIR (once, ~1 min)"
			t0=$SECONDS
			build_root "$CT_BUILD_DIR/root" || { ct_say "debootstrap failed"; return 1; }
			chmod 755 "$CT_BUILD_DIR"
			mv -T "$CT_BUILD_DIR" "$CT_BASE"
			CT_BUILD_DIR=
			ct_say "built $CT_BASE in $((SECONDS - t0)) s"
			# Roots of other versions of this file unused for 14 days go.
			find "$CT_CACHE" -maxdepth 1 -name "nspawn-$SUITE-*" ! -name "nspawn-$SUITE-$key" \
				-mtime +14 -exec rm -rf --one-file-system {} + 2> /dev/null || true
		fi
		exec 8>&-
	fi
	touch "$CT_BASE"
}

ct_prepare() {
	local d=$CT_DIR/$1
	[ -n "${CT_BASE:-}" ] || ct_base || return
	mkdir -p "$d/upper" "$d/work" "$d/root"
	mount -t overlay overlay -o "lowerdir=$CT_BASE/root,upperdir=$d/upper,workdir=$d/work" "$d/root"
	make -C "$REPO" --no-print-directory install DESTDIR="$d/root" PREFIX=/usr > "$d/install.log" 2>&1 ||
		{ cat "$d/install.log" >&2; ct_say "make install failed"; return 1; }
	[ -f "$d/root/usr/lib/systemd/system/vrdmad.service" ] ||
		{ ct_say "make install put no vrdmad.service in place"; return 1; }
	ROOT=$d/root
}

ct_use() {
	ROOT=$CT_DIR/$1/root
	LEADER=${CT_LEADER[$1]}
}

CT_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_PAGER=cat SYSTEMD_COLORS=0 LC_ALL=C)
ct() {
	nsenter -t "$LEADER" -a "${CT_ENV[@]}" "$@"
}

# ct_bg CMD...: ct in the background; CT_BG_PID is the nsenter itself,
# which a kill ends (`ct CMD &` gives a subshell whose nsenter outlives
# it, and the container's shutdown then waits for that for good)
ct_bg() {
	nsenter -t "$LEADER" -a "${CT_ENV[@]}" "$@" &
	CT_BG_PID=$!
}

ct_boot() {
	local name=$1 d=$CT_DIR/$1 cg=vrdmad-nspawn-$1 p state t0 leader="" pid
	local -a cgdirs=()
	shift
	# With no systemd on the host, nspawn --keep-unit stays in our cgroup:
	# give it one of its own in every hierarchy, removed at the end.
	# (cgroup v2, or the name=systemd and unified hierarchies of a hybrid
	# setup; the v1 controllers stay where they are.)
	for p in /sys/fs/cgroup /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do
		[ -w "$p/cgroup.procs" ] || continue
		mkdir -p "$p/$cg"
		cgdirs+=("$p/$cg")
	done
	CT_CGDIRS[$name]="${cgdirs[*]}"
	# The container gets every capability the unit may keep (nspawn's
	# default set lacks CAP_NET_ADMIN without --network-*, CAP_BPF,
	# CAP_PERFMON, CAP_IPC_LOCK), so that the unit's CapabilityBoundingSet=
	# is what limits vrdmad; also CAP_SYS_RESOURCE, as systemd on a host has
	# to apply LimitMEMLOCK=infinity (it is not in this machine's own
	# bounding set here, and nspawn drops it silently: then only
	# CAP_IPC_LOCK lets vrdmad lock its UMEM). bpf() is filtered unless
	# allowed; a writable /sys lets us mount bpffs inside.
	(
		for p in "${cgdirs[@]}"; do echo "$BASHPID" > "$p/cgroup.procs"; done
		export SYSTEMD_NSPAWN_API_VFS_WRITABLE=yes
		exec systemd-nspawn -q -D "$d/root" -M "$name" -b --register=no --keep-unit \
			--console=read-only \
			--capability=CAP_NET_ADMIN,CAP_BPF,CAP_PERFMON,CAP_IPC_LOCK,CAP_SYS_RESOURCE \
			--system-call-filter=bpf "$@" < /dev/null
	) > "$d/console.log" 2>&1 &
	pid=$!
	CT_NSPAWN[$name]=$pid

	# Its leader is nspawn's child that is PID 1 in its own pid namespace.
	for _ in $(seq 100); do
		for p in $(pgrep -P "$pid" 2> /dev/null); do
			if awk '$1 == "NSpid:" && NF > 2 && $NF == 1 { ok = 1 } END { exit !ok }' \
				"/proc/$p/status" 2> /dev/null; then
				leader=$p
			fi
		done
		[ -n "$leader" ] && break
		kill -0 "$pid" 2> /dev/null || break
		sleep 0.05
	done
	if [ -z "$leader" ]; then
		cat "$d/console.log" >&2
		ct_say "systemd-nspawn cannot boot a container here"
		return 77
	fi
	CT_LEADER[$name]=$leader
	ct_use "$name"
	t0=$SECONDS
	# Until systemd answers on its bus and says it finished starting up.
	state=
	for _ in $(seq 300); do
		state=$(ct systemctl is-system-running 2> /dev/null) || true
		case $state in offline|unknown|initializing|starting|"") ;; *) break ;; esac
		kill -0 "$pid" 2> /dev/null || break
		sleep 0.1
	done
	case $state in
	running|degraded) ;;
	*)
		tail -n 30 "$d/console.log" >&2
		ct_say "container $name did not boot (state '$state')"
		return 77 ;;
	esac
	ct_say "$name (leader $leader) booted: $state in $((SECONDS - t0)) s"
	[ "$state" = running ] || ct systemctl --failed --no-legend >&2 || true
	ct ip link set lo up
	# As on a host, where systemd mounts bpffs (libxdp's dispatcher wants it;
	# nspawn's /sys has no fs/bpf).
	ct sh -c 'mkdir -p /sys/fs/bpf && mount -t bpf bpf /sys/fs/bpf' 2> /dev/null ||
		ct_say "no bpffs in $name"
}

ct_cleanup() {
	local name leader pid d p m
	for name in "${!CT_NSPAWN[@]}"; do
		leader=${CT_LEADER[$name]:-}
		pid=${CT_NSPAWN[$name]}
		if [ -n "$leader" ] && kill -0 "$leader" 2> /dev/null; then
			kill -RTMIN+3 "$leader" 2> /dev/null || true	# systemd: poweroff
			for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
			kill -KILL "$leader" 2> /dev/null || true	# takes the whole pid namespace along
		fi
		kill -KILL "$pid" 2> /dev/null || true
		wait "$pid" 2> /dev/null || true
		for d in ${CT_CGDIRS[$name]:-}; do
			[ -d "$d" ] || continue
			# Anything still in the container's cgroup goes too.
			for _ in $(seq 20); do
				find "$d" -name cgroup.procs -exec cat {} + 2> /dev/null |
					while read -r p; do kill -KILL "$p" 2> /dev/null || true; done
				find "$d" -depth -type d -exec rmdir {} + 2> /dev/null && break
				sleep 0.1
			done
		done
	done
	CT_NSPAWN=()
	# Unmount what is under our directories (the overlays; what debootstrap
	# mounted in an interrupted build), deepest first.
	for d in "$CT_DIR" $CT_BUILD_DIR; do
		awk -v t="$d/" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r |
			while read -r m; do umount -l "$m" 2> /dev/null || true; done
	done
	[ -z "$CT_BUILD_DIR" ] || rm -rf --one-file-system "$CT_BUILD_DIR"
	CT_BUILD_DIR=
}
