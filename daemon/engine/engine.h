/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The RoCE transport engine: protection domains, memory regions, completion
 * queues and queue pairs with ibverbs semantics (IBA 1.4 vol 1 ch. 9-11;
 * Linux rxe and rdma-core are the behavioural references).
 *
 * The engine does no I/O. Frames, the clock and memory go through the small
 * interfaces below, so tests run two engines over an in-memory wire and the
 * daemon plugs in the AF_XDP port and guest memory. One engine instance is
 * used by one thread at a time: the worker that owns it.
 *
 * Enum values are those of ibverbs (infiniband/verbs.h), so the device model
 * and the front-end library pass them through unchanged.
 */
#ifndef VRDMAD_ENGINE_H
#define VRDMAD_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "codec.h"

/* GSI: QP1 (IBA 13.4.7), one per device, for the MAD layer (RDMA CM):
 * a UD QP with a fixed QPN and Q_Key. */
enum eng_qp_type { ENG_QPT_GSI = 1, ENG_QPT_RC = 2, ENG_QPT_UC = 3, ENG_QPT_UD = 4 };
#define ENG_GSI_QPN	1u
#define ENG_GSI_QKEY	0x80010000u

/* Datagram QPs: UD and GSI */
static inline bool eng_qpt_ud(enum eng_qp_type t)
{
	return t == ENG_QPT_UD || t == ENG_QPT_GSI;
}

enum eng_qp_state {
	ENG_QPS_RESET, ENG_QPS_INIT, ENG_QPS_RTR, ENG_QPS_RTS,
	ENG_QPS_SQD, ENG_QPS_SQE, ENG_QPS_ERR, ENG_QPS_MAX,
};

enum eng_mtu { ENG_MTU_256 = 1, ENG_MTU_512, ENG_MTU_1024, ENG_MTU_2048, ENG_MTU_4096 };

static inline uint32_t eng_mtu_bytes(enum eng_mtu m)
{
	return m >= ENG_MTU_256 && m <= ENG_MTU_4096 ? 128u << m : 0;
}

enum eng_access {
	ENG_ACCESS_LOCAL_WRITE = 1,
	ENG_ACCESS_REMOTE_WRITE = 2,
	ENG_ACCESS_REMOTE_READ = 4,
	ENG_ACCESS_REMOTE_ATOMIC = 8,
	ENG_ACCESS_ALL = 15,		/* a QP's flags, and a window's rights */
	ENG_ACCESS_MW_BIND = 16,	/* MRs only: windows may be bound to it (IBA 10.6.7) */
	ENG_ACCESS_MR_ALL = 31,
};

/* ibv_qp_attr_mask */
enum eng_qp_attr_mask {
	ENG_QP_STATE = 1 << 0,
	ENG_QP_CUR_STATE = 1 << 1,
	ENG_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	ENG_QP_ACCESS_FLAGS = 1 << 3,
	ENG_QP_PKEY_INDEX = 1 << 4,
	ENG_QP_PORT = 1 << 5,
	ENG_QP_QKEY = 1 << 6,
	ENG_QP_AV = 1 << 7,
	ENG_QP_PATH_MTU = 1 << 8,
	ENG_QP_TIMEOUT = 1 << 9,
	ENG_QP_RETRY_CNT = 1 << 10,
	ENG_QP_RNR_RETRY = 1 << 11,
	ENG_QP_RQ_PSN = 1 << 12,
	ENG_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	ENG_QP_ALT_PATH = 1 << 14,
	ENG_QP_MIN_RNR_TIMER = 1 << 15,
	ENG_QP_SQ_PSN = 1 << 16,
	ENG_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	ENG_QP_PATH_MIG_STATE = 1 << 18,
	ENG_QP_CAP = 1 << 19,
	ENG_QP_DEST_QPN = 1 << 20,
};

