// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_XDP port. Order matters for a clean failure: program first (so the
 * XSKMAP exists), then one socket per queue, each registered in the XSKMAP;
 * xdp_port_close() undoes it in reverse and is safe on a half-open port.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "vdev.h"
#include "xdp_port.h"
#include "xsk_ring.h"

static const char *const xdp_stat_names[VRDMA_XDP_STAT_MAX] = {
	[VRDMA_XDP_PASSED] = "passed",
	[VRDMA_XDP_REDIRECTED] = "redirected",
	[VRDMA_XDP_NO_XSK] = "no_xsk",
	[VRDMA_XDP_MALFORMED] = "malformed",
	[VRDMA_XDP_IP_FRAGMENT] = "ip_fragment",
};

const char *vrdma_xdp_stat_name(enum vrdma_xdp_stat s)
{
	return s < VRDMA_XDP_STAT_MAX ? xdp_stat_names[s] : "?";
}

/* libbpf and libxdp talk on stderr by default; give their lines our prefixes.
 * Their warnings are often expected here (no bpffs: no dispatcher), so they
 * are info; our own messages say what failed and what to do. */
static void lib_log(bool warn, const char *fmt, va_list ap)
{
	enum vrdma_log_level level = warn ? VRDMA_LOG_INFO : VRDMA_LOG_DEBUG;
	char line[512];
	size_t n;

	if (level > log_get_level())
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	/* libxdp's metadata section is unknown to libbpf: harmless. */
	if (strstr(line, "skipping unrecognized data section"))
		level = VRDMA_LOG_DEBUG;
	log_msg(level, "%s", line);
}

static int libbpf_log(enum libbpf_print_level l, const char *fmt, va_list ap)
{
	lib_log(l == LIBBPF_WARN, fmt, ap);
	return 0;
}

static int libxdp_log(enum libxdp_print_level l, const char *fmt, va_list ap)
{
	lib_log(l == LIBXDP_WARN, fmt, ap);
	return 0;
}

const char *xdp_port_mode_name(const struct xdp_port *port)
{
	return port->mode == XDP_MODE_NATIVE ? "native" : "skb";
}

bool xdp_port_zerocopy(const struct xdp_port *port)
{
	return port->n_queues && port->queues[0].zerocopy;
}

static int query_link(struct xdp_port *port)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr = {};
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", port->ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		err = -errno;
		goto close_fd;
	}
	memcpy(port->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		err = -errno;
		goto close_fd;
	}
	port->mtu = ifr.ifr_mtu;
	port->frame_mtu = port->mtu;
	/* RX queues: ethtool channels where the driver has them, else 1. */
	ifr.ifr_data = (void *)&ch;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0 && ch.rx_count + ch.combined_count)
		port->hw_rx_queues = ch.rx_count + ch.combined_count;
	else
		port->hw_rx_queues = 1;
close_fd:
	close(fd);
	return err;
}

/*
 * The state file: one line "IFINDEX PROG_ID MODE ATTACH CONTROL_SOCKET", e.g.
 * "7 4242 native single /run/vrdmad/control.sock" (ATTACH: single or
 * dispatcher; PROG_ID is our program's, the component's under a dispatcher).
 * It lives beside the control socket, in the runtime directory, which
 * survives a restart of the unit but not a reboot, as XDP programs do.
 */
struct xdp_state {
	int ifindex;
	uint32_t prog_id;
	enum xdp_attach_mode mode;
	bool dispatcher;
	char control_socket[VRDMA_CONF_PATH_MAX + 1];
};

static int state_path(struct xdp_port *port, const char *control_socket)
{
	const char *slash = strrchr(control_socket, '/');
	int dirlen = slash ? (int)(slash - control_socket) + 1 : 0;
	int n;

	/* No control socket (the raw XSK benchmark): no daemon, no record. */
	port->state_path[0] = '\0';
	if (!control_socket[0])
		return 0;
	n = snprintf(port->state_path, sizeof(port->state_path), "%.*sxdp-%s.state",
		     dirlen, control_socket, port->ifname);
	return n < (int)sizeof(port->state_path) ? 0 : -ENAMETOOLONG;
}

