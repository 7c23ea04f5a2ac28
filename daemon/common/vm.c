// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

static int gid_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct vrdma_gid));
}

int vm_table_init(struct vm_table *t)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	t->vms = calloc(VM_TABLE_SLOTS, sizeof(*t->vms));
	t->gids = calloc(VM_TABLE_MAX_GIDS, sizeof(*t->gids));
	if (!t->vms || !t->gids) {
		vm_table_free(t);
		return -ENOMEM;
	}
	for (i = 0; i < VM_TABLE_SLOTS; i++)
		t->vms[i].id = i;
	t->gen = 1;
	return 0;
}

void vm_table_free(struct vm_table *t)
{
	free(t->gids);
	free(t->vms);
	memset(t, 0, sizeof(*t));
}

/* The sorted index from the used slots. Configured GIDs are unique
 * (vm_table_check); a VM may also add the link-local GID of its own MAC
 * (ADD_GID). One derived from the port's MAC would be the host's, so only an
 * own MAC counts, and an address claimed twice goes to the lower slot. Runs
 * with every worker quiesced: sorted lookups, not a scan per link-local. */
static void rebuild_index(struct vm_table *t)
{
	const struct vm *vm;
	struct vrdma_gid ll;
	unsigned int j, n_cfg, k;
	bool taken;

	t->gen++;
	t->n_gids = 0;
	t->n_vms = 0;
	t->hi = 0;
	for (vm = t->vms; vm < t->vms + VM_TABLE_SLOTS; vm++) {
		if (!vm->used)
			continue;
		t->n_vms++;
		t->hi = vm->id + 1;
		for (j = 0; j < vm->cfg.n_gids; j++)
			t->gids[t->n_gids++] = (struct vm_gid){ vm->cfg.gids[j], vm->id };
	}
	qsort(t->gids, t->n_gids, sizeof(*t->gids), gid_cmp);
	n_cfg = t->n_gids;
	vm_table_for_each(t, vm) {
		if (!vm->cfg.has_mac)
			continue;
		vm_link_local_gid(vm->cfg.mac, &ll);
		taken = n_cfg && bsearch(&ll, t->gids, n_cfg, sizeof(*t->gids), gid_cmp);
		/* and the link-locals added so far, at most one per VM */
		for (k = n_cfg; k < t->n_gids && !taken; k++)
			taken = !gid_cmp(&t->gids[k].gid, &ll);
		if (!taken)
			t->gids[t->n_gids++] = (struct vm_gid){ ll, vm->id };
	}
	if (t->n_gids > n_cfg)
		qsort(t->gids, t->n_gids, sizeof(*t->gids), gid_cmp);
}

const struct vm *vm_table_find_gid(const struct vm_table *t, const struct vrdma_gid *gid)
{
	const struct vm_gid *e;

	if (!t->n_gids)
		return NULL;
	e = bsearch(gid, t->gids, t->n_gids, sizeof(*t->gids), gid_cmp);
	return e ? &t->vms[e->vm_id] : NULL;
}

struct vm *vm_table_find_name(struct vm_table *t, const char *name)
{
	struct vm *vm;

	vm_table_for_each(t, vm)
		if (!strcmp(vm->cfg.name, name))
			return vm;
	return NULL;
}

int vm_table_check(const struct vm_table *t, const struct vrdma_vm_config *vc,
		   const char *control_socket, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN];
	const struct vm *vm, *owner;
	unsigned int j;

	if (t->n_vms >= VM_TABLE_SLOTS) {
		snprintf(err, errlen, "vrdmad serves %d VMs already, its most", VM_TABLE_SLOTS);
		return -ENOSPC;
	}
	if (!strcmp(vc->socket, control_socket)) {
		snprintf(err, errlen, "socket %s is vrdmad's control socket", vc->socket);
		return -EEXIST;
	}
	vm_table_for_each(t, vm) {
		if (!strcmp(vm->cfg.name, vc->name)) {
			snprintf(err, errlen, "a VM named '%s' exists already", vc->name);
			return -EEXIST;
		}
		if (!strcmp(vm->cfg.socket, vc->socket)) {
			snprintf(err, errlen, "socket %s is VM %s's", vc->socket, vm->cfg.name);
			return -EEXIST;
		}
	}
	for (j = 0; j < vc->n_gids; j++) {
		owner = vm_table_find_gid(t, &vc->gids[j]);
		if (!owner)
			continue;
		vrdma_gid_format(&vc->gids[j], buf, sizeof(buf));
		snprintf(err, errlen, "GID %s is served by VM %s", buf, owner->cfg.name);
		return -EEXIST;
	}
	return 0;
}

int vm_table_reserve(struct vm_table *t, const struct vrdma_vm_config *vc, bool runtime)
{
	struct vm *vm;

	/* A slot that is neither used nor reserved has an empty name. */
	for (vm = t->vms; vm < t->vms + VM_TABLE_SLOTS; vm++) {
		if (vm->used || vm->cfg.name[0])
			continue;
		vm->cfg = *vc;
		vm->runtime = runtime;
		return (int)vm->id;
	}
	return -ENOSPC;
}

void vm_table_publish(struct vm_table *t, uint32_t id)
{
	t->vms[id].used = true;
	rebuild_index(t);
}

/* A slot never published is not in the index, and its removal may run while
 * the workers read the index (vm_admin's unreserve): leave it alone then. */
void vm_table_remove(struct vm_table *t, uint32_t id)
{
	struct vm *vm = &t->vms[id];
	bool published = vm->used;

	memset(vm, 0, sizeof(*vm));
	vm->id = id;
	if (published)
		rebuild_index(t);
}