enum eng_wr_opcode {
	ENG_WR_RDMA_WRITE = 0,
	ENG_WR_RDMA_WRITE_WITH_IMM = 1,
	ENG_WR_SEND = 2,
	ENG_WR_SEND_WITH_IMM = 3,
	ENG_WR_RDMA_READ = 4,
	ENG_WR_ATOMIC_CMP_AND_SWP = 5,
	ENG_WR_ATOMIC_FETCH_AND_ADD = 6,
	ENG_WR_LOCAL_INV = 7,		/* IBA 10.7.2.1: invalidate a fast-reg MR's or a window's key */
	ENG_WR_BIND_MW = 8,		/* IBA 10.6.7.2: bind a type 2 memory window */
	ENG_WR_SEND_WITH_INV = 9,	/* IBA 10.7.2.2: the responder invalidates an rkey */
	ENG_WR_REG_MR = 0x20,		/* IBA 10.6.3.6: fast registration of a FREE MR */
};

enum eng_send_flags {
	ENG_SEND_FENCE = 1,
	ENG_SEND_SIGNALED = 2,
	ENG_SEND_SOLICITED = 4,
	ENG_SEND_INLINE = 8,
};

enum eng_wc_status {
	ENG_WC_SUCCESS, ENG_WC_LOC_LEN_ERR, ENG_WC_LOC_QP_OP_ERR, ENG_WC_LOC_EEC_OP_ERR,
	ENG_WC_LOC_PROT_ERR, ENG_WC_WR_FLUSH_ERR, ENG_WC_MW_BIND_ERR, ENG_WC_BAD_RESP_ERR,
	ENG_WC_LOC_ACCESS_ERR, ENG_WC_REM_INV_REQ_ERR, ENG_WC_REM_ACCESS_ERR,
	ENG_WC_REM_OP_ERR, ENG_WC_RETRY_EXC_ERR, ENG_WC_RNR_RETRY_EXC_ERR,
	ENG_WC_LOC_RDD_VIOL_ERR, ENG_WC_REM_INV_RD_REQ_ERR, ENG_WC_REM_ABORT_ERR,
	ENG_WC_INV_EECN_ERR, ENG_WC_INV_EEC_STATE_ERR, ENG_WC_FATAL_ERR,
	ENG_WC_RESP_TIMEOUT_ERR, ENG_WC_GENERAL_ERR,
};

enum eng_wc_opcode {
	ENG_WC_SEND = 0, ENG_WC_RDMA_WRITE = 1, ENG_WC_RDMA_READ = 2,
	ENG_WC_COMP_SWAP = 3, ENG_WC_FETCH_ADD = 4,
	ENG_WC_BIND_MW = 5, ENG_WC_LOCAL_INV = 6, ENG_WC_REG_MR = 10,	/* Linux's ib_wc_opcode */
	ENG_WC_RECV = 128, ENG_WC_RECV_RDMA_WITH_IMM = 129,
};

enum eng_wc_flags { ENG_WC_GRH = 1, ENG_WC_WITH_IMM = 2, ENG_WC_WITH_INV = 4,
		   ENG_WC_WITH_NETWORK_HDR_TYPE = 64,
		   /* the engine's own, not ib_wc's: the message asked for a
		    * solicited event (IBA 9.2.3); the device strips it */
		   ENG_WC_SOLICITED = 1u << 30 };
/* network_hdr_type: Linux's enum rdma_network_type */
enum eng_network_type { ENG_NETWORK_IPV4 = 2, ENG_NETWORK_IPV6 = 3 };

/* Limits of the device (the device model reports them in QUERY_DEVICE). */
#define ENG_MAX_QP		16384
#define ENG_MAX_WR		16384	/* per queue */
#define ENG_MAX_SGE		32
#define ENG_MAX_INLINE		512
#define ENG_MAX_CQE		65536
#define ENG_MAX_MR		65536
#define ENG_MAX_PD		4096
#define ENG_MAX_RD_ATOMIC	16	/* max_rd_atomic and max_dest_rd_atomic */
#define ENG_MAX_MSG		(1u << 31)
#define ENG_GID_TABLE_LEN	16
#define ENG_PKEY_DEFAULT	0xffff	/* the only P_Key: table length 1 */
#define ENG_FIRST_QPN		16	/* QPNs are random in [16, 2^24 - 1): 0 and 1 are
					 * special in IB, 2^24 - 1 is multicast */

