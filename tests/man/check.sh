#!/bin/bash
# The man pages in man/: each renders without a warning, and each documents
# what its program really accepts:
#   - every flag the program's usage text (-h) prints,
#   - vrdmactl's commands and vrdma-perf's tests,
#   - every config key of daemon/common/config.c, under its section, with the ranges
#     ("An integer from A to B") and value lists ("key = a|b|c") that vrdmad
#     --check-config enforces; the EXAMPLE configuration passes it too;
#   - the standard sections, a .TH that names the page and vrdmad's version,
#     and SEE ALSO references to the project's pages that exist.
#
# Environment: VRDMAD, VRDMACTL, VRDMA_PINGPONG, VRDMA_PERF (default
# build/...; run `make` first). Needs groff (Debian: groff-base); man-db's
# `man --warnings` also runs when man is installed. No root needed.
set -u

abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VRDMAD=$(abs "${VRDMAD:-$ROOT/build/vrdmad}")
VRDMACTL=$(abs "${VRDMACTL:-$ROOT/build/vrdmactl}")
VRDMA_PINGPONG=$(abs "${VRDMA_PINGPONG:-$ROOT/build/vrdma-pingpong}")
VRDMA_PERF=$(abs "${VRDMA_PERF:-$ROOT/build/vrdma-perf}")
MAN=$ROOT/man
CONFIG_C=$ROOT/daemon/common/config.c
PAGES="vrdmad.8 vrdmad.conf.5 vrdmactl.8 vrdma-pingpong.1 vrdma-perf.1"

if ! command -v groff > /dev/null; then
	echo "tests/man/check.sh: groff is missing: apt-get install groff-base" >&2
	exit 1
