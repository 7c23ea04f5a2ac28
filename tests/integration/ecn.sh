#!/bin/bash
# ECN and CNPs between two daemons (docs/congestion.md, IBA annex A17.9):
# the bridge in the middle plays a switch whose queue towards B is filling,
# marking a share of the RoCE frames it forwards there CE (nft, as a switch
# with ECN marking would; only ECN-capable frames). B must answer with CNPs,
# rate-limited per QP, that reach A's QP, which cuts its window; tshark
# must decode the CNPs on the bridge. Without marks, nothing of that.
#
#   netns vrA-ID              netns vrC-ID (bridge)              netns vrB-ID
#   +---------------------+   +---------------------------+   +---------------------+
#   | vrdmad A            |   |  vA-IDp --- br0 --- vB-IDp|   | vrdmad B,           |
#   |  vm alpha .11       |   |  nft: CE on 10 % of ECT   |   |  workers = 2        |
#   |  vrdma-perf client  |   |  RoCE frames to .12;      |   |  vm beta .12        |
#   | vA-ID 10.215.0.1/.11|<->|  tshark captures here     |<->| vB-ID 10.215.0.2/.12|
#   +---------------------+   +---------------------------+   +---------------------+
set -e
source "$(dirname "$0")/../lib.sh"
: "${VRDMA_PERF:=$HERE/../build/asan/vrdma-perf}"

two_daemons 10.215.0
echo "ecn: CE marks on the bridge, CNPs back ($NSA, $NSC, $NSB)"
start_daemon "$CONF_A"
start_daemon_b "$CONF_B"

# mark PCT: the bridge marks CE on PCT % of the ECN-capable RoCE frames to
# beta (0: no rule)
mark() {
	ip netns exec "$NSC" nft delete table bridge vrdma_ecn 2> /dev/null || true
	[ "$1" = 0 ] || ip netns exec "$NSC" nft -f - <<-EOF
		table bridge vrdma_ecn {
			chain forward {
				type filter hook forward priority 0;
				ip daddr 10.215.0.12 udp dport 4791 ip ecn ect0 numgen random mod 100 < $1 counter ip ecn set ce
			}
		}
	EOF
}

# write_run NAME: vrdma-perf write_bw 1 MiB for 3 s, alpha to beta, while
# tshark captures RoCE on the bridge into $TMP/NAME.pcap and both daemons'
# counters are sampled (a VM's live only while its program is connected)
# into $TMP/NAME.a and $TMP/NAME.b, one JSON line per sample.
write_run() {
	local cap sampler rc=0
	# a 64 MiB capture buffer holds the whole run: a loaded machine
	# (the check's cache builds beside it) made dumpcap drop frames
	ip netns exec "$NSC" timeout 20 tshark -q -i br0 -f 'udp port 4791' -s 128 -B 64 \
		-w "$TMP/$1.pcap" > "$TMP/$1.tshark" 2>&1 &
	cap=$!
	for _ in $(seq 50); do grep -q Capturing "$TMP/$1.tshark" && break; sleep 0.1; done
	( while sleep 0.2; do
		ctl stats --json 2> /dev/null | jq -c '.vms[0].device.transport' >> "$TMP/$1.a"
		ctlb stats --json 2> /dev/null | jq -c '.vms[] | select(.name == "beta") |
			.device.transport' >> "$TMP/$1.b"
	done ) &
	sampler=$!
	tool_pair $((19500 + NTEST)) "$VRDMA_PERF" write_bw -s 1048576 -D 3 -x 0 --report_gbits ||
		rc=1
	kill "$sampler" 2> /dev/null || true
	wait "$sampler" 2> /dev/null || true
	sleep 0.5
	kill -INT "$cap" 2> /dev/null || true
	wait "$cap" 2> /dev/null || true
	BW=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { print v }' "$TMP/cli.out")
	return $rc
}
# most NAME SIDE COUNTER: the largest sample of a counter
most() { jq -s "map(.$3 // 0) | max // 0" "$TMP/$1.$2"; }
CNP='udp.payload[0] == 0x81'
# frames NAME FILTER: how many captured frames match a display filter
frames() { tshark -r "$TMP/$1.pcap" -Y "$2" 2> /dev/null | wc -l; }
# dropped NAME: the frames NAME's capture says it dropped (0 if none)
dropped() {
	sed -n 's/^\([0-9][0-9]*\) packets\{0,1\} dropped.*/\1/p' "$TMP/$1.tshark" |
		awk '{ n += $1 } END { print n + 0 }'
}

