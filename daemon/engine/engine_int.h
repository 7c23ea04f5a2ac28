/* SPDX-License-Identifier: GPL-2.0-only */
/* The engine's internals, shared by its files (mr.c, cq.c, qp.c, and the
 * requester, responder and completer). Not for the rest of the daemon. */
#ifndef VRDMAD_ENGINE_INT_H
#define VRDMAD_ENGINE_INT_H

#include "engine.h"

/* A table of objects by small index, growing on demand up to max. */
struct eng_table {
	void **slot;
	uint32_t cap, max, used;
	uint32_t hint;		/* where to look for a free slot next */
};

int eng_table_add(struct eng_table *t, void *obj, uint32_t *index);
/* Add obj at *want (a restore: -EEXIST if taken, -ERANGE at max or
 * beyond), or where eng_table_add would if want is NULL. */
int eng_table_add_at(struct eng_table *t, void *obj, const uint32_t *want, uint32_t *index);
void eng_table_del(struct eng_table *t, uint32_t index);
static inline void *eng_table_get(const struct eng_table *t, uint32_t index)
{
	return index < t->cap ? t->slot[index] : NULL;
}
void eng_table_free(struct eng_table *t);

/* Random 32-bit names (MR keys, QPNs) to objects: open addressing with
 * linear probing, deleted by backward shift (no tombstones). */
struct eng_idmap {
	uint32_t *key;
	void **obj;		/* NULL: empty */
	uint32_t mask;		/* capacity - 1; 0 before the first add */
	uint32_t used;
};

int eng_idmap_add(struct eng_idmap *m, uint32_t key, void *obj);	/* key not present */
void *eng_idmap_get(const struct eng_idmap *m, uint32_t key);
void eng_idmap_del(struct eng_idmap *m, uint32_t key);
void eng_idmap_free(struct eng_idmap *m);
/* Add obj under a random name (x & mask) not in m and not refused by bad
 * (may be NULL), returned in *name: arc4random, so a peer who saw some
 * names cannot predict the next. */
int eng_idmap_add_random(struct eng_idmap *m, uint32_t mask, bool (*bad)(uint32_t), void *obj,
			 uint32_t *name);

/* The names an object is restored with (save.c): its handle, and its key
 * (an MR's or a window's), its QPN, or an SRQ's QP slot. NULL: new ones. */
struct eng_name {
	uint32_t index, key;
};

int eng_pd_alloc_as(struct eng_dev *dev, const struct eng_name *as, struct eng_pd **pd);
int eng_mr_new_as(struct eng_pd *pd, uint64_t iova, uint64_t length, unsigned int access,
		  eng_mem_map_fn map, void *mem, bool fast, const struct eng_name *as,
		  struct eng_mr **mr);
int eng_mw_alloc_as(struct eng_pd *pd, const struct eng_name *as, struct eng_mw **mw);
int eng_cq_create_as(struct eng_dev *dev, uint32_t cqe, const struct eng_name *as,
		     struct eng_cq **cq);
int eng_srq_create_as(struct eng_pd *pd, const struct eng_srq_attr *attr,
		      const struct eng_name *as, struct eng_srq **srq);
int eng_qp_create_as(struct eng_pd *pd, const struct eng_qp_init_attr *init,
		     const struct eng_name *as, struct eng_qp **qp);

/* A destination of this device's RC QPs and its congestion window (cc.c). */
struct eng_path {
	struct eng_path *next;
	uint8_t dgid[16];
	uint32_t users;		/* QPs sending on it */
	uint32_t inflight;	/* their packets sent and not acknowledged */
	uint32_t cwnd;		/* packets, ENG_CC_MIN..ENG_CC_MAX */
	uint32_t ssthresh;
	uint32_t acked;		/* towards the next +1 in congestion avoidance */
	uint32_t recover;	/* packets to be acknowledged before the next cut */
	uint64_t progress;	/* acknowledgements that moved a QP on */
	uint64_t srtt, rttvar;	/* ns, RFC 6298's estimators; srtt 0: no sample */
	uint64_t probe_until;	/* ns: the end of the probe budget's period */
	uint32_t probes_left;	/* tail-loss probes its QPs may still send in it */
};

