// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests for daemon/common/config.c. */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

/* Where etc/vrdmad.conf lives; the Makefile passes the source tree. */
#ifndef VRDMA_SRCDIR
#define VRDMA_SRCDIR "."
#endif

#ifndef VRDMA_XDP_OBJECT_DEFAULT
#define VRDMA_XDP_OBJECT_DEFAULT "/usr/lib/vrdmad/vrdma_xdp.bpf.o"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static char err[VRDMA_CONF_ERR_MAX];

/* Parse text that must be valid. */
static void parse_ok(struct vrdma_config *cfg, const char *text)
{
	int ret = vrdma_config_parse_string(cfg, "t.conf", text, err,
					    sizeof(err));

	if (ret)
		print_error("unexpected error: %s\n", err);
	assert_int_equal(ret, 0);
}

static void assert_gid(const struct vrdma_gid *gid, const char *text)
{
	char buf[INET6_ADDRSTRLEN];

	vrdma_gid_format(gid, buf, sizeof(buf));
	assert_string_equal(buf, text);
}

/* ---- valid configs ---- */

static void test_full(void **state)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
	struct vrdma_config cfg;

	(void)state;
	parse_ok(&cfg,
		 "[daemon]\n"
		 "workers = 8\n"
		 "control_socket = /run/x/ctl.sock\n"
		 "log_level = debug\n"
		 "idle_spin_us = 200\n"
		 "worker_cpus = 1,3-5,8,10-12\n"
		 "[port]\n"
		 "interface = enp3s0f1\n"
		 "xdp_mode = native\n"
		 "zerocopy = off\n"
		 "multi_buffer = off\n"
		 "queues = 4\n"
		 "xdp_object = /opt/vrdma/xdp.o\n"
		 "ecn = off\n"
		 "cnp_interval_us = 1000000\n"
		 "tx_budget = 2048\n"
		 "[vm web-1.a_b]\n"
		 "socket = /run/x/web.sock\n"
		 "gid = 10.0.0.5, fd00::5\n"
		 "mac = 52:54:00:AB:cd:EF\n"
		 "max_cq = 251\n"
		 "max_qp = 2\n"
		 "max_mr = 65536\n"
		 "max_mr_pages = 1\n"
		 "ring_max_cq = 1\n"
		 "ring_max_qp = 16384\n"
		 "socket_owner = libvirt-qemu\n"
		 "socket_group = 64055\n"
		 "socket_mode = 0660\n");
	assert_string_equal(cfg.path, "t.conf");
	assert_int_equal(cfg.idle_spin_us, 200);
	{
		static const uint16_t cpus[] = { 1, 3, 4, 5, 8, 10, 11, 12 };

		assert_int_equal(cfg.n_worker_cpus, 8);
		assert_memory_equal(cfg.worker_cpus, cpus, sizeof(cpus));
	}
	assert_int_equal(cfg.vms[0].max_cq, 251);
	assert_int_equal(cfg.vms[0].max_qp, 2);
	assert_int_equal(cfg.vms[0].max_mr, 65536);
	assert_int_equal(cfg.vms[0].max_mr_pages, 1);
	assert_int_equal(cfg.vms[0].ring_max_cq, 1);
	assert_int_equal(cfg.vms[0].ring_max_qp, 16384);
	assert_string_equal(cfg.vms[0].socket_owner, "libvirt-qemu");
	assert_string_equal(cfg.vms[0].socket_group, "64055");
	assert_int_equal(cfg.vms[0].socket_mode, 0660);
	assert_int_equal(cfg.workers, 8);
	assert_string_equal(cfg.control_socket, "/run/x/ctl.sock");
	assert_int_equal(cfg.log_level, VRDMA_LOG_DEBUG);
	assert_string_equal(cfg.interface, "enp3s0f1");
	assert_int_equal(cfg.xdp_mode, VRDMA_XDP_NATIVE);
	assert_int_equal(cfg.zerocopy, VRDMA_ZC_OFF);
	assert_int_equal(cfg.multi_buffer, VRDMA_MB_OFF);
	assert_int_equal(cfg.queues, 4);
	assert_string_equal(cfg.xdp_object, "/opt/vrdma/xdp.o");
	assert_false(cfg.ecn);
	assert_int_equal(cfg.cnp_interval_us, 1000000);
	assert_int_equal(cfg.tx_budget, 2048);
	assert_int_equal(cfg.n_vms, 1);
	assert_string_equal(cfg.vms[0].name, "web-1.a_b");
	assert_string_equal(cfg.vms[0].socket, "/run/x/web.sock");
	assert_int_equal(cfg.vms[0].n_gids, 2);
	assert_gid(&cfg.vms[0].gids[0], "10.0.0.5");
	assert_gid(&cfg.vms[0].gids[1], "fd00::5");
	assert_true(cfg.vms[0].has_mac);
	assert_memory_equal(cfg.vms[0].mac, mac, 6);
	assert_int_equal(cfg.vms[0].line, 17);
	vrdma_config_free(&cfg);
	assert_null(cfg.vms);
	assert_int_equal(cfg.n_vms, 0);
}

static void test_defaults(void **state)
{
	struct vrdma_config cfg;

	(void)state;
	parse_ok(&cfg, "[port]\ninterface = eth0\n[vm a]\ngid = 10.0.0.1\n");
	assert_int_equal(cfg.workers, 1);
	assert_string_equal(cfg.control_socket, VRDMA_CONF_DEFAULT_CONTROL);
	assert_string_equal(cfg.control_socket, "/run/vrdmad/control.sock");
	assert_int_equal(cfg.log_level, VRDMA_LOG_INFO);
	assert_int_equal(cfg.xdp_mode, VRDMA_XDP_AUTO);
	assert_int_equal(cfg.zerocopy, VRDMA_ZC_AUTO);
	assert_int_equal(cfg.multi_buffer, VRDMA_MB_AUTO);
	assert_int_equal(cfg.queues, 0);
	assert_string_equal(cfg.xdp_object, VRDMA_XDP_OBJECT_DEFAULT);
	assert_true(cfg.ecn);
	assert_int_equal(cfg.cnp_interval_us, 50);
	assert_int_equal(cfg.tx_budget, 256);
	assert_int_equal(cfg.n_vms, 1);
	assert_string_equal(cfg.vms[0].socket, "/run/vrdmad/a.sock");
	assert_false(cfg.vms[0].has_mac);
	assert_int_equal(cfg.vms[0].line, 3);
	assert_int_equal(cfg.idle_spin_us, 50);
	assert_int_equal(cfg.n_worker_cpus, 0);
	assert_int_equal(cfg.vms[0].max_cq, 64);
	assert_int_equal(cfg.vms[0].max_qp, 64);
	assert_int_equal(cfg.vms[0].max_mr, 4096);
	assert_int_equal(cfg.vms[0].max_mr_pages, 1 << 21);
	assert_int_equal(cfg.vms[0].ring_max_cq, 4096);
	assert_int_equal(cfg.vms[0].ring_max_qp, 4096);
	assert_string_equal(cfg.vms[0].socket_owner, "");
	assert_string_equal(cfg.vms[0].socket_group, "");
	assert_int_equal(cfg.vms[0].socket_mode, 0600);
	vrdma_config_free(&cfg);

	/* no VMs at all is fine */
	parse_ok(&cfg, "[port]\ninterface=lo\n");
	assert_int_equal(cfg.n_vms, 0);
	vrdma_config_free(&cfg);
}

