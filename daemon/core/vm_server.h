/* SPDX-License-Identifier: GPL-2.0-only */
/* The VMs' vhost-user sockets, on the control thread's event loop: one
 * listening socket per VM, one connection at a time, messages handed to the
 * VM's device; a device its worker marked broken loses its connection. */
#ifndef VRDMAD_VM_SERVER_H
#define VRDMAD_VM_SERVER_H

#include <stddef.h>
#include <stdint.h>

struct vrdmad;

/* The eventfd through which workers report broken devices (before the
 * workers exist). */
int vm_server_watch_broken(struct vrdmad *d);
void vm_server_unwatch_broken(struct vrdmad *d);
/* Listen on VM id's socket (its device exists); on error err says why. */
int vm_server_listen(struct vrdmad *d, uint32_t id, char *err, size_t errlen);
/* Serve the connection its device has already (restored from the last
 * vrdmad's state); on error err says why. */
int vm_server_adopt(struct vrdmad *d, uint32_t id, char *err, size_t errlen);
/* Drop its connection, close and remove its socket. */
void vm_server_unlisten(struct vrdmad *d, uint32_t id, const char *why);

#endif
