#!/bin/bash
# sd_notify protocol: READY=1 with STATUS, watchdog pings, STOPPING=1.
#
#   netns vrA-ID                              netns vrB-ID
#   +-----------------------------+           +-------------+
#   | vrdmad on vA-ID 10.203.0.1  |<--veth--->| vB-ID       |
#   |   NOTIFY_SOCKET -> notify.py|           | 10.203.0.2  |
#   +-----------------------------+           +-------------+
set -e
source "$(dirname "$0")/../lib.sh"

setup_pair "10.203.0.1/24" "10.203.0.2/24"
CONF=$(write_conf "" "[vm gamma]
gid = 10.203.0.1
socket = $TMP/gamma.sock" vrdmad.conf)

echo "notify: sd_notify and the watchdog ($NSA)"
ip netns exec "$NSA" "$PY" "$HERE/integration/notify.py" "$TMP/notify.sock" 20 > "$TMP/notify.out" &
npid=$!
for _ in $(seq 50); do grep -q ready "$TMP/notify.out" 2>/dev/null && break; sleep 0.05; done
# A 1 s watchdog: systemd asks for pings at least every 0.5 s.
NOTIFY_SOCKET=$TMP/notify.sock WATCHDOG_USEC=1000000 start_daemon "$CONF"
sleep 2
stop_daemon
wait "$npid" || true

got() { grep -q -- "$1" "$TMP/notify.out"; }
pings() { [ "$(grep -c '^WATCHDOG=1$' "$TMP/notify.out")" -ge 3 ]; }
ready_before_stopping() {
	[ "$(grep -n '^READY=1$' "$TMP/notify.out" | cut -d: -f1)" -lt \
	  "$(grep -n '^STOPPING=1$' "$TMP/notify.out" | cut -d: -f1)" ]
}
check "READY=1 sent" got '^READY=1$'
check "STATUS names the VMs, interface and modes" \
	got "^STATUS=serving 1 VM(s) on $IFA (XDP native, AF_XDP copy, 1 queue(s), 1 worker(s))$"
check "watchdog pings while the data plane runs (>= 3 in 2 s)" pings
check "STOPPING=1 on SIGTERM, after READY=1" ready_before_stopping
check "exit code 0" test "$RC" = 0
summary
