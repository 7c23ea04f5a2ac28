// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/core/vm_server.c's socket setup: the owner and mode of a
 * VM's socket are set on the socket vrdmad bound, never through a symlink or
 * other file someone put at its path (issue 15). bind() is wrapped so that
 * the test can do what an attacker with write access to the socket's
 * directory does between bind and chmod.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "log.h"
#include "vm_server.h"

enum swap { SWAP_NONE, SWAP_SYMLINK, SWAP_FILE };

static enum swap swap_after_bind;
static char dir[] = "/tmp/test_vm_server.XXXXXX";
static char sock_path[64], target[64];

/* The daemon's bind(), then the swap the test asked for. */
int bind(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)addr.__sockaddr__;
	int ret = (int)syscall(SYS_bind, fd, addr.__sockaddr__, len);

	if (ret || un->sun_family != AF_UNIX || swap_after_bind == SWAP_NONE)
		return ret;
	assert_int_equal(unlink(un->sun_path), 0);
	if (swap_after_bind == SWAP_SYMLINK) {
		assert_int_equal(symlink(target, un->sun_path), 0);
	} else {
		assert_int_equal(close(open(un->sun_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
		assert_int_equal(chmod(un->sun_path, 0644), 0);	/* the daemon's umask */
	}
	return 0;
}

struct fx {
	struct vrdmad d;
	char err[256];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct vrdma_vm_config *vc;

	assert_non_null(f);
	assert_int_equal(vm_table_init(&f->d.vms), 0);
	assert_true(sd_event_new(&f->d.event) >= 0);
	vc = &f->d.vms.vms[0].cfg;
	snprintf(vc->name, sizeof(vc->name), "vm-a");
	snprintf(vc->socket, sizeof(vc->socket), "%s", sock_path);
	snprintf(vc->socket_owner, sizeof(vc->socket_owner), "nobody");
	snprintf(vc->socket_group, sizeof(vc->socket_group), "nogroup");
	vc->socket_mode = 0666;
	/* the attacker's file, which must keep its mode and owner */
	assert_int_equal(close(open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	assert_int_equal(chmod(target, 0600), 0);
	swap_after_bind = SWAP_NONE;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	vm_server_unlisten(&f->d, 0, "test over");
	sd_event_unref(f->d.event);
	vm_table_free(&f->d.vms);
	free(f);
	unlink(sock_path);
	unlink(target);
	return 0;
}

static void assert_target_untouched(void)
{
	struct stat st;

	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_gid, getegid());
}

/* The ordinary case: the socket gets its mode and owner. */
static void test_listen(void **state)
{
	struct fx *f = *state;
	struct stat st;

	assert_int_equal(vm_server_listen(&f->d, 0, f->err, sizeof(f->err)), 0);
	assert_int_equal(lstat(sock_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0666);
	if (geteuid() == 0) {
		assert_int_equal(st.st_uid, 65534);
		assert_int_equal(st.st_gid, 65534);
	}
}

/* A symlink swapped in after bind: refused, the link's target unchanged,
 * the link left (it is not ours to remove). */
static void test_symlink_after_bind(void **state)
{
	struct fx *f = *state;
	char got[128];
	ssize_t n;

	swap_after_bind = SWAP_SYMLINK;
	assert_int_equal(vm_server_listen(&f->d, 0, f->err, sizeof(f->err)), -ELOOP);
	assert_non_null(strstr(f->err, "was replaced by a symlink after vrdmad bound it"));
	assert_target_untouched();
	n = readlink(sock_path, got, sizeof(got) - 1);
	assert_true(n > 0);
	got[n] = '\0';
	assert_string_equal(got, target);
}

/* A regular file swapped in after bind: refused, left alone. */
static void test_file_after_bind(void **state)
{
	struct fx *f = *state;
	struct stat st;

	swap_after_bind = SWAP_FILE;
	assert_int_equal(vm_server_listen(&f->d, 0, f->err, sizeof(f->err)), -ENOTSOCK);
	assert_non_null(strstr(f->err, "was replaced by something that is not a socket"));
	assert_int_equal(lstat(sock_path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_uid, geteuid());
}

/* A symlink there before: never replaced, never followed. */
static void test_symlink_before(void **state)
{
	struct fx *f = *state;

	assert_int_equal(symlink(target, sock_path), 0);
	assert_int_equal(vm_server_listen(&f->d, 0, f->err, sizeof(f->err)), -EEXIST);
	assert_non_null(strstr(f->err, "exists and is not a socket"));
	assert_target_untouched();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_listen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_after_bind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_after_bind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_before, setup, teardown),
	};
	int ret;

	log_set_level(VRDMA_LOG_ERROR - 1);
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock_path, sizeof(sock_path), "%s/vm-a.sock", dir);
	snprintf(target, sizeof(target), "%s/victim", dir);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return ret;
}
