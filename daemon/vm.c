// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

static int gid_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct vrdma_gid));
}

void vm_link_local_gid(const uint8_t mac[6], struct vrdma_gid *g)
{
	static const uint8_t prefix[8] = { 0xfe, 0x80 };

	memcpy(g->raw, prefix, 8);
	g->raw[8] = mac[0] ^ 2;		/* EUI-64, universal/local bit flipped */
	g->raw[9] = mac[1];
	g->raw[10] = mac[2];
	g->raw[11] = 0xff;
	g->raw[12] = 0xfe;
	g->raw[13] = mac[3];
	g->raw[14] = mac[4];
	g->raw[15] = mac[5];
}

static bool have_gid(const struct vm_table *t, const struct vrdma_gid *g)
{
	unsigned int i;

	for (i = 0; i < t->n_gids; i++)
		if (!memcmp(t->gids[i].gid.raw, g->raw, sizeof(g->raw)))
			return true;
	return false;
}

int vm_table_init(struct vm_table *t, const struct vrdma_config *cfg)
{
	unsigned int i, j, n = 0;
	struct vrdma_gid ll;

	memset(t, 0, sizeof(*t));
	if (!cfg->n_vms)
		return 0;
	t->vms = calloc(cfg->n_vms, sizeof(*t->vms));
	if (!t->vms)
		return -ENOMEM;
	for (i = 0; i < cfg->n_vms; i++)
		n += cfg->vms[i].n_gids + 1;
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
	/* A VM may also add the link-local GID of its own MAC (ADD_GID); one
	 * derived from the port's MAC would be the host's, so only an own MAC
	 * counts, and an address claimed twice is nobody's. */
	for (i = 0; i < cfg->n_vms; i++) {
		if (!cfg->vms[i].has_mac)
			continue;
		vm_link_local_gid(cfg->vms[i].mac, &ll);
		if (have_gid(t, &ll))
			continue;
		t->gids[t->n_gids].gid = ll;
		t->gids[t->n_gids].vm_id = i;
		t->n_gids++;
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