unmarked() {
	mark 0
	write_run plain || return 1
	echo "    $BW Gb/s; A sent ECT(0): $(frames plain 'ip.src == 10.215.0.11 && ip.dsfield.ecn == 2')" \
		"of $(frames plain 'ip.src == 10.215.0.11') frames;" \
		"B saw CE $(most plain b ecn_ce_received), sent $(most plain b cnp_sent) CNPs"
	PLAIN_BW=$BW
	[ "$(frames plain 'ip.src == 10.215.0.11 && ip.dsfield.ecn != 2')" = 0 ] &&
		[ "$(frames plain 'ip.src == 10.215.0.11')" -gt 1000 ] &&
		[ "$(most plain b ecn_ce_received)" = 0 ] && [ "$(most plain b cnp_sent)" = 0 ] &&
		[ "$(frames plain "$CNP")" = 0 ]
}
check "no marks: A's frames go out ECN-capable, B sends no CNP" unmarked

marked() {
	local ce sent got cuts wire lost
	mark 10
	write_run marked || return 1
	ce=$(most marked b ecn_ce_received) sent=$(most marked b cnp_sent)
	got=$(most marked a cnp_received) cuts=$(most marked a cc_cnp_cuts)
	wire=$(frames marked "$CNP && ip.src == 10.215.0.12") lost=$(dropped marked)
	echo "    $BW Gb/s (unmarked: $PLAIN_BW); the bridge marked" \
		"$(ip netns exec "$NSC" nft list table bridge vrdma_ecn | grep -o 'packets [0-9]*');" \
		"B saw CE $ce, sent $sent CNPs ($wire on the wire, the capture dropped $lost frames);" \
		"A got $got, cut its window $cuts times"
	# One CNP per QP per 50 us at most: at most 3 s / 50 us of them. The
	# counters are samples, each side's last one taken before its program
	# left (B's may miss CNPs that A's counts): the wire is the referee,
	# give or take the frames its capture says it dropped.
	[ "$ce" -gt 0 ] && [ "$sent" -gt 0 ] && [ "$sent" -lt "$ce" ] &&
		[ "$sent" -le $((wire + lost)) ] && [ "$wire" -le 60000 ] && [ "$got" -gt 0 ] &&
		[ "$got" -le $((wire + lost)) ] &&
		[ "$cuts" -gt 0 ] && [ "$cuts" -le "$got" ]
}
check "10 % marked CE: B answers with CNPs, A's QP cuts its window" marked

# Debian 12's tshark (4.0) dissects a CNP's BTH ("Opcode: Unknown (129)")
# without a name for it: CNPs are found by their first byte.
decoded() {
	local n bad
	n=$(frames marked "$CNP && ip.src == 10.215.0.12 && infiniband.bth.destqp")
	bad=$(frames marked "$CNP && _ws.malformed")
	echo "    tshark: $n CNPs from B, $bad malformed; the first (DS field, BTH dest QP, payload):"
	tshark -r "$TMP/marked.pcap" -Y "$CNP" -T fields -e ip.dsfield -e infiniband.bth.destqp \
		-e udp.payload 2> /dev/null | head -n 1 | sed 's/^/    | /'
	# DSCP 48, ECT(0) and BECN, as a ConnectX-4 Lx sends them
	[ "$n" -gt 0 ] && [ "$bad" = 0 ] &&
		[ "$(frames marked "$CNP && ip.dsfield == 0xc2 && udp.payload[4] == 0x40")" = "$n" ]
}
check "tshark decodes the CNPs (DSCP 48, ECT(0), BECN), none malformed" decoded

mark 0
RC=dead
kill -0 "$DPID" 2> /dev/null && kill -0 "$DPID_B" 2> /dev/null && both_exit_0 && RC=0
check "both daemons exit 0, no sanitizer report" \
	eval '[ "$RC" = 0 ] && ! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$DLOG" "$DLOG_B"'
DAEMON_PIDS=()
summary ecn
