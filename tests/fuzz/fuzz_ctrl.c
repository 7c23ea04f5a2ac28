// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for the control commands (vdev_ctrl_exec in
 * daemon/device/vdev_ctrl.c), `make fuzz`.
 *
 * Each input gets a fresh device (max_cq = max_qp = 4) connected through a
 * socketpair, after a valid vhost-user handshake (SET_OWNER, SET_FEATURES,
 * SET_PROTOCOL_FEATURES, SET_MEM_TABLE): 256 KiB of guest memory at guest
 * address 0x100000000, a memfd the fuzzer maps too. The device is freed at
 * the end of the input (LeakSanitizer sees what the commands leak).
 *
 * Input: a header, then records.
 *   byte 0: bits 0-5  chunk length in 64-byte units (0..4032 bytes): that
 *                     many bytes of the input that follow are copied to the
 *                     start of guest memory (the rest is zeroed), so the page
 *                     arrays of REG_USER_MR / MAP_MR_SG are fuzzer bytes
 *           bit 6     fix the chunk's le64s into guest addresses:
 *                     0x100000000 + (x mod 256 KiB)
 *           bit 7     ... and page-align them
 *   then records, as long as the input lasts:
 *     u8 command: bits 0-4 the command (0..31: unknown ones too),
 *                 bit 6 from this record on, the driver negotiated
 *                 VIRTIO_RDMA_F_RINGS (ABI v2's commands answer),
 *                 bit 7 fix the request: guest-address fields (pages,
 *                 doorbell pages) into guest memory, QPNs to the QP of
 *                 slot qpn % 8
 *     u8 length:  bit 7 set: the exact size of the command's request;
 *                 else bits 0-6 (0..127 bytes)
 *     the request: that many bytes (zero-padded where the input ends)
 *   Handles come out small (pdn, cqn, mrn from 0/1; QPNs by slot), so later
 *   records of the same input reuse what earlier ones created.
 *
 * After each record the device polls (no queue is set up: what runs is the
 * engine and ABI v2's CQ rings, whose guest-written words are the chunk's
 * bytes or zeroes).
 *
 * Checks: the status is a known one (<= VIRTIO_RDMA_ERR_UNSUPP); on OK the
 * response length is exactly the command's response size and at most the
 * capacity; the device stays live. FUZZ_VERBOSE=1 keeps the daemon's log
 * and prints each command's status.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_device.h"

#include "engine_int.h"
#include "vdev_test.h"

#define MAX_CHUNK	(63u * 64u)
#define RSP_CAP		256u

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	fixture_init();
	return 0;
}

/* The request and response sizes of each command (0: none / unknown). */
static size_t req_size(uint8_t cmd)
{
	switch (cmd) {
	case VIRTIO_CMD_QUERY_PORT: return sizeof(struct virtio_rdma_cmd_query_port);
	case VIRTIO_CMD_CREATE_CQ: return sizeof(struct virtio_rdma_cmd_create_cq);
	case VIRTIO_CMD_DESTROY_CQ: return sizeof(struct virtio_rdma_cmd_destroy_cq);
	case VIRTIO_CMD_CREATE_PD: return 0;
	case VIRTIO_CMD_DESTROY_PD: return sizeof(struct virtio_rdma_cmd_destroy_pd);
	case VIRTIO_CMD_GET_DMA_MR: return sizeof(struct virtio_rdma_cmd_get_dma_mr);
	case VIRTIO_CMD_CREATE_MR: return sizeof(struct virtio_rdma_cmd_create_mr);
	case VIRTIO_CMD_MAP_MR_SG: return sizeof(struct virtio_rdma_cmd_map_mr_sg);
	case VIRTIO_CMD_REG_USER_MR: return sizeof(struct virtio_rdma_cmd_reg_user_mr);
	case VIRTIO_CMD_DEREG_MR: return sizeof(struct virtio_rdma_cmd_dereg_mr);
	case VIRTIO_CMD_CREATE_QP: return sizeof(struct virtio_rdma_cmd_create_qp);
	case VIRTIO_CMD_MODIFY_QP: return sizeof(struct virtio_rdma_cmd_modify_qp);
	case VIRTIO_CMD_QUERY_QP: return sizeof(struct virtio_rdma_cmd_query_qp);
	case VIRTIO_CMD_DESTROY_QP: return sizeof(struct virtio_rdma_cmd_destroy_qp);
	case VIRTIO_CMD_QUERY_PKEY: return sizeof(struct virtio_rdma_cmd_query_pkey);
	case VIRTIO_CMD_ADD_GID: return sizeof(struct virtio_rdma_cmd_add_gid);
	case VIRTIO_CMD_DEL_GID: return sizeof(struct virtio_rdma_cmd_del_gid);
	case VIRTIO_CMD_REQ_NOTIFY_CQ: return sizeof(struct virtio_rdma_cmd_req_notify);
	case VIRTIO_CMD_CREATE_SRQ: return sizeof(struct virtio_rdma_cmd_create_srq);
	case VIRTIO_CMD_MODIFY_SRQ: return sizeof(struct virtio_rdma_cmd_modify_srq);
	case VIRTIO_CMD_QUERY_SRQ: return sizeof(struct virtio_rdma_cmd_query_srq);
	case VIRTIO_CMD_DESTROY_SRQ: return sizeof(struct virtio_rdma_cmd_destroy_srq);
	case VIRTIO_CMD_ALLOC_MW: return sizeof(struct virtio_rdma_cmd_alloc_mw);
	case VIRTIO_CMD_DEALLOC_MW: return sizeof(struct virtio_rdma_cmd_dealloc_mw);
	case VIRTIO_CMD_ADD_DB_PAGE: return sizeof(struct virtio_rdma_cmd_add_db_page);
	case VIRTIO_CMD_DEL_DB_PAGE: return sizeof(struct virtio_rdma_cmd_del_db_page);
	case VIRTIO_CMD_CREATE_CQ_RING: return sizeof(struct virtio_rdma_cmd_create_cq_ring);
	case VIRTIO_CMD_CREATE_QP_RING: return sizeof(struct virtio_rdma_cmd_create_qp_ring);
	case VIRTIO_CMD_CREATE_SRQ_RING: return sizeof(struct virtio_rdma_cmd_create_srq_ring);
	default: return 0;
	}
}

