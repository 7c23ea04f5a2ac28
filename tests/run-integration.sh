#!/bin/bash
# Run every network-namespace test; close with one line for all their checks.
# A test script exits 77 to say it was skipped (for example, not root).
cd "$(dirname "$0")/integration"
checks_ok=0 checks_bad=0 failed=() skipped=()
for t in ./*.sh; do
	echo "== $t"
	out=$(mktemp)
	bash "$t" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	# Each script ends with "NAME: N passed, M failed".
	read -r ok bad < <(sed -n 's/^[a-z0-9_-]*: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | tail -1)
	rm -f "$out"
	checks_ok=$((checks_ok + ${ok:-0}))
	checks_bad=$((checks_bad + ${bad:-0}))
	case $rc in
	0) ;;
	77) skipped+=("$t") ;;
	*) failed+=("$t (exit $rc)"); [ "${bad:-0}" != 0 ] || checks_bad=$((checks_bad + 1)) ;;
	esac
done
[ ${#skipped[@]} = 0 ] || echo "skipped: ${skipped[*]}"
[ ${#failed[@]} = 0 ] || echo "FAILED: ${failed[*]}"
echo "integration: $checks_ok passed, $checks_bad failed"
[ ${#failed[@]} = 0 ]
