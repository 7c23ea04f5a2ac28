// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests for daemon/common/vm.c: slots, the GID index, the link-local rule,
 * and what vm_table_check refuses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vm.h"

static char err[256];

/* A VM NAME with the GIDs in gids (comma-separated) and MAC last octet
 * mac (0: none of its own). */
static struct vrdma_vm_config mkvm(const char *name, const char *gids, uint8_t mac)
{
	struct vrdma_vm_config vc;
	char buf[256], *g, *save;

	memset(&vc, 0, sizeof(vc));
	snprintf(vc.name, sizeof(vc.name), "%s", name);
	snprintf(vc.socket, sizeof(vc.socket), "/run/test/%s.sock", name);
	snprintf(buf, sizeof(buf), "%s", gids);
	for (g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save))
		assert_int_equal(vrdma_gid_parse(&vc.gids[vc.n_gids++], g), 0);
	if (mac) {
		const uint8_t m[6] = { 0x52, 0x54, 0, 0, 0, mac };

		memcpy(vc.mac, m, 6);
		vc.has_mac = true;
	}
	return vc;
}

static int add(struct vm_table *t, const char *name, const char *gids, uint8_t mac)
{
	struct vrdma_vm_config vc = mkvm(name, gids, mac);
	int id, ret;

	ret = vm_table_check(t, &vc, "/run/test/control.sock", err, sizeof(err));
	if (ret)
		return ret;
	id = vm_table_reserve(t, &vc, false);
	if (id >= 0)
		vm_table_publish(t, (uint32_t)id);
	return id;
}

static const char *owner(const struct vm_table *t, const char *gid)
{
	struct vrdma_gid g;
	const struct vm *vm;

	assert_int_equal(vrdma_gid_parse(&g, gid), 0);
	vm = vm_table_find_gid(t, &g);
	return vm ? vm->cfg.name : "-";
}

static void test_slots_and_index(void **state)
{
	struct vm_table t;

	(void)state;
	assert_int_equal(vm_table_init(&t), 0);
	assert_int_equal(add(&t, "a", "10.0.0.1,fd00::1", 0), 0);
	assert_int_equal(add(&t, "b", "10.0.0.2", 0), 1);
	assert_int_equal(add(&t, "c", "10.0.0.3", 0), 2);
	assert_int_equal(t.n_vms, 3);
	assert_int_equal(t.hi, 3);
	assert_string_equal(owner(&t, "10.0.0.1"), "a");
	assert_string_equal(owner(&t, "fd00::1"), "a");
	assert_string_equal(owner(&t, "10.0.0.3"), "c");
	assert_string_equal(owner(&t, "10.0.0.9"), "-");

	/* b leaves: a and c keep their slots, b's GID is nobody's, the slot is
	 * taken again by the next VM */
	vm_table_remove(&t, 1);
	assert_int_equal(t.n_vms, 2);
	assert_int_equal(t.hi, 3);
	assert_string_equal(owner(&t, "10.0.0.2"), "-");
	assert_string_equal(owner(&t, "10.0.0.3"), "c");
	assert_ptr_equal(vm_table_find_name(&t, "b"), NULL);
	assert_int_equal(add(&t, "d", "10.0.0.2", 0), 1);
	assert_string_equal(owner(&t, "10.0.0.2"), "d");
	/* the last slot leaves: hi comes down */
	vm_table_remove(&t, 2);
	assert_int_equal(t.hi, 2);
	vm_table_free(&t);
}

static const char *owner_cached(const struct vm_table *t, struct vm_gid_cache *c,
				const char *gid)
{
	struct vrdma_gid g;
	const struct vm *vm;

	assert_int_equal(vrdma_gid_parse(&g, gid), 0);
	vm = vm_table_find_gid_cached(t, c, g.raw);
	return vm ? vm->cfg.name : "-";
}

/* The cached lookup answers as the table does, through every change of it:
 * a GID that leaves, comes back with another VM, or was nobody's. */
static void test_cached_lookup(void **state)
{
	struct vm_gid_cache c = { 0 };
	struct vm_table t;

	(void)state;
	assert_int_equal(vm_table_init(&t), 0);
	assert_string_equal(owner_cached(&t, &c, "10.0.0.1"), "-");	/* empty table */
	assert_int_equal(add(&t, "a", "10.0.0.1", 0), 0);
	assert_string_equal(owner_cached(&t, &c, "10.0.0.1"), "a");
	assert_string_equal(owner_cached(&t, &c, "10.0.0.1"), "a");
	assert_string_equal(owner_cached(&t, &c, "10.0.0.2"), "-");
	assert_int_equal(add(&t, "b", "10.0.0.2", 0), 1);
	assert_string_equal(owner_cached(&t, &c, "10.0.0.2"), "b");
	vm_table_remove(&t, 1);
	assert_string_equal(owner_cached(&t, &c, "10.0.0.2"), "-");
	assert_int_equal(add(&t, "c", "10.0.0.2", 0), 1);
	assert_string_equal(owner_cached(&t, &c, "10.0.0.2"), "c");
	assert_string_equal(owner_cached(&t, &c, "10.0.0.1"), "a");
	vm_table_free(&t);
}

