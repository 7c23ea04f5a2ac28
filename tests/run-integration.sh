#!/bin/bash
# Run every network-namespace test; print one closing line for all of them.
cd "$(dirname "$0")/integration"
pass=0 fail=0 skip=0
for t in ./*.sh; do
	echo "== $t"
	set +e
	bash "$t"
	rc=$?
	set -e
	case $rc in
	0) pass=$((pass + 1)) ;;
	77) skip=$((skip + 1)) ;;
	*) fail=$((fail + 1)); echo "FAILED: $t (exit $rc)" ;;
	esac
done
echo "integration: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
