// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for what an operator or a control-socket client hands
 * vrdmad's configuration parser (daemon/common/config.c), `make fuzz`:
 *
 *   first byte even: the rest is /etc/vrdmad.conf, read as vrdmad reads it
 *                    (vrdma_config_load, from a memfd)
 *   first byte odd:  the rest is an add-vm request's name and KEY/VALUE
 *                    strings, NUL-separated (vrdma_vm_config_from_keys, as
 *                    vrdmactl add-vm's JSON is taken apart)
 *
 * Checks: either an error, one line that starts with where it came from
 * ("FILE:" or "add-vm:"), or a configuration within the documented bounds
 * (vrdmad.conf(5)); ASan and UBSan see the rest, LeakSanitizer what a
 * failed parse leaves.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "vm_config_ok.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)
#define MAX_PAIRS 40

static int memfd = -1;
static char path[64];

static void one_file(const uint8_t *data, size_t size)
{
	struct vrdma_config cfg;
	char err[VRDMA_CONF_ERR_MAX];
	unsigned int i;

	CHECK(!ftruncate(memfd, 0));
	CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size);
	if (vrdma_config_load(&cfg, path, err, sizeof(err))) {
		/* "FILE:LINE: what" or "FILE: what", one line */
		CHECK(!strncmp(err, path, strlen(path)) && err[strlen(path)] == ':');
		CHECK(!strchr(err, '\n'));
		return;
	}
	CHECK(cfg.interface[0]);
	CHECK(cfg.workers >= 1 && cfg.workers <= VRDMA_CONF_MAX_WORKERS);
	CHECK(cfg.n_worker_cpus <= VRDMA_CONF_MAX_WORKERS);
	for (i = 0; i < cfg.n_worker_cpus; i++)
		CHECK(cfg.worker_cpus[i] <= VRDMA_CONF_MAX_CPU);
	CHECK(cfg.queues <= VRDMA_CONF_MAX_WORKERS);
	CHECK(cfg.tx_budget >= VRDMA_CONF_MIN_TX_BUDGET &&
	      cfg.tx_budget <= VRDMA_CONF_MAX_TX_BUDGET);
	CHECK(cfg.cnp_interval_us >= 1 && cfg.cnp_interval_us <= VRDMA_CONF_MAX_CNP_INTERVAL_US);
	CHECK(cfg.control_socket[0] == '/' && cfg.xdp_object[0] == '/');
	CHECK(cfg.n_vms <= VRDMA_CONF_MAX_VMS);
	for (i = 0; i < cfg.n_vms; i++) {
		CHECK(vm_config_ok(&cfg.vms[i]));
		/* names are unique */
		for (unsigned int j = 0; j < i; j++)
			CHECK(strcmp(cfg.vms[i].name, cfg.vms[j].name));
	}
	vrdma_config_free(&cfg);
	CHECK(!cfg.vms && !cfg.n_vms);
}

static void one_add_vm(const uint8_t *data, size_t size)
{
	const char *kv[MAX_PAIRS][2], *name;
	struct vrdma_vm_config vc;
	char err[VRDMA_CONF_ERR_MAX];
	char *buf = malloc(size + 1), *p, *end;
	unsigned int n = 0;

	CHECK(buf);
	memcpy(buf, data, size);
	buf[size] = '\0';
	end = buf + size;
	/* the name, then KEY, VALUE, ...: each up to the next NUL */
	name = buf;
	p = buf + strlen(buf) + 1;
	while (p < end && n < MAX_PAIRS) {
		kv[n][0] = p;
		p += strlen(p) + 1;
		if (p > end)
			break;
		kv[n][1] = p;
		p += strlen(p) + 1;
		n++;
	}
	memset(&vc, 0, sizeof(vc));
	if (vrdma_vm_config_from_keys(&vc, name, kv, n, err, sizeof(err))) {
		CHECK(!strncmp(err, "add-vm:", 7));
		CHECK(!strchr(err, '\n'));
	} else {
		CHECK(!strcmp(vc.name, name));
		CHECK(vm_config_ok(&vc));
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (memfd < 0) {
		memfd = memfd_create("vrdmad.conf", MFD_CLOEXEC);
		CHECK(memfd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	if (!size)
		return 0;
	if (data[0] & 1)
		one_add_vm(data + 1, size - 1);
	else
		one_file(data + 1, size - 1);
	return 0;
}
