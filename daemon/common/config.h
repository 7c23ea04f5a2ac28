/* SPDX-License-Identifier: GPL-2.0-only */
/* vrdmad configuration: /etc/vrdmad.conf, INI style (see vrdmad.conf(5)). */
#ifndef VRDMAD_CONFIG_H
#define VRDMAD_CONFIG_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "vrdma_control.h"

#define VRDMA_CONF_DEFAULT_PATH "/etc/vrdmad.conf"
#define VRDMA_CONF_DEFAULT_CONTROL VRDMA_CONTROL_DEFAULT_SOCKET
#define VRDMA_CONF_MAX_WORKERS 64
#define VRDMA_CONF_MAX_CPU 1023		/* CPU_SETSIZE - 1 */
#define VRDMA_CONF_MAX_VMS 256
#define VRDMA_CONF_MAX_GIDS 16		/* per VM */
#define VRDMA_CONF_NAME_MAX 63		/* VM name: [A-Za-z0-9_.-], first alnum */
#define VRDMA_CONF_PATH_MAX 107		/* sun_path minus NUL */
#define VRDMA_CONF_ERR_MAX 512
#define VRDMA_CONF_DEFAULT_QUEUES 64	/* max_cq and max_qp of a VM */
#define VRDMA_CONF_MAX_QUEUES 16384	/* the RFC's bound */
#define VRDMA_CONF_DEFAULT_IDLE_SPIN_US 50
#define VRDMA_CONF_DEFAULT_CNP_INTERVAL_US 50
/* Frames one copy-mode sendto() may send (XDP_MAX_TX_SKB_BUDGET): the
 * kernel's own TX_BATCH_SIZE up to a socket's TX ring. */
#define VRDMA_CONF_MIN_TX_BUDGET 32
#define VRDMA_CONF_MAX_TX_BUDGET 2048
#define VRDMA_CONF_DEFAULT_TX_BUDGET 256
#define VRDMA_CONF_MAX_CNP_INTERVAL_US 1000000
#define VRDMA_CONF_MAX_VQS 256		/* vhost-user's 8-bit queue index */
#define VRDMA_CONF_DEFAULT_MAX_MR 4096	/* MRs of a VM */
#define VRDMA_CONF_MAX_MR 65536		/* the engine's MR table */
#define VRDMA_CONF_DEFAULT_RING_QUEUES 4096	/* ring_max_cq and ring_max_qp */
#define VRDMA_CONF_MAX_RING_QUEUES 16384	/* the engine's QP and CQ tables */
/* 4 KiB pages over all MRs of a VM: 8 GiB registered, 16 MiB of the
 * daemon's memory at 8 bytes a page. */
#define VRDMA_CONF_DEFAULT_MAX_MR_PAGES (1u << 21)
#define VRDMA_CONF_MAX_MR_PAGES (1u << 28)	/* 1 TiB, 2 GiB of page tables */

enum vrdma_log_level { /* syslog priorities, so they map onto sd-daemon prefixes */
	VRDMA_LOG_ERROR = 3,
	VRDMA_LOG_WARNING = 4,
	VRDMA_LOG_INFO = 6,
	VRDMA_LOG_DEBUG = 7,
};

enum vrdma_xdp_mode { VRDMA_XDP_AUTO, VRDMA_XDP_NATIVE, VRDMA_XDP_SKB };
enum vrdma_zerocopy { VRDMA_ZC_AUTO, VRDMA_ZC_ON, VRDMA_ZC_OFF };
enum vrdma_multi_buffer { VRDMA_MB_AUTO, VRDMA_MB_OFF };

