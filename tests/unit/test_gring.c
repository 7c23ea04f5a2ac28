// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests for daemon/vhost/gring.c, the rings and doorbell pages of ABI
 * v2 (docs/virtio-rdma.md section 8): geometry and page lists refused as
 * they must be, slots and header words where the layout puts them across
 * scattered pages, the index checks at their edges (wrap-around included),
 * accesses that fail once a page leaves guest memory, doorbell words taken
 * whole. Guest memory is one region over a buffer of ours. */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gring.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MEM_GPA		0x100000ull
#define MEM_PAGES	64u

static struct guest_mem gm;
static uint8_t *mem;

static int setup(void **state)
{
	(void)state;
	mem = aligned_alloc(GRING_PAGE, (size_t)MEM_PAGES * GRING_PAGE);
	assert_non_null(mem);
	memset(mem, 0, (size_t)MEM_PAGES * GRING_PAGE);
	memset(&gm, 0, sizeof(gm));
	gm.n = 1;
	gm.r[0].gpa = MEM_GPA;
	gm.r[0].size = (uint64_t)MEM_PAGES * GRING_PAGE;
	gm.r[0].host = mem;
	gm.r[0].fd = -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(mem);
	return 0;
}

static uint64_t page_gpa(unsigned int i)
{
	return MEM_GPA + (uint64_t)i * GRING_PAGE;
}

/* [1] geometry and page lists: each refused with its errno and a reason */
static void test_init_refused(void **state)
{
	static const struct {
		uint32_t entries, stride, npages;
		int64_t first;		/* pages[0]; -1: page 0 of guest memory */
		int want;
	} t[] = {
		{ 0, 64, 1, -1, -EINVAL },		/* no entries */
		{ 3, 64, 1, -1, -EINVAL },		/* not a power of two */
		{ 65536, 64, 1025, -1, -EINVAL },	/* too many entries */
		{ 16, 32, 1, -1, -EINVAL },		/* stride too small */
		{ 16, 96, 1, -1, -EINVAL },		/* stride not a power of two */
		{ 16, 8192, 33, -1, -EINVAL },		/* stride over a page */
		{ 16, 64, 2, -1, -EINVAL },		/* 1 page needed, 2 given */
		{ 64, 64, 1, -1, -EINVAL },		/* 2 needed, 1 given */
		{ 16, 64, 1, (int64_t)MEM_GPA + 8, -EINVAL },	/* unaligned */
		{ 16, 64, 1, (int64_t)MEM_GPA - GRING_PAGE, -EFAULT },	/* below memory */
		{ 16, 64, 1, (int64_t)MEM_GPA + MEM_PAGES * GRING_PAGE, -EFAULT }, /* above */
		{ 16, 64, 1, -1, 0 },			/* 128 + 16 x 64: one page */
		{ 32768, 64, 513, -1, 0 },		/* 128 + 2 MiB */
		{ 4, 4096, 5, -1, 0 },			/* a header page, 4 slot pages */
	};
	uint64_t *pages = calloc(1025, sizeof(*pages));
	struct gring r;
	char why[160];
	unsigned int i, p;
	int got;

	(void)state;
	assert_non_null(pages);
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		/* the same pages again where a ring needs more (allowed: they
		 * are the owner's) */
		for (p = 0; p < 1025; p++)
			pages[p] = page_gpa(p % MEM_PAGES);
		if (t[i].first >= 0)
			pages[0] = (uint64_t)t[i].first;
		why[0] = 0;
		got = gring_init(&r, &gm, pages, t[i].npages, t[i].entries, t[i].stride, why,
				 sizeof(why));
		if (got != t[i].want)
			fail_msg("case %u: %d, not %d (%s)", i + 1, got, t[i].want, why);
		if (!got)
			gring_free(&r);
		if (t[i].want)
			assert_true(why[0] != 0);
	}
	free(pages);
}