struct eng_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* Address vector: where a QP (RC/UC) or a UD send goes. */
struct eng_ah_attr {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t port_num;
	uint8_t dmac[6];	/* the peer's MAC, resolved by the caller */
};

struct eng_qp_cap {
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
};

struct eng_qp_attr {
	enum eng_qp_state qp_state, cur_qp_state;
	enum eng_mtu path_mtu;
	uint32_t qkey, rq_psn, sq_psn, dest_qp_num;
	unsigned int qp_access_flags;
	struct eng_qp_cap cap;
	struct eng_ah_attr ah_attr;
	uint16_t pkey_index;
	uint8_t en_sqd_async_notify, sq_draining;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry;
};

struct eng_send_wr {
	uint64_t wr_id;
	enum eng_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm_data;		/* network byte order, as ibverbs */
	const struct eng_sge *sg_list;	/* with ENG_SEND_INLINE: addr is a host pointer */
	unsigned int num_sge;
	struct { const struct eng_ah_attr *ah; uint32_t remote_qpn, remote_qkey; } ud;
	uint32_t invalidate_rkey;	/* LOCAL_INV, SEND_WITH_INV */
	/* One per opcode, so they share room: each queued WQE holds a copy
	 * (memory per QP). */
	union {
		struct { uint64_t remote_addr; uint32_t rkey; } rdma;	/* WRITE, READ */
		/* CMP_AND_SWP: compare_add is the compare value; FETCH_AND_ADD:
		 * the addend (swap unused). The one 8-byte SGE receives the
		 * original. */
		struct { uint64_t remote_addr, compare_add, swap; uint32_t rkey; } atomic;
		/* REG_MR: the MR by handle, its new key (only the low 8 bits
		 * may change) and access flags */
		struct { uint32_t mrn, key; unsigned int access; } reg;
		/* BIND_MW: the window by its current rkey, its new one (only
		 * the low 8 bits may change), the MR by lkey, the range in the
		 * MR's iova space and the window's remote rights */
		struct {
			uint64_t addr, length;
			uint32_t mw_rkey, rkey, mr_lkey;
			unsigned int access;
		} bind;
	};
};

struct eng_recv_wr {
	uint64_t wr_id;
	const struct eng_sge *sg_list;
	unsigned int num_sge;
};

struct eng_wc {
	uint64_t wr_id;
	enum eng_wc_status status;
	enum eng_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;		/* network byte order */
	uint32_t invalidate_rkey;	/* with ENG_WC_WITH_INV */
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint16_t pkey_index;
	uint8_t sl;
	uint8_t network_hdr_type;	/* with ENG_WC_WITH_NETWORK_HDR_TYPE */
};

/* Counters, per QP and for the device: the device's are the total over its
 * QPs, present and past, plus frames for no QP. Every drop, NAK,
 * retransmission and error has its own. New ones go at the end (before
 * ENG_CNT_MAX): a saved state names them by position (save.c). */
