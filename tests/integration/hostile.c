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
 * Prints "refused: ..." and exits 0 when the daemon refuses the fd (its
 * REPLY_ACK failure or the connection dropped); prints "taken" and exits 1
 * when it takes it, having then carried the attack out. "ok" exits 0 when
 * the device works.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libvrdma/internal.h"

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

int main(int argc, char **argv)
{
	struct vrdma_open_attr attr = { .mem_size = 1u << 20, .timeout_ms = 1000 };
	unsigned int hold = argc > 3 ? (unsigned int)atoi(argv[3]) : 2;
	struct vrdma_ctx *ctx;
	struct vrdma_pd *pd;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: hostile call-pipe|unsealed|ok SOCKET [HOLD_SECONDS]\n");
		return 2;
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
	else
		ret = -EINVAL;
	vrdma_close(ctx);
	if (ret < 0)
		fprintf(stderr, "hostile %s: %s\n", argv[1], strerror(-ret));
	return ret < 0 ? 2 : ret;
}