#define ENG_CC_INIT	ENG_SEND_WINDOW	/* a lone QP's window, as before */
#define ENG_CC_MIN	2
#define ENG_CC_MAX	1024
#define ENG_CC_AI	8		/* packets more per window acknowledged */
#define ENG_CC_FORGIVE	7		/* timeouts in a row held by the window */
/* A QP with packets in flight and no ACK for this long (or the path's
 * srtt + 4 rttvar, if longer) sends again from its oldest one: a lost last
 * packet draws no NAK, and the IB timer (67 ms at timeout 14) is for a
 * peer that is gone, not for a queue that overflowed. */
#define ENG_CC_PTO_MIN_NS	1000000ull
#define ENG_CC_PTO_MAX_SHIFT	6

#define ENG_PATH_PUBLISH_NS	10000000ull	/* eng_dev_paths' age, at most */

enum eng_cc_signal { ENG_CC_LOSS, ENG_CC_TIMEOUT, ENG_CC_CNP };

struct eng_dev {
	enum eng_mtu port_mtu;	/* UD messages and the ceiling of path_mtu */
	struct eng_counters cnt;	/* all QPs, and frames for no QP */
	const struct eng_ops *ops;
	void *ctx;
	struct eng_tx tx;
	struct eng_table pds, mrs, cqs, qps;	/* by handle */
	struct eng_table mws;		/* memory windows by handle */
	struct eng_table srqs;		/* by handle; each also holds a slot of qps */
	struct eng_idmap mr_keys;	/* MRs and windows by key >> 8: the low 8
					 * bits are the consumer's
					 * (ib_update_fast_reg_key, ibv_inc_rkey) */
	struct eng_idmap qpns;		/* QPs by number */
	struct eng_path *paths;		/* cc.c */
	struct eng_cc_config cc;	/* eng_dev_set_cc */
	uint32_t poll_first;		/* eng_poll starts there, round robin */
	/* The QPs eng_poll visits, by handle: set by what may give a QP work
	 * (a post, a packet, a state change), cleared by eng_poll once the QP
	 * has nothing left to send, no timer and no reply owed. Thousands of
	 * idle QPs then cost a poll nothing. */
	uint64_t active[ENG_MAX_QP / 64];
	/* the paths for other threads (eng_dev_paths): a sequence count,
	 * odd while the owner writes */
	struct {
		uint32_t seq;
		uint32_t n;
		uint64_t at;		/* eng_now of the last publication */
		struct eng_path_info p[ENG_PATH_INFO_MAX];
	} pub;
};

struct eng_pd {
	struct eng_dev *dev;
	uint32_t index;
	uint32_t users;		/* MRs, windows, QPs and SRQs */
};

struct eng_mr {
	struct eng_pd *pd;
	uint32_t index;		/* the handle */
	uint32_t key;		/* 32 random bits, the upper 24 unique in the device
				 * (the map's name); lkey == rkey */
	bool fast;		/* CREATE_MR: REG_MR and invalidation apply */
	bool valid;		/* false: FREE (IBA 10.6.3.6), a fast MR's first state */
	bool window;		/* the key of a memory window: a struct eng_mw */
	uint32_t windows;	/* windows bound to it: no dereg or invalidation */
	uint64_t iova, length;
	unsigned int access;
	eng_mem_map_fn map;
	void *mem;
};

/* A type 2B memory window (IBA 10.6.7). Its key object comes first and
 * lives in dev->mr_keys beside the MRs (one rkey space): pd, index (in
 * dev->mws), key, valid (bound), iova and length (the bound range) and
 * access (its remote rights) mean for the window what they mean for an
 * MR; map and mem are unused. */
