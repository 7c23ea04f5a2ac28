// SPDX-License-Identifier: GPL-2.0-only
/*
 * syscount.so: an LD_PRELOAD shim that counts the system calls a verbs
 * program makes on its RDMA file descriptors (/dev/infiniband/uverbsN and
 * the completion channels, anon_inode:[infinibandevent]): libibverbs sends
 * uverbs commands as ioctl()s (the legacy ones as write()s), and reads
 * completion events with read(). /proc/PID/io counts none of them, strace
 * slows a TCG guest too much to measure under load. At exit it appends one
 * line to $SYSCOUNT_OUT:
 *
 *   syscount: pid=PID comm=NAME ioctl=N write=N read=N
 *
 * Built on the host (the Makefile's build/syscount.so) and run in the test
 * guests from their 9p share (tests/vm/perf.sh); issue 30 counts the system
 * calls per post and per poll with it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define MAX_FD 4096

static int (*real_ioctl)(int, unsigned long, ...);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_close)(int);
static atomic_ulong n_ioctl, n_write, n_read;
/* per fd: 0 not looked at since it was opened, 1 RDMA, 2 something else */
static _Atomic unsigned char kind[MAX_FD];

__attribute__((constructor)) static void syscount_init(void)
{
	real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	real_read = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	if (!real_ioctl || !real_write || !real_read || !real_close)
		abort();	/* a count that silently misses calls is worse */
}

static int fd_kind(int fd)
{
	char path[64], link[128];
	ssize_t n;
	int k;

	if (fd >= 0 && fd < MAX_FD && (k = atomic_load(&kind[fd])))
		return k;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	k = strstr(link, "infiniband") ? 1 : 2;
	if (fd >= 0 && fd < MAX_FD)
		atomic_store(&kind[fd], (unsigned char)k);
	return k;
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real_ioctl)
		syscount_init();
	if (fd_kind(fd) == 1)
		atomic_fetch_add(&n_ioctl, 1);
	return real_ioctl(fd, req, arg);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	if (!real_write)
		syscount_init();
	if (fd_kind(fd) == 1)
		atomic_fetch_add(&n_write, 1);
	return real_write(fd, buf, len);
}

ssize_t read(int fd, void *buf, size_t len)
{
	if (!real_read)
		syscount_init();
	if (fd_kind(fd) == 1)
		atomic_fetch_add(&n_read, 1);
	return real_read(fd, buf, len);
}

/* A number reused for another file is looked at again. */
int close(int fd)
{
	if (!real_close)
		syscount_init();
	if (fd >= 0 && fd < MAX_FD)
		atomic_store(&kind[fd], 0);
	return real_close(fd);
}

__attribute__((destructor)) static void syscount_report(void)
{
	const char *out = getenv("SYSCOUNT_OUT");
	char comm[32] = "?", line[256];
	FILE *f;
	int fd, len;

	f = fopen("/proc/self/comm", "r");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	len = snprintf(line, sizeof(line), "syscount: pid=%d comm=%s ioctl=%lu write=%lu read=%lu\n",
		       getpid(), comm, atomic_load(&n_ioctl), atomic_load(&n_write),
		       atomic_load(&n_read));
	fd = out ? open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 2;
	if (fd < 0)
		return;
	if (real_write(fd, line, (size_t)len) < 0) {
		/* nothing to tell it to */
	}
	if (fd != 2)
		real_close(fd);
}