/* [2] slots and header words land where the layout says, through a page
 * list in scattered order; slot indexes wrap modulo entries */
static void test_layout(void **state)
{
	/* 8 entries of 1024 bytes after a 1024-byte header: 3 pages */
	const uint64_t pages[] = { page_gpa(9), page_gpa(2), page_gpa(40) };
	uint8_t buf[1024], back[1024];
	struct gring r;
	char why[160];
	uint32_t v, i;

	(void)state;
	assert_int_equal(gring_pages_needed(8, 1024), 3);
	assert_int_equal(gring_init(&r, &gm, pages, 3, 8, 1024, why, sizeof(why)), 0);
	assert_int_equal(r.hdr, 1024);
	/* the guest's prod at byte 0 of page 9, little-endian */
	*(uint32_t *)(mem + 9 * GRING_PAGE + GRING_PROD) = htole32(0x01020304);
	assert_int_equal(gring_load(&r, &gm, GRING_PROD, &v), 0);
	assert_int_equal(v, 0x01020304);
	assert_int_equal(gring_store(&r, &gm, GRING_TAKEN, 7), 0);
	assert_int_equal(le32toh(*(uint32_t *)(mem + 9 * GRING_PAGE + GRING_TAKEN)), 7);
	/* each half is its writer's: loads of the device's half, stores to the
	 * guest's, unaligned or past the header are refused */
	assert_int_equal(gring_load(&r, &gm, GRING_TAKEN, &v), -EFAULT);
	assert_int_equal(gring_store(&r, &gm, GRING_PROD, 1), -EFAULT);
	assert_int_equal(gring_load(&r, &gm, 2, &v), -EFAULT);
	assert_int_equal(gring_store(&r, &gm, GRING_HDR_MIN, 1), -EFAULT);
	/* slot i is at hdr + i * stride: slots 0-2 on page 9, 3-6 on page 2,
	 * 7 on page 40 */
	for (i = 0; i < 8; i++) {
		uint32_t off = 1024 + i * 1024;
		uint8_t *host = mem + (pages[off / GRING_PAGE] - MEM_GPA) + off % GRING_PAGE;

		memset(buf, (int)(0x10 + i), sizeof(buf));
		assert_int_equal(gring_write(&r, &gm, i + 8 * 3, buf, sizeof(buf)), 0);
		assert_memory_equal(host, buf, sizeof(buf));
		host[5] = 0xee;
		assert_int_equal(gring_read(&r, &gm, i, back, 16), 0);
		assert_int_equal(back[5], 0xee);
		assert_int_equal(back[6], 0x10 + i);
	}
	/* more than a slot is refused */
	assert_int_equal(gring_read(&r, &gm, 0, back, 1025), -EFAULT);
	gring_free(&r);
}

/* [3] producer indexes: at most entries ahead of what was taken, in 32-bit
 * arithmetic (wrap-around) */
static void test_prod_ok(void **state)
{
	static const struct { uint32_t prod, taken, entries; bool ok; } t[] = {
		{ 0, 0, 16, true },
		{ 16, 0, 16, true },			/* full */
		{ 17, 0, 16, false },			/* more than the ring */
		{ 0xffffffffu, 0, 16, false },		/* behind what was taken */
		{ 3, 0xfffffff8u, 16, true },		/* 11 ahead, across the wrap */
		{ 9, 0xfffffff8u, 16, false },		/* 17 ahead, across the wrap */
		{ 0xfffffff8u, 3, 16, false },		/* behind, across the wrap */
		{ 32768, 0, 32768, true },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++)
		if (gring_prod_ok(t[i].prod, t[i].taken, t[i].entries) != t[i].ok)
			fail_msg("case %u: prod %u taken %u", i + 1, t[i].prod, t[i].taken);
}

/* [4] consumer indexes: never back from the last one seen, never past what
 * was written */
