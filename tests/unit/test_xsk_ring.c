// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests for daemon/port/xsk_ring.c's receive side: the fill ring kept
 * at its target from the chunks freed last, the target doubling when the
 * kernel nearly runs it dry, and no chunk lost or given twice. The rings
 * are libxdp's, laid out in memory here; the "kernel" takes fill entries in
 * order and posts them as received frames, as copy-mode AF_XDP does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xsk_ring.h"

#define RING 2048u

static struct {
	uint32_t fill_prod, fill_cons, rx_prod, rx_cons, flags;
	uint64_t fill[RING];
	struct xdp_desc rx[RING];
} k;
static struct xsk_queue *q;
static unsigned int frames_seen;

static void setup_queue(void)
{
	memset(&k, 0, sizeof(k));
	q = calloc(1, sizeof(*q));
	assert_non_null(q);
	q->area = calloc(1, (size_t)XSK_FRAMES * XSK_FRAME_SIZE);
	assert_non_null(q->area);
	/* as libxdp's xsk_umem__create / xsk_socket__create set them up */
	q->fill = (struct xsk_ring_prod){ .cached_cons = RING, .mask = RING - 1, .size = RING,
					  .producer = &k.fill_prod, .consumer = &k.fill_cons,
					  .ring = k.fill, .flags = &k.flags };
	q->rx = (struct xsk_ring_cons){ .mask = RING - 1, .size = RING,
					.producer = &k.rx_prod, .consumer = &k.rx_cons,
					.ring = k.rx, .flags = &k.flags };
	assert_int_equal(xsk_fill_init(q), 0);
	frames_seen = 0;
}

static void free_queue(void)
{
	free(q->area);
	free(q);
}

static uint32_t fill_held(void)
{
	return k.fill_prod - k.fill_cons;
}

/* The kernel receives n one-chunk frames: n fill entries in order, each
 * chunk marked with the frame count so far; chunks_used[] counts uses. */
static void kernel_rx(unsigned int n, unsigned int *chunks_used)
{
	unsigned int i;

	assert_true(n <= fill_held());
	for (i = 0; i < n; i++) {
		uint64_t addr = k.fill[k.fill_cons++ & (RING - 1)];
		struct xdp_desc *d = &k.rx[k.rx_prod++ & (RING - 1)];

		assert_int_equal(addr % XSK_FRAME_SIZE, 0);
		assert_true(addr / XSK_FRAME_SIZE < XSK_RX_FRAMES);
		if (chunks_used)
			chunks_used[addr / XSK_FRAME_SIZE]++;
		*d = (struct xdp_desc){ .addr = addr + 256, .len = 100 };
	}
}

static void on_frame(void *ctx, const struct roce_frag *frags, unsigned int n, uint32_t len)
{
	(void)ctx;
	assert_int_equal(n, 1);
	assert_int_equal(len, 100);
	assert_true(frags[0].data >= (uint8_t *)q->area + 256);
	frames_seen++;
}

/* Every chunk is in exactly one place: the fill ring, the RX ring, spare. */
static void assert_conserved(void)
{
	static unsigned char where[XSK_RX_FRAMES];
	uint32_t i;

	memset(where, 0, sizeof(where));
	for (i = k.fill_cons; i != k.fill_prod; i++)
		where[k.fill[i & (RING - 1)] / XSK_FRAME_SIZE]++;
	for (i = k.rx_cons; i != k.rx_prod; i++)
		where[k.rx[i & (RING - 1)].addr / XSK_FRAME_SIZE]++;
	for (i = 0; i < q->n_rx_spare; i++)
		where[q->rx_spare[i]]++;
	for (i = 0; i < XSK_RX_FRAMES; i++)
		assert_int_equal(where[i], 1);
}

/* 1. Start: XSK_FILL_START chunks in the fill ring, the rest spare. */
static void test_start(void **state)
{
	(void)state;
	setup_queue();
	assert_int_equal(fill_held(), XSK_FILL_START);
	assert_int_equal(q->fill_target, XSK_FILL_START);
	assert_int_equal(q->n_rx_spare, XSK_RX_FRAMES - XSK_FILL_START);
	assert_conserved();
	free_queue();
}

/* 2. Steady: the kernel takes 32 at a time and the worker keeps up. The
 * ring stays at its target, and the kernel sees no more than target + 32
 * distinct chunks however long it runs (given every chunk back, it would
 * cycle through all XSK_RX_FRAMES). */
static void test_steady_working_set(void **state)
{
	unsigned int *used = calloc(XSK_RX_FRAMES, sizeof(*used)), round, i, distinct = 0;

	(void)state;
	assert_non_null(used);
	setup_queue();
	for (round = 0; round < 1000; round++) {
		kernel_rx(32, used);
		assert_int_equal(xsk_rx_burst(q, 64, on_frame, NULL), 32);
		assert_int_equal(fill_held(), XSK_FILL_START);
	}
	for (i = 0; i < XSK_RX_FRAMES; i++)
		distinct += used[i] != 0;
	assert_int_equal(frames_seen, 32000);
	assert_int_equal(q->fill_target, XSK_FILL_START);
	assert_true(distinct <= XSK_FILL_START + 32);
	assert_conserved();
	free(used);
	free_queue();
}

/* 3. The kernel takes more than three quarters before the worker comes
 * back: the target doubles (once per such drain), up to XSK_RX_FRAMES, and
 * the ring is refilled to it. */
static void test_drain_grows(void **state)
{
	static const struct {
		unsigned int take, target_after;
	} steps[] = {
		{ 300, XSK_FILL_START },	/* 212 left: not yet */
		{ 400, 2 * XSK_FILL_START },	/* 112 left of 512 */
		{ 700, 2 * XSK_FILL_START },	/* 324 left of 1024 */
		{ 900, 4 * XSK_FILL_START },	/* 124 left */
		{ 1900, XSK_RX_FRAMES },	/* 148 left of 2048: at the top */
		{ 2000, XSK_RX_FRAMES },
	};
	unsigned int s;

	(void)state;
	setup_queue();
	for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		unsigned int got = 0;

		kernel_rx(steps[s].take, NULL);
		while (k.rx_cons != k.rx_prod)
			got += xsk_rx_burst(q, 64, on_frame, NULL);
		print_message("drain step %u: took %u, target %u, held %u\n", s + 1,
			      steps[s].take, q->fill_target, fill_held());
		assert_int_equal(got, steps[s].take);
		assert_int_equal(q->fill_target, steps[s].target_after);
		assert_int_equal(fill_held(), steps[s].target_after);
		assert_conserved();
	}
	free_queue();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_steady_working_set),
		cmocka_unit_test(test_drain_grows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
