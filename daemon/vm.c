// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

static int gid_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct vrdma_gid));
}

int vm_table_init(struct vm_table *t, const struct vrdma_config *cfg)
{
	unsigned int i, j, n = 0;

	memset(t, 0, sizeof(*t));
	if (!cfg->n_vms)
		return 0;
	t->vms = calloc(cfg->n_vms, sizeof(*t->vms));
	if (!t->vms)
		return -ENOMEM;
	for (i = 0; i < cfg->n_vms; i++)
		n += cfg->vms[i].n_gids;
	t->gids = calloc(n ? n : 1, sizeof(*t->gids));
	if (!t->gids)
		goto free_vms;
	for (i = 0; i < cfg->n_vms; i++) {
		t->vms[i].id = i;
		t->vms[i].cfg = cfg->vms[i];
		for (j = 0; j < cfg->vms[i].n_gids; j++) {
			t->gids[t->n_gids].gid = cfg->vms[i].gids[j];
			t->gids[t->n_gids].vm_id = i;
			t->n_gids++;
		}
	}
	t->n_vms = cfg->n_vms;
	/* The config parser refuses a GID given twice, so keys are unique. */
	qsort(t->gids, t->n_gids, sizeof(*t->gids), gid_cmp);
	return 0;

free_vms:
	free(t->vms);
	t->vms = NULL;
	return -ENOMEM;
}

void vm_table_free(struct vm_table *t)
{
	free(t->gids);
	free(t->vms);
	memset(t, 0, sizeof(*t));
}

const struct vm *vm_table_find_gid(const struct vm_table *t, const struct vrdma_gid *gid)
{
	const struct vm_gid *e;

	if (!t->n_gids)
		return NULL;
	e = bsearch(gid, t->gids, t->n_gids, sizeof(*t->gids), gid_cmp);
	return e ? &t->vms[e->vm_id] : NULL;
}
