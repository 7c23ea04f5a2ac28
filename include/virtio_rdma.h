/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The virtio-rdma device ABI as vrdmad implements it: the standalone device
 * of the "[RFC] Virtio RDMA" (virtio-dev, device ID 42) with natural
 * alignment, every offset written down below. docs/virtio-rdma.md explains
 * each structure and every choice made where the RFC is silent.
 *
 * All multi-byte fields are little-endian (the RFC's le32/le64). Shared by
 * the daemon, libvrdma, the tests and the guest driver (guest/kernel/).
 */
#ifndef VIRTIO_RDMA_H
#define VIRTIO_RDMA_H

#ifdef __KERNEL__	/* guest/kernel/ includes it too */
#include <linux/errno.h>
#include <linux/stddef.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#endif

#define VIRTIO_ID_RDMA			42

/* Virtqueues: 0 = control, 1 + n = CQ n (n < max_cq), then one SQ/RQ pair
 * per QP slot k (k < max_qp). */
#define VIRTIO_RDMA_CTRL_VQ		0
#define VIRTIO_RDMA_CQ_VQ(n)		(1u + (n))
#define VIRTIO_RDMA_SQ_VQ(max_cq, k)	(1u + (max_cq) + 2u * (k))
#define VIRTIO_RDMA_RQ_VQ(max_cq, k)	(2u + (max_cq) + 2u * (k))
#define VIRTIO_RDMA_NUM_VQS(max_cq, max_qp) (1u + (max_cq) + 2u * (max_qp))
/* QP numbers (on the wire and in every command) are random in
 * [VIRTIO_RDMA_FIRST_QPN, VIRTIO_RDMA_LAST_QPN]: 0 and 1 are IB's special
 * QPs, 2^24 - 1 is multicast; a GSI QP is 1 (VIRTIO_RDMA_GSI_QPN).
 * CREATE_QP also says the QP's slot k. */
#define VIRTIO_RDMA_FIRST_QPN		16u
#define VIRTIO_RDMA_LAST_QPN		0xfffffeu
#define VIRTIO_RDMA_PAGE_SIZE		4096u	/* REG_USER_MR / MAP_MR_SG pages */

/* ---- configuration space (read with vhost-user GET_CONFIG) ---- */

enum virtio_ib_atomic_cap { VIRTIO_IB_ATOMIC_NONE, VIRTIO_IB_ATOMIC_HCA, VIRTIO_IB_ATOMIC_GLOB };

struct virtio_rdma_config {
	uint32_t phys_port_cnt;
	uint32_t reserved0;
	uint64_t sys_image_guid;	/* network byte order */
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint32_t reserved1;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint64_t device_cap_flags;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_sge_rd;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;
	uint32_t max_res_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint8_t atomic_cap;
	uint8_t reserved2[3];
	uint32_t max_mw;
	uint32_t max_mcast_grp;
	uint32_t max_mcast_qp_attach;
	uint32_t max_total_mcast_qp_attach;
	uint32_t max_ah;
	uint32_t max_fast_reg_page_list_len;
	uint32_t max_pi_fast_reg_page_list_len;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t reserved3[5];
	/* Choice (the RFC's reserved[64]): the port's GID table as it is now,
	 * 16 entries of 16 bytes, all-zero when empty. The RFC has no command
	 * to read it and a driver needs it to name its source GIDs. */
	uint8_t gid_tbl[16][16];
	/* Choice (in the RFC's reserved area): shared receive queues. Each
	 * SRQ holds one of the max_qp slots (its RQ virtqueue takes the SRQ's
	 * receive WQEs), so max_srq = max_qp - 1. */
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	/* Choice (in the RFC's reserved area): what this device offers beyond
	 * the RFC, VIRTIO_RDMA_CAP_*; an older vrdmad's 0 offers none. */
	uint32_t caps;
	/* Choice (in the RFC's reserved area): written by the front end (the
	 * VMM), which serves the config space; vrdmad serves 0. 0 while no
	 * back end is connected, else a number, never 0, that changes with
	 * each connection. A driver that read non-zero at probe may, after the
	 * device needed a reset because its back end went away, probe it
	 * again once this is non-zero (docs/virtio-rdma.md, section 3). */
	uint32_t backend;
	/* ABI v2 (VIRTIO_RDMA_F_RINGS, docs/virtio-rdma.md section 8): the
	 * objects a device with rings offers, and the doorbell pages it takes;
	 * 0 where the feature is not offered. */
	uint32_t ring_max_qp;
	uint32_t ring_max_cq;
	uint32_t ring_max_srq;
	uint32_t max_db_pages;
	uint32_t reserved5;
	uint64_t reserved[27];
};
#define VIRTIO_RDMA_GID_TBL_LEN		16

/* Feature bits (device-specific: 0..23). VIRTIO_RDMA_F_RINGS: ABI v2, the
 * send, receive and completion rings in guest memory (section 8); a driver
 * that negotiates it creates its CQs, QPs and SRQs with the *_RING commands. */
#define VIRTIO_RDMA_F_RINGS		0

/* caps: CREATE_QP takes one VIRTIO_IB_QPT_GSI per device (QP1, for the
 * driver's MAD layer: RDMA CM), and completions carry network_hdr_type. */
#define VIRTIO_RDMA_CAP_GSI		(1u << 0)
#define VIRTIO_RDMA_GSI_QPN		1u
#define VIRTIO_RDMA_GSI_QKEY		0x80010000u	/* IB_QP1_QKEY (IBA 13.4.7) */

/* device_cap_flags (the RFC's enum ib_device_cap_flags) */
#define VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN	(1ull << 12)
#define VIRTIO_RDMA_DEV_SRQ_RESIZE	(1ull << 13)	/* MODIFY_SRQ of max_wr */
#define VIRTIO_RDMA_DEV_MEM_WINDOW	(1ull << 17)	/* ALLOC_MW, BIND_MW */
#define VIRTIO_RDMA_DEV_MEM_MGT_EXTENSIONS (1ull << 21)	/* REG_MR, LOCAL_INV, SEND_WITH_INV */
#define VIRTIO_RDMA_DEV_MEM_WINDOW_TYPE_2B (1ull << 24)	/* type 2 windows bound to a QP */

/* ---- control queue ---- */

/* One request: a device-readable part (command byte, then the request
 * structure) and a device-writable part (status byte, then the response
 * structure). The parts may be split over descriptors at any byte. */
enum virtio_rdma_cmd {
	VIRTIO_CMD_QUERY_PORT = 1,
	VIRTIO_CMD_CREATE_CQ,
	VIRTIO_CMD_DESTROY_CQ,
	VIRTIO_CMD_CREATE_PD,
	VIRTIO_CMD_DESTROY_PD,
	VIRTIO_CMD_GET_DMA_MR,
	VIRTIO_CMD_CREATE_MR,
	VIRTIO_CMD_MAP_MR_SG,
	VIRTIO_CMD_REG_USER_MR,
	VIRTIO_CMD_DEREG_MR,
	VIRTIO_CMD_CREATE_QP,
	VIRTIO_CMD_MODIFY_QP,
	VIRTIO_CMD_QUERY_QP,
	VIRTIO_CMD_DESTROY_QP,
	VIRTIO_CMD_QUERY_PKEY,
	VIRTIO_CMD_ADD_GID,
	VIRTIO_CMD_DEL_GID,
	VIRTIO_CMD_REQ_NOTIFY_CQ,
	VIRTIO_CMD_CREATE_SRQ,		/* 19 */
	VIRTIO_CMD_MODIFY_SRQ,
	VIRTIO_CMD_QUERY_SRQ,
	VIRTIO_CMD_DESTROY_SRQ,
	VIRTIO_CMD_ALLOC_MW,		/* 23 */
	VIRTIO_CMD_DEALLOC_MW,
	/* ABI v2, with VIRTIO_RDMA_F_RINGS only (else UNSUPP) */
	VIRTIO_CMD_ADD_DB_PAGE,		/* 25 */
	VIRTIO_CMD_DEL_DB_PAGE,
	VIRTIO_CMD_CREATE_CQ_RING,	/* 27 */
	VIRTIO_CMD_CREATE_QP_RING,
	VIRTIO_CMD_CREATE_SRQ_RING,	/* 29 */
	VIRTIO_CMD_MAX,
};

/* The status byte (the RFC leaves it open; the demo wrote raw errnos). */
enum virtio_rdma_status {
	VIRTIO_RDMA_OK = 0,
	VIRTIO_RDMA_ERR_INVAL = 1,	/* malformed request or a value out of range */
	VIRTIO_RDMA_ERR_NOENT = 2,	/* no such handle */
	VIRTIO_RDMA_ERR_NOMEM = 3,	/* a config-space limit reached, or out of memory */
	VIRTIO_RDMA_ERR_BUSY = 4,	/* still in use (a PD with MRs, a CQ with QPs) */
	VIRTIO_RDMA_ERR_PERM = 5,	/* not allowed (a GID the host did not assign) */
	VIRTIO_RDMA_ERR_FAULT = 6,	/* a guest address outside the guest's memory */
	VIRTIO_RDMA_ERR_UNSUPP = 7,	/* unknown command, or a feature not offered */
};

/* What a driver returns for a status: 0 or a negative errno. */
static inline int virtio_rdma_status_errno(uint8_t status)
{
	switch (status) {
	case VIRTIO_RDMA_OK:
		return 0;
	case VIRTIO_RDMA_ERR_INVAL:
		return -EINVAL;
	case VIRTIO_RDMA_ERR_NOENT:
		return -ENOENT;
	case VIRTIO_RDMA_ERR_NOMEM:
		return -ENOMEM;
	case VIRTIO_RDMA_ERR_BUSY:
		return -EBUSY;
	case VIRTIO_RDMA_ERR_PERM:
		return -EPERM;
	case VIRTIO_RDMA_ERR_FAULT:
		return -EFAULT;
	case VIRTIO_RDMA_ERR_UNSUPP:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

struct virtio_rdma_cmd_query_port {
	uint8_t port;
};

struct virtio_rdma_rsp_query_port {
	uint8_t state;
	uint8_t max_mtu;
	uint8_t active_mtu;
	uint8_t reserved0;
	uint32_t phys_mtu;
	uint32_t gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint8_t active_width;
	uint8_t reserved1;
	uint16_t active_speed;
	uint8_t phys_state;
	uint8_t reserved2;
	uint32_t reserved[32];
};

struct virtio_rdma_cmd_create_cq { uint32_t cqe; };
struct virtio_rdma_rsp_create_cq { uint32_t cqn; };
struct virtio_rdma_cmd_destroy_cq { uint32_t cqn; };
struct virtio_rdma_rsp_create_pd { uint32_t pdn; };
struct virtio_rdma_cmd_destroy_pd { uint32_t pdn; };

struct virtio_rdma_cmd_get_dma_mr {
	uint32_t pdn;
	uint32_t access_flags;
};

/* The response of GET_DMA_MR, CREATE_MR and REG_USER_MR. */
struct virtio_rdma_rsp_mr {
	uint32_t mrn;
	uint32_t lkey;
	uint32_t rkey;
};

struct virtio_rdma_cmd_create_mr {
	uint32_t pdn;
	uint32_t access_flags;
	uint32_t max_num_sg;
};

struct virtio_rdma_cmd_map_mr_sg {
	uint32_t mrn;
	uint32_t npages;
	uint64_t start;
	uint64_t length;
	uint64_t pages;		/* guest address of npages le64 page addresses */
};

struct virtio_rdma_rsp_map_mr_sg { uint32_t npages; };

struct virtio_rdma_cmd_reg_user_mr {
	uint32_t pdn;
	uint32_t access_flags;
	uint64_t start;
	uint64_t length;
	uint64_t virt_addr;	/* the IOVA the MR is addressed by */
	uint64_t pages;		/* guest address of npages le64 page addresses */
	uint32_t npages;
	uint32_t reserved;
};

struct virtio_rdma_cmd_dereg_mr { uint32_t mrn; };

/* Memory windows (IBA 10.6.7): type 2 (bound to a QP, type 2B) only. */
enum virtio_rdma_mw_type { VIRTIO_IB_MW_TYPE_1 = 1, VIRTIO_IB_MW_TYPE_2 = 2 };

struct virtio_rdma_cmd_alloc_mw {
	uint32_t pdn;
	uint32_t type;		/* enum virtio_rdma_mw_type; type 1: UNSUPP */
};

struct virtio_rdma_rsp_alloc_mw {
	uint32_t mwn;		/* a small handle, never on the wire */
	uint32_t rkey;
};

struct virtio_rdma_cmd_dealloc_mw { uint32_t mwn; };

/* ABI v2: a doorbell page, one 4 KiB page of guest memory (section 8). */
struct virtio_rdma_cmd_add_db_page { uint64_t gpa; };
struct virtio_rdma_rsp_add_db_page { uint32_t dbn; };
struct virtio_rdma_cmd_del_db_page { uint32_t dbn; };

/* ABI v2: a CQ whose completions the device writes into a ring of 64-byte
 * CQEs in guest memory (section 8); the response is CREATE_CQ's. */
struct virtio_rdma_cmd_create_cq_ring {
	uint32_t entries;	/* a power of two; the CQ's depth */
	uint32_t dbn;		/* its doorbell page ... */
	uint32_t db_bit;	/* ... and bit there (arming) */
	uint32_t npages;	/* the ring's pages: header and slots */
	uint64_t pages;		/* guest address of npages le64 page addresses */
};

/* ABI v2: a work queue's ring in guest memory, and its doorbell bit. */
struct virtio_rdma_ring_desc {
	uint32_t entries;	/* a power of two, at least the queue's max_*_wr */
	uint32_t stride;	/* a power of two, 64..4096: the largest WQE fits */
	uint32_t db_bit;
	uint32_t npages;
	uint64_t pages;		/* guest address of npages le64 page addresses */
};

/* ABI v2's layouts: a ring's header (byte offsets of le32 words: 0..63 the
 * guest writes, 64..127 the device; the slots follow the header of
 * max(128, stride) bytes) and a doorbell page (the device's need_wake;
 * bytes 4..63 the device never touches; one bit per queue from byte 64, in
 * le64 words). need_wake is 0 while
 * the device polls; before it sleeps, a number other than 0 that is new at
 * each sleep: a guest kicks once per number (a second kick for the same
 * sleep wakes nobody). */
#define VIRTIO_RDMA_RING_PROD		0	/* SQ, RQ: WQEs posted */
#define VIRTIO_RDMA_RING_CONS		4	/* CQ: CQEs consumed */
#define VIRTIO_RDMA_RING_ARM		8	/* CQ: seq << 2 | flags */
#define VIRTIO_RDMA_RING_TAKEN		64	/* SQ, RQ: WQEs the device took */
#define VIRTIO_RDMA_RING_WRITTEN	68	/* CQ: CQEs written */
#define VIRTIO_RDMA_RING_ARMED		72	/* CQ: the last arm's seq, fired */
#define VIRTIO_RDMA_RING_HDR_MIN	128
#define VIRTIO_RDMA_RING_MAX_ENTRIES	32768u
#define VIRTIO_RDMA_DB_NEED_WAKE	0
#define VIRTIO_RDMA_DB_BITS_OFF		64
#define VIRTIO_RDMA_DB_BITS		((4096 - VIRTIO_RDMA_DB_BITS_OFF) * 8)

/* With VIRTIO_RDMA_F_RINGS: virtqueue 1 wakes the device (no buffers),
 * virtqueue 2 carries its events, one per buffer of at least 8 bytes. */
#define VIRTIO_RDMA_WAKE_VQ		1
#define VIRTIO_RDMA_EVENT_VQ		2
struct virtio_rdma_ring_event {
	uint32_t cqn;
	uint32_t kind;		/* VIRTIO_RDMA_RING_EVENT_* */
};
#define VIRTIO_RDMA_RING_EVENT_COMPLETION	0	/* the completion an arm asked for */
#define VIRTIO_RDMA_RING_EVENT_ASYNC		1	/* an event CQE is in the ring */
/* The arm word of a CQ ring: seq << 2 | VIRTIO_RDMA_NOTIFY_* (a new seq is
 * a new request); the device's armed word: the last seq taken, and this bit
 * once its event went out. */
#define VIRTIO_RDMA_RING_ARM_SEQ(w)	((w) >> 2)
#define VIRTIO_RDMA_RING_ARMED_FIRED	(1u << 31)

enum virtio_rdma_qp_type { VIRTIO_IB_QPT_SMI, VIRTIO_IB_QPT_GSI, VIRTIO_IB_QPT_RC,
			   VIRTIO_IB_QPT_UC, VIRTIO_IB_QPT_UD };
enum virtio_rdma_sig_type { VIRTIO_IB_SIGNAL_ALL_WR, VIRTIO_IB_SIGNAL_REQ_WR };

struct virtio_rdma_cmd_create_qp {
	uint32_t pdn;
	uint8_t qp_type;
	uint8_t sq_sig_type;
	uint16_t reserved0;
	uint32_t max_send_wr;
	uint32_t max_send_sge;
	uint32_t send_cqn;
	uint32_t max_recv_wr;
	uint32_t max_recv_sge;
	uint32_t recv_cqn;
	uint32_t max_inline_data;
	uint32_t flags;		/* VIRTIO_RDMA_CREATE_QP_* (0 before SRQs: no SRQ) */
	uint32_t srqn;		/* with VIRTIO_RDMA_CREATE_QP_SRQ: receives come from it */
	uint32_t reserved[6];
};
#define VIRTIO_RDMA_CREATE_QP_SRQ	(1u << 0)

/* ABI v2: a QP whose send and receive queues are rings (with
 * VIRTIO_RDMA_CREATE_QP_SRQ the rq ring is unused: entries 0); the
 * response is CREATE_QP's, its qp_index naming no virtqueue. */
struct virtio_rdma_cmd_create_qp_ring {
	struct virtio_rdma_cmd_create_qp qp;
	uint32_t dbn;		/* the doorbell page of both rings */
	struct virtio_rdma_ring_desc sq, rq;
};

/* qpn: random (24 bits), what the QP is named by in commands and on the
 * wire; qp_index: k, its queues (VIRTIO_RDMA_SQ_VQ / VIRTIO_RDMA_RQ_VQ). */
struct virtio_rdma_rsp_create_qp {
	uint32_t qpn;
	uint32_t qp_index;
};

struct virtio_rdma_global_route {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t reserved;
};

struct virtio_rdma_ah_attr {
	struct virtio_rdma_global_route grh;
	uint8_t sl;
	uint8_t static_rate;
	uint8_t port_num;
	uint8_t ah_flags;
	uint8_t dmac[6];
	uint8_t reserved[2];
};

struct virtio_rdma_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct virtio_rdma_qp_attr {
	uint8_t qp_state;
	uint8_t cur_qp_state;
	uint8_t path_mtu;
	uint8_t path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint8_t reserved;
	uint32_t rate_limit;
	struct virtio_rdma_qp_cap cap;
	struct virtio_rdma_ah_attr ah_attr;
	struct virtio_rdma_ah_attr alt_ah_attr;
};

/* The IB numbers these fields carry: attr_mask bits (enum ib_qp_attr_mask),
 * qp_state (enum ib_qp_state), path_mtu (enum ib_mtu), ah_flags and
 * qp_access_flags (enum ib_access_flags). */
#define VIRTIO_IB_QP_STATE		(1u << 0)
#define VIRTIO_IB_QP_CUR_STATE		(1u << 1)
#define VIRTIO_IB_QP_EN_SQD_ASYNC_NOTIFY (1u << 2)
#define VIRTIO_IB_QP_ACCESS_FLAGS	(1u << 3)
#define VIRTIO_IB_QP_PKEY_INDEX		(1u << 4)
#define VIRTIO_IB_QP_PORT		(1u << 5)
#define VIRTIO_IB_QP_QKEY		(1u << 6)
#define VIRTIO_IB_QP_AV			(1u << 7)
#define VIRTIO_IB_QP_PATH_MTU		(1u << 8)
#define VIRTIO_IB_QP_TIMEOUT		(1u << 9)
#define VIRTIO_IB_QP_RETRY_CNT		(1u << 10)
#define VIRTIO_IB_QP_RNR_RETRY		(1u << 11)
#define VIRTIO_IB_QP_RQ_PSN		(1u << 12)
#define VIRTIO_IB_QP_MAX_QP_RD_ATOMIC	(1u << 13)
#define VIRTIO_IB_QP_ALT_PATH		(1u << 14)
#define VIRTIO_IB_QP_MIN_RNR_TIMER	(1u << 15)
#define VIRTIO_IB_QP_SQ_PSN		(1u << 16)
#define VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC	(1u << 17)
#define VIRTIO_IB_QP_PATH_MIG_STATE	(1u << 18)
#define VIRTIO_IB_QP_CAP		(1u << 19)
#define VIRTIO_IB_QP_DEST_QPN		(1u << 20)
enum virtio_ib_qp_state { VIRTIO_IB_QPS_RESET, VIRTIO_IB_QPS_INIT, VIRTIO_IB_QPS_RTR,
			  VIRTIO_IB_QPS_RTS, VIRTIO_IB_QPS_SQD, VIRTIO_IB_QPS_SQE,
			  VIRTIO_IB_QPS_ERR };
enum virtio_ib_mtu { VIRTIO_IB_MTU_256 = 1, VIRTIO_IB_MTU_512, VIRTIO_IB_MTU_1024,
		     VIRTIO_IB_MTU_2048, VIRTIO_IB_MTU_4096 };
#define VIRTIO_IB_AH_GRH		1u
#define VIRTIO_IB_ACCESS_LOCAL_WRITE	(1u << 0)
#define VIRTIO_IB_ACCESS_REMOTE_WRITE	(1u << 1)
#define VIRTIO_IB_ACCESS_REMOTE_READ	(1u << 2)
#define VIRTIO_IB_ACCESS_REMOTE_ATOMIC	(1u << 3)
#define VIRTIO_IB_ACCESS_MW_BIND	(1u << 4)	/* MRs only (not a QP's flags) */

struct virtio_rdma_cmd_modify_qp {
	uint32_t qpn;
	uint32_t attr_mask;		/* VIRTIO_IB_QP_* */
	struct virtio_rdma_qp_attr attrs;
};

struct virtio_rdma_cmd_query_qp {
	uint32_t qpn;
	uint32_t attr_mask;
};

struct virtio_rdma_rsp_query_qp { struct virtio_rdma_qp_attr attr; };
struct virtio_rdma_cmd_destroy_qp { uint32_t qpn; };

struct virtio_rdma_cmd_query_pkey {
	uint32_t port;
	uint16_t index;
	uint16_t reserved;
};

struct virtio_rdma_rsp_query_pkey { uint16_t pkey; };

struct virtio_rdma_cmd_add_gid {
	uint8_t gid[16];
	uint32_t gid_type;
	uint16_t index;
	uint16_t reserved;
	uint32_t port_num;
};

struct virtio_rdma_cmd_del_gid {
	uint16_t index;
	uint16_t reserved;
	uint32_t port;
};

/* SRQs (IBA 10.2.9, 11.2.3). CREATE_SRQ answers the SRQ's handle and the
 * QP slot k it holds: its receive WQEs are posted on VIRTIO_RDMA_RQ_VQ of
 * slot k (that slot's SQ takes nothing). */
struct virtio_rdma_cmd_create_srq {
	uint32_t pdn;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;	/* 0: not armed */
};

struct virtio_rdma_rsp_create_srq {
	uint32_t srqn;
	uint32_t srq_index;	/* the slot k */
};

/* ABI v2: an SRQ whose receive queue is a ring; the response is
 * CREATE_SRQ's, its srq_index naming no virtqueue. */
struct virtio_rdma_cmd_create_srq_ring {
	struct virtio_rdma_cmd_create_srq srq;
	uint32_t dbn;		/* the doorbell page of its ring */
	uint32_t reserved;
	struct virtio_rdma_ring_desc ring;
};

/* attr_mask bits (enum ib_srq_attr_mask) */
#define VIRTIO_IB_SRQ_MAX_WR		(1u << 0)	/* resize */
#define VIRTIO_IB_SRQ_LIMIT		(1u << 1)

struct virtio_rdma_cmd_modify_srq {
	uint32_t srqn;
	uint32_t attr_mask;
	uint32_t max_wr;
	uint32_t srq_limit;
};

struct virtio_rdma_cmd_query_srq { uint32_t srqn; };

struct virtio_rdma_rsp_query_srq {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;	/* 0 once the limit event fired */
};

struct virtio_rdma_cmd_destroy_srq { uint32_t srqn; };

#define VIRTIO_RDMA_NOTIFY_SOLICITED		(1u << 0)
#define VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION	(1u << 1)

struct virtio_rdma_cmd_req_notify {
	uint32_t cqn;
	uint32_t flags;
};

/* ---- send and receive queues: one device-readable buffer per WQE ---- */

struct virtio_rdma_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* The UD address vector. sl_tclass_flowlabel: flow label in bits 0-19,
 * traffic class in 20-27, SL in 28-31. */
struct virtio_rdma_av {
	uint32_t port;
	uint32_t pdn;
	uint32_t sl_tclass_flowlabel;
	uint8_t dgid[16];
	uint8_t gid_index;
	uint8_t static_rate;
	uint8_t hop_limit;
	uint8_t dmac[6];
	uint8_t reserved[7];
};

struct virtio_rdma_cmd_post_send {
	uint32_t num_sge;
	uint32_t send_flags;		/* enum ib_send_flags */
	uint32_t opcode;		/* enum ib_wr_opcode */
	uint32_t reserved0;
	uint64_t wr_id;
	union {
		uint32_t imm_data;	/* network byte order */
		uint32_t invalidate_rkey;
	} ex;
	uint32_t reserved1;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t reserved;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
			uint32_t reserved;
		} atomic;
		struct {
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			struct virtio_rdma_av av;
		} ud;
		struct {
			uint32_t mrn;
			uint32_t key;
			uint32_t access;
		} reg;
		struct {
			uint64_t addr;		/* in the MR's iova space */
			uint64_t length;
			uint32_t mw_rkey;	/* the window's key now */
			uint32_t rkey;		/* its new key: only the low 8 bits differ */
			uint32_t mr_lkey;
			uint32_t access;	/* REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC */
		} bind_mw;
	} wr;
	/* then num_sge struct virtio_rdma_sge; with IB_SEND_INLINE, then the
	 * inline bytes (the sum of the SGE lengths) */
};

enum virtio_rdma_wr_opcode {
	VIRTIO_IB_WR_RDMA_WRITE = 0,
	VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM = 1,
	VIRTIO_IB_WR_SEND = 2,
	VIRTIO_IB_WR_SEND_WITH_IMM = 3,
	VIRTIO_IB_WR_RDMA_READ = 4,
	VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP = 5,
	VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD = 6,
	VIRTIO_IB_WR_LOCAL_INV = 7,
	VIRTIO_IB_WR_BIND_MW = 8,
	VIRTIO_IB_WR_SEND_WITH_INV = 9,
	VIRTIO_IB_WR_RDMA_READ_WITH_INV = 11,
	VIRTIO_IB_WR_REG_MR = 0x20,
};

#define VIRTIO_IB_SEND_FENCE		(1u << 0)
#define VIRTIO_IB_SEND_SIGNALED		(1u << 1)
#define VIRTIO_IB_SEND_SOLICITED	(1u << 2)
#define VIRTIO_IB_SEND_INLINE		(1u << 3)

struct virtio_rdma_cmd_post_recv {
	uint32_t num_sge;
	uint32_t reserved;
	uint64_t wr_id;
	/* then num_sge struct virtio_rdma_sge */
};

/* ---- completion queues: one device-writable buffer per CQE ---- */

struct virtio_rdma_cqe {
	uint64_t wr_id;
	uint8_t status;		/* enum ib_wc_status */
	uint8_t opcode;		/* enum ib_wc_opcode (receives need 128/129) */
	uint8_t network_hdr_type; /* with WITH_NETWORK_HDR_TYPE: enum rdma_network_type */
	uint8_t reserved;
	uint32_t vendor_err;
	uint32_t byte_len;
	union {
		uint32_t imm_data;	/* network byte order */
		uint32_t invalidate_rkey;
	} ex;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;	/* IB_WC_GRH 1, IB_WC_WITH_IMM 2, IB_WC_WITH_INVALIDATE 4,
				 * IB_WC_WITH_NETWORK_HDR_TYPE 64 */
	uint16_t pkey_index;
	uint8_t sl;
	uint8_t port_num;
};

#define VIRTIO_RDMA_WC_WITH_NETWORK_HDR_TYPE	(1u << 6)
/* network_hdr_type: Linux's enum rdma_network_type */
#define VIRTIO_RDMA_NETWORK_IPV4	2
#define VIRTIO_RDMA_NETWORK_IPV6	3

/* An asynchronous event (the RFC has no event queue): a CQE with this opcode
 * and status 0 on the affected CQ (for a QP, its send CQ); vendor_err holds
 * the enum ibv_event_type, qp_num the QP (0 for a CQ event). SRQ_LIMIT_REACHED
 * goes to the recv CQ of the QP that took the WQE which crossed the limit,
 * qp_num that QP, src_qp the srqn; QP_LAST_WQE_REACHED to the recv CQ of the
 * QP on an SRQ that entered ERR. */
#define VIRTIO_RDMA_WC_ASYNC_EVENT	0xff
enum virtio_rdma_event {
	VIRTIO_RDMA_EVENT_CQ_ERR = 0,		/* IBV_EVENT_CQ_ERR */
	VIRTIO_RDMA_EVENT_QP_FATAL = 1,		/* IBV_EVENT_QP_FATAL */
	VIRTIO_RDMA_EVENT_QP_REQ_ERR = 2,	/* IBV_EVENT_QP_REQ_ERR */
	VIRTIO_RDMA_EVENT_QP_ACCESS_ERR = 3,	/* IBV_EVENT_QP_ACCESS_ERR */
	VIRTIO_RDMA_EVENT_SQ_DRAINED = 5,	/* IBV_EVENT_SQ_DRAINED */
	VIRTIO_RDMA_EVENT_SRQ_LIMIT_REACHED = 15, /* IBV_EVENT_SRQ_LIMIT_REACHED */
	VIRTIO_RDMA_EVENT_QP_LAST_WQE_REACHED = 16, /* IBV_EVENT_QP_LAST_WQE_REACHED */
};

/* ---- every size and offset ---- */
#define VRDMA_ABI(s, f, off) _Static_assert(offsetof(struct s, f) == (off), #s "." #f)
#define VRDMA_ABI_SIZE(s, sz) _Static_assert(sizeof(struct s) == (sz), "sizeof " #s)

VRDMA_ABI(virtio_rdma_config, sys_image_guid, 8);
VRDMA_ABI(virtio_rdma_config, vendor_id, 16);
VRDMA_ABI(virtio_rdma_config, hw_ver, 24);
VRDMA_ABI(virtio_rdma_config, max_mr_size, 32);
VRDMA_ABI(virtio_rdma_config, page_size_cap, 40);
VRDMA_ABI(virtio_rdma_config, max_qp, 48);
VRDMA_ABI(virtio_rdma_config, max_qp_wr, 52);
VRDMA_ABI(virtio_rdma_config, device_cap_flags, 56);
VRDMA_ABI(virtio_rdma_config, max_send_sge, 64);
VRDMA_ABI(virtio_rdma_config, max_recv_sge, 68);
VRDMA_ABI(virtio_rdma_config, max_sge_rd, 72);
VRDMA_ABI(virtio_rdma_config, max_cq, 76);
VRDMA_ABI(virtio_rdma_config, max_cqe, 80);
VRDMA_ABI(virtio_rdma_config, max_mr, 84);
VRDMA_ABI(virtio_rdma_config, max_pd, 88);
VRDMA_ABI(virtio_rdma_config, max_qp_rd_atom, 92);
VRDMA_ABI(virtio_rdma_config, max_res_rd_atom, 96);
VRDMA_ABI(virtio_rdma_config, max_qp_init_rd_atom, 100);
VRDMA_ABI(virtio_rdma_config, atomic_cap, 104);
VRDMA_ABI(virtio_rdma_config, max_mw, 108);
VRDMA_ABI(virtio_rdma_config, max_mcast_grp, 112);
VRDMA_ABI(virtio_rdma_config, max_mcast_qp_attach, 116);
VRDMA_ABI(virtio_rdma_config, max_total_mcast_qp_attach, 120);
VRDMA_ABI(virtio_rdma_config, max_ah, 124);
VRDMA_ABI(virtio_rdma_config, max_fast_reg_page_list_len, 128);
VRDMA_ABI(virtio_rdma_config, max_pi_fast_reg_page_list_len, 132);
VRDMA_ABI(virtio_rdma_config, max_pkeys, 136);
VRDMA_ABI(virtio_rdma_config, local_ca_ack_delay, 138);
VRDMA_ABI(virtio_rdma_config, gid_tbl, 144);
VRDMA_ABI(virtio_rdma_config, max_srq, 400);
VRDMA_ABI(virtio_rdma_config, max_srq_wr, 404);
VRDMA_ABI(virtio_rdma_config, max_srq_sge, 408);
VRDMA_ABI(virtio_rdma_config, caps, 412);
VRDMA_ABI(virtio_rdma_config, backend, 416);
VRDMA_ABI(virtio_rdma_config, ring_max_qp, 420);
VRDMA_ABI(virtio_rdma_config, ring_max_cq, 424);
VRDMA_ABI(virtio_rdma_config, ring_max_srq, 428);
VRDMA_ABI(virtio_rdma_config, max_db_pages, 432);
VRDMA_ABI(virtio_rdma_config, reserved, 440);
VRDMA_ABI_SIZE(virtio_rdma_config, 656);

VRDMA_ABI(virtio_rdma_rsp_query_port, phys_mtu, 4);
VRDMA_ABI(virtio_rdma_rsp_query_port, gid_tbl_len, 8);
VRDMA_ABI(virtio_rdma_rsp_query_port, port_cap_flags, 12);
VRDMA_ABI(virtio_rdma_rsp_query_port, max_msg_sz, 16);
VRDMA_ABI(virtio_rdma_rsp_query_port, bad_pkey_cntr, 20);
VRDMA_ABI(virtio_rdma_rsp_query_port, qkey_viol_cntr, 24);
VRDMA_ABI(virtio_rdma_rsp_query_port, pkey_tbl_len, 28);
VRDMA_ABI(virtio_rdma_rsp_query_port, active_width, 30);
VRDMA_ABI(virtio_rdma_rsp_query_port, active_speed, 32);
VRDMA_ABI(virtio_rdma_rsp_query_port, phys_state, 34);
VRDMA_ABI(virtio_rdma_rsp_query_port, reserved, 36);
VRDMA_ABI_SIZE(virtio_rdma_rsp_query_port, 164);

VRDMA_ABI_SIZE(virtio_rdma_cmd_create_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_rsp_create_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_rsp_create_pd, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_pd, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_get_dma_mr, 8);
VRDMA_ABI(virtio_rdma_rsp_mr, lkey, 4);
VRDMA_ABI(virtio_rdma_rsp_mr, rkey, 8);
VRDMA_ABI_SIZE(virtio_rdma_rsp_mr, 12);
VRDMA_ABI(virtio_rdma_cmd_create_mr, max_num_sg, 8);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_mr, 12);
VRDMA_ABI(virtio_rdma_cmd_map_mr_sg, start, 8);
VRDMA_ABI(virtio_rdma_cmd_map_mr_sg, length, 16);
VRDMA_ABI(virtio_rdma_cmd_map_mr_sg, pages, 24);
VRDMA_ABI_SIZE(virtio_rdma_cmd_map_mr_sg, 32);
VRDMA_ABI_SIZE(virtio_rdma_rsp_map_mr_sg, 4);
VRDMA_ABI(virtio_rdma_cmd_reg_user_mr, start, 8);
VRDMA_ABI(virtio_rdma_cmd_reg_user_mr, length, 16);
VRDMA_ABI(virtio_rdma_cmd_reg_user_mr, virt_addr, 24);
VRDMA_ABI(virtio_rdma_cmd_reg_user_mr, pages, 32);
VRDMA_ABI(virtio_rdma_cmd_reg_user_mr, npages, 40);
VRDMA_ABI_SIZE(virtio_rdma_cmd_reg_user_mr, 48);
VRDMA_ABI_SIZE(virtio_rdma_cmd_dereg_mr, 4);
VRDMA_ABI(virtio_rdma_cmd_alloc_mw, type, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_alloc_mw, 8);
VRDMA_ABI(virtio_rdma_rsp_alloc_mw, rkey, 4);
VRDMA_ABI_SIZE(virtio_rdma_rsp_alloc_mw, 8);
VRDMA_ABI_SIZE(virtio_rdma_cmd_dealloc_mw, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_add_db_page, 8);
VRDMA_ABI_SIZE(virtio_rdma_rsp_add_db_page, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_del_db_page, 4);
VRDMA_ABI(virtio_rdma_cmd_create_cq_ring, npages, 12);
VRDMA_ABI(virtio_rdma_cmd_create_cq_ring, pages, 16);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_cq_ring, 24);
VRDMA_ABI_SIZE(virtio_rdma_ring_event, 8);
VRDMA_ABI(virtio_rdma_ring_desc, pages, 16);
VRDMA_ABI_SIZE(virtio_rdma_ring_desc, 24);
VRDMA_ABI(virtio_rdma_cmd_create_qp_ring, dbn, 68);
VRDMA_ABI(virtio_rdma_cmd_create_qp_ring, sq, 72);
VRDMA_ABI(virtio_rdma_cmd_create_qp_ring, rq, 96);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_qp_ring, 120);
VRDMA_ABI(virtio_rdma_cmd_create_srq_ring, dbn, 16);
VRDMA_ABI(virtio_rdma_cmd_create_srq_ring, ring, 24);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_srq_ring, 48);