enum eng_counter {
	ENG_CNT_TX_PKTS, ENG_CNT_RX_PKTS, ENG_CNT_TX_ACKS, ENG_CNT_RX_ACKS,
	ENG_CNT_TX_NO_BUFFER,		/* a frame waited for a transmit buffer */
	/* receive drops */
	ENG_CNT_DROP_NO_QP,		/* destination QP does not exist */
	ENG_CNT_DROP_ADDRESS,		/* RC/UC: not from the QP's peer GID, or not to its own */
	ENG_CNT_DROP_QP_STATE,		/* QP cannot receive (RESET, INIT, ERR) */
	ENG_CNT_DROP_WRONG_TRANSPORT,	/* RC opcode for a UD QP and the like */
	ENG_CNT_DROP_DUPLICATE,		/* already received (re-ACKed where RC) */
	ENG_CNT_DROP_OUT_OF_SEQUENCE,	/* ahead of the expected PSN */
	ENG_CNT_DROP_UC_GAP,		/* rest of a UC message after a lost packet */
	ENG_CNT_DROP_QKEY,		/* UD Q_Key mismatch (GSI: not 0x80010000) */
	ENG_CNT_DROP_PKEY,		/* BTH P_Key not ours (IBA 9.6.1.1.4) */
	ENG_CNT_DROP_UD_NO_RECV,	/* UD message with no receive posted */
	ENG_CNT_DROP_BAD_LENGTH,	/* payload size wrong for its place in the message */
	ENG_CNT_DROP_GHOST_ACK,		/* ACK for a PSN never sent */
	ENG_CNT_DROP_STALE_ACK,		/* ACK for what was already acknowledged */
	ENG_CNT_DROP_UNEXPECTED_RESPONSE, /* a response no request is waiting for */
	/* NAKs sent and received (IBA 9.7.5.2) */
	ENG_CNT_NAK_SENT_PSN, ENG_CNT_NAK_SENT_RNR, ENG_CNT_NAK_SENT_INVALID,
	ENG_CNT_NAK_SENT_ACCESS, ENG_CNT_NAK_SENT_OPERATION,
	ENG_CNT_NAK_RCVD_PSN, ENG_CNT_NAK_RCVD_RNR, ENG_CNT_NAK_RCVD_INVALID,
	ENG_CNT_NAK_RCVD_ACCESS, ENG_CNT_NAK_RCVD_OPERATION,
	/* retransmission */
	ENG_CNT_RETRY_TIMEOUT,		/* retransmit timer expired */
	ENG_CNT_RETRY_RNR,		/* resent after an RNR wait */
	ENG_CNT_RETRANSMITTED_PKTS,
	ENG_CNT_IMPLIED_NAK,		/* READ response gap or ACK beyond a READ */
	ENG_CNT_DUPLICATE_READ,		/* READ re-executed from responder resources */
	ENG_CNT_DROP_DUPLICATE_READ,	/* a repeated READ not asking for its original's tail */
	/* congestion control (cc.c) */
	ENG_CNT_CC_HELD,		/* a send held back by the path's window */
	ENG_CNT_CC_CUTS,		/* the window cut for a loss or a timeout */
	ENG_CNT_CC_CNP_CUTS,		/* the window cut for a CNP */
	ENG_CNT_CC_FORGIVEN,		/* a timeout of a held QP not counted */
	ENG_CNT_CC_PROBES,		/* a resend after the probe timeout (no ACK) */
	ENG_CNT_CNP_RCVD,		/* CNPs for our QPs */
	ENG_CNT_CNP_SENT,		/* CNPs sent for CE-marked requests */
	ENG_CNT_ECN_CE,			/* requests that arrived marked CE */
	ENG_CNT_DUPLICATE_ATOMIC,	/* atomic answered from its saved result (9.7.5.1.x) */
	ENG_CNT_ATOMIC_MISALIGNED,	/* atomic target not 8-byte aligned (NAKed) */
	/* errors that complete work with an error status */
	ENG_CNT_ERR_RETRY_EXCEEDED, ENG_CNT_ERR_RNR_EXCEEDED, ENG_CNT_ERR_LOCAL_PROTECTION,
	ENG_CNT_ERR_LOCAL_LENGTH, ENG_CNT_ERR_REMOTE_ACCESS, ENG_CNT_ERR_REMOTE_INVALID,
	ENG_CNT_ERR_REMOTE_OPERATION, ENG_CNT_ERR_CQ_OVERRUN,
	/* fast registration and invalidation refused (IBA 10.6.3.6, 10.7) */
	ENG_CNT_ERR_REG_MR,		/* REG_MR: no such MR, not FREE, other PD, key */
	ENG_CNT_ERR_LOCAL_INV,		/* LOCAL_INV of a key not VALID or not fast-reg */
	ENG_CNT_ERR_REMOTE_INV,		/* SEND_WITH_INV naming such a key: NAKed */
	ENG_CNT_ERR_BIND_MW,		/* BIND_MW refused (IBA 10.6.7.2): MW_BIND_ERR */
	/* QP1: the MADs of RDMA CM */
	ENG_CNT_GSI_SENT,		/* datagrams QP1 sent */
	ENG_CNT_GSI_RECEIVED,		/* datagrams QP1 received */
	ENG_CNT_MAX,
};

