// SPDX-License-Identifier: GPL-2.0-only
/*
 * Restarts that keep every VM's RDMA state (docs/restart.md, level 2).
 *
 * At SIGTERM, under a service manager: the devices are frozen (the workers,
 * quiesced, let go of them: nothing changes them after their state is
 * taken), then each VM's fds go to systemd's store by name, and its state
 * last, in a sealed memfd, so that a VM whose state is in the store was
 * saved whole. vrdmad then exits; systemd keeps the fds, so QEMU sees no
 * disconnect.
 *
 * At start: each VM of the file looks for its state; one that checks out
 * rebuilds its device, connected as it was; anything else starts it afresh
 * (its connection closed: QEMU reconnects, the guest recovers: level 1).
 * Then the store is emptied: a state holds only for the start right after
 * the stop that wrote it, never for a later crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "restart.h"

#define STATE_SEALS	(F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

struct vm_fds {
	struct vrdmad *d;
	const char *vm;
	unsigned int kept;
};

static void fd_name(char *buf, size_t len, const char *vm, enum vdev_fd_kind kind, unsigned int i)
{
	static const char *const kinds[] = {
		[VDEV_FD_CONN] = "conn", [VDEV_FD_MEM] = "mem", [VDEV_FD_KICK] = "kick",
		[VDEV_FD_CALL] = "call", [VDEV_FD_ERR] = "err",
	};

	if (kind == VDEV_FD_CONN)
		snprintf(buf, len, "vm.%s.conn", vm);
	else
		snprintf(buf, len, "vm.%s.%s.%u", vm, kinds[kind], i);
}

static int take_named(void *ctx, enum vdev_fd_kind kind, unsigned int i)
{
	struct vm_fds *c = ctx;
	char name[FDSTORE_NAME_MAX + 1];

	fd_name(name, sizeof(name), c->vm, kind, i);
	return fdstore_take(&c->d->fds, name);
}

static int keep_named(void *ctx, enum vdev_fd_kind kind, unsigned int i, int fd)
{
	struct vm_fds *c = ctx;
	char name[FDSTORE_NAME_MAX + 1];
	const char *had;
	int err;

	fd_name(name, sizeof(name), c->vm, kind, i);
	err = fdstore_put(&c->d->fds, name, fd, &had);
	if (err == -EEXIST)
		log_warn("vm %s: %s is in the store already as %s", c->vm, name, had);
	else if (!err)
		c->kept++;
	return err;
}

void restart_load(struct vrdmad *d)
{
	int n = fdstore_load(&d->fds);

	if (n < 0)
		log_warn("cannot read the fds the service manager handed over: %s", strerror(-n));
	else if (d->fds.n)
		log_info("%u fd(s) handed over by the service manager", d->fds.n);
}

bool restart_restore_vm(struct vrdmad *d, struct vm *vm, struct vdev *v, struct worker *w)
{
	struct vm_fds c = { d, vm->cfg.name, 0 };
	char name[FDSTORE_NAME_MAX + 1], why[256];
	struct vdev_state_info info;
	struct stat st;
	void *p = MAP_FAILED;
	int fd, seals, err;
	uint64_t now;

	snprintf(name, sizeof(name), "vm.%s.state", vm->cfg.name);
	fd = fdstore_take(&d->fds, name);
	if (fd < 0)
		return false;	/* fds kept without a state are closed by restart_settle */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & STATE_SEALS) != STATE_SEALS) {
		snprintf(why, sizeof(why), "its state was not sealed (vrdmad died while saving it)");
		err = -EBADMSG;
	} else if (fstat(fd, &st) || st.st_size <= 0 || st.st_size > (1ll << 34)) {
		snprintf(why, sizeof(why), "its state has no size");
		err = -EBADMSG;
	} else {
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			err = -errno;
			snprintf(why, sizeof(why), "cannot map its state: %s", strerror(errno));
		} else {
			worker_quiesce(w);	/* the engine reads the worker's clock */
			err = vdev_restore(v, p, (size_t)st.st_size, take_named, &c, &info, why,
					   sizeof(why));
			worker_resume(w);
			munmap(p, (size_t)st.st_size);
		}
	}
	close(fd);
	if (err) {
		log_warn("vm %s: its saved state is not used: %s; it starts afresh (the VM "
			 "reconnects)", vm->cfg.name, why);
		snprintf(vm->start, sizeof(vm->start), "new: saved state not used: %s", why);
		return false;
	}
	now = mono_ns();
	vm->gap_ns = now - info.saved_ns;
	log_info("vm %s: restored as %s left it %.1f ms ago", vm->cfg.name, info.writer,
		 vm->gap_ns / 1e6);
	/* how much of the gap was this vrdmad's own start, and how much the
	 * last one's exit and the service manager's */
	snprintf(vm->start, sizeof(vm->start), "restored, %.1f ms after %s saved it, %.1f ms "
		 "after this vrdmad started", vm->gap_ns / 1e6, info.writer,
		 (now - d->start_ns) / 1e6);
	return true;
}

