// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "unix_path.h"

int unix_path_mkparent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) == 0)
		return 1;
	return errno == EEXIST ? 0 : -errno;
}

int unix_path_claim(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, live;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* EAGAIN: a listener whose backlog is full is alive all the same. */
	live = !connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || errno == EAGAIN;
	close(fd);
	if (live)
		return -EADDRINUSE;
	return unlink(path) < 0 ? -errno : 0;
}

int unix_path_set_perms(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	char proc[32];
	struct stat st;
	int fd, ret = 0;

	/* O_PATH|O_NOFOLLOW: a symlink put in its place is opened as itself,
	 * and every change below goes through this fd, never the name again. */
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto close_fd;
	}
	if (S_ISLNK(st.st_mode))
		ret = -ELOOP;
	else if (!S_ISSOCK(st.st_mode))
		ret = -ENOTSOCK;
	else if (st.st_uid != geteuid())
		ret = -ESTALE;	/* another's socket, put there after bind */
	if (ret)
		goto close_fd;
	/* chmod of the fd's /proc link changes the socket's inode (fchmod on
	 * an O_PATH fd is EBADF); done first: once it is another's, only
	 * CAP_FOWNER could. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (chmod(proc, mode) < 0 ||
	    ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0))
		ret = -errno;
close_fd:
	close(fd);
	return ret;
}
