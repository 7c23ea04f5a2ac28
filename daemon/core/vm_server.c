// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "unix_path.h"
#include "vm_server.h"

struct vm_conn {
	struct vrdmad *d;
	uint32_t vm_id;
	int listen_fd;
	sd_event_source *listen_src;
	sd_event_source *conn_src;
	uint64_t connections;
};

static struct vdev *dev_of(struct vm_conn *c)
{
	return c->d->vms.vms[c->vm_id].dev;
}

static struct worker *worker_of(struct vm_conn *c)
{
	return worker_of_vm(c->d->workers, c->d->n_workers, c->vm_id);
}

static void drop_connection(struct vm_conn *c, const char *why)
{
	struct vdev *v = dev_of(c);
	struct worker *w = worker_of(c);
	int fd = v->vu.fd;

	if (fd < 0)
		return;
	log_info("vm %s: vhost-user connection closed (%s)", v->cfg->name, why);
	c->conn_src = sd_event_source_disable_unref(c->conn_src);
	worker_quiesce(w);
	vu_dev_disconnect(&v->vu);
	v->vu.fd = -1;
	worker_resume(w);
	close(fd);
}

static int on_message(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_conn *c = userdata;
	struct vdev *v = dev_of(c);
	struct vhost_user_msg msg;
	int fds[VHOST_USER_MAX_FDS];
	unsigned int nfds;
	int err, budget = 64;

	(void)s;
	(void)revents;
	while (budget--) {
		err = vu_recv(fd, &msg, fds, &nfds);
		if (err == -EAGAIN)
			return 0;
		if (err == -ECONNRESET) {
			drop_connection(c, "the front-end closed it");
			return 0;
		}
		if (err) {
			v->vu.bad_messages++;
			log_ratelimited(VRDMA_LOG_WARNING, "vm %s: vhost-user: malformed message: %s",
					v->cfg->name, strerror(-err));
			drop_connection(c, "malformed message");
			return 0;
		}
		log_debug("vm %s: vhost-user %s", v->cfg->name, vu_request_name(msg.hdr.request));
		err = vu_dispatch(&v->vu, &msg, fds, nfds);
		if (err) {
			drop_connection(c, v->vu.last_error[0] ? v->vu.last_error : strerror(-err));
			return 0;
		}
	}
	return 0;	/* more later: let other sources run */
}

static int on_connect(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_conn *c = userdata;
	struct vdev *v = dev_of(c);
	struct worker *w = worker_of(c);
	int conn, err;

	(void)s;
	(void)revents;
	conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (conn < 0)
		return 0;
	if (v->vu.fd >= 0) {
		log_ratelimited(VRDMA_LOG_WARNING,
				"vm %s: refused a second vhost-user connection (one is active)",
				v->cfg->name);
		close(conn);
		return 0;
	}
	err = sd_event_add_io(c->d->event, &c->conn_src, conn, EPOLLIN, on_message, c);
	if (err < 0) {
		log_err("vm %s: cannot watch the connection: %s", v->cfg->name, strerror(-err));
		close(conn);
		return 0;
	}
	worker_quiesce(w);
	v->vu.fd = conn;
	worker_resume(w);
	c->connections++;
	log_info("vm %s: vhost-user front-end connected", v->cfg->name);
	return 0;
}

static int on_broken(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vrdmad *d = userdata;
	struct vm *vm;
	uint64_t v;

	(void)s;
	(void)revents;
	if (read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing new */
	}
	vm_table_for_each(&d->vms, vm)
		if (vm->dev && vm->conn && __atomic_load_n(&vm->dev->broken, __ATOMIC_RELAXED))
			drop_connection(vm->conn, "device broken");
	return 0;
}

/* user/group: a name or a number; -1 for "leave as is". */
static int lookup_ids(const struct vrdma_vm_config *vc, uid_t *uid, gid_t *gid)
{
	char *end;

	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (vc->socket_owner[0]) {
		struct passwd *pw = getpwnam(vc->socket_owner);
		unsigned long n = strtoul(vc->socket_owner, &end, 10);

		if (pw)
			*uid = pw->pw_uid;
		else if (!*end)
			*uid = (uid_t)n;
		else
			return -ENOENT;
	}
	if (vc->socket_group[0]) {
		struct group *gr = getgrnam(vc->socket_group);
		unsigned long n = strtoul(vc->socket_group, &end, 10);

		if (gr)
			*gid = gr->gr_gid;
		else if (!*end)
			*gid = (gid_t)n;
		else
			return -ENOENT;
	}
	return 0;
}

