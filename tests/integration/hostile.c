// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostile: a front end that attacks vrdmad the ways issue 15 names, with
 * libvrdma's own vhost-user code (its internal header: the calls and
 * the context's memory), which the library's API does not offer.
 *
 * Usage: hostile MODE SOCKET [HOLD_SECONDS]
 *   call-pipe  SET_VRING_CALL of the control queue with a blocking, full
 *              pipe; if taken, a control command, whose completion makes
 *              the worker write to it, and the pipe held open HOLD_SECONDS
 *   unsealed   SET_MEM_TABLE with a memfd that cannot be sealed (a copy of
 *              the memory); if taken, the memfd shrunk to nothing and a
 *              control command, which makes the worker read its ring
 *   ok         a well-behaved front end: open, a PD, close
 *   uc-flood IP  64 unsignaled UC RDMA WRITEs of 64 MiB (4 GiB, 4 million
 *              frames at MTU 1024) to a QP at IP that nobody serves, then
 *              HOLD_SECONDS before it closes (issue 26: UC has no window,
 *              only eng_poll's budget keeps the worker for the others)
 *   read-flood SOCKET2  64 RDMA READs of 64 MiB each, 16 at a time, from the
 *              VM of SOCKET to one of the VM of SOCKET2: the responder's side
 *   read-target IP  an RC QP connected to QP 0x123 at IP (receive PSN 0) and
 *              64 MiB registered for REMOTE_READ, printed as "target QPN
 *              RKEY VA", held HOLD_SECONDS: for a remote peer's READs
 * Prints "refused: ..." and exits 0 when the daemon refuses the fd (its
 * REPLY_ACK failure or the connection dropped); prints "taken" and exits 1
 * when it takes it, having then carried the attack out. "ok" exits 0 when
 * the device works, "uc-flood" when all was posted ("posted N").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libvrdma/internal.h"
#include "qp_connect.h"

static int call_pipe(struct vrdma_ctx *ctx, unsigned int hold)
{
	char junk[4096] = { 0 };
	struct vrdma_pd *pd;
	int p[2], ret;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	while (write(p[1], junk, sizeof(junk)) > 0)
		;
	if (fcntl(p[1], F_SETFL, 0) < 0)	/* full, and blocking */
		return -errno;
	ret = vu_set_fd(ctx, VHOST_USER_SET_VRING_CALL, VIRTIO_RDMA_CTRL_VQ, p[1]);
	if (ret) {
		printf("refused: SET_VRING_CALL with a pipe: %s\n", strerror(-ret));
		return 0;
	}
	printf("taken\n");
	fflush(stdout);
	ret = vrdma_alloc_pd(ctx, &pd);
	fprintf(stderr, "hostile: a PD after that: %s\n", strerror(-ret));
	sleep(hold);	/* the read end stays open: the daemon's write blocks */
	return 1;
}

static int unsealed(struct vrdma_ctx *ctx)
{
	struct vhost_user_memory mem = { .nregions = 1 };
	struct vrdma_pd *pd;
	int fd, ret;

	fd = memfd_create("hostile-guest", MFD_CLOEXEC);	/* no MFD_ALLOW_SEALING */
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)ctx->mem_size) < 0 ||
	    pwrite(fd, ctx->mem, ctx->mem_size, 0) != (ssize_t)ctx->mem_size) {
		ret = -errno;
		close(fd);
		return ret;
	}
	mem.regions[0] = (struct vhost_user_mem_region){
		.guest_phys_addr = GPA_BASE,
		.memory_size = ctx->mem_size,
		.userspace_addr = (uint64_t)(uintptr_t)ctx->mem,
	};
	ret = vu_call(ctx, VHOST_USER_SET_MEM_TABLE, &mem,
		      offsetof(struct vhost_user_memory, regions) + sizeof(mem.regions[0]),
		      &fd, 1, NULL, NULL);
	if (ret) {
		printf("refused: SET_MEM_TABLE with an unsealed memfd: %s\n", strerror(-ret));
		close(fd);
		return 0;
	}
	printf("taken\n");
	fflush(stdout);
	if (ftruncate(fd, 0) < 0)
		return -errno;
	ret = vrdma_alloc_pd(ctx, &pd);
	fprintf(stderr, "hostile: a PD after the shrink: %s\n", strerror(-ret));
	close(fd);
	return 1;
}

