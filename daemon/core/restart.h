/* SPDX-License-Identifier: GPL-2.0-only */
/* Restarts that keep every VM's RDMA state through systemd's fd store
 * (docs/restart.md, level 2). Control thread. */
#ifndef VRDMAD_RESTART_H
#define VRDMAD_RESTART_H

#include <stdbool.h>

struct vrdmad;
struct vm;
struct vdev;
struct worker;

/* At start, first: the fds the last vrdmad left in the store. */
void restart_load(struct vrdmad *d);
/* vm's device v, just made and not yet published: rebuilt from the state
 * the last vrdmad saved, if it checks out (true: connected as it was),
 * with w, the worker it will have, quiesced meanwhile. The journal and
 * vm->start say what happened. */
bool restart_restore_vm(struct vrdmad *d, struct vm *vm, struct vdev *v, struct worker *w);
/* After the VMs of the file: the store emptied, fds nobody took closed. */
void restart_settle(struct vrdmad *d);
/* At SIGTERM under a service manager: every device frozen, then each VM's
 * fds and state kept in the store for the next vrdmad. */
void restart_save(struct vrdmad *d);

#endif