static size_t rsp_size(uint8_t cmd)
{
	switch (cmd) {
	case VIRTIO_CMD_QUERY_PORT: return sizeof(struct virtio_rdma_rsp_query_port);
	case VIRTIO_CMD_CREATE_CQ:
	case VIRTIO_CMD_CREATE_CQ_RING: return sizeof(struct virtio_rdma_rsp_create_cq);
	case VIRTIO_CMD_CREATE_PD: return sizeof(struct virtio_rdma_rsp_create_pd);
	case VIRTIO_CMD_GET_DMA_MR:
	case VIRTIO_CMD_CREATE_MR:
	case VIRTIO_CMD_REG_USER_MR: return sizeof(struct virtio_rdma_rsp_mr);
	case VIRTIO_CMD_MAP_MR_SG: return sizeof(struct virtio_rdma_rsp_map_mr_sg);
	case VIRTIO_CMD_CREATE_QP:
	case VIRTIO_CMD_CREATE_QP_RING: return sizeof(struct virtio_rdma_rsp_create_qp);
	case VIRTIO_CMD_QUERY_QP: return sizeof(struct virtio_rdma_rsp_query_qp);
	case VIRTIO_CMD_QUERY_PKEY: return sizeof(struct virtio_rdma_rsp_query_pkey);
	case VIRTIO_CMD_CREATE_SRQ:
	case VIRTIO_CMD_CREATE_SRQ_RING: return sizeof(struct virtio_rdma_rsp_create_srq);
	case VIRTIO_CMD_QUERY_SRQ: return sizeof(struct virtio_rdma_rsp_query_srq);
	case VIRTIO_CMD_ALLOC_MW: return sizeof(struct virtio_rdma_rsp_alloc_mw);
	case VIRTIO_CMD_ADD_DB_PAGE: return sizeof(struct virtio_rdma_rsp_add_db_page);
	default: return 0;
	}
}

static uint64_t fix_gpa(uint64_t x, bool align)
{
	x = GUEST_GPA + x % GUEST_SIZE;
	return align ? x & ~(uint64_t)(VIRTIO_RDMA_PAGE_SIZE - 1) : x;
}

#define FIELD(buf, type, f) ((buf) + offsetof(type, f))

