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
sleep 1
# SIGHUP (systemctl reload) with a valid file, then with a broken one: the
# daemon stays up and serving either way.
kill -HUP "$DPID"
sleep 0.5
cp "$CONF" "$TMP/good.conf"
echo "bogus line" >> "$CONF"
kill -HUP "$DPID"
sleep 0.5
cp "$TMP/good.conf" "$CONF"
alive_after_hup() { kill -0 "$DPID" && ip -n "$NSA" link show "$IFA" | grep -q prog/xdp && ctl status > /dev/null; }
check "after SIGHUP twice the daemon still runs, XDP attached" alive_after_hup
sleep 0.5
stop_daemon
wait "$npid" || true

got() { grep -q -- "$1" "$TMP/notify.out"; }
pings() { [ "$(grep -c '^WATCHDOG=1$' "$TMP/notify.out")" -ge 3 ]; }
ready_before_stopping() {
	[ "$(grep -n '^READY=1$' "$TMP/notify.out" | tail -1 | cut -d: -f1)" -lt \
	  "$(grep -n '^STOPPING=1$' "$TMP/notify.out" | cut -d: -f1)" ]
}
check "READY=1 sent" got '^READY=1$'
check "STATUS names the VMs, interface and modes" \
	got "^STATUS=serving 1 VM(s) on $IFA (XDP native, AF_XDP copy, 1 queue(s), 1 worker(s))$"
check "watchdog pings while the data plane runs (>= 3 in 2 s)" pings
check "STOPPING=1 on SIGTERM, after READY=1" ready_before_stopping
check "exit code 0" test "$RC" = 0
reload_notified() {
	[ "$(grep -c '^RELOADING=1$' "$TMP/notify.out")" = 2 ] &&
	[ "$(grep -c '^READY=1$' "$TMP/notify.out")" = 3 ]
}
check "each SIGHUP: RELOADING=1, then READY=1 again" reload_notified
check "a valid, unchanged file: reload applies it, changing nothing" \
	grep -q "reload: .*: 0 VM(s) added, 0 removed, 0 re-created, 1 unchanged, 0 failed" "$DLOG"
check "a broken file: reload names the line and keeps running" \
	grep -q "reload: .*vrdmad.conf:[0-9]*: .*; nothing changed" "$DLOG"
summary