static void test_gid_v4_mapped(void **state)
{
	static const uint8_t want[16] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 7, 254,
	};
	struct vrdma_config cfg;

	(void)state;
	parse_ok(&cfg, "[port]\ninterface = eth0\n[vm a]\ngid = 192.168.7.254\n");
	assert_int_equal(cfg.vms[0].n_gids, 1);
	assert_memory_equal(cfg.vms[0].gids[0].raw, want, 16);
	assert_true(vrdma_gid_is_v4mapped(&cfg.vms[0].gids[0]));
	vrdma_config_free(&cfg);
}

static void test_gid_v6(void **state)
{
	static const uint8_t want[16] = {
		0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34,
	};
	struct vrdma_config cfg;

	(void)state;
	parse_ok(&cfg, "[port]\ninterface = eth0\n[vm a]\ngid=2001:DB8::1234\n");
	assert_memory_equal(cfg.vms[0].gids[0].raw, want, 16);
	assert_false(vrdma_gid_is_v4mapped(&cfg.vms[0].gids[0]));
	assert_gid(&cfg.vms[0].gids[0], "2001:db8::1234");
	vrdma_config_free(&cfg);
}

static void test_multiple_vms(void **state)
{
	struct vrdma_config cfg;

	(void)state;
	parse_ok(&cfg,
		 "[vm zeta]\n"
		 "gid = 10.0.0.1\n"
		 "[port]\n"
		 "interface = eth0\n"
		 "[vm alpha]\n"
		 "gid = 10.0.0.2 ,\t10.0.0.3 , fd00::1\n"
		 "[vm m]\n"
		 "mac = 02:00:00:00:00:01\n"
		 "gid = fd00::2\n"
		 "[daemon]\n"
		 "workers = 2\n");
	assert_int_equal(cfg.n_vms, 3);
	assert_string_equal(cfg.vms[0].name, "zeta");
	assert_string_equal(cfg.vms[1].name, "alpha");
	assert_string_equal(cfg.vms[2].name, "m");
	assert_int_equal(cfg.vms[0].line, 1);
	assert_int_equal(cfg.vms[1].line, 5);
	assert_int_equal(cfg.vms[2].line, 7);
	assert_int_equal(cfg.vms[1].n_gids, 3);
	assert_gid(&cfg.vms[1].gids[0], "10.0.0.2");
	assert_gid(&cfg.vms[1].gids[1], "10.0.0.3");
	assert_gid(&cfg.vms[1].gids[2], "fd00::1");
	assert_string_equal(cfg.vms[2].socket, "/run/vrdmad/m.sock");
	assert_true(cfg.vms[2].has_mac);
	assert_int_equal(cfg.workers, 2);
	vrdma_config_free(&cfg);
}

static void test_comments_bom_crlf(void **state)
{
	struct vrdma_config cfg;

	(void)state;
	parse_ok(&cfg,
		 "\xef\xbb\xbf# leading comment after a BOM\r\n"
		 "; semicolon comment\r\n"
		 "   # indented comment\r\n"
		 "\r\n"
		 "[daemon]   # inline after a header\r\n"
		 "  workers = 3   # inline hash\r\n"
		 "\tlog_level = warning ; inline semicolon\r\n"
		 "[port] ; inline\r\n"
		 "    interface = e#1\r\n"
		 "\r\n"
		 "[vm a]\r\n"
		 "\tgid = 10.0.0.1, 10.0.0.2 # two\r\n"
		 "\t  socket = /run/a#b.sock\r\n"
		 "mac = 52:54:00:00:00:01"); /* no final newline */
	assert_int_equal(cfg.workers, 3);
	assert_int_equal(cfg.log_level, VRDMA_LOG_WARNING);
	/* '#' not after whitespace is part of the value... */
	assert_string_equal(cfg.interface, "e#1");
	assert_string_equal(cfg.vms[0].socket, "/run/a#b.sock");
	assert_int_equal(cfg.vms[0].n_gids, 2);
	assert_true(cfg.vms[0].has_mac);
	vrdma_config_free(&cfg);
}

/* Mac with ";x" glued on is not a comment, so it is a bad MAC. */
static void test_glued_semicolon(void **state)
{
	struct vrdma_config cfg;
	int ret;

	(void)state;
	ret = vrdma_config_parse_string(&cfg, "t.conf",
					"[vm a]\nmac = 52:54:00:00:00:01;x\n",
					err, sizeof(err));
	assert_int_equal(ret, -EINVAL);
	assert_string_equal(err,
			    "t.conf:2: mac '52:54:00:00:00:01;x' is not a MAC address (like 52:54:00:12:34:56)");
}

/* Lines of exactly 199 characters pass, 200 do not (see the error table). */
static void test_line_limit(void **state)
{
	struct vrdma_config cfg;
	char text[512];
	char path[200];

	(void)state;
	/* "xdp_object = /" + 185 'a' = 199 */
	memset(path, 'a', sizeof(path));
	path[185] = '\0';
	snprintf(text, sizeof(text),
		 "[port]\ninterface = eth0\nxdp_object = /%s\r\n# %s%s\n",
		 path, path, "123456789012");
	assert_int_equal(strlen("xdp_object = /") + strlen(path), 199);
	parse_ok(&cfg, text);
	assert_int_equal(strlen(cfg.xdp_object), 186);
	vrdma_config_free(&cfg);
}

/* Section names longer than inih's 49-byte section buffer. */
static void test_long_vm_name(void **state)
{
	char name[VRDMA_CONF_NAME_MAX + 1];
	struct vrdma_config cfg;
	char text[512];

	(void)state;
	memset(name, 'n', VRDMA_CONF_NAME_MAX);
	name[VRDMA_CONF_NAME_MAX] = '\0';
	snprintf(text, sizeof(text),
		 "[port]\ninterface = eth0\n[vm %s]\ngid = 10.0.0.1\n"
		 "[vm %.50sX]\ngid = 10.0.0.2\n", name, name);
	parse_ok(&cfg, text);
	assert_int_equal(cfg.n_vms, 2);
	assert_string_equal(cfg.vms[0].name, name);
	assert_int_equal(cfg.vms[0].n_gids, 1);
	assert_int_equal(cfg.vms[1].n_gids, 1);
	vrdma_config_free(&cfg);
}