static int read_state(const char *path, struct xdp_state *st)
{
	char line[64 + VRDMA_CONF_PATH_MAX + 2], mode[8], attach[12];
	size_t len;
	FILE *f;
	int n = -1;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	if (sscanf(line, "%d %" SCNu32 " %7s %11s %n", &st->ifindex, &st->prog_id, mode,
		   attach, &n) != 4 || n < 0)
		return -EINVAL;
	len = strcspn(line + n, "\n");
	if (!len || len >= sizeof(st->control_socket))
		return -EINVAL;
	memcpy(st->control_socket, line + n, len);
	st->control_socket[len] = '\0';
	if (!strcmp(mode, "native"))
		st->mode = XDP_MODE_NATIVE;
	else if (!strcmp(mode, "skb"))
		st->mode = XDP_MODE_SKB;
	else
		return -EINVAL;
	if (strcmp(attach, "single") && strcmp(attach, "dispatcher"))
		return -EINVAL;
	st->dispatcher = !strcmp(attach, "dispatcher");
	return 0;
}

/* Replaced by rename, so a vrdmad killed while writing leaves the old record
 * or the new one, never half a line. No fsync: the runtime directory is
 * tmpfs, and what it must survive is our death, not the machine's. */
static int write_state(const struct xdp_port *port, const char *control_socket)
{
	char tmp[sizeof(port->state_path) + 4];
	int fd, err = 0;

	if (!port->state_path[0])
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", port->state_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	if (dprintf(fd, "%d %" PRIu32 " %s %s %s\n", port->ifindex, port->prog_id,
		    xdp_port_mode_name(port), port->dispatcher ? "dispatcher" : "single",
		    control_socket) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, port->state_path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* Only while it still records our program: a second vrdmad on this interface
 * (possible under a dispatcher) may have recorded its own since. */
static void remove_state(const struct xdp_port *port)
{
	struct xdp_state st;

	if (port->state_path[0] && read_state(port->state_path, &st) == 0 &&
	    st.ifindex == port->ifindex &&
	    st.prog_id == port->prog_id && unlink(port->state_path) < 0)
		log_warn("cannot remove %s: %s", port->state_path, strerror(errno));
}

/*
 * A vrdmad killed (SIGKILL, the watchdog, a crash) leaves its program on the
 * interface: in single mode the next attach fails with EBUSY, under a
 * dispatcher it would succeed and the dead program would stay in the chain.
 * So before attaching, remove the program our state file records if it is
 * still there: same interface, same control socket (we hold it, so the
 * vrdmad that wrote the record is not running), the program on the interface
 * (the component under a dispatcher) with exactly the recorded id, and named
 * vrdma_xdp. The kernel hands out program ids cyclically from a 31-bit
 * space, and the detach replaces exactly that program (libxdp passes its fd
 * as the one to replace), so nothing else is removed. Failures only mean the
 * attach finds the interface busy and says so.
 */
static void reclaim_leftover(const struct xdp_port *port, const struct vrdma_config *cfg)
{
	struct xdp_program *p = NULL;
	struct xdp_multiprog *mp;
	struct xdp_state st;
	int err;

	if (!port->state_path[0])
		return;
	err = read_state(port->state_path, &st);
	if (err) {
		if (err != -ENOENT)
			log_debug("ignoring %s: %s", port->state_path, strerror(-err));
		return;
	}
	if (st.ifindex != port->ifindex || strcmp(st.control_socket, cfg->control_socket))
		return;
	mp = xdp_multiprog__get_from_ifindex(port->ifindex);
	err = libxdp_get_error(mp);
	if (err || !mp) {
		if (err && err != -ENOENT)
			log_warn("cannot tell whether the XDP program on %s is the one %s "
				 "records: %s%s", port->ifname, port->state_path, strerror(-err),
				 err == -EPERM ? " (vrdmad needs CAP_SYS_ADMIN)" : "");
		return;
	}
	if (xdp_multiprog__attach_mode(mp) != st.mode ||
	    xdp_multiprog__is_legacy(mp) == st.dispatcher)
		goto close_mp;
	if (!st.dispatcher)
		p = xdp_multiprog__main_prog(mp);
	else
		while ((p = xdp_multiprog__next_prog(p, mp)) && xdp_program__id(p) != st.prog_id)
			;
	if (!p || xdp_program__id(p) != st.prog_id ||
	    strcmp(xdp_program__name(p), VRDMA_XDP_PROG_NAME))
		goto close_mp;
	log_warn("removing the XDP program %s (id %" PRIu32 ") that a vrdmad which did not "
		 "exit cleanly left on %s%s", VRDMA_XDP_PROG_NAME, st.prog_id, port->ifname,
		 st.dispatcher ? " (libxdp dispatcher)" : "");
	err = xdp_program__detach(p, port->ifindex, st.mode, 0);
	if (err)
		log_err("cannot remove XDP program %" PRIu32 " from %s: %s", st.prog_id,
			port->ifname, strerror(-err));
close_mp:
	xdp_multiprog__close(mp);
}

