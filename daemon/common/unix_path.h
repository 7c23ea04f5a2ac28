/* SPDX-License-Identifier: GPL-2.0-only */
/* The paths of the UNIX sockets vrdmad listens on (control socket, VMs'
 * vhost-user sockets): their directory, and a file left in the way. */
#ifndef VRDMAD_UNIX_PATH_H
#define VRDMAD_UNIX_PATH_H

#include <sys/types.h>

/* Make path's directory if it is missing, one level only, so that a
 * mistyped path still fails loudly: 1 made, 0 there already, or -errno. */
int unix_path_mkparent(const char *path);
/* Clear path for bind(): 0 when nothing is there or a socket nobody listens
 * on (left by a process that died) was removed; -EEXIST when it is not a
 * socket, -EADDRINUSE when a live process listens on it, else -errno. */
int unix_path_claim(const char *path);
/* Give the socket just bound at path its mode, and its owner and group
 * unless (uid_t)-1 / (gid_t)-1, never following a symlink: whoever can
 * write to the directory could swap the name for one after bind. -ELOOP
 * for a symlink, -ENOTSOCK for anything else that is not a socket, -ESTALE
 * for a socket that is not ours; else 0 or -errno. */
int unix_path_set_perms(const char *path, mode_t mode, uid_t uid, gid_t gid);

#endif
