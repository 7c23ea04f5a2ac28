// SPDX-License-Identifier: GPL-2.0-only
#include "rng.h"

static uint64_t rng_state;

void rng_seed(uint64_t seed)
{
	rng_state = seed ? seed : 0x9e3779b97f4a7c15ull;
}

uint64_t rng64(void)	/* xorshift64 */
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

uint32_t rng32(void)
{
	return (uint32_t)(rng64() >> 32);
}

uint32_t rng_below(uint32_t n)
{
	return (uint32_t)(rng64() % n);
}

void rng_fill(uint8_t *p, size_t n)
{
	while (n--)
		*p++ = (uint8_t)rng64();
}
