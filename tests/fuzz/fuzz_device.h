/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The device fixture shared by fuzz_ctrl.c and fuzz_vhost.c: one vdev
 * (max_cq = max_qp = 4, max_mr = 16, max_mr_pages = 64, GID
 * ::ffff:10.0.0.1) whose connection is a socketpair, 256 KiB of guest
 * memory in a memfd the fuzzer maps too (guest address 0x100000000), host
 * hooks that send nothing, and the vhost-user handshake. Included once per fuzz target, so its statics are that target's.
 */
#ifndef VRDMA_FUZZ_DEVICE_H
#define VRDMA_FUZZ_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "vdev.h"
#include "vhost_backend.h"
#include "vhost_user.h"
#include "virtio_rdma.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

#define GUEST_GPA	0x100000000ull
#ifndef GUEST_SIZE			/* a target may ask for more */
#define GUEST_SIZE	(256u << 10)
#endif

static int memfd = -1;
static uint8_t *guest;			/* the fuzzer's view of guest memory */
static int sp[2] = { -1, -1 };		/* sp[0]: the device's end */
static struct vrdma_vm_config vmcfg;
static struct vdev_port port = { .mtu = 1500, .mac = { 2, 0, 0, 0, 0, 1 } };
static uint64_t clock_ns;
static struct vdev v;
static bool verbose;

/* A target that transmits defines FUZZ_OWN_HOST and its own hooks. */
#ifndef FUZZ_OWN_HOST
static uint64_t h_now(void *ctx)
{
	(void)ctx;
	return clock_ns += 1000;
}

static unsigned int h_tx_alloc(void *ctx, const uint8_t dgid[16], uint32_t len,
			       struct roce_frag *frags, unsigned int max)
{
	(void)ctx; (void)dgid; (void)len; (void)frags; (void)max;
	return 0;
}

static void h_tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	(void)ctx; (void)frags; (void)n; (void)len;
}

static const struct eng_tx host = { h_now, h_tx_alloc, h_tx_send, NULL };
#endif

/* Replies the device wrote to its end of the socketpair. */
static void drain(void)
{
	char buf[4096];

	while (recv(sp[1], buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

static int send_msg(uint32_t req, const void *payload, uint32_t size, int *fds, unsigned int nfds)
{
	struct vhost_user_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.request = req;
	m.hdr.flags = VHOST_USER_VERSION;
	m.hdr.size = size;
	if (size)
		memcpy(&m.payload, payload, size);
	return vu_dispatch(&v.vu, &m, fds, nfds);
}

/* The memory table: the first size bytes of guest memory in one region. */
static bool set_mem_table_size(uint64_t size)
{
	struct vhost_user_memory mem;
	int fd;

	memset(&mem, 0, sizeof(mem));
	mem.nregions = 1;
	mem.regions[0].guest_phys_addr = GUEST_GPA;
	mem.regions[0].memory_size = size;
	mem.regions[0].userspace_addr = (uint64_t)(uintptr_t)guest;
	fd = dup(memfd);
	CHECK(fd >= 0);
	return send_msg(VHOST_USER_SET_MEM_TABLE, &mem,
			offsetof(struct vhost_user_memory, regions) + sizeof(mem.regions[0]),
			&fd, 1) == 0;
}

/* All of guest memory. */
static bool set_mem_table(void)
{
	return set_mem_table_size(GUEST_SIZE);
}

/* SET_OWNER, the offered features and protocol features, and the memory
 * table; false if the device refused any of it. */
static bool handshake(void)
{
	uint64_t u;

	if (send_msg(VHOST_USER_SET_OWNER, NULL, 0, NULL, 0) < 0)
		return false;
	u = VU_FEATURES & ~(1ull << VIRTIO_RDMA_F_RINGS);	/* v1; ABI v2 where asked */
	if (send_msg(VHOST_USER_SET_FEATURES, &u, sizeof(u), NULL, 0) < 0)
		return false;
	u = VU_PROTOCOL_FEATURES;
	if (send_msg(VHOST_USER_SET_PROTOCOL_FEATURES, &u, sizeof(u), NULL, 0) < 0)
		return false;
	return set_mem_table();
}

/* For LLVMFuzzerInitialize: the memory, the socketpair and the VM's config. */
static void fixture_init(void)
{
	verbose = getenv("FUZZ_VERBOSE");
	if (!verbose)
		log_set_level(VRDMA_LOG_ERROR - 1);
	memfd = vhost_user_memfd("fuzz-guest", GUEST_SIZE);
	CHECK(memfd >= 0);
	guest = mmap(NULL, GUEST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	CHECK(guest != MAP_FAILED);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) == 0);
	snprintf(vmcfg.name, sizeof(vmcfg.name), "fz");
	vmcfg.n_gids = 1;
	vmcfg.gids[0].raw[10] = 0xff;
	vmcfg.gids[0].raw[11] = 0xff;
	vmcfg.gids[0].raw[12] = 10;
	vmcfg.gids[0].raw[15] = 1;
	vmcfg.max_cq = 4;
	vmcfg.max_qp = 4;
	vmcfg.ring_max_cq = 8;		/* past v1's, so ABI v2 grows the tables */
	vmcfg.ring_max_qp = 8;
	/* small, so inputs reach both limits */
	vmcfg.max_mr = 16;
	vmcfg.max_mr_pages = 64;
	vmcfg.socket_mode = 0600;
}

#endif