/* Name what is on the interface, so the operator knows what to remove. Our
 * own leftover has been removed already (reclaim_leftover): this is someone
 * else's program, or a vrdmad's that left no record (killed before it wrote
 * one, or with another control_socket directory). */
static void explain_busy(const struct xdp_port *port)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(port->ifindex);
	struct xdp_program *p = NULL;

	if (!libxdp_get_error(mp) && mp)
		p = xdp_multiprog__main_prog(mp);
	log_err("%s already has an XDP program%s%s (id %u): if it is left over from a "
		"vrdmad that did not exit cleanly, remove it with "
		"`ip link set dev %s xdp off` (or `xdp-loader unload %s --all`) and start again",
		port->ifname, p ? " " : "", p ? xdp_program__name(p) : "",
		p ? xdp_program__id(p) : 0, port->ifname, port->ifname);
	if (!libxdp_get_error(mp))
		xdp_multiprog__close(mp);
}

static int attach_prog(struct xdp_port *port, const struct vrdma_config *cfg)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, opts,
			    .open_filename = cfg->xdp_object,
			    .prog_name = VRDMA_XDP_PROG_NAME);
	enum xdp_attach_mode modes[2];
	struct xdp_multiprog *mp;
	struct bpf_object *obj;
	unsigned int i, n = 0;
	int err;

	reclaim_leftover(port, cfg);
	port->prog = xdp_program__create(&opts);
	err = libxdp_get_error(port->prog);
	if (err) {
		port->prog = NULL;
		log_err("cannot load the XDP program from %s: %s (set [port] xdp_object to "
			"the installed vrdma_xdp.bpf.o)", cfg->xdp_object, strerror(-err));
		return err;
	}
	/* Headers are always in the first buffer; frags let it attach at MTU 9000. */
	if (!xdp_program__xdp_frags_support(port->prog))
		xdp_program__set_xdp_frags_support(port->prog, true);

	if (cfg->xdp_mode != VRDMA_XDP_SKB)
		modes[n++] = XDP_MODE_NATIVE;
	if (cfg->xdp_mode != VRDMA_XDP_NATIVE)
		modes[n++] = XDP_MODE_SKB;
	for (i = 0; i < n; i++) {
		err = xdp_program__attach(port->prog, port->ifindex, modes[i], 0);
		if (!err)
			break;
		if (err == -EEXIST || err == -EBUSY) {
			explain_busy(port);
			goto close_prog;
		}
		if (err == -EPERM) {
			log_err("cannot attach XDP to %s: %s (vrdmad needs root, or "
				"CAP_NET_ADMIN, CAP_BPF and CAP_SYS_ADMIN)", port->ifname,
				strerror(-err));
			goto close_prog;
		}
		if (i + 1 < n)
			log_info("native XDP on %s failed (%s), trying skb mode",
				 port->ifname, strerror(-err));
	}
	if (err) {
		log_err("cannot attach XDP to %s in %s mode: %s%s", port->ifname,
			cfg->xdp_mode == VRDMA_XDP_NATIVE ? "native" : "skb", strerror(-err),
			cfg->xdp_mode == VRDMA_XDP_NATIVE ? " (try xdp_mode = skb)" : "");
		goto close_prog;
	}
	port->mode = modes[i];
	port->prog_id = xdp_program__id(port->prog);
	mp = xdp_multiprog__get_from_ifindex(port->ifindex);
	if (!libxdp_get_error(mp) && mp) {
		port->dispatcher = !xdp_multiprog__is_legacy(mp);
		xdp_multiprog__close(mp);
	}

	obj = xdp_program__bpf_obj(port->prog);
	port->gids_fd = bpf_object__find_map_fd_by_name(obj, VRDMA_XDP_MAP_GIDS);
	port->xsks_fd = bpf_object__find_map_fd_by_name(obj, VRDMA_XDP_MAP_XSKS);
	port->stats_fd = bpf_object__find_map_fd_by_name(obj, VRDMA_XDP_MAP_STATS);
	if (port->gids_fd < 0 || port->xsks_fd < 0 || port->stats_fd < 0) {
		err = -ENOENT;
		log_err("%s is not vrdmad's XDP program (maps missing)", cfg->xdp_object);
		goto detach_prog;
	}
	/* Without the record a kill leaves the program for the operator to remove. */
	err = write_state(port, cfg->control_socket);
	if (err)
		log_warn("cannot record the XDP program in %s: %s; if vrdmad is killed, "
			 "the next start finds %s busy", port->state_path, strerror(-err),
			 port->ifname);
	return 0;

