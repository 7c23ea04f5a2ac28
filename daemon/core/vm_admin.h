/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * VMs joining and leaving a running daemon (start, vrdmactl add-vm/del-vm,
 * reload): table slot, device, socket and XDP map, in an order where a
 * failure undoes what was done and no other VM is touched. Control thread.
 */
#ifndef VRDMAD_VM_ADMIN_H
#define VRDMAD_VM_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "vm.h"

struct vrdmad;

/* 0, or a negative errno with err saying why (nothing changed then). */
int vm_admin_add(struct vrdmad *d, const struct vrdma_vm_config *vc, bool runtime, char *err,
		 size_t errlen);
void vm_admin_remove(struct vrdmad *d, struct vm *vm, const char *why);

struct vm_reload_result {
	unsigned int added, removed, changed, kept, failed;
};

/* Make the file's VMs (next) the served ones: remove those gone, re-create
 * those changed, add the new; VMs added by vrdmactl stay. One VM that cannot
 * be added is logged and counted; the others go on. */
void vm_admin_reload(struct vrdmad *d, const struct vrdma_config *next,
		     struct vm_reload_result *res);

#endif
