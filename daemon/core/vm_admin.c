// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "restart.h"
#include "vm_admin.h"
#include "vm_server.h"

/* The XDP map follows the table: what left the index is unserved, what came
 * or changed hands is served. Both lists are sorted by gid. */
static int sync_xdp(struct vrdmad *d, const struct vm_gid *old, unsigned int n_old, char *err,
		    size_t errlen)
{
	const struct vm_gid *cur = d->vms.gids;
	unsigned int i = 0, j = 0, n_cur = d->vms.n_gids;
	char buf[INET6_ADDRSTRLEN];
	int c, ret = 0, r;

	while (i < n_old || j < n_cur) {
		if (i == n_old)
			c = 1;
		else if (j == n_cur)
			c = -1;
		else
			c = memcmp(old[i].gid.raw, cur[j].gid.raw, sizeof(old[i].gid.raw));
		if (c < 0) {
			xdp_port_unserve_gid(&d->port, &old[i++].gid);
			continue;
		}
		if (c > 0 || old[i].vm_id != cur[j].vm_id) {
			r = xdp_port_serve_gid(&d->port, &cur[j].gid, cur[j].vm_id);
			if (r && !ret) {
				vrdma_gid_format(&cur[j].gid, buf, sizeof(buf));
				snprintf(err, errlen, "cannot add GID %s to the XDP map: %s", buf,
					 strerror(-r));
				ret = r;
			}
		}
		if (c == 0)
			i++;
		j++;
	}
	return ret;
}

static struct vm_gid *snapshot(const struct vm_table *t, unsigned int *n)
{
	struct vm_gid *s = malloc((t->n_gids ? t->n_gids : 1) * sizeof(*s));

	if (s)
		memcpy(s, t->gids, t->n_gids * sizeof(*s));
	*n = t->n_gids;
	return s;
}

/* Publish or take back slot id with its device, every worker quiesced, then
 * bring the XDP map in line. */
static int change_table(struct vrdmad *d, uint32_t id, struct vdev *v, bool add, char *err,
			size_t errlen)
{
	struct worker *w = worker_of_vm(d->workers, d->n_workers, id);
	struct vm_gid *old;
	unsigned int n_old;
	int ret;

	old = snapshot(&d->vms, &n_old);
	if (!old) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	workers_quiesce(d->workers, d->n_workers);
	if (add) {
		vm_table_publish(&d->vms, id);	/* its counters start at 0 */
		worker_own(w, v);
	} else {
		worker_disown(w, v);
		/* Its worker is quiesced, as the device's teardown needs. */
		vdev_free(v);
		vm_table_remove(&d->vms, id);
	}
	workers_resume(d->workers, d->n_workers);
	ret = sync_xdp(d, old, n_old, err, errlen);
	free(old);
	return ret;
}

static void join_gids(const struct vrdma_vm_config *vc, char *out, size_t len)
{
	char buf[INET6_ADDRSTRLEN];
	size_t off = 0;
	unsigned int i;

	out[0] = '\0';
	for (i = 0; i < vc->n_gids && off < len; i++) {
		vrdma_gid_format(&vc->gids[i], buf, sizeof(buf));
		off += snprintf(out + off, len - off, "%s%s", i ? "," : "", buf);
	}
}