struct eng_counters {
	uint64_t c[ENG_CNT_MAX];
};

const char *eng_counter_name(enum eng_counter c);

struct eng_dev;
struct eng_pd;
struct eng_mr;
struct eng_mw;
struct eng_cq;
struct eng_qp;
struct eng_srq;

/* How the engine reaches memory: [off, off + len) of an MR's backing store
 * to a host pointer, with how many bytes from there are contiguous (>= 1),
 * or NULL when that memory is gone (a guest unplugged it, say). */
typedef void *(*eng_mem_map_fn)(void *mem, uint64_t off, uint64_t len, uint64_t *contig);

/* The clock and the wire: what the port (or a test's wire) gives the
 * engine, called straight, with its own ctx. */
struct eng_tx {
	uint64_t (*now_ns)(void *ctx);
	/* Buffers for one outgoing frame of len bytes to dgid, in which the
	 * engine builds it: the destination says where they are (a NIC's
	 * transmit buffers, or the receiving VM's queue on this host). Fill
	 * frags (room in .len), return how many, or 0 when none is free now
	 * (the engine tries again on its next poll). They are the host's until
	 * tx_send; a tx_alloc without a tx_send gives them back. */
	unsigned int (*tx_alloc)(void *ctx, const uint8_t dgid[16], uint32_t len,
				 struct roce_frag *frags, unsigned int max);
	/* The frame is in the first n of those buffers, len bytes: send it. */
	void (*tx_send)(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len);
	void *ctx;
};

/* What the engine needs from its device. */
struct eng_ops {
	/* A GID table entry: the source GID and MAC of frames sent with it. */
	int (*gid)(void *ctx, uint8_t index, uint8_t gid[16], uint8_t mac[6]);
	/* A completion was added to cq (for REQ_NOTIFY_CQ and eventfds). */
	void (*cq_event)(void *ctx, struct eng_cq *cq, bool solicited);
	/* An asynchronous error: a CQ overrun, a QP that went to ERR. */
	void (*async_error)(void *ctx, struct eng_cq *cq, struct eng_qp *qp, int event);
	/* An armed SRQ fell below its limit when qp took a WQE from it
	 * (IBA 10.2.9.4; the limit is disarmed now). May be NULL. */
	void (*srq_limit)(void *ctx, struct eng_srq *srq, struct eng_qp *qp);
};

enum eng_async_event {
	ENG_EVENT_NONE = -1,		/* the error is in a completion (IBA 10.10.2) */
	ENG_EVENT_CQ_ERR = 0,
	ENG_EVENT_QP_FATAL = 1,
	ENG_EVENT_SQ_DRAINED = 2,	/* SQD reached with en_sqd_async_notify */
	ENG_EVENT_QP_REQ_ERR = 3,	/* a responder error: invalid request */
	ENG_EVENT_QP_ACCESS_ERR = 4,	/* a responder error: access violation */
	ENG_EVENT_QP_LAST_WQE_REACHED = 5, /* a QP on an SRQ went to ERR (IBA 10.3.1) */
};

struct eng_dev *eng_dev_new(const struct eng_ops *ops, void *ctx, const struct eng_tx *tx);
void eng_dev_free(struct eng_dev *dev);
/* The port's MTU: the size of UD messages and the ceiling of path_mtu. */
void eng_dev_set_port_mtu(struct eng_dev *dev, enum eng_mtu mtu);
const struct eng_counters *eng_dev_counters(const struct eng_dev *dev);
/* Fewer objects than the ENG_MAX_* (call before creating any): handles stay
 * below these limits, so the device model can index queues by them. */
