/* SPDX-License-Identifier: GPL-2.0-only */
/* The paths of the UNIX sockets vrdmad listens on (control socket, VMs'
 * vhost-user sockets): their directory, and a file left in the way. */
#ifndef VRDMAD_UNIX_PATH_H
#define VRDMAD_UNIX_PATH_H

/* Make path's directory if it is missing, one level only, so that a
 * mistyped path still fails loudly: 1 made, 0 there already, or -errno. */
int unix_path_mkparent(const char *path);
/* Clear path for bind(): 0 when nothing is there or a socket nobody listens
 * on (left by a process that died) was removed; -EEXIST when it is not a
 * socket, -EADDRINUSE when a live process listens on it, else -errno. */
int unix_path_claim(const char *path);

#endif