struct eng_mw {
	struct eng_mr k;
	struct eng_mr *mr;	/* bound: the MR underneath (counted in mr->windows) */
	struct eng_qp *qp;	/* bound: the one QP that reaches it */
};

struct eng_cq {
	struct eng_dev *dev;
	uint32_t index;
	uint32_t users;		/* QPs */
	struct eng_wc *ring;
	uint32_t size, head, count;
	bool overrun;
};

/* Add a completion; -ENOSPC when the CQ overran (it is then in error). */
int eng_cq_post(struct eng_cq *cq, const struct eng_wc *wc, bool solicited);

/* A send work request as queued: copied in full, inline data included. */
struct eng_swqe {
	struct eng_send_wr wr;	/* sg_list points at sge[] below */
	struct eng_ah_attr ah;	/* UD: the address vector, copied */
	uint64_t length;	/* of the message */
	struct eng_sge *sge;
	uint8_t *inline_data;	/* max_inline_data bytes */
	bool started;		/* PSNs assigned */
	uint32_t first_psn, last_psn;
	uint32_t rd_next;	/* READ: PSN of the next response expected */
	uint32_t rd_end;	/* READ: PSN after the last response asked for */
};

/* READs and atomics: answered with data, counted against max_rd_atomic,
 * completed only by their responses (IBA 9.4.5, 9.7.5.1.5). */
static inline bool eng_wr_is_atomic(enum eng_wr_opcode op)
{
	return op == ENG_WR_ATOMIC_CMP_AND_SWP || op == ENG_WR_ATOMIC_FETCH_AND_ADD;
}

/* Work requests that send nothing (IBA 10.6.3.6, 10.6.7.2, 10.7.2.1). */
static inline bool eng_wr_is_local(enum eng_wr_opcode op)
{
	return op == ENG_WR_REG_MR || op == ENG_WR_LOCAL_INV || op == ENG_WR_BIND_MW;
}

static inline bool eng_wr_is_rd_atomic(enum eng_wr_opcode op)
{
	return op == ENG_WR_RDMA_READ || eng_wr_is_atomic(op);
}

/* What a QP of type t may post (qp.c). */
bool eng_wr_allowed(enum eng_qp_type t, enum eng_wr_opcode op);

struct eng_rwqe {
	uint64_t wr_id;
	unsigned int num_sge;
	uint64_t length;
	struct eng_sge *sge;
};

/* A ring of work queue entries: posted at tail, retired at head. */
struct eng_wq {
	uint32_t size, head, count;
};

/* What an SRQ's slot in dev->qps holds: not a QP, so loops over QPs skip it. */
extern char eng_srq_slot_mark;
#define ENG_SRQ_SLOT ((void *)&eng_srq_slot_mark)

struct eng_srq {
	struct eng_dev *dev;
	struct eng_pd *pd;
	uint32_t index;		/* the handle */
	uint32_t slot;		/* in dev->qps */
	uint32_t users;		/* QPs */
	uint32_t max_sge;
	uint32_t limit;		/* armed when non-zero (IBA 10.2.9.4) */
	struct eng_wq rq;
	struct eng_rwqe *rwqe;
	struct eng_sge *sge_pool;
};

struct eng_qp {
	struct eng_dev *dev;
	struct eng_pd *pd;
	uint32_t index;		/* the handle */
	uint32_t qpn;		/* random, unique in the device */
	struct eng_qp_init_attr init;
	struct eng_qp_attr attr;	/* state and every attribute set so far */
	struct eng_wq sq, rq;
	struct eng_swqe *swqe;
	struct eng_rwqe *rwqe;
	struct eng_sge *sge_pool;	/* backing of every WQE's sge[] */
	uint8_t *inline_pool;
	/* On an SRQ: the WQE taken from it for the message being received,
	 * held until that message ends (IBA 10.2.9.5: one WQE per message). */
	struct eng_rwqe srq_wqe;
	bool srq_held;

