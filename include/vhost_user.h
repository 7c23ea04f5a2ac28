/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The vhost-user protocol (QEMU docs/interop/vhost-user.rst), the subset
 * vrdmad serves. Shared by the daemon (back-end) and libvrdma (front-end).
 * Little-endian, native alignment as the spec lays it out.
 */
#ifndef VHOST_USER_H
#define VHOST_USER_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "virtio_rdma.h"

enum vhost_user_request {
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_LOG_BASE = 6,
	VHOST_USER_SET_LOG_FD = 7,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
	VHOST_USER_GET_CONFIG = 24,
	VHOST_USER_SET_CONFIG = 25,
	VHOST_USER_RESET_DEVICE = 34,
	VHOST_USER_GET_MAX_MEM_SLOTS = 36,
	VHOST_USER_SET_STATUS = 39,
	VHOST_USER_GET_STATUS = 40,
	VHOST_USER_MAX_REQUEST = 41,
};

#define VHOST_USER_VERSION		0x1u
#define VHOST_USER_VERSION_MASK		0x3u
#define VHOST_USER_REPLY_MASK		(1u << 2)
#define VHOST_USER_NEED_REPLY_MASK	(1u << 3)

/* Device feature bits */
#define VIRTIO_F_RING_INDIRECT_DESC	28
#define VHOST_USER_F_PROTOCOL_FEATURES	30
#define VIRTIO_F_VERSION_1		32

/* Protocol feature bits */
#define VHOST_USER_PROTOCOL_F_MQ		0
#define VHOST_USER_PROTOCOL_F_REPLY_ACK		3
#define VHOST_USER_PROTOCOL_F_CONFIG		9
#define VHOST_USER_PROTOCOL_F_RESET_DEVICE	13
#define VHOST_USER_PROTOCOL_F_STATUS		16

/* What vrdmad's back end offers, and all that libvrdma's front end asks for. */
#define VU_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_F_RING_INDIRECT_DESC) | \
		     (1ull << VHOST_USER_F_PROTOCOL_FEATURES) | (1ull << VIRTIO_RDMA_F_RINGS))
#define VU_PROTOCOL_FEATURES ((1ull << VHOST_USER_PROTOCOL_F_MQ) |		\
			      (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |	\
			      (1ull << VHOST_USER_PROTOCOL_F_CONFIG) |		\
			      (1ull << VHOST_USER_PROTOCOL_F_RESET_DEVICE) |	\
			      (1ull << VHOST_USER_PROTOCOL_F_STATUS))

#define VHOST_USER_MAX_FDS		8	/* per message, as QEMU */
#define VHOST_USER_MEM_REGIONS		8
#define VHOST_USER_MAX_CONFIG_SIZE	256
/* u64 payload of SET_VRING_KICK/CALL/ERR */
#define VHOST_USER_VRING_IDX_MASK	0xffu
#define VHOST_USER_VRING_NOFD_MASK	(1u << 8)

struct vhost_user_header {
	uint32_t request;
	uint32_t flags;
	uint32_t size;		/* of the payload that follows */
};

struct vhost_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vhost_vring_addr {
	uint32_t index;
	uint32_t flags;		/* bit 0: log dirty pages (not offered) */
	uint64_t desc_user_addr;
	uint64_t used_user_addr;
	uint64_t avail_user_addr;
	uint64_t log_guest_addr;
};

struct vhost_user_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;	/* the front-end's address of the region */
	uint64_t mmap_offset;		/* into the fd passed with the message */
};

struct vhost_user_memory {
	uint32_t nregions;
	uint32_t padding;
	struct vhost_user_mem_region regions[VHOST_USER_MEM_REGIONS];
};

struct vhost_user_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t region[VHOST_USER_MAX_CONFIG_SIZE];
};

union vhost_user_payload {
	uint64_t u64;
	struct vhost_vring_state state;
	struct vhost_vring_addr addr;
	struct vhost_user_memory memory;
	struct vhost_user_config config;
};

struct vhost_user_msg {
	struct vhost_user_header hdr;
	union vhost_user_payload payload;
};

_Static_assert(sizeof(struct vhost_user_header) == 12, "vhost-user header");
_Static_assert(sizeof(struct vhost_vring_state) == 8, "vring state");
_Static_assert(sizeof(struct vhost_vring_addr) == 40, "vring addr");
_Static_assert(sizeof(struct vhost_user_mem_region) == 32, "memory region");
_Static_assert(offsetof(struct vhost_user_memory, regions) == 8, "memory regions");
_Static_assert(sizeof(struct vhost_user_memory) == 264, "memory table");
_Static_assert(offsetof(struct vhost_user_config, region) == 12, "config payload");

/* Split virtqueues (virtio 1.1 section 2.6) */
#define VRING_DESC_F_NEXT	1
#define VRING_DESC_F_WRITE	2
#define VRING_DESC_F_INDIRECT	4
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY	1
#define VIRTQ_MAX_SIZE		32768

struct vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vring_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[];
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vring_used {
	uint16_t flags;
	uint16_t idx;
	struct vring_used_elem ring[];
};

_Static_assert(sizeof(struct vring_desc) == 16, "vring desc");
_Static_assert(sizeof(struct vring_used_elem) == 8, "used elem");

/* Guest memory as vrdmad accepts it in SET_MEM_TABLE: a memfd of size bytes
 * sealed against shrinking (a back end touching a page cut off by
 * ftruncate gets SIGBUS) and growing, as QEMU's memory-backend-memfd with
 * seal=on. The fd, or -errno. */
static inline int vhost_user_memfd(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

#endif