detach_prog:
	xdp_program__detach(port->prog, port->ifindex, port->mode, 0);
close_prog:
	xdp_program__close(port->prog);
	port->prog = NULL;
	return err;
}

static int xsk_try_create(struct xdp_port *port, struct xsk_queue *q, uint16_t bind_flags)
{
	const struct xsk_umem_config ucfg = {
		.fill_size = XSK_RX_FRAMES,
		.comp_size = XSK_TX_FRAMES,
		.frame_size = XSK_FRAME_SIZE,
	};
	const struct xsk_socket_config scfg = {
		.rx_size = XSK_RX_FRAMES,
		.tx_size = XSK_TX_FRAMES,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD, /* ours is loaded */
		.bind_flags = bind_flags,
	};
	struct xdp_options xopts = {};
	socklen_t optlen = sizeof(xopts);
	int err;

	err = xsk_umem__create(&q->umem, q->area, (uint64_t)XSK_FRAMES * XSK_FRAME_SIZE,
			       &q->fill, &q->comp, &ucfg);
	if (err)
		return err;
	err = xsk_socket__create(&q->xsk, port->ifname, q->queue_id, q->umem,
				 &q->rx, &q->tx, &scfg);
	if (err)
		goto delete_umem;
	if (getsockopt(xsk_socket__fd(q->xsk), SOL_XDP, XDP_OPTIONS, &xopts, &optlen) == 0)
		q->zerocopy = xopts.flags & XDP_OPTIONS_ZEROCOPY;
	return 0;

delete_umem:
	xsk_umem__delete(q->umem);
	q->umem = NULL;
	q->xsk = NULL;
	return err;
}

_Static_assert(VRDMA_CONF_MAX_TX_BUDGET <= XSK_TX_FRAMES, "the kernel caps it at the TX ring");
_Static_assert(VRDMA_CONF_MIN_TX_BUDGET == XSK_TX_BATCH, "below the default is not taken");

/* A copy-mode sendto() sends up to tx_budget frames instead of the
 * kernel's 32 (6.17+): as many syscalls fewer for a burst, each of which
 * costs more than a small frame's copy on a virtual machine. Said once
 * per port where it cannot be had; the socket works either way. */
static void xsk_set_tx_budget(struct xdp_port *port, struct xsk_queue *q, unsigned int budget)
{
	q->tx_batch = XSK_TX_BATCH;
	if (q->zerocopy || budget <= XSK_TX_BATCH)
		return;
	if (!setsockopt(xsk_socket__fd(q->xsk), SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget,
			sizeof(budget))) {
		q->tx_batch = budget;
		return;
	}
	if (q != port->queues)
		return;
	if (errno == ENOPROTOOPT)
		log_info("%s: tx_budget = %u needs kernel 6.17 or later: a sendto() sends %u "
			 "frames at most", port->ifname, budget, XSK_TX_BATCH);
	else
		log_warn("%s: the kernel refused tx_budget = %u (%s): a sendto() sends %u "
			 "frames at most", port->ifname, budget, strerror(errno), XSK_TX_BATCH);
}