	struct {			/* requester: WQEs to packets */
		uint32_t psn;		/* next PSN to send */
		uint32_t wqe;		/* WQE being sent, counted from sq.head */
		uint64_t offset;	/* bytes of it sent */
		uint32_t noack;		/* packets since the last AckReq */
		uint32_t max_psn;	/* first PSN never sent: below it is a resend */
		bool drained_sent;	/* SQD: the drained event went out */
	} req;
	struct {			/* completer: ACKs to completions */
		uint32_t psn;		/* oldest unacknowledged PSN */
		uint64_t deadline;	/* retransmit timer, 0 = off */
		uint8_t retry_left;	/* retry_cnt minus timeouts since progress */
		uint8_t rnr_left;	/* rnr_retry minus RNR NAKs since progress */
		uint64_t rnr_until;	/* RNR wait: send nothing before this */
		bool gap_handled;	/* one implied NAK per READ-response gap */
		bool cc_held;		/* the path's window held it since progress */
		uint8_t cc_forgiven;	/* timeouts not counted since progress */
		uint64_t probe_at;	/* cc.c: resend from comp.psn then, 0 = off */
		uint8_t probes;		/* probes since progress (backoff) */
		bool probing;		/* the packet being built is a probe */
		uint32_t rtt_psn;	/* a packet being timed, sent at rtt_at */
		uint64_t rtt_at;	/* 0: none */
	} comp;
	struct eng_path *path;		/* cc.c: RC in RTS or SQD */
	uint32_t cc_inflight;		/* its share of path->inflight */
	uint64_t cc_progress;		/* path->progress at its own last progress */
	/* What the responder keeps between packets names MRs by key, never by
	 * pointer, and checks the key again at each use: an MR deregistered
	 * meanwhile (by the guest, or with its VM) fails that check. */
	struct eng_rd_res {		/* responder resources, READs and atomics (9.7.5.1.5) */
		bool valid;
		bool atomic;		/* an atomic: its one response is an ATOMIC ACK */
		uint64_t orig;		/* atomic: the original value, sent again for a duplicate */
		uint32_t first_psn, npkts;	/* the responses' PSNs */
		uint32_t lo, end;	/* the READ's own PSNs: duplicates match them */
		uint32_t next;		/* responses sent */
		uint64_t va;		/* what the responses carry */
		uint32_t len;
		uint32_t rkey;
		uint64_t va0;		/* the READ as first asked: a duplicate */
		uint32_t len0;		/* may ask only for a tail of it */
	} *rd_res;
	uint32_t rd_res_next;		/* ring slot for the next READ */
	struct {			/* responder: requests to memory and receives */
		uint32_t psn;		/* expected PSN */
		uint32_t msn;		/* messages completed (AETH MSN) */
		uint32_t in_msg;	/* ROCE_F_SEND or ROCE_F_WRITE while a message is open */
		bool ack_pending;
		bool nak_sent;		/* one PSN-sequence NAK per gap (9.7.5.2.2) */
		uint64_t offset;	/* bytes of the open message placed */
		uint32_t wrkey;		/* WRITE target */
		uint64_t wva;
		uint32_t wresid;
		uint64_t cnp_at;	/* when the last CNP went out (cc.c) */
		bool cnp_sent;		/* cnp_at is set */
	} resp;
	struct eng_counters cnt;
};

/* The QP may have work: eng_poll visits it until it has none. */
static inline void eng_qp_wake(struct eng_qp *qp)
{
	qp->dev->active[qp->index / 64] |= 1ull << (qp->index % 64);
}

#define XMIT_MAX_FRAGS		16	/* buffers one frame may span */
/* Packets in flight per RC QP before an ACK must come back (IBA 9.7.7.2:
 * bounded by the PSN space). Go-back-N resends the whole window after a
 * loss: at 1 % loss a window of 1024 sent every byte 16 times over, 128
 * about 3 times, and 128 KiB in flight still outruns the wire on veth. */
