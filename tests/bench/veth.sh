#!/bin/bash
# `make bench`, end to end on a veth pair: vrdmad's RC goodput, message rate
# and latency against the best raw AF_XDP and kernel TCP do on the same link.
#
#   netns vrA-ID                                netns vrB-ID
#   +-------------------------------+           +-------------------------------+
#   | vA-ID 10.230.0.1 (+ .11)      |<--veth--->| vB-ID 10.230.0.2 (+ .12)      |
#   | (1) xsk_raw sink / pong       |           | (1) xsk_raw blast / ping      |
#   | (2) vrdmad, vm a (.11)        |           | (2) vrdmad, vm b (.12)        |
#   |     vrdma-perf server         |           |     vrdma-perf client         |
#   | (3) iperf3 -s                 |           | (3) iperf3 -c                 |
#   +-------------------------------+           +-------------------------------+
#
# (1) raw AF_XDP: a blast of frames the size of RC's full WRITE frames at
#     the path MTU into a sink, of frames the size of a 64 B RC WRITE (UDP
#     payload 96 B: BTH, RETH, 64 B, ICRC) for the packet rate, and a 64 B
#     XSK ping-pong; (2) vrdma-perf RC WRITE and SEND at 64 B, 4 KiB and
#     1 MiB, on 8 QPs, the 64 B WRITE message rate and the RC SEND ping-pong;
#     (3) iperf3. Then the link at MTU 9000 (path MTU 4096, multi-buffer
#     AF_XDP): raw, RC WRITE and SEND 1 MiB, TCP.
#
# Each baseline is the best of its kind here, set up at least as well as
# vrdmad: xsk_raw sends with the port's policy (a sendto()'s worth queued,
# kicked, completions taken back, chunks reused while in cache: +8-15 %
# over its old 64-a-pass loop that let ~2000 frames queue), once with the
# kernel's copy-mode TX budget of 32 frames per sendto() and once with each
# other of BENCH_TX_BUDGETS (XDP_MAX_TX_SKB_BUDGET, kernel 6.17+; vrdmad's
# tx_budget is 256); iperf3 with each option set of BENCH_TCP_OPTS (sendfile, 1 MiB
# writes, two streams; one second omitted); each keeps its round's best.
# Every party is pinned as the daemons' workers are: side A's on CPU 0,
# side B's on CPU 1. Raw goodput counts what RC carries in the same frames
# (the path MTU of data per frame, as RC counts 1 MiB messages), and the
# sink's losses are printed beside it.
#
# The machine drifts (raw goodput moves by a third from minute to minute),
# so each ratio is taken between runs next to each other, in BENCH_ROUNDS
# rounds (5) whose order alternates (odd rounds: baseline, then vrdmad;
# even: vrdmad, then baseline); a line gives the median of the rounds'
# ratios with their range. Round 1 also runs the whole goodput table.
#   bench: write_1MiB_vs_raw        RC WRITE 1 MiB / raw goodput
#   bench: send_64B_lat_vs_raw      RC 64 B SEND RTT p50 / raw XSK RTT p50
#   bench: jumbo_write_1MiB_vs_raw  the same at path MTU 4096
#   bench: jumbo_vs_1024_write_1MiB RC WRITE 1 MiB, path MTU 4096 / 1024
#   bench: jumbo_write_1MiB_vs_tcp  at MTU 9000, against iperf3
#   bench: write_64B_rate_vs_raw    RC WRITE 64 B messages / raw 96 B frames per s
#   bench: write_1MiB_8qp_vs_1qp    RC WRITE 1 MiB on 8 QPs / on 1 QP (the 8
#                                   share one congestion window)
#   bench: write_64B_rate_v2_vs_raw the 64 B rate with ABI v2's rings
#                                   (VRDMA_RINGS=1) / raw
#   bench: send_64B_lat_v2_vs_raw   the 64 B SEND RTT p50 on rings / raw
#   bench: write_64B_rate_v2_vs_v1  the 64 B rate on rings / on virtqueues
# No CPU per GB: every party here spins for the whole run, so CPU time
# measures the run's length, not the work.
# A benchmark: it fails only when something breaks, never on a number.
#
# This machine has 2 cores for 2 daemons and 2 perf programs, where a real
# host gives the daemon its own cores and the guests theirs. Both the perf
# programs (libvrdma's poll) and the daemons' workers (idle_spin_us, the
# default 50) yield the core while they wait, so whoever has work gets it.
# The perf programs run at normal priority, as a guest's vCPU does;
# BENCH_PERF_SCHED=idle runs them at SCHED_IDLE instead (the bench before
# 2026-11-25). So an RC round trip hands the CPU over between a worker and
# the program beside it at least four times (post, completion, reply,
# completion), each a switch between processes that make bench measures
# first (machine_process_switch_ns); the raw ping-pong, a party per CPU,
# hands over none. BENCH_WORKER_CPUS=none leaves the workers and the baselines
# unpinned.
#
# Environment: VRDMAD VRDMACTL BPF_OBJ XSK_RAW VRDMA_PERF; BENCH_SECONDS (3),
# BENCH_MTU (1500, the link's), BENCH_JUMBO_MTU (9000), BENCH_LAT_ITERS
# (20000), BENCH_ROUNDS (5), BENCH_PERF_SCHED (other, or idle),
# BENCH_WORKER_CPUS (pin, or none; none on a machine of one CPU),
# BENCH_TX_BUDGETS ("32 256"), BENCH_TCP_OPTS ("-Z -l 1M|-Z -P 2", option sets
# separated by |).
set -e
source "$(dirname "$0")/../lib.sh"
: "${XSK_RAW:?set XSK_RAW}" "${VRDMA_PERF:?set VRDMA_PERF}"
set -E
trap 'echo "bench: stopped at line $LINENO: $BASH_COMMAND" >&2' ERR
SECS=${BENCH_SECONDS:-3}
MTU=${BENCH_MTU:-1500}
JMTU=${BENCH_JUMBO_MTU:-9000}
LAT_ITERS=${BENCH_LAT_ITERS:-20000}
ROUNDS=${BENCH_ROUNDS:-5}
TX_BUDGETS=${BENCH_TX_BUDGETS:-32 256}
TCP_OPTS=${BENCH_TCP_OPTS:--Z -l 1M|-Z -P 2}
PIN_WORKERS=${BENCH_WORKER_CPUS:-pin}
[ "$(nproc)" -ge 2 ] || PIN_WORKERS=none
case $PIN_WORKERS in
pin|none) ;;
*) echo "bench: BENCH_WORKER_CPUS must be pin or none" >&2; exit 1 ;;
esac
case ${BENCH_PERF_SCHED:-other} in
other) PERF_SCHED=() ;;
idle) PERF_SCHED=(chrt -i 0) ;;
*) echo "bench: BENCH_PERF_SCHED must be other or idle" >&2; exit 1 ;;
esac
command -v iperf3 > /dev/null || { echo "bench: iperf3 is missing (make deps)" >&2; exit 1; }

