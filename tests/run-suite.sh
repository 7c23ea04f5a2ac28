#!/bin/bash
# run-suite.sh SUITE DIR [--harness] SCRIPT...: run the test scripts in
# tests/DIR one after the other and close with one line for all their
# checks, adding up each script's "NAME: N passed, M failed". With
# --harness the first script checks the harness (QEMU, the guest): if it
# fails, the rest cannot tell anything and is not run. A script exits 77 to
# say it was skipped (not root, QEMU cannot run here). The checks that
# failed are named again at the end, with what they printed, where a CI
# log's tail shows them, after the time each script took.
suite=$1
cd "$(dirname "$0")/$2" || exit 1
shift 2
first=
[ "$1" != --harness ] || { shift; first=$1; }
ok=0 bad=0 failed=() skipped=() failed_checks=()
details=$(mktemp)
trap 'rm -f "$details"' EXIT
# fail_details SCRIPT < OUTPUT: for each failed check, the last 12 lines it
# printed before its line (less any daemon's log), so that a CI log's tail
# tells why
fail_details() {
	awk -v t="$1" '
		/^ *\[ *[0-9]+\] / {
			if (/ FAIL( \([0-9]+ s\))?$/) {
				print t " " $0
				for (i = (n > 12 ? n - 11 : 1); i <= n; i++) print buf[i]
			}
			n = 0; next
		}
		!/^    (\||--- vrdmad.s log)/ { buf[++n] = $0 }'
}
times=()
for t in "$@"; do
	echo "== $t"
	out=$(mktemp)
	t0=$SECONDS
	bash "$t" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	times+=("${t#./} $((SECONDS - t0)) s")
	read -r p f < <(sed -n 's/^[a-z0-9_-]*: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | tail -1)
	while IFS= read -r l; do failed_checks+=("$t $l"); done < \
		<(sed -En 's/^ *\[ *([0-9]+)\] (.*[^ ]) +FAIL( \([0-9]+ s\))?$/[\1] \2/p' "$out")
	fail_details "$t" < "$out" >> "$details"
	rm -f "$out"
	ok=$((ok + ${p:-0}))
	bad=$((bad + ${f:-0}))
	case $rc in
	0) ;;
	77) skipped+=("$t") ;;
	*) failed+=("$t (exit $rc)"); [ "${f:-0}" != 0 ] || bad=$((bad + 1)) ;;
	esac
	[ "$t" != "$first" ] || [ $rc = 0 ] || break	# the harness failed
done
# where the suite's time went (the whole check is to stay under 45 min)
(IFS=,; echo "$suite times:${times[*]/#/ }")
[ ${#skipped[@]} = 0 ] || echo "skipped: ${skipped[*]}"
[ ! -s "$details" ] || { echo "what the failed checks printed:"; cat "$details"; }
[ ${#failed_checks[@]} = 0 ] || printf 'failed check: %s\n' "${failed_checks[@]}"
[ ${#failed[@]} = 0 ] || echo "FAILED: ${failed[*]}"
echo "$suite: $ok passed, $bad failed"
[ ${#failed[@]} = 0 ]