struct vrdma_vm_config {
	char name[VRDMA_CONF_NAME_MAX + 1];
	char socket[VRDMA_CONF_PATH_MAX + 1];	/* default /run/vrdmad/NAME.sock */
	struct vrdma_gid gids[VRDMA_CONF_MAX_GIDS];
	unsigned int n_gids;
	uint8_t mac[6];
	bool has_mac;				/* false: use the port's MAC */
	unsigned int max_cq, max_qp;		/* virtio-rdma queues: 1..16384, default 64 */
	unsigned int max_mr;			/* 1..65536, default 4096 */
	unsigned int max_mr_pages;		/* pages of all its MRs, default 2^21 */
	/* CQs and QPs (SRQs included) with ABI v2's rings, which need no
	 * virtqueue: 1..16384, default 4096 */
	unsigned int ring_max_cq, ring_max_qp;
	char socket_owner[33], socket_group[33];	/* user/group name or number; "" = ours */
	unsigned int socket_mode;		/* default 0600 */
	unsigned int line;			/* of its [vm NAME] header */
};

struct vrdma_config {
	char path[VRDMA_CONF_PATH_MAX + 1];	/* file it came from, for messages */
	/* [daemon] */
	unsigned int workers;			/* 1..VRDMA_CONF_MAX_WORKERS, default 1 */
	char control_socket[VRDMA_CONF_PATH_MAX + 1];
	enum vrdma_log_level log_level;		/* default info */
	unsigned int idle_spin_us;		/* busy-poll this long before sleeping; default 50 */
	/* worker i runs on CPU worker_cpus[i]; none (not pinned) by default */
	uint16_t worker_cpus[VRDMA_CONF_MAX_WORKERS];
	unsigned int n_worker_cpus, worker_cpus_line;
	/* [port] */
	char interface[IF_NAMESIZE];		/* required */
	enum vrdma_xdp_mode xdp_mode;		/* default auto */
	enum vrdma_zerocopy zerocopy;		/* default auto */
	enum vrdma_multi_buffer multi_buffer;	/* default auto */
	unsigned int queues;			/* 0 = every RX queue of the interface */
	char xdp_object[4096];			/* BPF object; default VRDMA_XDP_OBJECT_DEFAULT */
	bool ecn;				/* ECT(0) out, CNPs for CE; default on */
	unsigned int cnp_interval_us;		/* one CNP per QP at most this often; 50 */
	unsigned int tx_budget;			/* frames per copy-mode sendto; 256 */
	/* [vm NAME] sections, in file order */
	struct vrdma_vm_config *vms;
	unsigned int n_vms;
};

/* Parse a file / a string into *cfg (which is overwritten). On error returns a
 * negative errno and writes one line "FILE:LINE: what is wrong" (or
 * "FILE: what is wrong" where no line applies) into err. cfg needs
 * vrdma_config_free() only on success. */
int vrdma_config_load(struct vrdma_config *cfg, const char *path,
		      char *err, size_t errlen);
int vrdma_config_parse_string(struct vrdma_config *cfg, const char *name,
			      const char *text, char *err, size_t errlen);
void vrdma_config_free(struct vrdma_config *cfg);

/* One VM from (key, value) pairs named as in a [vm NAME] section (vrdmactl
 * add-vm), with the same checks; errors read "add-vm: what is wrong". */
int vrdma_vm_config_from_keys(struct vrdma_vm_config *vc, const char *name,
			      const char *const (*kv)[2], unsigned int n, char *err, size_t errlen);
/* Same VM, same settings (the line it was found on does not count). */
bool vrdma_vm_config_equal(const struct vrdma_vm_config *a, const struct vrdma_vm_config *b);

/* The enums by the names the file uses: 0, or -EINVAL for none of them. */
int vrdma_log_level_parse(enum vrdma_log_level *l, const char *s);
int vrdma_xdp_mode_parse(enum vrdma_xdp_mode *m, const char *s);
int vrdma_zerocopy_parse(enum vrdma_zerocopy *z, const char *s);
int vrdma_multi_buffer_parse(enum vrdma_multi_buffer *m, const char *s);
const char *vrdma_xdp_mode_name(enum vrdma_xdp_mode m);
const char *vrdma_zerocopy_name(enum vrdma_zerocopy z);
const char *vrdma_multi_buffer_name(enum vrdma_multi_buffer m);
const char *vrdma_log_level_name(enum vrdma_log_level l);

#endif
