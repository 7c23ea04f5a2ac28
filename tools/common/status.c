// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completion status names (status.h).
 */
#include "status.h"

const char *wc_status_str(unsigned int status)
{
	static const char *const names[] = {
		"success", "local length error", "local QP operation error",
		"local EE context operation error", "local protection error",
		"Work Request Flushed Error", "memory management operation error",
		"bad response error", "local access error", "remote invalid request error",
		"remote access error", "remote operation error",
		"transport retry counter exceeded", "RNR retry counter exceeded",
		"local RDD violation error", "remote invalid RD request", "aborted error",
		"invalid EE context number", "invalid EE context state", "fatal error",
		"response timeout error", "general error", "TM error", "TM software rendezvous",
	};

	return status < sizeof(names) / sizeof(names[0]) ? names[status] : "unknown";
}
