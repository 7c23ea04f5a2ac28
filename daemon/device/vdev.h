/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The virtio-rdma device model (docs/virtio-rdma.md): config space, the
 * control queue, WQEs from the send and receive queues into the transport
 * engine, completions into the CQ queues, notifications and events.
 *
 * A device belongs to one worker thread, which alone runs vdev_poll() and
 * vdev_rx(); the control thread changes it (vhost-user messages) only while
 * that worker is quiesced through struct vdev_sync.
 */
#ifndef VRDMAD_VDEV_H
#define VRDMAD_VDEV_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "save.h"
#include "vhost_backend.h"
#include "virtio_rdma.h"

/* How the control thread reaches the owning worker. */
struct vdev_sync {
	void (*quiesce)(void *ctx);
	void (*resume)(void *ctx);
	void (*kick_changed)(void *ctx, int old_fd, int new_fd);
	void (*broken)(void *ctx);	/* the device was just marked broken */
	void *ctx;
};

struct vdev_port {
	unsigned int mtu;		/* the NIC's, bytes */
	uint8_t mac[6];
	struct eng_cc_config cc;	/* [port] ecn, cnp_interval_us */
};
/* The RoCE path MTU in bytes (256..4096) that a NIC MTU carries: what
 * QUERY_PORT offers as max_mtu and active_mtu (1500 -> 1024, 9000 -> 4096). */
unsigned int vdev_roce_mtu(unsigned int nic_mtu);

struct vdev_stats {
	uint64_t ctrl_cmds, ctrl_errors;
	uint64_t send_wqes, recv_wqes, refused_wqes;
	uint64_t srq_wqes;		/* receive WQEs taken into SRQs */
	uint64_t refused_srq_wqes;	/* malformed ones on an SRQ's queue: dropped */
	uint64_t cqes, events, events_lost;
	uint64_t broken;		/* times the device was marked broken */
	uint64_t refused_mrs;		/* MR commands refused at max_mr or max_mr_pages */
	uint64_t refused_mws;		/* ALLOC_MW refused at max_mr windows */
	uint64_t interrupts;		/* call eventfds signalled, CQs' included */
	uint64_t cq_interrupts;		/* of which for completions REQ_NOTIFY_CQ asked */
	uint64_t refused_db_pages;	/* ADD_DB_PAGE refused at VDEV_MAX_DB_PAGES */
	uint64_t ring_errors;		/* rings put in error: a lying index, a page gone */
	uint64_t stray_doorbells;	/* doorbell bits that named no ring */
	uint64_t ring_wqes;		/* WQEs taken from rings (of send_wqes, recv_wqes) */
	uint64_t events_late;		/* ring events that waited for an event buffer */
};

#define VDEV_MAX_PD	1024
#define VDEV_MAX_QP_WR	4096
#define VDEV_MAX_WQE	(sizeof(struct virtio_rdma_cmd_post_send) + \
			 ENG_MAX_SGE * sizeof(struct virtio_rdma_sge) + ENG_MAX_INLINE)
#define VDEV_MAX_PAGES	((1u << 20) + 1)	/* 4 GiB MRs, unaligned start */
/* Page entries the control commands of one poll may read or free: a VM's
 * heavy page lists delay the other devices of its worker by at most this
 * plus one command. */
#define VDEV_POLL_PAGES	(1u << 18)
/* ABI v2: doorbell pages per VM (one per guest process that uses rings,
 * and the kernel's). */
#define VDEV_MAX_DB_PAGES	64

struct vdev_cq;
struct vdev_qp;
struct vdev_mr;
struct vdev_db;