void eng_dev_set_limits(struct eng_dev *dev, uint32_t max_pd, uint32_t max_mr, uint32_t max_cq,
			uint32_t max_qp);

/* Congestion control (cc.c, docs/congestion.md). */
struct eng_cc_config {
	bool ecn;			/* send ECT(0), answer CE with CNPs */
	uint64_t cnp_interval_ns;	/* at most one CNP per QP in this time */
};
#define ENG_CC_DEFAULT_CNP_INTERVAL_NS	50000ull
void eng_dev_set_cc(struct eng_dev *dev, const struct eng_cc_config *cc);
/* One destination's congestion state, for vrdmactl stats. */
struct eng_path_info {
	uint8_t dgid[16];
	uint32_t qps;		/* RC QPs sending there */
	uint32_t cwnd, ssthresh;	/* packets */
	uint32_t inflight;	/* packets sent and not acknowledged */
	uint64_t srtt_ns;	/* 0: no sample yet */
};
#define ENG_PATH_INFO_MAX	16
/* Up to max of the paths as eng_poll last published them (at most
 * ENG_PATH_PUBLISH_NS old); safe from any thread while the owner polls.
 * Returns how many were copied. */
unsigned int eng_dev_paths(const struct eng_dev *dev, struct eng_path_info *out,
			   unsigned int max);

/* A frame the codec accepted, for this device's QPs. */
void eng_rx(struct eng_dev *dev, const struct roce_pkt *pkt);
/* Frames one QP sends per eng_poll, requests and READ responses together:
 * one QP's 2 GiB WRITE or READ must not keep its worker from the others. */
#define ENG_POLL_QP_BUDGET	64
/* Send what may be sent, at most ENG_POLL_QP_BUDGET frames per QP, and run
 * the timers. *next_timer: the time of the next timer (ns on the ops
 * clock), or 0 if none is armed. Returns how many QPs spent their budget
 * (and have more to send): while not 0, call again soon, after the other
 * devices of the worker had their turn. A worker that counted every frame
 * sent as work would never yield its core while sending (measured: 13 %
 * less RC goodput on a veth pair where the receiver shares the cores). */
unsigned int eng_poll(struct eng_dev *dev, uint64_t *next_timer);
/* The QPs eng_poll will visit: those that may have work (idle ones cost a
 * poll nothing). */
uint32_t eng_dev_active_qps(const struct eng_dev *dev);

int eng_pd_alloc(struct eng_dev *dev, struct eng_pd **pd);
int eng_pd_free(struct eng_pd *pd);		/* -EBUSY while MRs or QPs use it */
uint32_t eng_pd_handle(const struct eng_pd *pd);
struct eng_pd *eng_pd_get(const struct eng_dev *dev, uint32_t handle);	/* or NULL */

/* Register [iova, iova + length) with access flags; map() reaches its bytes
 * by offset from iova. Keys carry random bits. */
int eng_mr_reg(struct eng_pd *pd, uint64_t iova, uint64_t length, unsigned int access,
	       eng_mem_map_fn map, void *mem, struct eng_mr **mr);
/* Point an MR at a new range, keeping its keys (MAP_MR_SG). */
int eng_mr_rerange(struct eng_mr *mr, uint64_t iova, uint64_t length);
/* A fast-registration MR (CREATE_MR): FREE, no access through it until a
 * REG_MR work request makes it VALID (IBA 10.6.3.6). */
int eng_mr_alloc_fast(struct eng_pd *pd, eng_mem_map_fn map, void *mem, struct eng_mr **mr);
int eng_mr_dereg(struct eng_mr *mr);	/* -EBUSY while windows are bound to it */
uint32_t eng_mr_handle(const struct eng_mr *mr);	/* small, < max_mr; not a key */
struct eng_mr *eng_mr_get(const struct eng_dev *dev, uint32_t handle);	/* or NULL */
uint32_t eng_mr_lkey(const struct eng_mr *mr);
uint32_t eng_mr_rkey(const struct eng_mr *mr);

