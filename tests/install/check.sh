#!/bin/bash
# `make install DESTDIR=... PREFIX=/usr` and `make uninstall`, into a
# scratch directory: exactly the expected files with the expected modes, the
# paths substituted where a file names another (unit, hook, the daemon's
# default BPF object), the administrator's vrdmad.conf never overwritten nor
# removed, and nothing else left after uninstall.
#
# Run from `make install-check` (after `make`); no root needed.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d /tmp/vrdmad-install.XXXXXX)
trap 'rm -rf "$D"' EXIT
source "$ROOT/tests/checks.sh"

mk() { make -C "$ROOT" --no-print-directory DESTDIR="$D" PREFIX=/usr "$@" > "$D.log" 2>&1 ||
	{ sed 's/^/    /' "$D.log" | tail -20; rm -f "$D.log"; return 1; }; rm -f "$D.log"; }

# path mode, one per line, sorted
EXPECTED="etc/libvirt/hooks/qemu.d/vrdmad 755
etc/vrdmad.conf 644
usr/bin/vrdma-perf 755
usr/bin/vrdma-pingpong 755
usr/lib/systemd/system/vrdmad.service 644
usr/lib/tmpfiles.d/vrdmad.conf 644
usr/lib/vrdmad/vrdma_xdp.bpf.o 644
usr/sbin/vrdmactl 755
usr/sbin/vrdmad 755
usr/share/man/man1/vrdma-perf.1 644
usr/share/man/man1/vrdma-pingpong.1 644
usr/share/man/man5/vrdmad.conf.5 644
usr/share/man/man8/vrdmactl.8 644
usr/share/man/man8/vrdmad.8 644"
files() { (cd "$D" && find . -type f -printf '%P %m\n' | sort); }

echo "install: make install / uninstall into $D"
check "make install DESTDIR=... PREFIX=/usr succeeds" mk install
same_files() { [ "$(files)" = "$EXPECTED" ] || { diff <(echo "$EXPECTED") <(files) | sed 's/^/    /'; return 1; }; }
check "exactly the binaries, BPF object, unit, tmpfiles, config, hook, man pages; modes" same_files
check "the unit starts /usr/sbin/vrdmad, no @SBINDIR@ left" \
	eval 'grep -q "^ExecStart=/usr/sbin/vrdmad " "$D/usr/lib/systemd/system/vrdmad.service" && ! grep -rq @SBINDIR@ "$D"'
check "the hook calls /usr/sbin/vrdmactl" grep -q '^SBINDIR = "/usr/sbin"$' "$D/etc/libvirt/hooks/qemu.d/vrdmad"
hook_runs() { "$D/etc/libvirt/hooks/qemu.d/vrdmad" web1 started begin - < /dev/null; }
check "the installed hook runs (an operation it ignores: exit 0)" hook_runs
check "the installed vrdmad looks for its XDP object in /usr/lib/vrdmad" \
	grep -qa '/usr/lib/vrdmad/vrdma_xdp\.bpf\.o' "$D/usr/sbin/vrdmad"
check "the installed vrdmad accepts the example config" \
	eval '"$D/usr/sbin/vrdmad" --check-config -c "$D/etc/vrdmad.conf" > /dev/null'
tmpfiles_ok() { grep -Eq '^d /run/vrdmad 0755 root root' "$D/usr/lib/tmpfiles.d/vrdmad.conf"; }
check "tmpfiles.d makes /run/vrdmad" tmpfiles_ok

echo "# the administrator's" >> "$D/etc/vrdmad.conf"
check "make install again keeps the administrator's vrdmad.conf" \
	eval 'mk install && grep -q "^# the administrator.s$" "$D/etc/vrdmad.conf"'
check "make uninstall succeeds" mk uninstall
left() { [ "$(files)" = "etc/vrdmad.conf 644" ] || { files | sed 's/^/    left: /'; return 1; }; }
check "... and leaves only vrdmad.conf (the configuration is the administrator's)" left
no_dir() { [ ! -e "$D/usr/lib/vrdmad" ]; }
check "... and removes /usr/lib/vrdmad" no_dir

summary install
