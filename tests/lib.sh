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
NSC=vrC-$ID	# the bridge of setup_bridged_pair
IFA=vA$ID
IFB=vB$ID
TMP=$(mktemp -d /tmp/vrdmad-test.XXXXXX)
DAEMON_PIDS=()

cleanup() {
	local pid
	for pid in "${DAEMON_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	ip netns del "$NSA" 2>/dev/null || true
	ip netns del "$NSB" 2>/dev/null || true
	ip netns del "$NSC" 2>/dev/null || true
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# Two namespaces joined by a veth pair. $1 = A's addresses, $2 = B's (CIDR, space separated).
setup_pair() {
	ip netns add "$NSA"
	ip netns add "$NSB"
	ip link add "$IFA" netns "$NSA" type veth peer name "$IFB" netns "$NSB"
	pair_addresses "$1" "$2"
}

# The same two ends, each on a veth pair to a bridge in $NSC: a capture on
# the bridge sees every frame (one on an interface with an XSK misses the
# redirected and XSK-sent ones), and a qdisc on the bridge's ports
# (${IFA}p, ${IFB}p) shapes frames that AF_XDP sends past the ends' qdiscs.
setup_bridged_pair() {
	ip netns add "$NSA"
	ip netns add "$NSB"
	ip netns add "$NSC"
	ip link add "$IFA" netns "$NSA" type veth peer name "${IFA}p" netns "$NSC"
	ip link add "$IFB" netns "$NSB" type veth peer name "${IFB}p" netns "$NSC"
	ip -n "$NSC" link add br0 type bridge stp_state 0 forward_delay 0
	ip -n "$NSC" link set "${IFA}p" master br0 up
	ip -n "$NSC" link set "${IFB}p" master br0 up
	ip -n "$NSC" link set br0 up
	ip -n "$NSC" link set lo up
	pair_addresses "$1" "$2"
}

pair_addresses() {
	local a
	for a in $1; do ip -n "$NSA" addr add "$a" dev "$IFA" nodad 2>/dev/null || ip -n "$NSA" addr add "$a" dev "$IFA"; done
	for a in $2; do ip -n "$NSB" addr add "$a" dev "$IFB" nodad 2>/dev/null || ip -n "$NSB" addr add "$a" dev "$IFB"; done
	ip -n "$NSA" link set lo up
	ip -n "$NSB" link set lo up
	ip -n "$NSA" link set "$IFA" up
	ip -n "$NSB" link set "$IFB" up
}

mac_of() { ip -n "$1" -j link show "$2" | jq -r '.[0].address'; }

# need_pingpong: sets VRDMA_PINGPONG to the vrdma-pingpong the tests run: as
# given, else in VRDMA_BIN (the Makefile's ASan tools), else the ASan build
# of this tree; exits if it is not there.
need_pingpong() {
	VRDMA_PINGPONG=${VRDMA_PINGPONG:-${VRDMA_BIN:-$HERE/../build/asan}/vrdma-pingpong}
	[ -x "$VRDMA_PINGPONG" ] || { echo "no $VRDMA_PINGPONG: make build/asan/vrdma-pingpong" >&2; exit 1; }
}

# long_pingpong SERVER-SOCKET CLIENT-SOCKET PORT: an RC ping-pong between two
# VMs of the daemon in $NSA, long enough to outlast any test, in the
# background: LSRV and LCLI are its processes, $TMP/long.* its output. -e:
# it sleeps on the completion channel, so the two do not take both cores.
long_pingpong() {
	ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$1" -p "$3" -s 4096 -n 100000000 -c -e \
		> "$TMP/long.srv" 2> "$TMP/long.srv.err" &
	LSRV=$!
	wait_listen "$NSA" "$3"
	ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$2" -p "$3" -s 4096 -n 100000000 -c -e \
		127.0.0.1 > "$TMP/long.cli" 2> "$TMP/long.cli.err" &
	LCLI=$!
}

# A config for the daemon in $NSA. Extra lines for [port] in $1, VM sections in $2.
# For the second daemon (start_daemon_b) set CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock.
# vm_section NAME GID: a small VM (4 CQs, 4 QPs) with its socket in $TMP,
# for write_conf's VM sections.
vm_section() {
	printf '[vm %s]\ngid = %s\nsocket = %s/%s.sock\nmax_cq = 4\nmax_qp = 4\n' "$1" "$2" "$TMP" "$1"
}

write_conf() {
	local f=$TMP/$3
	cat > "$f" <<EOC
[daemon]
control_socket = ${CONF_CTL:-$TMP/ctl.sock}
log_level = debug
[port]
interface = ${CONF_IF:-$IFA}
xdp_object = $BPF_OBJ
$1
$2
EOC
	echo "$f"
}

# two_daemons NET: the two-daemon topology of veth.sh and jumbo.sh on
# NET.0/24 (setup_bridged_pair): A at NET.1 serves vm alpha (NET.11); B at
# NET.2, with two workers, serves vm spare (NET.13) and then beta (NET.12),
# so beta's worker (1) owns no NIC queue and its frames cross to worker 0
# through a ring. Sets CONF_A, CONF_B and ADDR_B; starts nothing.
two_daemons() {
	setup_bridged_pair "$1.1/24 $1.11/24" "$1.2/24 $1.12/24"
	ADDR_B=$1.2
	CONF_A=$(write_conf "" "[vm alpha]
gid = $1.11
socket = $TMP/alpha.sock
max_cq = 8
max_qp = 8" a.conf)
	CONF_B=$(CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock write_conf "" "[vm spare]
gid = $1.13
socket = $TMP/spare.sock
max_cq = 1
max_qp = 1
[vm beta]
gid = $1.12
socket = $TMP/beta.sock
max_cq = 8
max_qp = 8" b.conf)
	sed -i 's/^\[daemon\]$/[daemon]\nworkers = 2/' "$CONF_B"
}

# run_vrdmad NS CONF LOG CTL: run vrdmad in NS, logging to LOG, until CTL
# (ctl or ctlb) gets an answer to status; its pid in VPID.
run_vrdmad() {
	local i
	ip netns exec "$1" "$VRDMAD" -c "$2" > "$3" 2>&1 &
	VPID=$!
	DAEMON_PIDS+=("$VPID")
	for i in $(seq 100); do
		if "$4" status > /dev/null 2>&1; then return 0; fi
		kill -0 "$VPID" 2>/dev/null || break
		sleep 0.1
	done
	echo "vrdmad in $1 did not come up; its log:" >&2
	cat "$3" >&2
	return 1
}

# start_daemon CONF: run vrdmad in $NSA, wait until its control socket
# answers; its pid and log in DPID, DLOG.
start_daemon() {
	DLOG=$TMP/vrdmad.$NTEST.log
	local rc=0
	run_vrdmad "$NSA" "$1" "$DLOG" ctl || rc=$?
	DPID=$VPID
	return $rc
}

# start_managed NS CONF: vrdmad in NS under fdstore.py, a stand-in for
# systemd's fd store (docs/restart.md), which takes commands through
# manager(); its log in DLOG, the manager's in MLOG; waits until the
# control socket answers (ctl).
start_managed() {
	DLOG=$TMP/vrdmad.$NTEST.log
	MLOG=$TMP/manager.log
	: > "$MLOG"
	rm -f "$TMP/mgr.in"
	mkfifo "$TMP/mgr.in"
	exec 7<> "$TMP/mgr.in"	# read-write: opening waits for no one
	ip netns exec "$1" "$PY" "$HERE/integration/fdstore.py" "$MLOG" 65536 -- \
		"$VRDMAD" -c "$2" < "$TMP/mgr.in" >> "$DLOG" 2>&1 &
	DAEMON_PIDS+=("$!")
	ctl_up
}

# ctl_up: until the control socket answers (10 s at most).
ctl_up() {
	local i
	for i in $(seq 100); do ctl status > /dev/null 2>&1 && return 0; sleep 0.1; done
	return 1
}

# manager CMD: a command for fdstore.py (restart, kill, abort-at N, stop);
# waits for it to start vrdmad again (or end) and for the control socket;
# LAST = the manager's lines since.
manager() {
	local before n
	before=$(wc -l < "$MLOG")
	echo "$1" >&7
	for n in $(seq 300); do
		LAST=$(tail -n +"$((before + 1))" "$MLOG")
		if grep -q '^done' <<< "$LAST"; then return 0; fi
		if grep -q '^start' <<< "$LAST"; then ctl_up; return; fi
		sleep 0.1
	done
	echo "the manager did not answer '$1'; its log:" >&2
	cat "$MLOG" >&2
	return 1
}

# restore_gaps: each restore's gap in vrdmad's log (ms, from the save).
restore_gaps() {
	sed -n 's/.*vm [a-z0-9_-]*: restored as vrdmad [^ ]* left it \([0-9.]*\) ms ago/\1/p' "$DLOG"
}

# start_daemon_b CONF: a second vrdmad, in $NSB, controlled at $TMP/ctlB.sock
# (ctlb); its pid and log in DPID_B, DLOG_B.
start_daemon_b() {
	DLOG_B=$TMP/vrdmad-b.$NTEST.log
	local rc=0
	run_vrdmad "$NSB" "$1" "$DLOG_B" ctlb || rc=$?
	DPID_B=$VPID
	return $rc
}

# listen_while UDP.PY-ARGS...: run udp.py with those arguments in $NSB while
# a kernel socket on UDP 4791 in $NSA listens; GOT = what that socket
# received (frames XDP left to the stack).
listen_while() {
	local out=$TMP/recv.$NTEST rpid
	ip netns exec "$NSA" "$PY" "$HERE/integration/udp.py" recv 4791 1.5 > "$out" &
	rpid=$!
	for _ in $(seq 50); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
	ip netns exec "$NSB" "$PY" "$HERE/integration/udp.py" "$@"
	wait "$rpid"
	GOT=$(tail -1 "$out")
}

# wait_listen NS PORT [SECONDS]: until a TCP server listens on PORT in NS
# (default 5 s); 1 if none does by then.
wait_listen() {
	local n=$(( ${3:-5} * 20 ))
	while [ "$n" -gt 0 ]; do
		ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
		sleep 0.05
		n=$((n - 1))
	done
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
	ip netns exec "$NSA" "$VRDMACTL" -s "${CTL_SOCK:-$TMP/ctl.sock}" "$@"
}

ctlb() {
	ip netns exec "$NSB" "$VRDMACTL" -s "$TMP/ctlB.sock" "$@"
}

# tx_budget_taken N: the frames per sendto() a copy-mode socket gets for
# [port] tx_budget = N: N from Linux 6.17 on, the kernel's 32 before.
tx_budget_taken() {
	if printf '%s\n' 6.17 "$(uname -r)" | sort -V -C; then echo "$1"; else echo 32; fi
}

# jstat JQ_PATH: one number from `vrdmactl stats --json`.
jstat() {
	ctl stats --json | jq -e "$1"
}

source "$HERE/checks.sh"
# After a failed check: the daemons' last messages, debug lines left out.
check_failed() {
	[ -z "${DLOG:-}" ] || { echo "---- daemon log:"; grep -v '^<7>' "$DLOG" | tail -20; echo "----"; }
	[ -z "${DLOG_B:-}" ] || { echo "---- daemon B's log:"; grep -v '^<7>' "$DLOG_B" | tail -20; echo "----"; }
}

# tshark options that turn off its guesses at what a RoCE payload carries
# (RPC over RDMA, EoIB, SMB Direct...): test data is none of those.
no_payload_guesses() {
	tshark -G heuristic-decodes 2>/dev/null |
		awk '$1 == "infiniband.payload" && $2 != "ethertype" { printf "--disable-protocol %s ", $2 }'
}

udp() { "$PY" "$HERE/integration/udp.py" "$@"; }

# pp_lines: the closing lines of an ibv_*_pingpong pair (or vrdma-pingpong,
# which prints them alike) in $TMP/server.out and $TMP/client.out.
pp_lines() {
	grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$TMP/server.out" &&
	grep -Eq '^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' "$TMP/client.out"
}

# perf_row TEST: perftest (or vrdma-perf) TEST's pair ended with a result
# row in $TMP/client.out and $TMP/server.out: each side that measures
# prints one; the passive side of read_lat and atomic_lat measures nothing.
perf_row() {
	local f files=("$TMP/client.out")
	case $1 in read_lat|atomic_lat) ;; *) files+=("$TMP/server.out") ;; esac
	for f in "${files[@]}"; do
		grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$f" || return 1
	done
}

# srq_used: the first VM of the daemon ctl talks to took receive WQEs into
# an SRQ (not a QP's own queue) and refused none.
srq_used() {
	local n
	n=$(ctl stats --json | jq '.vms[0].device.srq_wqes')
	echo "    receive WQEs taken into SRQs: $n"
	[ "$n" -gt 0 ] && [ "$(ctl stats --json | jq '.vms[0].device.refused_srq_wqes')" = 0 ]
}

# ---- two daemons (start_daemon, start_daemon_b) with VMs alpha and beta ----
# vtest CASE...: vrdma_test on $TMP/alpha.sock (A) and $TMP/beta.sock (B),
# from $NSA; vtest_ok: the same, all passed (else its failures shown).
vtest() {
	ip netns exec "$NSA" timeout 600 "$VRDMA_TEST" "$TMP/alpha.sock" "$TMP/beta.sock" "$@"
}
vtest_ok() {
	local out=$TMP/vtest.$NTEST.out
	vtest "$@" > "$out" 2>&1 || true
	grep '^# RC bulk' "$out" | sed 's/^#/   /' || true
	grep -q '^vrdma_test: [0-9]* passed, 0 failed$' "$out" || { grep -v '^ok ' "$out" | tail -20; return 1; }
}
# tool_pair PORT PROGRAM ARGS...: PROGRAM (vrdma-pingpong, vrdma-perf) with
# ARGS as the server on beta (B), then as the client on alpha (A) towards
# B's address; both must exit 0. Their output: $TMP/srv.out, $TMP/cli.out.
tool_pair() {
	local port=$1 spid rc=0
	shift
	ip netns exec "$NSB" timeout 120 "$@" -d "$TMP/beta.sock" -p "$port" > "$TMP/srv.out" 2>&1 &
	spid=$!
	wait_listen "$NSB" "$port" || true
	ip netns exec "$NSA" timeout 120 "$@" -d "$TMP/alpha.sock" -p "$port" "$ADDR_B" \
		> "$TMP/cli.out" 2>&1 || rc=$?
	wait "$spid" || rc=$?
	[ $rc = 0 ] || { tail -5 "$TMP/srv.out" "$TMP/cli.out"; return 1; }
}
# frames_agree: both daemons' stats in $TMP/sa.json and $TMP/sb.json, read
# again for up to 3 s until every frame each one sent, the other got (one
# may still be on its way when a test program exits); ATX ARX BTX BRX.
frames_agree() {
	local i
	for i in $(seq 30); do
		ctl stats --json > "$TMP/sa.json"
		ctlb stats --json > "$TMP/sb.json"
		ATX=$(jq .port.tx_frames "$TMP/sa.json") ARX=$(jq .port.rx_frames "$TMP/sa.json")
		BTX=$(jq .port.tx_frames "$TMP/sb.json") BRX=$(jq .port.rx_frames "$TMP/sb.json")
		[ "$ATX" != "$BRX" ] || [ "$BTX" != "$ARX" ] || return 0
		sleep 0.1
	done
	echo "    kernel's AF_XDP counters: A $(jq -c .port.xsk "$TMP/sa.json"), B $(jq -c .port.xsk "$TMP/sb.json")"
	return 1
}
both_exit_0() {
	local ra=0 rb=0
	kill -TERM "$DPID" "$DPID_B"
	wait "$DPID" || ra=$?
	wait "$DPID_B" || rb=$?
	[ $ra = 0 ] && [ $rb = 0 ]
}
# impair_relay: the bridge of setup_bridged_pair makes way for $IMPAIR, a
# relay between its two ports that loses, duplicates and reorders 1 % of
# the frames each way and corrupts 0.1 %; IMPAIR_PID, $TMP/impair.log.
impair_relay() {
	: "${IMPAIR:?set IMPAIR to the impair binary}"
	ip -n "$NSC" link set "${IFA}p" nomaster
	ip -n "$NSC" link set "${IFB}p" nomaster
	ip netns exec "$NSC" "$IMPAIR" "${IFA}p" "${IFB}p" -l 1 -d 1 -r 1 -c 0.1 -s "$RANDOM" \
		> "$TMP/impair.log" 2>&1 &
	IMPAIR_PID=$!
	DAEMON_PIDS+=("$IMPAIR_PID")
	for _ in $(seq 50); do grep -q relaying "$TMP/impair.log" && break; sleep 0.1; done
}
# bulk_ok MIB: vrdma_test case 30 (RC, MIB MiB checked byte for byte), with
# A's first VM's transport counters, live only while it is connected,
# sampled into $TMP/transportA every 0.2 s meanwhile; recovered: they show
# retransmitted packets.
bulk_ok() {
	local sampler rc=0
	( while sleep 0.2; do ctl stats --json 2>/dev/null | jq -c '.vms[0].device.transport' ; done ) \
		> "$TMP/transportA" 2>/dev/null &
	sampler=$!
	VRDMA_TEST_BULK_MIB=$1 vtest_ok 30 || rc=$?
	kill "$sampler" 2>/dev/null || true
	return $rc
}
recovered() {
	local r
	r=$(jq -s 'map(.retransmitted_packets // 0) | max' "$TMP/transportA")
	echo "    A retransmitted $r packets"
	[ "$r" -gt 0 ]
}