static int open_listener(struct vm_conn *c, const struct vrdma_vm_config *vc, char *err,
			 size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	mode_t old_umask;
	uid_t uid;
	gid_t gid;
	int fd, ret;

	if (lookup_ids(vc, &uid, &gid)) {
		snprintf(err, errlen, "socket_owner '%s' or socket_group '%s' does not exist",
			 vc->socket_owner, vc->socket_group);
		return -ENOENT;
	}
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", vc->socket);
	/* /run/vrdmad when systemd did not make it (RuntimeDirectory=); a
	 * failure shows as bind's */
	if (unix_path_mkparent(vc->socket) == 1)
		log_info("created the directory of %s", vc->socket);
	/* A socket left by a previous run is ours to replace; one a live
	 * process listens on, or anything that is not a socket, is not. */
	ret = unix_path_claim(vc->socket);
	if (ret == -EEXIST)
		snprintf(err, errlen, "%s exists and is not a socket; remove it or choose "
			 "another socket path", vc->socket);
	else if (ret == -EADDRINUSE)
		snprintf(err, errlen, "socket %s is in use: a process listens on it", vc->socket);
	else if (ret)
		snprintf(err, errlen, "cannot replace %s: %s", vc->socket, strerror(-ret));
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	old_umask = umask(0177);	/* born 0600, then opened up to socket_mode */
	ret = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	umask(old_umask);
	if (ret || listen(fd, 4)) {
		ret = ret ? ret : -errno;
		snprintf(err, errlen, "cannot listen on %s: %s (does its directory exist?)",
			 vc->socket, strerror(-ret));
		goto close_fd;
	}
	ret = unix_path_set_perms(vc->socket, vc->socket_mode, uid, gid);
	if (ret == -ELOOP || ret == -ENOTSOCK || ret == -ESTALE) {
		/* someone who can write to its directory replaced it after
		 * bind: what is there now is not ours to remove */
		snprintf(err, errlen, "%s was replaced by %s after vrdmad bound it; its owner "
			 "and mode were not set (who else can write to its directory?)",
			 vc->socket, ret == -ELOOP ? "a symlink" :
			 ret == -ENOTSOCK ? "something that is not a socket" : "another's socket");
		goto close_fd;
	}
	if (ret) {
		snprintf(err, errlen, "cannot set the owner or mode of %s: %s", vc->socket,
			 strerror(-ret));
		goto unlink_socket;
	}
	ret = sd_event_add_io(c->d->event, &c->listen_src, fd, EPOLLIN, on_connect, c);
	if (ret < 0) {
		snprintf(err, errlen, "cannot watch %s: %s", vc->socket, strerror(-ret));
		goto unlink_socket;
	}
	c->listen_fd = fd;
	return 0;

unlink_socket:
	unlink(vc->socket);
close_fd:
	close(fd);
	return ret;
}

int vm_server_listen(struct vrdmad *d, uint32_t id, char *err, size_t errlen)
{
	struct vm *vm = &d->vms.vms[id];
	struct vm_conn *c = calloc(1, sizeof(*c));
	int ret;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->d = d;
	c->vm_id = id;
	c->listen_fd = -1;
	ret = open_listener(c, &vm->cfg, err, errlen);
	if (ret) {
		free(c);
		return ret;
	}
	vm->conn = c;
	return 0;
}

int vm_server_adopt(struct vrdmad *d, uint32_t id, char *err, size_t errlen)
{
	struct vm_conn *c = d->vms.vms[id].conn;
	int fd = d->vms.vms[id].dev->vu.fd, ret;

	ret = sd_event_add_io(d->event, &c->conn_src, fd, EPOLLIN, on_message, c);
	if (ret < 0) {
		snprintf(err, errlen, "cannot watch its connection: %s", strerror(-ret));
		return ret;
	}
	c->connections++;
	return 0;
}

void vm_server_unlisten(struct vrdmad *d, uint32_t id, const char *why)
{
	struct vm *vm = &d->vms.vms[id];
	struct vm_conn *c = vm->conn;

	if (!c)
		return;
	if (vm->dev)
		drop_connection(c, why);
	c->listen_src = sd_event_source_disable_unref(c->listen_src);
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		unlink(vm->cfg.socket);
	}
	free(c);
	vm->conn = NULL;
}

int vm_server_watch_broken(struct vrdmad *d)
{
	int err;

	d->broken_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->broken_fd < 0)
		return -errno;
	err = sd_event_add_io(d->event, &d->broken_src, d->broken_fd, EPOLLIN, on_broken, d);
	if (err < 0) {
		close(d->broken_fd);
		d->broken_fd = -1;
	}
	return err < 0 ? err : 0;
}

void vm_server_unwatch_broken(struct vrdmad *d)
{
	d->broken_src = sd_event_source_disable_unref(d->broken_src);
	if (d->broken_fd >= 0)
		close(d->broken_fd);
	d->broken_fd = -1;
}
