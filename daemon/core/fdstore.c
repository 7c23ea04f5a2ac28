// SPDX-License-Identifier: GPL-2.0-only
/*
 * systemd's file descriptor store, by name (fdstore.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "fdstore.h"

bool fdstore_name_ok(const char *name)
{
	size_t i, n = strlen(name);

	if (!n || n > FDSTORE_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (name[i] < 0x21 || name[i] > 0x7e || name[i] == ':')
			return false;
	return true;
}

static struct fdstore_entry *find_name(struct fdstore *s, const char *name)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].name, name))
			return &s->e[i];
	return NULL;
}

static struct fdstore_entry *find_file(struct fdstore *s, const struct stat *st)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (s->e[i].dev == st->st_dev && s->e[i].ino == st->st_ino)
			return &s->e[i];
	return NULL;
}

/* A new entry at the end (s->n not yet counting it); NULL without memory. */
static struct fdstore_entry *grow(struct fdstore *s)
{
	struct fdstore_entry *e;
	unsigned int cap;

	if (s->n == s->cap) {
		cap = s->cap ? 2 * s->cap : 16;
		e = reallocarray(s->e, cap, sizeof(*e));
		if (!e)
			return NULL;
		s->e = e;
		s->cap = cap;
	}
	e = &s->e[s->n];
	memset(e, 0, sizeof(*e));
	e->fd = -1;
	return e;
}

/* Eventfds (and all anonymous inodes) share one inode: only files with
 * their own (memfds, sockets, regular files) can be told apart by it. */
static bool has_own_inode(const struct stat *st)
{
	return S_ISREG(st->st_mode) || S_ISSOCK(st->st_mode) || S_ISDIR(st->st_mode);
}

int fdstore_load_from(struct fdstore *s, int first, unsigned int n, char *const *names)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < n; i++) {
		struct fdstore_entry *e = grow(s);
		const char *name = names && names[i] && *names[i] ? names[i] : "stored";
		struct stat st;

		if (!e) {
			err = -ENOMEM;
			close(first + (int)i);
			continue;
		}
		/* systemd names an fd stored without a name "stored" */
		snprintf(e->name, sizeof(e->name), "%.*s", FDSTORE_NAME_MAX, name);
		e->fd = first + (int)i;
		if (!fstat(e->fd, &st) && has_own_inode(&st)) {
			e->dev = st.st_dev;
			e->ino = st.st_ino;
		}
		s->n++;
	}
	return err;
}

int fdstore_load(struct fdstore *s)
{
	char **names = NULL;
	int n, i, err;

	n = sd_listen_fds_with_names(1, &names);
	if (n <= 0)
		return n;
	err = fdstore_load_from(s, SD_LISTEN_FDS_START, (unsigned int)n, names);
	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

int fdstore_take(struct fdstore *s, const char *name)
{
	struct fdstore_entry *e = find_name(s, name);
	int fd;

	if (!e || e->fd < 0)
		return -ENOENT;
	fd = e->fd;
	e->fd = -1;
	return fd;
}

static int notify(const char *what, const char *name, const int *fd)
{
	char msg[sizeof("FDSTOREREMOVE=1\nFDNAME=") + FDSTORE_NAME_MAX];
	int r;

	snprintf(msg, sizeof(msg), "%s\nFDNAME=%s", what, name);
	r = sd_pid_notify_with_fds(0, 0, msg, fd, fd ? 1 : 0);
	return r < 0 ? r : r > 0;
}

int fdstore_put(struct fdstore *s, const char *name, int fd, const char **had)
{
	struct fdstore_entry *e, *same;
	struct stat st;
	int r;

	if (had)
		*had = NULL;
	if (!fdstore_name_ok(name))
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	same = find_name(s, name);
	if (!same && has_own_inode(&st))
		same = find_file(s, &st);
	if (same) {
		if (had)
			*had = same->name;
		return -EEXIST;
	}
	e = grow(s);
	if (!e)
		return -ENOMEM;
	r = notify("FDSTORE=1", name, &fd);
	if (r <= 0)
		return r;	/* no service manager (0) keeps nothing */
	snprintf(e->name, sizeof(e->name), "%s", name);
	if (has_own_inode(&st)) {
		e->dev = st.st_dev;
		e->ino = st.st_ino;
	}
	s->n++;
	return 0;
}

static void forget(struct fdstore *s, struct fdstore_entry *e)
{
	if (e->fd >= 0)
		close(e->fd);
	*e = s->e[--s->n];
}

int fdstore_remove(struct fdstore *s, const char *name)
{
	struct fdstore_entry *e = find_name(s, name);
	int r;

	if (!e)
		return -ENOENT;
	r = notify("FDSTOREREMOVE=1", name, NULL);
	if (r < 0)
		return r;
	forget(s, e);
	return 0;
}

unsigned int fdstore_drop_rest(struct fdstore *s)
{
	unsigned int i = 0, n = 0;

	while (i < s->n) {
		struct fdstore_entry *e = &s->e[i];

		if (e->fd < 0) {
			i++;
			continue;
		}
		notify("FDSTOREREMOVE=1", e->name, NULL);
		forget(s, e);	/* the last entry moved to i: look at it next */
		n++;
	}
	return n;
}

unsigned int fdstore_clear(struct fdstore *s)
{
	unsigned int n = fdstore_drop_rest(s);

	while (s->n) {
		notify("FDSTOREREMOVE=1", s->e[0].name, NULL);
		forget(s, &s->e[0]);
	}
	return n;
}

void fdstore_free(struct fdstore *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (s->e[i].fd >= 0)
			close(s->e[i].fd);
	free(s->e);
	*s = (struct fdstore){ 0 };
}
