#!/bin/bash
# `make bench`, end to end on a veth pair: vrdmad's RC goodput and latency
# next to what raw AF_XDP and kernel TCP do on the same link.
#
#   netns vrA-ID                                netns vrB-ID
#   +-------------------------------+           +-------------------------------+
#   | vA-ID 10.230.0.1 (+ .11)      |<--veth--->| vB-ID 10.230.0.2 (+ .12)      |
#   | (1) xsk_raw sink / pong       |           | (1) xsk_raw blast / ping      |
#   | (2) vrdmad, vm a (.11)        |           | (2) vrdmad, vm b (.12)        |
#   |     vrdma-perf server         |           |     vrdma-perf client         |
#   | (4) iperf3 -s                 |           | (4) iperf3 -c                 |
#   +-------------------------------+           +-------------------------------+
#
# (1) raw AF_XDP goodput (UDP payload) at the frame size RC uses at the path
#     MTU, its 64 B packet rate, and a raw XSK ping-pong; (2) vrdma-perf RC
#     WRITE and SEND goodput at 64 B, 4 KiB and 1 MiB, and the 64 B WRITE
#     message rate; (3) RC SEND ping-pong latency; (4) TCP. Then (5) the link
#     at MTU 9000 (path MTU 4096, multi-buffer AF_XDP): raw goodput at RC's
#     frame size there, RC WRITE and SEND 1 MiB, and TCP. The daemons' CPU
#     time (utime + stime from /proc/PID/stat) per GB of frames they moved in
#     the 1 MiB WRITE runs stands beside the raw sender's and receiver's.
# Then a table and the lines, each the median of the rounds' ratios:
#   bench: write_1MiB_vs_raw ratio=R     (RC WRITE 1 MiB / raw goodput)
#   bench: send_64B_lat_vs_raw ratio=R   (RC 64 B SEND RTT p50 / raw XSK RTT p50)
#   bench: jumbo_write_1MiB_vs_raw ratio=R   (at path MTU 4096, against raw
#                                             AF_XDP at the same frame size)
#   bench: jumbo_vs_1024_write_1MiB ratio=R  (RC WRITE 1 MiB, path MTU 4096 / 1024)
#   bench: jumbo_write_1MiB_vs_tcp ratio=R   (at MTU 9000, against iperf3)
#   bench: write_64B_rate_vs_raw ratio=R     (RC WRITE 64 B Mpps / raw 64 B Mpps)
#   bench: write_1MiB_8qp_vs_1qp ratio=R     (RC WRITE 1 MiB on 8 QPs at once /
#                                             on 1 QP, next to each other: the
#                                             8 share one congestion window)
# A benchmark: it fails only when something breaks, never on a number.
#
# This machine has 2 cores for 2 daemons and 2 perf programs, where a real
# host gives the daemon its own cores and the guests theirs. Both the perf
# programs (libvrdma's poll) and the daemons' workers (idle_spin_us, the
# default 50) yield the core while they wait, so whoever has work gets it.
# The perf programs run at normal priority, as a guest's vCPU does and as
# xsk_raw does; BENCH_PERF_SCHED=idle runs them at SCHED_IDLE instead (the
# bench before 2026-11-25), where they get a core only when a daemon's
# yield leaves it: 64 B message rates and round trips then measure the
# scheduler (RC SEND round trip 86 us against 9 us). Daemon A's worker runs
# on CPU 0 and B's on CPU 1 (worker_cpus); BENCH_WORKER_CPUS=none leaves
# them unpinned, and the scheduler then runs the receiving daemon on the
# sending one's core part of the time.
#
# Environment: VRDMAD VRDMACTL BPF_OBJ XSK_RAW VRDMA_PERF; BENCH_SECONDS (3),
# BENCH_MTU (1500, the link's), BENCH_JUMBO_MTU (9000), BENCH_LAT_ITERS
# (20000), BENCH_ROUNDS (3), BENCH_PERF_SCHED (other, or idle),
# BENCH_WORKER_CPUS (pin, or none; none on a machine of one CPU).
set -e
source "$(dirname "$0")/../lib.sh"
: "${XSK_RAW:?set XSK_RAW}" "${VRDMA_PERF:?set VRDMA_PERF}"
SECS=${BENCH_SECONDS:-3}
MTU=${BENCH_MTU:-1500}
JMTU=${BENCH_JUMBO_MTU:-9000}
LAT_ITERS=${BENCH_LAT_ITERS:-20000}
ROUNDS=${BENCH_ROUNDS:-3}
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

