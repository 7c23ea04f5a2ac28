#!/bin/bash
# Soft-RoCE at path MTU 4096 (issue 19): rxe.sh with the link, the bridge,
# the tap and the guest's eth0 at MTU 9000, and -m 4096 on both sides, for a
# few checks rather than its whole matrix: ibv_rc_pingpong -c (4 KiB and
# 64 KiB), ib_write_bw and ib_send_bw, each against vrdma-pingpong or
# vrdma-perf in both roles.
# The many-QP checks stay at MTU 1500 (rxe.sh): their ACKs, one buffer each,
# would hide the multi-buffer frames big_frames counts.
export RXE_MTU=9000 PP_TYPES=rc PP_UD= PP_SRQ_QPS= PERF_TESTS_BW="write_bw send_bw" \
	PERF_TESTS_LAT= PERF_TESTS_ATOMIC= PERF_TESTS_BIG= PERF_QPS= PERF_LOSS=
exec bash "$(dirname "$0")/rxe.sh"