fi
TMP=$(mktemp -d /tmp/vrdmad-man.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

NTEST=0
NFAIL=0
WHY=$TMP/why	# what a failed check says, printed under its line

# check "what" command...: numbered, like tests/lib.sh's.
check() {
	local what=$1
	shift
	NTEST=$((NTEST + 1))
	: > "$WHY"
	if "$@" 2> "$WHY"; then
		printf '  [%2d] %-66s ok\n' "$NTEST" "$what"
	else
		printf '  [%2d] %-66s FAIL\n' "$NTEST" "$what"
		NFAIL=$((NFAIL + 1))
		sed 's/^/       /' "$WHY"
	fi
}

# The page as plain text, one paragraph a line (nothing is broken or
# hyphenated, so phrases and flags can be searched for).
render() {
	groff -man -Tascii -rLL=2000n -rHY=0 -P-cbou "$MAN/$1" 2> /dev/null
}

# A section of the rendered page: from its heading to the next.
section() {	# PAGE HEADING
	render "$1" | awk -v h="$2" '$0 == h { f = 1; next } f && /^[^ ]/ { exit } f'
}

# ---- the pages render cleanly ----

groff_clean() {
	local out
	out=$(groff -ww -man -Tutf8 -z "$MAN/$1" 2>&1)
	[ -z "$out" ] || { echo "$out" >&2; return 1; }
}

man_clean() {
	local out rc=0
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$MAN/$1" 2>&1 > /dev/null) || rc=$?
	if [ -n "$out" ] || [ "$rc" != 0 ]; then
		echo "exit $rc: $out" >&2
		return 1
	fi
}

# .TH NAME SECTION DATE "vrdmad VERSION": the file's name, the program's version.
th_right() {
	local page=$1 name sect version th
	name=${page%.*}
	sect=${page##*.}
	version=$("$VRDMAD" --version 2> /dev/null | awk '{ print $2 }')
	[ -n "$version" ] || { echo "no version from $VRDMAD --version (run make)" >&2; return 1; }
	th=$(grep -m1 '^\.TH ' "$MAN/$page" | sed 's/\\-/-/g')
	[[ $th == ".TH ${name^^} $sect "[0-9-]*" \"vrdmad $version\" "* ]] ||
		{ echo "want: .TH ${name^^} $sect DATE \"vrdmad $version\" ...; have: $th" >&2; return 1; }
}

has_sections() {	# PAGE HEADING...
	local page=$1 h missing=()
	shift
	for h in "$@"; do
		grep -Eq "^\.SH \"?$h\"?\$" "$MAN/$page" || missing+=("$h")
	done
	[ ${#missing[@]} = 0 ] || { echo "missing: ${missing[*]}" >&2; return 1; }
}

# SEE ALSO names only pages of this project that exist.
see_also_exists() {
	local page=$1 ref missing=()
	for ref in $(section "$page" "SEE ALSO" | grep -oE 'vrdma[a-z.-]*\([0-9]\)'); do
		ref=${ref%)}
		[ -e "$MAN/${ref%(*}.${ref#*(}" ] || missing+=("$ref)")
	done
	[ ${#missing[@]} = 0 ] || { echo "no such page in man/: ${missing[*]}" >&2; return 1; }
}

for page in $PAGES; do
	check "$page: groff -ww -man -Tutf8 -z prints nothing" groff_clean "$page"
	if command -v man > /dev/null; then
		check "$page: man --warnings -l (MANWIDTH=80) prints nothing" man_clean "$page"
	fi
	check "$page: .TH names the page and vrdmad's version" th_right "$page"
	check "$page: SEE ALSO names only pages that exist" see_also_exists "$page"
done

check "vrdmad.8: NAME, SYNOPSIS, ..., SIGNALS, FILES, EXIT STATUS" has_sections vrdmad.8 \
	NAME SYNOPSIS DESCRIPTION OPTIONS SIGNALS FILES ENVIRONMENT "EXIT STATUS" EXAMPLES "SEE ALSO"
check "vrdmad.conf.5: NAME, SYNOPSIS, DESCRIPTION, ..., EXAMPLE, FILES" has_sections vrdmad.conf.5 \
	NAME SYNOPSIS DESCRIPTION SYNTAX "SECTIONS AND KEYS" EXAMPLE FILES "SEE ALSO"
check "vrdmactl.8: NAME, SYNOPSIS, COMMANDS, OPTIONS, EXIT STATUS, ..." has_sections vrdmactl.8 \
	NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" FILES EXAMPLES "SEE ALSO"
check "vrdma-pingpong.1: NAME, SYNOPSIS, OPTIONS, OUTPUT, EXAMPLES, ..." has_sections \
	vrdma-pingpong.1 NAME SYNOPSIS DESCRIPTION OPTIONS OUTPUT ENVIRONMENT "EXIT STATUS" EXAMPLES "SEE ALSO"
check "vrdma-perf.1: NAME, SYNOPSIS, TESTS, OPTIONS, OUTPUT, ..." has_sections \
	vrdma-perf.1 NAME SYNOPSIS DESCRIPTION TESTS OPTIONS OUTPUT ENVIRONMENT "EXIT STATUS" EXAMPLES "SEE ALSO"

# ---- every flag of a usage text is in its page ----

# The flags a usage text names: -x and --long, where they start a word
# (also inside [..], (..), <..> and after a slash or a comma).
usage_flags() {
	grep -oE '(^|[][ (,/<|])--?[A-Za-z][A-Za-z0-9_-]*' | sed -E 's/^[^-]+//' | sort -u
}

has_word() {	# FILE WORD: WORD in FILE, not as part of a longer flag or name
	grep -qE -e "(^|[^A-Za-z0-9_-])$2([^A-Za-z0-9_-]|\$)" "$1"
}

# all_found WHERE MIN MATCH NAME...: `MATCH NAME` holds for every NAME, and
# there are at least MIN of them (else the usage was not read right).
all_found() {
	local where=$1 min=$2 match=$3 name missing=()
	shift 3
	[ $# -ge "$min" ] || { echo "found only $# names for $where" >&2; return 1; }
	for name; do "$match" "$name" || missing+=("$name"); done
	[ ${#missing[@]} = 0 ] || { echo "not in $where: ${missing[*]}" >&2; return 1; }
}

in_page() { has_word "$TMP/page.txt" "$1"; }
flags_documented() {	# PAGE PROGRAM [ARGS...]
	local page=$1
	shift
	[ -x "$1" ] || { echo "$1 is not built (run make)" >&2; return 1; }
	render "$page" > "$TMP/page.txt"
	"$@" -h > "$TMP/usage.txt" 2>&1
	# shellcheck disable=SC2046
	all_found "$page" 3 in_page $(usage_flags < "$TMP/usage.txt") ||
		{ echo "the usage of $1:" >&2; cat "$TMP/usage.txt" >&2; return 1; }
}

check "vrdmad.8 documents every flag of vrdmad --help" flags_documented vrdmad.8 "$VRDMAD"
check "vrdmactl.8 documents every flag of vrdmactl --help" flags_documented vrdmactl.8 "$VRDMACTL"
check "vrdma-pingpong.1 documents every flag of vrdma-pingpong -h" \
	flags_documented vrdma-pingpong.1 "$VRDMA_PINGPONG"
check "vrdma-perf.1 documents every flag of vrdma-perf -h" flags_documented vrdma-perf.1 "$VRDMA_PERF"

# vrdmactl's commands: the first word of each line under "Commands:" that
# starts in column 3 (deeper ones continue the line above).
under_commands() { grep -qE "^       $1( |\$)" "$TMP/commands.txt"; }
commands_documented() {
	[ -x "$VRDMACTL" ] || { echo "$VRDMACTL is not built (run make)" >&2; return 1; }
	section vrdmactl.8 COMMANDS > "$TMP/commands.txt"
	# shellcheck disable=SC2046
	all_found "vrdmactl.8's COMMANDS" 2 under_commands $("$VRDMACTL" -h 2>&1 |
		awk '/^Commands:/ { f = 1; next } f && !NF { exit } f && /^  [a-z]/ { print $1 }')
}
check "vrdmactl.8 documents every command of vrdmactl --help" commands_documented

# vrdma-perf's tests: the "TEST: a b c" line of its usage.
under_tests() { grep -qE "^       $1\$" "$TMP/tests.txt"; }
tests_documented() {
	[ -x "$VRDMA_PERF" ] || { echo "$VRDMA_PERF is not built (run make)" >&2; return 1; }
	section vrdma-perf.1 TESTS > "$TMP/tests.txt"
	# shellcheck disable=SC2046
	all_found "vrdma-perf.1's TESTS" 8 under_tests $("$VRDMA_PERF" -h 2>&1 |
		sed -n 's/^TEST: \([a-z_ ]*\).*/\1/p')
}
check "vrdma-perf.1 documents every TEST of vrdma-perf -h" tests_documented

# ---- vrdmad.conf.5 against daemon/common/config.c ----

# The keys of a section, from config.c's key_desc table (daemon_keys, ...).
config_keys() {	# daemon|port|vm
	sed -n "/key_desc $1_keys\[\] = {/,/^};/p" "$CONFIG_C" | grep -oE '\{ "[a-z_]+"' | tr -d '{ "'
}

# The rendered part of vrdmad.conf.5 under the heading of a section.
conf_section() {	# daemon|port|vm
	local h="   [$1]"
	[ "$1" = vm ] && h="   [vm NAME]"
	section vrdmad.conf.5 "SECTIONS AND KEYS" | awk -v h="$h" '$0 == h { f = 1; next } f && /^   [^ ]/ { exit } f'
}

# One key's entry: its tag line(s) ("       key = value") and text.
conf_item() {	# daemon|port|vm KEY
	conf_section "$1" | awk -v key="$2" '
		/^       [a-z_]+ = / {
			if (body) { if (found) exit; tags = ""; body = 0 }
			tags = tags $0 "\n"
			if ($1 == key) found = 1
			next
		}
		{ body = 1; if (found) { printf "%s", tags; tags = ""; print } }'
}

keys_documented() {	# daemon|port|vm
	local key n=0 missing=() unknown=()
	for key in $(config_keys "$1"); do
		n=$((n + 1))
		conf_section "$1" | grep -qE "^       $key = " || missing+=("$key")
	done
	[ "$n" -ge 4 ] || { echo "found only $n keys for [$1] in $CONFIG_C" >&2; return 1; }
	for key in $(conf_section "$1" | sed -nE 's/^       ([a-z_]+) = .*/\1/p'); do
		config_keys "$1" | grep -qx "$key" || unknown+=("$key")
	done
	[ ${#missing[@]} = 0 ] || echo "not under [$1]: ${missing[*]}" >&2
	[ ${#unknown[@]} = 0 ] || echo "under [$1] but not in config.c: ${unknown[*]}" >&2
	[ ${#missing[@]} = 0 ] && [ ${#unknown[@]} = 0 ]
}
for sec in daemon port vm; do
	check "vrdmad.conf.5 documents every [$sec] key of config.c, no other" keys_documented "$sec"
done

# A config with KEY = VALUE (and one more line for the same section), and
# whether vrdmad --check-config takes it.
conf_ok() {	# SECTION KEY VALUE [MORE_LINE]
	local f=$TMP/t.conf more=${4:-}
	case $1 in
	daemon) printf '[daemon]\n%s = %s\n%s\n[port]\ninterface = eth0\n[vm t]\ngid = 192.0.2.1\n' "$2" "$3" "$more" ;;
	port) printf '[port]\ninterface = eth0\n%s = %s\n%s\n[vm t]\ngid = 192.0.2.1\n' "$2" "$3" "$more" ;;
	vm) printf '[port]\ninterface = eth0\n[vm t]\ngid = 192.0.2.1\n%s = %s\n%s\n' "$2" "$3" "$more" ;;
	esac > "$f"
	"$VRDMAD" -c "$f" --check-config > /dev/null 2>&1
}

# What the page says a key takes is what vrdmad takes: for "key = n", the
# bounds of "An integer from A to B" (or "key is an integer from A to B")
# and one past them; for "key = a|b|c", each value and one that is not.
key_values_right() {	# SECTION KEY
	local sec=$1 key=$2 item tag lo hi v more="" bad=()
	[ -x "$VRDMAD" ] || { echo "$VRDMAD is not built (run make)" >&2; return 1; }
	item=$(conf_item "$sec" "$key" | tr '\n' ' ' | tr -s ' ')
	tag=$(conf_item "$sec" "$key" | sed -nE "s/^       $key = (.*)/\1/p")
	case $key in	# these two must fit together: test each with the other at 1
	max_cq) more="max_qp = 1" ;;
	max_qp) more="max_cq = 1" ;;
	esac
	if [[ $tag == *"|"* ]]; then
		for v in ${tag//|/ }; do
			conf_ok "$sec" "$key" "$v" || bad+=("$v refused")
		done
		conf_ok "$sec" "$key" bogus && bad+=("bogus accepted")
	elif [ "$tag" = n ]; then
		if [[ $item =~ $key\ is\ an\ integer\ from\ ([0-9]+)\ to\ ([0-9]+) ]] ||
		   [[ $item =~ An\ integer\ from\ ([0-9]+)\ to\ ([0-9]+) ]]; then
			lo=${BASH_REMATCH[1]}
			hi=${BASH_REMATCH[2]}
		else
			echo "the entry of $key says no 'An integer from A to B'" >&2
			return 1
		fi
		conf_ok "$sec" "$key" "$lo" "$more" || bad+=("$lo refused")
		conf_ok "$sec" "$key" "$hi" "$more" || bad+=("$hi refused")
		[ "$lo" = 0 ] || ! conf_ok "$sec" "$key" $((lo - 1)) "$more" || bad+=("$((lo - 1)) accepted")
		! conf_ok "$sec" "$key" $((hi + 1)) "$more" || bad+=("$((hi + 1)) accepted")
	else
		echo "$key = $tag is neither a range nor a list" >&2
		return 1
	fi
	[ ${#bad[@]} = 0 ] || { echo "vrdmad --check-config disagrees with the page: ${bad[*]}" >&2; return 1; }
}

for sec in daemon port vm; do
	for key in $(conf_section "$sec" | sed -nE 's/^       ([a-z_]+) = (n|[a-z]+(\|[a-z]+)+)$/\1/p'); do
		check "vrdmad.conf.5: [$sec] $key takes what the page says" key_values_right "$sec" "$key"
	done
done

# The first .EX block of the EXAMPLE section, roff escapes undone.
example_conf() {
	sed -n '/^\.SH EXAMPLE$/,/^\.SH /p' "$MAN/vrdmad.conf.5" |
		awk '/^\.EX/ { f = 1; next } /^\.EE/ { exit } f' |
		sed -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\&//g'
}
example_passes() {
	local out
	example_conf > "$TMP/example.conf"
	grep -q '^\[vm ' "$TMP/example.conf" || { echo "no [vm NAME] in the EXAMPLE" >&2; return 1; }
	out=$("$VRDMAD" -c "$TMP/example.conf" --check-config 2>&1) || { echo "$out" >&2; return 1; }
}
check "vrdmad.conf.5: the EXAMPLE passes vrdmad --check-config" example_passes

echo "man: $((NTEST - NFAIL)) passed, $NFAIL failed"
[ "$NFAIL" = 0 ]