#define FLOOD_WRS	64
#define FLOOD_LEN	(64u << 20)

/* A PD, a CQ, a QP of type with FLOOD_WRS send WQEs, and FLOOD_LEN of
 * memory registered with access. */
static int flood_ep(struct vrdma_ctx *ctx, uint8_t type, unsigned int access, struct vrdma_qp **qp,
		    struct vrdma_mr **mr, void **buf)
{
	struct vrdma_qp_init_attr init = { .qp_type = type, .max_send_wr = FLOOD_WRS,
					   .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 };
	struct vrdma_pd *pd;
	int ret;

	ret = vrdma_alloc_pd(ctx, &pd);
	if (!ret)
		ret = vrdma_create_cq(ctx, 16, &init.send_cq);
	if (ret)
		return ret;
	init.recv_cq = init.send_cq;
	*buf = vrdma_alloc_buf(ctx, FLOOD_LEN);
	if (!*buf)
		return -ENOMEM;
	ret = vrdma_reg_mr(pd, *buf, FLOOD_LEN, access, mr);
	return ret ? ret : vrdma_create_qp(pd, &init, qp);
}

/* FLOOD_WRS unsignaled WRs of opcode, FLOOD_LEN each, from buf. */
static int flood_post(struct vrdma_qp *qp, uint32_t opcode, void *buf, struct vrdma_mr *mr,
		      uint64_t raddr, uint32_t rkey)
{
	struct vrdma_sge sge = { .addr = (uintptr_t)buf, .length = FLOOD_LEN,
				 .lkey = vrdma_mr_lkey(mr) };
	struct vrdma_send_wr wr = { .opcode = opcode, .sg_list = &sge, .num_sge = 1,
				    .remote_addr = raddr, .rkey = rkey };
	unsigned int i;
	int ret;

	for (i = 0; i < FLOOD_WRS; i++) {
		wr.wr_id = i;
		ret = vrdma_post_send(qp, &wr);
		if (ret)
			return ret;
	}
	printf("posted %u\n", i);
	fflush(stdout);
	return 0;
}

/* flood_ep's QP connected to QP 0x123 at ip, PSNs 0. */
static int peer_ep(struct vrdma_ctx *ctx, uint8_t type, unsigned int access, const char *ip,
		   struct vrdma_qp **qp, struct vrdma_mr **mr, void **buf)
{
	uint8_t gid[16] = { [10] = 0xff, [11] = 0xff };	/* ::ffff:ip */
	int ret;

	if (inet_pton(AF_INET, ip, &gid[12]) != 1)
		return -EINVAL;
	ret = flood_ep(ctx, type, access, qp, mr, buf);
	return ret ? ret : qp_connect(*qp, type, 0x123, gid, 0, 0, VIRTIO_IB_MTU_1024,
				      type == VIRTIO_IB_QPT_RC ? 16 : 0, 0);
}

static int uc_flood(struct vrdma_ctx *ctx, const char *ip, unsigned int hold)
{
	struct vrdma_mr *mr;
	struct vrdma_qp *qp;
	void *buf;
	int ret;

	ret = peer_ep(ctx, VIRTIO_IB_QPT_UC, VIRTIO_IB_ACCESS_LOCAL_WRITE, ip, &qp, &mr, &buf);
	if (!ret)
		ret = flood_post(qp, VIRTIO_IB_WR_RDMA_WRITE, buf, mr, 0x10000, 0x4242);
	if (!ret)
		sleep(hold);
	return ret;
}

/* The responder's side of the budget: the VM of reader posts 64 RDMA
 * READs of 64 MiB (16 in flight) from a buffer of the VM of target, both
 * on this daemon: target's responder owes 4 GiB of responses. */
