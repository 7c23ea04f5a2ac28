/* SPDX-License-Identifier: GPL-2.0-only */
/* Logging to stderr with sd-daemon(3) priority prefixes ("<3>..."), which
 * journald turns into priorities; plain "vrdmad: " text on a terminal. */
#ifndef VRDMAD_LOG_H
#define VRDMAD_LOG_H

#include <stdatomic.h>
#include <stdint.h>

#include "config.h"

void log_set_level(enum vrdma_log_level level);
enum vrdma_log_level log_get_level(void);
void log_msg(enum vrdma_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)	log_msg(VRDMA_LOG_ERROR, __VA_ARGS__)
#define log_warn(...)	log_msg(VRDMA_LOG_WARNING, __VA_ARGS__)
#define log_info(...)	log_msg(VRDMA_LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(VRDMA_LOG_DEBUG, __VA_ARGS__)

/* Data-plane and peer-triggered messages must be rate limited: a guest or a
 * remote host must not be able to flood the journal. At most `burst`
 * messages per `interval_ms` per call site; the number suppressed is
 * reported with the next message that gets through. */
struct log_ratelimit {
	_Atomic uint64_t window_start_ms;
	_Atomic uint32_t printed;
	_Atomic uint32_t suppressed;
};

int log_ratelimit_ok(struct log_ratelimit *rl, uint32_t burst, uint32_t interval_ms,
		     uint32_t *suppressed);

#define log_ratelimited(level, ...) do {					\
	static struct log_ratelimit rl__;					\
	uint32_t sup__;								\
	if (log_ratelimit_ok(&rl__, 10, 5000, &sup__)) {			\
		if (sup__)							\
			log_msg(level, "(%u similar messages suppressed)", sup__); \
		log_msg(level, __VA_ARGS__);					\
	}									\
} while (0)

#endif