# ---- (1) raw AF_XDP ----
xraw_a() { ip netns exec "$NSA" "$XSK_RAW" "$@" -i "$IFA" -a 10.230.0.1 -o "$BPF_OBJ"; }
xraw_b() { ip netns exec "$NSB" "$XSK_RAW" "$@" -i "$IFB" -a 10.230.0.2 -A 10.230.0.1 -M "$MAC_A" -o "$BPF_OBJ"; }
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
# blast SIZE: a raw blast of SIZE-byte UDP payloads into a sink; SINK_LINE,
# BLAST_LINE, and the CPU seconds per GB of frames (42 bytes of headers
# each) that the sender sent (RAW_TX_CPU) and the sink received (RAW_RX_CPU).
blast() {
	local spid
	xraw_a sink -t $((SECS + 30)) > "$TMP/sink.out" 2> "$TMP/sink.err" &
	spid=$!; DAEMON_PIDS+=("$spid")
	wait_started "$TMP/sink.err" "$spid"
	BLAST_LINE=$(xraw_b blast -s "$1" -t "$SECS" 2> "$TMP/blast.err")
	wait "$spid"
	SINK_LINE=$(grep '^xsk_raw: ' "$TMP/sink.out")
	RAW_TX_CPU=$(per_gb "$(field cpu_s "$BLAST_LINE")" \
		"$(( $(field frames "$BLAST_LINE") * ($1 + 42) ))")
	RAW_RX_CPU=$(per_gb "$(field cpu_s "$SINK_LINE")" \
		"$(( $(field frames "$SINK_LINE") * ($1 + 42) ))")
}
per_gb() { awk -v c="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? c / (b / 1e9) : 0) }'; }
# raw: sets RAW_LINE RAW_GBPS RAW_CPU_TX/RX, RAW64_LINE RAW_MPPS, PING_LINE
# RAW_P50 RAW_P99 (round trips), SLEEP_LINE
raw() {
	blast "$RAW_SIZE"
	RAW_LINE=$SINK_LINE RAW_GBPS=$(field gbps "$SINK_LINE")
	RAW_CPU_TX=$RAW_TX_CPU RAW_CPU_RX=$RAW_RX_CPU
	blast 64
	RAW64_LINE=$SINK_LINE RAW_MPPS=$(field mpps "$SINK_LINE")

	raw_ping PING_LINE
	RAW_P50=$(field p50_us "$PING_LINE")
	RAW_P99=$(field p99_us "$PING_LINE")
	# For context: the same with both ends asleep in poll() between frames,
	# i.e. what two thread wakeups per round trip cost on this machine.
	raw_ping SLEEP_LINE --sleep
}

# ---- (2), (3) vrdmad ----
CONF_A=$(write_conf "" "[vm a]
gid = 10.230.0.11
socket = $TMP/a.sock" a.conf)
CONF_B=$(CONF_IF=$IFB CONF_CTL=$TMP/ctlB.sock write_conf "" "[vm b]
gid = 10.230.0.12
socket = $TMP/b.sock" b.conf)
sed -i 's/^log_level = debug/log_level = warning/' "$CONF_A" "$CONF_B"
# Each daemon's worker on a CPU of its own (worker_cpus), as a host gives
# its polling data plane, and as each xsk_raw end has one in effect; the
# perf programs run wherever the scheduler puts them.
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
# CPU seconds (utime + stime) of process $1 so far, from /proc/PID/stat
# (after the ")" of the name: state is field 1, utime 12, stime 13).
TICK=$(getconf CLK_TCK)
cpu_s() { sed 's/.*) //' "/proc/$1/stat" | awk -v t="$TICK" '{ printf "%.2f", ($12 + $13) / t }'; }
# daemon_write VAR: RC WRITE 1 MiB for SECS into VAR (Gb/s); the CPU seconds
# per GB of frames moved of the sending daemon (B: the client writes) and
# the receiving one (A) into DCPU_TX and DCPU_RX.
daemon_write() {
	local a0 b0 tx0 rx0 v
	a0=$(cpu_s "$DPID") b0=$(cpu_s "$DPID_B")
	tx0=$(ctlb stats --json | jq .port.tx_bytes) rx0=$(jstat .port.rx_bytes)
	v=$(perf write_bw -s 1048576 -D "$SECS" --report_gbits | bw_avg)
	DCPU_TX=$(per_gb "$(awk -v a="$b0" -v b="$(cpu_s "$DPID_B")" 'BEGIN { print b - a }')" \
		"$(( $(ctlb stats --json | jq .port.tx_bytes) - tx0 ))")
	DCPU_RX=$(per_gb "$(awk -v a="$a0" -v b="$(cpu_s "$DPID")" 'BEGIN { print b - a }')" \
		"$(( $(jstat .port.rx_bytes) - rx0 ))")
	printf -v "$1" '%s' "$v"
}
start_daemons() { start_daemon "$CONF_A"; start_daemon_b "$CONF_B"; }
stop_daemons() {
	stop_daemon
	DPID=$DPID_B stop_daemon
}
tcp() {	# Gb/s of one iperf3 stream for SECS
	ip netns exec "$NSA" iperf3 -s -1 -B 10.230.0.1 > /dev/null 2>&1 &
	DAEMON_PIDS+=("$!")
	wait_listen "$NSA" 5201 || true
	ip netns exec "$NSB" iperf3 -c 10.230.0.1 -t "$SECS" -J |
		jq -r '.end.sum_received.bits_per_second / 1e9 * 1000 | round / 1000'
}
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# This VM's speed drifts (raw goodput moves by a third from minute to
# minute), so each ratio is taken between runs next to each other: ROUNDS
# rounds of raw, then vrdmad; the lines give the median of the rounds'
# ratios. Round 1 also runs the whole goodput table.
declare -A GOOD
Q8=() Q_RATIOS=()
W_RATIOS=() L_RATIOS=() RAW_G=() RAW_L50=() RAW_L99=() RC_G=() RC_L50=() RC_L99=()
SLEEP_L50=() SLEEP_L99=() RAW_M=() RC_M=() M_RATIOS=() JRAW_G=() JW=() JS=() JTCP=()
JW_RATIOS=() JV_RATIOS=() JT_RATIOS=() CPU_RAW_TX=() CPU_RAW_RX=() CPU_D_TX=() CPU_D_RX=()
CPU_JRAW_TX=() CPU_JRAW_RX=() CPU_JD_TX=() CPU_JD_RX=()
for round in $(seq "$ROUNDS"); do
	raw
	start_daemons
	if [ "$round" = 1 ]; then
		for test in write_bw send_bw; do
			for size in 64 4096; do
				GOOD[$test.$size]=$(perf "$test" -s "$size" -D "$SECS" --report_gbits | bw_avg)
			done
		done
		GOOD[send_bw.1048576]=$(perf send_bw -s 1048576 -D "$SECS" --report_gbits | bw_avg)
	fi
	daemon_write W1M
	W8=$(perf write_bw -s 1048576 -q 8 -D "$SECS" --report_gbits | bw_avg)
	Q8+=("$W8") Q_RATIOS+=("$(ratio "$W8" "$W1M")")
	M64=$(perf write_bw -s 64 -D "$SECS" | msg_rate)
	LAT=$(perf send_lat -s 64 -n "$LAT_ITERS")
	stop_daemons
	# perftest reports half a round trip (t_typical is its median): double
	# it, as xsk_raw measures whole ones.
	RC_P50=$(awk '$1 == 64 && NF >= 8 { print $5 * 2 }' <<< "$LAT")
	RC_P99=$(awk '$1 == 64 && NF >= 8 { print $8 * 2 }' <<< "$LAT")
	RAW_G+=("$RAW_GBPS") RAW_L50+=("$RAW_P50") RAW_L99+=("$RAW_P99")
	SLEEP_L50+=("$(field p50_us "$SLEEP_LINE")") SLEEP_L99+=("$(field p99_us "$SLEEP_LINE")")
	RC_G+=("$W1M") RC_L50+=("$RC_P50") RC_L99+=("$RC_P99")
	W_RATIOS+=("$(ratio "$W1M" "$RAW_GBPS")")
	L_RATIOS+=("$(ratio "$RC_P50" "$RAW_P50")")
	RAW_M+=("$RAW_MPPS") RC_M+=("$M64") M_RATIOS+=("$(ratio "$M64" "$RAW_MPPS")")
	CPU_RAW_TX+=("$RAW_CPU_TX") CPU_RAW_RX+=("$RAW_CPU_RX")
	CPU_D_TX+=("$DCPU_TX") CPU_D_RX+=("$DCPU_RX")

	# ---- (5) the same link at MTU 9000: path MTU 4096, multi-buffer ----
	link_mtu "$JMTU"
	blast "$JRAW_SIZE"
	JRAW=$(field gbps "$SINK_LINE")
	CPU_JRAW_TX+=("$RAW_TX_CPU") CPU_JRAW_RX+=("$RAW_RX_CPU")
	start_daemons
	daemon_write JW1M
	JS1M=$(perf send_bw -s 1048576 -D "$SECS" --report_gbits | bw_avg)
	grep -q "^ Mtu             : $JPMTU\[B\]$" "$TMP/client.out" ||
		{ echo "bench: the RC run at MTU $JMTU did not use path MTU $JPMTU:" >&2; cat "$TMP/client.out" >&2; exit 1; }
	stop_daemons
	CPU_JD_TX+=("$DCPU_TX") CPU_JD_RX+=("$DCPU_RX")
	JT=$(tcp)
	link_mtu "$MTU"
	JRAW_G+=("$JRAW") JW+=("$JW1M") JS+=("$JS1M") JTCP+=("$JT")
	JW_RATIOS+=("$(ratio "$JW1M" "$JRAW")")
	JV_RATIOS+=("$(ratio "$JW1M" "$W1M")")
	JT_RATIOS+=("$(ratio "$JW1M" "$JT")")
	echo "bench: round $round: raw $RAW_GBPS Gb/s, RC write 1 MiB $W1M Gb/s, on 8 QPs $W8 Gb/s;" \
		"RTT p50 raw $RAW_P50 us, RC $RC_P50 us; 64 B raw $RAW_MPPS Mpps, RC write $M64 Mpps;" \
		"MTU $JMTU: raw $JRAW Gb/s, RC write 1 MiB $JW1M Gb/s, send $JS1M Gb/s, TCP $JT Gb/s;" \
		"CPU s/GB: raw tx $RAW_CPU_TX rx $RAW_CPU_RX, vrdmad tx ${CPU_D_TX[-1]} rx ${CPU_D_RX[-1]}" \
		"(MTU $JMTU: raw tx $RAW_TX_CPU rx $RAW_RX_CPU, vrdmad tx ${CPU_JD_TX[-1]} rx ${CPU_JD_RX[-1]})"
done

# ---- (4) TCP ----
TCP_GBPS=$(tcp)

echo
printf '%-44s %12s %16s %10s\n' "path (median of $ROUNDS rounds)" "goodput Gb/s" "RTT p50/p99 us" \
	"CPU s/GB"
printf '%-44s %12s %16s %10s\n' "raw AF_XDP, $RAW_SIZE B UDP payload" "$(median <<< "${RAW_G[*]}")" "" \
	"$(median <<< "${CPU_RAW_TX[*]}")/$(median <<< "${CPU_RAW_RX[*]}")"
for test in write_bw send_bw; do
	for size in 64 4096 1048576; do
		v=${GOOD[$test.$size]} c=
		if [ "$test.$size" = write_bw.1048576 ]; then
			v=$(median <<< "${RC_G[*]}")
			c="$(median <<< "${CPU_D_TX[*]}")/$(median <<< "${CPU_D_RX[*]}")"
		fi
		printf '%-44s %12s %16s %10s\n' "vrdma RC ${test%_bw}, $size B" "$v" "" "$c"
	done
done
printf '%-44s %12s\n' "vrdma RC write, 1048576 B, 8 QPs" "$(median <<< "${Q8[*]}")"
printf '%-44s %12s\n' "kernel TCP (iperf3, 1 stream)" "$TCP_GBPS"
printf '%-44s %12s %16s %10s\n' "MTU $JMTU: raw AF_XDP, $JRAW_SIZE B (multi-buffer)" \
	"$(median <<< "${JRAW_G[*]}")" "" "$(median <<< "${CPU_JRAW_TX[*]}")/$(median <<< "${CPU_JRAW_RX[*]}")"
printf '%-44s %12s %16s %10s\n' "MTU $JMTU: vrdma RC write, 1048576 B" "$(median <<< "${JW[*]}")" "" \
	"$(median <<< "${CPU_JD_TX[*]}")/$(median <<< "${CPU_JD_RX[*]}")"
printf '%-44s %12s\n' "MTU $JMTU: vrdma RC send, 1048576 B" "$(median <<< "${JS[*]}")"
printf '%-44s %12s\n' "MTU $JMTU: kernel TCP (iperf3, 1 stream)" "$(median <<< "${JTCP[*]}")"
printf '%-44s %12s\n' "raw AF_XDP 64 B, Mpps received" "$(median <<< "${RAW_M[*]}")"
printf '%-44s %12s\n' "vrdma RC write 64 B, Mpps (messages)" "$(median <<< "${RC_M[*]}")"
printf '%-36s %12s %16s\n' "raw XSK ping-pong 64 B" "" \
	"$(median <<< "${RAW_L50[*]}") / $(median <<< "${RAW_L99[*]}")"
printf '%-36s %12s %16s\n' "raw XSK ping-pong 64 B, poll() waits" "" \
	"$(median <<< "${SLEEP_L50[*]}") / $(median <<< "${SLEEP_L99[*]}")"
printf '%-36s %12s %16s\n' "vrdma RC SEND ping-pong 64 B" "" \
	"$(median <<< "${RC_L50[*]}") / $(median <<< "${RC_L99[*]}")"
echo "(the 64 B and 4 KiB rows and send 1 MiB at MTU $MTU are round 1's; RC round trips are"
echo " perftest's send_lat t_typical and 99% percentile, doubled; CPU s/GB: utime + stime"
echo " per GB of frames, sender/receiver: xsk_raw blast/sink, the client's/server's vrdmad)"
echo
echo "$RAW_LINE"
echo "$RAW64_LINE"
echo "$PING_LINE"
echo "$SLEEP_LINE"
echo "$BLAST_LINE"
echo "$SINK_LINE"
echo "bench: write_1MiB_vs_raw rounds=${W_RATIOS[*]}"
echo "bench: send_64B_lat_vs_raw rounds=${L_RATIOS[*]}"
echo "bench: jumbo_write_1MiB_vs_raw rounds=${JW_RATIOS[*]}"
echo "bench: jumbo_vs_1024_write_1MiB rounds=${JV_RATIOS[*]}"
echo "bench: jumbo_write_1MiB_vs_tcp rounds=${JT_RATIOS[*]}"
echo "bench: write_64B_rate_vs_raw rounds=${M_RATIOS[*]}"
echo "bench: write_1MiB_8qp_vs_1qp rounds=${Q_RATIOS[*]}"
echo "bench: write_1MiB_vs_raw ratio=$(median <<< "${W_RATIOS[*]}")"
echo "bench: send_64B_lat_vs_raw ratio=$(median <<< "${L_RATIOS[*]}")"
echo "bench: jumbo_write_1MiB_vs_raw ratio=$(median <<< "${JW_RATIOS[*]}")"
echo "bench: jumbo_vs_1024_write_1MiB ratio=$(median <<< "${JV_RATIOS[*]}")"
echo "bench: jumbo_write_1MiB_vs_tcp ratio=$(median <<< "${JT_RATIOS[*]}")"
echo "bench: write_64B_rate_vs_raw ratio=$(median <<< "${M_RATIOS[*]}")"
echo "bench: write_1MiB_8qp_vs_1qp ratio=$(median <<< "${Q_RATIOS[*]}")"