/* vrdmactl add-vm: the keys of a [vm] section, the file's checks. */
static void test_vm_from_keys(void **state)
{
	static const struct {
		const char *name;
		const char *kv[4][2];
		unsigned int n;
		const char *want;	/* error, or NULL */
	} cases[] = {
		/* 1 */ { "web1", { { "gid", "10.9.0.1,fd00::9" }, { "socket", "/run/x/w.sock" },
				 { "socket_mode", "0660" }, { "mac", "52:54:00:00:00:09" } }, 4, NULL },
		/* 2 */ { "web1", { { "gid", "10.9.0.1" } }, 1, NULL },
		/* 3 */ { "-bad", { { "gid", "10.9.0.1" } }, 1,
			  "add-vm: vm name '-bad' is invalid (1 to 63 of A-Z a-z 0-9 _ . -, starting with a letter or digit)" },
		/* 4 */ { "a", { { "gid", "10.9.0.300" } }, 1,
			  "add-vm: gid '10.9.0.300' is not an IPv4 or IPv6 address" },
		/* 5 */ { "a", { { "socket", "/run/a.sock" } }, 1, "add-vm: vm a has no gid" },
		/* 6 */ { "a", { { "gid", "10.9.0.1" }, { "colour", "red" } }, 2,
			  "add-vm: unknown key 'colour' for a vm" },
		/* 7 */ { "a", { { "gid", "10.9.0.1" }, { "mac", "01:00:00:00:00:01" } }, 2,
			  "add-vm: mac '01:00:00:00:00:01' must be a unicast address" },
		/* 8 */ { "a", { { "gid", "10.9.0.1" }, { "socket_mode", "0066" } }, 2,
			  "add-vm: socket_mode 0066 must let the owner read and write" },
		/* 9 */ { "a", { { "gid", "10.9.0.1" }, { "socket", "relative.sock" } }, 2,
			  "add-vm: socket must be an absolute path" },
		/* 10 */ { "a", { { "gid", "10.9.0.1" }, { "mac", "52:54:00:00:00:01" },
				  { "mac", "52:54:00:00:00:02" } }, 3, "add-vm: 'mac' given twice" },
		/* 11 */ { "a", { { "gid", "10.9.0.1" }, { "gid", "10.9.0.1" } }, 2,
			  "add-vm: gid '10.9.0.1' already belongs to vm a (line 1)" },
		/* 12 */ { "a", { { "gid", "10.9.0.1" }, { "socket_owner", "" } }, 2,
			  "add-vm: empty value for 'socket_owner'" },
		/* 13 */ { "a", { { "gid", "10.9.0.1" }, { "max_mr", "8" }, { "max_mr_pages", "4096" } },
			  3, NULL },
		/* 14 */ { "a", { { "gid", "10.9.0.1" }, { "max_mr_pages", "-1" } }, 2,
			  "add-vm: max_mr_pages must be an integer from 1 to 268435456" },
		/* 15: what is quoted is one line with no control character */
		{ "a\nx", { { "gid", "10.9.0.1" } }, 1,
		  "add-vm: vm name 'a?x' is invalid (1 to 63 of A-Z a-z 0-9 _ . -, starting with a letter or digit)" },
		/* 16 */ { "a", { { "gid", "10.9.0.1\r\x1b[2J" } }, 1,
			  "add-vm: gid '10.9.0.1??[2J' is not an IPv4 or IPv6 address" },
		/* 17 */ { "a", { { "gid", "10.9.0.1" }, { "socket", "/run/a\n.sock" } }, 2,
			  "add-vm: socket must not contain control characters" },
	};
	struct vrdma_vm_config vc, vc2;
	struct vrdma_config fcfg;
	unsigned int i;
	int ret;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ret = vrdma_vm_config_from_keys(&vc, cases[i].name, cases[i].kv, cases[i].n, err,
						sizeof(err));
		if (!cases[i].want) {
			if (ret)
				print_message("case %u: %s\n", i + 1, err);
			assert_int_equal(ret, 0);
			continue;
		}
		if (ret != -EINVAL || strcmp(err, cases[i].want))
			print_message("case %u: ret %d\n  got:  %s\n  want: %s\n", i + 1, ret, err,
				      cases[i].want);
		assert_int_equal(ret, -EINVAL);
		assert_string_equal(err, cases[i].want);
	}
	assert_int_equal(vrdma_vm_config_from_keys(&vc, "web1", cases[0].kv, 4, err, sizeof(err)), 0);
	assert_int_equal(vc.n_gids, 2);
	assert_string_equal(vc.socket, "/run/x/w.sock");
	assert_int_equal(vc.socket_mode, 0660);
	assert_true(vc.has_mac);
	assert_int_equal(vc.max_cq, VRDMA_CONF_DEFAULT_QUEUES);
	/* same as the file would give */
	parse_ok(&fcfg, "[port]\ninterface = eth0\n\n[vm web1]\nsocket = /run/x/w.sock\n"
		 "gid = 10.9.0.1\ngid = fd00::9\nmac = 52:54:00:00:00:09\nsocket_mode = 0660\n");
	assert_true(vrdma_vm_config_equal(&vc, &fcfg.vms[0]));
	vrdma_config_free(&fcfg);
	/* the default socket path, and a difference that counts */
	assert_int_equal(vrdma_vm_config_from_keys(&vc2, "web1", cases[1].kv, 1, err, sizeof(err)), 0);
	assert_string_equal(vc2.socket, "/run/vrdmad/web1.sock");
	assert_false(vrdma_vm_config_equal(&vc, &vc2));
	vc2 = vc;
	vc2.line = 99;
	assert_true(vrdma_vm_config_equal(&vc, &vc2));
	vc2.socket_mode = 0600;
	assert_false(vrdma_vm_config_equal(&vc, &vc2));
	/* the MR limits count: a reload re-creates a VM whose limits changed */
	assert_int_equal(vrdma_vm_config_from_keys(&vc2, "a", cases[12].kv, 3, err, sizeof(err)), 0);
	assert_int_equal(vc2.max_mr, 8);
	assert_int_equal(vc2.max_mr_pages, 4096);
	vc = vc2;
	vc2.max_mr++;
	assert_false(vrdma_vm_config_equal(&vc, &vc2));
	vc2 = vc;
	vc2.max_mr_pages++;
	assert_false(vrdma_vm_config_equal(&vc, &vc2));
	vc2 = vc;
	vc2.ring_max_qp--;
	assert_false(vrdma_vm_config_equal(&vc, &vc2));
}

