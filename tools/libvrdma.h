/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libvrdma: a user-space front end for vrdmad's virtio-rdma device. It plays
 * both QEMU (the vhost-user front-end: shared memory through SET_MEM_TABLE,
 * vring setup, eventfds) and the guest driver (the control queue, WQEs, CQEs),
 * behind a small verbs-like API. For tests, tools, and host processes that
 * use the daemon directly. The ABI is docs/virtio-rdma.md.
 *
 * Errors: 0 or a negative errno, as everywhere in vrdmad. A device status
 * byte maps to INVAL -EINVAL, NOENT -ENOENT, NOMEM -ENOMEM, BUSY -EBUSY,
 * PERM -EPERM, FAULT -EFAULT, UNSUPP -EOPNOTSUPP; a device that does not
 * answer within the context's timeout gives -ETIMEDOUT, a closed connection
 * -ECONNRESET. A context and everything made from it is used by one thread.
 */
#ifndef LIBVRDMA_H
#define LIBVRDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "virtio_rdma.h"

struct vrdma_ctx;
struct vrdma_pd;
struct vrdma_mr;
struct vrdma_mw;
struct vrdma_cq;
struct vrdma_qp;
struct vrdma_srq;

struct vrdma_open_attr {
	size_t mem_size;		/* shared memory; 0: 64 MiB */
	unsigned int timeout_ms;	/* control commands and vhost-user replies; 0: 5000 */
};

int vrdma_open(const char *socket_path, const struct vrdma_open_attr *attr,
	       struct vrdma_ctx **ctx);
/* Frees everything and closes the connection (the daemon then frees the
 * device's resources). */
void vrdma_close(struct vrdma_ctx *ctx);

/* The whole config space (GET_CONFIG). */
int vrdma_query_device(struct vrdma_ctx *ctx, struct virtio_rdma_config *cfg);
int vrdma_query_port(struct vrdma_ctx *ctx, uint8_t port,
		     struct virtio_rdma_rsp_query_port *attr);
/* From the config space's GID table; -ENOENT for an empty entry. */
int vrdma_query_gid(struct vrdma_ctx *ctx, unsigned int index, uint8_t gid[16]);
int vrdma_query_pkey(struct vrdma_ctx *ctx, uint32_t port, uint16_t index, uint16_t *pkey);
int vrdma_add_gid(struct vrdma_ctx *ctx, uint16_t index, const uint8_t gid[16]);
int vrdma_del_gid(struct vrdma_ctx *ctx, uint16_t index);

/* Raw control command, for tests of malformed requests: req/rsp as on the
 * wire without the command and status bytes; *status gets the status byte,
 * *rsp_written the used length minus 1 (or 0). Returns 0 when the device
 * answered (whatever the status). */
int vrdma_ctrl_raw(struct vrdma_ctx *ctx, uint8_t cmd, const void *req, size_t req_len,
		   void *rsp, size_t rsp_len, uint8_t *status, uint32_t *rsp_written);

/* Buffers in the shared memory (4 KiB aligned): only these can be
 * registered. Freed with vrdma_free_buf or at close. */
void *vrdma_alloc_buf(struct vrdma_ctx *ctx, size_t len);
void vrdma_free_buf(struct vrdma_ctx *ctx, void *buf);

/* The shared memory a program needs (vrdma_open's mem_size) is the sum of
 * what it makes: vrdma_mem_ctx() for the context itself, vrdma_mem_buf for
 * each buffer, vrdma_mem_reg_mr for each registration (a page list that
 * lives while the command runs), vrdma_mem_cq and vrdma_mem_qp for each CQ
 * and QP (rings and WQE slots). Each allocation takes whole 4 KiB pages. */
size_t vrdma_mem_ctx(void);
size_t vrdma_mem_buf(size_t len);
size_t vrdma_mem_reg_mr(size_t len);
size_t vrdma_mem_cq(uint32_t cqe);
struct vrdma_qp_init_attr;
size_t vrdma_mem_qp(const struct vrdma_qp_init_attr *init);
size_t vrdma_mem_srq(uint32_t max_wr, uint32_t max_sge);

int vrdma_alloc_pd(struct vrdma_ctx *ctx, struct vrdma_pd **pd);
int vrdma_dealloc_pd(struct vrdma_pd *pd);
uint32_t vrdma_pd_handle(const struct vrdma_pd *pd);

/* REG_USER_MR over [addr, addr + len) of a vrdma_alloc_buf buffer; the iova
 * is addr itself, as with ibv_reg_mr. access: IB access flags. */
