#!/bin/bash
# Restarts that keep every VM's RDMA state (docs/restart.md, level 2), under
# fdstore.py, a stand-in for systemd's fd store (tests/systemd/nspawn.sh
# runs the real one): vrdmad restarted every few seconds under a
# data-checked RC ping-pong between two VMs (libvrdma front ends, which
# never reconnect: one lost connection ends the run), with the gap of each
# restart measured, on virtqueues and then on rings (ABI v2); then a crash
# while saving, a plain crash, and a stop.
#
#   netns vrA-ID                                            netns vrB-ID
#   +--------------------------------------------------+    +-----------+
#   | fdstore.py (notify socket, fd store) -> vrdmad    |    | vB-ID     |
#   |   on vA-ID (XDP), vm alpha .11, vm beta .12       |<-->| 10.207.0.2|
#   |   vrdma-pingpong -c server (alpha) <-> client (beta)|  +-----------+
#   +--------------------------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"
need_pingpong

ROUNDS=${RESTART_ROUNDS:-6}
setup_pair "10.207.0.1/24" "10.207.0.2/24"
CONF=$(write_conf "" "$(vm_section alpha 10.207.0.11)
$(vm_section beta 10.207.0.12)" restart.conf)
echo "restart: vrdmad restarted under a ping-pong, its state kept ($NSA)"
check "vrdmad runs under the stand-in manager" start_managed "$NSA" "$CONF"

PORT=18517
SIZE=4096
# The ping-pongs last ~30 s (and ~20 s on rings) at the rate a short one has
# here (tests/pp-iters.sh): 6 restarts 1.5 s apart, with their gaps, in the
# first half. RESTART_ITERS sets a count instead.
ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/alpha.sock" -p $((PORT + 3)) -s "$SIZE" \
	-n 5000 -c -e > "$TMP/cal.srv" 2>&1 &
PSRV=$!
wait_listen "$NSA" $((PORT + 3))
ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/beta.sock" -p $((PORT + 3)) -s "$SIZE" \
	-n 5000 -c -e 127.0.0.1 > "$TMP/cal.cli" 2>&1 || true
wait "$PSRV" || true
ITERS=${RESTART_ITERS:-$("$HERE/pp-iters.sh" 30 20000 300000 < "$TMP/cal.cli")}
echo "  a ping-pong of 5000 here: $(grep -h 'iters in' "$TMP/cal.cli")"
ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/alpha.sock" -p "$PORT" -s "$SIZE" \
	-n "$ITERS" -c -e > "$TMP/pp.srv" 2> "$TMP/pp.srv.err" &
PSRV=$!
wait_listen "$NSA" "$PORT"
ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/beta.sock" -p "$PORT" -s "$SIZE" \
	-n "$ITERS" -c -e 127.0.0.1 > "$TMP/pp.cli" 2> "$TMP/pp.cli.err" &
PCLI=$!

# Restart while both run; each start must restore both VMs.
gaps=() counts=() stops=()
for r in $(seq "$ROUNDS"); do
	sleep 1.5
	kill -0 "$PCLI" 2>/dev/null || break
	manager restart
	counts+=("$(grep '^start' <<< "$LAST" | awk '{ print $3 }')")
	stops+=("$(grep '^exit' <<< "$LAST" | awk '{ print $3 }')")
done
wait "$PSRV" && SRC=0 || SRC=$?
wait "$PCLI" && CRC=0 || CRC=$?
n=$(grep -c 'restored as vrdmad' "$DLOG" || true)
mapfile -t gaps < <(restore_gaps)
echo "  restarts: ${#counts[@]}; fds handed over each time: ${counts[*]}"
echo "  the ping-pong: $(grep -h 'iters in' "$TMP/pp.cli")"
echo "  SIGTERM to exit (ms): ${stops[*]}"
echo "  gaps (ms, saved to restored, per VM): ${gaps[*]}"
check "the ping-pong outlived $ROUNDS restarts (server $SRC, client $CRC)" \
	test "$SRC" = 0 -a "$CRC" = 0 -a "${#counts[@]}" = "$ROUNDS"
check "data checked: $ITERS iterations of $SIZE bytes" \
	grep -qE "^$((SIZE * ITERS * 2)) bytes in" "$TMP/pp.cli"
check "each restart restored both VMs ($n of $((2 * ROUNDS)))" test "$n" = $((2 * ROUNDS))
check "the store holds as many fds after each restart" \
	test "$(printf '%s\n' "${counts[@]}" | sort -u | wc -l)" = 1
all_restored() {
	ctl status --json | jq -e '[.vms[].start | startswith("restored")] | all' > /dev/null
}
check "status says each VM was restored" all_restored

# A crash while saving, under a second ping-pong: alpha's fds and state
# stored whole, the manager aborts vrdmad at beta's second fd: alpha is
# restored, beta (fds without a state) starts anew, its fds closed.
long_pingpong "$TMP/alpha.sock" "$TMP/beta.sock" $((PORT + 1))
sleep 1
na=$(grep '^start' "$MLOG" | tail -1 | tr ' ' '\n' | grep -c '^vm\.alpha\.' || true)
mark=$(wc -l < "$DLOG")
manager "abort-at $((na + 2))"
tail -n +"$((mark + 1))" "$DLOG" > "$TMP/since.log"	# the next vrdmad's start
aborted() { grep -q '^store '"$((na + 2))"'$' <<< "$LAST" && grep -q '^start' <<< "$LAST"; }
check "aborted while saving (at beta's second fd: $((na + 2)) kept), it starts again" aborted
check "aborted while saving: alpha, saved whole, is restored" grep -q 'vm alpha: restored' "$TMP/since.log"
beta_afresh() {
	! grep -q 'vm beta: restored' "$TMP/since.log" &&
		grep -q 'closed [0-9]* fd(s) of the last vrdmad' "$TMP/since.log"
}
check "aborted while saving: beta, cut off, starts anew and its fds are closed" beta_afresh
kill "$LSRV" "$LCLI" 2>/dev/null || true
wait "$LSRV" "$LCLI" 2>/dev/null || true

# The same on ABI v2 (VRDMA_RINGS=1: doorbell pages, rings, the event queue
# for -e), state format 2: three restarts under a data-checked ping-pong.
RROUNDS=3 RITERS=${RESTART_ITERS:-$("$HERE/pp-iters.sh" 20 20000 300000 < "$TMP/cal.cli")}
VRDMA_RINGS=1 ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/alpha.sock" -p $((PORT + 2)) \
	-s "$SIZE" -n "$RITERS" -c -e > "$TMP/pp.rsrv" 2> "$TMP/pp.rsrv.err" &
PSRV=$!
wait_listen "$NSA" $((PORT + 2))
VRDMA_RINGS=1 ip netns exec "$NSA" "$VRDMA_PINGPONG" -d "$TMP/beta.sock" -p $((PORT + 2)) \
	-s "$SIZE" -n "$RITERS" -c -e 127.0.0.1 > "$TMP/pp.rcli" 2> "$TMP/pp.rcli.err" &
PCLI=$!
before=$(grep -c 'restored as vrdmad' "$DLOG" || true)
rcounts=()
for r in $(seq "$RROUNDS"); do
	sleep 1.5
	kill -0 "$PCLI" 2>/dev/null || break
	manager restart
	rcounts+=("$(grep '^start' <<< "$LAST" | awk '{ print $3 }')")
done
wait "$PSRV" && SRC=0 || SRC=$?
wait "$PCLI" && CRC=0 || CRC=$?
n=$(( $(grep -c 'restored as vrdmad' "$DLOG" || true) - before ))
echo "  gaps on rings (ms): $(restore_gaps | tail -n $((2 * ${#rcounts[@]})) | tr '\n' ' ')"
check "rings: the ping-pong outlived $RROUNDS restarts (server $SRC, client $CRC)" \
	test "$SRC" = 0 -a "$CRC" = 0 -a "${#rcounts[@]}" = "$RROUNDS"
check "rings: data checked: $RITERS iterations of $SIZE bytes" \
	grep -qE "^$((SIZE * RITERS * 2)) bytes in" "$TMP/pp.rcli"
check "rings: each restart restored both VMs ($n of $((2 * RROUNDS)))" test "$n" = $((2 * RROUNDS))

# A crash: nothing saved, nothing restored, the store empty.
manager kill
check "after a crash every VM starts anew" \
	test "$(ctl status --json | jq -r '[.vms[].start] | unique | join(",")')" = new
check "after a crash the store is empty" grep -q '^start [0-9]* 0' <<< "$LAST"
manager stop
check "stop empties the store" grep -q '^store 0' <<< "$LAST"

no_sanitizer_report() { ! grep -l "Sanitizer\|runtime error" "$DLOG" "$TMP"/pp.*; }
check "no sanitizer report from vrdmad or vrdma-pingpong" no_sanitizer_report
summary