#define ENG_SEND_WINDOW		128
/* Responses a resent READ asks for at most; comp.c asks for the rest when
 * they are in. Asked for in one piece, the rest of a long READ comes back
 * all at once again, and a peer that lost part of it the first time loses
 * part of it again: rxe pushes a whole READ into the guest's qdisc, which
 * under TCG kept about 2000 of 8192 responses in a row. */
#define ENG_READ_RESEND_MAX	1024
/* Ask for an ACK at least this often inside a long message or a burst. */
#define ENG_ACKREQ_EVERY	64

/* AETH syndromes (IBA 9.7.5.1) */
#define AETH_ACK		0x1f	/* ACK, no end-to-end credits (rxe does the same) */
#define AETH_RNR_NAK		0x20	/* | RNR timer code */
#define AETH_NAK_PSN		0x60
#define AETH_NAK_INVALID	0x61
#define AETH_NAK_ACCESS		0x62
#define AETH_NAK_OPERATION	0x63
#define AETH_TYPE(s)		((s) >> 5)	/* 0 ACK, 1 RNR NAK, 3 NAK */

/* Count on the QP and in the device's total. */
static inline void eng_count(struct eng_qp *qp, enum eng_counter c)
{
	qp->cnt.c[c]++;
	qp->dev->cnt.c[c]++;
}

static inline uint64_t eng_now(const struct eng_dev *dev)
{
	return dev->tx.now_ns(dev->tx.ctx);
}

uint32_t eng_qp_mtu(const struct eng_qp *qp);
/* Build and send one packet of qp to ah. -EAGAIN: no buffer now. */
int eng_xmit(struct eng_qp *qp, const struct eng_ah_attr *ah, const struct roce_hdrs *h,
	     const struct roce_frag *payload, unsigned int npayload);
/* An ACK or NAK from the responder, with the given syndrome and PSN. */
int eng_send_ack(struct eng_qp *qp, uint8_t syndrome, uint32_t psn);
/* Move to ERR (and flush) from inside the engine; raise event unless
 * ENG_EVENT_NONE (an error a completion reports raises none, as in rxe). */
void eng_qp_error(struct eng_qp *qp, enum eng_async_event event);
bool eng_sq_draining(const struct eng_qp *qp);
/* A UC/UD send failed: SQE, the send queue flushed, receives go on. */
void eng_qp_sq_error(struct eng_qp *qp);
/* Complete a send WQE (when signaled, or on error) and retire it. */
void eng_req_retire(struct eng_qp *qp, enum eng_wc_status status);

/* Scatter len bytes of pkt's payload (from pkt_off) into an SGE list at
 * byte off of it; the SGEs' lkeys need local write. */
enum eng_wc_status eng_scatter(struct eng_qp *qp, const struct eng_sge *sge, unsigned int nsge,
			       uint64_t off, const struct roce_pkt *pkt, uint32_t pkt_off,
			       uint32_t len);
/* Pieces one packet's payload may be gathered from (SGEs x pages). */
#define ENG_GATHER_MAX		80