int vrdma_reg_mr(struct vrdma_pd *pd, void *addr, size_t len, unsigned int access,
		 struct vrdma_mr **mr);
int vrdma_get_dma_mr(struct vrdma_pd *pd, unsigned int access, struct vrdma_mr **mr);
int vrdma_create_mr(struct vrdma_pd *pd, unsigned int access, uint32_t max_num_sg,
		    struct vrdma_mr **mr);
/* MAP_MR_SG: the MR covers [addr, addr + len), iova = addr. */
int vrdma_map_mr_sg(struct vrdma_mr *mr, void *addr, size_t len);
int vrdma_dereg_mr(struct vrdma_mr *mr);
uint32_t vrdma_mr_lkey(const struct vrdma_mr *mr);
uint32_t vrdma_mr_rkey(const struct vrdma_mr *mr);
uint32_t vrdma_mr_handle(const struct vrdma_mr *mr);
/* ib_update_fast_reg_key: the low 8 bits of a CREATE_MR MR's keys, as the
 * next REG_MR will set them (wr.reg.key = vrdma_mr_rkey afterwards). */
void vrdma_update_fast_reg_key(struct vrdma_mr *mr, uint8_t key);
/* Memory windows (type 2: VIRTIO_IB_MW_TYPE_2; type 1 is -EOPNOTSUPP).
 * vrdma_bind_mw posts a signalled BIND_MW work request on qp (its
 * completion, opcode IB_WC_BIND_MW 5, is the caller's to poll) with the
 * window's key moved on as ibv_inc_rkey does: vrdma_mw_rkey says the new
 * key from then on. access: VIRTIO_IB_ACCESS_REMOTE_*. */
struct vrdma_mw_bind {
	struct vrdma_mr *mr;		/* with VIRTIO_IB_ACCESS_MW_BIND */
	uint64_t addr, length;		/* in the MR's iova space */
	uint32_t access;
};
int vrdma_alloc_mw(struct vrdma_pd *pd, uint32_t type, struct vrdma_mw **mw);
int vrdma_dealloc_mw(struct vrdma_mw *mw);
uint32_t vrdma_mw_rkey(const struct vrdma_mw *mw);
int vrdma_bind_mw(struct vrdma_qp *qp, struct vrdma_mw *mw, uint64_t wr_id,
		  const struct vrdma_mw_bind *bind);

/* The guest-physical address of a shared-memory pointer (for GET_DMA_MR
 * iovas and raw tests); 0 if p is not in the shared memory. */
uint64_t vrdma_gpa(struct vrdma_ctx *ctx, const void *p);

/* CREATE_CQ, then the CQ's virtqueue is set up and filled with buffers. */
int vrdma_create_cq(struct vrdma_ctx *ctx, uint32_t cqe, struct vrdma_cq **cq);
int vrdma_destroy_cq(struct vrdma_cq *cq);
uint32_t vrdma_cq_handle(const struct vrdma_cq *cq);
/* Up to n completions; returns how many (0: none now), or -EIO for a used
 * entry the device should not have written. Asynchronous-event CQEs (opcode
 * VIRTIO_RDMA_WC_ASYNC_EVENT) are returned like completions. A poll that
 * finds nothing yields the CPU (sched_yield), so that a program polling in a
 * loop leaves the core to the daemon it waits for; VRDMA_POLL_YIELD=0 in the
 * environment (read by vrdma_open) makes it return at once instead. */
int vrdma_poll_cq(struct vrdma_cq *cq, int n, struct virtio_rdma_cqe *wc);
/* With VRDMA_RINGS=1 in the environment (read by vrdma_open) the context
 * negotiates ABI v2: CQs and QPs are rings in the shared memory, posted and
 * polled without a message to the daemon; vrdma_req_notify_cq writes the
 * CQ's arm word, vrdma_cq_fd is the context's event queue eventfd (shared
 * by its CQs; vrdma_cq_wait sorts the events out); SRQ QPs are -EOPNOTSUPP
 * (not built yet). */
int vrdma_req_notify_cq(struct vrdma_cq *cq, bool solicited_only);
/* The CQ queue's call eventfd, and a wait on it (timeout_ms < 0: forever):
 * 1 when it fired (and was read), 0 on timeout, -ECONNRESET if the daemon
 * went away. */
int vrdma_cq_fd(const struct vrdma_cq *cq);
int vrdma_cq_wait(struct vrdma_cq *cq, int timeout_ms);

struct vrdma_qp_init_attr {
	uint8_t qp_type;		/* VIRTIO_IB_QPT_RC / UC / UD */
	bool sq_sig_all;
	struct vrdma_cq *send_cq, *recv_cq;
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	struct vrdma_srq *srq;		/* receives from it: max_recv_* unused, no RQ */
};