/* Why a memory access was refused (also for NAK and completion choice). */
enum eng_mem_err {
	ENG_MEM_OK,
	ENG_MEM_BAD_KEY,	/* no such key, or its random bits do not match */
	ENG_MEM_BAD_PD,		/* MR of another protection domain */
	ENG_MEM_BAD_ACCESS,	/* access flag missing */
	ENG_MEM_BAD_RANGE,	/* outside the MR, or address + length wraps 2^64 */
	ENG_MEM_UNMAPPED,	/* the backing memory is gone */
	ENG_MEM_INVALID,	/* a fast-reg MR not registered or a window not bound (FREE) */
	ENG_MEM_BAD_QP,		/* a type 2B window bound to another QP (IBA 10.6.7.2) */
};

/* Look up key for [addr, addr + len) with `access` (0 for a local read) on
 * behalf of pd; remote = the key is an rkey. */
enum eng_mem_err eng_mr_check(struct eng_dev *dev, const struct eng_pd *pd, uint32_t key,
			      bool remote, uint64_t addr, uint64_t len, unsigned int access,
			      struct eng_mr **mr);
/* An rkey of a request that arrived on qp: an MR's (as eng_mr_check with
 * qp's PD) or a bound window's, whose rights and range apply, reached only
 * through the QP it is bound to; *mr is the MR underneath. */
enum eng_mem_err eng_rkey_check(struct eng_qp *qp, uint32_t key, uint64_t addr, uint64_t len,
				unsigned int access, struct eng_mr **mr);

/* Memory windows, type 2B only (IBA 10.6.7): allocated FREE with an rkey of
 * the MRs' key space; a BIND_MW work request makes one VALID over part of an
 * MR for one QP; LOCAL_INV, SEND_WITH_INV, dealloc or the QP's destruction
 * makes it FREE again. As many as max_mr (eng_dev_set_limits). */
int eng_mw_alloc(struct eng_pd *pd, struct eng_mw **mw);
int eng_mw_dealloc(struct eng_mw *mw);		/* a bound window is invalidated first */
struct eng_mw *eng_mw_get(const struct eng_dev *dev, uint32_t handle);	/* or NULL */
uint32_t eng_mw_handle(const struct eng_mw *mw);	/* small, < max_mr; not a key */
uint32_t eng_mw_rkey(const struct eng_mw *mw);

/* Copy between an MR (already checked) and host memory. */
enum eng_mem_err eng_mr_copy_out(const struct eng_mr *mr, uint64_t addr, void *dst, uint64_t len);
enum eng_mem_err eng_mr_copy_in(const struct eng_mr *mr, uint64_t addr, const void *src,
				uint64_t len);

int eng_cq_create(struct eng_dev *dev, uint32_t cqe, struct eng_cq **cq);
int eng_cq_destroy(struct eng_cq *cq);		/* -EBUSY while QPs use it */
/* Up to n completions, oldest first; returns how many, or -EIO after an
 * overrun (IBA 11.4.2.1: the CQ is in error). */
int eng_cq_poll(struct eng_cq *cq, struct eng_wc *wc, int n);
/* Nothing to poll (an overrun CQ is not empty: its poll says so). */
bool eng_cq_empty(const struct eng_cq *cq);
uint32_t eng_cq_handle(const struct eng_cq *cq);
struct eng_cq *eng_cq_get(const struct eng_dev *dev, uint32_t handle);	/* or NULL */

struct eng_qp_init_attr {
	enum eng_qp_type qp_type;
	struct eng_cq *send_cq, *recv_cq;
	struct eng_srq *srq;	/* receives come from it (cap.max_recv_* unused) */
	struct eng_qp_cap cap;
	bool sq_sig_all;
};

int eng_qp_create(struct eng_pd *pd, const struct eng_qp_init_attr *init, struct eng_qp **qp);
int eng_qp_destroy(struct eng_qp *qp);
/* ibv_modify_qp: -EINVAL for a transition, a missing or extra attribute, or
 * a value out of range, and then nothing changed. */
