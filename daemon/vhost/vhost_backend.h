/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The vhost-user back-end: one connection per VM (QEMU
 * docs/interop/vhost-user.rst). Every message is checked — its size, its fds,
 * its queue index, its addresses — before anything changes; a bad one is
 * logged (rate-limited), answered with a failure where an answer is due, and
 * costs that VM its connection, never the daemon. The device model plugs in
 * through struct vu_ops.
 */
#ifndef VRDMAD_VHOST_BACKEND_H
#define VRDMAD_VHOST_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"
#include "vhost_user.h"
#include "virtq.h"

struct vu_dev;

struct vu_ops {
	/* Bracket every change: the data plane must not run meanwhile. */
	void (*quiesce)(void *ctx);
	void (*resume)(void *ctx);
	/* Copy [off, off + len) of the config space; -EINVAL if out of it. */
	int (*get_config)(void *ctx, uint32_t off, uint32_t len, uint8_t *out);
	/* RESET_OWNER / RESET_DEVICE / disconnect: free every resource. */
	void (*reset)(void *ctx);
	/* Queue idx's kick eventfd changes from old_fd to new_fd (-1: none). */
	void (*kick_changed)(void *ctx, unsigned int idx, int old_fd, int new_fd);
	/* SET_FEATURES took features (already in d->features): 0, or a
	 * negative errno that fails the message. */
	int (*features_set)(void *ctx, uint64_t features);
};

struct vu_dev {
	int fd;				/* the connection; -1 when none */
	const char *name;		/* the VM's, for messages */
	uint64_t features, protocol_features;
	bool owner;
	uint8_t status;
	struct guest_mem mem;
	struct virtq *vqs;
	unsigned int n_vqs;
	const struct vu_ops *ops;
	void *ctx;
	uint64_t bad_messages;		/* counted for vrdmactl stats */
	char last_error[160];
};

int vu_dev_init(struct vu_dev *d, const char *name, unsigned int n_vqs,
		const struct vu_ops *ops, void *ctx);
/* Forget the connection: reset, unmap, close every fd (not d->fd). */
void vu_dev_disconnect(struct vu_dev *d);
void vu_dev_free(struct vu_dev *d);

/* Read one message with its fds (at most VHOST_USER_MAX_FDS). 0, or
 * -ECONNRESET at end of file, -EAGAIN if nothing is there, -EBADMSG for a
 * malformed frame (its fds are then closed). */
int vu_recv(int fd, struct vhost_user_msg *msg, int *fds, unsigned int *nfds);
/* Handle one message; fds are consumed. 0 to go on, or a negative errno:
 * the caller drops the connection. d->last_error says why. */
int vu_dispatch(struct vu_dev *d, struct vhost_user_msg *msg, int *fds, unsigned int nfds);
const char *vu_request_name(uint32_t request);

/* Every fd from the peer is made non-blocking: a worker must never wait on
 * one (a full pipe as a call fd would stall every VM of its worker, then
 * the control thread, then the watchdog kills the daemon). Kick, call and
 * err fds must be eventfds: the worker reads and writes them 8 bytes at a
 * time. Memory fds are checked where they are mapped (guest_mem_map).
 * 0, or a negative errno and why. */
enum vu_fd_want { VU_FD_ANY, VU_FD_EVENTFD, VU_FD_SOCKET };
int vu_fd_check(int fd, enum vu_fd_want want, char *why, size_t len);

#endif
