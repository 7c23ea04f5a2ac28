/* SPDX-License-Identifier: GPL-2.0-only */
/* A VM's memory as vhost-user SET_MEM_TABLE describes it: regions of guest
 * physical (and front-end virtual) addresses, each mmapped from an fd. Every
 * translation is bounds-checked and overflow-safe; a range must lie inside
 * one region. */
#ifndef VRDMAD_GUEST_MEM_H
#define VRDMAD_GUEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhost_user.h"

/* Regions start on a guest page: their addresses and offset are multiples. */
#define GUEST_PAGE 4096u

struct guest_region {
	uint64_t gpa, size, uva, mmap_offset;
	uint8_t *host;			/* gpa maps here */
	void *map_base;			/* what munmap needs */
	size_t map_len;
	int fd;				/* a copy of its file's fd: a restart keeps it */
};

struct guest_mem {
	struct guest_region r[VHOST_USER_MEM_REGIONS];
	unsigned int n;
};

/* Validate the table (no empty, wrapping or overlapping region) and map each
 * region from its fd, which must be sealed with F_SEAL_SHRINK and cover the
 * region (else a truncation would SIGBUS the daemon); the fds stay the
 * caller's (each region keeps a copy, closed by guest_mem_unmap). On error
 * nothing is mapped, *gm is untouched and err says why. */
int guest_mem_map(struct guest_mem *gm, const struct vhost_user_memory *m,
		  const int *fds, unsigned int nfds, char *err, size_t errlen);
void guest_mem_unmap(struct guest_mem *gm);

/* [gpa, gpa + len) as a host pointer, or NULL if not inside one region. */
void *guest_gpa(const struct guest_mem *gm, uint64_t gpa, uint64_t len);
/* The same for the front-end's own addresses (vring addresses). */
void *guest_uva(const struct guest_mem *gm, uint64_t uva, uint64_t len);
/* The host pointer of gpa and how many bytes from it lie in its region. */
void *guest_gpa_span(const struct guest_mem *gm, uint64_t gpa, uint64_t *span);

#endif