setup_pair "10.230.0.1/24 10.230.0.11/24" "10.230.0.2/24 10.230.0.12/24"
link_mtu() {	# MTU: both ends (between runs: nothing attached then)
	ip -n "$NSA" link set "$IFA" mtu "$1"
	ip -n "$NSB" link set "$IFB" mtu "$1"
}
link_mtu "$MTU"
MAC_A=$(mac_of "$NSA" "$IFA")
# The IB path MTU a link MTU carries (IBA 9.4: 256..4096) and the UDP
# payload of a full RC frame at that path MTU: BTH 12 + ICRC 4 + the payload.
pmtu() {
	local p=4096
	while [ $((p + 12 + 16 + 4 + 8 + 20)) -gt "$1" ]; do p=$((p / 2)); done
	echo "$p"
}
PMTU=$(pmtu "$MTU") JPMTU=$(pmtu "$JMTU")
RAW_SIZE=$((PMTU + 16)) JRAW_SIZE=$((JPMTU + 16))
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$2"; }
echo "bench: veth pair, link MTU $MTU (IB path MTU $PMTU) and $JMTU (path MTU $JPMTU)," \
	"${SECS} s per run ($NSA, $NSB); workers $PIN_WORKERS," \
	"perf programs at ${BENCH_PERF_SCHED:-other} priority"