int vm_admin_add(struct vrdmad *d, const struct vrdma_vm_config *vc, bool runtime, char *err,
		 size_t errlen)
{
	struct vdev_port port = { .mtu = d->port.frame_mtu };
	struct eng_tx tx;
	struct vdev_sync sync;
	char gids[512];
	struct worker *w;
	struct vdev *v;
	bool restored;
	int id, ret;

	ret = vm_table_check(&d->vms, vc, d->cfg.control_socket, err, errlen);
	if (ret)
		return ret;
	id = vm_table_reserve(&d->vms, vc, runtime);
	if (id < 0) {
		snprintf(err, errlen, "no free VM slot");
		return id;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto unreserve;
	}
	w = worker_of_vm(d->workers, d->n_workers, id);
	worker_vdev_hooks(w, &tx, &sync);
	memcpy(port.mac, d->port.mac, sizeof(port.mac));
	port.cc.ecn = d->cfg.ecn;
	port.cc.cnp_interval_ns = d->cfg.cnp_interval_us * 1000ull;
	ret = vdev_init(v, &d->vms.vms[id].cfg, id, &port, &tx, &sync);
	if (ret) {
		snprintf(err, errlen, "cannot create its device: %s", strerror(-ret));
		goto free_vdev;
	}
	/* The last vrdmad's device, if it left one for us. */
	snprintf(d->vms.vms[id].start, sizeof(d->vms.vms[id].start), "new");
	restored = !runtime && restart_restore_vm(d, &d->vms.vms[id], v, w);
	/* Connections are accepted on this thread, so none before we return;
	 * the workers see the device once change_table() publishes it. */
	d->vms.vms[id].dev = v;
	ret = vm_server_listen(d, id, err, errlen);
	if (!ret && restored) {
		ret = vm_server_adopt(d, id, err, errlen);
		if (ret)
			vm_server_unlisten(d, id, "its connection could not be watched");
	}
	if (ret)
		goto free_device;
	ret = change_table(d, id, v, true, err, errlen);
	if (ret) {
		vm_admin_remove(d, &d->vms.vms[id], "its GIDs could not be served");
		return ret;
	}
	join_gids(vc, gids, sizeof(gids));
	log_info("vm %s: added%s: GIDs %s, socket %s%s", vc->name, runtime ? " by vrdmactl" : "",
		 gids, vc->socket, restored ? ", connected as before the restart" : "");
	return 0;

free_device:
	if (v->vu.fd >= 0)	/* restored, never served */
		close(v->vu.fd);
	vdev_free(v);
free_vdev:
	free(v);
unreserve:
	vm_table_remove(&d->vms, id);	/* never published: the workers never saw it */
	return ret;
}

void vm_admin_remove(struct vrdmad *d, struct vm *vm, const char *why)
{
	uint32_t id = vm->id;
	struct vdev *v = vm->dev;
	char name[sizeof(vm->cfg.name)], err[256];

	snprintf(name, sizeof(name), "%s", vm->cfg.name);
	vm_server_unlisten(d, id, why);
	/* frees the device and clears the record */
	if (change_table(d, id, v, false, err, sizeof(err)))
		log_err("vm %s: %s", name, err);
	free(v);
	log_info("vm %s: removed (%s)", name, why);
}

void vm_admin_reload(struct vrdmad *d, const struct vrdma_config *next,
		     struct vm_reload_result *res)
{
	const struct vrdma_vm_config *nc;
	bool *recreate;
	char err[512];
	struct vm *vm;
	unsigned int i;

	memset(res, 0, sizeof(*res));
	recreate = calloc(next->n_vms + 1, sizeof(*recreate));
	if (!recreate) {
		log_err("reload: out of memory; nothing changed");
		res->failed++;
		return;
	}
	/* Gone or changed first: they free names, GIDs and sockets. */
	vm_table_for_each(&d->vms, vm) {
		if (vm->runtime)
			continue;
		for (nc = NULL, i = 0; i < next->n_vms; i++)
			if (!strcmp(next->vms[i].name, vm->cfg.name)) {
				nc = &next->vms[i];
				break;
			}
		if (nc && vrdma_vm_config_equal(nc, &vm->cfg)) {
			res->kept++;
			continue;
		}
		vm_admin_remove(d, vm, nc ? "its configuration changed" :
			       "it is no longer in the configuration");
		if (nc)
			recreate[i] = true;
		else
			res->removed++;
	}
	for (i = 0; i < next->n_vms; i++) {
		nc = &next->vms[i];
		vm = vm_table_find_name(&d->vms, nc->name);
		if (vm && vm->runtime) {
			log_err("reload: vm %s: a VM of that name was added by vrdmactl; "
				"the file's is not served (del-vm it, then reload)", nc->name);
			res->failed++;
			continue;
		}
		if (vm)
			continue;	/* kept */
		if (vm_admin_add(d, nc, false, err, sizeof(err))) {
			log_err("reload: vm %s: %s", nc->name, err);
			res->failed++;
			continue;
		}
		if (recreate[i])
			res->changed++;
		else
			res->added++;
	}
	free(recreate);
}