VRDMA_ABI(virtio_rdma_cmd_create_qp, qp_type, 4);
VRDMA_ABI(virtio_rdma_cmd_create_qp, sq_sig_type, 5);
VRDMA_ABI(virtio_rdma_cmd_create_qp, max_send_wr, 8);
VRDMA_ABI(virtio_rdma_cmd_create_qp, max_send_sge, 12);
VRDMA_ABI(virtio_rdma_cmd_create_qp, send_cqn, 16);
VRDMA_ABI(virtio_rdma_cmd_create_qp, max_recv_wr, 20);
VRDMA_ABI(virtio_rdma_cmd_create_qp, max_recv_sge, 24);
VRDMA_ABI(virtio_rdma_cmd_create_qp, recv_cqn, 28);
VRDMA_ABI(virtio_rdma_cmd_create_qp, max_inline_data, 32);
VRDMA_ABI(virtio_rdma_cmd_create_qp, flags, 36);
VRDMA_ABI(virtio_rdma_cmd_create_qp, srqn, 40);
VRDMA_ABI(virtio_rdma_cmd_create_qp, reserved, 44);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_qp, 68);
VRDMA_ABI_SIZE(virtio_rdma_rsp_create_qp, 8);

VRDMA_ABI(virtio_rdma_global_route, flow_label, 16);
VRDMA_ABI(virtio_rdma_global_route, sgid_index, 20);
VRDMA_ABI(virtio_rdma_global_route, hop_limit, 21);
VRDMA_ABI(virtio_rdma_global_route, traffic_class, 22);
VRDMA_ABI_SIZE(virtio_rdma_global_route, 24);
VRDMA_ABI(virtio_rdma_ah_attr, sl, 24);
VRDMA_ABI(virtio_rdma_ah_attr, static_rate, 25);
VRDMA_ABI(virtio_rdma_ah_attr, port_num, 26);
VRDMA_ABI(virtio_rdma_ah_attr, ah_flags, 27);
VRDMA_ABI(virtio_rdma_ah_attr, dmac, 28);
VRDMA_ABI_SIZE(virtio_rdma_ah_attr, 36);
VRDMA_ABI_SIZE(virtio_rdma_qp_cap, 20);
VRDMA_ABI(virtio_rdma_qp_attr, qkey, 4);
VRDMA_ABI(virtio_rdma_qp_attr, rq_psn, 8);
VRDMA_ABI(virtio_rdma_qp_attr, sq_psn, 12);
VRDMA_ABI(virtio_rdma_qp_attr, dest_qp_num, 16);
VRDMA_ABI(virtio_rdma_qp_attr, qp_access_flags, 20);
VRDMA_ABI(virtio_rdma_qp_attr, pkey_index, 24);
VRDMA_ABI(virtio_rdma_qp_attr, alt_pkey_index, 26);
VRDMA_ABI(virtio_rdma_qp_attr, en_sqd_async_notify, 28);
VRDMA_ABI(virtio_rdma_qp_attr, sq_draining, 29);
VRDMA_ABI(virtio_rdma_qp_attr, max_rd_atomic, 30);
VRDMA_ABI(virtio_rdma_qp_attr, max_dest_rd_atomic, 31);
VRDMA_ABI(virtio_rdma_qp_attr, min_rnr_timer, 32);
VRDMA_ABI(virtio_rdma_qp_attr, port_num, 33);
VRDMA_ABI(virtio_rdma_qp_attr, timeout, 34);
VRDMA_ABI(virtio_rdma_qp_attr, retry_cnt, 35);
VRDMA_ABI(virtio_rdma_qp_attr, rnr_retry, 36);
VRDMA_ABI(virtio_rdma_qp_attr, alt_port_num, 37);
VRDMA_ABI(virtio_rdma_qp_attr, alt_timeout, 38);
VRDMA_ABI(virtio_rdma_qp_attr, rate_limit, 40);
VRDMA_ABI(virtio_rdma_qp_attr, cap, 44);
VRDMA_ABI(virtio_rdma_qp_attr, ah_attr, 64);
VRDMA_ABI(virtio_rdma_qp_attr, alt_ah_attr, 100);
VRDMA_ABI_SIZE(virtio_rdma_qp_attr, 136);
VRDMA_ABI(virtio_rdma_cmd_modify_qp, attrs, 8);
VRDMA_ABI_SIZE(virtio_rdma_cmd_modify_qp, 144);
VRDMA_ABI_SIZE(virtio_rdma_cmd_query_qp, 8);
VRDMA_ABI_SIZE(virtio_rdma_rsp_query_qp, 136);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_qp, 4);
VRDMA_ABI(virtio_rdma_cmd_query_pkey, index, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_query_pkey, 8);
VRDMA_ABI_SIZE(virtio_rdma_rsp_query_pkey, 2);
VRDMA_ABI(virtio_rdma_cmd_add_gid, gid_type, 16);
VRDMA_ABI(virtio_rdma_cmd_add_gid, index, 20);
VRDMA_ABI(virtio_rdma_cmd_add_gid, port_num, 24);
VRDMA_ABI_SIZE(virtio_rdma_cmd_add_gid, 28);
VRDMA_ABI(virtio_rdma_cmd_del_gid, port, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_del_gid, 8);
VRDMA_ABI_SIZE(virtio_rdma_cmd_req_notify, 8);
VRDMA_ABI(virtio_rdma_cmd_create_srq, srq_limit, 12);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_srq, 16);
VRDMA_ABI(virtio_rdma_rsp_create_srq, srq_index, 4);
VRDMA_ABI_SIZE(virtio_rdma_rsp_create_srq, 8);
VRDMA_ABI(virtio_rdma_cmd_modify_srq, attr_mask, 4);
VRDMA_ABI(virtio_rdma_cmd_modify_srq, srq_limit, 12);
VRDMA_ABI_SIZE(virtio_rdma_cmd_modify_srq, 16);
VRDMA_ABI_SIZE(virtio_rdma_cmd_query_srq, 4);
VRDMA_ABI(virtio_rdma_rsp_query_srq, srq_limit, 8);
VRDMA_ABI_SIZE(virtio_rdma_rsp_query_srq, 12);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_srq, 4);

