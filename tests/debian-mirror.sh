# debian_mirror: the Debian mirror apt already uses on this machine (deb822
# or one-line format, security excluded), for debootstrap; nothing if none.
# Sourced by guest/image-lib.sh (the guest images) and tests/systemd/nspawn.sh.
debian_mirror() {
	local f u
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		u=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
		[ -n "$u" ] && { echo "$u"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		u=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { if ($i !~ /security/) { print $i; exit } ; break } }' "$f")
		[ -n "$u" ] && { echo "$u"; return; }
	done
}