/* Packets (PSNs) a message of len bytes takes; a zero-length one takes one. */
static inline uint32_t eng_npkts(uint64_t len, uint32_t mtu)
{
	return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

/* The completion opcode of a send work request. */
enum eng_wc_opcode eng_send_wc_opcode(enum eng_wr_opcode op);

/* Copy len bytes of pkt's payload (from pkt_off) to addr in an MR. */
enum eng_mem_err eng_mr_copy_from_pkt(const struct eng_mr *mr, uint64_t addr,
				      const struct roce_pkt *pkt, uint32_t pkt_off, uint32_t len);
/* Execute an atomic on the 8-byte word at addr of an MR (checked, 8-byte
 * aligned): compare-and-swap (swap_add if the word equals compare) or
 * fetch-and-add; *orig gets the word as it was. */
enum eng_mem_err eng_mr_atomic(const struct eng_mr *mr, uint64_t addr, bool cmp_swap,
			       uint64_t swap_add, uint64_t compare, uint64_t *orig);
/* Point frags at [va, va + len) of an MR, page by page; count or -EFAULT. */
int eng_mr_frags(const struct eng_mr *mr, uint64_t va, uint32_t len, struct roce_frag *frags,
		 unsigned int max);
/* Fast registration and local invalidation of a send WQE on qp
 * (IBA 10.6.3.6, 10.7.2.1): 0 or the completion status. */
enum eng_wc_status eng_mr_reg_fast(struct eng_qp *qp, const struct eng_send_wr *wr);
/* remote: SEND_WITH_INV, which must arrive on a window's own QP. */
enum eng_wc_status eng_mr_invalidate(struct eng_qp *qp, uint32_t key, bool remote);
/* BIND_MW (IBA 10.6.7.2): 0 or ENG_WC_MW_BIND_ERR (counted). */
enum eng_wc_status eng_mw_bind(struct eng_qp *qp, const struct eng_send_wr *wr);
/* The QP goes away: the windows bound to it become FREE. */
void eng_mw_qp_gone(struct eng_qp *qp);
uint64_t eng_timeout_ns(uint8_t timeout);
uint64_t eng_rnr_ns(uint8_t code);
/* The retransmit point moved: PSNs before psn are acknowledged. */
void eng_comp_progress(struct eng_qp *qp, uint32_t psn);
/* Send again from psn (go-back-N). */
void eng_req_rewind(struct eng_qp *qp, uint32_t psn);

int eng_req_step(struct eng_qp *qp);		/* req.c */
/* resp.c: pending READ responses, at most *budget frames (counted down);
 * 0 once none is left to send */
int eng_resp_send_reads(struct eng_qp *qp, unsigned int *budget);

/* cc.c: the path's window; see there */
void eng_cc_sync(struct eng_qp *qp);		/* after the PSNs or the state changed */
void eng_cc_detach(struct eng_qp *qp);
bool eng_cc_may_send(struct eng_qp *qp);
bool eng_cc_ack_wanted(const struct eng_qp *qp);
void eng_cc_acked(struct eng_qp *qp, uint32_t n);
void eng_cc_cut(struct eng_qp *qp, enum eng_cc_signal why);
/* A retransmit timeout: the window's cut; whether it counts against
 * retry_cnt. */
bool eng_cc_timeout(struct eng_qp *qp);
void eng_cc_free(struct eng_dev *dev);
/* Paths for eng_dev_paths, at most every ENG_PATH_PUBLISH_NS. */
void eng_cc_publish(struct eng_dev *dev, uint64_t now);
void eng_cc_sent(struct eng_qp *qp, uint32_t psn, bool resend);	/* after a request went out */
void eng_cc_timers(struct eng_qp *qp, uint64_t now);	/* the probe timer */
void eng_cc_rewound(struct eng_qp *qp);		/* timed packets are resent */
void eng_cc_alive(struct eng_qp *qp);		/* the responder answers, out of order */
void eng_cc_rx(struct eng_qp *qp, const struct roce_pkt *pkt);	/* ECN, CNPs */
uint8_t eng_cc_tclass(const struct eng_dev *dev, uint8_t tclass);	/* with ECT(0) */
void eng_comp_timers(struct eng_qp *qp, uint64_t now);	/* comp.c */
void eng_resp_rx(struct eng_qp *qp, const struct roce_pkt *pkt);	/* resp.c */
uint64_t eng_sge_total(const struct eng_sge *sge, unsigned int n);
/* Fill a receive WQE (its sge[] has room for n). */
void eng_rwqe_set(struct eng_rwqe *w, uint64_t wr_id, const struct eng_sge *sge, unsigned int n);
/* The receive WQE for the next (or current) message: the head of the QP's
 * RQ, or one taken from its SRQ; NULL if there is none (srq.c). */
struct eng_rwqe *eng_rq_head(struct eng_qp *qp);
/* The head receive WQE was used up (completed). */
void eng_rq_retire(struct eng_qp *qp);
void eng_comp_rx(struct eng_qp *qp, const struct roce_pkt *pkt);	/* comp.c */

#endif