VRDMA_ABI_SIZE(virtio_rdma_sge, 16);
VRDMA_ABI(virtio_rdma_av, sl_tclass_flowlabel, 8);
VRDMA_ABI(virtio_rdma_av, dgid, 12);
VRDMA_ABI(virtio_rdma_av, gid_index, 28);
VRDMA_ABI(virtio_rdma_av, static_rate, 29);
VRDMA_ABI(virtio_rdma_av, hop_limit, 30);
VRDMA_ABI(virtio_rdma_av, dmac, 31);
VRDMA_ABI_SIZE(virtio_rdma_av, 44);
VRDMA_ABI(virtio_rdma_cmd_post_send, send_flags, 4);
VRDMA_ABI(virtio_rdma_cmd_post_send, opcode, 8);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr_id, 16);
VRDMA_ABI(virtio_rdma_cmd_post_send, ex, 24);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr, 32);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.rdma.rkey, 40);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.atomic.compare_add, 40);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.atomic.swap, 48);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.atomic.rkey, 56);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.ud.remote_qkey, 36);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.ud.av, 40);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.reg.key, 36);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.reg.access, 40);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.bind_mw.length, 40);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.bind_mw.mw_rkey, 48);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.bind_mw.rkey, 52);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.bind_mw.mr_lkey, 56);
VRDMA_ABI(virtio_rdma_cmd_post_send, wr.bind_mw.access, 60);
VRDMA_ABI_SIZE(virtio_rdma_cmd_post_send, 88);
VRDMA_ABI(virtio_rdma_cmd_post_recv, wr_id, 8);
VRDMA_ABI_SIZE(virtio_rdma_cmd_post_recv, 16);

VRDMA_ABI(virtio_rdma_cqe, status, 8);
VRDMA_ABI(virtio_rdma_cqe, opcode, 9);
VRDMA_ABI(virtio_rdma_cqe, network_hdr_type, 10);
VRDMA_ABI(virtio_rdma_cqe, vendor_err, 12);
VRDMA_ABI(virtio_rdma_cqe, byte_len, 16);
VRDMA_ABI(virtio_rdma_cqe, ex, 20);
VRDMA_ABI(virtio_rdma_cqe, qp_num, 24);
VRDMA_ABI(virtio_rdma_cqe, src_qp, 28);
VRDMA_ABI(virtio_rdma_cqe, wc_flags, 32);
VRDMA_ABI(virtio_rdma_cqe, pkey_index, 36);
VRDMA_ABI(virtio_rdma_cqe, sl, 38);
VRDMA_ABI(virtio_rdma_cqe, port_num, 39);
VRDMA_ABI_SIZE(virtio_rdma_cqe, 40);

#endif