static void test_limits_ok(void **state)
{
	struct vrdma_config cfg;
	char *text, *p;
	size_t size = VRDMA_CONF_MAX_VMS * 64 + 64;
	unsigned int i;

	(void)state;
	text = malloc(size);
	assert_non_null(text);
	p = text + sprintf(text, "[port]\ninterface = eth0\n");
	for (i = 0; i < VRDMA_CONF_MAX_VMS; i++)
		p += sprintf(p, "[vm v%u]\ngid = 10.1.%u.%u\n", i, i / 200,
			     i % 200 + 1);
	parse_ok(&cfg, text);
	assert_int_equal(cfg.n_vms, VRDMA_CONF_MAX_VMS);
	assert_string_equal(cfg.vms[255].name, "v255");
	assert_gid(&cfg.vms[255].gids[0], "10.1.1.56");
	vrdma_config_free(&cfg);

	/* one more VM is too many */
	sprintf(p, "[vm v%u]\ngid = 10.2.0.1\n", i);
	assert_int_equal(vrdma_config_parse_string(&cfg, "t.conf", text, err,
						   sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.conf:515: too many vms (at most 256)");
	free(text);

	parse_ok(&cfg, "[port]\ninterface = eth0\n[vm a]\ngid = "
		 "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5,10.0.0.6,"
		 "10.0.0.7,10.0.0.8,10.0.0.9,10.0.0.10,10.0.0.11,10.0.0.12,"
		 "10.0.0.13,10.0.0.14,10.0.0.15,10.0.0.16\n");
	assert_int_equal(cfg.vms[0].n_gids, VRDMA_CONF_MAX_GIDS);
	vrdma_config_free(&cfg);

	/* 16 full IPv6 GIDs do not fit on one line: gid may repeat. */
	parse_ok(&cfg, "[port]\ninterface = eth0\n[vm a]\n"
		 "gid = fd00:1111:2222:3333:4444:5555:6666:0001, fd00:1111:2222:3333:4444:5555:6666:0002\n"
		 "gid = fd00:1111:2222:3333:4444:5555:6666:0003, fd00:1111:2222:3333:4444:5555:6666:0004\n"
		 "gid = fd00:1111:2222:3333:4444:5555:6666:0005, fd00:1111:2222:3333:4444:5555:6666:0006\n"
		 "gid = fd00:1111:2222:3333:4444:5555:6666:0007, fd00:1111:2222:3333:4444:5555:6666:0008\n"
		 "gid = fd00:1111:2222:3333:4444:5555:6666:0009, fd00:1111:2222:3333:4444:5555:6666:000a\n"
		 "gid = fd00:1111:2222:3333:4444:5555:6666:000b, fd00:1111:2222:3333:4444:5555:6666:000c\n"
		 "gid = fd00:1111:2222:3333:4444:5555:6666:000d, fd00:1111:2222:3333:4444:5555:6666:000e\n"
		 "gid = fd00:1111:2222:3333:4444:5555:6666:000f, fd00:1111:2222:3333:4444:5555:6666:0010\n");
	assert_int_equal(cfg.vms[0].n_gids, VRDMA_CONF_MAX_GIDS);
	assert_gid(&cfg.vms[0].gids[15], "fd00:1111:2222:3333:4444:5555:6666:10");
	vrdma_config_free(&cfg);

	parse_ok(&cfg, "[daemon]\nworkers = 64\n[port]\ninterface = "
		 "abcdefghijklmno\nqueues = 64\n");
	assert_int_equal(cfg.workers, 64);
	assert_int_equal(cfg.queues, 64);
	vrdma_config_free(&cfg);
}

/* ---- malformed configs ---- */

struct bad_case {
	const char *text;
	const char *msg;
};

#define PORT "[port]\ninterface = eth0\n"
/* 108 bytes: one over sun_path */
#define LONG_PATH "/run/vrdmad/" \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define X50 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

#define CPUS_ERR "t.conf:2: worker_cpus must list CPUs as 2,3 or 2-5: each from 0 to 1023, none twice, at most 64"
static const struct bad_case bad_cases[] = {
	/* syntax */
	{ "[daemon\n", "t.conf:1: section header needs a closing ']'" },
	{ "[daemon]\nworkers\n",
	  "t.conf:2: expected 'key = value', '[section]' or a comment" },
	{ "[daemon]\nworkers 4 # no equals\n",
	  "t.conf:2: expected 'key = value', '[section]' or a comment" },
	{ "[daemon]\nworkers: 4\n",
	  "t.conf:2: expected 'key = value', '[section]' or a comment" },
	{ "[daemon]\n= 4\n",
	  "t.conf:2: expected 'key = value', '[section]' or a comment" },
	{ PORT "[port] interface = eth1\n", "t.conf:3: unexpected text after ']'" },
	{ "[daemon]\n" X50 X50 X50 X50 "\n",
	  "t.conf:2: line too long (at most 199 characters)" },
	{ "# " X50 X50 X50 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
	  "t.conf:1: line too long (at most 199 characters)" },
	/* only the first error counts, whichever kind it is */
	{ "[daemon]\nbogus\nworkers = 0\n",
	  "t.conf:2: expected 'key = value', '[section]' or a comment" },
	{ "[daemon]\nworkers = 0\nbogus\n[x\n",
	  "t.conf:2: workers must be an integer from 1 to 64" },
	/* sections */
	{ "[foo]\n", "t.conf:1: unknown section '[foo]'" },
	{ "[Daemon]\n", "t.conf:1: unknown section '[Daemon]'" },
	{ "[vmx]\n", "t.conf:1: unknown section '[vmx]'" },
	{ "[]\n", "t.conf:1: unknown section '[]'" },
	{ "workers = 1\n", "t.conf:1: key 'workers' outside a section" },
	{ "[vm]\n", "t.conf:1: vm section needs a name, like '[vm NAME]'" },
	{ "[vm -a]\n",
	  "t.conf:1: vm name '-a' is invalid (1 to 63 of A-Z a-z 0-9 _ . -, starting with a letter or digit)" },
	{ "[vm  a]\n",
	  "t.conf:1: vm name ' a' is invalid (1 to 63 of A-Z a-z 0-9 _ . -, starting with a letter or digit)" },
	{ "[vm a/b]\n",
	  "t.conf:1: vm name 'a/b' is invalid (1 to 63 of A-Z a-z 0-9 _ . -, starting with a letter or digit)" },
	{ "[vm " X50 "12345678901234]\n",
	  "t.conf:1: vm name '" X50 "12345678901234' is invalid (1 to 63 of A-Z a-z 0-9 _ . -, starting with a letter or digit)" },
	{ PORT "[vm a]\ngid = 10.0.0.1\n[daemon]\n[vm a]\n",
	  "t.conf:6: duplicate vm 'a' (first on line 3)" },
	/* keys */
	{ "[daemon]\nworkers = 1\n[port]\ninterface = eth0\n[daemon]\nworkers = 2\n",
	  "t.conf:6: duplicate key 'workers' (first set on line 2)" },
	{ PORT "interface = eth1\n",
	  "t.conf:3: duplicate key 'interface' (first set on line 2)" },
	{ PORT "[vm a]\ngid = 10.0.0.1\nmac = 52:54:00:00:00:01\nmac = 52:54:00:00:00:02\n",
	  "t.conf:6: duplicate key 'mac' (first set on line 5)" },
	{ PORT "[vm a]\ngid = 10.0.0.1\ngid = 10.0.0.2, 10.0.0.1\n",
	  "t.conf:5: gid '10.0.0.1' already belongs to vm a (line 4)" },
	{ "[daemon]\nworkers =\n", "t.conf:2: empty value for 'workers'" },
	{ "[daemon]\nworkers = # nothing\n", "t.conf:2: empty value for 'workers'" },
	{ PORT "[vm a]\ngid = ; nothing\n", "t.conf:4: empty value for 'gid'" },
	{ "[daemon]\nthreads = 2\n", "t.conf:2: unknown key 'threads' in [daemon]" },
	{ "[port]\nInterface = eth0\n", "t.conf:2: unknown key 'Interface' in [port]" },
	{ PORT "[vm web1]\nmtu = 1500\n", "t.conf:4: unknown key 'mtu' in [vm web1]" },
	/* [daemon] values */
	{ "[daemon]\nworkers = 0\n", "t.conf:2: workers must be an integer from 1 to 64" },
	{ "[daemon]\nworkers = 65\n", "t.conf:2: workers must be an integer from 1 to 64" },
	{ "[daemon]\nworkers = 1x\n", "t.conf:2: workers must be an integer from 1 to 64" },
	{ "[daemon]\nworkers = -1\n", "t.conf:2: workers must be an integer from 1 to 64" },
	{ "[daemon]\nworkers = +1\n", "t.conf:2: workers must be an integer from 1 to 64" },
	{ "[daemon]\nworkers = 0x10\n", "t.conf:2: workers must be an integer from 1 to 64" },
	{ "[daemon]\nworkers = 99999999999999999999\n",
	  "t.conf:2: workers must be an integer from 1 to 64" },
	{ "[daemon]\nworkers = 18446744073709551617\n",
	  "t.conf:2: workers must be an integer from 1 to 64" },
	{ "[daemon]\ncontrol_socket = run/ctl.sock\n",
	  "t.conf:2: control_socket must be an absolute path" },
	{ "[daemon]\ncontrol_socket = /run/\tctl.sock\n",
	  "t.conf:2: control_socket must not contain control characters" },
	{ "[daemon]\ncontrol_socket = " LONG_PATH "\n",
	  "t.conf:2: control_socket is too long (at most 107 bytes)" },
	{ "[daemon]\nlog_level = verbose\n",
	  "t.conf:2: log_level must be one of error, warning, info, debug" },
	{ "[daemon]\nlog_level = INFO\n",
	  "t.conf:2: log_level must be one of error, warning, info, debug" },
	/* [port] values */
	{ "[port]\ninterface = eth/0\n",
	  "t.conf:2: interface 'eth/0' is not a valid interface name" },
	{ "[port]\ninterface = eth 0\n",
	  "t.conf:2: interface 'eth 0' is not a valid interface name" },
	{ "[port]\ninterface = ..\n",
	  "t.conf:2: interface '..' is not a valid interface name" },
	{ "[port]\ninterface = .\n",
	  "t.conf:2: interface '.' is not a valid interface name" },
	{ "[port]\ninterface = abcdefghijklmnop\n",
	  "t.conf:2: interface 'abcdefghijklmnop' is not a valid interface name" },
	{ "[port]\ninterface = a\x1b[1m/b\x7f\n",
	  "t.conf:2: interface 'a?[1m/b?' is not a valid interface name" },
	{ PORT "xdp_mode = generic\n",
	  "t.conf:3: xdp_mode must be one of auto, native, skb" },
	{ PORT "zerocopy = yes\n", "t.conf:3: zerocopy must be one of auto, on, off" },
	{ PORT "multi_buffer = on\n", "t.conf:3: multi_buffer must be one of auto, off" },
	{ PORT "queues = 65\n", "t.conf:3: queues must be an integer from 0 to 64" },
	{ PORT "queues = all\n", "t.conf:3: queues must be an integer from 0 to 64" },
	{ PORT "xdp_object = vrdma_xdp.bpf.o\n",
	  "t.conf:3: xdp_object must be an absolute path" },
	{ PORT "xdp_object = /x\x7f.o\n",
	  "t.conf:3: xdp_object must not contain control characters" },
	{ PORT "ecn = yes\n", "t.conf:3: ecn must be on or off" },
	{ PORT "ecn =\n", "t.conf:3: empty value for 'ecn'" },
	{ PORT "tx_budget = 31\n", "t.conf:3: tx_budget must be an integer from 32 to 2048" },
	{ PORT "tx_budget = 2049\n", "t.conf:3: tx_budget must be an integer from 32 to 2048" },
	{ PORT "cnp_interval_us = 0\n",
	  "t.conf:3: cnp_interval_us must be an integer from 1 to 1000000" },
	{ PORT "cnp_interval_us = 1000001\n",
	  "t.conf:3: cnp_interval_us must be an integer from 1 to 1000000" },
	/* [vm NAME] values */
	{ PORT "[vm a]\nsocket = a.sock\n", "t.conf:4: socket must be an absolute path" },
	{ PORT "[vm a]\nsocket = /run/a\x1b[2J.sock\n",
	  "t.conf:4: socket must not contain control characters" },
	{ PORT "[vm a]\nsocket = " LONG_PATH "\n",
	  "t.conf:4: socket is too long (at most 107 bytes)" },
	{ PORT "[vm a]\ngid = 10.0.0.1, 10.0.0.256 ,fd00::1\n",
	  "t.conf:4: gid '10.0.0.256' is not an IPv4 or IPv6 address" },
	{ PORT "[vm a]\ngid = fe80::1%eth0\n",
	  "t.conf:4: gid 'fe80::1%eth0' is not an IPv4 or IPv6 address" },
	{ PORT "[vm a]\ngid = 10.0.0.1,,10.0.0.2\n", "t.conf:4: gid list has an empty item" },
	{ PORT "[vm a]\ngid = 10.0.0.1,\n", "t.conf:4: gid list has an empty item" },
	{ PORT "[vm a]\ngid = 224.0.0.1\n",
	  "t.conf:4: gid '224.0.0.1' cannot be used: it is a multicast address" },
	{ PORT "[vm a]\ngid = ff02::1\n",
	  "t.conf:4: gid 'ff02::1' cannot be used: it is a multicast address" },
	{ PORT "[vm a]\ngid = 127.0.0.2\n",
	  "t.conf:4: gid '127.0.0.2' cannot be used: it is a loopback address" },
	{ PORT "[vm a]\ngid = ::1\n",
	  "t.conf:4: gid '::1' cannot be used: it is a loopback address" },
	{ PORT "[vm a]\ngid = 0.0.0.0\n",
	  "t.conf:4: gid '0.0.0.0' cannot be used: it is the unspecified address" },
	{ PORT "[vm a]\ngid = ::\n",
	  "t.conf:4: gid '::' cannot be used: it is the unspecified address" },
	{ PORT "[vm a]\ngid = 255.255.255.255\n",
	  "t.conf:4: gid '255.255.255.255' cannot be used: it is the broadcast address" },
	{ PORT "[vm a]\ngid = 240.0.0.1\n",
	  "t.conf:4: gid '240.0.0.1' cannot be used: it is in the reserved 240.0.0.0/4" },
	{ PORT "[vm a]\ngid = 0.1.2.3\n",
	  "t.conf:4: gid '0.1.2.3' cannot be used: it is in 0.0.0.0/8, which is not a host's address" },
	{ PORT "[vm a]\ngid = 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5,"
	  "10.0.0.6,10.0.0.7,10.0.0.8,10.0.0.9,10.0.0.10,10.0.0.11,10.0.0.12,"
	  "10.0.0.13,10.0.0.14,10.0.0.15,10.0.0.16,10.0.0.17\n",
	  "t.conf:4: too many gids for vm a (at most 16)" },
	{ PORT "[vm a]\ngid = 10.0.0.1, fd00::1, 10.0.0.1\n",
	  "t.conf:4: gid '10.0.0.1' already belongs to vm a (line 4)" },
	{ PORT "[vm a]\ngid = fd00::1\n[vm b]\n\ngid = FD00:0::1\n",
	  "t.conf:7: gid 'FD00:0::1' already belongs to vm a (line 4)" },
	{ PORT "[vm a]\ngid = 10.0.0.9\n[vm b]\ngid = ::ffff:10.0.0.9\n",
	  "t.conf:6: gid '::ffff:10.0.0.9' already belongs to vm a (line 4)" },
	{ PORT "[vm a]\nmac = 52:54:00:12:34\n",
	  "t.conf:4: mac '52:54:00:12:34' is not a MAC address (like 52:54:00:12:34:56)" },
	{ PORT "[vm a]\nmac = 52-54-00-12-34-56\n",
	  "t.conf:4: mac '52-54-00-12-34-56' is not a MAC address (like 52:54:00:12:34:56)" },
	{ PORT "[vm a]\nmac = 52:54:00:12:34:5g\n",
	  "t.conf:4: mac '52:54:00:12:34:5g' is not a MAC address (like 52:54:00:12:34:56)" },
	{ PORT "[vm a]\nmac = 52:54:00:12:34:56:78\n",
	  "t.conf:4: mac '52:54:00:12:34:56:78' is not a MAC address (like 52:54:00:12:34:56)" },
	{ PORT "[vm a]\nmac = 01:00:5e:00:00:01\n",
	  "t.conf:4: mac '01:00:5e:00:00:01' must be a unicast address" },
	{ PORT "[vm a]\nmac = 00:00:00:00:00:00\n",
	  "t.conf:4: mac '00:00:00:00:00:00' must be a unicast address" },
	{ PORT "[vm a]\nmax_cq = 0\n", "t.conf:4: max_cq must be an integer from 1 to 16384" },
	{ PORT "[vm a]\nmax_qp = 16385\n", "t.conf:4: max_qp must be an integer from 1 to 16384" },
	{ PORT "[vm a]\nmax_qp = 8k\n", "t.conf:4: max_qp must be an integer from 1 to 16384" },
	{ PORT "[vm a]\nmax_mr = 0\n", "t.conf:4: max_mr must be an integer from 1 to 65536" },
	{ PORT "[vm a]\nmax_mr = 65537\n", "t.conf:4: max_mr must be an integer from 1 to 65536" },
	{ PORT "[vm a]\nring_max_qp = 16385\n",
	  "t.conf:4: ring_max_qp must be an integer from 1 to 16384" },
	{ PORT "[vm a]\nring_max_cq = 0\n",
	  "t.conf:4: ring_max_cq must be an integer from 1 to 16384" },
	{ PORT "[vm a]\nmax_mr_pages = 0\n",
	  "t.conf:4: max_mr_pages must be an integer from 1 to 268435456" },
	{ PORT "[vm a]\nmax_mr_pages = 268435457\n",
	  "t.conf:4: max_mr_pages must be an integer from 1 to 268435456" },
	{ PORT "[vm a]\nmax_mr_pages = 2M\n",
	  "t.conf:4: max_mr_pages must be an integer from 1 to 268435456" },
	{ PORT "[vm a]\nsocket_mode = 0400\n",
	  "t.conf:4: socket_mode 0400 must let the owner read and write" },
	{ PORT "[vm a]\nsocket_mode = 0689\n", "t.conf:4: socket_mode must be an octal mode like 0660" },
	{ PORT "[vm a]\nsocket_mode = 01777\n", "t.conf:4: socket_mode must be an octal mode like 0660" },
	{ PORT "[vm a]\nsocket_mode = rw\n", "t.conf:4: socket_mode must be an octal mode like 0660" },
	{ PORT "[vm a]\nsocket_owner = qemu;rm\n",
	  "t.conf:4: socket_owner 'qemu;rm' is not a user or group name" },
	{ PORT "[vm a]\nsocket_group = -kvm\n",
	  "t.conf:4: socket_group '-kvm' is not a user or group name" },
	{ PORT "[vm a]\nsocket_group = " X50 "\n", "t.conf:4: socket_group is too long (at most 32 bytes)" },
	{ PORT "[vm a]\ngid = 10.0.0.1\nmax_cq = 2\nmax_qp = 127\n",
	  "t.conf:3: vm a needs 1 + max_cq + 2 * max_qp = 257 virtqueues; vhost-user addresses at most 256" },
	{ "[daemon]\nidle_spin_us = -1\n" PORT,
	  "t.conf:2: idle_spin_us must be an integer from 0 to 1000000" },
	{ "[daemon]\nworker_cpus = 2-\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = -2\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 3-1\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 1,1\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 1-2,2\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = x\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 1024\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 1,,2\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 1,\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = ,1\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 0-64\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 1, 2\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = +1\n" PORT, CPUS_ERR },
	{ "[daemon]\nworker_cpus = 0x1\n" PORT, CPUS_ERR },
	{ "[daemon]\nworkers = 2\nworker_cpus = 3\n" PORT,
	  "t.conf:3: worker_cpus lists 1 CPU(s) for 2 worker(s): list one per worker" },
	{ "[daemon]\nworker_cpus = 0-1\n" PORT,
	  "t.conf:2: worker_cpus lists 2 CPU(s) for 1 worker(s): list one per worker" },
	/* whole-file checks */
	{ "", "t.conf: [port] interface is required" },
	{ "[daemon]\n[port]\nxdp_mode = skb\n", "t.conf: [port] interface is required" },
	{ PORT "[vm a]\n", "t.conf:3: vm a has no gid" },
	{ PORT "[vm a]\ngid = 10.0.0.1\n[vm b]\nmac = 52:54:00:12:34:56\n",
	  "t.conf:5: vm b has no gid" },
	{ PORT "[vm a]\ngid = 10.0.0.1\n[vm b]\ngid = 10.0.0.2\nsocket = /run/vrdmad/a.sock\n",
	  "t.conf:5: vm b uses the same socket as vm a" },
	{ PORT "[vm a]\ngid = 10.0.0.1\nsocket = /s\n[daemon]\ncontrol_socket = /s\n",
	  "t.conf:3: vm a uses the same socket as control_socket" },
};

static void test_bad_configs(void **state)
{
	unsigned int failed = 0;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		struct vrdma_config cfg;
		int ret;

		/* a failed parse must leave cfg alone */
		memset(&cfg, 0x5a, sizeof(cfg));
		memset(err, 0, sizeof(err));
		ret = vrdma_config_parse_string(&cfg, "t.conf",
						bad_cases[i].text, err,
						sizeof(err));
		if (ret != -EINVAL || strcmp(err, bad_cases[i].msg) ||
		    cfg.workers != 0x5a5a5a5a) {
			print_error("case %zu: ret %d\n  got:  %s\n  want: %s\n",
				    i, ret, err, bad_cases[i].msg);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
	assert_true(ARRAY_SIZE(bad_cases) >= 25);
}

/* A short error buffer truncates, never overflows. */
static void test_short_err_buffer(void **state)
{
	struct vrdma_config cfg;
	char small[12];

	(void)state;
	assert_int_equal(vrdma_config_parse_string(&cfg, "t.conf", "[x]\n",
						   small, sizeof(small)),
			 -EINVAL);
	assert_string_equal(small, "t.conf:1: u");
	assert_int_equal(vrdma_config_parse_string(&cfg, "a-long-file-name",
						   "[x]\n", small, sizeof(small)),
			 -EINVAL);
	assert_string_equal(small, "a-long-file");
	assert_int_equal(vrdma_config_parse_string(&cfg, "t", "[x]\n", NULL, 0),
			 -EINVAL);
}

/* ---- files ---- */

static void test_load_missing(void **state)
{
	struct vrdma_config cfg;

	(void)state;
	assert_int_equal(vrdma_config_load(&cfg, "/nonexistent/vrdmad.conf",
					   err, sizeof(err)), -ENOENT);
	assert_string_equal(err,
			    "/nonexistent/vrdmad.conf: cannot open: No such file or directory");
}

static void write_temp(char *path, const void *data, size_t len)
{
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

static void test_load_file(void **state)
{
	static const char text[] =
		"[port]\ninterface = eth0\n[vm a]\ngid = 10.0.0.1\n";
	static const char nul[] = "[port]\ninterface = eth0\n# a\0b\n";
	char path[] = "/tmp/test_config.XXXXXX";
	char msg[VRDMA_CONF_ERR_MAX + 64];
	struct vrdma_config cfg;

	(void)state;
	write_temp(path, text, strlen(text));
	assert_int_equal(vrdma_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_string_equal(cfg.path, path);
	assert_string_equal(cfg.interface, "eth0");
	assert_int_equal(cfg.n_vms, 1);
	vrdma_config_free(&cfg);
	unlink(path);

	/* errors name the file */
	strcpy(path, "/tmp/test_config.XXXXXX");
	write_temp(path, "[port]\n\ninterface = a/b\n", 24);
	assert_int_equal(vrdma_config_load(&cfg, path, err, sizeof(err)), -EINVAL);
	snprintf(msg, sizeof(msg),
		 "%s:3: interface 'a/b' is not a valid interface name", path);
	assert_string_equal(err, msg);
	unlink(path);

	strcpy(path, "/tmp/test_config.XXXXXX");
	write_temp(path, nul, sizeof(nul) - 1);
	assert_int_equal(vrdma_config_load(&cfg, path, err, sizeof(err)), -EINVAL);
	snprintf(msg, sizeof(msg), "%s:3: line contains a NUL byte", path);
	assert_string_equal(err, msg);
	unlink(path);

	/* empty file */
	strcpy(path, "/tmp/test_config.XXXXXX");
	write_temp(path, "", 0);
	assert_int_equal(vrdma_config_load(&cfg, path, err, sizeof(err)), -EINVAL);
	snprintf(msg, sizeof(msg), "%s: [port] interface is required", path);
	assert_string_equal(err, msg);
	unlink(path);

	assert_int_equal(vrdma_config_load(&cfg, "/", err, sizeof(err)), -EISDIR);
	assert_string_equal(err, "/: cannot read: Is a directory");
}

static char *read_example(void)
{
	const char *path = VRDMA_SRCDIR "/etc/vrdmad.conf";
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f)
		print_error("cannot open %s (pass -DVRDMA_SRCDIR)\n", path);
	assert_non_null(f);
	buf = calloc(1, 65536);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	assert_true(n > 0 && n < 65535);
	fclose(f);
	return buf;
}

/* The shipped file is valid as it is... */
static void test_example_file(void **state)
{
	struct vrdma_config cfg;
	int ret;

	(void)state;
	ret = vrdma_config_load(&cfg, VRDMA_SRCDIR "/etc/vrdmad.conf", err,
				sizeof(err));
	if (ret)
		print_error("%s\n", err);
	assert_int_equal(ret, 0);
	assert_string_equal(cfg.interface, "eth0");
	assert_int_equal(cfg.workers, 1);
	assert_int_equal(cfg.n_vms, 0);
	vrdma_config_free(&cfg);
}

/* ...and with every "#key = value" and "#[vm ...]" line uncommented, which
 * checks that the documented defaults and the example VM parse too. */
static void test_example_uncommented(void **state)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	struct vrdma_config cfg;
	char *text = read_example();
	char *out = calloc(1, 65536);
	char *s, *d = out;
	int bol = 1;

	(void)state;
	assert_non_null(out);
	for (s = text; *s; s++) {
		if (bol && s[0] == '#' && (isalpha((unsigned char)s[1]) || s[1] == '['))
			s++;
		*d++ = *s;
		bol = *s == '\n';
	}
	parse_ok(&cfg, out);
	assert_int_equal(cfg.workers, 1);
	assert_string_equal(cfg.control_socket, VRDMA_CONF_DEFAULT_CONTROL);
	assert_int_equal(cfg.log_level, VRDMA_LOG_INFO);
	assert_int_equal(cfg.xdp_mode, VRDMA_XDP_AUTO);
	assert_int_equal(cfg.zerocopy, VRDMA_ZC_AUTO);
	assert_int_equal(cfg.queues, 0);
	assert_string_equal(cfg.xdp_object, "/usr/lib/vrdmad/vrdma_xdp.bpf.o");
	assert_int_equal(cfg.n_vms, 1);
	assert_string_equal(cfg.vms[0].name, "web1");
	assert_string_equal(cfg.vms[0].socket, "/run/vrdmad/web1.sock");
	assert_int_equal(cfg.vms[0].n_gids, 2);
	assert_true(vrdma_gid_is_v4mapped(&cfg.vms[0].gids[0]));
	assert_false(vrdma_gid_is_v4mapped(&cfg.vms[0].gids[1]));
	assert_true(cfg.vms[0].has_mac);
	assert_memory_equal(cfg.vms[0].mac, mac, 6);
	vrdma_config_free(&cfg);
	free(out);
	free(text);
}

/* ---- helpers ---- */

static void test_gid_helpers(void **state)
{
	static const char *const round[] = {
		"10.0.0.5", "192.168.255.1", "255.255.255.255", "fd00::5",
		"2001:db8:1:2:3:4:5:6", "fe80::1", "::", "::1",
	};
	char buf[INET6_ADDRSTRLEN];
	struct vrdma_gid g;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(round); i++) {
		assert_int_equal(vrdma_gid_parse(&g, round[i]), 0);
		vrdma_gid_format(&g, buf, sizeof(buf));
		assert_string_equal(buf, round[i]);
	}
	/* IPv4-mapped written as IPv6 is the same GID, shown as IPv4 */
	assert_int_equal(vrdma_gid_parse(&g, "::FFFF:10.0.0.5"), 0);
	assert_true(vrdma_gid_is_v4mapped(&g));
	vrdma_gid_format(&g, buf, sizeof(buf));
	assert_string_equal(buf, "10.0.0.5");
	assert_int_equal(vrdma_gid_parse(&g, "10.0.0.5"), 0);
	assert_int_equal(g.raw[10], 0xff);
	assert_int_equal(g.raw[15], 5);

	assert_int_equal(vrdma_gid_parse(&g, ""), -EINVAL);
	assert_int_equal(vrdma_gid_parse(&g, "10.0.0"), -EINVAL);
	assert_int_equal(vrdma_gid_parse(&g, " 10.0.0.1"), -EINVAL);
	assert_int_equal(vrdma_gid_parse(&g, "fd00::1::2"), -EINVAL);
	assert_int_equal(vrdma_gid_parse(&g, "host.example"), -EINVAL);

	/* a buffer too small gives an empty string, not garbage */
	assert_int_equal(vrdma_gid_parse(&g, "2001:db8:1:2:3:4:5:6"), 0);
	vrdma_gid_format(&g, buf, 8);
	assert_string_equal(buf, "");
}

static void test_mac_parse(void **state)
{
	static const uint8_t want[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
	uint8_t mac[6], keep[6];

	(void)state;
	assert_int_equal(vrdma_mac_parse(mac, "52:54:00:ab:CD:eF"), 0);
	assert_memory_equal(mac, want, 6);
	memcpy(keep, mac, 6);
	assert_int_equal(vrdma_mac_parse(mac, ""), -EINVAL);
	assert_int_equal(vrdma_mac_parse(mac, "52:54:00:ab:cd"), -EINVAL);
	assert_int_equal(vrdma_mac_parse(mac, "52:54:00:ab:cd:"), -EINVAL);
	assert_int_equal(vrdma_mac_parse(mac, "52:54:00:ab:cd:e"), -EINVAL);
	assert_int_equal(vrdma_mac_parse(mac, "52:54:00:ab:cd:ef:"), -EINVAL);
	assert_int_equal(vrdma_mac_parse(mac, "5:54:00:ab:cd:ef1"), -EINVAL);
	assert_int_equal(vrdma_mac_parse(mac, "525400abcdef"), -EINVAL);
	assert_int_equal(vrdma_mac_parse(mac, "52:54:00:ab:cd:ex"), -EINVAL);
	assert_int_equal(vrdma_mac_parse(mac, " 52:54:00:ab:cd:ef"), -EINVAL);
	/* failures leave mac alone */
	assert_memory_equal(mac, keep, 6);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(vrdma_xdp_mode_name(VRDMA_XDP_AUTO), "auto");
	assert_string_equal(vrdma_xdp_mode_name(VRDMA_XDP_NATIVE), "native");
	assert_string_equal(vrdma_xdp_mode_name(VRDMA_XDP_SKB), "skb");
	assert_string_equal(vrdma_zerocopy_name(VRDMA_ZC_AUTO), "auto");
	assert_string_equal(vrdma_zerocopy_name(VRDMA_ZC_ON), "on");
	assert_string_equal(vrdma_zerocopy_name(VRDMA_ZC_OFF), "off");
	assert_string_equal(vrdma_multi_buffer_name(VRDMA_MB_AUTO), "auto");
	assert_string_equal(vrdma_multi_buffer_name(VRDMA_MB_OFF), "off");
	assert_string_equal(vrdma_multi_buffer_name((enum vrdma_multi_buffer)7), "unknown");
	assert_string_equal(vrdma_log_level_name(VRDMA_LOG_ERROR), "error");
	assert_string_equal(vrdma_log_level_name(VRDMA_LOG_WARNING), "warning");
	assert_string_equal(vrdma_log_level_name(VRDMA_LOG_INFO), "info");
	assert_string_equal(vrdma_log_level_name(VRDMA_LOG_DEBUG), "debug");
	assert_string_equal(vrdma_xdp_mode_name((enum vrdma_xdp_mode)9), "unknown");
	assert_string_equal(vrdma_log_level_name((enum vrdma_log_level)0), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_gid_v4_mapped),
		cmocka_unit_test(test_gid_v6),
		cmocka_unit_test(test_multiple_vms),
		cmocka_unit_test(test_comments_bom_crlf),
		cmocka_unit_test(test_glued_semicolon),
		cmocka_unit_test(test_line_limit),
		cmocka_unit_test(test_long_vm_name),
		cmocka_unit_test(test_limits_ok),
		cmocka_unit_test(test_bad_configs),
		cmocka_unit_test(test_short_err_buffer),
		cmocka_unit_test(test_load_missing),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_example_file),
		cmocka_unit_test(test_example_uncommented),
		cmocka_unit_test(test_vm_from_keys),
		cmocka_unit_test(test_gid_helpers),
		cmocka_unit_test(test_mac_parse),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
