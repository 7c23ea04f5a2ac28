/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The vrdma provider: libibverbs' user-space half of virtio_rdma.ko, the
 * guest driver of vrdmad's virtio-rdma device (docs/virtio-rdma.md).
 *
 * Every verb is a uverbs command to the kernel driver, with no
 * driver-private data in either direction: the kernel owns the virtqueues,
 * so a process can reach only what the driver lets it (no mapped rings yet).
 */
#ifndef VRDMA_PROVIDER_H
#define VRDMA_PROVIDER_H

#include <infiniband/driver.h>

/*
 * The uverbs ABI version virtio_rdma.ko registers (ib_device's
 * uverbs_abi_ver, sysfs abi_version). It counts changes to the
 * driver-private command data, of which there is none yet; bump it in both
 * halves together when that changes.
 */
#define VRDMA_UVERBS_ABI_VERSION 1

struct vrdma_device {
	struct verbs_device ibv_dev;
};

struct vrdma_context {
	struct verbs_context ibv_ctx;
};

static inline struct vrdma_context *to_vrdma_ctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct vrdma_context, ibv_ctx.context);
}

static inline struct vrdma_device *to_vrdma_dev(struct verbs_device *dev)
{
	return container_of(dev, struct vrdma_device, ibv_dev);
}

#endif
