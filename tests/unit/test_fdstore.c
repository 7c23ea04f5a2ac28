// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/core/fdstore.c: what vrdmad tells the service
 * manager about the fds a restart keeps (issue 29, level 2). A datagram
 * socket of the test stands in for systemd's notify socket (NOTIFY_SOCKET)
 * and receives each message with the fds it carries.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdstore.h"

static char dir[] = "/tmp/test_fdstore.XXXXXX";
static char sock_path[64];
static int sock = -1;

static int setup(void **state)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(sock_path, sizeof(sock_path), "%s/notify", dir);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	setenv("NOTIFY_SOCKET", sock_path, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(sock);
	unlink(sock_path);
	rmdir(dir);
	strcpy(dir, "/tmp/test_fdstore.XXXXXX");
	return 0;
}

/* The next message on the notify socket into text, its fd (or -1) into
 * *fd; false if none is waiting. */
static bool recv_msg(char *text, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { text, len - 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return false;
	text[n] = 0;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			assert_int_equal(c->cmsg_len, CMSG_LEN(sizeof(int)));
			memcpy(fd, CMSG_DATA(c), sizeof(int));
		}
	return true;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

#define ANY_FD	(-2)

/* The next message is want, with an fd of the same file as like (ANY_FD:
 * any fd; -1: none), which is closed. */
static void expect_msg(const char *want, int like)
{
	char text[512];
	int got;

	assert_true(recv_msg(text, sizeof(text), &got));
	if (want)
		assert_string_equal(text, want);
	if (like == -1)
		assert_int_equal(got, -1);
	else
		assert_true(got >= 0 && (like == ANY_FD || same_file(got, like)));
	if (got >= 0)
		close(got);
}

/* No message is waiting. */
static void expect_none(void)
{
	char text[512];
	int got;

	assert_false(recv_msg(text, sizeof(text), &got));
}

/* 1: the names systemd takes */
static void test_names(void **state)
{
	char long_name[FDSTORE_NAME_MAX + 2];

	(void)state;
	assert_true(fdstore_name_ok("vm.alpha.conn"));
	assert_true(fdstore_name_ok("x"));
	memset(long_name, 'a', sizeof(long_name));
	long_name[FDSTORE_NAME_MAX] = 0;
	assert_true(fdstore_name_ok(long_name));
	long_name[FDSTORE_NAME_MAX] = 'a';
	long_name[FDSTORE_NAME_MAX + 1] = 0;
	assert_false(fdstore_name_ok(long_name));
	assert_false(fdstore_name_ok(""));
	assert_false(fdstore_name_ok("vm:alpha"));
	assert_false(fdstore_name_ok("vm alpha"));
	assert_false(fdstore_name_ok("vm\nalpha"));
	assert_false(fdstore_name_ok("vm.\xc3\xa9"));
}

/* 2: a put sends FDSTORE=1 with the name and the fd */
static void test_put_sends(void **state)
{
	struct fdstore s = { 0 };
	int mem = memfd_create("guest", MFD_CLOEXEC);

	(void)state;
	assert_true(mem >= 0);
	assert_int_equal(fdstore_put(&s, "vm.alpha.mem.0", mem, NULL), 0);
	expect_msg("FDSTORE=1\nFDNAME=vm.alpha.mem.0", mem);
	expect_none();
	assert_int_equal(s.n, 1);
	fdstore_free(&s);
	close(mem);
}

/* 3: one file under a second name (QEMU may send one memfd for two
 * regions) is not sent: systemd 252 would drop it without a word */
static void test_same_file_twice(void **state)
{
	struct fdstore s = { 0 };
	int mem = memfd_create("guest", MFD_CLOEXEC), again = dup(mem), ev;
	const char *had;

	(void)state;
	assert_int_equal(fdstore_put(&s, "vm.alpha.mem.0", mem, NULL), 0);
	expect_msg(NULL, mem);
	assert_int_equal(fdstore_put(&s, "vm.alpha.mem.1", again, &had), -EEXIST);
	assert_string_equal(had, "vm.alpha.mem.0");
	expect_none();
	/* and a name twice */
	ev = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(fdstore_put(&s, "vm.alpha.mem.0", ev, &had), -EEXIST);
	expect_none();
	fdstore_free(&s);
	close(ev);
	close(mem);
	close(again);
}

/* 4: eventfds share one anonymous inode; two of them are two files */
static void test_eventfds(void **state)
{
	struct fdstore s = { 0 };
	int a = eventfd(0, EFD_CLOEXEC), b = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_int_equal(fdstore_put(&s, "vm.alpha.kick.0", a, NULL), 0);
	assert_int_equal(fdstore_put(&s, "vm.alpha.kick.1", b, NULL), 0);
	expect_msg("FDSTORE=1\nFDNAME=vm.alpha.kick.0", a);
	expect_msg("FDSTORE=1\nFDNAME=vm.alpha.kick.1", b);
	fdstore_free(&s);
	close(a);
	close(b);
}

/* 5: bad names are refused before anything is sent */
static void test_bad_name(void **state)
{
	struct fdstore s = { 0 };
	int a = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_int_equal(fdstore_put(&s, "vm:alpha", a, NULL), -EINVAL);
	assert_int_equal(fdstore_put(&s, "", a, NULL), -EINVAL);
	assert_int_equal(fdstore_put(&s, "vm.alpha", -1, NULL), -EBADF);
	expect_none();
	assert_int_equal(s.n, 0);
	fdstore_free(&s);
	close(a);
}

/* 6: without a service manager nothing is kept, and that is no error */
static void test_no_manager(void **state)
{
	struct fdstore s = { 0 };
	int a = eventfd(0, EFD_CLOEXEC);

	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(fdstore_put(&s, "vm.alpha.kick.0", a, NULL), 0);
	assert_int_equal(s.n, 0);
	setenv("NOTIFY_SOCKET", sock_path, 1);
	fdstore_free(&s);
	close(a);
}

/* 7: fds handed over at start are found by name, once; those nobody
 * takes are closed and removed from the store */
static void test_load_take_drop(void **state)
{
	struct fdstore s = { 0 };
	char *names[] = { "vm.alpha.conn", "vm.alpha.mem.0", "vm.beta.conn" };
	int mem = memfd_create("guest", MFD_CLOEXEC), a = eventfd(0, EFD_CLOEXEC), fd;
	const char *had;

	(void)state;
	/* three fds in a row, as systemd passes them from fd 3 */
	assert_int_equal(dup2(a, 500), 500);
	assert_int_equal(dup2(mem, 501), 501);
	assert_int_equal(dup2(a, 502), 502);
	assert_int_equal(fdstore_load_from(&s, 500, 3, names), 0);
	assert_int_equal(s.n, 3);
	fd = fdstore_take(&s, "vm.alpha.mem.0");
	assert_int_equal(fd, 501);
	assert_int_equal(fdstore_take(&s, "vm.alpha.mem.0"), -ENOENT);
	assert_int_equal(fdstore_take(&s, "vm.gamma.conn"), -ENOENT);
	/* the store holds it still: not to be stored again under a new name */
	assert_int_equal(fdstore_put(&s, "vm.alpha.mem.9", mem, &had), -EEXIST);
	assert_string_equal(had, "vm.alpha.mem.0");
	assert_int_equal(fdstore_drop_rest(&s), 2);
	expect_msg("FDSTOREREMOVE=1\nFDNAME=vm.alpha.conn", -1);
	expect_msg("FDSTOREREMOVE=1\nFDNAME=vm.beta.conn", -1);
	expect_none();
	assert_int_equal(fcntl(500, F_GETFD), -1);
	assert_int_equal(fcntl(502, F_GETFD), -1);
	assert_true(fcntl(501, F_GETFD) >= 0);
	assert_int_equal(s.n, 1);
	close(fd);
	fdstore_free(&s);
	close(mem);
	close(a);
}

/* 8: an unnamed fd is "stored", as systemd names it */
static void test_load_unnamed(void **state)
{
	struct fdstore s = { 0 };
	char *names[] = { "vm.alpha.conn", "" };
	int a = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_int_equal(dup2(a, 510), 510);
	assert_int_equal(dup2(a, 511), 511);
	assert_int_equal(fdstore_load_from(&s, 510, 2, names), 0);
	assert_int_equal(fdstore_take(&s, "vm.alpha.conn"), 510);
	assert_int_equal(fdstore_take(&s, "stored"), 511);
	close(510);
	close(511);
	fdstore_free(&s);
	/* no names at all */
	assert_int_equal(dup2(a, 512), 512);
	assert_int_equal(fdstore_load_from(&s, 512, 1, NULL), 0);
	assert_int_equal(fdstore_take(&s, "stored"), 512);
	close(512);
	fdstore_free(&s);
	close(a);
}

/* 9: remove sends FDSTOREREMOVE=1 and forgets the name */
static void test_remove(void **state)
{
	struct fdstore s = { 0 };
	int a = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_int_equal(fdstore_put(&s, "vm.alpha.call.3", a, NULL), 0);
	expect_msg(NULL, a);
	assert_int_equal(fdstore_remove(&s, "vm.alpha.call.3"), 0);
	expect_msg("FDSTOREREMOVE=1\nFDNAME=vm.alpha.call.3", -1);
	assert_int_equal(fdstore_remove(&s, "vm.alpha.call.3"), -ENOENT);
	assert_int_equal(s.n, 0);
	/* the name is free again */
	assert_int_equal(fdstore_put(&s, "vm.alpha.call.3", a, NULL), 0);
	expect_msg(NULL, a);
	fdstore_free(&s);
	close(a);
}

/* 10: clear lets go of every name: those taken and put as well as those
 * nobody took (closed) */
static void test_clear(void **state)
{
	char *names[] = { "vm.alpha.conn", "vm.alpha.state" };
	struct fdstore s = { 0 };
	int a = eventfd(0, EFD_CLOEXEC), b = eventfd(0, EFD_CLOEXEC), fd;

	(void)state;
	assert_int_equal(dup2(a, 520), 520);
	assert_int_equal(dup2(a, 521), 521);
	assert_int_equal(fdstore_load_from(&s, 520, 2, names), 0);
	fd = fdstore_take(&s, "vm.alpha.conn");
	assert_int_equal(fd, 520);
	assert_int_equal(fdstore_put(&s, "vm.beta.kick.0", b, NULL), 0);
	expect_msg("FDSTORE=1\nFDNAME=vm.beta.kick.0", b);
	assert_int_equal(fdstore_clear(&s), 1);
	expect_msg("FDSTOREREMOVE=1\nFDNAME=vm.alpha.state", -1);
	expect_msg(NULL, -1);
	expect_msg(NULL, -1);
	expect_none();
	assert_int_equal(s.n, 0);
	assert_int_equal(fcntl(521, F_GETFD), -1);	/* nobody took it */
	assert_true(fcntl(520, F_GETFD) >= 0);		/* taken: ours */
	close(520);
	fdstore_free(&s);
	close(a);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_sends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_file_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eventfds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_manager, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_take_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_unnamed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clear, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