static int read_flood(struct vrdma_ctx *reader, const char *target_sock, unsigned int hold)
{
	struct vrdma_open_attr attr = { .mem_size = FLOOD_LEN + (8u << 20), .timeout_ms = 1000 };
	uint8_t rgid[16], tgid[16];
	struct vrdma_ctx *target;
	struct vrdma_mr *rmr, *tmr;
	struct vrdma_qp *rqp, *tqp;
	void *rbuf, *tbuf;
	int ret;

	ret = vrdma_open(target_sock, &attr, &target);
	if (ret)
		return ret;
	ret = flood_ep(reader, VIRTIO_IB_QPT_RC, VIRTIO_IB_ACCESS_LOCAL_WRITE, &rqp, &rmr, &rbuf);
	if (!ret)
		ret = flood_ep(target, VIRTIO_IB_QPT_RC, VIRTIO_IB_ACCESS_LOCAL_WRITE |
			       VIRTIO_IB_ACCESS_REMOTE_READ, &tqp, &tmr, &tbuf);
	if (!ret)
		ret = vrdma_query_gid(reader, 0, rgid);
	if (!ret)
		ret = vrdma_query_gid(target, 0, tgid);
	if (!ret)
		ret = qp_connect(rqp, VIRTIO_IB_QPT_RC, vrdma_qp_num(tqp), tgid, 0, 0,
				 VIRTIO_IB_MTU_1024, 16, 0);
	if (!ret)
		ret = qp_connect(tqp, VIRTIO_IB_QPT_RC, vrdma_qp_num(rqp), rgid, 0, 0,
				 VIRTIO_IB_MTU_1024, 16, 0);
	if (!ret)
		ret = flood_post(rqp, VIRTIO_IB_WR_RDMA_READ, rbuf, rmr, (uintptr_t)tbuf,
				 vrdma_mr_rkey(tmr));
	if (!ret)
		sleep(hold);
	vrdma_close(target);
	return ret;
}
/* A READ target for a peer that is no vrdmad (udp.py roce-read). */
static int read_target(struct vrdma_ctx *ctx, const char *ip, unsigned int hold)
{
	struct vrdma_mr *mr;
	struct vrdma_qp *qp;
	void *buf;
	int ret;

	ret = peer_ep(ctx, VIRTIO_IB_QPT_RC, VIRTIO_IB_ACCESS_LOCAL_WRITE |
		      VIRTIO_IB_ACCESS_REMOTE_READ, ip, &qp, &mr, &buf);
	if (ret)
		return ret;
	printf("target %u %u %llu\n", vrdma_qp_num(qp), vrdma_mr_rkey(mr),
	       (unsigned long long)(uintptr_t)buf);
	fflush(stdout);
	sleep(hold);
	return 0;
}

int main(int argc, char **argv)
{
	struct vrdma_open_attr attr = { .mem_size = 1u << 20, .timeout_ms = 1000 };
	unsigned int hold = argc > 3 ? (unsigned int)atoi(argv[3]) : 2;
	struct vrdma_ctx *ctx;
	struct vrdma_pd *pd;
	int ret;

	bool big = argc > 1 && (!strcmp(argv[1], "uc-flood") || !strcmp(argv[1], "read-flood") ||
				!strcmp(argv[1], "read-target"));

	if (argc < 3 || (big && argc < 4)) {
		fprintf(stderr, "usage: hostile call-pipe|unsealed|ok SOCKET [HOLD_SECONDS]\n"
				"       hostile uc-flood|read-target SOCKET IP [HOLD_SECONDS]\n"
				"       hostile read-flood SOCKET SOCKET2 [HOLD_SECONDS]\n");
		return 2;
	}
	if (big) {
		attr.mem_size = FLOOD_LEN + (8u << 20);
		hold = argc > 4 ? (unsigned int)atoi(argv[4]) : 2;
	}
	ret = vrdma_open(argv[2], &attr, &ctx);
	if (ret) {
		fprintf(stderr, "hostile: cannot open %s: %s\n", argv[2], strerror(-ret));
		return 2;
	}
	if (!strcmp(argv[1], "call-pipe"))
		ret = call_pipe(ctx, hold);
	else if (!strcmp(argv[1], "unsealed"))
		ret = unsealed(ctx);
	else if (!strcmp(argv[1], "ok"))
		ret = vrdma_alloc_pd(ctx, &pd);
	else if (!strcmp(argv[1], "uc-flood"))
		ret = uc_flood(ctx, argv[3], hold);
	else if (!strcmp(argv[1], "read-flood"))
		ret = read_flood(ctx, argv[3], hold);
	else if (!strcmp(argv[1], "read-target"))
		ret = read_target(ctx, argv[3], hold);
	else
		ret = -EINVAL;
	vrdma_close(ctx);
	if (ret < 0)
		fprintf(stderr, "hostile %s: %s\n", argv[1], strerror(-ret));
	return ret < 0 ? 2 : ret;
}
