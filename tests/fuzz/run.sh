#!/bin/bash
# run.sh BUILD VECTORS: run every fuzz target for its time, as many at once
# as there are cores (each is one process), and print each one's final
# stats in the table's order. Exits 1 if any found a crash, a leak or a
# sanitizer report (its reproducer: BUILD/TARGET-crash-..., or
# BUILD/crash-... for fuzz_parse).
#
# FUZZ_SECONDS (fuzz_parse), FUZZ_DEVICE_SECONDS (the device targets),
# FUZZ_STATE_SECONDS (fuzz_state), FUZZ_CONFIG_SECONDS (fuzz_config) and
# FUZZ_CONTROL_SECONDS (fuzz_control_socket) set the times; PY the python
# with scapy.
set -uo pipefail
[ $# = 2 ] || { echo "usage: $0 BUILD VECTORS" >&2; exit 2; }
BUILD=$1
VECTORS=$2
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-/usr/bin/python3}
DEV_S=${FUZZ_DEVICE_SECONDS:-20}

# target  seconds  max_len  corpus seed (seed_NAME.py, or seed.sh's frames)
TABLE=(
	"fuzz_parse   ${FUZZ_SECONDS:-20}        -     frames"
	"fuzz_vhost   $DEV_S                     8192  vhost"
	"fuzz_ctrl    $DEV_S                     8192  ctrl"
	"fuzz_wqe     $DEV_S                     8192  -"
	"fuzz_restore $DEV_S                     8192  -"
	"fuzz_gring   $DEV_S                     8192  gring"
	"fuzz_state   ${FUZZ_STATE_SECONDS:-30}  4096  state"
	"fuzz_config  ${FUZZ_CONFIG_SECONDS:-10} 4096  config"
	"fuzz_control_socket ${FUZZ_CONTROL_SECONDS:-10} 4096 control_socket"
)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# fuzz TARGET SECONDS MAX_LEN SEED: seed its corpus and run it; its last
# lines and its status into $out.
fuzz() {
	local t=$1 secs=$2 len=$3 seed=$4 corpus=$BUILD/$1-corpus args=() prefix=$BUILD/$1-
	rm -rf "$corpus" && mkdir -p "$corpus"
	case $seed in
	frames) "$HERE/seed.sh" "$VECTORS" "$corpus" || return ;;
	-) ;;
	*) "$PY" "$HERE/seed_$seed.py" "$corpus" || return ;;
	esac
	[ "$len" = - ] || args+=(-max_len="$len")
	[ "$t" != fuzz_parse ] || prefix=$BUILD/	# where it always wrote them
	"$BUILD/$t" -max_total_time="$secs" "${args[@]}" -print_final_stats=1 \
		-artifact_prefix="$prefix" "$corpus" > "$out/$t.log" 2>&1
}

jobs_max=$(nproc)
for row in "${TABLE[@]}"; do
	read -r t secs len seed <<< "$row"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
	( fuzz "$t" "$secs" "$len" "$seed"; echo $? > "$out/$t.rc" ) &
done
wait

bad=0
for row in "${TABLE[@]}"; do
	read -r t secs _ <<< "$row"
	echo "== $t ($secs s)"
	rc=$(cat "$out/$t.rc" 2> /dev/null || echo 1)
	if [ "$rc" = 0 ]; then
		tail -n 8 "$out/$t.log"
	else
		tail -n 60 "$out/$t.log"
		echo "$t: FAILED (exit $rc)"
		bad=1
	fi
done
exit "$bad"
