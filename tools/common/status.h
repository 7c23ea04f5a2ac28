/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Names of completion statuses, so that the perf tools' errors read as
 * rdma-core's and perftest's.
 */
#ifndef TOOLS_STATUS_H
#define TOOLS_STATUS_H

#define IB_WC_SUCCESS	0

/* ibv_wc_status_str's words; "unknown" past its table. */
const char *wc_status_str(unsigned int status);

#endif
