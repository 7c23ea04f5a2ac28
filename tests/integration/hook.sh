#!/bin/bash
# The libvirt hook (etc/libvirt-hook), run exactly as libvirtd runs it —
# `HOOK DOMAIN OPERATION SUB_OPERATION -`, the domain XML on stdin, libvirtd's
# bare environment — on docs/libvirt.md's example domain and variants of it,
# against a real vrdmad through the real vrdmactl.
#
#   netns vrA-ID                                      netns vrB-ID
#   +----------------------------------------------+  +-------------+
#   | vrdmad on vA-ID 10.205.0.1                   |  | vB-ID       |
#   |   control socket $TMP/ctl.sock               |<>| 10.205.0.2  |
#   |   vm cfgvm  192.0.2.99 (vrdmad.conf: config) |  +-------------+
#   |   vm web1   192.0.2.10 2001:db8::10, added   |
#   |             and removed by the hook (runtime)|
#   |   hook -> vrdmactl -> control socket         |
#   +----------------------------------------------+
set -e
source "$(dirname "$0")/../lib.sh"

HOOK=$HERE/../etc/libvirt-hook
DOC=$HERE/../docs/libvirt.md
VRDMACTL_ABS=$(readlink -f "$(command -v "$VRDMACTL")")

setup_pair "10.205.0.1/24" "10.205.0.2/24"
CONF=$(write_conf "" "[vm cfgvm]
gid = 192.0.2.99
socket = $TMP/cfgvm.sock" vrdmad.conf)

# QEMU's account as libvirt's qemu.conf gives it.
cat > "$TMP/qemu.conf" <<'EOF'
# the lines of /etc/libvirt/qemu.conf the hook reads
#user = "root"
user = "nobody"
group = "nogroup"   # QEMU's group
EOF

# The domain: docs/libvirt.md's example between its marker comments, its
# sockets moved from /run/vrdmad to $TMP.
sed -n '/runs the hook on this example: begin/,/runs the hook on this example: end/p' "$DOC" |
	sed '1d;$d' | sed '/^```/d' | sed "s|/run/vrdmad/|$TMP/|g" > "$TMP/web1.xml"
IFMAC=$(sed -n "s|.*<mac address='\([0-9a-f:]*\)'/>.*|\1|p" "$TMP/web1.xml" | head -1)
# Variants: an explicit MAC; no metadata; a bad GID; a static DAC label; other names.
sed "s|\(.*\)<vrdma:socket>|\1<vrdma:mac>52:54:00:ab:cd:ef</vrdma:mac>\n&|" "$TMP/web1.xml" > "$TMP/mac.xml"
sed '/<vrdma:device/,/<\/vrdma:device>/d' "$TMP/web1.xml" > "$TMP/nometa.xml"
sed 's|<vrdma:gid>192.0.2.10<|<vrdma:gid>192.0.2.300<|' "$TMP/web1.xml" > "$TMP/badgid.xml"
sed "s|^</domain>|  <seclabel type='static' model='dac' relabel='no'><label>+65534:+0</label></seclabel>\n&|" \
	"$TMP/web1.xml" > "$TMP/dac.xml"
sed 's|<name>web1</name>|<name>cfgvm</name>|' "$TMP/web1.xml" > "$TMP/cfgvm.xml"
sed 's|<name>web1</name>|<name>web 1</name>|' "$TMP/web1.xml" > "$TMP/badname.xml"

echo "hook: the libvirt hook against vrdmad ($NSA)"
start_daemon "$CONF"

# hook DOMAIN OPERATION SUB_OPERATION XML: as libvirtd does it (four
# arguments, XML on stdin, only LC_ALL and PATH from its environment) plus
# the hook's three test variables. Sets HOOK_RC; output in $TMP/hook.{out,err}.
HOOK_CTL=$TMP/ctl.sock
hook() {
	HOOK_RC=0
	ip netns exec "$NSA" env -i LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		VRDMACTL="$VRDMACTL_ABS" VRDMAD_CONTROL_SOCKET="$HOOK_CTL" \
		VRDMAD_QEMU_CONF="$TMP/qemu.conf" \
		"${HOOK_EXE:-$HOOK}" "$1" "$2" "$3" - < "$4" > "$TMP/hook.out" 2> "$TMP/hook.err" ||
		HOOK_RC=$?
	[ ! -s "$TMP/hook.err" ] || sed 's/^/    hook: /' "$TMP/hook.err"
}

# vm_is NAME FILTER [JQ_ARGS...]: vrdmad serves NAME, and FILTER holds for it.
# vm_absent NAME: vrdmad answers, and serves no NAME.
vm_is() {
	local n=$1 f=$2 list
	shift 2
	list=$(ctl list --json) &&
	echo "$list" | jq -e --arg n "$n" "$@" \
		"[.[] | select(.name == \$n)] | length == 1 and (.[0] | $f)" > /dev/null
}
vm_absent() {
	local list
	list=$(ctl list --json) &&
	echo "$list" | jq -e --arg n "$1" 'type == "array" and all(.[]; .name != $n)' > /dev/null
}
vm_count() { ctl list --json | jq length; }
# The socket's inode and change time: a VM removed and added again has a
# new socket (the inode alone may be reused).
ino() { stat -c '%i %.9Z' "$1" 2>/dev/null || echo none; }
quiet() { [ ! -s "$TMP/hook.out" ] && [ ! -s "$TMP/hook.err" ]; }

example_valid() {
	"$PY" -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$TMP/web1.xml" &&
	grep -q '<vrdma:device' "$TMP/web1.xml" && [ -n "$IFMAC" ]
}
check "the docs/libvirt.md example: well-formed, with our metadata" example_valid
if command -v virt-xml-validate > /dev/null; then
	schema_valid() {
		virt-xml-validate "$TMP/web1.xml" domain > "$TMP/validate.out" 2>&1 || { cat "$TMP/validate.out"; return 1; }
	}
	check "the docs/libvirt.md example: libvirt's schema (virt-xml-validate)" schema_valid
fi

provisioned() {
	hook web1 prepare begin "$TMP/web1.xml"
	[ "$HOOK_RC" = 0 ] && quiet &&
	vm_is web1 '.socket == $s and .gids == ["192.0.2.10", "2001:db8::10"] and .origin == "runtime"' \
		--arg s "$TMP/web1.sock" &&
	[ -S "$TMP/web1.sock" ]
}
check "prepare: web1 provisioned (socket, GIDs, runtime), exit 0, silent" provisioned
check "prepare: socket owned as qemu.conf says (nobody nogroup 0660)" \
	test "$(stat -c '%U %G %a' "$TMP/web1.sock")" = "nobody nogroup 660"
default_mac() { vm_is web1 '.mac == $m' --arg m "$IFMAC"; }
check "prepare: no <vrdma:mac>: the first interface's MAC" default_mac

INO=$(ino "$TMP/web1.sock")
unchanged() { vm_is web1 '.origin == "runtime"' && [ "$(ino "$TMP/web1.sock")" = "$INO" ]; }
prepare_again() { hook web1 prepare begin "$TMP/web1.xml"; [ "$HOOK_RC" = 0 ] && quiet && unchanged; }
check "prepare again: exit 0, the VM and its socket untouched" prepare_again
others_nothing() {
	local op
	for op in "start begin" "started begin" "stopped end" "migrate begin" "restore begin" \
		  "attach begin" "reconnect begin"; do
		hook web1 $op "$TMP/web1.xml"
		[ "$HOOK_RC" = 0 ] && quiet && unchanged || { echo "    after $op"; return 1; }
	done
}
check "start/started/stopped/migrate/restore/attach/reconnect: no change" others_nothing

changed() {
	hook web1 prepare begin "$TMP/mac.xml"
	[ "$HOOK_RC" = 0 ] && vm_is web1 '.mac == "52:54:00:ab:cd:ef"' &&
	[ "$(ino "$TMP/web1.sock")" != "$INO" ] && [ -S "$TMP/web1.sock" ]
}
check "prepare with other settings (a <vrdma:mac>): VM replaced, new MAC" changed
INO=$(ino "$TMP/web1.sock")
reconnect_keeps() {
	hook web1 reconnect begin "$TMP/web1.xml"
	[ "$HOOK_RC" = 0 ] && vm_is web1 '.mac == "52:54:00:ab:cd:ef"' &&
	[ "$(ino "$TMP/web1.sock")" = "$INO" ]
}
check "reconnect with other settings: the running VM is kept as it is" reconnect_keeps

released() {
	hook web1 release end "$TMP/mac.xml"
	[ "$HOOK_RC" = 0 ] && quiet && vm_absent web1 && [ ! -e "$TMP/web1.sock" ]
}
check "release: web1 removed, socket gone, exit 0" released
release_again() { hook web1 release end "$TMP/web1.xml"; [ "$HOOK_RC" = 0 ] && quiet && vm_absent web1; }
check "release again: exit 0, nothing to do" release_again
stopped_nothing() {
	hook web1 stopped end "$TMP/web1.xml"
	[ "$HOOK_RC" = 0 ] && hook web1 started begin "$TMP/web1.xml" && [ "$HOOK_RC" = 0 ] &&
	vm_absent web1
}
check "stopped, started with no VM: exit 0, nothing added" stopped_nothing
reconnect_adds() {
	hook web1 reconnect begin "$TMP/web1.xml"
	[ "$HOOK_RC" = 0 ] && vm_is web1 '.origin == "runtime"' && [ -S "$TMP/web1.sock" ] &&
	hook web1 release end "$TMP/web1.xml" && vm_absent web1
}
check "reconnect when vrdmad lost the VM: provisioned again" reconnect_adds

nometa() {
	local n
	n=$(vm_count)
	hook web1 prepare begin "$TMP/nometa.xml"
	[ "$HOOK_RC" = 0 ] && quiet && [ "$(vm_count)" = "$n" ] && vm_absent web1 &&
	hook web1 release end "$TMP/nometa.xml" && [ "$HOOK_RC" = 0 ] && quiet
}
check "a domain without our metadata: prepare and release exit 0, no VM" nometa
badgid() {
	hook web1 prepare begin "$TMP/badgid.xml"
	[ "$HOOK_RC" != 0 ] && [ "$(wc -l < "$TMP/hook.err")" = 1 ] &&
	grep -q '^vrdmad hook: web1: .*192\.0\.2\.300.* not an IPv4 or IPv6 address' "$TMP/hook.err" &&
	[ ! -s "$TMP/hook.out" ] && vm_absent web1 && [ ! -e "$TMP/web1.sock" ]
}
check "a bad GID: prepare fails with one line naming it, no VM" badgid
badname() {
	hook "web 1" prepare begin "$TMP/badname.xml"
	[ "$HOOK_RC" != 0 ] && grep -q "'web 1' cannot be a vrdmad VM name" "$TMP/hook.err" &&
	[ "$(vm_count)" = 1 ]
}
check "a domain name vrdmad cannot take: prepare fails and says so" badname
refused() {
	# The daemon refuses: 192.0.2.99 is cfgvm's GID.
	sed 's|<vrdma:gid>192.0.2.10<|<vrdma:gid>192.0.2.99<|' "$TMP/web1.xml" > "$TMP/taken.xml"
	hook web1 prepare begin "$TMP/taken.xml"
	[ "$HOOK_RC" != 0 ] && grep -q '^vrdmad hook: web1: vrdmactl add-vm failed: vrdmactl: ' "$TMP/hook.err" &&
	vm_absent web1
}
check "vrdmad refuses the VM (cfgvm's GID): prepare fails with its reason" refused

dac() {
	hook web1 prepare begin "$TMP/dac.xml"
	[ "$HOOK_RC" = 0 ] && [ "$(stat -c '%u %g %a' "$TMP/web1.sock")" = "65534 0 660" ] &&
	hook web1 release end "$TMP/dac.xml" && vm_absent web1
}
check "a static DAC label +65534:+0: the socket is 65534:0, 0660" dac
release_bad_meta() {
	hook web1 prepare begin "$TMP/web1.xml"
	vm_is web1 true && hook web1 release end "$TMP/badgid.xml" &&
	[ "$HOOK_RC" = 0 ] && vm_absent web1 && [ ! -e "$TMP/web1.sock" ]
}
check "release with metadata that would not prepare: still removed" release_bad_meta

CFG_INO=$(ino "$TMP/cfgvm.sock")
config_kept() {
	hook cfgvm prepare begin "$TMP/cfgvm.xml"
	[ "$HOOK_RC" = 0 ] && grep -q "vrdmad.conf defines VM 'cfgvm'" "$TMP/hook.err" &&
	hook cfgvm release end "$TMP/cfgvm.xml" && [ "$HOOK_RC" = 0 ] &&
	vm_is cfgvm '.origin == "config" and .gids == ["192.0.2.99"]' &&
	[ "$(ino "$TMP/cfgvm.sock")" = "$CFG_INO" ] && [ "$(vm_count)" = 1 ]
}
check "vrdmad.conf's cfgvm: prepare and release leave it alone, a note" config_kept

unreachable() {
	local prep_rc prep_err
	HOOK_CTL=$TMP/nothing.sock
	hook web1 prepare begin "$TMP/web1.xml"
	prep_rc=$HOOK_RC
	prep_err=$(cat "$TMP/hook.err")
	hook web1 release end "$TMP/web1.xml"
	HOOK_CTL=$TMP/ctl.sock
	[ "$prep_rc" != 0 ] && [ "$HOOK_RC" = 0 ] &&
	echo "$prep_err" | grep -q '^vrdmad hook: web1: vrdmactl list failed: vrdmactl: cannot connect' &&
	grep -q '^vrdmad hook: web1: release: .*cannot connect' "$TMP/hook.err"
}
check "no vrdmad: prepare fails (cannot connect), release exits 0" unreachable

# As `make install` writes it: @SBINDIR@ replaced, no VRDMACTL, no PATH to it.
installed() {
	local ok=0
	mkdir -p "$TMP/sbin"
	printf '#!/bin/sh\necho "$*" >> %s/sbin.log\nexec %s "$@"\n' "$TMP" "$VRDMACTL_ABS" > "$TMP/sbin/vrdmactl"
	chmod 0755 "$TMP/sbin/vrdmactl"
	sed "s|@SBINDIR@|$TMP/sbin|g" "$HOOK" > "$TMP/vrdmad-hook"
	chmod 0755 "$TMP/vrdmad-hook"
	HOOK_EXE=$TMP/vrdmad-hook VRDMACTL_ABS= hook web1 prepare begin "$TMP/web1.xml"
	[ "$HOOK_RC" = 0 ] && vm_is web1 true || ok=1
	HOOK_EXE=$TMP/vrdmad-hook VRDMACTL_ABS= hook web1 release end "$TMP/web1.xml"
	[ "$HOOK_RC" = 0 ] && vm_absent web1 || ok=1
	grep -q '^-s .* add-vm web1 ' "$TMP/sbin.log" && grep -q '^-s .* del-vm web1$' "$TMP/sbin.log" || ok=1
	return $ok
}
check "the installed hook runs the vrdmactl of its sbin directory" installed

no_sanitizer_report() { ! grep -q "Sanitizer\|runtime error" "$DLOG"; }
stop_daemon
check "vrdmad exit code 0" test "$RC" = 0
check "no sanitizer report" no_sanitizer_report
summary
