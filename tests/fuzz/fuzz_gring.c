// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for the rings and doorbell pages of ABI v2
 * (daemon/vhost/gring.c, docs/virtio-rdma.md section 8), `make fuzz`.
 *
 * Guest memory is two regions with a hole between them, each over a
 * malloc'ed buffer of exactly its size (ASan sees any access outside).
 * Input: le32 entries, le32 stride, u8 npages, then npages le64 page
 * addresses (each taken modulo a span a little wider than the memory, so
 * pages fall inside, across the hole and outside), then operations of
 * 8 bytes each: u8 op, u8 pad, le16 a, le32 b:
 *   0 load header word a      1 store header word a, value b
 *   2 read a bytes of slot b  3 write a bytes of slot b
 *   4 take doorbell word a of page b   5 need_wake of page b
 *   6 shrink the second region by a pages (a new memory table), 7 restore it
 * Checks: init accepts exactly the geometries gring_pages_needed allows with
 * that many pages, all 4 KiB aligned and in memory; a slot access succeeds
 * exactly when it fits a slot whose page is in memory, and then lands where
 * the layout says (worked out apart); other accesses succeed only where
 * they may, else -EFAULT.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gring.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)
#define R0_GPA	0x10000ull
#define R0_PAGES 8u
#define R1_GPA	0x40000ull	/* after a hole */
#define R1_PAGES 8u
#define SPAN	0x60000ull

static uint32_t le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

/* Where slot idx is by the layout of section 8, worked out here apart from
 * gring.c: NULL if len is more than a slot or its page is not in memory. */
static uint8_t *slot_host(const struct gring *r, const struct guest_mem *gm, uint32_t idx,
			  uint32_t len)
{
	uint64_t hdr = r->stride > 128 ? r->stride : 128;
	uint64_t off = hdr + (uint64_t)(idx % r->entries) * r->stride;

	if (len > r->stride)
		return NULL;
	return guest_gpa(gm, r->pages[off / GRING_PAGE] + off % GRING_PAGE, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t slotbuf[GRING_PAGE + 1];
	struct guest_mem gm = { .n = 2 };
	uint64_t pages[256], r1_size = (uint64_t)R1_PAGES * GRING_PAGE;
	uint32_t entries, stride, npages, i, v, need, len;
	uint8_t *where;
	struct gring r;
	char why[200];
	bool all_in = true;
	int ret;

	if (size < 9)
		return 0;
	entries = le32(data);
	stride = le32(data + 4);
	npages = data[8];
	data += 9;
	size -= 9;
	if (size < 8ull * npages)
		return 0;
	for (i = 0; i < npages; i++) {
		uint64_t a;

		memcpy(&a, data + 8 * i, 8);
		pages[i] = le64toh(a) % SPAN;
	}
	data += 8 * npages;
	size -= 8 * npages;

	gm.r[0] = (struct guest_region){ .gpa = R0_GPA, .size = (uint64_t)R0_PAGES * GRING_PAGE,
					 .fd = -1 };
	gm.r[1] = (struct guest_region){ .gpa = R1_GPA, .size = r1_size, .fd = -1 };
	gm.r[0].host = malloc(gm.r[0].size);
	gm.r[1].host = malloc(gm.r[1].size);
	CHECK(gm.r[0].host && gm.r[1].host);
	memset(gm.r[0].host, 0xa5, gm.r[0].size);
	memset(gm.r[1].host, 0x5a, gm.r[1].size);

	need = gring_pages_needed(entries, stride);
	for (i = 0; i < npages; i++)
		all_in &= !(pages[i] % GRING_PAGE) && guest_gpa(&gm, pages[i], GRING_PAGE);
	ret = gring_init(&r, &gm, pages, npages, entries, stride, why, sizeof(why));
	CHECK(!ret == (need && need == npages && all_in));
	if (ret) {
		CHECK(why[0]);
		goto free_mem;
	}
	for (; size >= 8; data += 8, size -= 8) {
		uint16_t a = (uint16_t)(data[2] | data[3] << 8);
		uint32_t b = le32(data + 4);
		uint64_t bits;

		switch (data[0] % 8) {
		case 0:
			ret = gring_load(&r, &gm, a, &v);
			CHECK(ret == 0 || ret == -EFAULT);
			CHECK(ret || (a < GRING_DEVICE_HALF && !(a % 4)));
			break;
		case 1:
			ret = gring_store(&r, &gm, a, b);
			CHECK(ret == 0 || ret == -EFAULT);
			CHECK(ret || (a >= GRING_DEVICE_HALF && a < GRING_HDR_MIN && !(a % 4)));
			break;
		case 2:
		case 3:
			len = a % (GRING_PAGE + 2);
			if (data[0] % 8 == 2) {
				ret = gring_read(&r, &gm, b, slotbuf, len);
			} else {
				memset(slotbuf, data[1], sizeof(slotbuf));
				ret = gring_write(&r, &gm, b, slotbuf, len);
			}
			CHECK(ret == 0 || ret == -EFAULT);
			where = slot_host(&r, &gm, b, len);
			CHECK(!ret == !!where);
			CHECK(ret || !memcmp(slotbuf, where, len));
			break;
		case 4:
			ret = gring_db_take(&gm, b % SPAN, a, &bits);
			CHECK(ret == 0 || ret == -EFAULT);
			CHECK(ret || (a < GRING_DB_WORDS && gring_db_ok(&gm, b % SPAN)));
			break;
		case 5:
			ret = gring_db_need_wake(&gm, b % SPAN, data[1]);
			CHECK(ret == 0 || ret == -EFAULT);
			break;
		case 6:		/* a smaller table: pages past it must fail */
			gm.r[1].size = r1_size - (uint64_t)(a % (R1_PAGES + 1)) * GRING_PAGE;
			break;
		case 7:
			gm.r[1].size = r1_size;
			break;
		}
	}
	gring_free(&r);
free_mem:
	free(gm.r[0].host);
	free(gm.r[1].host);
	return 0;
}
