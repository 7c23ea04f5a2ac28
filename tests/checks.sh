# Numbered checks, WireGuard style, for every test script: source it, then
# `check "what" command...` for each, and end with `summary NAME`.
# A script may define check_failed, called after a failed check (the netns
# tests print the daemon's log there), and check_after, run after each check
# that passed: if it fails, so does the check (the VM tests look at the
# guest's kernel log there). A check that took 10 s or more says how long,
# so the check's slow parts show in its log.
NTEST=0
NFAIL=0

check() {
	local what=$1 t0=$SECONDS took=""
	shift
	NTEST=$((NTEST + 1))
	if "$@" && { ! declare -F check_after > /dev/null || check_after; }; then
		[ $((SECONDS - t0)) -lt 10 ] || took=" ($((SECONDS - t0)) s)"
		printf '  [%2d] %-66s ok%s\n' "$NTEST" "$what" "$took"
	else
		[ $((SECONDS - t0)) -lt 10 ] || took=" ($((SECONDS - t0)) s)"
		printf '  [%2d] %-66s FAIL%s\n' "$NTEST" "$what" "$took"
		NFAIL=$((NFAIL + 1))
		! declare -F check_failed > /dev/null || check_failed
	fi
}

# summary [NAME]: the plain closing line ("NAME: N passed, M failed", which
# tests/run-*.sh add up; NAME defaults to the script's), and the exit code.
summary() {
	echo "${1:-$(basename "$0" .sh)}: $((NTEST - NFAIL)) passed, $NFAIL failed"
	[ "$NFAIL" = 0 ]
}
