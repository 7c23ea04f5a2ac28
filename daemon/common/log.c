// SPDX-License-Identifier: GPL-2.0-only
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static enum vrdma_log_level log_level = VRDMA_LOG_INFO;

void log_set_level(enum vrdma_log_level level)
{
	log_level = level;
}

enum vrdma_log_level log_get_level(void)
{
	return log_level;
}

void log_msg(enum vrdma_log_level level, const char *fmt, ...)
{
	static const char *const tty_prefix[8] = {
		[VRDMA_LOG_ERROR] = "error: ", [VRDMA_LOG_WARNING] = "warning: ",
		[VRDMA_LOG_INFO] = "", [VRDMA_LOG_DEBUG] = "debug: ",
	};
	char line[1024];
	va_list ap;
	int n;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per line so lines from several threads never interleave. */
	if (isatty(STDERR_FILENO))
		n = dprintf(STDERR_FILENO, "vrdmad: %s%s\n",
			    tty_prefix[level] ? tty_prefix[level] : "", line);
	else
		n = dprintf(STDERR_FILENO, "<%d>%s\n", (int)level, line);
	(void)n;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int log_ratelimit_ok(struct log_ratelimit *rl, uint32_t burst, uint32_t interval_ms,
		     uint32_t *suppressed)
{
	uint64_t now = now_ms();
	uint64_t start = atomic_load_explicit(&rl->window_start_ms, memory_order_relaxed);

	*suppressed = 0;
	if (now - start >= interval_ms &&
	    atomic_compare_exchange_strong(&rl->window_start_ms, &start, now)) {
		*suppressed = atomic_exchange(&rl->suppressed, 0);
		atomic_store(&rl->printed, 0);
	}
	if (atomic_fetch_add(&rl->printed, 1) < burst)
		return 1;
	atomic_fetch_add(&rl->suppressed, 1);
	return 0;
}
