#!/bin/bash
# systemctl restart under a VM that is using RDMA keeps its state (issue 29,
# level 2; docs/restart.md): vrdmad runs under fdstore.py, a stand-in for
# systemd's fd store (tests/systemd/nspawn.sh runs the real one), and is
# restarted every few seconds while perftest's bandwidth tests and a
# data-checked ibv_rc_pingpong run between the VM and Soft-RoCE. No
# program may see an error, ibv_asyncwatch no event, the VM's kernel log
# no report; vrdmad must say it restored the VM each time, with the gap.
#
# The picture is verbs.sh's: the VM (10.208.0.11, vrdma0, 2 vCPUs,
# slub_debug) and the Debian 12 guest with rxe0 (10.208.0.20).
#
# Environment: as verbs.sh; UPGRADE_RESTARTS (restarts per program, 3).
# Needs root. Exit 77 (SKIP) only when QEMU cannot run here.
set -e
source "$(dirname "$0")/lib.sh"

RESTARTS=${UPGRADE_RESTARTS:-3}
VM_MANAGED=1 vm_pair_up upgrade
guest_use vm
guest_run 30 'modprobe ib_uverbs' > /dev/null
guest_save vm

# restarts_under SERVER... -- CLIENT...: Soft-RoCE serves, the VM is the
# client, ibv_asyncwatch watches vrdma0; vrdmad is restarted
# RESTARTS times, 4 s apart, while they run; both must end 0, with no
# asynchronous event, and every restart must restore the VM.
restarts_under() {
	local port=$((20000 + NTEST)) rc=0 n0 n1 i
	local -a srv=() cli=()
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	n0=$(restore_gaps | wc -l)
	guest_use rxe
	guest_start "srv$NTEST" 240 "${srv[@]}" -p "$port"
	guest_listening "$port" 30 || { echo "    the Soft-RoCE server did not listen"; guest_save rxe; return 1; }
	guest_save rxe
	guest_use vm
	guest_start "aw$NTEST" 240 stdbuf -oL ibv_asyncwatch -d vrdma0
	guest_start "cli$NTEST" 240 "${cli[@]}" -p "$port" "$RXE"
	guest_save vm
	for i in $(seq "$RESTARTS"); do
		sleep 4
		manager restart || return 1
	done
	guest_use vm
	guest_wait "cli$NTEST" > "$TMP/client.out" 2>&1 || rc=$?
	guest_run 10 'pkill -x ibv_asyncwatch' > /dev/null 2>&1 || true
	guest_wait "aw$NTEST" > "$TMP/aw.out" 2>&1 || true
	guest_save vm
	guest_use rxe
	guest_wait "srv$NTEST" > "$TMP/server.out" 2>&1 || rc=$?
	guest_save rxe
	n1=$(restore_gaps | wc -l)
	echo "    restored $((n1 - n0)) time(s); gaps (ms, saved to restored): $(restore_gaps | tail -n +"$((n0 + 1))" | tr '\n' ' ')"
	grep -hE '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+|bytes in' "$TMP/client.out" | head -n 2 | sed 's/^/    /'
	if [ $rc != 0 ]; then
		echo "    -- server:"; tail -n 15 "$TMP/server.out" | sed 's/^/    /'
		echo "    -- client:"; tail -n 15 "$TMP/client.out" | sed 's/^/    /'
		return 1
	fi
	if grep -q 'event_type' "$TMP/aw.out"; then
		echo "    ibv_asyncwatch saw:"; sed 's/^/    /' "$TMP/aw.out"; return 1
	fi
	[ "$((n1 - n0))" = "$RESTARTS" ] || { echo "    restored $((n1 - n0)) times, not $RESTARTS"; return 1; }
}

PERF=(-d rxe0 -x 1 -F -D 20)
VPERF=(-d vrdma0 -x 1 -F -D 20)
for t in write read send atomic; do
	check "ib_${t}_bw -D 20 VM -> Soft-RoCE, vrdmad restarted $RESTARTS times: no error" \
		restarts_under "ib_${t}_bw" "${PERF[@]}" -- "ib_${t}_bw" "${VPERF[@]}"
done
check "ibv_rc_pingpong -c (data checked) VM -> Soft-RoCE across $RESTARTS restarts" \
	restarts_under ibv_rc_pingpong -d rxe0 -g 1 -s 4096 -n 5000 -c -- \
		ibv_rc_pingpong -d vrdma0 -g 1 -s 4096 -n 5000 -c

same_store() {
	local counts
	counts=$(grep '^start' "$MLOG" | tail -n +2 | awk '{ print $3 }' | sort | uniq -c)
	echo "    restarts and the fds handed over at each: $(tr -s ' ' <<< "$counts" | tr '\n' ';')"
	[ "$(wc -l <<< "$counts")" = 1 ]
}
check "the store held as many fds at every restart" same_store

guests_off
manager stop
check "vrdmad stopped, the store empty, no sanitizer report" \
	bash -c "grep -q '^store 0' <<< '$LAST' && ! grep -q 'Sanitizer\|runtime error' '$DLOG'"
DAEMON_PIDS=()

summary upgrade