int eng_qp_modify(struct eng_qp *qp, const struct eng_qp_attr *attr, unsigned int mask);
int eng_qp_query(const struct eng_qp *qp, struct eng_qp_attr *attr, struct eng_qp_init_attr *init);
/* The QP to ERR with IBV_EVENT_QP_FATAL: what its owner does when the
 * queues it feeds the QP from misbehave (a ring's lying index). */
void eng_qp_fatal(struct eng_qp *qp);
/* Queue work (the request is copied; inline data too). -EINVAL: a bad
 * request or a state that takes none (send before RTS, receive in RESET);
 * -ENOMEM: the queue is full. In ERR, requests are accepted and completed
 * at once with ENG_WC_WR_FLUSH_ERR. */
int eng_post_send(struct eng_qp *qp, const struct eng_send_wr *wr);
int eng_post_recv(struct eng_qp *qp, const struct eng_recv_wr *wr);
/* A request the device could not even queue (malformed, or a state that
 * takes none): the QP goes to ERR, flushing earlier work, and the request
 * completes with `status` after it. */
int eng_qp_refuse_wr(struct eng_qp *qp, bool recv, uint64_t wr_id, enum eng_wc_status status);
uint32_t eng_qp_num(const struct eng_qp *qp);
/* The congestion window (packets) of the path the QP sends on; 0: none. */
uint32_t eng_qp_cwnd(const struct eng_qp *qp);
uint32_t eng_qp_handle(const struct eng_qp *qp);	/* small, < max_qp; not the QPN */
struct eng_qp *eng_qp_from_num(const struct eng_dev *dev, uint32_t qpn);	/* or NULL */
struct eng_qp *eng_qp_get(const struct eng_dev *dev, uint32_t handle);	/* or NULL */
enum eng_qp_state eng_qp_state(const struct eng_qp *qp);
const struct eng_counters *eng_qp_counters(const struct eng_qp *qp);
const char *eng_qp_state_name(enum eng_qp_state s);
struct eng_srq *eng_qp_srq(const struct eng_qp *qp);	/* or NULL */

/* Shared receive queues (IBA 10.2.9): one ring of receive WQEs that the QPs
 * created on it take from, in order, as messages arrive. An SRQ holds one
 * of the device's QP slots (handles below max_qp), so that the device
 * model can give it that slot's receive queue. */
struct eng_srq_attr {
	uint32_t max_wr, max_sge;
	uint32_t srq_limit;	/* 0: disarmed */
};

/* ibv_srq_attr_mask */
enum eng_srq_attr_mask { ENG_SRQ_MAX_WR = 1 << 0, ENG_SRQ_LIMIT = 1 << 1 };

int eng_srq_create(struct eng_pd *pd, const struct eng_srq_attr *attr, struct eng_srq **srq);
int eng_srq_destroy(struct eng_srq *srq);	/* -EBUSY while QPs use it */
/* ENG_SRQ_LIMIT arms the limit (0 disarms); ENG_SRQ_MAX_WR resizes, to
 * 1..ENG_MAX_WR and no fewer than the WQEs posted. A limit above max_wr
 * (the new one) is -EINVAL; nothing changes on an error. */
int eng_srq_modify(struct eng_srq *srq, const struct eng_srq_attr *attr, unsigned int mask);
int eng_srq_query(const struct eng_srq *srq, struct eng_srq_attr *attr);
/* -EINVAL: a bad request; -ENOMEM: max_wr WQEs are waiting already. */
int eng_srq_post_recv(struct eng_srq *srq, const struct eng_recv_wr *wr);
uint32_t eng_srq_handle(const struct eng_srq *srq);	/* small, < max_qp - 1 */
uint32_t eng_srq_slot(const struct eng_srq *srq);	/* the QP slot it holds */
uint32_t eng_srq_count(const struct eng_srq *srq);	/* WQEs waiting */
struct eng_srq *eng_srq_get(const struct eng_dev *dev, uint32_t handle);	/* or NULL */

#endif
