#!/bin/bash
# pp-iters.sh SECONDS MIN MAX < LOG: how many ping-pong iterations last about
# SECONDS here, from the last "N iters in T seconds = U usec/iter" line of a
# short run in LOG (vrdma-pingpong's or ibv_rc_pingpong's), within MIN..MAX;
# MAX when LOG has no such line.
#
# The restart tests size their data-checked ping-pongs with it: every
# restart must fall inside the run wherever it runs (this machine alone has
# differed 4x from hour to hour), and a count sized for the slowest hour
# spent a minute and more on every other one.
set -euo pipefail
[ $# = 3 ] || { echo "usage: $0 SECONDS MIN MAX < LOG" >&2; exit 2; }
awk -v s="$1" -v lo="$2" -v hi="$3" '
	/ iters in .* usec\/iter/ { us = $(NF - 1) }
	END {
		n = us > 0 ? int(s * 1e6 / us) : hi
		print (n < lo ? lo : n > hi ? hi : n)
	}'
