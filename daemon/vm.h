/* SPDX-License-Identifier: GPL-2.0-only */
/* The VMs the daemon serves and the GIDs each may use. Built once from the
 * config; read without locks by the workers (immutable while they run). */
#ifndef VRDMAD_VM_H
#define VRDMAD_VM_H

#include <stdint.h>

#include "config.h"

struct vm {
	uint32_t id;			/* index in vm_table.vms; the XDP map value */
	struct vrdma_vm_config cfg;
};

struct vm_gid {
	struct vrdma_gid gid;
	uint32_t vm_id;
};

struct vm_table {
	struct vm *vms;
	unsigned int n_vms;
	struct vm_gid *gids;		/* sorted by gid, for vm_table_find_gid(): the
					 * config's, and each own MAC's link-local */
	unsigned int n_gids;
};

int vm_table_init(struct vm_table *t, const struct vrdma_config *cfg);
void vm_table_free(struct vm_table *t);
/* fe80::/64 with the EUI-64 of mac (RFC 4291 appendix A). */
void vm_link_local_gid(const uint8_t mac[6], struct vrdma_gid *gid);
/* The VM serving gid, or NULL. */
const struct vm *vm_table_find_gid(const struct vm_table *t, const struct vrdma_gid *gid);

#endif
