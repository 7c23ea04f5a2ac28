#!/bin/bash
# Page lists cannot run the host out of memory or starve other VMs: VM
# flood registers the heaviest page lists the ABI allows (REG_USER_MR and
# MAP_MR_SG of 2^20 scattered pages, vrdma_test --flood) while a
# vrdma-pingpong between VMs alpha and beta of the same daemon and worker
# keeps completing. With the default max_mr_pages (2^21 pages, 8 bytes each
# in the daemon) the flood gets NOMEM past 16 MiB of page tables; the
# daemon's peak RSS may grow by at most 64 MiB (before the limits, each
# round cost it 48 MiB).
#
#   netns vrA-ID: vrdmad (workers = 1), vms alpha, beta, flood; the
#   flooder on flood.sock, vrdma-pingpong on alpha.sock and beta.sock
set -e
source "$(dirname "$0")/../lib.sh"
: "${VRDMA_TEST:?set VRDMA_TEST to the vrdma_test binary}"
need_pingpong

ROUNDS=10
RSS_BOUND_KB=$((64 * 1024))

setup_pair "10.207.0.1/24" "10.207.0.2/24"
VMS=$(vm_section alpha 10.207.0.11; vm_section beta 10.207.0.12; vm_section flood 10.207.0.13)

echo "pages: page lists bounded per VM ($NSA)"
CONF=$(write_conf "" "$VMS" "pages.conf")
start_daemon "$CONF"

kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DPID/status"; }
RSS0=$(kb VmRSS)

ip netns exec "$NSA" timeout 120 "$VRDMA_TEST" --flood "$TMP/flood.sock" "$ROUNDS" \
	> "$TMP/flood.out" 2>&1 &
FPID=$!

# Ping-pongs between alpha and beta, one after another, while the flood runs.
PORT=18600
pingpongs() {
	local n=0 spid rc
	PP_RUNS=0
	while kill -0 "$FPID" 2>/dev/null || [ "$n" = 0 ]; do
		n=$((n + 1)) PORT=$((PORT + 1))
		ip netns exec "$NSA" timeout 60 "$VRDMA_PINGPONG" -d "$TMP/alpha.sock" -p "$PORT" \
			-n 200 > "$TMP/pp$n.srv" 2>&1 &
		spid=$!
		wait_listen "$NSA" "$PORT" || return 1
		rc=0
		ip netns exec "$NSA" timeout 60 "$VRDMA_PINGPONG" -d "$TMP/beta.sock" -p "$PORT" \
			-n 200 127.0.0.1 > "$TMP/pp$n.cli" 2>&1 || rc=$?
		wait "$spid" || rc=$?
		[ "$rc" = 0 ] && grep -q '^200 iters in ' "$TMP/pp$n.cli" || return 1
		PP_RUNS=$n
	done
}
check "vrdma-pingpong alpha-beta completes while vm flood registers" pingpongs
echo "    $PP_RUNS ping-pongs of 200 iterations during the flood"

FRC=0
wait "$FPID" || FRC=$?
sed 's/^/    /' "$TMP/flood.out"
check "the flood gets only OK or NOMEM, and registers again after deregistering" \
	test "$FRC" = 0
refused() { grep -Eq 'reg_user_mr ok [0-9]+ nomem [1-9].* map_mr_sg ok [0-9]+ nomem [0-9]+' "$TMP/flood.out"; }
check "REG_USER_MR past the VM's page budget gets NOMEM" refused

HWM=$(kb VmHWM)
echo "    daemon RSS: $RSS0 KiB before the flood, peak $HWM KiB (bound: +$RSS_BOUND_KB KiB)"
check "the daemon's peak RSS grew by less than 64 MiB" test $((HWM - RSS0)) -lt "$RSS_BOUND_KB"
counted() { jstat '.vms[] | select(.name == "flood") | .device.refused_mrs > 0' > /dev/null; }
check "vrdmactl stats counts the refusals (refused_mrs)" counted
others() { jstat '[.vms[] | select(.name != "flood") | .device.refused_mrs] == [0, 0]' > /dev/null; }
check "no refusal is counted for the other VMs" others
check "the daemon is still running" kill -0 "$DPID"
stop_daemon
check "the daemon exited 0" test "$RC" = 0
no_sanitizer_report() { ! grep -q "Sanitizer\|runtime error" "$DLOG" "$TMP/flood.out"; }
check "no sanitizer report from the daemon or the flood" no_sanitizer_report
summary