static void test_cons_ok(void **state)
{
	static const struct { uint32_t cons, last, written; bool ok; } t[] = {
		{ 0, 0, 0, true },
		{ 5, 0, 5, true },			/* consumed all */
		{ 6, 0, 5, false },			/* past what was written */
		{ 4, 5, 9, false },			/* back */
		{ 5, 5, 9, true },			/* unchanged */
		{ 2, 0xfffffffeu, 3, true },		/* across the wrap */
		{ 4, 0xfffffffeu, 3, false },		/* past, across the wrap */
		{ 0xfffffffdu, 0xfffffffeu, 3, false },	/* back, across the wrap */
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++)
		if (gring_cons_ok(t[i].cons, t[i].last, t[i].written) != t[i].ok)
			fail_msg("case %u: cons %u last %u written %u", i + 1, t[i].cons,
				 t[i].last, t[i].written);
}

/* [5] a page that leaves guest memory (a new memory table) makes every
 * access to it fail, not reach the old mapping */
static void test_page_gone(void **state)
{
	const uint64_t pages[] = { page_gpa(MEM_PAGES - 1) };
	uint8_t b[64];
	struct gring r;
	char why[160];
	uint32_t v;

	(void)state;
	assert_int_equal(gring_init(&r, &gm, pages, 1, 16, 64, why, sizeof(why)), 0);
	assert_int_equal(gring_read(&r, &gm, 0, b, 64), 0);
	gm.r[0].size -= GRING_PAGE;
	assert_int_equal(gring_read(&r, &gm, 0, b, 64), -EFAULT);
	assert_int_equal(gring_write(&r, &gm, 0, b, 64), -EFAULT);
	assert_int_equal(gring_load(&r, &gm, GRING_PROD, &v), -EFAULT);
	assert_int_equal(gring_store(&r, &gm, GRING_WRITTEN, 1), -EFAULT);
	assert_false(gring_db_ok(&gm, pages[0]));
	gm.r[0].size += GRING_PAGE;
	gring_free(&r);
}

/* [6] doorbell words: taken whole and left 0; need_wake (le32) at byte 0; words
 * past the page and pages outside memory refused */
static void test_doorbell(void **state)
{
	uint64_t db = page_gpa(7), bits;
	uint64_t *words = (uint64_t *)(mem + 7 * GRING_PAGE + GRING_DB_BITS_OFF);

	(void)state;
	assert_true(gring_db_ok(&gm, db));
	assert_false(gring_db_ok(&gm, db + 64));
	assert_false(gring_db_ok(&gm, MEM_GPA + MEM_PAGES * GRING_PAGE));
	words[3] = htole64(0x8000000000000011ull);
	assert_int_equal(gring_db_take(&gm, db, 3, &bits), 0);
	assert_true(bits == 0x8000000000000011ull);
	assert_true(words[3] == 0);
	assert_int_equal(gring_db_take(&gm, db, 3, &bits), 0);
	assert_true(bits == 0);
	assert_int_equal(gring_db_take(&gm, db, GRING_DB_WORDS - 1, &bits), 0);
	assert_int_equal(gring_db_take(&gm, db, GRING_DB_WORDS, &bits), -EFAULT);
	assert_int_equal(gring_db_take(&gm, db + 8, 0, &bits), -EFAULT);
	assert_int_equal(GRING_DB_BITS, 32256);
	assert_int_equal(gring_db_need_wake(&gm, db, 0x12345678), 0);
	assert_int_equal(le32toh(*(uint32_t *)(mem + 7 * GRING_PAGE)), 0x12345678);
	assert_int_equal(gring_db_need_wake(&gm, db, 0), 0);
	assert_int_equal(*(uint32_t *)(mem + 7 * GRING_PAGE), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_refused),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_prod_ok),
		cmocka_unit_test(test_cons_ok),
		cmocka_unit_test(test_page_gone),
		cmocka_unit_test(test_doorbell),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
