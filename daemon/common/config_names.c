// SPDX-License-Identifier: GPL-2.0-only
/* The configuration's enums by name, both ways: the file reads them, the
 * control socket's status writes them. */
#include <errno.h>
#include <string.h>

#include "config.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const log_level_names[] = {
	"error", "warning", "info", "debug",
};
static const enum vrdma_log_level log_level_values[] = {
	VRDMA_LOG_ERROR, VRDMA_LOG_WARNING, VRDMA_LOG_INFO, VRDMA_LOG_DEBUG,
};

/* Indexed by enum vrdma_xdp_mode / vrdma_zerocopy / vrdma_multi_buffer. */
static const char *const xdp_mode_names[] = { "auto", "native", "skb" };
static const char *const zerocopy_names[] = { "auto", "on", "off" };
static const char *const multi_buffer_names[] = { "auto", "off" };

static int lookup(const char *const *names, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return (int)i;
	return -EINVAL;
}

int vrdma_log_level_parse(enum vrdma_log_level *l, const char *s)
{
	int i = lookup(log_level_names, ARRAY_SIZE(log_level_names), s);

	if (i < 0)
		return i;
	*l = log_level_values[i];
	return 0;
}

int vrdma_xdp_mode_parse(enum vrdma_xdp_mode *m, const char *s)
{
	int i = lookup(xdp_mode_names, ARRAY_SIZE(xdp_mode_names), s);

	if (i < 0)
		return i;
	*m = (enum vrdma_xdp_mode)i;
	return 0;
}

int vrdma_zerocopy_parse(enum vrdma_zerocopy *z, const char *s)
{
	int i = lookup(zerocopy_names, ARRAY_SIZE(zerocopy_names), s);

	if (i < 0)
		return i;
	*z = (enum vrdma_zerocopy)i;
	return 0;
}

int vrdma_multi_buffer_parse(enum vrdma_multi_buffer *m, const char *s)
{
	int i = lookup(multi_buffer_names, ARRAY_SIZE(multi_buffer_names), s);

	if (i < 0)
		return i;
	*m = (enum vrdma_multi_buffer)i;
	return 0;
}

const char *vrdma_xdp_mode_name(enum vrdma_xdp_mode m)
{
	if ((unsigned int)m < ARRAY_SIZE(xdp_mode_names))
		return xdp_mode_names[m];
	return "unknown";
}

const char *vrdma_zerocopy_name(enum vrdma_zerocopy z)
{
	if ((unsigned int)z < ARRAY_SIZE(zerocopy_names))
		return zerocopy_names[z];
	return "unknown";
}

const char *vrdma_multi_buffer_name(enum vrdma_multi_buffer m)
{
	if ((unsigned int)m < ARRAY_SIZE(multi_buffer_names))
		return multi_buffer_names[m];
	return "unknown";
}

const char *vrdma_log_level_name(enum vrdma_log_level l)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(log_level_values); i++)
		if (log_level_values[i] == l)
			return log_level_names[i];
	return "unknown";
}
