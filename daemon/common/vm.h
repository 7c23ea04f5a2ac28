/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The VMs the daemon serves and the GIDs each may use: a fixed set of slots
 * (a VM's id is its slot, the XDP map's value), so VMs come and go at run
 * time without moving the others. A slot is the VM's one record: its
 * configuration, its device and its socket. The workers read it without
 * locks; the control thread changes it only while every worker is quiesced.
 */
#ifndef VRDMAD_VM_H
#define VRDMAD_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config.h"

struct vdev;		/* daemon/device: opaque here */
struct vm_conn;		/* daemon/core: its socket and connection */

/* What the port received for a VM, as one worker counted it (that worker
 * is the only writer; the control thread adds them up). */
struct vm_rx_count {
	uint64_t frames, bytes;
};

struct vm {
	uint32_t id;			/* its slot */
	bool used;			/* published: the workers may reach it */
	bool runtime;			/* added by vrdmactl, not from the file */
	struct vrdma_vm_config cfg;
	struct vdev *dev;		/* its device, from before it is published
					 * until it is removed */
	struct vm_conn *conn;		/* its socket, while it listens */
	char start[320];		/* how its device started: new, or restored */
	uint64_t gap_ns;		/* restored: since the last vrdmad saved it */
	struct vm_rx_count rx[VRDMA_CONF_MAX_WORKERS];	/* by worker id */
};

struct vm_gid {
	struct vrdma_gid gid;
	uint32_t vm_id;
};

#define VM_TABLE_SLOTS VRDMA_CONF_MAX_VMS
#define VM_TABLE_MAX_GIDS (VM_TABLE_SLOTS * (VRDMA_CONF_MAX_GIDS + 1))

struct vm_table {
	struct vm *vms;			/* [VM_TABLE_SLOTS] */
	unsigned int n_vms;		/* slots used */
	unsigned int hi;		/* one past the highest slot used */
	struct vm_gid *gids;		/* sorted by gid, for vm_table_find_gid(): the
					 * configured ones, and each own MAC's link-local */
	unsigned int n_gids;
	uint64_t gen;			/* changes with the index; never 0 */
};

int vm_table_init(struct vm_table *t);
void vm_table_free(struct vm_table *t);
/* The VM serving gid, or NULL. */
const struct vm *vm_table_find_gid(const struct vm_table *t, const struct vrdma_gid *gid);
struct vm *vm_table_find_name(struct vm_table *t, const char *name);

/* vm_table_find_gid's last answer, for a caller that asks about the same GID
 * frame after frame (one per worker and direction): a 16-byte compare
 * instead of a binary search, until the table changes. */
struct vm_gid_cache {
	uint64_t gen;			/* the table's when filled; 0: empty */
	struct vrdma_gid gid;
	const struct vm *vm;
};

static inline const struct vm *vm_table_find_gid_cached(const struct vm_table *t,
							struct vm_gid_cache *c,
							const uint8_t gid[16])
{
	if (c->gen != t->gen || memcmp(c->gid.raw, gid, sizeof(c->gid.raw))) {
		memcpy(c->gid.raw, gid, sizeof(c->gid.raw));
		c->vm = vm_table_find_gid(t, &c->gid);
		c->gen = t->gen;
	}
	return c->vm;
}

/* Whether vc may join: a free slot, a new name, GIDs and socket nobody else
 * has (control_socket: the daemon's own). 0, or -EEXIST/-ENOSPC with why. */
int vm_table_check(const struct vm_table *t, const struct vrdma_vm_config *vc,
		   const char *control_socket, char *err, size_t errlen);
/* Take a free slot for vc, not yet visible to the workers; returns its id. */
int vm_table_reserve(struct vm_table *t, const struct vrdma_vm_config *vc, bool runtime);
/* Make a reserved slot visible / take a slot back, clearing the record
 * (workers quiesced; its device and socket are the caller's to free). */
void vm_table_publish(struct vm_table *t, uint32_t id);
void vm_table_remove(struct vm_table *t, uint32_t id);

#define vm_table_for_each(t, vm) \
	for ((vm) = (t)->vms; (vm) < (t)->vms + (t)->hi; (vm)++) \
		if ((vm)->used)

#endif
