/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control socket protocol between vrdmad and vrdmactl (docs/control.md).
 * A UNIX stream socket; the client sends one JSON object on one line,
 * {"command": "status"}, and the daemon answers with one JSON object and
 * closes: {"ok": true, "data": {...}} or {"ok": false, "error": "..."}.
 */
#ifndef VRDMA_CONTROL_H
#define VRDMA_CONTROL_H

#define VRDMA_CONTROL_DEFAULT_SOCKET	"/run/vrdmad/control.sock"
#define VRDMA_CONTROL_PROTOCOL		1	/* "protocol" in every answer */
#define VRDMA_CONTROL_MAX_REQUEST	65536	/* bytes, newline included */

#endif
