/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The fuzzers' oracle for one VM's configuration: within the bounds
 * vrdmad.conf(5) documents. Written from the manual, not shared with
 * daemon/common/config.c, so that a check the parser lost is caught here.
 */
#ifndef VRDMA_FUZZ_VM_CONFIG_OK_H
#define VRDMA_FUZZ_VM_CONFIG_OK_H

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "config.h"

static inline bool vm_config_ok(const struct vrdma_vm_config *vm)
{
	size_t n = strlen(vm->name);
	unsigned int i;

	if (!n || n > VRDMA_CONF_NAME_MAX || !isalnum((unsigned char)vm->name[0]))
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)vm->name[i]) && !strchr("_.-", vm->name[i]))
			return false;
	for (i = 0; vm->socket[i]; i++)
		if ((unsigned char)vm->socket[i] < 0x20 || vm->socket[i] == 0x7f)
			return false;
	return vm->n_gids >= 1 && vm->n_gids <= VRDMA_CONF_MAX_GIDS &&
	       vm->max_cq >= 1 && vm->max_cq <= VRDMA_CONF_MAX_QUEUES &&
	       vm->max_qp >= 1 && vm->max_qp <= VRDMA_CONF_MAX_QUEUES &&
	       vm->max_mr >= 1 && vm->max_mr <= VRDMA_CONF_MAX_MR &&
	       vm->max_mr_pages >= 1 && vm->max_mr_pages <= VRDMA_CONF_MAX_MR_PAGES &&
	       vm->ring_max_cq >= 1 && vm->ring_max_cq <= VRDMA_CONF_MAX_RING_QUEUES &&
	       vm->ring_max_qp >= 1 && vm->ring_max_qp <= VRDMA_CONF_MAX_RING_QUEUES &&
	       vm->socket[0] == '/' && strlen(vm->socket) <= VRDMA_CONF_PATH_MAX &&
	       vm->socket_mode <= 07777;
}

#endif