void restart_settle(struct vrdmad *d)
{
	unsigned int n = fdstore_clear(&d->fds);

	if (n)
		log_info("closed %u fd(s) of the last vrdmad that no VM took up", n);
}

/* The state in a sealed memfd, stored last. */
static int store_state(struct vrdmad *d, const char *vm, const struct sbuf *b)
{
	char name[FDSTORE_NAME_MAX + 1];
	size_t off = 0;
	ssize_t n;
	int fd, err = 0;

	snprintf(name, sizeof(name), "vm.%s.state", vm);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	while (off < b->len && !err) {
		n = write(fd, b->p + off, b->len - off);
		if (n < 0 && errno != EINTR)
			err = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	if (!err && fcntl(fd, F_ADD_SEALS, STATE_SEALS))
		err = -errno;
	if (!err)
		err = fdstore_put(&d->fds, name, fd, NULL);
	close(fd);
	return err;
}

static void save_vm(struct vrdmad *d, struct vm *vm, unsigned int *saved)
{
	struct vdev_state_info info = { .saved_ns = mono_ns() };
	struct vm_fds c = { d, vm->cfg.name, 0 };
	struct sbuf b = { 0 };
	int err;

	snprintf(info.writer, sizeof(info.writer), "vrdmad %s", VRDMAD_VERSION);
	err = vdev_save(vm->dev, &info, &b, keep_named, &c);
	if (err == -ENOTCONN) {
		sb_free(&b);
		return;		/* no connection: nothing to keep */
	}
	if (!err)
		err = store_state(d, vm->cfg.name, &b);
	if (err)
		log_warn("vm %s: not saved for the next vrdmad (%s): it will reconnect",
			 vm->cfg.name, strerror(-err));
	else
		(*saved)++;
	log_debug("vm %s: state %zu bytes, %u fd(s) kept", vm->cfg.name, b.len, c.kept);
	sb_free(&b);
}

void restart_save(struct vrdmad *d)
{
	unsigned int saved = 0, n = 0;
	uint64_t t0;
	struct vm *vm;

	if (!getenv("NOTIFY_SOCKET"))
		return;		/* no service manager: no store */
	t0 = mono_ns();
	/* Frozen first: from here on no worker changes a device. */
	workers_quiesce(d->workers, d->n_workers);
	vm_table_for_each(&d->vms, vm)
		if (vm->dev) {
			worker_disown(worker_of_vm(d->workers, d->n_workers, vm->id), vm->dev);
			vm->dev->frozen = true;
		}
	workers_resume(d->workers, d->n_workers);
	vm_table_for_each(&d->vms, vm)
		if (vm->dev && !vm->runtime) {
			n++;
			save_vm(d, vm, &saved);
		}
	log_info("saved %u of %u VM(s) for the next vrdmad in %.1f ms", saved, n,
		 (mono_ns() - t0) / 1e6);
}
