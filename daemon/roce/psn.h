/* SPDX-License-Identifier: GPL-2.0-only */
/* PSN arithmetic modulo 2^24 (IBA 9.7.1): comparisons are by signed
 * distance, so they hold across the wrap. */
#ifndef VRDMAD_PSN_H
#define VRDMAD_PSN_H

#include <stdbool.h>
#include <stdint.h>

#include "roce_defs.h"

static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & ROCE_PSN_MASK;
}

/* a - b as a signed 24-bit distance: > 0 when a is after b. */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline bool psn_before(uint32_t a, uint32_t b) { return psn_diff(a, b) < 0; }
static inline bool psn_after(uint32_t a, uint32_t b) { return psn_diff(a, b) > 0; }

#endif