/* CREATE_QP, then its SQ and RQ virtqueues are set up (no RQ on an SRQ). */
int vrdma_create_qp(struct vrdma_pd *pd, const struct vrdma_qp_init_attr *init,
		    struct vrdma_qp **qp);
int vrdma_destroy_qp(struct vrdma_qp *qp);
uint32_t vrdma_qp_num(const struct vrdma_qp *qp);
/* MODIFY_QP. With VIRTIO_IB_QP_AV and an all-zero ah_attr.dmac, the
 * destination MAC is resolved first with vrdma_resolve_mac (left zero if it
 * cannot be: a GID of the same daemon needs none). */
int vrdma_modify_qp(struct vrdma_qp *qp, const struct virtio_rdma_qp_attr *attr,
		    uint32_t attr_mask);
int vrdma_query_qp(struct vrdma_qp *qp, uint32_t attr_mask, struct virtio_rdma_qp_attr *attr);

struct vrdma_sge {
	uint64_t addr;		/* iova (with inline: a pointer in this process) */
	uint32_t length;
	uint32_t lkey;
};

struct vrdma_send_wr {
	uint64_t wr_id;
	uint32_t opcode;		/* VIRTIO_IB_WR_* */
	uint32_t send_flags;		/* VIRTIO_IB_SEND_* */
	uint32_t imm_data;		/* network byte order */
	const struct vrdma_sge *sg_list;
	uint32_t num_sge;
	uint64_t remote_addr;		/* RDMA and atomics */
	uint32_t rkey;
	uint64_t compare_add, swap;	/* atomics (ib_atomic_wr) */
	uint32_t remote_qpn, remote_qkey;	/* UD */
	struct virtio_rdma_av av;		/* UD; zero dmac: resolved as above */
	uint32_t invalidate_rkey;		/* LOCAL_INV, SEND_WITH_INV */
	struct { uint32_t mrn, key, access; } reg;	/* REG_MR (vrdma_mr_handle) */
	struct {					/* BIND_MW (wr.bind_mw) */
		uint64_t addr, length;
		uint32_t mw_rkey, rkey, mr_lkey, access;
	} bind;
};

struct vrdma_recv_wr {
	uint64_t wr_id;
	const struct vrdma_sge *sg_list;
	uint32_t num_sge;
};

/* Put one WQE in the ring (copied; inline data too). -ENOMEM when the ring
 * has no free descriptor. */
int vrdma_post_send(struct vrdma_qp *qp, const struct vrdma_send_wr *wr);
int vrdma_post_recv(struct vrdma_qp *qp, const struct vrdma_recv_wr *wr);
/* Shared receive queues: CREATE_SRQ, then the RQ virtqueue of the slot it
 * holds is set up. srq_limit arms the limit at once (0: not). */
int vrdma_create_srq(struct vrdma_pd *pd, uint32_t max_wr, uint32_t max_sge, uint32_t srq_limit,
		     struct vrdma_srq **srq);
int vrdma_destroy_srq(struct vrdma_srq *srq);
uint32_t vrdma_srq_handle(const struct vrdma_srq *srq);
/* MODIFY_SRQ: attr_mask VIRTIO_IB_SRQ_* (MAX_WR: -EOPNOTSUPP). */
int vrdma_modify_srq(struct vrdma_srq *srq, uint32_t attr_mask, uint32_t max_wr,
		     uint32_t srq_limit);
int vrdma_query_srq(struct vrdma_srq *srq, struct virtio_rdma_rsp_query_srq *attr);
int vrdma_post_srq_recv(struct vrdma_srq *srq, const struct vrdma_recv_wr *wr);

/* For tests: put raw bytes as one SQ/RQ WQE (readable chain). */
int vrdma_post_raw(struct vrdma_qp *qp, bool recv, const void *wqe, size_t len);

/* The destination MAC for a GID (IPv4-mapped or IPv6): for an address of
 * this host, its interface's MAC; otherwise from the kernel neighbour table,
 * probing the address once if it is not there yet (as a guest kernel
 * resolves it). -EHOSTUNREACH if still unknown after ~1 s. */
int vrdma_resolve_mac(const uint8_t gid[16], uint8_t mac[6]);

/* The vhost-user connection's fd: a test may shutdown(fd, SHUT_RDWR) it to
 * simulate a crashed front-end (not close it: vrdma_close does). */
int vrdma_socket_fd(const struct vrdma_ctx *ctx);

#endif