struct vdev {
	struct vu_dev vu;
	const struct vrdma_vm_config *cfg;
	uint32_t vm_id;
	uint32_t max_cq, max_qp;		/* v1: its virtqueues */
	/* The tables' slots in use by the engine's limits: v1's max_cq and
	 * max_qp, or with ABI v2 (rings) the config's ring_max_cq/qp. The
	 * tables grow to the largest ever needed (cqs_cap, qps_cap). */
	uint32_t n_cqs, n_qps, cqs_cap, qps_cap;
	bool ring_mode;				/* n_* are v2's */
	uint32_t max_mr, max_mr_pages;		/* the VM's, from its config */
	uint64_t mr_pages;			/* charged to its MRs (CREATE_MR: max_num_sg) */
	uint64_t poll_pages;			/* page entries read or freed in this poll */
	/* One past the highest CQ and QP slot ever used since the last reset:
	 * the fast path scans only those (64 empty slots cost a third of a
	 * busy worker's loop). */
	uint32_t cq_hi, qp_hi;
	struct vdev_port port;
	struct eng_dev *eng;
	struct eng_ops eng_ops;
	struct eng_tx tx;		/* the worker's clock and wire, for the engine */
	struct vdev_sync sync;
	struct virtio_rdma_config config;	/* gid_tbl is the live GID table */
	bool gid_valid[VIRTIO_RDMA_GID_TBL_LEN];
	struct vdev_cq *cqs;			/* [cqs_cap] */
	struct vdev_qp *qps;			/* [qps_cap] */
	struct eng_pd **pds;			/* [VDEV_MAX_PD] */
	struct vdev_mr **mrs;			/* [max_mr], index = mrn */
	struct vdev_db *dbs[VDEV_MAX_DB_PAGES];	/* ABI v2, index = dbn */
	uint32_t *ring_pend;			/* [VDEV_PEND_CAP(qps_cap)] rings to look at */
	/* ring CQs with something to write or an arm to read, by slot
	 * [cqs_cap / 64]: the poll looks at those alone */
	uint64_t *cq_dirty;
	uint32_t n_ring_pend;
	uint32_t n_ev_owed;			/* ring CQs with an event owed (ev_owed) */
	/* need_wake's number for the last sleep: random at start, so that a
	 * guest that kicked for a sleep of an earlier vrdmad kicks again */
	uint32_t wake_seq;
	bool broken;
	bool frozen;				/* saved for the next vrdmad: nothing changes it */
	struct vdev_stats stats;
	uint8_t wqe_buf[VDEV_MAX_WQE];		/* a stable copy of one WQE */
};

int vdev_init(struct vdev *v, const struct vrdma_vm_config *cfg, uint32_t vm_id,
	      const struct vdev_port *port, const struct eng_tx *tx,
	      const struct vdev_sync *sync);
void vdev_free(struct vdev *v);

/* Work the queues, the engine's timers and transmissions. Returns how much
 * was done (0: idle); *next_timer gets the earliest engine timer or 0. */
unsigned int vdev_poll(struct vdev *v, uint64_t *next_timer);
/* A received frame for this VM. */
void vdev_rx(struct vdev *v, const struct roce_pkt *pkt);
/* Before sleeping: ask for kicks and say whether work arrived meanwhile.
 * After waking: stop kicks. */
bool vdev_want_kicks(struct vdev *v, bool wanted);

/* Restarts that keep the device (docs/restart.md). The fds a saved device
 * needs again travel beside its state, named by kind and index: the
 * connection (0), a memory region's file (the first region backed by it),
 * a queue's kick, call and err eventfds (the queue). */
#define VDEV_STATE_FORMAT	2	/* 2: ABI v2's rings; 1 is read too */
#define VDEV_WRITER_MAX		32	/* "vrdmad VERSION", in the header */
enum vdev_fd_kind { VDEV_FD_CONN, VDEV_FD_MEM, VDEV_FD_KICK, VDEV_FD_CALL, VDEV_FD_ERR };
/* Keep fd (still the device's) under kind and index: 0, or an error that
 * stops the save. */
typedef int (*vdev_keep_fd_fn)(void *ctx, enum vdev_fd_kind kind, unsigned int index, int fd);
/* The fd kept under kind and index, now the device's, or a negative errno. */
typedef int (*vdev_take_fd_fn)(void *ctx, enum vdev_fd_kind kind, unsigned int index);

/* Who saved a state, and when (CLOCK_MONOTONIC: one boot, one clock). */
struct vdev_state_info {
	char writer[VDEV_WRITER_MAX + 1];	/* "vrdmad VERSION" */
	uint64_t saved_ns;
};

/* Append v's whole state to b (its worker quiesced), each fd it holds given
 * to keep first. 0; -ENOTCONN for a device not worth keeping (no
 * connection, or broken); keep's error; -ENOMEM. */
int vdev_save(struct vdev *v, const struct vdev_state_info *info, struct sbuf *b,
	      vdev_keep_fd_fn keep, void *ctx);
/* Rebuild a fresh device (vdev_init, no connection) from a state and the
 * fds take gives: connected again as it was, its objects with their names.
 * 0, or an error with why set, and then v is fresh again, every fd it took
 * closed: -EBADMSG (damaged, cut short), -EPROTONOSUPPORT (another format),
 * -ERANGE (the VM's limits, addresses or the port's MTU changed), -EINVAL
 * (another VM's), a missing fd's error, -ENOMEM. */
int vdev_restore(struct vdev *v, const uint8_t *p, size_t len, vdev_take_fd_fn take, void *ctx,
		 struct vdev_state_info *info, char *why, size_t whylen);

/* The device is connected and usable. */
static inline bool vdev_live(const struct vdev *v)
{
	return v->vu.fd >= 0 && !v->broken && !v->frozen;
}

#endif
