/* SPDX-License-Identifier: GPL-2.0-only */
/* Deterministic random numbers for tests: xorshift64, one stream per
 * program, the same on every run for a given seed. */
#ifndef TESTS_RNG_H
#define TESTS_RNG_H

#include <stddef.h>
#include <stdint.h>

void rng_seed(uint64_t seed);	/* 0 picks a fixed non-zero seed */
uint64_t rng64(void);
uint32_t rng32(void);		/* the high half of rng64() */
uint32_t rng_below(uint32_t n);	/* in [0, n), n > 0 */
void rng_fill(uint8_t *p, size_t n);

#endif