/* Taking back a reserved slot that was never published runs while the
 * workers look GIDs up (vm_admin's unreserve): the index, and with it every
 * cached answer, stays as it was. */
static void test_unpublished_remove(void **state)
{
	struct vrdma_vm_config vc = mkvm("b", "10.0.0.2", 0);
	struct vm_gid_cache c = { 0 };
	struct vm_table t;
	uint64_t gen;
	int id;

	(void)state;
	assert_int_equal(vm_table_init(&t), 0);
	assert_int_equal(add(&t, "a", "10.0.0.1", 0), 0);
	assert_string_equal(owner_cached(&t, &c, "10.0.0.1"), "a");
	id = vm_table_reserve(&t, &vc, false);
	assert_int_equal(id, 1);
	gen = t.gen;
	vm_table_remove(&t, (uint32_t)id);
	assert_true(t.gen == gen);
	assert_string_equal(owner_cached(&t, &c, "10.0.0.1"), "a");
	vm_table_free(&t);
}

static void test_link_local(void **state)
{
	struct vm_table t;

	(void)state;
	assert_int_equal(vm_table_init(&t), 0);
	/* own MAC 52:54:00:00:00:05 -> fe80::5054:ff:fe00:5 */
	assert_int_equal(add(&t, "a", "10.0.0.1", 5), 0);
	assert_string_equal(owner(&t, "fe80::5054:ff:fe00:5"), "a");
	/* no own MAC: no link-local */
	assert_int_equal(add(&t, "b", "10.0.0.2", 0), 1);
	assert_int_equal(t.n_gids, 3);
	/* the same MAC twice: the lower slot keeps the link-local */
	assert_int_equal(add(&t, "c", "10.0.0.3", 5), 2);
	assert_string_equal(owner(&t, "fe80::5054:ff:fe00:5"), "a");
	assert_int_equal(t.n_gids, 4);
	vm_table_remove(&t, 0);
	assert_string_equal(owner(&t, "fe80::5054:ff:fe00:5"), "c");
	/* a configured GID beats a derived one, and check refuses to take it
	 * from its owner */
	assert_int_equal(add(&t, "d", "fe80::5054:ff:fe00:5", 0), -EEXIST);
	assert_string_equal(err, "GID fe80::5054:ff:fe00:5 is served by VM c");
	vm_table_free(&t);
}

static void test_check(void **state)
{
	struct vm_table t;
	struct vrdma_vm_config vc;
	unsigned int i;
	char name[16], gid[32];

	(void)state;
	assert_int_equal(vm_table_init(&t), 0);
	assert_int_equal(add(&t, "a", "10.0.0.1", 0), 0);
	assert_int_equal(add(&t, "a", "10.0.0.2", 0), -EEXIST);
	assert_string_equal(err, "a VM named 'a' exists already");
	assert_int_equal(add(&t, "b", "10.0.0.2,10.0.0.1", 0), -EEXIST);
	assert_string_equal(err, "GID 10.0.0.1 is served by VM a");
	vc = mkvm("b", "10.0.0.2", 0);
	snprintf(vc.socket, sizeof(vc.socket), "/run/test/a.sock");
	assert_int_equal(vm_table_check(&t, &vc, "/run/test/control.sock", err, sizeof(err)),
			 -EEXIST);
	assert_string_equal(err, "socket /run/test/a.sock is VM a's");
	assert_int_equal(vm_table_check(&t, &vc, "/run/test/a.sock", err, sizeof(err)), -EEXIST);
	assert_string_equal(err, "socket /run/test/a.sock is vrdmad's control socket");
	for (i = 1; i < VM_TABLE_SLOTS; i++) {
		snprintf(name, sizeof(name), "v%u", i);
		snprintf(gid, sizeof(gid), "10.1.%u.%u", i / 200, i % 200 + 1);
		assert_int_equal(add(&t, name, gid, 0), (int)i);
	}
	assert_int_equal(add(&t, "full", "10.2.0.1", 0), -ENOSPC);
	vm_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots_and_index),
		cmocka_unit_test(test_cached_lookup),
		cmocka_unit_test(test_unpublished_remove),
		cmocka_unit_test(test_link_local),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
