/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A device that lies to its guest, for the guest driver's tests only
 * (tests/vm/hostile.sh): compiled in with -DVDEV_LIES into vrdmad-liar,
 * never into vrdmad, where every hook below is an empty inline. The lie is
 * named by the environment variable VRDMAD_LIE (docs/guest.md, "How it is
 * tested").
 */
#ifndef VRDMAD_VDEV_LIE_H
#define VRDMAD_VDEV_LIE_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio_rdma.h"

struct vdev;
struct eng_qp;

#ifdef VDEV_LIES
/* Before a command (its request req, len bytes) runs: true to answer
 * *status at once, not running it. */
bool vdev_lie_refuse(uint8_t cmd, const uint8_t *req, uint32_t len, uint8_t *status);
/* After it ran: its answer, rewritten. */
void vdev_lie_answer(uint8_t cmd, uint8_t status, uint8_t *rsp, uint32_t rsp_len);
/* Whether the command (its request req), run, gets no answer at all. */
bool vdev_lie_mute(uint8_t cmd, const uint8_t *req);
/* After an answer: whether to stop this poll (having slept a while). */
bool vdev_lie_slow_ctrl(void);
/* A CQE about to be written, rewritten. */
void vdev_lie_cqe(struct virtio_rdma_cqe *c);
/* Whether CQ cqn's buffers go back empty (used length 0), each poll. */
bool vdev_lie_empty_cqes(uint32_t cqn);
/* The config space served, rewritten. */
void vdev_lie_config(struct virtio_rdma_config *c);
/* The device was reset: the next objects are the guest kernel's again. */
void vdev_lie_reset(void);
/* ABI v2: a work queue ring's `taken` (of QP eng, NULL for an SRQ) and a CQ
 * ring's `written` about to be stored, and an event about to be queued,
 * rewritten. */
uint32_t vdev_lie_taken(const struct eng_qp *eng, uint32_t taken);
uint32_t vdev_lie_written(uint32_t cqn, uint32_t written);
void vdev_lie_ring_event(struct virtio_rdma_ring_event *ev);
#else
static inline bool vdev_lie_refuse(uint8_t cmd, const uint8_t *req, uint32_t len,
				   uint8_t *status)
{
	(void)cmd, (void)req, (void)len, (void)status;
	return false;
}
static inline void vdev_lie_answer(uint8_t cmd, uint8_t status, uint8_t *rsp, uint32_t rsp_len)
{
	(void)cmd, (void)status, (void)rsp, (void)rsp_len;
}
static inline bool vdev_lie_mute(uint8_t cmd, const uint8_t *req)
{
	(void)cmd, (void)req;
	return false;
}
static inline bool vdev_lie_slow_ctrl(void)
{
	return false;
}
static inline void vdev_lie_cqe(struct virtio_rdma_cqe *c)
{
	(void)c;
}
static inline bool vdev_lie_empty_cqes(uint32_t cqn)
{
	(void)cqn;
	return false;
}
static inline void vdev_lie_config(struct virtio_rdma_config *c)
{
	(void)c;
}
static inline void vdev_lie_reset(void)
{
}
static inline uint32_t vdev_lie_taken(const struct eng_qp *eng, uint32_t taken)
{
	(void)eng;
	return taken;
}
static inline uint32_t vdev_lie_written(uint32_t cqn, uint32_t written)
{
	(void)cqn;
	return written;
}
static inline void vdev_lie_ring_event(struct virtio_rdma_ring_event *ev)
{
	(void)ev;
}
#endif

#endif