static int xsk_open(struct xdp_port *port, struct xsk_queue *q, const struct vrdma_config *cfg)
{
	uint16_t flags = XDP_USE_NEED_WAKEUP | (port->multi_buffer ? XDP_USE_SG : 0);
	bool want_zc = cfg->zerocopy != VRDMA_ZC_OFF && port->mode == XDP_MODE_NATIVE;
	int err = -EOPNOTSUPP;
	char mb_note[48] = "", mb_hint[48] = "";

	if (port->multi_buffer) {
		snprintf(mb_note, sizeof(mb_note), " with multi-buffer (MTU %u)", port->mtu);
		snprintf(mb_hint, sizeof(mb_hint), ", or an MTU of at most %u", XSK_MAX_SINGLE_MTU);
	}
	if (cfg->zerocopy == VRDMA_ZC_ON && port->mode != XDP_MODE_NATIVE) {
		log_err("zerocopy = on needs native XDP, but %s runs in skb mode "
			"(set zerocopy = auto)", port->ifname);
		return -EOPNOTSUPP;
	}
	q->area = mmap(NULL, (size_t)XSK_FRAMES * XSK_FRAME_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->area == MAP_FAILED) {
		q->area = NULL;
		return -errno;
	}
	if (want_zc) {
		/* A driver may do zero-copy, but not with frames in several
		 * buffers: name multi-buffer, so the operator knows the MTU is why. */
		err = xsk_try_create(port, q, flags | XDP_ZEROCOPY);
		if (err && cfg->zerocopy == VRDMA_ZC_ON) {
			log_err("zero-copy AF_XDP%s is not supported on %s queue %u: %s "
				"(set zerocopy = auto or off%s)", mb_note, port->ifname,
				q->queue_id, strerror(-err), mb_hint);
			goto unmap;
		}
		if (err)
			log_info("zero-copy AF_XDP on %s queue %u: %s; using copy mode%s",
				 port->ifname, q->queue_id, strerror(-err),
				 port->multi_buffer ? " with multi-buffer" : "");
	}
	if (err)
		err = xsk_try_create(port, q, flags | XDP_COPY);
	if (err) {
		/* EINVAL with XDP_USE_SG on queue 0: a kernel before 6.6, and
		 * xdp_port_open goes on without */
		if (!(err == -EINVAL && port->multi_buffer && !q->queue_id))
			log_err("cannot create an AF_XDP socket on %s queue %u: %s", port->ifname,
				q->queue_id, strerror(-err));
		goto unmap;
	}
	err = xsk_socket__update_xskmap(q->xsk, port->xsks_fd);
	if (err) {
		log_err("cannot register the AF_XDP socket of %s queue %u: %s",
			port->ifname, q->queue_id, strerror(-err));
		goto delete_socket;
	}
	err = xsk_fill_init(q);
	if (err)
		goto delete_socket;
	xsk_set_tx_budget(port, q, cfg->tx_budget);
	return 0;

delete_socket:
	xsk_socket__delete(q->xsk);
	q->xsk = NULL;
	xsk_umem__delete(q->umem);
	q->umem = NULL;
unmap:
	munmap(q->area, (size_t)XSK_FRAMES * XSK_FRAME_SIZE);
	q->area = NULL;
	return err;
}

/* The port's MTU needs multi-buffer, but it is not to be had: frames over
 * one UMEM chunk are lost, so the VMs get the path MTU a smaller MTU
 * carries. Said once, as a warning: the operator chose the MTU. */
static void single_buffer(struct xdp_port *port, const char *why)
{
	port->multi_buffer = false;
	port->frame_mtu = XSK_MAX_SINGLE_MTU;
	log_warn("%s: %s: frames over %u bytes (MTU %u) are not received, so RoCE runs at path "
		 "MTU %u instead of the %u that MTU %u carries", port->ifname, why,
		 XSK_MAX_SINGLE_FRAME, XSK_MAX_SINGLE_MTU, vdev_roce_mtu(XSK_MAX_SINGLE_MTU),
		 vdev_roce_mtu(port->mtu), port->mtu);
}

static void xsk_close(struct xsk_queue *q)
{
	if (q->xsk)
		xsk_socket__delete(q->xsk);
	if (q->umem)
		xsk_umem__delete(q->umem);
	if (q->area)
		munmap(q->area, (size_t)XSK_FRAMES * XSK_FRAME_SIZE);
	memset(q, 0, sizeof(*q));
}

/* The record goes with the program; it stays if the program does, so that the
 * next start can still remove it. */
static int detach_and_close(struct xdp_port *port)
{
	int err;

	err = xdp_program__detach(port->prog, port->ifindex, port->mode, 0);
	if (!err)
		remove_state(port);
	xdp_program__close(port->prog);
	port->prog = NULL;
	return err;
}