RAW64_SIZE=$((12 + 16 + 64 + 4))
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "bench: machine: ${cpu_model:-unknown CPU}, $(nproc) CPUs, kernel $(uname -r)," \
	"Debian $(cat /etc/debian_version 2>/dev/null || echo '?'), $(iperf3 --version | head -n 1)"
# Side A's parties (the receiving worker, sink, pong, iperf3 -s) on CPU 0,
# side B's (sender, blast, ping, iperf3 -c) on CPU 1.
PIN_A=() PIN_B=() TCP_PIN=()
if [ "$PIN_WORKERS" = pin ]; then
	PIN_A=(-C 0) PIN_B=(-C 1) TCP_PIN=("-A" "1,0")
fi

# ---- (1) raw AF_XDP ----
xraw_a() { ip netns exec "$NSA" "$XSK_RAW" "$@" "${PIN_A[@]}" -i "$IFA" -a 10.230.0.1 -o "$BPF_OBJ"; }
xraw_b() {
	ip netns exec "$NSB" "$XSK_RAW" "$@" "${PIN_B[@]}" -i "$IFB" -a 10.230.0.2 -A 10.230.0.1 \
		-M "$MAC_A" -o "$BPF_OBJ"
}
wait_started() {	# FILE PID: xsk_raw says " on " on stderr once its port is open
	for _ in $(seq 200); do
		grep -q ' on ' "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.05
	done
	echo "bench: xsk_raw did not start:" >&2; cat "$1" >&2; return 1
}
# raw_ping VAR [--sleep]: a 64 B XSK ping-pong; VAR = ping's result line.
raw_ping() {
	local var=$1 spid line
	shift
	xraw_a pong "$@" -t 120 > "$TMP/pong.out" 2> "$TMP/pong.err" &
	spid=$!; DAEMON_PIDS+=("$spid")
	wait_started "$TMP/pong.err" "$spid"
	line=$(xraw_b ping "$@" -s 64 -n "$LAT_ITERS" 2> "$TMP/ping.err")
	wait "$spid" || true
	printf -v "$var" '%s' "$line"
}
# blast SIZE DATA BUDGET [SECS]: a raw blast of SIZE-byte UDP payloads into
# a sink, with a TX budget of BUDGET (32: the kernel's default, not set);
# 1 if the blast failed (a budget the kernel does not take). Sets
# SINK_LINE, BLAST_LINE, RAW_GBPS (DATA bytes per frame received, in
# Gb/s), RAW_MPPS and RAW_LOSS (what the sink missed and why).
blast() {
	local spid budget=() rc=0
	[ "$3" = 32 ] || budget=(--tx-budget "$3")
	xraw_a sink -t $((${4:-$SECS} + 30)) > "$TMP/sink.out" 2> "$TMP/sink.err" &
	spid=$!; DAEMON_PIDS+=("$spid")
	wait_started "$TMP/sink.err" "$spid"
	BLAST_LINE=$(xraw_b blast -s "$1" -t "${4:-$SECS}" "${budget[@]}" 2> "$TMP/blast.err") || rc=1
	if [ $rc = 1 ]; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		return 1
	fi
	wait "$spid"
	SINK_LINE=$(grep '^xsk_raw: ' "$TMP/sink.out")
	RAW_GBPS=$(awk -v f="$(field frames "$SINK_LINE")" -v s="$(field seconds "$SINK_LINE")" \
		-v d="$2" 'BEGIN { printf "%.3f", (s > 0 ? f * d * 8 / s / 1e9 : 0) }')
	RAW_MPPS=$(field mpps "$SINK_LINE")
	RAW_LOSS="lost $(field lost "$SINK_LINE") (ring_full $(field ring_full "$SINK_LINE")," \
	RAW_LOSS+=" fill_empty $(field fill_empty "$SINK_LINE"))"
}
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
# best_blast SIZE DATA: blast with each TX budget of BENCH_TX_BUDGETS and
# keep the run that moved the most (its variables, and BEST_BUDGET).
best_blast() {
	local b g=0 keep=()
	for b in $TX_BUDGETS; do
		blast "$1" "$2" "$b" || { echo "bench: TX budget $b: $(tail -n 1 "$TMP/blast.err")" >&2; continue; }
		gt "$RAW_GBPS" "$g" || continue
		g=$RAW_GBPS
		keep=("$SINK_LINE" "$BLAST_LINE" "$RAW_GBPS" "$RAW_MPPS" "$RAW_LOSS" "$b")
	done
	[ ${#keep[@]} != 0 ] || { echo "bench: no raw blast ran" >&2; exit 1; }
	SINK_LINE=${keep[0]} BLAST_LINE=${keep[1]} RAW_GBPS=${keep[2]} RAW_MPPS=${keep[3]}
	RAW_LOSS=${keep[4]} BEST_BUDGET=${keep[5]}
}
raw_lat() {	# RAW_P50, RAW_P99 (busy), SLEEP_LINE (both ends in poll())
	raw_ping PING_LINE
	RAW_P50=$(field p50_us "$PING_LINE")
	RAW_P99=$(field p99_us "$PING_LINE")
	# For context: what two thread wakeups per round trip cost here.
	raw_ping SLEEP_LINE --sleep
}

# ---- (2) vrdmad ----
CONF_A=$(write_conf "" "[vm a]
gid = 10.230.0.11
socket = $TMP/a.sock" a.conf)
CONF_B=$(CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock write_conf "" "[vm b]
gid = 10.230.0.12
socket = $TMP/b.sock" b.conf)
sed -i 's/^log_level = debug/log_level = warning/' "$CONF_A" "$CONF_B"
# Each daemon's worker on a CPU of its own (worker_cpus), as a host gives
# its polling data plane; the perf programs run wherever the scheduler
# puts them, as a guest's vCPUs would.
if [ "$PIN_WORKERS" = pin ]; then
	sed -i 's/^\[daemon\]$/&\nworker_cpus = 0/' "$CONF_A"
	sed -i 's/^\[daemon\]$/&\nworker_cpus = 1/' "$CONF_B"
fi

# perf TEST ARGS...: the server on a, the client on b; the client's output.
PORT=18515
perf() {
	local test=$1 spid
	shift
	PORT=$((PORT + 1))
	ip netns exec "$NSA" timeout 120 "${PERF_SCHED[@]}" "$VRDMA_PERF" "$test" -d "$TMP/a.sock" -x 0 \
		-p "$PORT" "$@" > "$TMP/server.out" 2>&1 &
	spid=$!
	wait_listen "$NSA" "$PORT" || true
	ip netns exec "$NSB" timeout 120 "${PERF_SCHED[@]}" "$VRDMA_PERF" "$test" -d "$TMP/b.sock" -x 0 -p "$PORT" "$@" \
		10.230.0.1 > "$TMP/client.out" 2>&1 || { cat "$TMP/client.out" "$TMP/server.out" >&2; return 1; }
	wait "$spid" || { cat "$TMP/server.out" >&2; return 1; }
	cat "$TMP/client.out"
}
# The result row's average BW (Gb/s with --report_gbits), its message rate (Mpps).
bw_avg() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { print v }'; }
msg_rate() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $5 } END { print v }'; }
start_daemons() { start_daemon "$CONF_A"; start_daemon_b "$CONF_B"; }
stop_daemons() {
	stop_daemon
	DPID=$DPID_B stop_daemon
}

# ---- (3) TCP ----
# tcp_run OPTS [SECS]: Gb/s of iperf3 with OPTS (words), pinned, 1 s omitted
tcp_run() {
	local -a opts
	read -r -a opts <<< "$1"
	ip netns exec "$NSA" iperf3 -s -1 -B 10.230.0.1 > /dev/null 2>&1 &
	DAEMON_PIDS+=("$!")
	wait_listen "$NSA" 5201 || true
	ip netns exec "$NSB" iperf3 -c 10.230.0.1 -t "${2:-$SECS}" -O 1 "${TCP_PIN[@]}" "${opts[@]}" -J |
		jq -r '.end.sum_received.bits_per_second / 1e9 * 1000 | round / 1000'
}
# best_tcp: the most Gb/s of iperf3 with each option set of BENCH_TCP_OPTS
# into TCP_GBPS, the options into TCP_BEST
best_tcp() {
	local o g
	local -a all
	IFS='|' read -r -a all <<< "$TCP_OPTS"
	TCP_GBPS=0 TCP_BEST=
	for o in "${all[@]}"; do
		g=$(tcp_run "$o") || g=0
		if gt "$g" "$TCP_GBPS"; then TCP_GBPS=$g TCP_BEST=$o; fi
	done
}

median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# range VALUES...: "min-max"
range() { tr ' ' '\n' <<< "$*" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
# spread VALUES...: "median (min-max)"
spread() { echo "$(median <<< "$*") ($(range "$@"))"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# One side of a round at each MTU: the baselines (raw_side, jraw_side) and
# vrdmad (rc_side, jrc_side).
raw_side() {
	best_blast "$RAW_SIZE" "$PMTU"
	R_G=$RAW_GBPS R_LINE=$SINK_LINE R_BLAST=$BLAST_LINE R_LOSS=$RAW_LOSS R_B=$BEST_BUDGET
	best_blast "$RAW64_SIZE" 64
	R_M=$RAW_MPPS R64_LINE=$SINK_LINE R64_LOSS=$RAW_LOSS R64_B=$BEST_BUDGET
	raw_lat
	best_tcp
	R_T=$TCP_GBPS R_TO=$TCP_BEST
}
rc_side() {
	local round=$1 test size
	start_daemons
	if [ "$round" = 1 ]; then
		for test in write_bw send_bw; do
			for size in 64 4096; do
				GOOD[$test.$size]=$(perf "$test" -s "$size" -D "$SECS" --report_gbits | bw_avg)
			done
		done
		GOOD[send_bw.1048576]=$(perf send_bw -s 1048576 -D "$SECS" --report_gbits | bw_avg)
	fi
	C_W=$(perf write_bw -s 1048576 -D "$SECS" --report_gbits | bw_avg)
	C_W8=$(perf write_bw -s 1048576 -q 8 -D "$SECS" --report_gbits | bw_avg)
	C_M=$(perf write_bw -s 64 -D "$SECS" | msg_rate)
	LAT=$(perf send_lat -s 64 -n "$LAT_ITERS")
	# ABI v2: the same two on rings (libvrdma with VRDMA_RINGS=1)
	C_MV2=$(VRDMA_RINGS=1 perf write_bw -s 64 -D "$SECS" | msg_rate)
	LATV2=$(VRDMA_RINGS=1 perf send_lat -s 64 -n "$LAT_ITERS")
	stop_daemons
	# perftest reports half a round trip (t_typical is its median): double
	# it, as xsk_raw measures whole ones.
	C_P50=$(awk '$1 == 64 && NF >= 8 { print $5 * 2 }' <<< "$LAT")
	C_P99=$(awk '$1 == 64 && NF >= 8 { print $8 * 2 }' <<< "$LAT")
	C_P50V2=$(awk '$1 == 64 && NF >= 8 { print $5 * 2 }' <<< "$LATV2")
}
jraw_side() {
	best_blast "$JRAW_SIZE" "$JPMTU"
	J_G=$RAW_GBPS J_LINE=$SINK_LINE J_LOSS=$RAW_LOSS J_B=$BEST_BUDGET
	best_tcp
	J_T=$TCP_GBPS J_TO=$TCP_BEST
}
jrc_side() {
	start_daemons
	J_W=$(perf write_bw -s 1048576 -D "$SECS" --report_gbits | bw_avg)
	J_S=$(perf send_bw -s 1048576 -D "$SECS" --report_gbits | bw_avg)
	grep -q "^ Mtu             : $JPMTU\[B\]$" "$TMP/client.out" ||
		{ echo "bench: the RC run at MTU $JMTU did not use path MTU $JPMTU:" >&2; cat "$TMP/client.out" >&2; exit 1; }
	stop_daemons
}

declare -A GOOD
for v in RAW_G RC_G Q8 TCP_G RAW_M RC_M RAW_L50 RAW_L99 SLEEP_L50 SLEEP_L99 RC_L50 RC_L99 \
	JRAW_G JW JS JTCP W_R L_R JW_R JV_R JT_R M_R Q_R MV2_R LV2_R MV2V1_R; do
	declare -a "$v=()"
done
for round in $(seq "$ROUNDS"); do
	if [ $((round % 2)) = 1 ]; then
		order="baselines first"
		raw_side; rc_side "$round"
		link_mtu "$JMTU"; jraw_side; jrc_side
	else
		order="vrdmad first"
		rc_side "$round"; raw_side
		link_mtu "$JMTU"; jrc_side; jraw_side
	fi
	link_mtu "$MTU"
	RAW_G+=("$R_G") RC_G+=("$C_W") Q8+=("$C_W8") TCP_G+=("$R_T") RAW_M+=("$R_M") RC_M+=("$C_M")
	RAW_L50+=("$RAW_P50") RAW_L99+=("$RAW_P99") RC_L50+=("$C_P50") RC_L99+=("$C_P99")
	SLEEP_L50+=("$(field p50_us "$SLEEP_LINE")") SLEEP_L99+=("$(field p99_us "$SLEEP_LINE")")
	JRAW_G+=("$J_G") JW+=("$J_W") JS+=("$J_S") JTCP+=("$J_T")
	W_R+=("$(ratio "$C_W" "$R_G")") L_R+=("$(ratio "$C_P50" "$RAW_P50")")
	M_R+=("$(ratio "$C_M" "$R_M")") Q_R+=("$(ratio "$C_W8" "$C_W")")
	MV2_R+=("$(ratio "$C_MV2" "$R_M")") LV2_R+=("$(ratio "$C_P50V2" "$RAW_P50")")
	MV2V1_R+=("$(ratio "$C_MV2" "$C_M")")
	JW_R+=("$(ratio "$J_W" "$J_G")") JV_R+=("$(ratio "$J_W" "$C_W")") JT_R+=("$(ratio "$J_W" "$J_T")")
	echo "bench: round $round ($order): raw $R_G Gb/s (budget $R_B; sink $R_LOSS)," \
		"RC write 1 MiB $C_W Gb/s, on 8 QPs $C_W8 Gb/s, TCP $R_T Gb/s ($R_TO);" \
		"RTT p50 raw $RAW_P50 us, RC $C_P50 us; raw $RAW64_SIZE B $R_M Mpps (budget $R64_B;" \
		"sink $R64_LOSS), RC write 64 B $C_M Mpps (rings $C_MV2 Mpps, RTT p50 $C_P50V2 us);" \
		"MTU $JMTU: raw $J_G Gb/s (budget $J_B;" \
		"sink $J_LOSS), RC write 1 MiB $J_W Gb/s, send $J_S Gb/s, TCP $J_T Gb/s ($J_TO)"
done

echo
printf '%-50s %s\n' "path (median of $ROUNDS rounds, range)" "goodput Gb/s"
printf '%-50s %s\n' "raw AF_XDP, $RAW_SIZE B frames ($PMTU B data)" "$(spread "${RAW_G[@]}")"
for test in write_bw send_bw; do
	for size in 64 4096 1048576; do
		v=${GOOD[$test.$size]}
		[ "$test.$size" != write_bw.1048576 ] || v=$(spread "${RC_G[@]}")
		printf '%-50s %s\n' "vrdma RC ${test%_bw}, $size B" "$v"
	done
done
printf '%-50s %s\n' "vrdma RC write, 1048576 B, 8 QPs" "$(spread "${Q8[@]}")"
printf '%-50s %s\n' "kernel TCP (iperf3, the best of BENCH_TCP_OPTS)" "$(spread "${TCP_G[@]}")"
printf '%-50s %s\n' "MTU $JMTU: raw AF_XDP, $JRAW_SIZE B ($JPMTU B data)" "$(spread "${JRAW_G[@]}")"
printf '%-50s %s\n' "MTU $JMTU: vrdma RC write, 1048576 B" "$(spread "${JW[@]}")"
printf '%-50s %s\n' "MTU $JMTU: vrdma RC send, 1048576 B" "$(spread "${JS[@]}")"
printf '%-50s %s\n' "MTU $JMTU: kernel TCP (iperf3, the best)" "$(spread "${JTCP[@]}")"
printf '%-50s %s\n' "raw AF_XDP $RAW64_SIZE B frames, Mpps received" "$(spread "${RAW_M[@]}")"
printf '%-50s %s\n' "vrdma RC write 64 B, Mpps (messages)" "$(spread "${RC_M[@]}")"
printf '%-50s %s\n' "raw XSK ping-pong 64 B, RTT p50 / p99 us" \
	"$(spread "${RAW_L50[@]}") / $(spread "${RAW_L99[@]}")"
printf '%-50s %s\n' "raw XSK ping-pong 64 B, poll() waits" \
	"$(spread "${SLEEP_L50[@]}") / $(spread "${SLEEP_L99[@]}")"
printf '%-50s %s\n' "vrdma RC SEND ping-pong 64 B" "$(spread "${RC_L50[@]}") / $(spread "${RC_L99[@]}")"
echo "(the 64 B and 4 KiB rows and send 1 MiB at MTU $MTU are round 1's; RC round trips are"
echo " perftest's send_lat t_typical and 99% percentile, doubled; raw and TCP: the best of"
echo " their settings in each round, which the round lines name)"
echo
echo "$R_LINE"
echo "$R_BLAST"
echo "$R64_LINE"
echo "$J_LINE"
echo "$PING_LINE"
echo "$SLEEP_LINE"
line() {	# NAME RATIOS...
	local name=$1
	shift
	echo "bench: $name ratio=$(median <<< "$*") range=$(range "$@") rounds=$*"
}
line write_1MiB_vs_raw "${W_R[@]}"
line send_64B_lat_vs_raw "${L_R[@]}"
line jumbo_write_1MiB_vs_raw "${JW_R[@]}"
line jumbo_vs_1024_write_1MiB "${JV_R[@]}"
line jumbo_write_1MiB_vs_tcp "${JT_R[@]}"
line write_64B_rate_vs_raw "${M_R[@]}"
line write_1MiB_8qp_vs_1qp "${Q_R[@]}"
line write_64B_rate_v2_vs_raw "${MV2_R[@]}"
line send_64B_lat_v2_vs_raw "${LV2_R[@]}"
line write_64B_rate_v2_vs_v1 "${MV2V1_R[@]}"
