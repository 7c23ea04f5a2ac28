/* SPDX-License-Identifier: GPL-2.0-only */
/* The VMs' vhost-user sockets, on the control thread's event loop: one
 * listening socket per VM, one connection at a time, messages handed to the
 * VM's device; a device its worker marked broken loses its connection. */
#ifndef VRDMAD_VM_SERVER_H
#define VRDMAD_VM_SERVER_H

struct vrdmad;

/* The eventfd through which workers report broken devices (before the
 * workers exist), then the listening sockets (once they run). */
int vm_server_watch_broken(struct vrdmad *d);
void vm_server_unwatch_broken(struct vrdmad *d);
int vm_server_open(struct vrdmad *d);
void vm_server_close(struct vrdmad *d);

#endif
