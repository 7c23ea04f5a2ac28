// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for the vhost-user back-end and the rings behind it
 * (vu_dispatch in daemon/vhost/vhost_backend.c, then vdev_poll: daemon/device/vdev_poll.c,
 * daemon/vhost/virtq.c, daemon/vhost/guest_mem.c), `make fuzz`.
 *
 * Each input gets a fresh device (max_cq = max_qp = 4: 13 queues) whose
 * connection is one end of a socketpair (its replies are drained); guest
 * memory is a 256 KiB memfd the fuzzer maps too, zeroed for every input.
 * The device is freed at the end of the input, and the lowest free fd must
 * then be what it was at start (no eventfd or memfd leaked), LeakSanitizer
 * does the rest.
 *
 * Input: a header, then records.
 *   byte 0: bit 0  start with a valid handshake: SET_OWNER, SET_FEATURES and
 *                  SET_PROTOCOL_FEATURES with all offered bits, SET_MEM_TABLE
 *                  with one region: guest address 0x100000000, 256 KiB
 *           bit 1  copy the next 4 KiB of input (or what is left) into the
 *                  start of guest memory, so the rings are fuzzer bytes
 *           bit 2  set queue 0 up properly (after the handshake): 8 entries,
 *                  rings in guest memory (see below), base 0, a kick
 *                  eventfd, enabled; so the control queue gets walked
 *           bit 3  the same for all 13 queues (CQs, SQs, RQs)
 *           bit 4  fix the descriptors of those rings: addr into the first
 *                  4 KiB of guest memory, len < 512, so they point at
 *                  fuzzer bytes
 *   Queue q's rings (8 entries) sit at guest offset q * 224: the descriptor
 *   table (128 bytes), the avail ring at +128, the used ring at +152; the
 *   rest of the first 4 KiB (from 2912) is room for buffers.
 *   then records, as long as the input lasts:
 *     u8 request: bits 0-5 the request (0..63: unknown ones too),
 *                 bit 7 raw: no address fix-ups (below)
 *     u8 size:    the payload size (255: 264, a full 8-region memory table)
 *     u8 hints:   bit 0 pass fds: a fresh eventfd, or for SET_MEM_TABLE a
 *                 dup of the memfd per region (up to 8)
 *                 bit 1 NEED_REPLY; bit 2 a wrong version in the header
 *                 bit 3 with bit 0: fds of the wrong kind, as a hostile
 *                 front end passes them: a blocking pipe for the rings, a
 *                 memfd not sealed against shrinking for the memory
 *     the payload: size bytes (zero-padded where the input ends)
 *   Fix-ups (unless raw): SET_VRING_ADDR's three ring addresses become our
 *   mapping's base + (address mod 256 KiB), so mostly valid; SET_MEM_TABLE's
 *   regions: userspace_addr the base + a page offset, guest_phys_addr
 *   0x100000000 + a page offset, memory_size up to 256 KiB + 8 KiB and
 *   mmap_offset up to the same, page-aligned (so past the memfd's end too).
 *   After every message vdev_poll walks the rings; then every chain taken
 *   from the control queue or a send/receive queue must have been answered
 *   in its used ring (unless the device broke). A message the daemon
 *   would drop the connection for (or a broken device) disconnects as
 *   vm_server.c does; the next message then comes on a new connection, at
 *   most twice per input (each reset walks every MR and PD slot: slow).
 *   FUZZ_VERBOSE=1 keeps the daemon's log and prints the device's counters
 *   after each input (to check that seeds reach the rings).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_device.h"

#define COPY_SIZE	4096u
#define N_VQS		VIRTIO_RDMA_NUM_VQS(4, 4)
#define RING_NUM	8u
#define RING_STRIDE	224u
#define RING_AVAIL	128u
#define RING_USED	152u
#define MAX_DROPS	2	/* connections dropped per input, then stop */

static int lowest_free_fd;

/* The write end of a pipe, blocking: a ring's fd a hostile front end gives. */
static int blocking_pipe(void)
{
	int p[2];

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	close(p[0]);
	return p[1];
}

/* Guest memory that could shrink under the daemon (no F_SEAL_SHRINK). */
static int unsealed_memfd(void)
{
	int fd = memfd_create("fuzz-unsealed", MFD_CLOEXEC);

	CHECK(fd >= 0 && ftruncate(fd, GUEST_SIZE) == 0);
	return fd;
}

static int next_free_fd(void)
{
	int fd = dup(0);

	CHECK(fd >= 0);
	close(fd);
	return fd;
}

/* As vm_server.c's drop_connection, then a new connection. */
static void reconnect(void)
{
	vu_dev_disconnect(&v.vu);
	v.vu.fd = -1;
	drain();
	v.vu.fd = sp[0];
}

static bool setup_queue(unsigned int q)
{
	struct vhost_vring_state st;
	struct vhost_vring_addr a;
	uint64_t base = (uint64_t)(uintptr_t)guest + q * RING_STRIDE;
	uint64_t u;
	int fd;

	st.index = q;
	st.num = RING_NUM;
	if (send_msg(VHOST_USER_SET_VRING_NUM, &st, sizeof(st), NULL, 0))
		return false;
	memset(&a, 0, sizeof(a));
	a.index = q;
	a.desc_user_addr = base;
	a.avail_user_addr = base + RING_AVAIL;
	a.used_user_addr = base + RING_USED;
	if (send_msg(VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0))
		return false;
	st.num = 0;
	if (send_msg(VHOST_USER_SET_VRING_BASE, &st, sizeof(st), NULL, 0))
		return false;
	u = q;
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(fd >= 0);
	if (send_msg(VHOST_USER_SET_VRING_KICK, &u, sizeof(u), &fd, 1))
		return false;
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(fd >= 0);
	if (send_msg(VHOST_USER_SET_VRING_CALL, &u, sizeof(u), &fd, 1))
		return false;
	st.num = 1;
	return send_msg(VHOST_USER_SET_VRING_ENABLE, &st, sizeof(st), NULL, 0) == 0;
}

static void fix_descs(unsigned int q)
{
	unsigned int i;

	for (i = 0; i < RING_NUM; i++) {
		struct vring_desc d;
		uint8_t *p = guest + q * RING_STRIDE + i * sizeof(d);

		memcpy(&d, p, sizeof(d));
		d.addr = GUEST_GPA + d.addr % COPY_SIZE;
		d.len %= 512;
		memcpy(p, &d, sizeof(d));
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	fixture_init();
	lowest_free_fd = next_free_fd();
	return 0;
}

/* Walk the rings; then every chain the device took from the control queue
 * or a send/receive queue has been answered in its used ring (poll_ctrl and
 * poll_wq push each chain they pop, or put it back; CQ buffers are kept). */
static void poll(void)
{
	uint64_t next_timer;
	unsigned int q;

	vdev_poll(&v, &next_timer);
	if (!vdev_live(&v))
		return;
	for (q = 0; q < N_VQS; q++) {
		const struct virtq *vq = &v.vu.vqs[q];

		if (q >= VIRTIO_RDMA_CQ_VQ(0) && q < VIRTIO_RDMA_SQ_VQ(vmcfg.max_cq, 0))
			continue;
		if (vq->last_avail != vq->used_idx) {
			fprintf(stderr, "queue %u: took %u chains, answered %u\n", q,
				vq->last_avail, vq->used_idx);
			__builtin_trap();
		}
	}
}

static uint64_t page_off(uint64_t x, uint64_t range)
{
	return (x % range) & ~(uint64_t)4095;
}

static void fix_payload(struct vhost_user_msg *m)
{
	union vhost_user_payload *p = &m->payload;
	uint64_t base = (uint64_t)(uintptr_t)guest;
	unsigned int i;

	switch (m->hdr.request) {
	case VHOST_USER_SET_VRING_ADDR:
		p->addr.desc_user_addr = base + p->addr.desc_user_addr % GUEST_SIZE;
		p->addr.used_user_addr = base + p->addr.used_user_addr % GUEST_SIZE;
		p->addr.avail_user_addr = base + p->addr.avail_user_addr % GUEST_SIZE;
		break;
	case VHOST_USER_SET_MEM_TABLE:
		for (i = 0; i < VHOST_USER_MEM_REGIONS; i++) {
			struct vhost_user_mem_region *r = &p->memory.regions[i];

			r->userspace_addr = base + page_off(r->userspace_addr, GUEST_SIZE);
			r->guest_phys_addr = GUEST_GPA + page_off(r->guest_phys_addr, GUEST_SIZE);
			r->memory_size %= GUEST_SIZE + 8192 + 1;
			r->mmap_offset = page_off(r->mmap_offset, GUEST_SIZE + 8192 + 1);
		}
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vhost_user_msg m;
	uint8_t flags;
	bool ok = false;
	unsigned int q, drops = 0;

	if (size < 1)
		return 0;
	flags = data[0];
	data++, size--;

	memset(guest, 0, GUEST_SIZE);
	CHECK(vdev_init(&v, &vmcfg, 0, &port, &host, NULL) == 0);
	v.vu.fd = sp[0];

	if (flags & 2) {
		size_t n = size < COPY_SIZE ? size : COPY_SIZE;

		memcpy(guest, data, n);
		data += n, size -= n;
	}
	if (flags & 16)
		for (q = 0; q < N_VQS; q++)
			fix_descs(q);
	if (flags & 1) {
		ok = handshake();
		CHECK(ok);
	}
	if (ok && (flags & (4 | 8))) {
		for (q = 0; q < ((flags & 8) ? N_VQS : 1); q++)
			CHECK(setup_queue(q));
	}
	poll();
	if (v.broken) {
		drops++;
		reconnect();
	}

	while (size >= 3) {
		uint8_t req = data[0], sz = data[1], hints = data[2];
		uint32_t psize = sz == 255 ? sizeof(struct vhost_user_memory) : sz;
		size_t take;
		int fds[VHOST_USER_MAX_FDS];
		unsigned int nfds = 0, i;
		int ret;

		data += 3, size -= 3;
		memset(&m, 0, sizeof(m));
		m.hdr.request = req & 0x3f;
		m.hdr.flags = (hints & 4) ? 0 : VHOST_USER_VERSION;
		if (hints & 2)
			m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
		m.hdr.size = psize;
		take = psize < size ? psize : size;
		memcpy(&m.payload, data, take);
		data += take, size -= take;
		if (!(req & 0x80))
			fix_payload(&m);

		if (hints & 1) {
			if (m.hdr.request == VHOST_USER_SET_MEM_TABLE) {
				nfds = m.payload.memory.nregions;
				if (nfds > VHOST_USER_MAX_FDS)
					nfds = VHOST_USER_MAX_FDS;
				if (!nfds)
					nfds = 1;
				for (i = 0; i < nfds; i++) {
					fds[i] = hints & 8 ? unsealed_memfd() : dup(memfd);
					CHECK(fds[i] >= 0);
				}
			} else {
				fds[0] = hints & 8 ? blocking_pipe() :
					 eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
				CHECK(fds[0] >= 0);
				nfds = 1;
			}
		}

		ret = vu_dispatch(&v.vu, &m, fds, nfds);
		if (ret >= 0) {
			poll();
			/* As a worker going to sleep and waking up. */
			if (vdev_want_kicks(&v, true))
				poll();
			vdev_want_kicks(&v, false);
		}
		drain();
		if (ret < 0 || v.broken) {
			/* A reset walks every handle slot: a few per input only. */
			if (++drops > MAX_DROPS)
				break;
			reconnect();
		}
	}

	if (verbose)
		fprintf(stderr, "ctrl %" PRIu64 " (errors %" PRIu64 "), send %" PRIu64 ", recv %"
			PRIu64 ", refused %" PRIu64 ", cqes %" PRIu64 ", events %" PRIu64
			", broken %" PRIu64 ", bad messages %" PRIu64 "\n",
			v.stats.ctrl_cmds, v.stats.ctrl_errors, v.stats.send_wqes,
			v.stats.recv_wqes, v.stats.refused_wqes, v.stats.cqes, v.stats.events,
			v.stats.broken, v.vu.bad_messages);
	vdev_free(&v);
	drain();
	if (next_free_fd() != lowest_free_fd) {
		char path[64], target[256];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", lowest_free_fd);
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = 0;
		/* Only ours can leak here: the fuzzer's own fds (llvm-symbolizer's
		 * pipes, when it prints NEW_FUNC) move the baseline. */
		if (strstr(target, "eventfd") || strstr(target, "fuzz-guest")) {
			fprintf(stderr, "fd leak: fd %d is %s\n", lowest_free_fd, target);
			__builtin_trap();
		}
		lowest_free_fd = next_free_fd();
	}
	return 0;
}
