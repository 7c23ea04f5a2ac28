# Shared helpers for the network-namespace tests. Source it, then call
# setup_pair; cleanup runs on EXIT. Needs root, iproute2, jq, /usr/bin/python3.
#
# Environment: VRDMAD, VRDMACTL, BPF_OBJ (set by the Makefile).

set -e
: "${VRDMAD:?set VRDMAD to the vrdmad binary}"
: "${VRDMACTL:?set VRDMACTL to the vrdmactl binary}"
: "${BPF_OBJ:?set BPF_OBJ to vrdma_xdp.bpf.o}"
PY=/usr/bin/python3	# Debian's, whatever python3 is first on PATH
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ "$(id -u)" = 0 ] || { echo "SKIP: $0 needs root (network namespaces, XDP)" >&2; exit 77; }

# Unique names, so tests can run beside each other and beside a real setup.
ID=$(printf '%04x' $(( ($$ ^ RANDOM) & 0xffff )))
NSA=vrA-$ID
NSB=vrB-$ID
IFA=vA$ID
IFB=vB$ID
TMP=$(mktemp -d /tmp/vrdmad-test.XXXXXX)
DAEMON_PIDS=()
NTEST=0
NFAIL=0

cleanup() {
	local pid
	for pid in "${DAEMON_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	ip netns del "$NSA" 2>/dev/null || true
	ip netns del "$NSB" 2>/dev/null || true
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# Two namespaces joined by a veth pair. $1 = A's addresses, $2 = B's (CIDR, space separated).
setup_pair() {
	ip netns add "$NSA"
	ip netns add "$NSB"
	ip link add "$IFA" netns "$NSA" type veth peer name "$IFB" netns "$NSB"
	local a
	for a in $1; do ip -n "$NSA" addr add "$a" dev "$IFA" nodad 2>/dev/null || ip -n "$NSA" addr add "$a" dev "$IFA"; done
	for a in $2; do ip -n "$NSB" addr add "$a" dev "$IFB" nodad 2>/dev/null || ip -n "$NSB" addr add "$a" dev "$IFB"; done
	ip -n "$NSA" link set lo up
	ip -n "$NSB" link set lo up
	ip -n "$NSA" link set "$IFA" up
	ip -n "$NSB" link set "$IFB" up
}

# A config for the daemon in $NSA. Extra lines for [port] in $1, VM sections in $2.
write_conf() {
	local f=$TMP/$3
	cat > "$f" <<EOC
[daemon]
control_socket = $TMP/ctl.sock
log_level = debug
[port]
interface = $IFA
xdp_object = $BPF_OBJ
$1
$2
EOC
	echo "$f"
}

# start_daemon CONF: run vrdmad in $NSA, wait until its control socket answers.
start_daemon() {
	local log=$TMP/vrdmad.$NTEST.log i
	ip netns exec "$NSA" "$VRDMAD" -c "$1" > "$log" 2>&1 &
	DPID=$!
	DAEMON_PIDS+=("$DPID")
	DLOG=$log
	for i in $(seq 100); do
		if ctl status > /dev/null 2>&1; then return 0; fi
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	echo "vrdmad did not come up; its log:" >&2
	cat "$log" >&2
	return 1
}

# stop_daemon: SIGTERM, then sets RC (exit code) and MS (milliseconds to exit).
# Not in a subshell: only this shell can wait for the daemon.
stop_daemon() {
	local t0 t1
	t0=$(date +%s%N)
	kill -TERM "$DPID"
	RC=0
	wait "$DPID" || RC=$?
	t1=$(date +%s%N)
	MS=$(( (t1 - t0) / 1000000 ))
}

ctl() {
	ip netns exec "$NSA" "$VRDMACTL" -s "$TMP/ctl.sock" "$@"
}

# jstat JQ_PATH: one number from `vrdmactl stats --json`.
jstat() {
	ctl stats --json | jq -e "$1"
}

# Numbered checks, WireGuard style: `check "what" command...`.
check() {
	local what=$1
	shift
	NTEST=$((NTEST + 1))
	if "$@"; then
		printf '  [%2d] %-66s ok\n' "$NTEST" "$what"
	else
		printf '  [%2d] %-66s FAIL\n' "$NTEST" "$what"
		NFAIL=$((NFAIL + 1))
		[ -z "${DLOG:-}" ] || { echo "---- daemon log:"; tail -20 "$DLOG"; echo "----"; }
	fi
}

# summary: the plain closing line, and the exit code.
summary() {
	echo "$(basename "$0" .sh): $((NTEST - NFAIL)) passed, $NFAIL failed"
	[ "$NFAIL" = 0 ]
}

udp() { "$PY" "$HERE/integration/udp.py" "$@"; }
