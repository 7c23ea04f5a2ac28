/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The guest tests' RC QP taken to RTS towards a peer QP (IBA 10.3.1),
 * PSNs 1 both ways: qp_rts with the timers of RTS_FAST or RTS_PATIENT.
 * self_rts aims it at another QP of the same device, through the device's
 * own GID (vrdmad loops such frames back), with short timeouts and one
 * retry, so a QP whose peer went away fails fast.
 */
#ifndef VRDMA_TEST_SELF_RTS_H
#define VRDMA_TEST_SELF_RTS_H

#include <string.h>

#include <infiniband/verbs.h>

struct rts_timers {
	unsigned int access;	/* qp_access_flags */
	uint8_t min_rnr_timer, timeout, retry_cnt, rnr_retry;
};

/* fail fast: 1 ms timeout (8), one retry */
#define RTS_FAST (&(const struct rts_timers){ \
	IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 1, 8, 1, 1 })
/* the transport's usual: 67 ms (14), 7 retries, as perftest's */
#define RTS_PATIENT (&(const struct rts_timers){ 0, 12, 14, 7, 7 })

static inline int qp_rts(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid,
			 int gid_index, const struct rts_timers *t)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = t->access,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = t->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = t->timeout;
	a.retry_cnt = t->retry_cnt;
	a.rnr_retry = t->rnr_retry;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static inline int self_rts(struct ibv_qp *qp, uint32_t dest,
			   const union ibv_gid *gid, int gid_index)
{
	return qp_rts(qp, dest, gid, gid_index, RTS_FAST);
}

#endif