static void fix_request(uint8_t cmd, uint8_t *req)
{
	const struct eng_qp *qp;
	uint64_t u64;
	uint32_t u32;

	switch (cmd) {
	case VIRTIO_CMD_MAP_MR_SG:
		memcpy(&u64, FIELD(req, struct virtio_rdma_cmd_map_mr_sg, pages), 8);
		u64 = fix_gpa(u64, false);
		memcpy(FIELD(req, struct virtio_rdma_cmd_map_mr_sg, pages), &u64, 8);
		break;
	case VIRTIO_CMD_REG_USER_MR:
		memcpy(&u64, FIELD(req, struct virtio_rdma_cmd_reg_user_mr, pages), 8);
		u64 = fix_gpa(u64, false);
		memcpy(FIELD(req, struct virtio_rdma_cmd_reg_user_mr, pages), &u64, 8);
		memcpy(&u32, FIELD(req, struct virtio_rdma_cmd_reg_user_mr, npages), 4);
		u32 %= 64;
		memcpy(FIELD(req, struct virtio_rdma_cmd_reg_user_mr, npages), &u32, 4);
		break;
	case VIRTIO_CMD_ADD_DB_PAGE:	/* a page of guest memory, aligned */
		memcpy(&u64, req, 8);
		u64 = fix_gpa(u64, true);
		memcpy(req, &u64, 8);
		break;
	case VIRTIO_CMD_CREATE_CQ_RING:	/* the page list in guest memory */
		memcpy(&u64, FIELD(req, struct virtio_rdma_cmd_create_cq_ring, pages), 8);
		u64 = fix_gpa(u64, false);
		memcpy(FIELD(req, struct virtio_rdma_cmd_create_cq_ring, pages), &u64, 8);
		break;
	case VIRTIO_CMD_CREATE_QP_RING:	/* both page lists in guest memory */
		memcpy(&u64, FIELD(req, struct virtio_rdma_cmd_create_qp_ring, sq.pages), 8);
		u64 = fix_gpa(u64, false);
		memcpy(FIELD(req, struct virtio_rdma_cmd_create_qp_ring, sq.pages), &u64, 8);
		memcpy(&u64, FIELD(req, struct virtio_rdma_cmd_create_qp_ring, rq.pages), 8);
		u64 = fix_gpa(u64, false);
		memcpy(FIELD(req, struct virtio_rdma_cmd_create_qp_ring, rq.pages), &u64, 8);
		break;
	case VIRTIO_CMD_CREATE_SRQ_RING:	/* its page list in guest memory */
		memcpy(&u64, FIELD(req, struct virtio_rdma_cmd_create_srq_ring, ring.pages), 8);
		u64 = fix_gpa(u64, false);
		memcpy(FIELD(req, struct virtio_rdma_cmd_create_srq_ring, ring.pages), &u64, 8);
		break;
	case VIRTIO_CMD_MODIFY_QP:
	case VIRTIO_CMD_QUERY_QP:
	case VIRTIO_CMD_DESTROY_QP:
		/* qpn is the first field of all three: the QP of slot u32 % 8
		 * (QPNs are random), else a number no QP has */
		memcpy(&u32, req, 4);
		qp = eng_table_get(&v.eng->qps, u32 % 8);
		if (qp == ENG_SRQ_SLOT)	/* an SRQ's slot holds no QP */
			qp = NULL;
		u32 = qp ? eng_qp_num(qp) : VIRTIO_RDMA_FIRST_QPN - 1;
		memcpy(req, &u32, 4);
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t req[1024], rsp[RSP_CAP];
	uint64_t next_timer;
	size_t chunk, i;
	uint8_t flags;

	if (size < 1)
		return 0;
	flags = data[0];
	data++, size--;

	CHECK(vdev_init(&v, &vmcfg, 0, &port, &host, NULL) == 0);
	v.vu.fd = sp[0];
	if (!handshake()) {
		fprintf(stderr, "handshake failed: %s\n", v.vu.last_error);
		abort();
	}

	/* Guest memory: the chunk, zeroes after it (what earlier inputs left). */
	chunk = (flags & 0x3f) * 64u;
	if (chunk > size)
		chunk = size;
	memcpy(guest, data, chunk);
	memset(guest + chunk, 0, MAX_CHUNK + 64 - chunk);
	if (flags & 0x40) {
		for (i = 0; i + 8 <= chunk; i += 8) {
			uint64_t x;

			memcpy(&x, guest + i, 8);
			x = fix_gpa(x, flags & 0x80);
			memcpy(guest + i, &x, 8);
		}
	}
	data += chunk, size -= chunk;

	while (size >= 2) {
		uint8_t cmd = data[0] & 0x1f, st;
		bool fix = data[0] & 0x80;

		if ((data[0] & 0x40) && !(v.vu.features & (1ull << VIRTIO_RDMA_F_RINGS))) {
			/* as a v2 driver: the device resets, sized for rings */
			uint64_t u = VU_FEATURES;

			CHECK(send_msg(VHOST_USER_SET_FEATURES, &u, sizeof(u), NULL, 0) == 0);
		}
		size_t len = data[1] & 0x80 ? req_size(cmd) : data[1] & 0x7fu;
		size_t take = len < size - 2 ? len : size - 2;
		uint32_t rsp_len = 0xdeadbeef;

		memset(req, 0, sizeof(req));
		memcpy(req, data + 2, take);
		data += 2 + take, size -= 2 + take;
		if (fix && len >= req_size(cmd))
			fix_request(cmd, req);

		memset(rsp, 0xa5, sizeof(rsp));
		st = vdev_ctrl_exec(&v, cmd, req, len, rsp, sizeof(rsp), &rsp_len);
		if (verbose)
			fprintf(stderr, "cmd %u len %zu: status %u rsp_len %u\n", cmd, len, st,
				st == VIRTIO_RDMA_OK ? rsp_len : 0);
		CHECK(st <= VIRTIO_RDMA_ERR_UNSUPP);
		if (st == VIRTIO_RDMA_OK) {
			if (rsp_len != rsp_size(cmd)) {
				fprintf(stderr, "cmd %u: rsp_len %u, expected %zu\n", cmd, rsp_len,
					rsp_size(cmd));
				__builtin_trap();
			}
			CHECK(rsp_len <= sizeof(rsp));
		}
		CHECK(vdev_live(&v));
		/* CQ rings read the guest's words (fuzzer bytes) at every poll */
		vdev_poll(&v, &next_timer);
		CHECK(vdev_live(&v));
	}

	vdev_free(&v);
	drain();
	return 0;
}
