#!/bin/bash
# Run the interoperability tests against Linux Soft-RoCE in a QEMU guest:
# first the guest harness on its own, then rdma-core and perftest against
# vrdmad. A script exits 77 when QEMU cannot run here: that is a skip.
cd "$(dirname "$0")/interop"
ok=0 bad=0 failed=() skipped=()
for t in ./smoke.sh ./rxe.sh; do
	echo "== $t"
	out=$(mktemp)
	bash "$t" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	read -r p f < <(sed -n 's/^[a-z0-9_-]*: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | tail -1)
	rm -f "$out"
	ok=$((ok + ${p:-0}))
	bad=$((bad + ${f:-0}))
	case $rc in
	0) ;;
	77) skipped+=("$t") ;;
	*) failed+=("$t (exit $rc)"); [ "${f:-0}" != 0 ] || bad=$((bad + 1)) ;;
	esac
	# the harness failing means the rest cannot tell anything
	[ "$t" != ./smoke.sh ] || [ $rc = 0 ] || break
done
[ ${#skipped[@]} = 0 ] || echo "skipped: ${skipped[*]}"
[ ${#failed[@]} = 0 ] || echo "FAILED: ${failed[*]}"
echo "interop: $ok passed, $bad failed"
[ ${#failed[@]} = 0 ]