int xdp_port_open(struct xdp_port *port, const struct vrdma_config *cfg)
{
	unsigned int i;
	int err;

	libbpf_set_print(libbpf_log);
	libxdp_set_print(libxdp_log);
	memset(port, 0, sizeof(*port));
	port->gids_fd = port->xsks_fd = port->stats_fd = -1;
	snprintf(port->ifname, sizeof(port->ifname), "%s", cfg->interface);
	port->ifindex = if_nametoindex(port->ifname);
	if (!port->ifindex) {
		err = -errno;
		log_err("interface '%s' does not exist: set [port] interface in %s to one "
			"that `ip link` shows", port->ifname, cfg->path);
		return err;
	}
	err = query_link(port);
	if (err) {
		log_err("cannot query interface %s: %s", port->ifname, strerror(-err));
		return err;
	}
	port->multi_buffer = port->mtu > XSK_MAX_SINGLE_MTU;
	if (port->multi_buffer && cfg->multi_buffer == VRDMA_MB_OFF)
		single_buffer(port, "multi_buffer = off");
	port->n_queues = cfg->queues ? cfg->queues : port->hw_rx_queues;
	if (port->n_queues > port->hw_rx_queues) {
		log_err("[port] queues = %u, but %s has only %u receive queue(s)",
			cfg->queues, port->ifname, port->hw_rx_queues);
		return -EINVAL;
	}
	if (port->n_queues > VRDMA_XDP_MAX_QUEUES)
		port->n_queues = VRDMA_XDP_MAX_QUEUES;
	err = state_path(port, cfg->control_socket);
	if (err) {
		log_err("the path of the XDP state file beside %s is too long",
			cfg->control_socket);
		return err;
	}

	err = attach_prog(port, cfg);
	if (err)
		return err;
	port->queues = calloc(port->n_queues, sizeof(*port->queues));
	if (!port->queues) {
		err = -ENOMEM;
		goto detach_prog;
	}
	for (i = 0; i < port->n_queues; i++) {
		port->queues[i].queue_id = i;
		err = xsk_open(port, &port->queues[i], cfg);
		if (err == -EINVAL && port->multi_buffer && !i) {
			single_buffer(port, "the kernel refused AF_XDP multi-buffer "
				      "(XDP_USE_SG needs 6.6 or later)");
			err = xsk_open(port, &port->queues[i], cfg);
		}
		if (err)
			goto close_queues;
	}
	log_info("port %s: XDP %s%s, AF_XDP %s, %u queue(s), MTU %u%s, %u frames per sendto",
		 port->ifname, xdp_port_mode_name(port), port->dispatcher ? " (libxdp dispatcher)" : "",
		 xdp_port_zerocopy(port) ? "zero-copy" : "copy mode", port->n_queues,
		 port->mtu, port->multi_buffer ? ", multi-buffer" : "", port->queues[0].tx_batch);
	return 0;

close_queues:
	while (i--)
		xsk_close(&port->queues[i]);
	free(port->queues);
	port->queues = NULL;
detach_prog:
	detach_and_close(port);
	return err;
}

void xdp_port_close(struct xdp_port *port)
{
	unsigned int i;
	int err;

	for (i = 0; port->queues && i < port->n_queues; i++)
		xsk_close(&port->queues[i]);
	free(port->queues);
	port->queues = NULL;
	if (port->prog) {
		err = detach_and_close(port);
		if (err)
			log_err("cannot detach the XDP program from %s: %s; remove it with "
				"`ip link set dev %s xdp off`", port->ifname, strerror(-err),
				port->ifname);
	}
}

int xdp_port_serve_gid(struct xdp_port *port, const struct vrdma_gid *gid, uint32_t vm_id)
{
	struct vrdma_gid_val val = { .vm_id = vm_id };

	return bpf_map_update_elem(port->gids_fd, gid, &val, BPF_ANY) ? -errno : 0;
}

int xdp_port_unserve_gid(struct xdp_port *port, const struct vrdma_gid *gid)
{
	return bpf_map_delete_elem(port->gids_fd, gid) ? -errno : 0;
}

int xdp_port_read_stats(const struct xdp_port *port, uint64_t out[VRDMA_XDP_STAT_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	uint32_t k;
	int c;

	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (k = 0; k < VRDMA_XDP_STAT_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(port->stats_fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

int xdp_port_read_xsk_stats(const struct xdp_port *port, struct xsk_kernel_stats *out)
{
	unsigned int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < port->n_queues; i++) {
		struct xdp_statistics st;
		socklen_t len = sizeof(st);

		if (getsockopt(xsk_socket__fd(port->queues[i].xsk), SOL_XDP, XDP_STATISTICS,
			       &st, &len) < 0)
			return -errno;
		out->rx_dropped += st.rx_dropped;
		out->rx_ring_full += st.rx_ring_full;
		out->rx_fill_ring_empty += st.rx_fill_ring_empty_descs;
		out->rx_invalid_descs += st.rx_invalid_descs;
		out->tx_invalid_descs += st.tx_invalid_descs;
		out->tx_ring_empty += st.tx_ring_empty_descs;
	}
	return 0;
}
