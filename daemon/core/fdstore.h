/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * systemd's file descriptor store (sd_notify FDSTORE=1, systemd 252+): the
 * file descriptors a restart of the service keeps, each under a name. What
 * vrdmad keeps there for a VM (its vhost-user connection, guest memory, the
 * virtqueues' eventfds, its saved state) comes back, by name, to the next
 * vrdmad (issue 29, level 2). Control thread.
 *
 * Pitfalls of the store on systemd 252 this handles: the same open file
 * stored under a second name is dropped without a word (so a file is
 * stored once and its first name kept: fdstore_put says -EEXIST and which
 * name), the order of the fds at start is arbitrary (they are found by
 * name), and fds nobody takes at start would stay in the store for ever
 * (fdstore_drop_rest closes and removes them).
 */
#ifndef VRDMAD_FDSTORE_H
#define VRDMAD_FDSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* systemd's limit on FDNAME= (fdname_is_valid) */
#define FDSTORE_NAME_MAX	255

/* One file the store holds: its name, and (dev, ino) to know it again. */
struct fdstore_entry {
	char name[FDSTORE_NAME_MAX + 1];
	dev_t dev;
	ino_t ino;
	int fd;			/* handed over at start and not taken yet; else -1 */
};

struct fdstore {
	struct fdstore_entry *e;
	unsigned int n, cap;
};

/* A name systemd takes: 1..255 printable ASCII characters, no ':'. */
bool fdstore_name_ok(const char *name);

/* The fds the service manager handed over (LISTEN_FDS, LISTEN_FDNAMES),
 * into s, which starts empty. 0 or a negative errno. */
int fdstore_load(struct fdstore *s);
/* The same from n fds starting at first, named by names[0..n) (NULL, or a
 * NULL or empty name: "stored", as systemd calls an unnamed fd). */
int fdstore_load_from(struct fdstore *s, int first, unsigned int n, char *const *names);

/* The fd handed over under name, now the caller's; -ENOENT if none. */
int fdstore_take(struct fdstore *s, const char *name);

/* Keep fd in the store under name. 0 (also when no service manager
 * listens: then nothing is kept), -EINVAL for a bad name, -EEXIST if the
 * store holds that name or that file already (*had names it), or a
 * negative errno from sending. */
int fdstore_put(struct fdstore *s, const char *name, int fd, const char **had);

/* The store lets go of name (FDSTOREREMOVE=1); 0 or a negative errno. */
int fdstore_remove(struct fdstore *s, const char *name);

/* Close the fds handed over that nobody took, and remove them from the
 * store; returns how many. */
unsigned int fdstore_drop_rest(struct fdstore *s);

/* The store lets go of every name (fdstore_drop_rest, then the names of
 * the fds taken and put); returns how many fds nobody took. */
unsigned int fdstore_clear(struct fdstore *s);

void fdstore_free(struct fdstore *s);

#endif
